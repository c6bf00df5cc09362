"""The hub round trip's last step: feedback released through nbgrader's exchange (grader/JUPYTERHUB.md).

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

import glob
import os
import stat

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback

from heads_files import KINDS, problem

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
