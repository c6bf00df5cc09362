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
- **Canvas** ("Download Submissions": files `<lastfirst>_[LATE_]<user id>_<attachment id>_<file name>`,
  collected as the id `<lastfirst>_<user id>`, or a roster's): `<lastfirst>_<user id>_<attachment id>_
  <notebook>.html` at the top of the zip, the attachment the graded (newest) copy's, which `grade.py
  collect` keeps in `downloaded/lms_names.json`. Canvas's "Re-upload Submissions" takes the first two
  all-digit `_` fields of a file name as the user and the submitted file, and attaches the page to that
  submission as a comment.
- Any other id (a student folder, a hub user name): `<student id>_<notebook>.html` as well, to hand
  out by name.
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

from heads_identity import CANVAS_FILE

MOODLE_ID = re.compile(r"^(?P<name>.*?)_(?P<participant>\d+)_assignsubmission_[a-z]+$")
LMS_NAMES = "lms_names.json"  # in the course's downloaded/: {lesson: {student id: the graded copy's LMS name}}


def upload_name(student: str, notebook: str, lms_name: str | None = None) -> str:
    """The name of `student`'s feedback page for `notebook` inside the upload zip; `lms_name`: the name
    the LMS gave the graded copy, where collect kept it."""
    canvas = CANVAS_FILE.match(lms_name or "")
    if canvas:
        return f"{canvas['name']}_{canvas['uid']}_{canvas['file']}_{notebook}.html"
    moodle = MOODLE_ID.match(student)
    if moodle:
        name = moodle["name"].replace("_", "-") or "student"
        return f"{name}_{moodle['participant']}_assignfeedback_file/{notebook}.html"
    return f"{student}_{notebook}.html"


def write_feedback_zip(feedback: Path, lesson: str, notebooks: list[str], students: list[str],
                       dest: Path, lms_names=None) -> tuple[list[str], list[tuple[str, str]]]:
    """Zip `feedback/<student>/<lesson>/<notebook>.html` of every student into `dest` (`lms_names`: the
    LMS's name of each student's graded copy, `upload_name`); return (the
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
                name = upload_name(student, notebook, (lms_names or {}).get(student))
                zf.write(page, name)
                written.append(name)
    tmp.replace(dest)  # a zip half written is never left under the name an instructor uploads
    return written, missing
