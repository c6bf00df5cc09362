"""The course's executor on small notebooks: the time budget per notebook, a loop that ignores the
interrupt, and a kernel that dies. (The same executor grades whole classes in test_bad_submissions.)"""
from __future__ import annotations

import nbformat
from traitlets.config import Config

from heads_autograde import HeadsExecute
from heads_feedback import joined_streams


def run(cells: list[str], tmp_path, timeout: int, budget: int):
    config = Config()
    config.Execute.timeout = timeout
    config.HeadsExecute.notebook_timeout = budget
    config.Execute.kernel_manager_class = "heads_sandbox.SandboxKernelManager"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    HeadsExecute(config=config).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    # one print may come in two stream outputs ("start", "\n"): joined, as the reader sees them
    return [[(o.get("ename") or o.get("text", "").strip()) for o in joined_streams(c.outputs)] for c in nb.cells]


def test_notebook_time_budget_stops_the_rest(tmp_path):
    # The second loop starts with about 4 s of the budget left, less than its own 6 s timeout, so the
    # budget cuts it short; 4 s leaves room for a slow interrupt of the first on a loaded machine (with
    # 2 s left, a load average of 8 once left none, and the second loop never started).
    out = run(["print('start')", "while True: pass", "while True: pass", "print('never')"],
              tmp_path, timeout=6, budget=10)
    assert out[0] == ["start"]
    assert out[1][-1] == "CellTimeoutError"          # 6 s, interrupted
    assert out[2][-1] == "CellTimeoutError"          # cut short by the 10 s budget
    assert out[3] == ["NotRun"]


def test_uninterruptible_loop_kills_the_kernel_and_stops(tmp_path):
    out = run(["import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
               "print('never')"], tmp_path, timeout=3, budget=60)
    assert out[0][-1] == "CellTimeoutError"
    assert out[1] == ["NotRun"]


def test_kernel_death_marks_the_cell_and_the_rest(tmp_path):
    out = run(["print('before')", "import os; os._exit(1)", "print('after')"], tmp_path,
              timeout=30, budget=60)
    assert out == [["before"], ["KernelDied"], ["NotRun"]]
