"""Autograding preprocessors of the Heads course (loaded by nbgrader_config.py).

They extend nbgrader's own `Execute` and sanitizing steps so that one bad submission is graded, not
fatal, and never stops the batch:

- `HeadsExecute` (nbgrader's `Execute` plus a time budget per notebook and kernel-death handling):
  a cell that loops is interrupted after `Execute.timeout` seconds; once the notebook has used
  `notebook_timeout` seconds, or once the kernel has died (`os._exit`, a segfault, the memory limit),
  every remaining code cell gets an error output that says why it did not run, so its tests score 0
  and the feedback gives the reason. Output is capped while it arrives, every mimetype counted
  (`max_output_chars` of text and `max_output_bytes` in all per cell, `max_notebook_output_bytes`
  per notebook), so a flood of text, HTML or images cannot fill the grader's memory or the notebook;
  an error output is always kept (shortened), so a failing test still fails. After every cell the
  kernel manager's `stop_strays()` kills processes the cell left running (the kernel itself stays).
  Around every cell it calls the hooks an earlier step left in `resources["heads_cell_hooks"]`
  (`before(cell)`, `after(cell)`: heads_outside's AnswerCapture hands a test cell its inputs and takes
  its answers when it ends), after the cell whether it passed, failed, timed out or killed the kernel, and
  tells `after` why a cell's answers cannot be trusted: it did not end, or some of its messages were lost
  (`HeardMessages`).
  A message whose signature does not verify (a forked child writing to the kernel's sockets, a kernel
  killed mid-message) stops that kernel like a death, instead of nbgrader's whole notebook.
- `DropEmptyNbgraderMetadata` runs after nbgrader's `DeduplicateIds`, which leaves `nbgrader: {}` on a
  student's copy of a graded cell; without this, `CheckCellMetadata` rejects the whole notebook
  ("old version of the metadata", nbgrader issue 1083).
- `DropUnknownGradeIds`: a cell marked with a `grade_id` the lesson does not have (copied from another
  notebook, or made up) becomes an ordinary cell; nbgrader's `OverwriteCells` would fail the whole
  hand-in on it (`KeyError: 'grade_id'`), and the formgrade template prints ids unescaped.
- `CurrentSchemaVersion`: a `schema_version` the student edited would stop nbgrader's whole process.
"""
from __future__ import annotations

import json
import os
from time import monotonic

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import output_from_msg
from nbgrader.nbgraderformat import SCHEMA_VERSION
from nbgrader.preprocessors import Execute, NbGraderPreprocessor

from heads_files import headlab, limit, problem, setting

CELL_HOOKS = "heads_cell_hooks"
OVER_THE_CAP = "over_the_cap"   # the answers of a set the executor did not keep: their size


def error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{ename}: {evalue}"])


class HeadsExecute(Execute):
    notebook_timeout = setting(180, "Seconds one notebook may run in total; "
                                    "cells after that are not run (score 0).")
    max_output_chars = limit(20000, "Characters of stream/text output kept per cell while executing", off=-1)
    max_output_bytes = limit(1024**2, "Bytes of output of every mimetype (text, HTML, images, errors...) kept per "
                                      "cell while executing", off=-1)
    max_notebook_output_bytes = limit(8 * 1024**2, "Bytes of output of every mimetype kept per notebook", off=-1)
    max_answers_bytes = setting(32 * 1024**2, "Bytes of the grader's answers (respond's display data) kept per "
                                              "test cell, apart from the caps above, so that a notebook's own "
                                              "output cannot crowd them out; more is dropped, and the cell "
                                              "scores 0.")

    _stop_reason: str | None = None
    _deadline: float = 0.0

    def preprocess(self, nb, resources=None, km=None):
        self._stop_reason = None
        self._deadline = monotonic() + self.notebook_timeout
        self._chars, self._bytes, self._noted, self._answers, self._over_cap = {}, {}, set(), {}, set()
        self._notebook_bytes = 0
        self._last_cell = None
        self._heard = HeardMessages()
        return super().preprocess(nb, resources, km)

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        for channel in (kc.iopub_channel, kc.shell_channel):
            _listen(channel, self._heard.hear)
        return kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)  # nbclient binds the base coroutine otherwise

    def _hide_connection_file(self) -> None:
        """Remove the sandboxed kernel's connection file (its sockets and signing key) once the kernel is running: it
        read the file at start, and nothing else it runs may (a red team's %%bash started Python that read it and
        sent the kernel code to run, out of the flags' sight). The grader's client keeps the key in memory."""
        path = getattr(self.km, "connection_file", None)
        if getattr(self.km, "_private", None) and path and os.path.exists(path):
            os.remove(path)

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
        self._hide_connection_file()
        hooks = (getattr(self, "resources", None) or {}).get(CELL_HOOKS)
        if hooks is not None:
            hooks.before(cell)
        mark, self._timed_out = self._heard.mark(), False
        try:
            await super().async_execute_cell(cell, cell_index, execution_count, store_history)
            stop_strays = getattr(self.km, "stop_strays", None)
            stopped = stop_strays() if stop_strays else 0
            if stopped:
                cell.outputs.append(NotebookNode(output_type="stream", name="stdout", text=(
                    f"\n(the grader stopped {stopped} processes this cell left running)\n")))
                self._problem(f"cell {cell_index} left {stopped} processes running; stopped")
            return cell
        except DeadKernelError:
            self._kernel_died(cell)
        except CellTimeoutError:  # the interrupt did not stop it (a loop in C code): kill the kernel
            self.log.error("Kernel unresponsive after a timeout in cell %s", cell_index)
            self._stop_reason = "the kernel stopped responding in an earlier cell"
            cell.outputs.append(error_output(
                "CellTimeoutError", f"this cell ran longer than the grader allows ({self.timeout} s) "
                "and could not be interrupted; the cells after it were not run"))
            await ensure_async(self.km.shutdown_kernel(now=True))
        except ValueError as err:
            # jupyter_client refuses a message whose HMAC does not verify; nbgrader would then stop the whole
            # notebook and score it 0. Frames interleaved by a forked child, or cut off by a kill, do this: the
            # kernel is treated as dead, so the cells that already ran keep their results.
            if not str(err).startswith(("Invalid Signature", "Duplicate Signature")):
                raise
            self._problem(f"cell {cell_index}: the kernel sent a message with a bad signature; kernel stopped")
            self._stop_reason = "the kernel sent a message the grader could not verify in an earlier cell"
            cell.outputs.append(error_output(
                "KernelUnverified", "the kernel sent a message whose signature was wrong (a forked process "
                "writing to the kernel's sockets, or a kernel killed mid-message); it was stopped, and the "
                "cells after this one were not run"))
            await ensure_async(self.km.shutdown_kernel(now=True))
        finally:
            lost = self._heard.lost_since(mark)
            if lost:
                self._problem(f"cell {cell_index}: {lost} of the kernel's messages were lost on the way")
            if hooks is not None:
                hooks.after(cell, ended=not (self._stop_reason or self._timed_out),
                            distrust=f"{lost} of the cell's messages were lost on the way (a flood of output): its "
                                     "answers cannot be told from another set" if lost else None)
        return cell

    async def _async_handle_timeout(self, timeout, cell=None):
        self._timed_out = True
        return await super()._async_handle_timeout(timeout, cell)

    def _kernel_died(self, cell) -> None:
        limit = getattr(self.km, "limit_reason", None)  # the kernel manager killed it, and says why
        self.log.error("Kernel died%s", f": {limit}" if limit else "")
        if limit:
            self._problem(f"kernel killed: {limit}")
        self._stop_reason = "the kernel died in an earlier cell" + (f" ({limit})" if limit else "")
        if cell is not None and not any(o.get("ename") == "KernelDied" for o in cell.outputs):
            why = limit or "os._exit, a crash, or more memory than the grader allows"
            cell.outputs.append(error_output(
                "KernelDied", f"the Python kernel died while running this cell ({why}); the cells "
                "after it were not run"))

    def _problem(self, text: str) -> None:
        info = (getattr(self, "resources", None) or {}).get("nbgrader", {})
        problem(self.log, info.get("student", "?"), info.get("assignment", "?"), text)

    execute_cell = run_sync(async_execute_cell)  # nbclient binds the base coroutine otherwise

    # The grader's answers (respond's display data) go into the cell's own outputs and stay there: nbclient sends
    # a cell's outputs to a widget's capture hook (an Output widget opened around respond took its set out of the
    # cell) and empties them at a clear_output (red team 14 cleared respond's set, then showed its own as the only one)
    def clear_output(self, outs, msg, cell_index):
        kept = answers_in(outs)
        super().clear_output(outs, msg, cell_index)
        _put_back(outs, kept)

    def output(self, outs, msg, display_id, cell_index):
        kept = answers_in(outs)   # nbclient's delayed clear_output (wait=True) empties them at the next output
        out = self._output(outs, msg, display_id, cell_index)
        _put_back(outs, kept)
        return out

    def _output(self, outs, msg, display_id, cell_index):
        msg_type = msg["msg_type"]
        if msg_type not in ("stream", "execute_result", "display_data", "error"):
            return super().output(outs, msg, display_id, cell_index)
        content = msg["content"]
        size, chars = output_size(content)
        if msg_type == "display_data" and headlab("codec").ANSWERS_MIME in content.get("data", {}):
            self._answers[cell_index] = self._answers.get(cell_index, 0) + size
            if self._answers[cell_index] > self.max_answers_bytes:
                # One set too large to keep stands for every set dropped, and counts with the others: a message of
                # the notebook's over the cap pushed respond's set out, unseen, and left its own (red team 16)
                if cell_index in self._over_cap:
                    return None
                self._over_cap.add(cell_index)
                msg = {**msg, "content": {**content, "data": {headlab("codec").ANSWERS_MIME: {OVER_THE_CAP: size}}}}
            outs.append(output_from_msg(msg))
            return outs[-1]
        used_chars = self._chars.get(cell_index, 0)
        used_bytes = self._bytes.get(cell_index, 0)
        room = min(self._room(self.max_output_chars, used_chars, chars),
                   self._room(self.max_output_bytes, used_bytes, size),
                   self._room(self.max_notebook_output_bytes, self._notebook_bytes, size))
        self._chars[cell_index] = used_chars + chars
        if room >= 0:  # everything fits
            self._count(cell_index, size)
            return super().output(outs, msg, display_id, cell_index)
        if msg_type == "error":  # kept, shortened: the cell must still fail
            content["evalue"] = str(content.get("evalue", ""))[:1000]
            content["traceback"] = [str(line)[:1000] for line in content.get("traceback", [])[:20]]
            self._count(cell_index, output_size(content)[0])
            super().output(outs, msg, display_id, cell_index)
        elif msg_type == "stream" and chars + room > 0:  # the message that crosses: keep its head
            content["text"] = content["text"][: int(chars + room)]
            self._count(cell_index, len(content["text"]))
            super().output(outs, msg, display_id, cell_index)
        if cell_index not in self._noted:
            self._noted.add(cell_index)
            # on stdout: nbgrader scores a cell with stderr output as failed
            outs.append(NotebookNode(output_type="stream", name="stdout", text=(
                "\n... output truncated by the grader: more than it keeps "
                f"({self.max_output_chars} characters of text, {self.max_output_bytes} bytes a "
                f"cell, {self.max_notebook_output_bytes} bytes a notebook) ...\n")))
        return None

    @staticmethod
    def _room(cap: int, used: int, size: int) -> float:
        """What is left under `cap` once `size` more is kept (negative: that much too big)."""
        return float("inf") if cap < 0 else cap - used - size

    def _count(self, cell_index: int, size: int) -> None:
        self._bytes[cell_index] = self._bytes.get(cell_index, 0) + size
        self._notebook_bytes += size

    def _update_display_id(self, display_id, msg):
        # update_display_data replaces an earlier output in place: it counts like a new output.
        size = output_size(msg["content"])[0]
        if self.max_notebook_output_bytes >= 0 and self._notebook_bytes + size > self.max_notebook_output_bytes:
            return None
        self._notebook_bytes += size
        return super()._update_display_id(display_id, msg)


class HeardMessages:
    """The numbers of the kernel's messages the grader received: jupyter_client numbers every message a session
    sends (`<session>_<pid>_<n>`), on every channel. The kernel's iopub socket drops messages while a queue is full,
    and a notebook that flooded it just before respond's set could have that set dropped, leaving a set of its own
    as the cell's only one (measured: of 100,000 displays in one cell, 6-11% and the last were lost)."""

    def __init__(self):
        self.heard: dict[str, set[int]] = {}

    def hear(self, msg: dict) -> None:
        session, _, number = str(msg.get("header", {}).get("msg_id", "")).rpartition("_")
        if number.isdigit():
            self.heard.setdefault(session, set()).add(int(number))

    def mark(self) -> dict[str, int]:
        return {session: max(numbers) for session, numbers in self.heard.items()}

    def lost_since(self, mark: dict[str, int]) -> int:
        """How many messages numbered after `mark` and before the last one heard never arrived."""
        lost = 0
        for session, numbers in self.heard.items():
            start = mark.get(session, min(numbers) - 1)
            lost += sum(n not in numbers for n in range(start + 1, max(numbers) + 1))
        return lost


def _listen(channel, hear) -> None:
    """Have `hear` see every message `channel` hands the executor."""
    receive = channel.get_msg

    async def get_msg(*args, **kwargs):
        msg = await ensure_async(receive(*args, **kwargs))
        hear(msg)
        return msg

    channel.get_msg = get_msg


def answers_in(outs: list) -> list:
    """The outputs that are the grader's answers (respond's display data)."""
    mime = headlab("codec").ANSWERS_MIME
    return [o for o in outs if mime in o.get("data", {})]


def _put_back(outs: list, kept: list) -> None:
    """The answers of `kept` that a clear took out of `outs`, first again."""
    outs[:0] = [o for o in kept if all(o is not x for x in outs)]


def output_size(content: dict) -> tuple[int, int]:
    """(bytes of every mimetype and field, characters of text) of an output message's content."""
    text = content.get("text", "")
    data = content.get("data", {})
    chars = len(text) + len(str(data.get("text/plain", "")))
    size = len(text)
    for value in data.values():
        size += len(value) if isinstance(value, str) else len(json.dumps(value))
    size += len(json.dumps(content.get("metadata", {})))
    size += len(str(content.get("evalue", ""))) + sum(len(str(x)) for x in content.get("traceback", []))
    return size, chars


class DropEmptyNbgraderMetadata(NbGraderPreprocessor):
    """Turn a cell that `DeduplicateIds` stripped (`nbgrader: {}`) into an ordinary cell."""

    def preprocess_cell(self, cell, resources, index):
        if "nbgrader" in cell.metadata and not cell.metadata["nbgrader"]:
            del cell.metadata["nbgrader"]
        return cell, resources


class DropUnknownGradeIds(NbGraderPreprocessor):
    """Strip the nbgrader metadata of every cell whose `grade_id` is not one of the lesson's own (as the
    gradebook has them from the release), and say so."""

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            known = {c.name for c in gb.find_notebook(info["notebook"], info["assignment"]).source_cells}
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader")
            if isinstance(meta, dict) and meta.get("grade_id") not in known:
                del cell.metadata["nbgrader"]
                problem(self.log, info.get("student", "?"), info["assignment"],
                        f"a cell marked with grade_id {str(meta.get('grade_id'))[:40]!r}, which this lesson "
                        "does not have, was graded as an ordinary cell")
        return nb, resources


class CurrentSchemaVersion(NbGraderPreprocessor):
    """Give every cell's nbgrader metadata the schema version of the nbgrader that grades it.

    nbgrader stops the whole `autograde` process, not one student, on a schema version it does not
    know (`SchemaTooOldError`, `SchemaTooNewError`), so one edited `schema_version` in one submission
    would leave every classmate after it ungraded. The release's graded cells are restored by
    `OverwriteCells` anyway; the rest is still validated by `CheckCellMetadata`."""

    def preprocess_cell(self, cell, resources, index):
        if isinstance(cell.metadata.get("nbgrader"), dict):
            cell.metadata["nbgrader"]["schema_version"] = SCHEMA_VERSION
        return cell, resources
