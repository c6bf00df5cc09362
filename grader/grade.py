"""The instructor's grading flow, one command per step, each running nbgrader's own commands.

    python grader/grade.py collect SUBMISSIONS...   # an LMS zip, a folder of downloads, files
                                                    # (--roster FILE: an LMS roster decides ids)
    python grader/grade.py autograde [LESSON...]    # sandboxed, in parallel, each hand-in applied once
                                                    # (--scheduler ADDRESS, --db-url URL: grader/CLUSTER.md;
                                                    # --run-flagged STUDENT/LESSON: flagged code read, run)
    python grader/grade.py feedback [LESSON...]     # grader/feedback/<student>/<lesson>/*.html
    python grader/grade.py feedback --zip           # and grader/lms/<lesson>_feedback.zip for the LMS
    python grader/grade.py export [LESSON...] [--to grades.csv]  # a row per student, a column per notebook
                                                    # (--clear STUDENT/LESSON: a flagged score reviewed, counted)
    python grader/grade.py report [LESSON...]       # reports/class.html, mistakes.csv: the class's mistakes

`collect` runs `nbgrader zip_collect LESSON --force` for every lesson (the course's collector plugin,
grader/heads_collect.py, recognises students' file names) and reports every file it did not collect, by
name, every archive member it would not unpack, every file whose name names another student than its
folder, every refused student name (grader/heads_identity.py), every two names that give one id (both
kept) and, with `--roster`, every name the roster lacks. `autograde` checks that each submitted notebook
is within the size caps (bytes, cells, stored output: grader/heads_intake.py, measured before it is
parsed; one over a cap is set aside as `NAME.ipynb.too-large`) and is readable JSON (else it is set
aside as `NAME.ipynb.unreadable`); either scores 0 as missing, with the reason printed. Then it grades
every new or changed hand-in as one Dask task (nbgrader's `autograde` on a worker, grader/heads_task.py;
an in-process cluster of `--jobs` workers, or `--scheduler ADDRESS`), applies each result once
(grader/heads_ledger.py; `--regrade` grades all again; `--db-url` for PostgreSQL; the hidden tests
draw fresh inputs each run, the same for the whole class, `--hidden-seed N` to repeat a run's), and prints
every student's score, a `PROBLEM` line for what the grader had to clean up or stop (links removed,
processes stopped, a kernel killed over a limit, code flagged for review replaced by `pass` and not run:
grader/heads_unrun.py) and a `FLAG` line for a submission to look at (grader/heads_flags.py). `feedback` and `export` are `nbgrader generate_feedback` and `nbgrader export`.
`feedback --zip` also writes one upload-ready zip a lesson for the LMS (grader/heads_lms.py). `export`
prints the flags, holds the score of a notebook flagged for review out of the CSV until `--clear` names it
(grader/heads_export.py), and refuses (exit status 1) a score above its maximum; it exports the lessons named, or
every lesson somebody submitted, and leaves out (exit status 1, a `NOT EXPORTED` line) a lesson named
that was never released or that nobody submitted.
All of them use the course configuration, grader/nbgrader_config.py (or `--course DIR`, a folder
holding another nbgrader_config.py).

Student code runs in the sandbox (grader/heads_sandbox.py), which is required: without a working
bubblewrap `autograde` refuses to start. `--no-sandbox` grades without it and prints what each kernel
can then read (the recordings, with every hidden case and expected value; the solutions; the gradebook).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import itertools
import json
import os
import secrets
import shutil
import subprocess
import sys
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

GRADER = Path(__file__).resolve().parent


class Course:
    """The nbgrader course in `root` (the folder with nbgrader_config.py)."""

    def __init__(self, root: Path = GRADER):
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config.loader import PyFileConfigLoader

        self.root = Path(root).resolve()
        self.config = PyFileConfigLoader("nbgrader_config.py", path=str(self.root)).load_config()
        self.coursedir = CourseDirectory(config=self.config)
        self.base = Path(self.coursedir.root or self.root)
        self.env: dict[str, str] = {}  # for every nbgrader command (HEADS_SANDBOX=off: --no-sandbox)
        self.db_args: list[str] = []   # for the nbgrader commands that read the gradebook

    def use_gradebook(self, db_url: str) -> None:
        """Grade into the gradebook at `db_url` (`--db-url`), not the configured one."""
        self.coursedir.db_url = self.config.CourseDirectory.db_url = db_url
        self.db_args = [f"--CourseDirectory.db_url={db_url}"]

    def folder(self, name: str) -> Path:
        return (self.base / getattr(self.coursedir, f"{name}_directory")).resolve()

    def lessons(self) -> list[str]:
        release = self.folder("release")
        return sorted(p.name for p in release.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))

    def notebooks(self, lesson: str) -> list[str]:
        return sorted(p.stem for p in (self.folder("release") / lesson).glob("*.ipynb"))

    def students(self, lesson: str) -> list[str]:
        submitted = self.folder("submitted")
        if not submitted.is_dir():
            return []
        return sorted(p.name for p in submitted.iterdir() if (p / lesson).is_dir())

    def nbgrader(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=self.root, text=True,
                              capture_output=True, env={**os.environ, **self.env, **(env or {})})



# --- the sandbox ---------------------------------------------------------------------------------
def unsandboxed_reads(course: Course) -> list[str]:
    """What a student's kernel can read when it runs without the sandbox, for the warning."""
    from heads_outside import RunAnswersOnly

    recordings = RunAnswersOnly(config=course.config).recordings
    return [f"the recordings of every lesson's checks, with every hidden case and expected value: {recordings}",
            f"the solutions and their hidden tests: {course.folder('source')}",
            f"the gradebook, and every classmate's hand-in and grade: {course.coursedir.db_url}, "
            f"{course.folder('submitted')}, {course.folder('autograded')}",
            "the network, and every file the grader's user may read or write"]


def sandbox_in_force(course: Course) -> str | None:
    """None when every kernel will run in the sandbox; else a warning that says why not and what the
    kernel can then read. RuntimeError when the sandbox is required and bubblewrap does not work."""
    from heads_sandbox import SandboxKernelManager, sandbox_mode, sandboxed

    configured = course.config.SandboxKernelManager.get("sandbox", SandboxKernelManager.sandbox.default_value)
    mode = course.env.get("HEADS_SANDBOX") or sandbox_mode(configured)
    if sandboxed(mode):  # the kernel manager's own rule, so this says what grading will do
        return None
    if course.env.get("HEADS_SANDBOX") == "off":
        why = "--no-sandbox"
    elif mode == "off":
        why = "sandbox mode 'off', from HEADS_SANDBOX or SandboxKernelManager.sandbox"
    else:
        why = "sandbox mode 'auto', and bubblewrap does not work here"
    return (f"WARNING: student code runs WITHOUT the sandbox ({why}). Each kernel can read:\n"
            + "\n".join(f"  - {line}" for line in unsandboxed_reads(course)))


def jobs_default() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# --- collect -------------------------------------------------------------------------------------
def collect(course: Course, sources: list[Path], jobs: int, roster: Path | None = None) -> dict:
    """Collect `sources` for every lesson; return {"collected": {...}, "not_collected": {...},
    "misnamed": {...}, "shared": {...}, "unlisted": [...], "not_extracted": [...], "failed": {...}}.
    `roster`: an LMS roster export that decides the ids of the students it lists."""
    from heads_collect import NOT_THIS_LESSON, locate, match, name_conflict, survey
    from heads_flags import SHARED_IDS
    from heads_lms import LMS_NAMES
    from heads_identity import read_roster

    lessons = course.lessons()
    downloaded = course.base / "downloaded"
    for lesson in lessons:
        archive = downloaded / lesson / "archive"
        shutil.rmtree(archive, ignore_errors=True)
        archive.mkdir(parents=True)
        for src in sources:
            src = Path(src)
            if src.is_dir():  # links are copied as links, and the extractor refuses them
                shutil.copytree(src, archive / src.name, symlinks=True)
            else:
                shutil.copy2(src, archive / src.name)

    def run(lesson: str):
        roster_arg = [f"--HeadsCollector.roster={Path(roster).resolve()}"] if roster else []
        proc = course.nbgrader("zip_collect", lesson, "--force", *roster_arg)
        return lesson, proc

    failed = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for lesson, proc in pool.map(run, lessons):
            if proc.returncode != 0:
                failed[lesson] = (proc.stdout + proc.stderr)[-3000:]

    # Every extracted file, by name: what it became, or why it was not collected. The ids are the
    # collector's own: decided once, over every lesson's notebooks (heads_collect.survey).
    extracted = downloaded / lessons[0] / "extracted"
    collected, not_collected, misnamed = {}, {}, {}
    wrappers, ids = survey(str(extracted), [nb for lesson in lessons for nb in course.notebooks(lesson)],
                           read_roster(roster))
    for path in sorted(p for p in extracted.rglob("*") if p.is_file()):
        rel = str(path.relative_to(extracted))
        reasons = []
        for lesson in lessons:
            found = match(rel, course.notebooks(lesson), wrappers, ids)
            if isinstance(found, tuple):
                student, notebook, _ = found
                collected[rel] = (student, lesson, notebook)
                conflict = name_conflict(rel, course.notebooks(lesson), wrappers, ids)
                if conflict:
                    misnamed[rel] = conflict
                break
            reasons.append(found)
        else:  # the reason of a lesson whose notebook it is (a refused name), else why it is none
            named = [r for r in reasons if not r.startswith(NOT_THIS_LESSON)]
            not_collected[rel] = named[0] if named else reasons[0] if len(set(reasons)) == 1 \
                else "not a notebook of any lesson"
    # Older copies of the same notebook: kept in downloaded/, reported, not graded.
    by_target = defaultdict(list)
    for rel, target in collected.items():
        by_target[target].append(rel)
    for target, rels in by_target.items():
        if len(rels) > 1:
            student, lesson, notebook = target
            kept = course.folder("submitted") / student / lesson / f"{notebook}.ipynb"
            kept_bytes = kept.read_bytes() if kept.exists() else None
            for rel in rels:
                if (extracted / rel).read_bytes() != kept_bytes:
                    not_collected[rel] = f"an older copy of {student}'s {notebook}; the newer one is graded"
                    del collected[rel]
    # The LMS's own name of each graded copy, for `feedback --zip`: Canvas matches a page back by its
    # file id (`lijo_LATE_1234_5679`), which the student id (`lijo_1234`) leaves out. Newest copy last.
    lms_names = defaultdict(dict)
    for rel, (student, lesson, _) in sorted(collected.items(), key=lambda c: (extracted / c[0]).stat().st_mtime):
        lms_names[lesson][student] = locate(rel, course.notebooks(lesson), wrappers)[0]
    (downloaded / LMS_NAMES).write_text(json.dumps(lms_names, ensure_ascii=False), encoding="utf-8")
    # Ids two spellings shared, for `export`'s flags column: the instructor settles them where scores are read
    shared = {ids.ids[name]: said for name, said in ids.shared.items()}
    (downloaded / SHARED_IDS).write_text(json.dumps(shared, ensure_ascii=False), encoding="utf-8")
    report = downloaded / lessons[0] / "not_extracted.txt"
    not_extracted = report.read_text().splitlines() if report.exists() else []
    return {"collected": collected, "not_collected": not_collected, "misnamed": misnamed,
            "shared": ids.shared, "unlisted": sorted(ids.unlisted),
            "not_extracted": not_extracted, "failed": failed}


def print_collect(result: dict, report: Path) -> None:
    from heads_identity import shown

    def seen(rel: str) -> str:  # a path as the instructor can read it: invisible characters escaped
        return shown(rel)[1:-1]

    lines = [f"collected {len(result['collected'])} notebooks:"]
    lines += [f"  {seen(rel)}  ->  {s} / {lesson}" for rel, (s, lesson, _) in sorted(result["collected"].items())]
    # (result key, heading, what each entry shows): a section for each kind of thing to look at.
    sections = [
        ("not_collected", "NOT COLLECTED ({} files, kept in downloaded/):", lambda k, v: f"{seen(k)}: {v}"),
        ("shared", "ONE ID FOR TWO NAMES ({} names; each kept apart, none replaced):", lambda k, v: v),
        ("unlisted", "NOT IN THE ROSTER ({} names; their ids come from the names):", lambda k, v: shown(k)),
        ("misnamed", "NAMED FOR ANOTHER STUDENT ({} files; the owner's folder or archive decides):",
         lambda k, v: f"{seen(k)}: {v}"),
        ("not_extracted", "NOT EXTRACTED ({} archive members, left packed):", lambda k, v: seen(k)),
    ]
    for key, heading, entry in sections:
        found = result.get(key) or {}
        items = sorted(found.items()) if isinstance(found, dict) else [(k, None) for k in found]
        if items:
            lines.append(heading.format(len(items)))
            lines += [f"  {entry(k, v)}" for k, v in items]
    for lesson, log in result["failed"].items():
        lines.append(f"zip_collect {lesson} FAILED:\n{log}")
    text = "\n".join(lines)
    print(text)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text + "\n")


# --- autograde -----------------------------------------------------------------------------------
def set_aside_bad(course: Course, lesson: str) -> dict[str, str]:
    """Rename every submitted notebook of `lesson` that is over a size cap (heads_intake.HandInLimits:
    measured before it is parsed) or that nbformat cannot read; {path: reason}."""
    import nbformat
    from heads_intake import HandInLimits, set_aside

    limits = HandInLimits(config=course.config)
    problems = {}
    for student in course.students(lesson):
        for notebook in course.notebooks(lesson):
            path = course.folder("submitted") / student / lesson / f"{notebook}.ipynb"
            where = f"{student}/{lesson}/{notebook}.ipynb"
            if not path.exists():
                continue
            too_large = set_aside(path, limits)
            if too_large:
                problems[where] = too_large
                continue
            try:
                nbformat.read(path, as_version=4)
            except Exception as err:  # malformed JSON, not a notebook, binary junk
                aside = path.with_name(path.name + ".unreadable")
                path.replace(aside)
                problems[where] = (f"unreadable notebook ({type(err).__name__}: {str(err)[:120]}); kept as "
                                   f"{aside.name}, scored 0")
    return problems


def autograde(course: Course, lessons: list[str], jobs: int, scheduler: str | None = None,
              regrade: bool = False, hidden_seed: int | None = None, run_flagged: frozenset = frozenset()) -> dict:
    """Autograde every submission of `lessons` that the ledger has not applied yet (all of them with
    `regrade`): one Dask task per hand-in (grader/heads_task.py) on an in-process cluster of `jobs`
    worker processes, or on the cluster at `scheduler`; each result applied here, once
    (grader/heads_ledger.py). Every hand-in of the run is graded on the same hidden inputs, drawn from
    `hidden_seed` (default: the course's, or a fresh one for this run). The hand-ins `run_flagged` names
    (`student/lesson`) are graded again, with their code flagged for review run (grader/heads_unrun.py)."""
    from heads_ledger import Writer

    if isinstance(scheduler, str):
        check_scheduler(scheduler)   # before anything is read or written
    problems, not_graded = {}, set()
    for lesson in lessons:
        problems.update(set_aside_bad(course, lesson))
    ensure_assignments(course, lessons)
    writer = Writer(course.coursedir.db_url, course.coursedir.course_id, course.folder("autograded"),
                    course.base / "verdicts")
    counts = {"graded": 0, "unchanged": 0, "duplicates": 0}
    try:
        if regrade:
            writer.forget(lessons)
        writer.forget_handins(run_flagged)
        if hidden_seed is None:
            hidden_seed = course.config.RunAnswersOnly.get("hidden_seed", -1)
        if hidden_seed < 0:
            hidden_seed = secrets.randbelow(2**31)
        work = handins(course, lessons, writer.applied(), problems, counts, hidden_seed, run_flagged)
        first = next(work, None)
        if first is not None:
            with dask_client(scheduler, jobs, course.env) as client:
                for result in run_tasks(client, itertools.chain([first], work)):
                    where = f"{result['student']}/{result['lesson']}"
                    for place, text in result.get("problems", []):
                        problems[place] = f"{problems[place]}; {text}" if place in problems else text
                    if result["status"] == "graded":
                        counts["graded" if writer.apply(result) else "duplicates"] += 1
                    elif result["status"] == "refused":   # left out of the gradebook, for a later run
                        not_graded.add((result["student"], result["lesson"]))
                        problems[where] = f"NOT GRADED: {result['error']}"
                    else:
                        problems[where] = f"nbgrader stopped on this notebook: {result['error']}"
    finally:
        writer.close()
    for where, text in record_ungraded(course, lessons, skip=not_graded).items():
        problems[where] = f"{problems[where]}; scored 0" if where in problems else text
    return {"problems": problems, "scores": scores(course, lessons), "flags": flags(course, lessons),
            "counts": counts, "refused": bool(not_graded)}


def handins(course: Course, lessons: list[str], done: set, problems: dict, counts: dict, hidden_seed: int,
            run_flagged: frozenset = frozenset()):
    """The task of every hand-in still to grade, read when its turn comes (a class of any size is never
    all in memory): each submitted folder holding a notebook of its lesson whose (student, lesson,
    hand-in, grader version) the ledger lacks."""
    from heads_task import grader_version, handin_hash, read_handin, template
    from nbgrader.api import Gradebook

    budget = course.config.HeadsExecute.get("notebook_timeout", 180)
    record = course.config.RunAnswersOnly.get("record_timeout", 600)
    for lesson in lessons:
        version = grader_version(course.config, lesson)
        made = None   # the lesson's scratch course, made here once and sent along, not on every worker
        with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
            due = gb.find_assignment(lesson).duedate
        notebooks = course.notebooks(lesson)
        for student in course.students(lesson):
            folder = course.folder("submitted") / student / lesson
            present = [nb for nb in notebooks if (folder / f"{nb}.ipynb").exists()]
            if not present:
                continue   # none handed in, or set aside: record_ungraded scores them 0
            try:
                files = read_handin(folder)
            except (OSError, ValueError) as err:
                problems[f"{student}/{lesson}"] = f"not graded: {err}"
                continue
            graded = all((course.folder("autograded") / student / lesson / f"{nb}.ipynb").exists()
                         for nb in present)
            as_written = f"{student}/{lesson}" in run_flagged
            if graded and (student, lesson, handin_hash(files), version) in done and not as_written:
                counts["unchanged"] += 1
                continue
            made = made or read_handin(template(str(course.root), lesson, version))
            yield {"course": str(course.root), "lesson": lesson, "student": student, "files": files,
                   "version": version, "sandbox": course.env.get("HEADS_SANDBOX"),
                   "duedate": due.isoformat() if due else None,
                   "timeout": len(notebooks) * budget + record + 120, "template": made,
                   "hidden_seed": hidden_seed, "run_flagged": as_written}


def ensure_assignments(course: Course, lessons: list[str]) -> None:
    """Every lesson in the gradebook, whose schema is created here, once, before any task: a gradebook
    that lacks a lesson (a new PostgreSQL one) gets it from nbgrader's generate_assignment, released
    into a temporary folder (the course's own release folder is left alone)."""
    import copy
    import tempfile

    from heads_lessons import generate_assignments
    from nbgrader.api import Gradebook, MissingEntry

    missing = []
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        for lesson in lessons:
            try:
                gb.find_assignment(lesson)
            except MissingEntry:
                missing.append(lesson)
    if missing:
        with tempfile.TemporaryDirectory(prefix="heads-release-") as tmp:
            config = copy.deepcopy(course.config)
            config.CourseDirectory.db_url = course.coursedir.db_url
            config.CourseDirectory.release_directory = tmp
            generate_assignments(missing, config)


@contextlib.contextmanager
def dask_client(scheduler, jobs: int, env: dict[str, str]):
    """A Dask client: of the cluster at `scheduler` (an address, or a Client already connected, such as
    a dask-gateway cluster's), or of an in-process LocalCluster of `jobs` worker processes with one
    thread each (the same code path, no server to start)."""
    import logging

    from distributed import Client, LocalCluster

    if isinstance(scheduler, Client):
        yield scheduler
        return
    if scheduler:
        client = Client(scheduler, timeout=60)
        try:
            client.wait_for_workers(1, timeout=120)
            yield client
        finally:
            client.close()
        return
    worker_env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **env}
    with LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=0, silence_logs=logging.ERROR, env=worker_env) as cluster, \
            Client(cluster) as client:
        yield client


def check_scheduler(address: str) -> None:
    """A plain `tcp://` scheduler is refused off this machine: Dask's default is unauthenticated and
    unencrypted, the tasks carry hand-ins and the workers hold every hidden case."""
    import ipaddress
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme == "tls":
        return
    host = parts.hostname or ""
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if parts.scheme != "tcp" or not local:
        raise SystemExit(f"REFUSED: scheduler {address}: off this machine the connection must use TLS "
                         "(tls://HOST:PORT, with Dask's distributed.comm.tls settings: grader/CLUSTER.md)")


def run_tasks(client, work):
    """Results of `work` (task specs) as they finish, a few tasks per worker thread in flight; a task
    that could not finish (its workers kept dying, a worker lacks the grader, the grader's own error) is a
    "refused" result with the reason: left out of the gradebook for a later run, never scored 0 (a red team's
    honest hand-in got 0, with no flag, when the task raised)."""
    from distributed import as_completed
    from heads_task import on_worker

    window = max(2, 2 * sum(client.nthreads().values()))
    finished, owner = as_completed(), {}

    def submit_next() -> None:
        for spec in work:
            name = hashlib.sha256(f"{spec['lesson']}/{spec['student']}".encode()).hexdigest()[:12]
            future = client.submit(on_worker, spec,
                                   key=f"heads-{name}-{uuid.uuid4().hex[:8]}", pure=False)
            owner[future.key] = (spec["student"], spec["lesson"])
            finished.add(future)
            return

    for _ in range(window):
        submit_next()
    for future in finished:
        student, lesson = owner.pop(future.key)
        try:
            yield future.result()
        except Exception as err:   # KilledWorker, a worker without the course at this path, ...
            yield {"status": "refused", "student": student, "lesson": lesson,
                   "error": f"the grading task did not finish: {type(err).__name__}: {err}"}
        finally:
            future.release()
        submit_next()


def flags(course: Course, lessons: list[str]) -> dict[str, list[str]]:
    """{"student/lesson": [flag, ...]} for every flagged submission (grader/heads_flags.py)."""
    from heads_flags import submission_flags
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(course.coursedir.db_url) as gb:
        for lesson in lessons:
            for student in course.students(lesson):
                found = []
                for notebook in course.notebooks(lesson):
                    try:
                        sub = gb.find_submission_notebook(notebook, lesson, student)
                        cell_scores = {g.name: g.score for g in sub.grades}
                    except MissingEntry:
                        cell_scores = None
                    found += submission_flags(course.coursedir, lesson, notebook, student, cell_scores)
                if found:
                    out[f"{student}/{lesson}"] = found
    return out


def record_ungraded(course: Course, lessons: list[str], skip: set = frozenset()) -> dict[str, str]:
    """A student with a submission folder but no graded notebook (missing or unreadable) gets a
    submission of 0 in the gradebook, so the export lists them; extra notebooks are reported.
    `skip`: (student, lesson) pairs no worker could grade, left out of the gradebook for a later run."""
    from nbgrader.api import Gradebook, MissingEntry

    problems = {}
    with Gradebook(course.coursedir.db_url) as gb:
        for lesson in lessons:
            expected = {f"{nb}.ipynb" for nb in course.notebooks(lesson)}
            for student in course.students(lesson):
                if (student, lesson) in skip:
                    continue
                folder = course.folder("submitted") / student / lesson
                present = {p.name for p in folder.iterdir()}
                for extra in sorted(p for p in present - expected if p.endswith(".ipynb")):
                    problems[f"{student}/{lesson}/{extra}"] = "not a notebook of this lesson, not graded"
                try:
                    gb.find_submission(lesson, student)
                except MissingEntry:
                    gb.update_or_create_student(student)
                    gb.add_submission(lesson, student)
                    problems[f"{student}/{lesson}"] = (
                        "no readable notebook submitted (found: " + (", ".join(sorted(present)) or
                                                                     "nothing") + "); scored 0")
    return problems


def not_exportable(course: Course, lessons: list[str]) -> dict[str, str]:
    """{lesson: why} for each of `lessons` the export leaves out: not in the gradebook (never
    released) or submitted by nobody. A column of zeros for it would lower every student's total."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(course.coursedir.db_url) as gb:
        for lesson in lessons:
            try:
                if not gb.find_assignment(lesson).submissions:
                    out[lesson] = "nobody submitted it (yet): no column of zeros"
            except MissingEntry:
                out[lesson] = "not in the gradebook: never released (python grader/release.py)"
    return out


def scores(course: Course, lessons: list[str]) -> dict[tuple[str, str], tuple[float, float]]:
    """{(student, lesson): (score, max_score)} from the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(course.coursedir.db_url) as gb:
        for lesson in lessons:
            for student in course.students(lesson):
                try:
                    sub = gb.find_submission(lesson, student)
                    out[(student, lesson)] = (sub.score, sub.max_score)
                except MissingEntry:
                    out[(student, lesson)] = (0.0, gb.find_assignment(lesson).max_score)
    return out


# --- command line --------------------------------------------------------------------------------
def main(argv=None) -> int:
    from heads_lessons import python_tools_on_path

    python_tools_on_path()  # every nbgrader command runs `alembic` by name
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=GRADER,
                        help="folder with the nbgrader_config.py to use (default: grader/)")
    parser.add_argument("--jobs", "-j", type=int, default=jobs_default(),
                        help="worker processes of the in-process Dask cluster, one hand-in at a time "
                             "each (default: the cores available; ignored with --scheduler)")
    parser.add_argument("--scheduler", default=os.environ.get("HEADS_SCHEDULER"),
                        help="grade on the Dask cluster at this address (tcp://127.0.0.1:8786 on this "
                             "machine, tls://HOST:PORT off it; grader/CLUSTER.md) instead of an "
                             "in-process one (default: $HEADS_SCHEDULER)")
    parser.add_argument("--db-url", default=os.environ.get("HEADS_DB_URL"),
                        help="the gradebook to use instead of the configured one, e.g. "
                             "postgresql+psycopg://USER@HOST/DB (default: $HEADS_DB_URL); only this "
                             "process opens it, never a worker")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run student code without the sandbox (bubblewrap), which is otherwise "
                             "required: the kernel can then read the recordings (every hidden case "
                             "and expected value), the solutions and the gradebook; autograde says so")
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("collect", help="collect an LMS zip, a folder or files of submissions")
    p.add_argument("sources", nargs="+", type=Path)
    p.add_argument("--roster", type=Path, default=None,
                   help="an LMS roster export (Canvas gradebook CSV, Moodle participants CSV, or a "
                        "name,id CSV) that decides the id of every student it lists")
    p = sub.add_parser("autograde", help="autograde every new or changed hand-in (sandboxed, in parallel)")
    p.add_argument("lessons", nargs="*")
    p.add_argument("--regrade", action="store_true",
                   help="grade every hand-in again, also those the ledger has applied unchanged")
    p.add_argument("--hidden-seed", type=int, default=None, metavar="N",
                   help="the seed the hidden tests draw their inputs from (default: the course's "
                        "RunAnswersOnly.hidden_seed, or a fresh one for this run when that is -1)")
    p.add_argument("--run-flagged", action="append", default=[], metavar="STUDENT/LESSON",
                   help="a hand-in whose flags the instructor has read and found honest: graded again with "
                        "the code flagged for review run, which is otherwise replaced by pass (repeatable)")
    p = sub.add_parser("feedback", help="generate feedback HTML for every graded submission")
    p.add_argument("lessons", nargs="*")
    p.add_argument("--zip", action="store_true",
                   help="also write <course>/lms/<lesson>_feedback.zip, one upload-ready zip a lesson, "
                        "named for the LMS the submissions came from (grader/heads_lms.py)")
    p = sub.add_parser("export", help="write the grades CSV: a row per student, a column per notebook")
    p.add_argument("lessons", nargs="*",
                   help="the lessons to export (default: every lesson somebody submitted)")
    p.add_argument("--to", default="grades.csv")
    p.add_argument("--clear", action="append", default=[], metavar="STUDENT/LESSON[/NOTEBOOK]",
                   help="a flagged notebook the instructor has reviewed: its score counts (repeatable)")
    p = sub.add_parser("report", help="after autograde: each exercise's mistakes, by count and by student "
                                      "(grader/heads_report.py)")
    p.add_argument("lessons", nargs="*")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for class.html and mistakes.csv (default: reports/ in the course)")
    args = parser.parse_args(argv)
    course = Course(args.course)
    if args.db_url:
        course.use_gradebook(args.db_url)
    if args.no_sandbox:
        course.env = {"HEADS_SANDBOX": "off"}

    if args.step == "collect":
        from heads_identity import RosterError, read_roster

        try:
            read_roster(args.roster)  # a roster that cannot be read stops collect before anything
        except RosterError as err:
            print(err, file=sys.stderr)
            return 2
        result = collect(course, args.sources, args.jobs, args.roster)
        print_collect(result, course.base / "downloaded" / "collect_report.txt")
        return 1 if result["failed"] else 0
    if args.step == "export":
        dest = Path(args.to).resolve()
        left_out = not_exportable(course, args.lessons)
        for lesson, why in left_out.items():
            print(f"NOT EXPORTED {lesson}: {why}")
        wanted = [lesson for lesson in args.lessons if lesson not in left_out]
        if args.lessons and not wanted:
            print("nothing to export: no CSV written")
            return 1
        proc = course.nbgrader("export", "--to", str(dest), *(f"--assignment={lesson}" for lesson in wanted),
                               *(f"--WideCsvExport.cleared={c}" for c in args.clear), *course.db_args)
        if proc.returncode:
            print(proc.stdout + proc.stderr)
            return proc.returncode
        print(f"wrote {dest}")
        refused = held = False
        with dest.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                for flag in filter(None, row.get("flags", "").split(" | ")):
                    refused |= "REFUSED" in flag
                    held |= ": HELD " in flag
                    print(f"FLAG {row['student_id']}/{flag}")
        if held:
            print("HELD: flagged notebooks' scores are left out of the CSV until reviewed (see FLAG lines); "
                  "read each in the formgrader, then export again with --clear STUDENT/LESSON for those to count")
        if refused:
            print("REFUSED: scores above their maximum are left out of the CSV (see FLAG lines); "
                  "check them in the formgrader")
        return 1 if refused or left_out else 0
    lessons = args.lessons or [lesson for lesson in course.lessons() if course.students(lesson)]
    if args.step == "autograde":
        try:   # on a cluster the kernels run on the workers, and each worker checks its own sandbox
            warning = sandbox_in_force(course) if not args.scheduler or args.no_sandbox else None
        except RuntimeError as err:
            print(f"REFUSED: {err}", file=sys.stderr)
            return 1
        if warning:
            print(warning)
            print(warning, file=sys.stderr)
        result = autograde(course, lessons, max(1, args.jobs), args.scheduler, args.regrade, args.hidden_seed,
                           frozenset(args.run_flagged))
        counts = result["counts"]
        print(f"graded {counts['graded']} hand-ins; {counts['unchanged']} unchanged since they were "
              f"graded (--regrade grades them again)"
              + (f"; {counts['duplicates']} results delivered twice, applied once" if counts["duplicates"] else ""))
        for (student, lesson), (score, max_score) in sorted(result["scores"].items()):
            print(f"{student:30s} {lesson:28s} {score:g} / {max_score:g}")
        for what, why in sorted(result["problems"].items()):
            print(f"PROBLEM {what}: {why}")
        for what, found in sorted(result["flags"].items()):
            print(f"FLAG {what}: " + "; ".join(found))
        return 1 if result["refused"] else 0
    if args.step == "feedback":
        from heads_task import reported

        status = 0
        for lesson in lessons:
            proc = course.nbgrader("generate_feedback", lesson, "--force", *course.db_args)
            if proc.returncode:
                print(proc.stdout + proc.stderr, file=sys.stderr)
                status = 1
            for where, text in reported(proc.stdout + proc.stderr):
                print(f"PROBLEM {where}: {text}")
        print(f"feedback in {course.folder('feedback')}")
        if args.zip:
            from heads_lms import LMS_NAMES, write_feedback_zip

            names = course.base / "downloaded" / LMS_NAMES
            lms_names = json.loads(names.read_text(encoding="utf-8")) if names.exists() else {}
            for lesson in lessons:
                dest = course.base / "lms" / f"{lesson}_feedback.zip"
                written, missing = write_feedback_zip(course.folder("feedback"), lesson, course.notebooks(lesson),
                                                      course.students(lesson), dest, lms_names.get(lesson, {}))
                print(f"wrote {dest}: {len(written)} feedback pages")
                for student, notebook in missing:
                    print(f"PROBLEM {student}/{lesson}: no feedback page for {notebook}, not in the zip")
        return status
    if args.step == "report":
        from heads_report import write_report

        page, table, exercises = write_report(course.base, course.coursedir.db_url, lessons,
                                              flags(course, lessons), out=args.out)
        print(f"wrote {page}\nwrote {table}")
        if not exercises:
            print(f"nothing graded in {', '.join(lessons) or 'any lesson'}: run autograde first")
        return 0 if exercises else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
