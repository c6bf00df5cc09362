"""JudgeOutsideKernel (grader/heads_outside.py) on answer files a student's kernel forged: each is one
failed cell with a reason, never an error that stops the grading of the notebook."""
from __future__ import annotations

import pytest

from heads_outside import JudgeOutsideKernel

ENTRIES = [{"check": "headlab.checks.ch00:padding_mask", "answer": "padding_mask", "args": [], "kwargs": {},
            "calls": []}]


@pytest.mark.parametrize("text", [
    "[" * 200_000 + "]" * 200_000,                                  # deeper than Python's JSON parser goes
    '[{"answer": {"kind": "function"}, "results": ' + "[" * 5000 + "]" * 5000 + "}]",   # deeper than decode goes
    "not json",
    '{"answers": 1}',
])
def test_a_forged_answer_file_is_a_failed_cell_with_a_reason(tmp_path, text):
    (tmp_path / "test_padding_mask.json").write_text(text)
    verdict = JudgeOutsideKernel().judge(tmp_path, "test_padding_mask", ENTRIES)
    assert not verdict.passed and verdict.error in ("BadAnswers", "NoAnswers", "CheckFailed"), verdict
