"""Which student and which notebook a downloaded file is: the course's `zip_collect` plugin.

nbgrader's `zip_collect` extracts an LMS zip (or copies a folder of downloads) into
`downloaded/<lesson>/extracted/` and asks a collector plugin, file by file, for the student id and
the notebook. `HeadsCollector` recognises the names students really submit:

    class/alice/03_sequence_head.ipynb           a student folder (or a per-student zip)
    class/alice_03_sequence_head.ipynb           a prefix with the student id (Canvas, Moodle, ...)
    class/bob/Copy of 03_sequence_head.ipynb     Colab's "Save a copy in Drive"
    class/bob/03_sequence_head (1).ipynb         a second browser download
    class/carol - 03 Sequence Head - Copy.ipynb  spaces, case, "- Copy"

where `class` is the container: the LMS zip (nbgrader extracts `class.zip` into `class/`) or the
downloads folder given to `grade.py collect`; it is never taken for a student. The notebook name is
found inside the file name (case, spaces and dashes do not matter); what comes before it is the
student id, or, when nothing does, the nearest folder below the container. When one student has several
copies of a notebook, the newest file wins; between copies of the same age, the higher copy number
("(2)" over "(1)" over none). Everything else (another lesson's notebook, `Untitled.ipynb`, a data
file) is not collected, and `collect.py` reports it by name.
"""
from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import PurePath

from nbgrader.plugins import FileNameCollectorPlugin

COPY_OF = re.compile(r"^(copy[\s_-]+of[\s_-]+)+", re.I)
COPY_SUFFIX = re.compile(r"^(?:[\s_.-]*(?:\(\d+\)|copy|kopie|final|v?\d+))*[\s_.-]*$", re.I)


def name_pattern(notebook: str) -> re.Pattern:
    """`03_sequence_head` as a pattern that also matches `03 Sequence-Head`."""
    words = [re.escape(w) for w in re.split(r"[\s_\-]+", notebook) if w]
    return re.compile(r"[\s_\-]*".join(words), re.I)


def student_id(text: str) -> str:
    """A folder-safe student id: letters, digits and `_.@-` kept, anything else `_`."""
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", text).strip("_.-")


def match(relpath: str, notebooks: list[str]) -> tuple[str, str, int] | str:
    """(student_id, notebook, copy_rank) for a file at `relpath` (relative to the extraction folder),
    or the reason it is not collected."""
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
        sid = student_id(COPY_OF.sub("", stem[:found.start()].strip(" _.-")))
        if not sid:  # the nearest folder below the container (the LMS zip or downloads folder)
            folders = [student_id(p) for p in path.parts[1:-1] if student_id(p)]
            sid = folders[-1] if folders else ""
        if not sid:
            return "no student id: neither a prefix in the file name nor a student folder"
        return sid, notebook, rank
    return f"not a notebook of this lesson (expected {', '.join(notebooks)})"


class HeadsCollector(FileNameCollectorPlugin):
    """nbgrader collector plugin: `c.ZipCollectApp.collector_plugin = HeadsCollector`."""

    def _notebooks(self) -> list[str]:
        coursedir = self.parent.coursedir
        release = coursedir.format_path(coursedir.release_directory, ".", coursedir.assignment_id)
        return sorted(os.path.splitext(f)[0] for f in os.listdir(release) if f.endswith(".ipynb"))

    def collect(self, submitted_file: str):
        app = self.parent
        extracted = app._format_collect_path(app.extracted_directory)
        found = match(os.path.relpath(submitted_file, extracted), self._notebooks())
        if isinstance(found, str):
            self.log.warning("Not collected for %s: %s (%s)", app.coursedir.assignment_id,
                             submitted_file, found)
            return None
        sid, notebook, rank = found
        mtime = datetime.fromtimestamp(os.path.getmtime(submitted_file), timezone.utc)
        # Newest file first; between equally old copies the highest copy number. nbgrader keeps the
        # larger timestamp and writes it to timestamp.txt (used only if a due date is set).
        stamp = mtime.replace(microsecond=0) + timedelta(microseconds=min(rank, 999_999))
        return {"student_id": sid, "file_id": notebook + ".ipynb", "timestamp": stamp.isoformat()}
