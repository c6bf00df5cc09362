"""The grader records a lesson's checks on its solution in a kernel (grader/heads_outside.py); the
grading tests record them in their own process (tests/grading/replay.py) and hand that recording to
nbgrader's end-to-end runs instead of running each solution a second time. That is sound only while
the two are the same bytes, which this test shows on lesson 00 (all nine lessons were identical when
the shortcut was made)."""
from __future__ import annotations

import json

import replay
from course import LESSON
from heads_outside import record_solution
from heads_lessons import lesson


def test_the_kernel_records_what_the_replay_records_in_process():
    in_kernel = record_solution(lesson(LESSON).path(), timeout=600, seed=replay.HIDDEN_SEED)
    in_process, _ = replay.record_lesson(LESSON)
    assert in_kernel == json.loads(json.dumps(in_process))
