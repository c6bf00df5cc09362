"""The feedback's second guard: an output that quotes a line of a hidden test never reaches the student."""
from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from heads_feedback import HideQuotedTests

HIDDEN = "assert padding_mask(lengths).sum() == 7, 'the hidden count'"


def feedback_of(*pieces: str) -> str:
    """What the student would read of an answer cell whose print reached the notebook in `pieces`."""
    test = new_code_cell(f"### BEGIN HIDDEN TESTS\n{HIDDEN}\n### END HIDDEN TESTS")
    answer = new_code_cell("print(...)", outputs=[new_output("stream", name="stdout", text=p) for p in pieces])
    nb = new_notebook(cells=[answer, test])
    HideQuotedTests().preprocess(nb, {})
    return "".join(o.get("text", "") for o in nb.cells[0].outputs)


def test_a_quoted_hidden_line_is_removed():
    assert HIDDEN not in feedback_of(f"{HIDDEN}\n")


def test_a_quoted_line_split_across_outputs_is_removed():
    """A print flushed part way (the kernel's timer, or `sys.stdout.flush()` between two writes) comes
    in two outputs, neither of which holds the whole line."""
    half = len(HIDDEN) // 2
    shown = feedback_of(HIDDEN[:half], HIDDEN[half:] + "\n")
    assert HIDDEN[:half] not in shown and HIDDEN[half:] not in shown, shown


def test_other_output_is_kept():
    assert feedback_of("loss 0.42\n", "done\n") == "loss 0.42\ndone\n"
