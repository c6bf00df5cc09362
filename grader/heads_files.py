"""What a student's kernel leaves on disk is never followed (loaded by nbgrader_config.py).

The kernel runs with `autograded/<student>/<lesson>/` as its writable working folder. nbgrader 0.9.6
then writes the graded notebook into that folder, chmods every file in it and, for feedback, copies
every other file of it into `feedback/`, all as the grader's user and all following symbolic links.
A link planted there would let the student overwrite the gradebook or a classmate's submission, or
get the solutions copied into their feedback. So:

- `ScrubWorkdir`, an autograde preprocessor that runs right after the kernel has stopped (before
  nbgrader writes anything), removes every symlink, hard-linked file, FIFO, socket and device in
  the folder, removes the notebook file the kernel could have tampered with (nbgrader writes it
  afresh from memory), and caps what stays in the folder. Each removal is logged as a
  `HEADS-PROBLEM` line, which `grade.py autograde` prints for the instructor.
- `set_permissions_nofollow` replaces nbgrader's `set_permissions`: it changes only regular files,
  through a descriptor opened with O_NOFOLLOW.
- `copy_release_records` (grader/heads_exchange.py) replaces `GenerateFeedback.init_assignment`:
  feedback gets the notebook's HTML and, of the student's files, only the two short records
  `nbgrader release_feedback` needs, read from `submitted/` without following links.

`setting` declares a configurable trait of any grader plugin (`c.<Class>.<name>` in nbgrader_config.py), and
`limit` one that caps a size or a count.
"""
from __future__ import annotations

import importlib
import os
import shutil
import stat

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Float, Integer, Unicode

KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
         stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


def problem(log, student: str, lesson: str, text: str) -> None:
    """Log a line `grade.py` picks up and prints as `PROBLEM student/lesson: text`."""
    log.warning("HEADS-PROBLEM %s/%s: %s", student, lesson, text)


def headlab(module: str):
    """headlab.<module>, imported when a step uses it: headlab imports torch (2-3 s), which nbgrader's other
    commands (generate_assignment, generate_feedback, export) load the grader's modules without needing."""
    return importlib.import_module(f"headlab.{module}")


def setting(default, help: str | None = None):
    """A setting of a grader plugin, set as `c.<Class>.<name>` in nbgrader_config.py and listed with `help`
    by --help-all: a traitlets Bool, Integer, Float or Unicode trait, after the type of `default`."""
    kind = {bool: Bool, int: Integer, float: Float, str: Unicode}[type(default)]
    return kind(default, help=help).tag(config=True)


def limit(default: int, help: str, off: int):
    """A `setting` that caps a size or a count, its help ending in one form for every cap with the value `off` that
    lifts it: -1 for the caps on what a hand-in and its outputs hold, 0 for the sandbox's limits, as prlimit takes
    them."""
    return setting(default, f"{help} ({off}: no limit).")


def _walk(folder: str):
    """(path, lstat) of everything below `folder`, deepest first; never through a link."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder, topdown=True, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            try:
                out.append((path, os.lstat(path)))
            except FileNotFoundError:
                pass
    return out[::-1]


def _remove(path: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)  # rmtree never follows links
    else:
        os.unlink(path)


def scrub(folder: str, remove: tuple[str, ...] = (), max_bytes: int = -1) -> list[str]:
    """Make `folder` safe for nbgrader to write into and copy from; return what was removed, why.

    Removed: links, hard-linked regular files (st_nlink > 1: the other name may be outside), FIFOs,
    sockets and devices; the names in `remove` whatever they are; then, while the regular files
    left add up to more than `max_bytes` (-1: no cap), the largest of them.
    """
    removed = []
    for name in remove:
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        _remove(path, st)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            removed.append(f"{name} ({KINDS.get(stat.S_IFMT(st.st_mode), 'not a plain file')}), "
                           "replaced by the graded notebook")
    sizes = {}
    for path, st in _walk(folder):
        rel = os.path.relpath(path, folder)
        kind = KINDS.get(stat.S_IFMT(st.st_mode))
        if kind is None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            kind = f"a hard link ({st.st_nlink} names for one file)"
        if kind is not None:
            _remove(path, st)
            removed.append(f"{rel} ({kind}) removed")
        elif stat.S_ISREG(st.st_mode):
            sizes[path] = st.st_size
    total = sum(sizes.values())
    if max_bytes >= 0 and total > max_bytes:
        for path, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
            if total <= max_bytes:
                break
            os.unlink(path)
            total -= size
            removed.append(f"{os.path.relpath(path, folder)} ({size / 1e6:.1f} MB) removed: the "
                           f"folder may keep {max_bytes / 1e6:g} MB")
    return removed


class ScrubWorkdir(NbGraderPreprocessor):
    """Autograde preprocessor: clean the student's working folder once their kernel has stopped.

    It must come right after the step that runs student code (`HeadsExecute`), before anything
    writes to or copies from the folder.
    """

    max_folder_bytes = limit(64 * 1024**2, "Bytes of files a student's autograded folder may keep after grading; "
                                           "the largest files go first", off=-1)

    def preprocess(self, nb, resources):
        folder = resources.get("metadata", {}).get("path")
        if folder and os.path.isdir(folder):
            info = resources.get("nbgrader", {})
            notebook = resources.get("unique_key", "") + ".ipynb"
            for line in scrub(folder, remove=(notebook,), max_bytes=self.max_folder_bytes):
                problem(self.log, info.get("student", "?"), info.get("assignment", "?"), line)
        return nb, resources


def set_permissions_nofollow(self, assignment_id: str, student_id: str) -> None:
    """nbgrader's `BaseConverter.set_permissions`, without following links: only regular files
    are changed, through a descriptor opened with O_NOFOLLOW (a link fails to open)."""
    dest = os.path.normpath(self._format_dest(assignment_id, student_id))
    mode = int(str(self.permissions), 8)
    self.log.info("Setting destination file permissions to %s (no links followed)", self.permissions)
    for dirname, _, filenames in os.walk(dest, followlinks=False):
        for filename in filenames:
            path = os.path.join(dirname, filename)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
            except OSError:
                self.log.warning("Not changing permissions of %s: not a plain file", path)
                continue
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.fchmod(fd, mode)
                else:
                    self.log.warning("Not changing permissions of %s: not a plain file", path)
            finally:
                os.close(fd)
        if self.coursedir.groupshared and not os.path.islink(dirname):
            st_mode = os.lstat(dirname).st_mode
            if st_mode & 0o2770 != 0o2770:
                try:
                    os.chmod(dirname, (st_mode | 0o2770) & 0o2777)
                except PermissionError:
                    self.log.warning("Could not make %s groupshared", dirname)
