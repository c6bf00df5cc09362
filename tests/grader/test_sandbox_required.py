"""The sandbox is required: without a working bubblewrap no student code runs, unless the instructor
says `grade.py --no-sandbox`, which then says what the kernel can read.

A machine without bubblewrap is made here by a `bwrap` that fails, first on the PATH (as in a
container that forbids namespaces), so these tests run with or without the real one.
"""
from __future__ import annotations

import os

from course import (LESSON, fill, grade_py, make_course, nbgrader, release_nb, scores, solution_answers,
                    submit)

from heads_sandbox import SandboxKernelManager


def no_bubblewrap(tmp_path, **env) -> dict:
    """The environment of a machine whose bubblewrap cannot run, HEADS_SANDBOX unset unless given."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    out = {k: v for k, v in os.environ.items() if k != "HEADS_SANDBOX"}
    out["PATH"] = f"{fake}{os.pathsep}{os.environ['PATH']}"
    return {**out, **env}


def test_the_sandbox_is_required_by_default():
    from traitlets.config.loader import PyFileConfigLoader

    from course import GRADER

    assert SandboxKernelManager.sandbox.default_value == "required"
    config = PyFileConfigLoader("nbgrader_config.py", path=str(GRADER)).load_config()
    assert config.SandboxKernelManager.sandbox == "required"


def test_without_bubblewrap_grading_needs_no_sandbox_said_out_loud(tmp_path):
    root = make_course(tmp_path / "course")
    submit(root, "honest", fill(release_nb(root), solution_answers()))

    # refused before any kernel starts, by grade.py and by nbgrader run by hand
    proc = grade_py("--course", str(root), "autograde", env=no_bubblewrap(tmp_path))
    assert proc.returncode == 1 and "REFUSED: the sandbox is required" in proc.stderr, proc.stdout + proc.stderr
    assert "grade.py --no-sandbox autograde" in proc.stderr
    assert not (root / "autograded").exists() and scores(root) == {}
    log = nbgrader(root, "autograde", LESSON, "--force", env=no_bubblewrap(tmp_path), check=False)
    assert "the sandbox is required, and bubblewrap (bwrap) does not work here" in log, log[-3000:]
    assert scores(root).get("honest", {}).get("score", 0) == 0

    # --no-sandbox grades, and says what the kernel could read
    proc = grade_py("--course", str(root), "--no-sandbox", "autograde", env=no_bubblewrap(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert scores(root)["honest"]["score"] == 4
    warning = proc.stdout.split("WARNING: student code runs WITHOUT the sandbox (--no-sandbox)")[1]
    assert "the recordings of every lesson's checks, with every hidden case and expected value: " in warning
    assert "the solutions and their hidden tests" in warning and "gradebook.db" in warning, warning


def test_heads_sandbox_off_still_overrides(tmp_path):
    root = make_course(tmp_path / "course")
    submit(root, "honest", fill(release_nb(root), solution_answers()))
    proc = grade_py("--course", str(root), "autograde", env=no_bubblewrap(tmp_path, HEADS_SANDBOX="off"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WITHOUT the sandbox (sandbox mode 'off'" in proc.stdout and "expected value" in proc.stdout
    assert scores(root)["honest"]["score"] == 4
