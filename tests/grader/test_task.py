"""The grading task's version (grader/heads_task.py): what decides a grade, and nothing a hand-in writes."""
from __future__ import annotations

from traitlets.config import Config

import heads_task


def test_the_version_reads_the_graders_code_not_the_course_folders_beside_it(tmp_path, monkeypatch):
    """A red team's honest `%%writefile mask_helpers.py` wrote a .py file into autograded/, below grader/: the version
    changed mid-run and every later hand-in of the class was refused."""
    grader = tmp_path / "grader"
    (grader / "heads_mistakes").mkdir(parents=True)
    (grader / "heads_x.py").write_text("A = 1\n")
    (grader / "heads_mistakes" / "ch00.py").write_text("B = 1\n")
    (tmp_path / "source" / "L").mkdir(parents=True)
    monkeypatch.setattr(heads_task, "GRADER", grader)
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    version = heads_task.grader_version(config, "L")

    (grader / "autograded" / "bob" / "L").mkdir(parents=True)
    (grader / "autograded" / "bob" / "L" / "mask_helpers.py").write_text("import os\n")
    assert heads_task.grader_version(config, "L") == version, "a student's file changed the grader's version"

    (grader / "heads_mistakes" / "ch00.py").write_text("B = 2\n")
    changed = heads_task.grader_version(config, "L")
    assert changed != version, "the mistakes package decides grades"
    (grader / "heads_x.py").write_text("A = 2\n")
    assert heads_task.grader_version(config, "L") != changed, "the grader's modules decide grades"
