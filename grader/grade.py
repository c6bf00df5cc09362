"""The instructor's grading flow, one command per step, each running nbgrader's own commands.

    python grader/grade.py collect SUBMISSIONS...   # an LMS zip, a folder of downloads, files
                                                    # (--roster FILE: an LMS roster decides ids)
    python grader/grade.py autograde [LESSON...]    # sandboxed, in parallel, one kernel per core
    python grader/grade.py feedback [LESSON...]     # grader/feedback/<student>/<lesson>/*.html
    python grader/grade.py feedback --zip           # and grader/lms/<lesson>_feedback.zip for the LMS
    python grader/grade.py export [LESSON...] [--to grades.csv]  # a row per student, a column per notebook
    python grader/grade.py report [LESSON...]       # reports/class.html, mistakes.csv: the class's mistakes

`collect` runs `nbgrader zip_collect LESSON --force` for every lesson (the course's collector plugin,
grader/heads_collect.py, recognises students' file names) and reports every file it did not collect, by
name, every archive member it would not unpack, every file whose name names another student than its
folder, every refused student name (grader/heads_identity.py), every two names that give one id (both
kept) and, with `--roster`, every name the roster lacks. `autograde` checks that each submitted notebook
is within the size caps (bytes, cells, stored output: grader/heads_intake.py, measured before it is
parsed; one over a cap is set aside as `NAME.ipynb.too-large`) and is readable JSON (else it is set
aside as `NAME.ipynb.unreadable`); either scores 0 as missing, with the reason printed. Then it runs
`nbgrader autograde LESSON` in parallel processes, each on its own share of the students, and prints
every student's score, a `PROBLEM` line for what the grader had to clean up or stop (links removed,
processes stopped, a kernel killed over a limit) and a `FLAG` line for a submission to look at
(grader/heads_flags.py). `feedback` and `export` are `nbgrader generate_feedback` and `nbgrader export`.
`feedback --zip` also writes one upload-ready zip a lesson for the LMS (grader/heads_lms.py). `export`
prints the flags and refuses (exit status 1) a score above its maximum; it exports the lessons named, or
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
import csv
import os
import re
import shutil
import subprocess
import sys
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
    from heads_collect import match, name_conflict, survey
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
                conflict = name_conflict(rel, course.notebooks(lesson), wrappers)
                if conflict:
                    misnamed[rel] = conflict
                break
            reasons.append(found)
        else:
            not_collected[rel] = reasons[0] if reasons and all(r == reasons[0] for r in reasons) \
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
        ("misnamed", "NAMED FOR ANOTHER STUDENT ({} files; the folder decides):", lambda k, v: f"{seen(k)}: {v}"),
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


def autograde(course: Course, lessons: list[str], jobs: int) -> dict:
    """Autograde every submission of `lessons`, `jobs` nbgrader processes at a time."""
    problems, tasks = {}, []
    for lesson in lessons:
        problems.update(set_aside_bad(course, lesson))
        everyone = course.students(lesson)
        # A student with no notebook left (none handed in, or set aside above) is not given to
        # nbgrader, which would stop on the empty folder: record_ungraded scores them 0.
        students = [s for s in everyone if any(
            (course.folder("submitted") / s / lesson / f"{nb}.ipynb").exists() for nb in course.notebooks(lesson))]
        shares = [students[i::jobs] for i in range(jobs)]
        for share in filter(None, shares):
            others = sorted(set(everyone) - set(share))
            tasks.append((lesson, share, others))
    # SQLite waits for the other processes' writes instead of failing with "database is locked".
    db_url = course.coursedir.db_url
    if db_url.startswith("sqlite") and "timeout=" not in db_url:
        db_url += ("&" if "?" in db_url else "?") + "timeout=120"

    def run(task):
        lesson, share, others = task
        args = ["autograde", lesson, "--force", f"--CourseDirectory.db_url={db_url}"]
        if others:
            args.append("--CourseDirectory.student_id_exclude=" + ",".join(others))
        proc = course.nbgrader(*args, env={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        return task, proc

    logs = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(run, tasks))
        # nbgrader stops its whole process on a few errors of one notebook (a database error, a metadata
        # format it does not know): the students of that share it never reached are graded again, one
        # process each, so that one submission cannot cost its classmates their grade.
        again = [(lesson, [student], sorted(set(course.students(lesson)) - {student}))
                 for task, proc in done if len(task[1]) > 1 for student in never_reached(course, task, proc)]
        done += list(pool.map(run, again))
    for (lesson, share, _), proc in done:
        log = proc.stdout + proc.stderr
        logs.append(log)
        for student in sorted(_failed_students(log) & set(share)):
            problems[f"{student}/{lesson}"] = "nbgrader autograde failed for it (log above)"
        for student in never_reached(course, (lesson, share, []), proc) if len(share) == 1 else []:
            problems[f"{student}/{lesson}"] = f"nbgrader stopped on this notebook: {_last_error(log)}"
        for where, text in _reported(log):
            problems[where] = f"{problems[where]}; {text}" if where in problems else text
        if proc.returncode != 0:
            print(log[-4000:], file=sys.stderr)
    for where, text in record_ungraded(course, lessons).items():
        problems[where] = f"{problems[where]}; scored 0" if where in problems else text
    return {"problems": problems, "scores": scores(course, lessons), "flags": flags(course, lessons),
            "log": "\n".join(logs)}


def never_reached(course: Course, task: tuple, proc: subprocess.CompletedProcess) -> list[str]:
    """The students of a failed nbgrader process that it neither graded nor named as failed."""
    lesson, share, _ = task
    if proc.returncode == 0:
        return []
    failed = _failed_students(proc.stdout + proc.stderr)
    return [s for s in share if s not in failed and not (course.folder("autograded") / s / lesson).is_dir()]


def _last_error(log: str) -> str:
    """nbgrader's last error line, for a report that says why."""
    errors = [line for line in log.splitlines() if "ERROR" in line or "Error" in line]
    return (errors[-1].strip()[:300] if errors else "no error message") + " (log above)"


def _reported(log: str) -> list[tuple[str, str]]:
    """The course's `HEADS-PROBLEM student/lesson: text` log lines (grader/heads_files.py)."""
    return re.findall(r"HEADS-PROBLEM (\S+?): (.*)", log)


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


def record_ungraded(course: Course, lessons: list[str]) -> dict[str, str]:
    """A student with a submission folder but no graded notebook (missing or unreadable) gets a
    submission of 0 in the gradebook, so the export lists them; extra notebooks are reported."""
    from nbgrader.api import Gradebook, MissingEntry

    problems = {}
    with Gradebook(course.coursedir.db_url) as gb:
        for lesson in lessons:
            expected = {f"{nb}.ipynb" for nb in course.notebooks(lesson)}
            for student in course.students(lesson):
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


def _failed_students(log: str) -> set[str]:
    """Students nbgrader names in its closing "errors" summary."""
    import re

    return set(re.findall(r"error processing assignment .* for student '([^']+)'", log))


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
    from lessons import python_tools_on_path

    python_tools_on_path()  # every nbgrader command runs `alembic` by name
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=GRADER,
                        help="folder with the nbgrader_config.py to use (default: grader/)")
    parser.add_argument("--jobs", "-j", type=int, default=jobs_default(),
                        help="nbgrader processes at a time (default: the cores available)")
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
    p = sub.add_parser("autograde", help="autograde every submission (sandboxed, in parallel)")
    p.add_argument("lessons", nargs="*")
    p = sub.add_parser("feedback", help="generate feedback HTML for every graded submission")
    p.add_argument("lessons", nargs="*")
    p.add_argument("--zip", action="store_true",
                   help="also write <course>/lms/<lesson>_feedback.zip, one upload-ready zip a lesson, "
                        "named for the LMS the submissions came from (grader/heads_lms.py)")
    p = sub.add_parser("export", help="write the grades CSV: a row per student, a column per notebook")
    p.add_argument("lessons", nargs="*",
                   help="the lessons to export (default: every lesson somebody submitted)")
    p.add_argument("--to", default="grades.csv")
    p = sub.add_parser("report", help="after autograde: each exercise's mistakes, by count and by student "
                                      "(grader/heads_report.py)")
    p.add_argument("lessons", nargs="*")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for class.html and mistakes.csv (default: reports/ in the course)")
    args = parser.parse_args(argv)
    course = Course(args.course)
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
        proc = course.nbgrader("export", "--to", str(dest), *(f"--assignment={lesson}" for lesson in wanted))
        if proc.returncode:
            print(proc.stdout + proc.stderr)
            return proc.returncode
        print(f"wrote {dest}")
        refused = False
        with dest.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                for flag in filter(None, row.get("flags", "").split(" | ")):
                    refused |= "REFUSED" in flag
                    print(f"FLAG {row['student_id']}/{flag}")
        if refused:
            print("REFUSED: scores above their maximum are left out of the CSV (see FLAG lines); "
                  "check them in the formgrader")
        return 1 if refused or left_out else 0
    lessons = args.lessons or [lesson for lesson in course.lessons() if course.students(lesson)]
    if args.step == "autograde":
        try:
            warning = sandbox_in_force(course)
        except RuntimeError as err:
            print(f"REFUSED: {err}", file=sys.stderr)
            return 1
        if warning:
            print(warning)
            print(warning, file=sys.stderr)
        result = autograde(course, lessons, max(1, args.jobs))
        for (student, lesson), (score, max_score) in sorted(result["scores"].items()):
            print(f"{student:30s} {lesson:28s} {score:g} / {max_score:g}")
        for what, why in sorted(result["problems"].items()):
            print(f"PROBLEM {what}: {why}")
        for what, found in sorted(result["flags"].items()):
            print(f"FLAG {what}: " + "; ".join(found))
        return 0
    if args.step == "feedback":
        status = 0
        for lesson in lessons:
            proc = course.nbgrader("generate_feedback", lesson, "--force")
            if proc.returncode:
                print(proc.stdout + proc.stderr, file=sys.stderr)
                status = 1
            for where, text in _reported(proc.stdout + proc.stderr):
                print(f"PROBLEM {where}: {text}")
        print(f"feedback in {course.folder('feedback')}")
        if args.zip:
            from heads_lms import write_feedback_zip

            for lesson in lessons:
                dest = course.base / "lms" / f"{lesson}_feedback.zip"
                written, missing = write_feedback_zip(course.folder("feedback"), lesson,
                                                      course.notebooks(lesson), course.students(lesson), dest)
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
