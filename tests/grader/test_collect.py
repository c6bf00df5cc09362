"""Collecting: the file names students really submit, an LMS zip and a folder, nothing dropped silently."""
from __future__ import annotations

import csv
import zipfile

import nbformat
import pytest

from course import LESSON, fill, grade_py, make_course, release_nb, scores, solution_answers
from heads_collect import match, wrapper_folders
from heads_identity import Roster, RosterError, identities, shown, student_id

LESSON_03 = "03_sequence_head"
NOTEBOOKS = [LESSON_03]


def tagged(rel, tag: str, answers=None) -> bytes:
    """The released notebook, filled with `answers`, marked `tag` to tell the copies apart afterwards."""
    book = fill(rel, answers or {})
    book.metadata["tag"] = tag
    return nbformat.writes(book).encode()


def new_course(tmp_path_factory, name: str, answers=None, lessons=(LESSON,)):
    """A course in a fresh folder, and `nb(tag)`: its released lesson filled with `answers`, tagged."""
    tmp = tmp_path_factory.mktemp(name)
    root = make_course(tmp / "course", names=lessons)
    rel = release_nb(root)
    return tmp, root, lambda tag: tagged(rel, tag, answers)


def collect(root, *sources) -> tuple:
    """`grade.py collect` on `sources`, which must succeed: (the course, what it printed)."""
    proc = grade_py("--course", str(root), "collect", *map(str, sources))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, proc.stdout


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
    ("class/mallory/hw/bob/03_sequence_head.ipynb", "mallory", 0),   # inside mallory's hand-in: hers
    ("class/mallory.zip/bob_03_sequence_head.ipynb", "mallory.zip", 0),
])
def test_names_students_submit(path, student, rank):
    assert match(path, NOTEBOOKS, wrappers={"class/course-export"}) == (student, "03_sequence_head", rank)


def test_only_a_folder_that_wraps_the_whole_class_is_passed_over(tmp_path):
    for rel in ("class/course-export/alice/03_sequence_head.ipynb",
                "class/course-export/bob/03_sequence_head.ipynb",
                "flat/submissions/hana_03_sequence_head.ipynb", "flat/submissions/ivan_03_sequence_head.ipynb",
                # a one-student LMS zip: the student's own folder, whatever its hand-in holds
                "moodle/Mal Evil_5678_assignsubmission_file/hw/Bob Li_1234_assignsubmission_file/03.ipynb",
                "moodle/Mal Evil_5678_assignsubmission_file/bob_03_sequence_head.ipynb",
                "moodle/Mal Evil_5678_assignsubmission_file/carl_03_sequence_head.ipynb",
                # two students beside each other: neither wraps the other's folders
                "pair/alice/x/03_sequence_head.ipynb", "pair/alice/y/03_sequence_head.ipynb",
                "pair/bob/03_sequence_head.ipynb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    assert wrapper_folders(str(tmp_path), NOTEBOOKS) == {"class/course-export", "flat/submissions"}


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
    tmp, root, nb = new_course(tmp_path_factory, "collect", solution_answers())

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
    (folder / f"frank_{LESSON}.ipynb").write_bytes(nb("frank"))
    (folder / "gina" / f"Copy of {LESSON}.ipynb").write_bytes(nb("gina"))
    return collect(root, lms, folder)


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

    tmp, root, nb = new_course(tmp_path_factory, "collect-hostile")

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
    return collect(root, lms, canvas, links)


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


def dated_zip(entries: dict[str, tuple[bytes, tuple]]) -> bytes:
    """A zip of {name: (data, date_time)}: each member with the date its archive claims."""
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, (data, when) in entries.items():
            z.writestr(zipfile.ZipInfo(name, when), data)
    return buf.getvalue()


EARLY, LATER, FUTURE = (2026, 12, 5, 9, 30, 0), (2026, 12, 5, 10, 0, 0), (2030, 1, 1, 0, 0, 0)
BOB_MOODLE, BOB_CANVAS = "Bob Smith_1234_assignsubmission_file", "smithbob_1234_5555"


@pytest.fixture(scope="module")
def smuggled(tmp_path_factory):
    """A held-out red team's L1 and L2: Mallory's own upload is a zip holding a folder named like Bob's
    LMS folder (Moodle) or Canvas prefix, with a stub dated 2030 in it, newer than Bob's hand-in."""
    tmp, root, nb = new_course(tmp_path_factory, "collect-smuggled")
    moodle = tmp / "moodle.zip"
    hw = dated_zip({f"{LESSON}.ipynb": (nb("mallory"), LATER),
                    f"{BOB_MOODLE}/{LESSON}.ipynb": (nb("mallory-as-bob"), FUTURE)})
    moodle.write_bytes(dated_zip({f"Alice Good_1111_assignsubmission_file/{LESSON}.ipynb": (nb("alice"), EARLY),
                                  f"{BOB_MOODLE}/{LESSON}.ipynb": (nb("bob"), EARLY),
                                  f"Mallory Evil_5678_assignsubmission_file/hw.zip": (hw, LATER)}))
    canvas = tmp / "canvas.zip"
    hw = dated_zip({f"{BOB_CANVAS}/{LESSON}.ipynb": (nb("mallory-as-bob"), FUTURE)})
    canvas.write_bytes(dated_zip({f"goodalice_1111_4444_{LESSON}.ipynb": (nb("alice"), EARLY),
                                  f"{BOB_CANVAS}_{LESSON}.ipynb": (nb("bob"), EARLY),
                                  f"evilmallory_5678_6666_{LESSON}.ipynb": (nb("mallory"), LATER),
                                  "evilmallory_5678_7777_hw.zip": (hw, LATER)}))
    return collect(root, moodle, canvas)


def test_a_name_inside_a_students_own_archive_never_takes_a_classmates_hand_in(smuggled):
    root, out = smuggled
    assert tag(root, "Bob_Smith_1234_assignsubmission_file") == "bob"
    assert tag(root, "smithbob_1234") == "bob"  # Canvas's login and user id
    # the stub is its owner's, her newest copy: Mallory's in Moodle, and in Canvas (both her uploads are hers)
    assert tag(root, "Mallory_Evil_5678_assignsubmission_file") == "mallory-as-bob"
    assert tag(root, "evilmallory_5678") == "mallory-as-bob"
    named = out.split("NAMED FOR ANOTHER STUDENT")[1]
    assert (f"moodle/Mallory Evil_5678_assignsubmission_file/hw/{BOB_MOODLE}/{LESSON}.ipynb: it is in a "
            f"folder named '{BOB_MOODLE}' inside Mallory_Evil_5678_assignsubmission_file's hand-in: counted "
            f"as Mallory_Evil_5678_assignsubmission_file's, never Bob_Smith_1234_assignsubmission_file's") \
        in named, out
    assert (f"canvas/evilmallory_5678_7777_hw/{BOB_CANVAS}/{LESSON}.ipynb: it is in a folder named "
            f"'{BOB_CANVAS}' inside evilmallory_5678's hand-in: counted as evilmallory_5678's, never "
            "smithbob_1234's") in named, out
    assert "older copy of Bob" not in out and "older copy of smithbob" not in out


def test_blackboard_attempts_are_one_students_and_the_newest_attempt_wins(tmp_path_factory):
    """A held-out red team's BB: Blackboard's "download assignment" zip names each file
    `<assignment>_<user>_attempt_<time>_<file>`. Bob's two attempts are one student, the newer attempt (by
    the time in its name, though the zip dates the older one later) graded; Mallory's own file name, read
    as an attempt of bob's dated 2030, stays hers."""
    tmp, root, nb = new_course(tmp_path_factory, "collect-blackboard")
    hw = "Homework 0_"
    bb = tmp / "bb.zip"
    bb.write_bytes(dated_zip({
        f"{hw}alice_attempt_2026-12-05-09-00-00_{LESSON}.ipynb": (nb("alice"), EARLY),
        f"{hw}alice_attempt_2026-12-05-09-00-00.txt": (b"Name: Alice", EARLY),
        f"{hw}bob_attempt_2026-12-05-09-30-00_{LESSON}.ipynb": (nb("bob-first"), LATER),
        f"{hw}bob_attempt_2026-12-05-11-00-00_{LESSON}.ipynb": (nb("bob-second"), EARLY),
        f"{hw}mallory_attempt_2026-12-05-12-00-00_x_bob_attempt_2030-01-01-00-00-00_{LESSON}.ipynb":
            (nb("mallory"), LATER),
        f"{hw}j_smith_attempt_2026-12-05-10-00-00_{LESSON}.ipynb": (nb("j_smith"), EARLY),
        f"{hw}k_smith_attempt_2026-12-05-10-00-00_{LESSON}.ipynb": (nb("k_smith"), EARLY)}))
    root, out = collect(root, bb)
    assert sorted(p.name for p in (root / "submitted").iterdir()) == ["alice", "bob", "j_smith", "k_smith",
                                                                       "mallory"], out
    assert [tag(root, s) for s in ("alice", "bob", "mallory", "j_smith", "k_smith")] == [
        "alice", "bob-second", "mallory", "j_smith", "k_smith"]
    assert (f"bb/{hw}bob_attempt_2026-12-05-09-30-00_{LESSON}.ipynb: an older copy of bob's {LESSON}") in out, out
    assert "ONE ID FOR TWO NAMES" not in out, out


@pytest.mark.parametrize("names, ids", [
    # One download is one assignment: a user name may hold `_`, and two users are not one `smith`.
    (["HW_0_j_smith_attempt_2026-12-05-09-00-00", "HW_0_k_smith_attempt_2026-12-05-09-00-00",
      "HW_0_k_smith_attempt_2026-12-05-10-00-00_x"], ["j_smith", "k_smith", "k_smith"]),
    # One user alone: the assignment cannot be told from the user; the last field is the user.
    (["HW 0_bob_attempt_2026-12-05-09-00-00", "HW 0_bob_attempt_2026-12-05-10-00-00"], ["bob", "bob"]),
    # Two assignments in one collection: the same user under each stays one id.
    (["HW 0_bob_attempt_2026-12-05-09-00-00", "HW 1_bob_attempt_2026-12-06-09-00-00"], ["bob", "bob"]),
])
def test_blackboard_users(names, ids):
    found = identities(names)
    assert [found.ids.get(n) for n in names] == ids and not found.shared, found


@pytest.mark.parametrize("roster", [False, True])
def test_a_canvas_resubmission_is_the_same_students_newer_copy(tmp_path_factory, roster):
    """A held-out red team's CL: Canvas names a file `<login>_<user id>_<file id>_<name>`, a late one
    `<login>_LATE_<user id>_<file id>_<name>`; a resubmission has a new file id. Bob's two uploads are one
    student, with or without a roster, his newer one graded; Mallory's own file name, which reads as Bob's
    prefix, stays hers."""
    tmp, root, nb = new_course(tmp_path_factory, "collect-canvas-late")
    canvas = tmp / "canvas.zip"
    canvas.write_bytes(dated_zip({f"goodalice_1111_4444_{LESSON}.ipynb": (nb("alice"), EARLY),
                                  f"{BOB_CANVAS}_{LESSON}.ipynb": (nb("bob-first"), EARLY),
                                  f"smithbob_LATE_1234_5556_{LESSON}-1.ipynb": (nb("bob-late"), LATER),
                                  f"evilmallory_5678_6666_{BOB_CANVAS}_{LESSON}.ipynb": (nb("mallory"), FUTURE)}))
    args = []
    if roster:
        (tmp / "roster.csv").write_text("name,id\nsmithbob,bob\ngoodalice,alice\n", encoding="utf-8")
        args = ["--roster", tmp / "roster.csv"]
    root, out = collect(root, *args, canvas)
    alice, bob = ("alice", "bob") if roster else ("goodalice_1111", "smithbob_1234")
    assert sorted(p.name for p in (root / "submitted").iterdir()) == sorted([alice, bob, "evilmallory_5678"]), out
    assert (tag(root, alice), tag(root, bob), tag(root, "evilmallory_5678")) == ("alice", "bob-late", "mallory")
    assert f"canvas/{BOB_CANVAS}_{LESSON}.ipynb: an older copy of {bob}'s {LESSON}" in out, out
    assert "ONE ID FOR TWO NAMES" not in out, out


# --- identities: who a folder or prefix is ---------------------------------------------------------
@pytest.mark.parametrize("name, what", [
    ("bob\u200b", "U+200B ZERO WIDTH SPACE"),
    ("bob\u2060", "U+2060 WORD JOINER"),
    ("al\u202eice", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("\u3164", "U+1160 HANGUL JUNGSEONG FILLER"),   # a blank letter (NFKC of the Hangul filler)
    ("bob\u2800", "U+2800 BRAILLE PATTERN BLANK"),
    ("dave\x07", "U+0007"),
    ("carol ", "begins or ends with whitespace"),
    (" carol", "begins or ends with whitespace"),
    ("carol\u00a0", "begins or ends with whitespace"),  # NFKC: a no-break space is a space
])
def test_invisible_control_and_surrounding_space_names_are_refused(name, what):
    found = match(f"class/{name}/{LESSON_03}.ipynb", NOTEBOOKS)
    assert isinstance(found, str) and "refused" in found and what in found, found
    assert "\\u" in found or "whitespace" in found  # the report shows what cannot be seen


@pytest.mark.parametrize("name, student", [
    ("王伟", "王伟"), ("李娜", "李娜"), ("Zoë Li", "Zoë_Li"), ("Zoé Li", "Zoé_Li"),
    ("Zoe\u0308 Li", "Zoë_Li"),          # a combining accent: NFKC gives the composed name
    ("ａｌｉｃｅ", "alice"),               # full-width letters: NFKC
    ("नमस्ते", "नमस्ते"),                  # combining vowel signs are kept
    ("Ольга Петрова", "Ольга_Петрова"),
])
def test_names_in_every_script_are_kept(name, student):
    assert match(f"class/{name}/{LESSON_03}.ipynb", NOTEBOOKS) == (student, LESSON_03, 0)
    assert match(f"class/{name}_{LESSON_03}.ipynb", NOTEBOOKS) == (student, LESSON_03, 0)


def test_two_names_that_give_one_id_are_both_kept_and_reported():
    found = identities(["Frank_Li", "Frank Li", "Frank  Li", "Zoë Li", "Zoé Li"])
    # nobody keeps Frank_Li itself: a name chosen to be the id (a red team's N3c) would take the row
    assert found.ids == {"Frank Li": "Frank_Li~1", "Frank_Li": "Frank_Li~2", "Frank  Li": "Frank_Li~3",
                         "Zoë Li": "Zoë_Li", "Zoé Li": "Zoé_Li"}
    assert sorted(found.shared) == ["Frank  Li", "Frank Li", "Frank_Li"]
    assert "'Frank Li' and" in found.shared["Frank Li"] and "Frank_Li~2" in found.shared["Frank Li"]
    assert "neither as Frank_Li" in found.shared["Frank_Li"]


def test_the_report_tells_apart_names_a_screen_draws_alike():
    composed, combining = "Zo\u00eb Li", "Zoe\u0308 Li"
    assert shown(composed) == "'Zo\u00eb Li'" and shown(combining) == "'Zoe\\u0308 Li'"
    said = identities([composed, combining]).shared[composed]
    assert "'Zoe\\u0308 Li' (Zoë_Li~2)" in said, said
    # a Cyrillic а in a Latin name (a red team's N3 lookalike); a name in one script reads as it is
    assert shown("d\u0430ve") == "'d\\u0430ve'" and shown("dave") == "'dave'"
    assert shown("Ольга Петрова") == "'Ольга Петрова'" and shown("王伟") == "'王伟'"


@pytest.mark.parametrize("typed, lookalike", [
    ("Frank Li", "Frank  Li"),                  # a red team's N3: two spaces sort first in code-point order
    ("Zo\u00eb Li", "Zoe\u0308 Li"),            # M3: a combining diaeresis, one id with the composed name
])
def test_a_lookalike_spelling_never_takes_the_id_from_the_name_as_typed(typed, lookalike):
    for names in ([typed, lookalike], [lookalike, typed]):
        found = identities(names)
        assert found.ids[typed] == student_id(typed) + "~1" and found.ids[lookalike] == student_id(typed) + "~2"
        assert set(found.shared) == {typed, lookalike}


CANVAS = """Student,ID,SIS User ID,SIS Login ID,Section,Lesson 03 (101)
    Points Possible,,,,,4
"Li, Jo",1234,s001,jli,Sec 1,
"Wang, Wei",1235,s002,wwang,Sec 1,
"""
MOODLE = """First name,Last name,ID number,Username,Email address
Jo,Li,s001,jli,jo.li@uni.edu
伟,王,s002,wwang,wei@uni.edu
Sam,Lee,,slee,sam@uni.edu
Sam,Lee,,slee2,sam2@uni.edu
"""
PLAIN = "name,id\n王伟,s002\nJo Li,s001\n"


@pytest.mark.parametrize("text, kind, cases", [
    (CANVAS, "Canvas gradebook", {"lijo_1234_5678": "jli", "wangwei_late_1235_99": "wwang",
                                  "Jo Li": "jli", "Li, Jo": "jli", "jli": "jli"}),
    (MOODLE, "Moodle participants", {"Jo Li_4321_assignsubmission_file_": "s001", "王 伟": None,
                                     "伟 王": "s002", "jli": "s001", "sam2@uni.edu": "slee2"}),
    (PLAIN, "name,id", {"王伟": "s002", "jo_li": "s001", "JO LI": "s001", "s001": "s001"}),
])
def test_a_roster_is_recognised_by_its_header_and_decides_ids(tmp_path, text, kind, cases):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    roster = Roster.read(path)
    assert roster.kind == kind
    for name, sid in cases.items():
        assert roster.lookup(name)[0] == sid, (name, roster.lookup(name))


def test_a_roster_never_guesses(tmp_path):
    (tmp_path / "moodle.csv").write_text(MOODLE, encoding="utf-8")
    sid, why = Roster.read(tmp_path / "moodle.csv").lookup("Sam Lee")  # two students of that name
    assert sid is None and "2 students" in why and "slee, slee2" in why
    found = identities(["Sam Lee", "Jo Li", "Nobody"], Roster.read(tmp_path / "moodle.csv"))
    assert "Sam Lee" in found.refused and found.ids["Jo Li"] == "s001"
    assert found.unlisted == {"Nobody"} and found.ids["Nobody"] == "Nobody"
    (tmp_path / "grades.csv").write_text("user,score\nx,1\n")
    with pytest.raises(RosterError, match="header not recognised"):
        Roster.read(tmp_path / "grades.csv")


@pytest.fixture(scope="module")
def names(tmp_path_factory):
    """An LMS zip where attackers' folders differ from their victims' by what cannot be seen (a
    zero-width space, a trailing space) and hold a newer file; two students whose names differ by an
    accent; two with no Latin letter; two folder names that give one id. Two lessons are released, so
    a refused name is a notebook of one lesson and not of the other."""
    tmp, root, nb = new_course(tmp_path_factory, "collect-names", lessons=(LESSON, "01_mlm_head"))

    lms = tmp / "lms.zip"
    with zipfile.ZipFile(lms, "w") as z:
        for folder, day in (("bob", 1), ("bob\u200b", 3), ("carol", 1), ("carol ", 3), ("Zoë Li", 1),
                            ("Zoé Li", 2), ("王伟", 1), ("李娜", 1), ("Frank Li", 1), ("Frank_Li", 2)):
            z.writestr(zip_entry(f"{folder}/{LESSON}.ipynb", day), nb(folder))
    return collect(root, lms)


def test_an_invisible_difference_never_takes_a_classmates_hand_in(names):
    root, out = names
    assert tag(root, "bob") == "bob" and tag(root, "carol") == "carol"
    refused = out.split("NOT COLLECTED")[1]
    # the reason it was refused, not "not a notebook of any lesson" (a red team's M1/M2 report)
    assert (f"lms/bob\\u200b/{LESSON}.ipynb: the name 'bob\\u200b' holds an invisible character (U+200B "
            "ZERO WIDTH SPACE)") in refused, out
    assert f"lms/carol /{LESSON}.ipynb: the name 'carol ' begins or ends with whitespace" in refused, out


def test_accented_and_non_latin_names_are_students(names):
    root, out = names
    for folder, student in (("Zoë Li", "Zoë_Li"), ("Zoé Li", "Zoé_Li"), ("王伟", "王伟"), ("李娜", "李娜")):
        assert tag(root, student) == folder


def test_two_folders_with_one_id_are_both_kept_and_reported(names):
    """N3c: `Frank_Li/`, newer, named as the id itself beside `Frank Li/`: neither gets Frank_Li."""
    root, out = names
    assert tag(root, "Frank_Li~1") == "Frank Li" and tag(root, "Frank_Li~2") == "Frank_Li"
    shared = out.split("ONE ID FOR TWO NAMES")[1]
    assert ("'Frank Li' and 'Frank_Li' (Frank_Li~2) give one id, Frank_Li: kept apart as Frank_Li~1, "
            "neither as Frank_Li") in shared, out
    assert "'Frank_Li' and 'Frank Li' (Frank_Li~1) give one id" in shared
    assert sorted(p.name for p in (root / "submitted").iterdir()) == \
        sorted(["bob", "carol", "Zoë_Li", "Zoé_Li", "王伟", "李娜", "Frank_Li~1", "Frank_Li~2"])


def test_collect_with_a_roster(tmp_path):
    root = make_course(tmp_path / "course")
    rel = release_nb(root)
    roster = tmp_path / "canvas.csv"
    roster.write_text(CANVAS, encoding="utf-8")
    lms = tmp_path / "submissions.zip"
    with zipfile.ZipFile(lms, "w") as z:
        for prefix in ("lijo_1234_5678", "wangwei_late_1235_5679", "nobody_9999_1"):
            book = fill(rel, {})
            book.metadata["tag"] = prefix
            z.writestr(f"{prefix}_{LESSON}.ipynb", nbformat.writes(book))
    proc = grade_py("--course", str(root), "collect", "--roster", str(roster), str(lms))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tag(root, "jli") == "lijo_1234_5678" and tag(root, "wwang") == "wangwei_late_1235_5679"
    assert tag(root, "nobody_9999") == "nobody_9999_1"  # Canvas login and user id, without the file id
    assert "NOT IN THE ROSTER (1 names" in proc.stdout and "'nobody_9999_1'" in proc.stdout, proc.stdout
    bad = tmp_path / "grades.csv"
    bad.write_text("user,score\n")
    proc = grade_py("--course", str(root), "collect", "--roster", str(bad), str(lms))
    assert proc.returncode == 2 and "header not recognised" in proc.stderr


def test_unicode_ids_are_graded_fed_back_and_exported(tmp_path):
    """nbgrader takes a student id in any script end to end: autograde, feedback, export. A lookalike spelling
    (a combining accent, newer) beside the name as typed: `~2` and `~1`, and the export flags both ids."""
    root = make_course(tmp_path / "course")
    rel = release_nb(root)
    lms = tmp_path / "lms.zip"
    with zipfile.ZipFile(lms, "w") as z:
        z.writestr(f"王伟/{LESSON}.ipynb", nbformat.writes(fill(rel, solution_answers())))
        z.writestr(f"Zo\u00e9 Li/{LESSON}.ipynb", nbformat.writes(fill(rel, solution_answers())))
        z.writestr(f"Zoe\u0301 Li/{LESSON}.ipynb", nbformat.writes(rel))
    for step in (["collect", str(lms)], ["--jobs", "2", "autograde"], ["feedback"],
                 ["export", "--to", str(tmp_path / "grades.csv")]):
        proc = grade_py("--course", str(root), *step)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {s: v["score"] for s, v in scores(root).items()} == {"王伟": 4, "Zoé_Li~1": 4, "Zoé_Li~2": 0}
    assert (root / "feedback" / "王伟" / LESSON / f"{LESSON}.html").exists()
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "grades.csv").open(encoding="utf-8"))}
    assert sorted(rows) == ["Zoé_Li~1", "Zoé_Li~2", "王伟"] and float(rows["王伟"]["total"]) == 4
    assert all("id shared by two names" in rows[s]["flags"] for s in ("Zoé_Li~1", "Zoé_Li~2")), rows
    assert "shared" not in rows["王伟"]["flags"], rows
