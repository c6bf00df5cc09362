"""Feedback back into an LMS: one upload-ready zip per lesson (`grade.py feedback --zip`).

    python grader/grade.py feedback --zip [LESSON...]   # <course>/lms/<lesson>_feedback.zip

The zip holds every graded student's feedback pages, each named so that the LMS the submissions were
downloaded from attaches it to that student. The name is built from the student id, which
`grade.py collect` took from the LMS's own download names (grader/heads_collect.py):

- **Moodle** ("Download all submissions": a folder per student, `Full Name_<participant id>_
  assignsubmission_file`, collected as the id `Full_Name_<participant id>_assignsubmission_file`): the
  page goes into a folder `Full-Name_<participant id>_assignfeedback_file/`. Moodle's "Upload multiple
  feedback files in a zip" (the "Feedback files" feedback type) splits each folder name at `_` and
  reads the participant id from the second field, so the full name may not keep its `_`.
- **Canvas** ("Download Submissions": files `<lastfirst>_<user id>_<attachment id>_<file name>`,
  collected as the id `<lastfirst>_<user id>_<attachment id>`): `<student id>_<notebook>.html` at the
  top of the zip. Canvas's "Re-upload Submissions" takes the first two all-digit `_` fields of a file
  name as the user and the submitted file, and attaches the page to that submission as a comment.
- Any other id (a student folder, a hub user name): `<student id>_<notebook>.html` as well, to hand
  out by name.
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

MOODLE_ID = re.compile(r"^(?P<name>.*?)_(?P<participant>\d+)_assignsubmission_[a-z]+$")


def upload_name(student: str, notebook: str) -> str:
    """The name of `student`'s feedback page for `notebook` inside the upload zip."""
    moodle = MOODLE_ID.match(student)
    if moodle:
        name = moodle["name"].replace("_", "-") or "student"
        return f"{name}_{moodle['participant']}_assignfeedback_file/{notebook}.html"
    return f"{student}_{notebook}.html"


def write_feedback_zip(feedback: Path, lesson: str, notebooks: list[str], students: list[str],
                       dest: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """Zip `feedback/<student>/<lesson>/<notebook>.html` of every student into `dest`; return (the
    names written, (student, notebook) of each page that is missing). Only regular files are read:
    the feedback folder is the grader's, but nothing in it is followed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    written, missing = [], []
    tmp = dest.with_name(dest.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for student in students:
            for notebook in notebooks:
                page = feedback / student / lesson / f"{notebook}.html"
                if page.is_symlink() or not page.is_file():
                    missing.append((student, notebook))
                    continue
                name = upload_name(student, notebook)
                zf.write(page, name)
                written.append(name)
    tmp.replace(dest)  # a zip half written is never left under the name an instructor uploads
    return written, missing
