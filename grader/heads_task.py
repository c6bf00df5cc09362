"""One hand-in graded on a worker: the task that `grade.py autograde` sends to Dask.

    grade_handin(spec) -> result            # plain data in, plain data out

A task grades one student's hand-in of one lesson in a private scratch course of its own: nbgrader's
`autograde` with the course's configuration (the sandbox, the recording, the judge outside the
kernel), on a copy of a small gradebook that holds only that lesson. It returns what the course's
one writer (grader/heads_ledger.py) needs to apply it: the cells' scores and comments, the
autograded folder's files, the verdicts, the `HEADS-PROBLEM` lines and the log. Nothing on the
worker touches the real gradebook, the real course folders or another student: the task carries
the hand-in's files, and workers never see the gradebook's address or credentials.

A worker needs the course (its nbgrader_config.py, grader/ and solutions/, the headlab package) at
the path the coordinator uses, installed there with requirements-grader.txt (which installs headlab and
grader/'s modules, found by name): a shared file system or a checkout at that path. `grader_version` is
computed on both sides, and a worker whose copy differs refuses the task. A worker on which the
sandbox cannot run refuses it too, as nbgrader's kernel manager would refuse to start a kernel.
A worker process grades one hand-in at a time (a task owns its process while it runs), so start one
worker process per core, each with one thread (`--nworkers N --nthreads 1`).
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.util
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from pathlib import Path

GRADER = Path(__file__).resolve().parent
HEADLAB = Path(importlib.util.find_spec("headlab").origin).resolve().parent
# grader/'s own modules and its package (heads_mistakes: what each mistake returns). Not every .py below grader/:
# the course's folders (submitted/, autograded/...) sit there too, and a notebook that writes a .py file (a
# red team's honest %%writefile) changed the version mid-run, so every later hand-in was refused.
GRADER_CODE = ("*.py", "heads_mistakes/**/*.py")

_templates: dict[tuple, Path] = {}   # (course, lesson, version) -> a scratch course with the lesson released
_lock = threading.Lock()
# One hand-in at a time in a worker process, whatever its thread count: a task redirects the process's
# output, its deadline stops the processes the worker started, and the sandbox gives a kernel the uid of
# its grading process (heads_sandbox.SandboxKernelManager._kernel_uid).
_one_at_a_time = threading.Lock()


def load_config(course_root: str | Path):
    """The configuration nbgrader reads for the course in `course_root` (its nbgrader_config.py)."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(course_root)).load_config()


def source_folder(config, lesson: str) -> Path:
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    return Path(coursedir.format_path(coursedir.source_directory, ".", lesson)).resolve()


def grader_version(config, lesson: str) -> str:
    """A hash of everything that decides a grade of `lesson`: the course configuration, the grader's
    code, the headlab package (checks, judge) and the lesson's source folder. The ledger keys every
    applied result by it, so changing any of these grades the class again."""
    from nbgrader.coursedir import CourseDirectory

    key = hashlib.sha256()
    root = Path(CourseDirectory(config=config).root or ".")
    files = [root / "nbgrader_config.py", *sorted(p for pattern in GRADER_CODE for p in GRADER.glob(pattern)),
             *sorted(HEADLAB.rglob("*.py"))]
    source = source_folder(config, lesson)
    files += sorted(p for p in source.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts)
    for path in files:
        if path.is_file():
            key.update(path.name.encode() + b"\0" + path.read_bytes())
    return key.hexdigest()[:32]


def read_handin(folder: Path, max_bytes: int = 64 * 1024**2) -> dict[str, bytes]:
    """The regular files and folders below `folder`, {relative path: bytes} (a folder as "path/": b"");
    links and special files are left out (collect never makes them), and ValueError beyond
    `max_bytes` in all."""
    files, total = {}, 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        files.update({os.path.relpath(os.path.join(dirpath, d), folder) + "/": b"" for d in dirnames})
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            data = Path(path).read_bytes()
            total += len(data)
            if total > max_bytes:
                raise ValueError(f"the hand-in's folder holds more than {max_bytes // 2**20} MiB")
            files[os.path.relpath(path, folder)] = data
    return files


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """`files` (as read_handin gives them) written below `folder`; a name that would leave it is skipped."""
    folder.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        target = (folder / rel).resolve()
        if folder.resolve() not in target.parents:   # a name with ../ in it
            continue
        if rel.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


def handin_hash(files: dict[str, bytes]) -> str:
    key = hashlib.sha256()
    for rel in sorted(files):
        key.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return key.hexdigest()


def scratch_config(base, root: Path, db: Path, release: Path, source: Path):
    """`base` pointed at a scratch course in `root`: its own gradebook and folders, the lesson's source
    from the real course, the release from the worker's template."""
    config = copy.deepcopy(base)
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{db}"
    config.CourseDirectory.source_directory = str(source.parent)
    config.CourseDirectory.release_directory = str(release)
    for folder in ("submitted", "autograded", "feedback"):
        setattr(config.CourseDirectory, f"{folder}_directory", folder)
    config.CourseDirectory.student_id_exclude = ""
    return config


def template(course_root: str, lesson: str, version: str, files: dict[str, bytes] | None = None) -> Path:
    """A scratch course holding `lesson` released into its own gradebook, made once per process by
    nbgrader's generate_assignment, or from `files` (read_handin of one made by the coordinator, sent
    with the task: a worker then need not make it); every task grades on a copy of its gradebook."""
    key = (course_root, lesson, version)
    with _lock:
        if key not in _templates:
            folder = Path(tempfile.mkdtemp(prefix=f"heads-template-{lesson}-"))
            if files:
                write_files(folder, files)
            else:
                from heads_lessons import generate_assignments, python_tools_on_path

                python_tools_on_path()   # nbgrader runs `alembic` by name
                base = load_config(course_root)
                config = scratch_config(base, folder, folder / "gradebook.db", folder / "release",
                                        source_folder(base, lesson))
                generate_assignments([lesson], config)
            _templates[key] = folder
        return _templates[key]


# The task as sent to Dask. Its scheduler and workers unpickle it and need not have grader/ on their
# path: the function is made outside any module (its __module__ is "__main__"), so Dask's pickling
# sends it by value (cloudpickle). On the worker it loads the course's configuration, which puts the
# course's plugins (grader/) on the path, as it does for nbgrader's own commands.
_ON_WORKER = """
def on_worker(spec):
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=spec["course"]).load_config()
    from heads_task import grade_handin
    return grade_handin(spec, config)
"""
_namespace = {"__name__": "__main__"}
exec(_ON_WORKER, _namespace)
on_worker = _namespace["on_worker"]


class Refused(Exception):
    """This worker cannot grade the task (another grader version, no sandbox)."""


def grade_handin(spec: dict, config=None) -> dict:
    """Grade one hand-in (see the module's docstring). `spec`: course (its root path), lesson, student,
    files ({relative path: bytes} of the submitted folder), version (the coordinator's
    grader_version), sandbox (None, or "off" for --no-sandbox), duedate (ISO text or None), timeout
    (seconds for the whole task), template (optional: the lesson's scratch course, see `template`), run_flagged
    (optional: grade with the code flagged for review run, heads_unrun).
    `config`: the course configuration, when the caller has loaded it already. The result always has `status`: "graded", "failed" or "refused"."""
    where = f"{spec['student']}/{spec['lesson']}"
    result = {key: spec[key] for key in ("lesson", "student", "version")}
    result.update(handin=handin_hash(spec["files"]), worker=socket.gethostname(), pid=os.getpid())
    try:
        base = config or load_config(spec["course"])
        mine = grader_version(base, spec["lesson"])
        if mine != spec["version"]:
            raise Refused(f"this worker's copy of the course differs from the coordinator's (grader "
                          f"version {mine} here, {spec['version']} there): update it")
        _require_sandbox(base, spec.get("sandbox"))
        with _one_at_a_time:
            started = time.monotonic()
            result.update(_grade(spec, base))
            result["seconds"] = round(time.monotonic() - started, 2)
    except Refused as err:
        result.update(status="refused", error=f"worker {result['worker']} refused {where}: {err}")
    return result


def _require_sandbox(config, requested: str | None) -> None:
    from heads_sandbox import SandboxKernelManager, sandbox_mode, sandboxed

    configured = config.SandboxKernelManager.get("sandbox", SandboxKernelManager.sandbox.default_value)
    try:
        sandboxed(sandbox_mode(requested or configured))
    except RuntimeError as err:
        raise Refused(str(err)) from None


def _grade(spec: dict, base) -> dict:
    from nbgrader.api import Gradebook
    from nbgrader.utils import parse_utc

    from heads_lessons import nbgrader_api

    lesson, student = spec["lesson"], spec["student"]
    folder = template(spec["course"], lesson, spec["version"], spec.get("template"))
    scratch = Path(tempfile.mkdtemp(prefix="heads-task-"))
    try:
        shutil.copy(folder / "gradebook.db", scratch / "gradebook.db")
        config = scratch_config(base, scratch, scratch / "gradebook.db", folder / "release",
                                source_folder(base, lesson))
        if spec.get("hidden_seed") is not None:   # the run's, the same for every hand-in of it
            config.RunAnswersOnly.hidden_seed = spec["hidden_seed"]
        if spec.get("sandbox") == "off":
            config.SandboxKernelManager.sandbox = "off"
        if spec.get("run_flagged"):   # the instructor read its flags: graded with all its code
            config.SkipFlaggedCode.run_as_written = [f"{student}/{lesson}"]
        handin = scratch / "submitted" / student / lesson
        write_files(handin, spec["files"])
        with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
            gb.find_assignment(lesson).duedate = parse_utc(spec["duedate"]) if spec.get("duedate") else None
            gb.db.commit()
        os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        with _deadline(spec.get("timeout") or 0), _output_to(scratch / "output.txt"):
            run = nbgrader_api(config).autograde(lesson, student, force=True, create=True)
        return _collect(scratch, config, lesson, student, run)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def _output_to(path: Path):
    """The worker process's standard output and error (the kernel inherits them) into `path` while a
    task runs, as nbgrader's own command would have captured them."""
    import sys

    sys.stdout.flush(), sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(path, "wb") as sink:
        os.dup2(sink.fileno(), 1), os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush(), sys.stderr.flush()
            os.dup2(saved[0], 1), os.dup2(saved[1], 2)
            os.close(saved[0]), os.close(saved[1])


class _deadline:
    """Past `seconds`, stop every process this worker started (the kernel): nbgrader then scores the
    cells that did not run 0 and returns. Dask has no per-task timeout (distributed#391)."""

    def __init__(self, seconds: float):
        self.timer = threading.Timer(seconds, self._stop) if seconds > 0 else None

    def _stop(self) -> None:
        import signal

        from heads_sandbox import descendants, process_tree

        for pid in descendants(process_tree(), os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def __enter__(self):
        if self.timer:
            self.timer.daemon = True
            self.timer.start()

    def __exit__(self, *exc):
        if self.timer:
            self.timer.cancel()


def _collect(scratch: Path, config, lesson: str, student: str, run: dict) -> dict:
    """What the writer applies, read from the scratch course after nbgrader's autograde."""
    from nbgrader.api import Gradebook, MissingEntry

    log = (run.get("log") or "") + (run.get("error") or "")
    out = {"status": "graded" if run.get("success") else "failed", "log": log[-20000:],
           "problems": reported(log), "notebooks": {}, "files": {}, "verdicts": {}}
    if not run.get("success"):
        out["error"] = _last_error(log)
    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
        try:
            sub = gb.find_submission(lesson, student)
        except MissingEntry:
            out.update(status="failed", error=out.get("error") or "nbgrader recorded no submission")
            return out
        out["timestamp"] = sub.timestamp.isoformat() if sub.timestamp else None
        for nb in sub.notebooks:
            out["notebooks"][nb.name] = {
                "grades": {g.name: g.auto_score for g in nb.grades},
                "comments": {c.name: c.auto_comment for c in nb.comments},
                "late_penalty": nb.late_submission_penalty}
    graded = scratch / "autograded" / student / lesson
    if graded.is_dir():
        out["files"] = read_handin(graded, _graded_folder_bytes(config))
    verdicts = scratch / "verdicts" / lesson / student
    if verdicts.is_dir():
        out["verdicts"] = {p.name: p.read_text() for p in verdicts.glob("*.json")}
    return out


def _graded_folder_bytes(config) -> int:
    """The most a graded folder can hold: what ScrubWorkdir keeps of the kernel's files, and the graded notebook
    beside them (a hand-in within its caps, with the outputs the executor keeps). At the bare folder cap, a
    kernel that filled its folder to it had its graded notebook refused now and then (test_hostile's disk-frames)."""
    from heads_files import ScrubWorkdir

    kept = config.ScrubWorkdir.get("max_folder_bytes", ScrubWorkdir.max_folder_bytes.default_value)
    return 2**62 if kept < 0 else kept + 64 * 1024**2


def reported(log: str) -> list[tuple[str, str]]:
    """The course's `HEADS-PROBLEM student/lesson: text` log lines (grader/heads_files.py)."""
    import re

    return re.findall(r"HEADS-PROBLEM (\S+?): (.*)", log)


def _last_error(log: str) -> str:
    """nbgrader's last error line, for a report that says why."""
    errors = [line for line in log.splitlines() if "ERROR" in line or "Error" in line]
    return (errors[-1].strip()[:300] if errors else "no error message")
