"""Autograding preprocessors of the Heads course (loaded by nbgrader_config.py).

They extend nbgrader's own `Execute` and sanitizing steps so that one bad submission is graded, not
fatal, and never stops the batch:

- `HeadsExecute` (nbgrader's `Execute` plus a time budget per notebook and kernel-death handling):
  a cell that loops is interrupted after `Execute.timeout` seconds; once the notebook has used
  `notebook_timeout` seconds, or once the kernel has died (`os._exit`, a segfault, the memory limit),
  every remaining code cell gets an error output that says why it did not run, so its tests score 0
  and the feedback gives the reason. Output is capped while it arrives (`max_output_chars` per cell),
  so a flood cannot fill the grader's memory.
- `DropEmptyNbgraderMetadata` runs after nbgrader's `DeduplicateIds`, which leaves `nbgrader: {}` on a
  student's copy of a graded cell; without this, `CheckCellMetadata` rejects the whole notebook
  ("old version of the metadata", nbgrader issue 1083).
"""
from __future__ import annotations

from time import monotonic

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Integer


def error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{ename}: {evalue}"])


class HeadsExecute(Execute):
    notebook_timeout = Integer(
        180, help="Seconds one notebook may run in total; cells after that are not run (score 0)."
    ).tag(config=True)
    max_output_chars = Integer(
        20000, help="Characters of stream/text output kept per cell while executing (-1: no cap)."
    ).tag(config=True)

    _stop_reason: str | None = None
    _deadline: float = 0.0

    def preprocess(self, nb, resources=None, km=None):
        self._stop_reason = None
        self._deadline = monotonic() + self.notebook_timeout
        self._chars = {}
        self._last_cell = None
        return super().preprocess(nb, resources, km)

    def _get_timeout(self, cell):
        timeout = super()._get_timeout(cell)
        remaining = max(1, int(self._deadline - monotonic()) + 1)
        return remaining if timeout is None else min(timeout, remaining)

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type != "code" or not cell.source.strip():
            return cell
        if self._stop_reason is None and not await ensure_async(self.km.is_alive()):
            self._kernel_died(self._last_cell)  # died after its reply, before the next cell
        if self._stop_reason is None and monotonic() >= self._deadline:
            self._stop_reason = (f"the notebook used up its time limit of {self.notebook_timeout} s "
                                 "(an infinite loop or a very slow cell earlier)")
        if self._stop_reason is not None:
            cell.outputs = [error_output("NotRun", f"this cell was not run: {self._stop_reason}")]
            return cell
        self._last_cell = cell
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        except DeadKernelError:
            self._kernel_died(cell)
        except CellTimeoutError:  # the interrupt did not stop it (a loop in C code): kill the kernel
            self.log.error("Kernel unresponsive after a timeout in cell %s", cell_index)
            self._stop_reason = "the kernel stopped responding in an earlier cell"
            cell.outputs.append(error_output(
                "CellTimeoutError", f"this cell ran longer than the grader allows ({self.timeout} s) "
                "and could not be interrupted; the cells after it were not run"))
            await ensure_async(self.km.shutdown_kernel(now=True))
        return cell

    def _kernel_died(self, cell) -> None:
        self.log.error("Kernel died")
        self._stop_reason = "the kernel died in an earlier cell"
        if cell is not None and not any(o.get("ename") == "KernelDied" for o in cell.outputs):
            cell.outputs.append(error_output(
                "KernelDied", "the Python kernel died while running this cell (os._exit, a crash, "
                "or more memory than the grader allows); the cells after it were not run"))

    execute_cell = run_sync(async_execute_cell)  # nbclient binds the base coroutine otherwise

    def output(self, outs, msg, display_id, cell_index):
        if self.max_output_chars < 0 or msg["msg_type"] not in ("stream", "execute_result",
                                                                "display_data"):
            return super().output(outs, msg, display_id, cell_index)
        content = msg["content"]
        size = len(content.get("text", "")) + len(str(content.get("data", {}).get("text/plain", "")))
        used = self._chars.get(cell_index, 0)
        self._chars[cell_index] = used + size
        if used + size <= self.max_output_chars:
            return super().output(outs, msg, display_id, cell_index)
        if used <= self.max_output_chars:  # the message that crosses the cap: keep its head
            if msg["msg_type"] == "stream":
                content["text"] = content["text"][: self.max_output_chars - used]
                super().output(outs, msg, display_id, cell_index)
            # on stdout: nbgrader scores a cell with stderr output as failed
            outs.append(NotebookNode(output_type="stream", name="stdout", text=(
                f"\n... output truncated by the grader after {self.max_output_chars} characters ...\n")))
        return None


class DropEmptyNbgraderMetadata(NbGraderPreprocessor):
    """Turn a cell that `DeduplicateIds` stripped (`nbgrader: {}`) into an ordinary cell."""

    def preprocess_cell(self, cell, resources, index):
        if "nbgrader" in cell.metadata and not cell.metadata["nbgrader"]:
            del cell.metadata["nbgrader"]
        return cell, resources
