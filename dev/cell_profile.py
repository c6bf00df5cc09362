"""Where a notebook's time and memory go: each code cell's cost, in a fresh kernel, costliest first.

    python -m dev.cell_profile 05_span_head [--top 10] [--lessons]

Runs the solution notebook (or, with --lessons, the released lesson, errors allowed) top to bottom as
dev.benchmark does, timing every code cell from the moment it is sent to the kernel to its last output,
and prints the kernel start, the costliest cells (wall seconds, the kernel's CPU seconds, id, first line;
sorted by CPU, which moves far less than wall time when other work shares the machine) and the totals.
Each line also shows the kernel's peak resident memory after that cell (MiB) and how much the cell raised
it, read by a one-line cell run after it (not timed; the kernel's CPU count before it includes the first
cell's kernel start). Like dev.benchmark, a measurement to read (the load average is printed with
it), never asserted.
"""
from __future__ import annotations

import argparse
import os
import time

import nbformat
from nbclient import NotebookClient

from grader.heads_lessons import REPO, lesson


PEAK = "import resource as _r; _u = _r.getrusage(_r.RUSAGE_SELF); print(_u.ru_maxrss, _u.ru_utime + _u.ru_stime)"


def profile(path, allow_errors: bool = False) -> tuple[float, list[tuple[float, float, float, str, str]]]:
    """(seconds to start the kernel, [(wall seconds, kernel CPU seconds, peak MiB after it, cell id, first
    line)] per code cell in notebook order)."""
    nb = nbformat.read(path, as_version=4)
    cells = list(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell(PEAK))            # the probe, run after every code cell
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=allow_errors,
                            resources={"metadata": {"path": str(path.parent)}})
    rows: list[tuple[float, float, float, str, str]] = []
    cpu_before = 0.0
    t0 = time.perf_counter()
    with client.setup_kernel():
        kernel = time.perf_counter() - t0
        for index, cell in enumerate(cells):
            if cell.cell_type != "code":
                continue
            start = time.perf_counter()
            client.execute_cell(cell, index)
            seconds = time.perf_counter() - start
            probe = client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
            peak_kb, cpu = "".join(o["text"] for o in probe.outputs if o.get("name") == "stdout").split()[-2:]
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            rows.append((seconds, float(cpu) - cpu_before, int(peak_kb) / 1024, cell.get("id", str(index)), first[:60]))
            cpu_before = float(cpu)
    return kernel, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name")
    parser.add_argument("--top", type=int, default=12, help="cells shown, the most CPU first")
    parser.add_argument("--lessons", action="store_true", help="the released lesson, untouched, errors allowed")
    args = parser.parse_args()
    chosen = lesson(args.name)
    path = REPO / "lessons" / chosen.path().parent.name / chosen.path().name if args.lessons else chosen.path()
    kernel, rows = profile(path, allow_errors=args.lessons)
    print(f"# {path.relative_to(REPO)} · load average {os.getloadavg()[0]:.2f}")
    print(f"kernel start {kernel:.2f} s; cells {sum(r[0] for r in rows):.2f} s wall, "
          f"{sum(r[1] for r in rows):.2f} s kernel CPU; peak {max(r[2] for r in rows):.0f} MiB")
    raised = {r[3]: r[2] - (rows[k - 1][2] if k else 0.0) for k, r in enumerate(rows)}
    print(f"{'wall s':>7} {'CPU s':>6}  {'MiB':>5} {'+MiB':>5}  {'cell':28}  first line")
    for seconds, cpu, peak, cell_id, first in sorted(rows, key=lambda r: -r[1])[:args.top]:
        print(f"{seconds:7.2f} {cpu:6.2f}  {peak:5.0f} {raised[cell_id]:+5.0f}  {cell_id:28}  {first}")
    print("cells that raised the peak most:", ", ".join(
        f"{cell_id} {mib:+.0f}" for cell_id, mib in sorted(raised.items(), key=lambda kv: -kv[1])[1:6]))


if __name__ == "__main__":
    main()
