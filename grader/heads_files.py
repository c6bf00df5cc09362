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
- `copy_release_records` replaces `GenerateFeedback.init_assignment`: feedback gets the notebook's
  HTML and, of the student's files, only the two short records `nbgrader release_feedback` needs
  (`timestamp.txt`, `submission_secret.txt`), read safely from `submitted/` (`read_record`).
"""
from __future__ import annotations

import os
import secrets
import shutil
import stat

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
         stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


def problem(log, student: str, lesson: str, text: str) -> None:
    """Log a line `grade.py` picks up and prints as `PROBLEM student/lesson: text`."""
    log.warning("HEADS-PROBLEM %s/%s: %s", student, lesson, text)


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

    max_folder_bytes = Integer(
        64 * 1024**2,
        help="Bytes of files a student's autograded folder may keep after grading (-1: no cap); "
             "the largest files go first.",
    ).tag(config=True)

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


# What `nbgrader release_feedback` reads from feedback/<student>/<lesson>/ besides the HTML: the
# hand-in's time (only logged) and the secret `nbgrader submit` wrote, from which it names the
# released file, and the student's `fetch_feedback` (holding the same secret) finds it.
RELEASE_RECORDS = ("timestamp.txt", "submission_secret.txt")
RECORD_MAX_BYTES = 4096  # nbgrader writes a timestamp and 128 hex digits


class RecordRefused(Exception):
    """A release record that is there but is not a short plain text file (the reason)."""


def read_record(base: str, parts: tuple[str, ...], max_bytes: int = RECORD_MAX_BYTES) -> str | None:
    """The text of the file `base/parts[0]/.../parts[-1]`, or None if it does not exist.

    `base` is the instructor's folder (followed as configured); every part below it may be the
    student's, so none is followed if it is a link: each is opened with O_NOFOLLOW from its parent's
    descriptor. Refused (RecordRefused) unless it is a regular file with one name, at most
    `max_bytes`, one line of printable ASCII.
    """
    if any(p in ("", ".", "..") or os.sep in p for p in parts):
        raise RecordRefused(f"{'/'.join(parts)}: not a plain path")
    fds = [os.open(base, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for part in parts[:-1]:
            try:
                fds.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
            except FileNotFoundError:
                return None
            except OSError:  # a link (ELOOP) or not a folder (ENOTDIR)
                raise RecordRefused(f"{part}: a link or not a folder") from None
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY,
                         dir_fd=fds[-1])
        except FileNotFoundError:
            return None
        except OSError:
            raise RecordRefused("a link, not a plain file") from None
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RecordRefused(KINDS.get(stat.S_IFMT(st.st_mode), "not a plain file"))
        if st.st_nlink > 1:
            raise RecordRefused(f"a hard link ({st.st_nlink} names for one file)")
        data = os.read(fd, max_bytes + 1)
        if len(data) > max_bytes:
            raise RecordRefused(f"larger than {max_bytes} bytes")
        # Copied exactly (the secret names the released file), so refused rather than cleaned up.
        text = data.decode("ascii", errors="replace")
        if not (text.isascii() and text.isprintable()):
            raise RecordRefused("not one line of plain text")
        return text
    finally:
        for fd in reversed(fds):
            os.close(fd)


def _write_new(path: str, text: str) -> None:
    """Write `path` afresh: whatever was there (a link included) is replaced, never followed."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(text)


def copy_release_records(self, assignment_id: str, student_id: str) -> None:
    """`GenerateFeedback.init_assignment` that copies no file of the student's but the two release
    records (RELEASE_RECORDS), so that `nbgrader release_feedback` can deliver the feedback.

    They are read from `submitted/`, what `collect` received: the autograded folder was the
    student's kernel's working folder, where their code could have rewritten them. A record that is
    missing (a hand-in collected from an LMS has no secret) or refused is replaced: an empty
    timestamp, a fresh random secret, under which the feedback is released to no one; otherwise
    `release_feedback` would stop at this student, before their classmates'. A refused record is
    reported as a `HEADS-PROBLEM` line.
    """
    dest = self._format_dest(assignment_id, student_id)
    os.makedirs(dest, exist_ok=True)
    submitted = os.path.normpath(os.path.join(self.coursedir.root, self.coursedir.submitted_directory))
    for name in RELEASE_RECORDS:
        try:
            text = read_record(submitted, (student_id, assignment_id, name))
        except RecordRefused as why:
            problem(self.log, student_id, assignment_id,
                    f"{name} ({why}) not copied: this feedback cannot be fetched through the exchange")
            text = None
        if text is None:
            text = secrets.token_hex(64) if name == "submission_secret.txt" else ""
        _write_new(os.path.join(dest, name), text)
    self.log.info("Feedback for %s/%s: the notebooks' HTML and the release records", student_id,
                  assignment_id)
