"""The hub round trip through nbgrader's exchange (grader/JUPYTERHUB.md): collect and release feedback.

`nbgrader collect` copies each hand-in folder `<exchange>/<course>/inbound/<student>+<lesson>+<time>`
into `submitted/<student>/<lesson>/` as the instructor. The student owns that folder, and nbgrader's
copy (shutil.copytree) follows links, so a link planted there, or the folder itself being one, would
bring any file the instructor can read (the gradebook, a classmate's hand-in, the solutions) into the
submission, where autograde gives it to the student's code as its working folder. `Collect`, the
course's exchange class for `collect`, copies through `copy_hand_in` instead: plain files and folders
only, no link followed at any level, a hard-linked file, FIFO, socket or device left out and named
in a `HEADS-PROBLEM` line; a hand-in too large, too deep or with too many entries is refused whole
(named too), and the student's earlier collected copy, if any, stays.

The last step, feedback:

`nbgrader release_feedback` finds, beside each feedback page in `feedback/<student>/<lesson>/`, the
hand-in's `timestamp.txt` (only logged) and `submission_secret.txt`, the secret `nbgrader submit`
left in the hand-in and in the student's own cache: the page is released under a name made from it,
which the student's `fetch_feedback` computes from the same secret. nbgrader's `generate_feedback`
copies every file of the autograded folder into feedback; the course copies none of them
(grader/heads_files.py), so:

- `copy_release_records`, the course's `GenerateFeedback.init_assignment`, copies just those two
  records, from `submitted/` (what `collect` received; the autograded folder was the working folder
  of the student's kernel, where their code could rewrite them), through `read_record`: no link
  followed at any level, a regular file of one name, at most 4096 bytes, one line of printable ASCII.
  A record that is refused is reported as a `HEADS-PROBLEM` line; one that is missing (a hand-in
  collected from an LMS has none) is not written.
- `ReleaseFeedback`, the course's exchange class for `release_feedback`, releases the students whose
  feedback has both records and names the others, where nbgrader's own stops at the first one missing
  (FileNotFoundError) and releases no classmate after them.
"""
from __future__ import annotations

import errno
import glob
import os
import shutil
import stat
import tempfile

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
from nbgrader.utils import ignore_patterns

from heads_files import KINDS, problem, setting

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
    try:
        fds = [os.open(base, os.O_RDONLY | os.O_DIRECTORY)]
    except FileNotFoundError:
        return None
    try:
        for part in parts[:-1]:
            try:
                fds.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
            except FileNotFoundError:
                return None
            except OSError:  # a link (ELOOP) or not a folder (ENOTDIR)
                raise RecordRefused(f"{part}: a link or not a folder") from None
        try:
            fds.append(os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY,
                               dir_fd=fds[-1]))
        except FileNotFoundError:
            return None
        except OSError:
            raise RecordRefused("a link, not a plain file") from None
        st = os.fstat(fds[-1])
        if not stat.S_ISREG(st.st_mode):
            raise RecordRefused(KINDS.get(stat.S_IFMT(st.st_mode), "not a plain file"))
        if st.st_nlink > 1:
            raise RecordRefused(f"a hard link ({st.st_nlink} names for one file)")
        data = os.read(fds[-1], max_bytes + 1)
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
    """`GenerateFeedback.init_assignment` that copies, of the student's files, only the release
    records (RELEASE_RECORDS), each when `read_record` accepts it; the HTML is nbgrader's."""
    dest = self._format_dest(assignment_id, student_id)
    os.makedirs(dest, exist_ok=True)
    submitted = os.path.join(self.coursedir.root, self.coursedir.submitted_directory)
    for name in RELEASE_RECORDS:
        path = os.path.join(dest, name)
        if os.path.lexists(path):
            os.unlink(path)  # a record of an earlier hand-in must not outlive a refused one
        try:
            text = read_record(submitted, (student_id, assignment_id, name))
        except RecordRefused as why:
            problem(self.log, student_id, assignment_id,
                    f"{name} ({why}) not copied: this feedback cannot be released through the exchange")
            continue
        if text is not None:
            _write_new(path, text)
    self.log.info("Feedback for %s/%s: the notebooks' HTML and the release records", student_id,
                  assignment_id)


class ReleaseFeedback(ExchangeReleaseFeedback):
    """nbgrader's `release_feedback`, one student at a time: a feedback folder without both release
    records is named in an error line and skipped, and the other students' feedback is released."""

    def copy_files(self):
        every = self.src_path  # feedback/<student or *>/<lesson>
        try:
            for folder in sorted(glob.glob(every)):
                missing = [n for n in RELEASE_RECORDS if not os.path.isfile(os.path.join(folder, n))]
                if missing:
                    self.log.error("Not released: %s has no %s (handed in outside the exchange, or "
                                   "refused by grade.py feedback); send this feedback another way",
                                   folder, " or ".join(missing))
                    continue
                self.src_path = folder
                super().copy_files()
        finally:
            self.src_path = every


class HandInRefused(Exception):
    """A hand-in that is not collected at all (the reason)."""


_NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY  # a FIFO must not block the open


def copy_hand_in(src: str, dest: str, max_bytes: int, max_entries: int = 10000, max_depth: int = 20,
                 ignore=None) -> list[str]:
    """Copy the folder `src` to the new folder `dest`, following no link; return what was left out, why.

    The folders above `src` are the instructor's; `src` and everything in it may be the student's, so
    each is opened with O_NOFOLLOW from its parent's descriptor and judged by what was opened (a
    link swapped in after the listing is not followed either). Copied: folders and regular files with
    one name, contents, permission bits (at least owner read/write) and modification times. Left out:
    links, hard-linked files (the other name may be a file the student cannot read), FIFOs, sockets,
    devices, and what `ignore(folder, names)` (nbgrader's `ignore_patterns`) ignores. HandInRefused,
    with nothing left at `dest`, when `src` is a link or not a folder, or the hand-in has more than
    `max_bytes` of files, more than `max_entries` files and folders or folders more than `max_depth`
    deep, or when copying fails (OSError: a file removed while it is read, a full disk).
    """
    try:
        top = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as err:
        if err.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise HandInRefused(f"its folder cannot be read ({err.strerror})") from None
        kind = KINDS.get(stat.S_IFMT(os.lstat(src).st_mode), "not a folder")
        raise HandInRefused(f"its folder is {kind}") from None
    skipped: list[str] = []
    budget = {"bytes": max_bytes, "max_bytes": max_bytes, "entries": max_entries,
              "max_entries": max_entries}
    try:
        os.mkdir(dest, 0o700)
        _copy_folder(top, src, dest, "", 0, budget, max_depth, ignore, skipped)
        _copy_meta(os.fstat(top), dest, 0o700)
    except HandInRefused:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    except OSError as err:  # e.g. a file removed while it was copied: this hand-in only, not the collect
        shutil.rmtree(dest, ignore_errors=True)
        raise HandInRefused(f"could not be copied ({err.strerror}: {err.filename})") from None
    finally:
        os.close(top)
    return skipped


def _copy_folder(fd, src, dest, rel, depth, budget, max_depth, ignore, skipped) -> None:
    """Copy the entries of the open folder `fd` (at `src`, `rel` below the hand-in) into `dest`."""
    if depth > max_depth:
        raise HandInRefused(f"folders more than {max_depth} deep")
    names = sorted(os.listdir(fd))
    budget["entries"] -= len(names)
    if budget["entries"] < 0:
        raise HandInRefused(f"more than {budget['max_entries']} files and folders")
    kinds = {name: os.stat(name, dir_fd=fd, follow_symlinks=False) for name in names}
    plain = {n for n in names if stat.S_ISDIR(kinds[n].st_mode) or stat.S_ISREG(kinds[n].st_mode)}
    ignored = set(ignore(src, sorted(plain))) if ignore else set()
    for name in names:
        path = os.path.join(rel, name)
        if name in ignored:
            continue
        if name not in plain:  # not even opened: a FIFO or device could block or act on open
            skipped.append(f"{path} ({KINDS.get(stat.S_IFMT(kinds[name].st_mode), 'not a plain file')})")
            continue
        try:
            child = os.open(name, _NOFOLLOW, dir_fd=fd)
        except OSError as err:  # swapped for a link since it was listed (ELOOP), gone or unreadable
            skipped.append(f"{path} ({'a symbolic link' if err.errno == errno.ELOOP else err.strerror})")
            continue
        try:
            st = os.fstat(child)
            kind = KINDS.get(stat.S_IFMT(st.st_mode))
            if kind is None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                kind = f"a hard link ({st.st_nlink} names for one file)"
            if kind is not None:
                skipped.append(f"{path} ({kind})")
            elif stat.S_ISDIR(st.st_mode):
                os.mkdir(os.path.join(dest, name), 0o700)
                _copy_folder(child, os.path.join(src, name), os.path.join(dest, name), path, depth + 1,
                             budget, max_depth, ignore, skipped)
                _copy_meta(st, os.path.join(dest, name), 0o700)
            else:
                _copy_file(child, st, os.path.join(dest, name), budget)
        finally:
            os.close(child)


def _copy_file(fd, st, dest, budget) -> None:
    """Copy the open regular file `fd` to the new file `dest`, counting its bytes against the budget
    as they are read (the student may still be writing to it)."""
    with os.fdopen(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb") as out:
        while chunk := os.read(fd, 1024**2):
            budget["bytes"] -= len(chunk)
            if budget["bytes"] < 0:
                raise HandInRefused(f"more than {_mib(budget['max_bytes'])} of files")
            out.write(chunk)
    _copy_meta(st, dest, 0o600)


def _copy_meta(st, dest, at_least) -> None:
    """The permission bits and times of `st`: at least `at_least` for the instructor, never writable
    by others (nbgrader submit makes hand-in folders 0777) nor set-id."""
    os.chmod(dest, (st.st_mode & 0o755) | at_least)
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))


def _mib(n: int) -> str:
    return f"{n / 1024**2:g} MiB" if n >= 1024**2 else f"{n} bytes"


class Collect(ExchangeCollect):
    """nbgrader's `collect`, each hand-in copied by `copy_hand_in`: nothing is followed, what is left
    out is named, and a refused hand-in is not collected (the other students' are)."""

    max_bytes = setting(64 * 1024**2, "Bytes of files a hand-in may hold; a larger one is not collected. "
                                      "nbgrader's CourseDirectory.max_dir_size applies too, if smaller.")
    max_entries = setting(10000, "Files and folders a hand-in may hold.")
    max_depth = setting(20, "Folders a hand-in may nest.")

    def copy_files(self):
        """Copy every hand-in to a staging folder first; nbgrader's own `copy_files` then decides which
        to collect (new ones, --update, --before-duedate) and `do_copy` moves the staged copy into
        place. So a refused hand-in is dropped before nbgrader removes the student's earlier copy."""
        every = self.src_records
        lesson = self.coursedir.assignment_id
        cap = min(self.max_bytes, 1000 * self.coursedir.max_dir_size)
        ignore = ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                 max_file_size=self.coursedir.max_file_size, log=self.log)
        self._staged = {}
        staging = tempfile.mkdtemp(prefix=".heads-collect-", dir=self.coursedir.root)
        try:
            kept = []
            for rec in every:
                src = os.path.join(self.inbound_path, rec["filename"])
                staged = os.path.join(staging, rec["filename"])
                try:
                    skipped = copy_hand_in(src, staged, cap, self.max_entries, self.max_depth, ignore)
                except HandInRefused as why:
                    problem(self.log, rec["username"], lesson, f"hand-in not collected: {why} "
                            f"(inbound/{rec['filename']}); an earlier collected copy, if any, is kept")
                    continue
                for line in skipped:
                    problem(self.log, rec["username"], lesson, f"{line} not collected")
                self._staged[src] = staged
                kept.append(rec)
            self.src_records = kept
            super().copy_files()
        finally:
            self.src_records = every
            shutil.rmtree(staging, ignore_errors=True)

    def do_copy(self, src, dest, log=None):
        """Move the staged copy of the hand-in `src` to `dest` (nbgrader has made its parent)."""
        shutil.move(self._staged.pop(src), dest)
        if self.coursedir.groupshared:
            for dirpath, dirnames, filenames in os.walk(dest):
                os.chmod(dirpath, os.lstat(dirpath).st_mode & 0o777 | 0o2770)
                for name in filenames:
                    path = os.path.join(dirpath, name)
                    os.chmod(path, os.lstat(path).st_mode & 0o777 | 0o660)
