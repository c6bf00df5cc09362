"""Colab and Binder badges: one repository, named in the setup cell, and every link leads to a lesson."""
import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
SETUP = (REPO / "dev" / "setup_cell.py").read_text()
SLUG = re.search(r"git\+https://github\.com/([\w.-]+/[\w.-]+)", SETUP).group(1)
LESSONS = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "lessons").glob("*/*.ipynb"))
COLAB = re.compile(r"https://colab\.research\.google\.com/github/([\w.-]+/[\w.-]+)/blob/main/([\w./-]+\.ipynb)")
BINDER = re.compile(r"https://mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/main\?urlpath=lab/tree/([\w./-]+\.ipynb)")


def links(text):
    return [(m.group(1), m.group(2)) for rx in (COLAB, BINDER) for m in rx.finditer(text)]


def test_readme_has_both_badges_for_every_lesson():
    found = links((REPO / "README.md").read_text())
    for lesson in LESSONS:
        assert (SLUG, lesson) in found and found.count((SLUG, lesson)) == 2, f"README badges for {lesson}"
    assert all(slug == SLUG and path in LESSONS for slug, path in found)


@pytest.mark.parametrize("folder", ["solutions", "lessons"])
def test_each_notebook_links_to_its_own_lesson(folder):
    for path in sorted((REPO / folder).glob("*/*.ipynb")):
        intro = nbformat.read(path, as_version=4).cells[0].source
        lesson = f"lessons/{path.parent.name}/{path.name}"
        assert links(intro) == [(SLUG, lesson), (SLUG, lesson)], f"{path}: Colab and Binder badges"
