"""Regenerate lessons/ from solutions/ with nbgrader, every lesson in one run.

    python grader/release.py                 # all lessons
    python grader/release.py 00_representations
    python grader/release.py --to DIR --no-db   # elsewhere, gradebook untouched (the sync test)

Equivalent to `cd grader && nbgrader generate_assignment NAME --force` for each NAME in solutions/,
with this folder's nbgrader_config.py; one process instead of one nbgrader start-up per lesson.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from traitlets.config.loader import PyFileConfigLoader

from heads_lessons import all_lessons, generate_assignments

GRADER = Path(__file__).resolve().parent


def assignments() -> list[str]:
    return [x.name for x in all_lessons()]


def load_config(release_dir: Path | None = None, no_db: bool = False):
    config = PyFileConfigLoader("nbgrader_config.py", path=str(GRADER)).load_config()
    if release_dir is not None:
        config.CourseDirectory.release_directory = str(Path(release_dir).resolve())
    if no_db:
        config.GenerateAssignment.no_database = True
        config.SaveCells.enabled = False
    return config


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="lessons to release (default: all)")
    parser.add_argument("--to", type=Path, help="release directory (default: ../lessons)")
    parser.add_argument("--no-db", action="store_true", help="leave the gradebook untouched")
    args = parser.parse_args(argv)
    names = args.names or assignments()
    unknown = sorted(set(names) - set(assignments()))
    if unknown:
        raise SystemExit(f"no such lesson in solutions/: {', '.join(unknown)}")
    os.chdir(GRADER)
    try:
        generate_assignments(names, load_config(args.to, args.no_db))
    except RuntimeError as err:
        raise SystemExit(str(err))
    print("released " + ", ".join(names))


if __name__ == "__main__":
    sys.exit(main())
