"""Collecting: the file names students really submit, an LMS zip and a folder, nothing dropped silently."""
from __future__ import annotations

import zipfile

import nbformat
import pytest

from course import LESSON, fill, grade_py, make_course, release_nb, solution_answers
from heads_collect import match

NOTEBOOKS = ["03_sequence_head"]


@pytest.mark.parametrize("path, student, rank", [
    ("class/alice/03_sequence_head.ipynb", "alice", 0),
    ("class/alice_03_sequence_head.ipynb", "alice", 0),
    ("class/s1234567-03_sequence_head.ipynb", "s1234567", 0),
    ("class/bob/Copy of 03_sequence_head.ipynb", "bob", 1),
    ("class/bob/03_sequence_head (1).ipynb", "bob", 2),
    ("class/bob/03_sequence_head (2).ipynb", "bob", 3),
    ("class/carol - 03 Sequence Head - Copy.ipynb", "carol", 1),
    ("class/Copy of dave_03_sequence_head.ipynb", "dave", 1),
    ("class/course-export/erin.smith@uni.edu/03_sequence_head.ipynb", "erin.smith@uni.edu", 0),
    ("class/course-export/Frank Li/03_Sequence_Head.ipynb", "Frank_Li", 0),
])
def test_names_students_submit(path, student, rank):
    assert match(path, NOTEBOOKS) == (student, "03_sequence_head", rank)


@pytest.mark.parametrize("path, reason", [
    ("class/alice/Untitled.ipynb", "not a notebook of this lesson"),
    ("class/alice/data.csv", "not a notebook"),
    ("class/03_sequence_head.ipynb", "no student id"),
    ("class/alice/03_sequence_head_old_backup.ipynb", "text after the notebook name"),
])
def test_files_not_collected_say_why(path, reason):
    found = match(path, NOTEBOOKS)
    assert isinstance(found, str) and reason in found, found


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("collect")
    root = make_course(tmp / "course")
    rel = release_nb(root)
    sol = solution_answers()

    def nb(tag: str) -> str:
        book = fill(rel, sol)
        book.metadata["tag"] = tag  # to tell the copies apart afterwards
        return nbformat.writes(book)

    lms = tmp / "lms-download.zip"
    with zipfile.ZipFile(lms, "w") as z:
        z.writestr(f"alice/{LESSON}.ipynb", nb("alice"))
        z.writestr(f"bob/Copy of {LESSON}.ipynb", nb("bob-first"))
        z.writestr(f"bob/{LESSON} (1).ipynb", nb("bob-second"))
        z.writestr(f"carol_{LESSON}.ipynb", nb("carol"))
        z.writestr("dave - 00 Representations - Copy.ipynb", nb("dave"))
        z.writestr("erin/Untitled.ipynb", nb("erin-untitled"))
        z.writestr("erin/notes.txt", "my notes")
        z.writestr(f"{LESSON}.ipynb", nb("nobody"))
    folder = tmp / "downloads"
    (folder / "gina").mkdir(parents=True)
    (folder / f"frank_{LESSON}.ipynb").write_text(nb("frank"))
    (folder / "gina" / f"Copy of {LESSON}.ipynb").write_text(nb("gina"))
    proc = grade_py("--course", str(root), "collect", str(lms), str(folder))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, proc.stdout


def tag(root, student):
    path = root / "submitted" / student / LESSON / f"{LESSON}.ipynb"
    assert path.exists(), f"{student} not collected"
    return nbformat.read(path, as_version=4).metadata["tag"]


def test_every_student_is_collected(collected):
    root, out = collected
    for student in ("alice", "carol", "dave", "frank", "gina"):
        assert tag(root, student) == student
    assert sorted(p.name for p in (root / "submitted").iterdir()) == \
        ["alice", "bob", "carol", "dave", "frank", "gina"]


def test_the_latest_copy_wins_and_the_other_is_reported(collected):
    root, out = collected
    assert tag(root, "bob") == "bob-second"
    assert f"bob/Copy of {LESSON}.ipynb: an older copy" in out


def test_unmatched_files_are_reported_by_name(collected):
    root, out = collected
    report = (root / "downloaded" / "collect_report.txt").read_text()
    assert report.strip() == out.strip()
    not_collected = out.split("NOT COLLECTED")[1]
    for name in ("erin/Untitled.ipynb", "erin/notes.txt", f"lms-download/{LESSON}.ipynb"):
        assert name in not_collected, out
    assert "no student id" in not_collected and "not a notebook" in not_collected
    # nothing lost: every file is still in downloaded/
    extracted = root / "downloaded" / LESSON / "extracted"
    assert (extracted / "lms-download" / "erin" / "notes.txt").read_text() == "my notes"


# --- hostile downloads ---------------------------------------------------------------------------
def zip_entry(name: str, day: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2024, 5, day, 10, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def zipped(entries: dict[str, bytes]) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """An LMS zip with a file named for bob in alice's folder, two copies whose archive dates
    disagree with their copy numbers, a zip bomb, archives nested too deep, and a tar with a link."""
    import tarfile

    tmp = tmp_path_factory.mktemp("collect-hostile")
    root = make_course(tmp / "course")
    rel = release_nb(root)

    def nb(tag: str) -> bytes:
        book = fill(rel, {})
        book.metadata["tag"] = tag
        return nbformat.writes(book).encode()

    lms = tmp / "lms.zip"
    with zipfile.ZipFile(lms, "w") as z:
        z.writestr(zip_entry(f"alice/{LESSON}.ipynb", 2), nb("alice"))
        z.writestr(zip_entry(f"alice/bob_{LESSON} (7).ipynb", 1), nb("alice-as-bob"))
        z.writestr(zip_entry(f"bob/{LESSON}.ipynb", 1), nb("bob"))
        z.writestr(zip_entry(f"carol/Copy of {LESSON}.ipynb", 3), nb("carol-newer"))
        z.writestr(zip_entry(f"carol/{LESSON} (1).ipynb", 1), nb("carol-older"))
        z.writestr(zip_entry("dave/bomb.zip", 1), zipped({"bomb.bin": bytes(64 * 2**20)}))
        z.writestr(zip_entry("erin.zip", 1), zipped({"inner.zip": zipped({f"{LESSON}.ipynb": nb("erin")})}))
        z.writestr(zip_entry("frank.zip", 1), zipped({f"{LESSON}.ipynb": nb("frank")}))
    canvas = tmp / "canvas.zip"  # a zip whose one folder wraps the class: the names decide
    with zipfile.ZipFile(canvas, "w") as z:
        z.writestr(f"submissions/hana_{LESSON}.ipynb", nb("hana"))
        z.writestr(f"submissions/ivan_{LESSON}.ipynb", nb("ivan"))
    links = tmp / "links.tar.gz"
    with tarfile.open(links, "w:gz") as t:
        member = tarfile.TarInfo(f"gina/{LESSON}.ipynb")
        member.type, member.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(member)
    assert lms.stat().st_size < 400_000
    proc = grade_py("--course", str(root), "collect", str(lms), str(canvas), str(links))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, proc.stdout


def test_the_lms_folder_decides_whose_file_it_is(hostile):
    root, out = hostile
    assert tag(root, "bob") == "bob"  # never replaced by the file named for bob in alice's folder
    assert tag(root, "alice") == "alice"  # her newer file
    named = out.split("NAMED FOR ANOTHER STUDENT")[1]
    assert f"alice/bob_{LESSON} (7).ipynb: its name says bob but it is in alice's folder" in named, out
    assert "an older copy of alice's" in out and "older copy of bob's" not in out


def test_a_folder_that_only_wraps_the_class_is_not_a_student(hostile):
    root, out = hostile
    assert tag(root, "hana") == "hana" and tag(root, "ivan") == "ivan"
    assert not (root / "submitted" / "submissions").exists()


def test_the_archive_dates_decide_which_copy_is_newest(hostile):
    root, out = hostile
    assert tag(root, "carol") == "carol-newer"  # the archive's date, not the higher copy number


def test_bombs_deep_nesting_and_links_are_not_extracted(hostile):
    root, out = hostile
    refused = out.split("NOT EXTRACTED")[1]
    assert "bomb.bin: expands" in refused and "inner.zip: an archive nested deeper" in refused, out
    assert f"gina/{LESSON}.ipynb: a link or a device" in refused, out
    assert tag(root, "frank") == "frank"  # a per-student zip in the LMS zip is still fine
    assert not (root / "submitted" / "gina").exists() and not (root / "submitted" / "erin").exists()
    extracted = root / "downloaded" / LESSON / "extracted"
    files = [p for p in extracted.rglob("*") if p.is_file() or p.is_symlink()]
    assert not any(p.is_symlink() for p in files)
    assert sum(p.stat().st_size for p in files) < 2**20
