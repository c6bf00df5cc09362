"""A class of any size (issue 24): autograde on Dask, the gradebook on PostgreSQL, every hand-in applied
exactly once. Real parts on one machine, no mocks:

- a Dask scheduler and two workers started as separate processes (as on a cluster) grade a class made
  of wrong implementations into a PostgreSQL gradebook run by an unprivileged user; one worker is
  killed mid-run. Every hand-in is applied once, the scores equal nbgrader's own `autograde`, the
  report's counts are exact, and a second `autograde` changes nothing;
- a result delivered twice is applied once;
- a coordinator killed mid-run, then run again, grades only what is missing;
- a worker that cannot run the sandbox refuses its task, and the hand-in stays ungraded.
"""
from __future__ import annotations

import copy
import csv
import os
import signal
import subprocess
import sys
import time

import pytest

from course import GRADER, LESSON, fill, grade_py, make_course, release_nb, solution_answers, submit
from grade import Course
from harness import recorded_here
from heads_sandbox import bwrap_works
from servers import DaskCluster, Postgres, postgres_bin
from test_grade_00_representations import WRONG

pytestmark = pytest.mark.slow

if not bwrap_works():
    if os.environ.get("CI"):
        raise RuntimeError("bubblewrap is required in CI (apt-get install bubblewrap)")
    pytest.skip("needs bubblewrap (apt-get install bubblewrap)", allow_module_level=True)

SOL = solution_answers()
WRONG_BY_NAME = {w.name: w for w in WRONG}
# student: (answers, score, {test cell: the mistake its check names})
CLASS = {
    "honest": (SOL, 4, {}),
    "le": ({**SOL, "padding_mask": WRONG_BY_NAME["padding_mask-less-or-equal"].answer(SOL)}, 2,
           {"test_padding_mask": "one-too-many"}),
    "nodiag": ({**SOL, "causal_mask": WRONG_BY_NAME["causal_mask-without-diagonal"].answer(SOL)}, 2,
               {"test_causal_mask": "without-diagonal"}),
    "both": ({"padding_mask": WRONG_BY_NAME["padding_mask-left-padding"].answer(SOL),
              "causal_mask": WRONG_BY_NAME["causal_mask-bidirectional"].answer(SOL)}, 0,
             {"test_padding_mask": "left-padding", "test_causal_mask": "bidirectional"}),
}


def class_course(root):
    root = make_course(root, extra_config=recorded_here(root, [LESSON]))
    rel = release_nb(root)
    for student, (answers, _, _) in CLASS.items():
        submit(root, student, fill(rel, answers))
    return root


def gradebook_scores(db_url: str) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url, "heads") as gb:
        return {sub.student.id: {g.name: g.score for g in sub.notebooks[0].grades}
                for sub in gb.find_assignment(LESSON).submissions}


def ledger(db_url: str) -> list[tuple]:
    from sqlalchemy import create_engine, select

    from heads_ledger import LEDGER

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return sorted(tuple(r) for r in conn.execute(select(LEDGER.c.student, LEDGER.c.lesson, LEDGER.c.handin)))
    finally:
        engine.dispose()


def wait_for(condition, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


@pytest.fixture(scope="module")
def postgres():
    if postgres_bin() is None:
        if os.environ.get("CI"):
            raise RuntimeError("PostgreSQL is required in CI (apt-get install postgresql)")
        pytest.skip("needs PostgreSQL (apt-get install postgresql)")
    server = Postgres()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def on_a_cluster(tmp_path_factory, postgres):
    """The class graded on a two-worker cluster into PostgreSQL, a worker killed once the first result
    is in; then `autograde` again."""
    tmp = tmp_path_factory.mktemp("cluster")
    root = class_course(tmp / "course")
    logs = tmp / "logs"
    logs.mkdir()
    cluster = DaskCluster(logs)
    try:
        cluster.add_worker(), cluster.add_worker()
        cluster.wait_for_workers(2)
        args = [sys.executable, str(GRADER / "grade.py"), "--course", str(root), "--scheduler", cluster.address,
                "--db-url", postgres.url, "autograde"]
        run = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: run.poll() is not None or ledger_or_none(postgres.url), 600, "the first applied result")
        assert run.poll() is None, run.communicate() + (cluster.log(),)
        killed = busy_worker(cluster)
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, out + err + cluster.log()
        first = (out, gradebook_scores(postgres.url), ledger(postgres.url))
        again = grade_py("--course", str(root), "--scheduler", cluster.address, "--db-url", postgres.url,
                         "autograde")
        assert again.returncode == 0, again.stdout + again.stderr
        report = grade_py("--course", str(root), "--db-url", postgres.url, "report")
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        cluster.stop()
    return {"root": root, "first": first, "again": again.stdout, "killed": killed,
            "second": (gradebook_scores(postgres.url), ledger(postgres.url)), "db": postgres.url}


def ledger_or_none(db_url: str) -> bool:
    try:
        return bool(ledger(db_url))
    except Exception:   # the ledger table is not there yet
        return False


def busy_worker(cluster: DaskCluster) -> str:
    """Kill, with its kernel, a worker that is grading a hand-in right now; its address."""
    from distributed import Client

    with Client(cluster.address, timeout=30) as client:
        wait_for(lambda: any(client.processing().values()), 300, "a worker with a task")
        address = next(a for a, keys in client.processing().items() if keys)
        pid = client.run(os.getpid, workers=[address])[address]
    os.killpg(os.getpgid(pid), signal.SIGKILL)   # the worker's nanny, the worker and its kernel
    return address


def test_every_hand_in_is_applied_once_with_a_worker_killed(on_a_cluster):
    out, scores, rows = on_a_cluster["first"]
    assert f"graded {len(CLASS)} hand-ins" in out, out
    assert [r[0] for r in rows] == sorted(CLASS), rows   # one ledger row per hand-in
    assert {s: sum(cells.values()) for s, cells in scores.items()} == {s: c[1] for s, c in CLASS.items()}


def test_a_second_autograde_changes_nothing(on_a_cluster):
    assert f"graded 0 hand-ins; {len(CLASS)} unchanged" in on_a_cluster["again"], on_a_cluster["again"]
    _, scores, rows = on_a_cluster["first"]
    assert on_a_cluster["second"] == (scores, rows)


def test_the_report_counts_are_exact(on_a_cluster):
    with (on_a_cluster["root"] / "reports" / "mistakes.csv").open(newline="", encoding="utf-8") as fh:
        named = {(r["student"], r["exercise"]): r["mistake"] for r in csv.DictReader(fh) if r["mistake"]}
    expected = {(s, cell): key for s, (_, _, mistakes) in CLASS.items() for cell, key in mistakes.items()}
    assert named == expected


def test_scores_equal_nbgraders_own_autograde(on_a_cluster, tmp_path):
    """The same class graded by `nbgrader autograde` itself (what the process pool ran): the same
    score in every cell."""
    root = class_course(tmp_path / "course")
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", LESSON, "--force"], cwd=root,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    _, scores, _ = on_a_cluster["first"]
    assert gradebook_scores(f"sqlite:///{root / 'gradebook.db'}") == scores


def test_the_export_reads_postgresql(on_a_cluster, tmp_path):
    dest = tmp_path / "grades.csv"
    proc = grade_py("--course", str(on_a_cluster["root"]), "--db-url", on_a_cluster["db"], "export", "--to", str(dest))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with dest.open(newline="", encoding="utf-8") as fh:
        totals = {row["student_id"]: float(row["total"]) for row in csv.DictReader(fh)}
    assert totals == {s: c[1] for s, c in CLASS.items()}


def test_a_result_delivered_twice_is_applied_once(tmp_path):
    """One hand-in graded by the task a worker runs (here, in this process), applied twice: the
    second apply writes nothing, even when it carries other scores."""
    from heads_ledger import Writer
    from heads_task import grade_handin, grader_version, read_handin

    root = class_course(tmp_path / "course")
    course = Course(root)
    spec = {"course": str(root), "lesson": LESSON, "student": "le", "version": grader_version(course.config, LESSON),
            "files": read_handin(root / "submitted" / "le" / LESSON), "sandbox": None, "duedate": None,
            "timeout": 600}
    result = grade_handin(spec)
    assert result["status"] == "graded", result
    db = f"sqlite:///{root / 'gradebook.db'}"
    writer = Writer(db, "heads", root / "autograded", root / "verdicts")
    try:
        assert writer.apply(result) is True
        forged = copy.deepcopy(result)
        forged["notebooks"][LESSON]["grades"] = {name: 2.0 for name in forged["notebooks"][LESSON]["grades"]}
        assert writer.apply(result) is False and writer.apply(forged) is False
    finally:
        writer.close()
    assert gradebook_scores(db) == {"le": {"test_padding_mask": 0.0, "test_causal_mask": 2.0}}
    assert len(ledger(db)) == 1


def test_a_coordinator_killed_mid_run_loses_and_repeats_nothing(tmp_path):
    root = class_course(tmp_path / "course")
    db = f"sqlite:///{root / 'gradebook.db'}"
    run = subprocess.Popen([sys.executable, str(GRADER / "grade.py"), "--course", str(root), "--jobs", "1",
                            "autograde"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        wait_for(lambda: run.poll() is not None or ledger_or_none(db), 600, "the first applied result")
        assert run.poll() is None, "the coordinator ended before it could be killed"
    finally:
        os.killpg(run.pid, signal.SIGKILL)   # the coordinator and its in-process cluster
        run.wait()
    applied = len(ledger(db))
    assert 0 < applied < len(CLASS), applied
    again = grade_py("--course", str(root), "--jobs", "2", "autograde")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"graded {len(CLASS) - applied} hand-ins; {applied} unchanged" in again.stdout, again.stdout
    assert [r[0] for r in ledger(db)] == sorted(CLASS)
    assert {s: sum(c.values()) for s, c in gradebook_scores(db).items()} == {s: c[1] for s, c in CLASS.items()}


def test_a_worker_without_the_sandbox_refuses(tmp_path):
    root = make_course(tmp_path / "course")
    submit(root, "honest", fill(release_nb(root), SOL))
    no_bwrap = tmp_path / "bin"
    no_bwrap.mkdir()
    os.symlink(sys.executable, no_bwrap / "python3")
    logs = tmp_path / "logs"
    logs.mkdir()
    cluster = DaskCluster(logs)
    try:
        cluster.add_worker(path=str(no_bwrap))   # PATH without bwrap (and setpriv)
        cluster.wait_for_workers(1)
        proc = grade_py("--course", str(root), "--scheduler", cluster.address, "autograde")
    finally:
        cluster.stop()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(l for l in proc.stdout.splitlines() if l.startswith(f"PROBLEM honest/{LESSON}"))
    assert "NOT GRADED" in line and "refused" in line and "the sandbox is required" in line, line
    assert not (root / "autograded" / "honest").exists()
    assert gradebook_scores(f"sqlite:///{root / 'gradebook.db'}") == {}


def test_a_plain_tcp_scheduler_off_this_machine_is_refused(tmp_path):
    root = make_course(tmp_path / "course")
    submit(root, "honest", fill(release_nb(root), SOL))
    proc = grade_py("--course", str(root), "--scheduler", "tcp://192.0.2.1:8786", "autograde")
    assert proc.returncode != 0 and "must use TLS" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
