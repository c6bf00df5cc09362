"""Write a student-only copy of the course: the lessons and the package, no solutions, no grader.

    python grader/student_copy.py ../heads-students      # then publish that folder, not this repository

This repository is public by design: `solutions/` holds every solution and every hidden test, and
`tests/grading/` every wrong implementation the grader names. An instructor who needs hidden tests
that students cannot read keeps this repository private and gives students the copy: `lessons/`,
the `headlab` package (its visible checks carry only visible cases), the Binder set-up and the
packaging files. Grading needs only the private repository: the grader records the hidden cases from
`solutions/` itself (grader/heads_outside.py).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What a student needs to open, install and run the lessons; nothing else is copied.
SHIPPED = ["lessons", "headlab", "binder", "docs", "README.md", "pyproject.toml", "requirements.txt",
           "environment.yml", "LICENSE"]
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")


def write_copy(dest: Path) -> list[str]:
    """Copy the student-facing files to `dest` (which must not exist); the top-level names copied."""
    if dest.exists():
        raise FileExistsError(f"{dest} exists; choose a new folder")
    dest.mkdir(parents=True)
    copied = []
    for name in SHIPPED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=SKIPPED)
        elif source.is_file():
            shutil.copy2(source, dest / name)
        else:
            continue
        copied.append(name)
    return copied


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path, help="a new folder for the copy")
    dest = parser.parse_args(argv).dest.resolve()
    try:
        copied = write_copy(dest)
    except FileExistsError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"wrote {dest}: {', '.join(copied)} (no solutions/, grader/, tests/ or dev/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
