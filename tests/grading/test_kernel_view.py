"""What the student's kernel is given of a recording (`grading.kernel_view`) holds no expected value, in any
lesson: only which answer a test cell calls and the inputs of each call. The check's own arguments (the
hidden cases with their expected values) stay with the grader.

An expected value here is a tensor among a check's arguments that is no call's input; the test looks for
its bytes anywhere in the kernel's view. A view that also carried the check's arguments is caught."""
from __future__ import annotations

import json

import pytest

import replay
from headlab import grading
from heads_lessons import all_lessons


def tensors(data) -> set[str]:
    """The raw bytes (base64) of every tensor of two or more elements in encoded `data`."""
    found = set()
    if isinstance(data, dict):
        if "$t" in data and len(data.get("b", "")) > 8:
            found.add(data["b"])
        for value in data.values():
            found |= tensors(value)
    elif isinstance(data, list):
        for value in data:
            found |= tensors(value)
    return found


def leaked(book: dict, view: dict) -> list[str]:
    """The test cells whose expected values appear in `view`."""
    seen = json.dumps(view)
    out = []
    for grade_id, entries in book.items():
        for entry in entries:
            inputs = set().union(*(tensors([c["args"], c["kwargs"]]) for c in entry["calls"]))
            expected = tensors([entry["args"], entry["kwargs"]]) - inputs
            if any(b in seen for b in expected):
                out.append(grade_id)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("lesson", [x.name for x in all_lessons()])
def test_the_kernel_is_given_no_expected_value(lesson):
    book, _ = replay.record_lesson(lesson)
    assert leaked(book, grading.kernel_view(book)) == []
    expected_somewhere = [g for g, entries in book.items()
                          if any(tensors([e["args"], e["kwargs"]]) - set().union(
                              *(tensors([c["args"], c["kwargs"]]) for c in e["calls"])) for e in entries)]
    # the detector works: a view that also carried the checks' arguments leaks every such cell
    carrying = {g: [{**v, "check_args": [e["args"], e["kwargs"]]} for v, e in zip(grading.kernel_view(book)[g], book[g])]
                for g in book}
    assert sorted(set(leaked(book, carrying))) == sorted(expected_somewhere)
