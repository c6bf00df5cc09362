"""Re-run solution notebooks in place, so their committed outputs match their code.

    python -m dev.run_solutions                     # every lesson (from the repository's folder)
    python -m dev.run_solutions 02_pooling 06_causal_pitfall

Each notebook runs top to bottom in a fresh kernel (as nbgrader and nbval do) and is stamped with a
hash of its code, `metadata.heads.code_sha256`; tests/test_notebooks.py fails when a solution's code
changed after its last run (stale outputs), so run this, then `python grader/release.py`.
"""
from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.heads_lessons import REPO, all_lessons, lesson


def code_hash(nb) -> str:
    code = "\n\0\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return hashlib.sha256(code.encode()).hexdigest()


def run(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nb.metadata["heads"] = {"code_sha256": code_hash(nb)}
    nbformat.write(nb, path)
    print(f"ran {path.relative_to(REPO)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="lessons (default: all in solutions/)")
    args = parser.parse_args()
    for chosen in [lesson(name) for name in args.names] or all_lessons():
        run(chosen.path())


if __name__ == "__main__":
    main()
