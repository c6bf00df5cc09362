"""Grade a generated class with the course's grader, one at a time and in parallel, and time it.

    python -m dev.grading_benchmark                     # 50 students, every lesson, serial + parallel
    python -m dev.grading_benchmark --students 10 --no-serial

A class of `--students` full-course submissions (every lesson in solutions/): a third correct (the
solutions), a third partial (the first half of each lesson's exercises answered), a third blank (the
lessons as released). It runs `grade.py autograde` (parallel `nbgrader autograde`, sandboxed, course
configuration) with `--jobs 1` and with `--jobs N` in a temporary course, checks the gradebook
(every submission graded; correct = full marks, blank = 0, partial in between), and prints wall
times, the speed-up and seconds per submission. Not a test: it takes minutes.
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
from pathlib import Path

from grader.lessons import REPO, all_lessons, fill, lesson as lesson_named, make_course


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
            nb = fill(rel, {"correct": sol, "partial": half, "blank": {}}[kind])
            target = root / "submitted" / student / lesson / f"{lesson}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
    return kinds


def grade(root: Path, jobs: int) -> float:
    shutil.rmtree(root / "autograded", ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(REPO / "grader" / "grade.py"), "--course", str(root),
                           "--jobs", str(jobs), "autograde"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(proc.stdout + proc.stderr)
    problems = [line for line in proc.stdout.splitlines() if line.startswith(("PROBLEM", "FLAG"))]
    if problems:
        print("\n".join(problems))
    return wall


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
    return f"{count} submissions in the gradebook, {len(bad)} unexpected" + \
        ("".join(f"\n  {b}" for b in bad[:20]))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--lessons", nargs="*", help="default: every lesson in solutions/")
    parser.add_argument("--no-serial", action="store_true", help="skip the one-at-a-time run")
    args = parser.parse_args(argv)
    lessons = args.lessons or [x.name for x in all_lessons()]
    with tempfile.TemporaryDirectory(prefix="heads-bench-") as tmp:
        root = Path(tmp) / "course"
        make_course(root, lessons)
        kinds = write_class(root, lessons, args.students)
        n = args.students * len(lessons)
        results = {}
        if not args.no_serial:
            results["one at a time (--jobs 1)"] = grade(root, 1)
        results[f"parallel (--jobs {args.jobs})"] = grade(root, args.jobs)
        print(f"\n{args.students} students x {len(lessons)} lessons = {n} submissions "
              f"({', '.join(lessons)}), {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        for name, wall in results.items():
            print(f"  {name:28s} {wall:8.1f} s wall   {wall / n:6.2f} s per submission")
        if len(results) == 2:
            serial, parallel = results.values()
            print(f"  speed-up {serial / parallel:.2f}x")
        print("  " + check(root, lessons, kinds))
        print(json.dumps({"submissions": n, **{k: round(v, 1) for k, v in results.items()}}))


if __name__ == "__main__":
    main()
