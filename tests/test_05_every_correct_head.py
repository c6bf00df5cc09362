"""Lesson 05's claims hold for every correct SpanHead, not only the solution's `nn.Linear(d, 2)`.

Simulated students wrote correct heads the check accepts whose claims then failed: the lesson's numbers
depended on how the head consumed the random generator and initialised itself, and one cell ran it in
train mode. (A head with dropout is named by the check, `dropout-in-head`: the contract has none.) The lesson now gives every head the same initial scorers (`headlab.qa.lesson_span_head`) and
measures in eval mode. Each head below replaces the solution's and every cell of the lesson must run."""
import subprocess
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn as nn
from nbclient import NotebookClient

from headlab.checks import ch05
from headlab.qa import lesson_span_head, load_span_scorers

LESSON = Path(__file__).resolve().parents[1] / "solutions" / "05_span_head" / "05_span_head.ipynb"

FRAME = """
class SpanHead(nn.Module):
    def __init__(self, d: int):
        super().__init__()
LAYERS

    def forward(self, H: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
FORWARD
"""


def span_head(layers: list[str], forward: list[str]) -> str:
    """The source of a SpanHead: the lesson's class with these lines of `__init__` (after
    `super().__init__()`) and of `forward`, so that what tells the heads apart is all a row shows."""
    def body(lines):
        return "\n".join(" " * 8 + line for line in lines)
    return FRAME.replace("LAYERS", body(layers)).replace("FORWARD", body(forward))


HEADS = {
    "two nn.Linear(d, 1)": span_head(
        ["self.start = nn.Linear(d, 1)", "self.end = nn.Linear(d, 1)"],
        ["return self.start(H).squeeze(-1), self.end(H).squeeze(-1)"]),
    "two randn vectors": span_head(
        ["self.w_start = nn.Parameter(torch.randn(d))", "self.w_end = nn.Parameter(torch.randn(d))"],
        ["return H @ self.w_start, H @ self.w_end"]),
    "two zero vectors": span_head(
        ["self.w_start = nn.Parameter(torch.zeros(d))", "self.w_end = nn.Parameter(torch.zeros(d))"],
        ["return H @ self.w_start, H @ self.w_end"]),
    "nn.Linear(d, 2) without biases": span_head(
        ["self.qa_outputs = nn.Linear(d, 2, bias=False)   # a softmax over positions ignores a scorer's bias"],
        ["start_logits, end_logits = self.qa_outputs(H).unbind(dim=-1)", "return start_logits, end_logits"]),
    "nn.Linear(d, 2), the end scorer first": span_head(
        ["self.qa_outputs = nn.Linear(d, 2)"],
        ["end_logits, start_logits = self.qa_outputs(H).unbind(dim=-1)", "return start_logits, end_logits"]),
    "nn.Conv1d(d, 2, 1)": span_head(
        ["self.conv = nn.Conv1d(d, 2, kernel_size=1)      # a 1 x 1 convolution over positions is a linear map each"],
        ["start_logits, end_logits = self.conv(H.transpose(1, 2)).unbind(dim=1)", "return start_logits, end_logits"]),
}

MORE = {    # other layouts, checked without running the lesson
    "end scorer defined first": span_head(
        ["self.end = nn.Linear(d, 1)", "self.start = nn.Linear(d, 1)"],
        ["return self.start(H).squeeze(-1), self.end(H).squeeze(-1)"]),
    "one (d, 2) parameter": span_head(
        ["self.W = nn.Parameter(torch.randn(d, 2) / d ** 0.5)"],
        ["return (H @ self.W).unbind(-1)"]),
}


def _head(source: str):
    space = {"nn": nn, "torch": torch}
    exec(source, space)
    return space["SpanHead"]


@pytest.mark.parametrize("name", [*HEADS, *MORE])
def test_the_check_accepts_the_head_and_the_lesson_gives_it_the_solutions_initial_scorers(name):
    cls = _head({**HEADS, **MORE}[name])
    ch05.span_head(cls)
    torch.manual_seed(3)
    reference = nn.Linear(8, 2)
    after = torch.rand(1)
    torch.manual_seed(3)
    head = lesson_span_head(cls, 8).eval()
    assert torch.equal(torch.rand(1), after), "the generator is left as if only nn.Linear(d, 2) had been built"
    H = torch.randn(2, 5, 8)
    with torch.no_grad():
        start, end = head(H)
        want = reference(H)
    for got, k in ((start, 0), (end, 1)):          # the same up to a constant per scorer (a head without biases)
        assert torch.allclose(got - got[:, :1], want[..., k] - want[..., :1, k], atol=1e-5), name


def test_a_layout_it_cannot_read_keeps_its_own_values():
    class Odd(nn.Module):                          # three vectors: start, end and a third it cannot place
        def __init__(self, d):
            super().__init__()
            self.a, self.b = nn.Parameter(torch.ones(d, 3)), nn.Parameter(torch.ones(3))

        def forward(self, H):
            x = H @ self.a + self.b
            return x[..., 0] * x[..., 1], x[..., 2]
    head = Odd(4)
    assert not load_span_scorers(head, torch.randn(2, 4), torch.randn(2))
    assert torch.equal(head.a, torch.ones(4, 3)) and torch.equal(head.b, torch.ones(3))
    with pytest.warns(UserWarning, match="could not give your SpanHead its initial scorers"):
        lesson_span_head(Odd, 4)


@pytest.mark.slow
@pytest.mark.parametrize("name", HEADS)
def test_every_cell_of_lesson_05_runs_with_another_correct_head(name):
    nb = nbformat.read(LESSON, as_version=4)
    answer = next(c for c in nb.cells if c.get("id") == "c05-10-SpanHead")
    answer.source = HEADS[name].lstrip()
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(LESSON.parent)}}).execute(stderr=subprocess.DEVNULL)
    errors = {c.get("id"): f"{o.ename}: {o.evalue}" for c in nb.cells if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"}
    assert not errors, errors
