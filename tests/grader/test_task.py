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


def test_a_task_that_raises_leaves_the_hand_in_for_a_later_run(tmp_path):
    """A grading task that raises (here: its course folder is gone) is "refused", which `autograde` leaves out of
    the gradebook and reports as NOT GRADED; a red team's honest hand-in was scored 0, unflagged, when it was
    "failed" (nbgrader's verdict on a notebook, which scores 0)."""
    from distributed import Client

    from grade import run_tasks

    spec = {"course": str(tmp_path / "gone"), "lesson": "L", "student": "bob", "version": "v", "files": {},
            "sandbox": None, "duedate": None, "timeout": 60}
    with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        (result,) = list(run_tasks(client, iter([spec])))
    assert result["status"] == "refused", result
    assert result["student"] == "bob" and "did not finish" in result["error"], result
