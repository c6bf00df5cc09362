"""Start a lesson: write its content files as skeletons, and its row in the README.

    python -m dev.new_lesson 09_label_smoothing "Label smoothing" smooth_targets smoothed_loss

writes, from the repository's folder (or `--root DIR`):
- `solutions/09_label_smoothing/09_label_smoothing.ipynb`: the title with its Colab and Binder badges,
  the course's setup cell (dev/setup_cell.py), the imports, and per exercise a prose cell, an answer cell
  (grade_id = the exercise) and its test cell `test_<exercise>` with a hidden-tests region;
- `headlab/checks/ch09.py`: one `Exercise` per exercise, with an empty case list and mistake table;
- `grader/heads_mistakes/ch09.py`: what each mistake returns, one empty table per exercise;
- `tests/grading/test_grade_09_label_smoothing.py`: the lesson's wrong implementations and alternatives;
- a row in the README's lesson table, badges included.

What is left is content: the prose, the answers, the cases and mistakes, the wrong implementations. Then
`python -m dev.run_solutions 09_label_smoothing`, `python grader/release.py` and `python -m dev.record_mistakes`.
"""
from __future__ import annotations

import argparse
import re
import uuid
from pathlib import Path

import nbformat

from grader.heads_lessons import REPO

SLUG = re.search(r"github\.com/([\w.-]+/[\w.-]+)", (REPO / "dev" / "setup_cell.py").read_text()).group(1)


def badges(name: str, colab: str = "Open In Colab") -> str:
    path = f"lessons/{name}/{name}.ipynb"
    return (f"[![{colab}](https://colab.research.google.com/assets/colab-badge.svg)]"
            f"(https://colab.research.google.com/github/{SLUG}/blob/main/{path}) "
            f"[![Binder](https://mybinder.org/badge_logo.svg)]"
            f"(https://mybinder.org/v2/gh/{SLUG}/main?urlpath=lab/tree/{path})")


def _cell(kind: str, source: str, grade_id: str | None = None, solution=False, grade=False, points=0):
    cell = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell)(source)
    cell.id = uuid.uuid4().hex[:8]
    if grade_id:
        cell.metadata["nbgrader"] = {"grade": grade, "grade_id": grade_id, "locked": not solution,
                                     "schema_version": 3, "solution": solution, **({"points": points} if grade else {})}
    return cell


def notebook(name: str, title: str, exercises: list[str]):
    number = name[:2]
    cells = [
        _cell("markdown", f"# {number} · {title}\n\n" + badges(name).replace(") [", ")\n[") +
                          "\n\nWhat this lesson shows, measured.\n\nAfter this lesson you can: …"),
        _cell("code", (REPO / "dev" / "setup_cell.py").read_text().rstrip("\n"), "setup"),
        _cell("code", f"import torch\nfrom torch import nn\n\nfrom headlab.checks import ch{number} as check"),
    ]
    for exercise in exercises:
        cells += [
            _cell("markdown", f"## `{exercise}`\n\nThe idea, the contract (inputs, output, shapes), a worked example."),
            _cell("code", f"def {exercise}(x: torch.Tensor) -> torch.Tensor:\n    ### BEGIN SOLUTION\n"
                          f"    raise NotImplementedError()   # the reference answer\n    ### END SOLUTION",
                  exercise, solution=True),
            _cell("code", f"# Checks your {exercise} and names the mistake if it is wrong.\n"
                          f"check.{exercise}({exercise})\n### BEGIN HIDDEN TESTS\n"
                          f"check.{exercise}({exercise}, cases=[])   # fresh cases\n### END HIDDEN TESTS",
                  f"test_{exercise}", grade=True, points=2),
        ]
    cells += [_cell("markdown", "## Summary\n\nWhat was measured, in one sentence per claim."),
              _cell("markdown", "## Knowledge check\n\nQuestions whose answers the lesson's outputs print.")]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    return nb


def checks_module(name: str, exercises: list[str]) -> str:
    blocks = "\n\n".join(f'''{exercise} = Exercise(
    "{exercise}",
    cases=[],                                  # (input, ..., expected) written out by hand
    read=inputs_as(torch.float32, torch.float32),
    shape=lambda x: tuple(x.shape),
    where=lambda x: f" for x of shape {{tuple(x.shape)}}",
    mistakes=[],                               # Mistake(key, message, fix=...); what it returns: heads_mistakes
)''' for exercise in exercises)
    return (f'"""Checks for lesson {name[:2]}: {", ".join(exercises)}."""\nfrom __future__ import annotations\n\n'
            "import torch\n\nfrom .core import CheckFailed\n"
            "from .engine import Exercise, Mistake, inputs_as  # noqa: F401\n\n\n"
            f"{blocks}\n\n__all__ = {[*exercises, 'CheckFailed']!r}\n")


def mistakes_module(name: str, exercises: list[str]) -> str:
    tables = "\n".join(f'register("{exercise}", [])   # wrong(key, output) or twist(key, output), row for row'
                       for exercise in exercises)
    return (f'"""What the mistakes of lesson {name[:2]}\'s checks return (headlab/checks/ch{name[:2]}.py holds their '
            f'words)."""\nfrom . import register, twist, wrong  # noqa: F401\n\n{tables}\n')


def mutants_module(name: str) -> str:
    return (f'"""Lesson {name[:2]}: wrong implementations students write (each named by its key in the '
            f'checks\' table), and correct alternatives."""\nfrom harness import Alternative, LessonGrading, Wrong\n\n'
            f"WRONG: list[Wrong] = []   # Wrong.edit(name, exercise, old, new, key), *Wrong.edits(exercise, old, rows), "
            f"or whole code\n"
            f"ALTERNATIVES: list[Alternative] = []\n\n\n"
            f"class TestGrading(LessonGrading):\n"
            f'    lesson, wrong, alternatives = "{name}", WRONG, ALTERNATIVES\n')


def readme_row(name: str, title: str, exercises: list[str]) -> str:
    path = f"lessons/{name}/{name}.ipynb"
    names = ", ".join(f"`{e}`" for e in exercises)
    return f"| {name[:2]} | [{title}]({path}) | {names} | {badges(name, 'Colab')} |"


def scaffold(root: Path, name: str, title: str, exercises: list[str]) -> list[Path]:
    if not re.fullmatch(r"\d\d_[a-z0-9_]+", name):
        raise SystemExit(f"a lesson's name is NN_words_with_underscores, not {name!r}")
    bad = [e for e in exercises if not e.isidentifier()]
    if not exercises or bad:
        raise SystemExit(f"exercises must be Python names: {bad or 'none given'}")
    files = {root / "solutions" / name / f"{name}.ipynb": None,
             root / "headlab" / "checks" / f"ch{name[:2]}.py": checks_module(name, exercises),
             root / "grader" / "heads_mistakes" / f"ch{name[:2]}.py": mistakes_module(name, exercises),
             root / "tests" / "grading" / f"test_grade_{name}.py": mutants_module(name)}
    taken = [str(p) for p in files if p.exists()]
    if taken:
        raise SystemExit(f"refusing to overwrite {taken}")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            nbformat.write(notebook(name, title, exercises), path)
        else:
            path.write_text(text)
    readme = root / "README.md"
    lines = readme.read_text().splitlines()
    last = max(i for i, line in enumerate(lines) if re.match(r"\| \d\d \| \[", line))
    lines.insert(last + 1, readme_row(name, title, exercises))
    readme.write_text("\n".join(lines) + "\n")
    return [*files, readme]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="NN_words, e.g. 09_label_smoothing")
    parser.add_argument("title")
    parser.add_argument("exercises", nargs="+", help="the functions or classes the learner writes")
    parser.add_argument("--root", type=Path, default=REPO, help="the repository to write into")
    args = parser.parse_args(argv)
    for path in scaffold(args.root, args.name, args.title, args.exercises):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
