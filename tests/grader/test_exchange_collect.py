"""`nbgrader collect` on a hub never follows what a student planted in their hand-in.

Each hand-in is a folder `<exchange>/heads/inbound/<student>+<lesson>+<time>` that the student owns,
and `collect` copies it into `submitted/` as the instructor. nbgrader's own copy (shutil.copytree)
follows links, so a link there (or the hand-in folder itself being one) brings the instructor's files
into the student's submission, whose folder autograde then gives the student's code as its working
folder. The course's exchange class (grader/heads_exchange.py `Collect`) copies plain files and
folders only, names what it left out, and refuses an oversized hand-in. Students, each with their own
home, fetch and submit through a temporary exchange with nbgrader's real commands:

- alice is honest and hands in two extra plain files (one in a subfolder);
- mallory plants links to course files (at the top and two folders down, to a file and to a folder)
  and a hard link, then resubmits with a 65 MiB file for `collect --update`;
- trudy replaces her whole hand-in folder by a link to an instructor's folder.
"""
from __future__ import annotations

import os
import shutil
import socket
import stat

import pytest

from course import LESSON, hub_course, nbgrader, student_home, student_nbgrader

MARK = b"instructor only: 7f3c9e"  # the text of course files no student may read
HONEST = {f"{LESSON}.ipynb", "timestamp.txt", "submission_secret.txt"}  # what `nbgrader submit` hands in


def tree(folder) -> dict[str, bytes | None]:
    """{path below `folder`: content of a regular file, None for a folder}, read without following links
    (a link, FIFO or other kind is recorded by its kind's name)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                out[rel] = None
            elif stat.S_ISREG(mode):
                with open(path, "rb") as fh:
                    out[rel] = fh.read()
            else:
                out[rel] = f"<{stat.S_IFMT(mode):o}>".encode()
    return out


def newest_hand_in(exchange, student):
    return sorted((exchange / "heads" / "inbound").glob(f"{student}+{LESSON}+*"))[-1]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The class after its first `nbgrader collect`: (course root, exchange, homes, collect's output,
    {student: tree of submitted/<student>/<lesson>} as collect left it)."""
    tmp = tmp_path_factory.mktemp("collect")
    root, exchange = hub_course(tmp)
    (root / "instructor_only.txt").write_bytes(MARK)
    (root / "instructor").mkdir()
    (root / "instructor" / "answers.txt").write_bytes(MARK)
    homes = {}
    for student in ("alice", "mallory", "trudy"):
        homes[student] = student_home(tmp, exchange, student)
        student_nbgrader(homes[student], student, "fetch_assignment", LESSON, "--course", "heads")
    folder = homes["alice"] / "heads" / LESSON
    (folder / "notes.txt").write_text("my notes")
    (folder / "data").mkdir()
    (folder / "data" / "x.csv").write_text("1,2\n")
    for student, home in homes.items():
        student_nbgrader(home, student, "submit", LESSON, "--course", "heads")

    # What each hostile student does to the hand-in folder they own in the exchange.
    mallory = newest_hand_in(exchange, "mallory")
    (mallory / "evil.txt").symlink_to(root / "instructor_only.txt")
    (mallory / "gradebook.db").symlink_to(root / "gradebook.db")
    (mallory / "course").symlink_to(root / "instructor", target_is_directory=True)
    (mallory / "deep" / "er").mkdir(parents=True)
    (mallory / "deep" / "er" / "evil.txt").symlink_to(root / "instructor_only.txt")
    os.link(root / "instructor_only.txt", mallory / "hard.txt")  # where protected_hardlinks allows it
    trudy = newest_hand_in(exchange, "trudy")
    shutil.rmtree(trudy)
    trudy.symlink_to(root / "instructor", target_is_directory=True)

    out = nbgrader(root, "collect", LESSON)
    collected = {s: tree(root / "submitted" / s / LESSON) for s in homes
                 if (root / "submitted" / s / LESSON).exists()}
    return root, exchange, homes, out, collected


def test_an_honest_hand_in_is_collected_whole(hub):
    root, exchange, _, _, collected = hub
    alice = collected["alice"]
    assert set(alice) == HONEST | {"notes.txt", "data", "data/x.csv"}
    assert alice == tree(newest_hand_in(exchange, "alice"))  # byte for byte
    assert alice["notes.txt"] == b"my notes" and alice["data/x.csv"] == b"1,2\n"


def test_no_link_in_a_hand_in_is_followed(hub):
    root, _, _, out, collected = hub
    mallory = collected["mallory"]
    for rel, content in mallory.items():
        assert content is None or MARK not in content, f"{rel} brought an instructor's file in"
    assert mallory.get("gradebook.db") != (root / "gradebook.db").read_bytes()
    assert set(mallory) == HONEST | {"deep", "deep/er"}
    for rel, kind in [("evil.txt", "a symbolic link"), ("gradebook.db", "a symbolic link"),
                      ("course", "a symbolic link"), ("deep/er/evil.txt", "a symbolic link"),
                      ("hard.txt", "a hard link (2 names for one file)")]:
        assert f"HEADS-PROBLEM mallory/{LESSON}: {rel} ({kind}) not collected" in out, out


def test_a_hand_in_folder_that_is_a_link_is_refused(hub):
    root, _, _, out, collected = hub
    assert "trudy" not in collected
    assert f"HEADS-PROBLEM trudy/{LESSON}: hand-in not collected: its folder is a symbolic link" in out, out
    for rel, content in tree(root / "submitted").items():
        assert content is None or MARK not in content, rel


@pytest.fixture(scope="module")
def updated(hub):
    """alice hands in again, mallory hands in again with a 65 MiB file; then `nbgrader collect --update`."""
    root, exchange, homes, _, _ = hub
    (homes["alice"] / "heads" / LESSON / "notes.txt").write_text("second try")
    student_nbgrader(homes["alice"], "alice", "submit", LESSON, "--course", "heads")
    student_nbgrader(homes["mallory"], "mallory", "submit", LESSON, "--course", "heads")
    with open(newest_hand_in(exchange, "mallory") / "big.bin", "wb") as fh:
        fh.truncate(65 * 1024**2)  # sparse: no disk used in the exchange
    out = nbgrader(root, "collect", "--update", LESSON)
    return root, exchange, out


def test_collect_update_takes_a_resubmission(hub, updated):
    root, exchange, out = updated
    alice = tree(root / "submitted" / "alice" / LESSON)
    assert alice["notes.txt"] == b"second try"
    assert alice == tree(newest_hand_in(exchange, "alice"))
    assert f"Updating submission: alice {LESSON}" in out


def test_an_oversized_hand_in_is_refused_and_the_earlier_copy_kept(hub, updated):
    root, _, out = updated
    collected_first = hub[4]["mallory"]
    assert tree(root / "submitted" / "mallory" / LESSON) == collected_first
    assert (f"HEADS-PROBLEM mallory/{LESSON}: hand-in not collected: more than 64 MiB of files" in out), out


def test_the_copy_skips_every_kind_but_plain_files_and_folders(tmp_path):
    """`copy_hand_in` on what no hub test can plant as a student: a FIFO (nbgrader's copy stops the
    whole collect on it), a socket; and its caps on folder depth and the number of entries."""
    from heads_exchange import HandInRefused, copy_hand_in

    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "a.ipynb").write_text("{}")
    (src / "sub" / "b.txt").write_text("b")
    os.mkfifo(src / "sub" / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(src / "sock"))
    sock.close()
    skipped = copy_hand_in(str(src), str(tmp_path / "out"), max_bytes=1024)
    assert tree(tmp_path / "out") == {"a.ipynb": b"{}", "sub": None, "sub/b.txt": b"b"}
    assert sorted(skipped) == ["sock (a socket)", "sub/fifo (a FIFO)"]

    with pytest.raises(HandInRefused, match="more than 2 bytes"):
        copy_hand_in(str(src), str(tmp_path / "out2"), max_bytes=2)
    with pytest.raises(HandInRefused, match="more than 3 files and folders"):
        copy_hand_in(str(src), str(tmp_path / "out3"), max_bytes=1024, max_entries=3)
    deep = src / "1" / "2" / "3"
    deep.mkdir(parents=True)
    with pytest.raises(HandInRefused, match="folders more than 2 deep"):
        copy_hand_in(str(src), str(tmp_path / "out4"), max_bytes=1024, max_depth=2)
    assert not any((tmp_path / name).exists() for name in ("out2", "out3", "out4"))  # nothing half-copied
    with pytest.raises(HandInRefused, match="could not be copied"):  # an OSError refuses this hand-in only
        copy_hand_in(str(src), str(tmp_path / "gone" / "out"), max_bytes=1024)
