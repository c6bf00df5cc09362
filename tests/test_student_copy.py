"""grader/student_copy.py: what students may see, and nothing an instructor keeps private."""
import subprocess
import sys

import student_copy
from heads_lessons import REPO


def test_the_copy_has_the_lessons_and_the_package_and_no_solution(tmp_path):
    dest = tmp_path / "students"
    copied = student_copy.write_copy(dest)
    assert {"lessons", "headlab", "pyproject.toml"} <= set(copied)
    assert not {"solutions", "grader", "tests", "dev"} & {p.name for p in dest.iterdir()}
    texts = [p.read_text(errors="replace") for p in dest.rglob("*") if p.suffix in (".ipynb", ".py")]
    assert texts and not [t for t in texts if "BEGIN HIDDEN TESTS" in t or "BEGIN SOLUTION" in t]
    lessons = sorted(p.name for p in (dest / "lessons").iterdir() if p.is_dir())
    assert lessons == sorted(p.name for p in (REPO / "lessons").iterdir() if p.is_dir())
    # the package imports from the copy alone
    out = subprocess.run([sys.executable, "-c", "import headlab, headlab.checks.ch02; print(headlab.__file__)"],
                         cwd=dest, capture_output=True, text=True, check=True).stdout
    assert out.strip().startswith(str(dest))


def test_it_never_writes_into_an_existing_folder(tmp_path):
    assert student_copy.main([str(tmp_path)]) == 1
