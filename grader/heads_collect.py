"""Which student and which notebook a downloaded file is: the course's `zip_collect` plugin.

nbgrader's `zip_collect` extracts an LMS zip (or copies a folder of downloads) into
`downloaded/<lesson>/extracted/` and asks a collector plugin, file by file, for the student id and
the notebook. `HeadsCollector` recognises the names students really submit:

    class/alice/03_sequence_head.ipynb           a student folder (or a per-student zip)
    class/alice_03_sequence_head.ipynb           a prefix with the student id (Canvas, Moodle, ...)
    class/HW 1_alice_attempt_2026-12-05-09-00-00_03_sequence_head.ipynb   Blackboard (heads_identity.lms_owner)
    class/bob/Copy of 03_sequence_head.ipynb     Colab's "Save a copy in Drive"
    class/bob/03_sequence_head (1).ipynb         a second browser download
    class/carol - 03 Sequence Head - Copy.ipynb  spaces, case, "- Copy"

where `class` is the container: the LMS zip (nbgrader extracts `class.zip` into `class/`) or the
downloads folder given to `grade.py collect`; it is never taken for a student. The notebook name is
found inside the file name (case, spaces and dashes do not matter). The student is named at the
outermost level below the container (`_owner_level`): the folder there (the LMS made it, or it holds
what a student's own archive unpacked to: `class/frank.zip` -> `class/frank/`), else, for a file
lying there, what comes before the notebook name. Nothing deeper names a student: a file in alice's
folder, or in an archive alice handed in, is alice's whatever its name or its folders inside say,
and a name there that says someone else (`alice/bob_03_sequence_head.ipynb`,
`Mallory_5678_assignsubmission_file/hw.zip` holding `Bob Smith_1234_assignsubmission_file/…`) is
reported by `name_conflict`, never obeyed; so the copy is only ever in competition with its owner's
other copies, and a classmate's hand-in cannot be replaced from inside someone else's. (Folders that
only wrap the class, `class/submissions/alice_…, bob_…`, the single entry of the container, are not
students: `wrapper_folders`.) When
one student has several copies of a notebook, the newest file wins (the archive's own timestamps,
kept by `HeadsExtractor`; Blackboard's attempt time where the name has one); between copies of the
same age, the higher copy number ("(2)" over "(1)" over none). Everything else (another lesson's
notebook, `Untitled.ipynb`, a data file) is not collected, and `grade.py collect` reports it by name.

Which id a student name (a folder name or file prefix) becomes is grader/heads_identity.py's: names
holding invisible or control characters or surrounding whitespace are refused and reported, names in
any script are kept (NFKC), a roster (`HeadsCollector.roster`, `grade.py collect --roster FILE`)
decides where given, and two names that give one id are both kept and reported. The ids are decided
once for every name in the collection (`survey`), so a name's id never depends on which
file is looked at first.

`HeadsExtractor`, nbgrader's `zip_collect` extractor plugin, unpacks zip and tar archives keeping each
member's own timestamp, never creates links or devices, never writes outside its folder, and caps
how deep archives inside archives are unpacked and how much they may expand to (a zip bomb is not
unpacked); what it refuses is listed in `downloaded/<lesson>/not_extracted.txt`.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import tarfile
import time
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import PurePath, PurePosixPath

from nbgrader.plugins import ExtractorPlugin, FileNameCollectorPlugin

from heads_files import setting
from heads_identity import (Identities, attempt_time, identities, lms_named, read_roster, refusal, shown,
                            student_id)

NOT_THIS_LESSON = "not a notebook of this lesson"  # the one reason that depends on the lesson asked about
COPY_OF = re.compile(r"^(copy[\s_-]+of[\s_-]+)+", re.I)
COPY_SUFFIX = re.compile(r"^(?:[\s_.-]*(?:\(\d+\)|copy|kopie|final|v?\d+))*[\s_.-]*$", re.I)


def name_pattern(notebook: str) -> re.Pattern:
    """`03_sequence_head` as a pattern that also matches `03 Sequence-Head`."""
    words = [re.escape(w) for w in re.split(r"[\s_\-]+", notebook) if w]
    return re.compile(r"[\s_\-]*".join(words), re.I)


def locate(relpath: str, notebooks: list[str], wrappers=frozenset()) -> tuple[str, str, int] | str:
    """(student name as found, notebook, copy_rank) for a file at `relpath` (relative to the
    extraction folder), or the reason it is not collected. `wrappers`: folders that are not
    students (`wrapper_folders`). The name is the folder's or the prefix's, unchanged."""
    path = PurePath(relpath)
    if path.suffix.lower() != ".ipynb":
        return "not a notebook"
    stem = COPY_OF.sub("", path.stem.strip())
    for notebook in sorted(notebooks, key=len, reverse=True):
        found = name_pattern(notebook).search(stem)
        if not found:
            continue
        suffix = stem[found.end():]
        if not COPY_SUFFIX.match(suffix):
            return f"text after the notebook name {notebook!r}: {suffix!r}"
        numbers = [int(n) for n in re.findall(r"\d+", suffix)]
        rank = max([1 if stem != path.stem.strip() else 0, 1 if suffix.strip(" _.-") else 0,
                    *(n + 1 for n in numbers)])
        top = _owner_level(path, wrappers)
        name = path.parts[top] if top < len(path.parts) - 1 else _prefix_name(stem, found)
        if not name:
            return "no student id: neither a prefix in the file name nor a student folder"
        return name, notebook, rank
    return f"{NOT_THIS_LESSON} (expected {', '.join(notebooks)})"


def match(relpath: str, notebooks: list[str], wrappers=frozenset(),
          ids: Identities | None = None) -> tuple[str, str, int] | str:
    """(student_id, notebook, copy_rank) for a file at `relpath`, or the reason it is not collected.
    `ids`: the collection's identities (`survey`); without them, the name's own id."""
    found = locate(relpath, notebooks, wrappers)
    if isinstance(found, str):
        return found
    name, notebook, rank = found
    if ids is None or not (name in ids.ids or name in ids.refused):
        ids = identities([name])
    return (ids.ids[name], notebook, rank) if name in ids.ids else ids.refused[name]


def names_in(extracted: str, notebooks: list[str], wrappers=frozenset()) -> set[str]:
    """Every student name (folder or prefix) of a notebook below `extracted`."""
    out = set()
    for dirpath, _, filenames in os.walk(extracted):
        for name in filenames:
            found = locate(os.path.relpath(os.path.join(dirpath, name), extracted), notebooks, wrappers)
            if not isinstance(found, str):
                out.add(found[0])
    return out


def survey(extracted: str, notebooks: list[str], roster=None) -> tuple[set[str], Identities]:
    """(wrapper folders, identities) of the collection below `extracted`, with the notebooks of every
    lesson (`notebooks`): a name then has one id in every lesson, and two names that give one id are
    found even when they handed in different lessons. `roster`: a heads_identity.Roster or None."""
    wrappers = wrapper_folders(extracted, notebooks)
    return wrappers, identities(names_in(extracted, notebooks, wrappers), roster)


def _owner_level(path: PurePath, wrappers=frozenset()) -> int:
    """Where in `path.parts` the hand-in's owner is named: the outermost entry below the container (the
    LMS zip or downloads folder) and the folders that only wrap the class. A folder there is the student's
    (the LMS made it, or it holds what one student's archive unpacked to); a file there names its student
    by its prefix. Nothing deeper ever names the owner: it is inside someone's hand-in."""
    level = 1
    while level < len(path.parts) - 1 and str(PurePath(*path.parts[:level + 1])) in wrappers:
        level += 1
    return level


def wrapper_folders(extracted: str, notebooks: list[str]) -> set[str]:
    """Folders (relative to the extraction folder) that only wrap a class (`class/submissions/alice_…,
    bob_…`, `downloads/course-export/alice/, bob/`): the only entry of the container or of another
    wrapper, not named as an LMS names one student's folder, and holding two or more students
    (folders, or notebooks named for two or more). Looked for from the container down only, so no
    folder inside a student's hand-in is ever a wrapper."""
    out = set()
    for container in sorted(os.listdir(extracted)):
        rel = container
        while os.path.isdir(os.path.join(extracted, rel)):
            entries = os.listdir(os.path.join(extracted, rel))
            inner = os.path.join(rel, entries[0]) if len(entries) == 1 else ""
            full = os.path.join(extracted, inner)
            if not inner or os.path.islink(full) or not os.path.isdir(full) or lms_named(entries[0]):
                break
            folders = [e for e in os.listdir(full) if os.path.isdir(os.path.join(full, e))]
            prefixes = set()
            for name in os.listdir(full):
                stem = COPY_OF.sub("", PurePath(name).stem.strip())
                for notebook in notebooks:
                    found = name_pattern(notebook).search(stem)
                    if found and _prefix_id(stem, found):
                        prefixes.add(_prefix_id(stem, found).lower())
            if len(folders) + len(prefixes) < 2:
                break
            out.add(inner)
            rel = inner
    return out


def _prefix_name(stem: str, found: re.Match) -> str:
    """What comes before the notebook name in a file name (`alice` in `alice_03_….ipynb`)."""
    return COPY_OF.sub("", stem[:found.start()].strip(" _.-"))


def _prefix_id(stem: str, found: re.Match) -> str:
    name = _prefix_name(stem, found)
    return "" if refusal(name) else student_id(name)


def name_conflict(relpath: str, notebooks: list[str], wrappers=frozenset(),
                  ids: Identities | None = None) -> str | None:
    """When a file's name, or a folder it lies in inside a student's hand-in, names another student
    than its owner (`_owner_level`): why that name was not obeyed. A folder inside the hand-in is
    reported when it names a student of the collection (`ids`) or is shaped like an LMS's student
    folder or file (`Bob Smith_1234_assignsubmission_file`, `smithbob_1234_5555`); any other folder
    (`hw/`) is just how its owner packed it. None otherwise."""
    found = locate(relpath, notebooks, wrappers)
    if isinstance(found, str):
        return None
    ids = ids or Identities()
    path, owner = PurePath(relpath), found[0]
    top = _owner_level(path, wrappers)

    def id_of(name: str) -> str:
        return ids.ids.get(name) or ("" if refusal(name) else student_id(name))

    def said(name: str) -> set[str]:   # with a roster, its id or the id of its own spelling
        return {id_of(name).lower(), student_id(name).lower()}

    mine = said(owner)
    students = {i.lower() for name, sid in ids.ids.items() for i in (sid, student_id(name))}

    def someone_else(name: str) -> bool:
        return bool(id_of(name)) and not said(name) & mine

    for folder in path.parts[top + 1:-1]:
        if someone_else(folder) and (lms_named(folder) or said(folder) & students):
            return (f"it is in a folder named {shown(folder)} inside {id_of(owner)}'s hand-in: counted as "
                    f"{id_of(owner)}'s, never {id_of(folder)}'s")
    stem = COPY_OF.sub("", path.stem.strip())
    prefix = _prefix_id(stem, name_pattern(found[1]).search(stem))
    if top < len(path.parts) - 1 and prefix and someone_else(prefix):
        return (f"its name says {prefix} but it is in {id_of(owner)}'s folder: counted as "
                f"{id_of(owner)}'s, never {prefix}'s")
    return None


class HeadsCollector(FileNameCollectorPlugin):
    """nbgrader collector plugin: `c.ZipCollectApp.collector_plugin = HeadsCollector`."""

    roster = setting("", "An LMS roster export that decides the id of every student it lists: a Canvas "
                         "gradebook CSV, a Moodle participants CSV or a name,id CSV, recognised by its "
                         "header (grader/heads_identity.py). Empty: ids come from the names.")

    def _notebooks(self, every_lesson: bool = False) -> list[str]:
        coursedir = self.parent.coursedir
        release = os.path.normpath(coursedir.format_path(coursedir.release_directory, ".",
                                                         coursedir.assignment_id))
        folders = [os.path.join(os.path.dirname(release), d) for d in
                   sorted(os.listdir(os.path.dirname(release)))] if every_lesson else [release]
        return sorted(os.path.splitext(f)[0] for folder in folders if os.path.isdir(folder)
                      for f in os.listdir(folder) if f.endswith(".ipynb"))

    def collect(self, submitted_file: str):
        app = self.parent
        extracted = app._format_collect_path(app.extracted_directory)
        if getattr(self, "_survey_of", None) != extracted:  # once per extraction folder
            self._survey_of = extracted
            self._wrappers, self._ids = survey(extracted, self._notebooks(every_lesson=True),
                                               read_roster(self.roster))
        found = match(os.path.relpath(submitted_file, extracted), self._notebooks(), self._wrappers,
                      self._ids)
        if isinstance(found, str):
            self.log.warning("Not collected for %s: %s (%s)", app.coursedir.assignment_id,
                             submitted_file, found)
            return None
        sid, notebook, rank = found
        name = locate(os.path.relpath(submitted_file, extracted), self._notebooks(), self._wrappers)[0]
        # When the LMS names the attempt's time (Blackboard), that is when it was handed in; else the file's
        mtime = attempt_time(name) or datetime.fromtimestamp(os.path.getmtime(submitted_file), timezone.utc)
        # Newest file first; between equally old copies the highest copy number. nbgrader keeps the
        # larger timestamp and writes it to timestamp.txt (used only if a due date is set).
        stamp = mtime.replace(microsecond=0) + timedelta(microseconds=min(rank, 999_999))
        return {"student_id": sid, "file_id": notebook + ".ipynb", "timestamp": stamp.isoformat()}


ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz")


class HeadsExtractor(ExtractorPlugin):
    """nbgrader extractor plugin: `c.ZipCollectApp.extractor_plugin = HeadsExtractor`."""

    max_depth = setting(2, "Archives inside archives are unpacked down to this depth "
                           "(1: only the archives given; 2: an LMS zip of per-student "
                           "zips); deeper ones are left packed, reported.")
    max_expanded_bytes = setting(1024**3, "Bytes one archive given to collect, archives inside it included, "
                                          "may expand to; members beyond are not unpacked, reported.")
    max_ratio = setting(100, "Largest expanded / compressed size of a member (notebooks compress ~5-20x); a "
                             "member above it looks like a zip bomb and is not unpacked, reported.")

    def extract(self, archive_path: str, extracted_path: str) -> None:
        self.refused: list[str] = []
        self._top = extracted_path
        for root, _, files in os.walk(archive_path):
            dest = os.path.normpath(os.path.join(extracted_path, os.path.relpath(root, archive_path)))
            os.makedirs(dest, exist_ok=True)
            for name in files:
                path = os.path.join(root, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    self._refuse(self._shown(path), "not a plain file (a link, a FIFO, a device)")
                elif name.lower().endswith(ARCHIVES):
                    self._unpack(path, os.path.join(dest, _strip_archive(name)), 1,
                                 {"left": self.max_expanded_bytes})
                else:
                    shutil.copy2(path, os.path.join(dest, name))  # keeps the file's timestamp
        report = os.path.join(os.path.dirname(os.path.normpath(extracted_path)), "not_extracted.txt")
        with open(report, "w", encoding="utf-8") as fh:
            fh.writelines(f"{line}\n" for line in self.refused)

    def _shown(self, path: str) -> str:
        """`path` as the report shows it: below the extraction folder, or the archive's name."""
        inside = os.path.abspath(path).startswith(os.path.abspath(self._top) + os.sep)
        return os.path.relpath(path, self._top) if inside else os.path.basename(path)

    def _refuse(self, where: str, why: str) -> None:
        self.log.warning("Not extracted: %s (%s)", where, why)
        self.refused.append(f"{where}: {why}")

    def _unpack(self, archive: str, dest: str, depth: int, budget: dict) -> None:
        try:
            if archive.lower().endswith(".zip"):
                with zipfile.ZipFile(archive) as z:
                    members = [(i.filename, i.file_size, i.compress_size,
                                time.mktime(i.date_time + (0, 0, -1)),
                                stat.S_ISLNK(i.external_attr >> 16), i.is_dir(), i) for i in z.infolist()]
                    self._write_members(archive, dest, depth, budget, members, z.open)
            else:
                with tarfile.open(archive) as t:
                    size = max(1, os.path.getsize(archive))
                    members = [(m.name, m.size, size, m.mtime, not (m.isfile() or m.isdir()), m.isdir(), m)
                               for m in t.getmembers()]
                    self._write_members(archive, dest, depth, budget, members, t.extractfile)
        except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError) as err:
            self._refuse(self._shown(archive), f"not a readable archive ({type(err).__name__}: {err})")

    def _write_members(self, archive, dest, depth, budget, members, open_member) -> None:
        for name, size, packed, mtime, special, is_dir, handle in members:
            inner = os.path.join(self._shown(archive), name)
            parts = PurePosixPath(name.replace("\\", "/")).parts
            if is_dir:
                continue
            if not parts or name.startswith("/") or ".." in parts:
                self._refuse(inner, "a path outside the archive's folder")
                continue
            if special:
                self._refuse(inner, "a link or a device, never created")
                continue
            if size > budget["left"]:
                self._refuse(inner, f"would expand past the {self.max_expanded_bytes} bytes one "
                                    "archive may unpack to")
                continue
            if size > 1024**2 and size > self.max_ratio * max(1, packed):
                self._refuse(inner, f"expands {size // max(1, packed)}x ({size} bytes): a zip bomb?")
                continue
            target = os.path.join(dest, *parts)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            written = 0
            with open_member(handle) as src, open(target, "wb") as out:
                while chunk := src.read(1024**2):  # the sizes in the header may lie
                    written += len(chunk)
                    if written > size:
                        break
                    out.write(chunk)
            budget["left"] -= min(written, size)
            if written > size:
                os.unlink(target)
                self._refuse(inner, "larger than its header says")
                continue
            os.utime(target, (mtime, mtime))
            if target.lower().endswith(ARCHIVES):
                if depth < self.max_depth:
                    self._unpack(target, os.path.join(os.path.dirname(target),
                                                      _strip_archive(os.path.basename(target))),
                                 depth + 1, budget)
                else:
                    self._refuse(self._shown(target), f"an archive nested deeper than "
                                                      f"{self.max_depth} levels, left packed")


def _strip_archive(name: str) -> str:
    for ext in sorted(ARCHIVES, key=len, reverse=True):
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return name
