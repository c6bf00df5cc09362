"""Time every solution notebook against an import-only floor, in one run.

    python -m dev.benchmark                  # every notebook in solutions/ (from the repository's folder)
    python -m dev.benchmark 00_representations --repeat 3

Each notebook runs top to bottom in a fresh kernel, as a student's "Run all" would. The floor is a
notebook that only runs the setup cell and the imports every lesson needs, so the ratio shows what a
lesson costs beyond starting Python and torch. Peak memory is the kernel's maximum resident set. Kernel
CPU is the seconds of CPU the kernel process itself used (user + system): on a machine shared with other
work it moves far less than wall time does, so it is the column to compare between runs under load (the
load average is printed with the table).
This is a measurement to read, not a test: nothing here fails on a slow machine.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.heads_lessons import REPO, all_lessons, lesson
PEAK_CELL = ("import resource as _r; _u = _r.getrusage(_r.RUSAGE_SELF); "
             "print('PEAK_KB', _u.ru_maxrss, _u.ru_utime + _u.ru_stime)")


def floor_notebook():
    setup = (REPO / "dev" / "setup_cell.py").read_text()
    imports = "import torch, matplotlib.pyplot as plt\nfrom headlab.pretrained import pretrained_encoder"
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(setup),
                                           nbformat.v4.new_code_cell(imports)])


def run(nb, cwd: Path) -> tuple[float, float, float]:
    """(wall seconds including kernel start, kernel peak memory in MiB, kernel CPU seconds)"""
    nb = nbformat.from_dict(nb)
    nb.cells.append(nbformat.v4.new_code_cell(PEAK_CELL))
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    start = time.perf_counter()
    client.execute()
    wall = time.perf_counter() - start
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)   # a stream may come in pieces
    peak_kb, cpu = printed.split("PEAK_KB")[-1].split()[:2]
    return wall, int(peak_kb) / 1024, float(cpu)


def data_milliseconds() -> float:
    """Milliseconds to generate every toy data set at the largest size a lesson asks for (COURSE.md:
    "data generated in milliseconds")."""
    from headlab import data

    start = time.perf_counter()
    data.classification_set(1500), data.tagging_set(400), data.qa_set(400)
    data.similarity_pairs(400), data.retrieval_set(100), data.corpus(8000)
    return 1000 * (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="lessons (default: all in solutions/)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per notebook; the fastest is shown")
    args = parser.parse_args()
    paths = [chosen.path() for chosen in [lesson(name) for name in args.names] or all_lessons()]
    print(f"# benchmark · {platform.node()} · {os.cpu_count()} CPUs · python {platform.python_version()}"
          f" · best of {args.repeat} · load average {os.getloadavg()[0]:.2f} at the start")
    rows = [("floor (setup + imports)", floor_notebook(), REPO)]
    rows += [(p.parent.name, nbformat.read(p, as_version=4), p.parent) for p in paths]
    results = []
    for name, nb, cwd in rows:
        runs = [run(nb, cwd) for _ in range(args.repeat)]
        results.append((name, min(r[0] for r in runs), max(r[1] for r in runs), min(r[2] for r in runs)))
    floor, floor_cpu = results[0][1], results[0][3]
    print("\n| notebook | wall s | × floor | kernel CPU s | × floor | peak MiB |\n|---|---:|---:|---:|---:|---:|")
    for name, wall, peak, cpu in results:
        print(f"| {name} | {wall:.1f} | {wall / floor:.1f} | {cpu:.1f} | {cpu / floor_cpu:.1f} | {peak:.0f} |")
    lessons = results[1:]
    print(f"\ntotal {sum(r[1] for r in lessons):.1f} s for {len(lessons)} notebooks: the course is "
          f"{sum(r[1] for r in lessons) / len(lessons) / floor:.2f}× the floor per notebook "
          f"(kernel CPU {sum(r[3] for r in lessons) / len(lessons) / floor_cpu:.2f}×) · "
          f"load average {os.getloadavg()[0]:.2f} at the end")
    print(f"every data set at its largest lesson size: {data_milliseconds():.0f} ms")


if __name__ == "__main__":
    main()
