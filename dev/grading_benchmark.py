"""Time the grader on a generated class: the Dask path against a process pool, and what a MOOC costs.

    python -m dev.grading_benchmark                       # 10 students x 3 lessons = 30 hand-ins
    python -m dev.grading_benchmark --students 50 --lessons 00_representations

A class of `--students` submissions of each lesson: a third correct (the solution), a third partial
(the first half of the exercises answered), a third blank (the lesson as released). It is graded twice
in one temporary course, sandboxed, with the course configuration:

- **pool**: `nbgrader autograde LESSON` in `--jobs` processes at a time, each on its share of the
  students (the engine `grade.py` had before Dask, kept here as the baseline);
- **cluster**: `grade.py --jobs N autograde --regrade` (an in-process Dask LocalCluster of N
  workers, one task per hand-in, every result applied once through the ledger).

It checks the gradebook after each (correct = full marks, blank = 0, partial in between) and prints
the wall times, their ratio, the core-seconds per hand-in (the machine's busy time during each run,
from /proc/stat: run it on a quiet machine), and from that a capacity table for 10,000 learners x 9
notebooks. Not a test: it takes
minutes, and its numbers depend on how busy the machine is.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader.heads_lessons import REPO, all_lessons, fill, lesson as lesson_named, make_course

MOOC = 10_000 * 9


def write_class(root: Path, lessons: list[str], n: int) -> dict[str, str]:
    import nbformat

    kinds = {}
    for lesson in lessons:
        sol = lesson_named(lesson).answers()
        half = dict(list(sol.items())[: max(1, len(sol) // 2)])
        rel = nbformat.read(root / "release" / lesson / f"{lesson}.ipynb", as_version=4)
        for i in range(n):
            student = f"s{i:03d}"
            kind = ("correct", "partial", "blank")[i % 3]
            kinds[student] = kind
            target = root / "submitted" / student / lesson / f"{lesson}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(fill(rel, {"correct": sol, "partial": half, "blank": {}}[kind]), target)
    return kinds


def busy_seconds() -> float:
    """Core-seconds this machine has been busy (/proc/stat). The kernels run in a pid namespace whose
    processes are reaped by the system, not by the grader, so a process's rusage misses them."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + fields[4]   # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def measured(run) -> tuple[float, float]:
    """(wall seconds, busy core-seconds of the whole machine) of `run()`: run it on a quiet machine."""
    before = busy_seconds()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start, busy_seconds() - before


def checked(proc: subprocess.CompletedProcess) -> None:
    if proc.returncode:
        raise SystemExit(proc.stdout[-5000:] + proc.stderr[-5000:])


def pool(root: Path, lessons: list[str], students: list[str], jobs: int) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    shares = [(lesson, students[i::jobs]) for lesson in lessons for i in range(jobs) if students[i::jobs]]

    def run(share):
        lesson, mine = share
        others = ",".join(sorted(set(students) - set(mine)))
        args = ["autograde", lesson, "--force", *([f"--CourseDirectory.student_id_exclude={others}"] if others else [])]
        checked(subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env,
                               capture_output=True, text=True))

    with ThreadPoolExecutor(max_workers=jobs) as threads:
        list(threads.map(run, shares))


def cluster(root: Path, jobs: int) -> None:
    checked(subprocess.run([sys.executable, str(REPO / "grader" / "grade.py"), "--course", str(root),
                            "--jobs", str(jobs), "autograde", "--regrade"], capture_output=True, text=True))


def check(root: Path, lessons: list[str], kinds: dict[str, str]) -> str:
    from nbgrader.api import Gradebook

    bad, count = [], 0
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for lesson in lessons:
            max_score = gb.find_assignment(lesson).max_score
            for student, kind in kinds.items():
                score = gb.find_submission(lesson, student).score
                count += 1
                ok = {"correct": score == max_score, "blank": score == 0,
                      "partial": 0 < score < max_score or max_score == 0}[kind]
                if not ok:
                    bad.append(f"{student} ({kind}) {lesson}: {score}/{max_score}")
    return f"{count} hand-ins in the gradebook, {len(bad)} unexpected" + "".join(f"\n    {b}" for b in bad[:20])


def capacity(core_seconds: float) -> list[str]:
    """Wall time of 10,000 x 9 hand-ins at `core_seconds` each, on clusters of a few sizes."""
    total = MOOC * core_seconds / 3600
    lines = [f"capacity for {MOOC:,} hand-ins at {core_seconds:.1f} core-s each: {total:,.0f} core-hours"]
    for cores in (8, 64, 256, 1024):
        lines.append(f"    {cores:5d} cores: {total / cores:8.1f} h")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--lessons", nargs="*", default=["00_representations", "02_pooling", "06_causal_pitfall"],
                        help="default: 00, 02 and 06 (30 hand-ins with 10 students); 'all' for every lesson")
    args = parser.parse_args(argv)
    lessons = [x.name for x in all_lessons()] if args.lessons == ["all"] else args.lessons
    with tempfile.TemporaryDirectory(prefix="heads-bench-") as tmp:
        root = Path(tmp) / "course"
        make_course(root, lessons)
        kinds = write_class(root, lessons, args.students)
        n = args.students * len(lessons)
        cluster(root, args.jobs)   # a first pass records each lesson's checks, so neither run pays for it
        results = {}
        for name, run in (("pool", lambda: pool(root, lessons, sorted(kinds), args.jobs)),
                          ("cluster", lambda: cluster(root, args.jobs))):
            shutil.rmtree(root / "autograded", ignore_errors=True)
            results[name] = measured(run)
            results[name + " check"] = check(root, lessons, kinds)
        print(f"\n{n} hand-ins ({args.students} students x {', '.join(lessons)}), --jobs {args.jobs}, "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        for name in ("pool", "cluster"):
            wall, cpu = results[name]
            print(f"  {name:8s} {wall:7.1f} s wall  {wall / n:5.2f} s per hand-in  {cpu / n:5.2f} core-s per hand-in"
                  f"\n    {results[name + ' check']}")
        ratio = results["cluster"][0] / results["pool"][0]
        print(f"  cluster / pool wall time: {ratio:.2f}x")
        print("\n".join("  " + line for line in capacity(results["cluster"][1] / n)))
        print(json.dumps({"hand_ins": n, "pool_s": round(results["pool"][0], 1),
                          "cluster_s": round(results["cluster"][0], 1), "ratio": round(ratio, 2),
                          "core_s_per_hand_in": round(results["cluster"][1] / n, 2)}))


if __name__ == "__main__":
    main()
