"""Every measured figure quoted in a lesson's prose is one that an output of that lesson prints.

A decimal figure in a markdown cell (0.743, 82.8 %, 1.5×) must appear, as written, in the text
output of some code cell of the same solution notebook, so a re-run that moves a number shows up here
instead of leaving the prose behind. Figures inside LaTeX maths ($…$) and inline code (`…`) are
formulas and code, not measurements, and are not matched. The solutions carry their outputs
(`python -m dev.run_solutions`); the lessons are generated from them.
"""
import re

import nbformat
import pytest

from heads_lessons import all_lessons

NOTEBOOKS = [x.path() for x in all_lessons()]

DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.]*\d)")
NOT_PROSE = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|<[^>]*>", re.S)


def quoted_figures(markdown: str) -> set[str]:
    return set(DECIMAL.findall(NOT_PROSE.sub(" ", markdown)))


def printed_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                parts.append(out["text"])
            for mime in ("text/plain", "text/markdown", "text/html"):
                parts.append(str(out.get("data", {}).get(mime, "")))
    return "\n".join(parts)


def test_the_rule_reads_figures_and_skips_maths_and_code():
    text = "accuracy 0.743 against $\\ln 2 = 0.693$ and `lr=3e-3`, 82.8 % in [x](a/1.5.png), v0.1"
    assert quoted_figures(text) == {"0.743", "82.8"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_every_figure_in_the_prose_is_printed_by_an_output(path):
    nb = nbformat.read(path, as_version=4)
    printed = printed_text(nb)
    missing = {}
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for figure in sorted(quoted_figures(cell.source)):
                if figure not in printed:
                    missing.setdefault(k, []).append(figure)
    assert not missing, (f"{path.name}: figures quoted in markdown that no output prints "
                         f"(cell index: figures): {missing}")
