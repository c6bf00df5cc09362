"""Who a hand-in belongs to: the student id a folder or file-name prefix stands for (used by collect).

A name (`alice`, `Frank Li`, `王伟`, the folder an LMS made) becomes an id in three steps:

1. **Refused, never repaired.** A name holding a character no one can see (zero-width spaces and
   joiners, bidi controls, other default-ignorable code points), a control character, or whitespace
   at either end is refused, with a report line that shows it (`'bob\\u200b'`). Stripping it would
   hand the file to the student whose name is left: `bob\\u200b/` beside `bob/` would replace bob's
   hand-in with the attacker's newer one.
2. **Unicode kept.** The name is NFKC-normalised (a name typed in two ways, `Zoë` composed or with a
   combining accent, `ａｌｉｃｅ` in full width, is one name); letters, marks and digits of every
   script and `_ . @ -` are kept, any other run of characters becomes `_`. So `Zoë Li` and `Zoé Li`
   stay two students, `王伟` is `王伟`, and `Frank Li` is `Frank_Li`.
3. **Given by a roster** where one is given (`Roster`: an LMS export, name or login <-> id), which
   decides the id of every name it lists.

Two different names that still give one id (`Frank Li/` and `Frank_Li/`, or two names a roster
lists for one id) are both kept, as `ID~1` and `ID~2`: neither replaces the other, neither takes the
id itself (a name chosen to win it could then take a classmate's row), and both are reported for the
instructor to settle.
"""
from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

KEPT = "_.@-"
DUPLICATE_MARK = "~"  # ID~2: never in an LMS login, so a suffixed id cannot be a real one
# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): rendered as nothing, including
# letters that are blank (Hangul fillers) and combining marks that are (variation selectors).
IGNORABLE = [(0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
             (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
             (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
             (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
             (0x2800, 0x2800)]   # not ignorable, but drawn blank: the braille blank (a red team's 'bob⠀')
REFUSED_CATEGORIES = {"Cc": "a control character", "Cf": "an invisible formatting character",
                      "Co": "a private-use character", "Cs": "a lone surrogate",
                      "Cn": "an unassigned character", "Zl": "a line separator",
                      "Zp": "a paragraph separator"}


def _invisible(ch: str) -> str | None:
    """What `ch` is, when it is a character a name must not hold; None when it may."""
    code = ord(ch)
    if any(lo <= code <= hi for lo, hi in IGNORABLE):
        return "an invisible character"
    return REFUSED_CATEGORIES.get(unicodedata.category(ch))


# Scripts whose letters draw alike (Latin a, Cyrillic а, Greek ο): mixed in one name, the fewer are escaped.
LOOKALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def _script(ch: str) -> str | None:
    """`ch`'s script when it is a letter of one of LOOKALIKE_SCRIPTS, else None."""
    word = unicodedata.name(ch, "").split(" ", 1)[0]
    return word if ch.isalpha() and word in LOOKALIKE_SCRIPTS else None


def shown(name: str) -> str:
    """`name` quoted as a report shows it, so that two names a screen draws alike read differently:
    every character that cannot be seen, every combining mark (`Zoe\\u0308` beside a composed `Zoë`)
    and, in a name mixing Latin, Cyrillic and Greek letters, those of the rarer scripts (`d\\u0430ve`,
    a Cyrillic а, beside `dave`) as `\\uXXXX`."""
    scripts = [_script(ch) for ch in name]
    counts = {s: scripts.count(s) for s in set(scripts) - {None}}
    main = max(counts, key=lambda s: (counts[s], s == "LATIN"), default=None)

    def escaped(ch: str, script: str | None) -> bool:
        return bool(_invisible(ch) or unicodedata.combining(ch) or script not in (None, main))

    return "'" + "".join(f"\\u{ord(ch):04x}" if escaped(ch, sc) else ch for ch, sc in zip(name, scripts)) + "'"


def refusal(name: str) -> str | None:
    """Why `name` cannot name a student (an invisible or control character, surrounding
    whitespace), or None."""
    text = unicodedata.normalize("NFKC", name)
    for ch in text:
        what = _invisible(ch)
        if what:
            return (f"the name {shown(name)} holds {what} (U+{ord(ch):04X} "
                    f"{unicodedata.name(ch, 'unnamed')}): refused, not stripped")
    if text != text.strip():
        return f"the name {shown(name)} begins or ends with whitespace: refused, not stripped"
    return None


def student_id(name: str) -> str:
    """A folder-safe id for a name that is not refused: NFKC; letters, marks and digits of every
    script and `_.@-` kept; any other run of characters `_`."""
    text = unicodedata.normalize("NFKC", name)
    kept = "".join(ch if ch in KEPT or unicodedata.category(ch)[0] in "LMN" else "\0" for ch in text)
    return re.sub("\0+", "_", kept).strip("_.-")


def _as_typed(name: str) -> bool:
    """Whether `name` is already in the form NFKC and single spaces give it: how a name is usually typed."""
    return name == " ".join(unicodedata.normalize("NFKC", name).split())


def _key(text: str) -> str:
    """How a roster compares names: NFKC, case folded, `_` and whitespace runs as one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().replace("_", " ").split())


# The names LMS downloads give a student's folder or file prefix, and the part a roster lists.
MOODLE_FOLDER = re.compile(r"^(?P<name>.+?)_\d+_assignsubmission_\w+?_?$")  # "Jo Li_1234_assignsubmission_file_"
CANVAS_PREFIX = re.compile(r"^(?P<name>[^_]+)(?:_late)?_(?P<uid>\d+)(?:_\d+)*$", re.I)  # "lijo_1234_5678"
# "lijo_1234_5678_hw.zip", "lijo_LATE_1234_5679_hw.ipynb": a Canvas upload (login, user id, file id, the file's name)
CANVAS_FILE = re.compile(r"^(?P<name>[^_]+)(?:_late)?_(?P<uid>\d+)_(?P<file>\d+)(?:_|$)", re.I)
# Blackboard's "download assignment": "<assignment>_<user>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>". Matched from the
# start: the first attempt mark is Blackboard's, anything after it the student's own file name (which may
# itself read "_bob_attempt_2030-…"). The user is the `_`-free field before it (the assignment may hold `_`).
BLACKBOARD = re.compile(r"^(?P<assignment>.+?)_(?P<name>[^_]+)_attempt_"
                        r"(?P<time>\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)(?:_|$)")


def lms_owner(name: str) -> str:
    """The part of an LMS name that says who handed it in: Blackboard's assignment and user, without the
    attempt time; Canvas's login and user id (`lijo_1234`), without the file id and `LATE`. So a
    resubmission or second attempt is one student's copy competing by time, not another student. Any other
    name is its own."""
    found = BLACKBOARD.match(name)
    if found:
        return f"{found['assignment']}_{found['name']}"
    found = CANVAS_FILE.match(name)
    return f"{found['name']}_{found['uid']}" if found else name


def blackboard_users(names) -> dict[str, str]:
    """{name: Blackboard user} for the Blackboard names among `names`. All the names of one assignment start
    with it, so an owner's assignment is the longest `_`-bounded start it shares with another owner, and a
    user name may hold `_` (`j_smith` and `k_smith` are two users, not two `smith`). An owner that shares no
    start (the assignment's one student) is read by the first `_attempt_` mark alone: the user is the last
    `_`-free field before it; a roster settles such a name."""
    owners = {name: lms_owner(name) for name in names if BLACKBOARD.match(name)}
    distinct = set(owners.values())

    def user(name: str, owner: str) -> str:
        starts = [owner[:i] for i, c in enumerate(owner) if c == "_"]
        shared = [a for a in starts if sum(o.startswith(a + "_") for o in distinct) > 1]
        return owner[len(shared[-1]) + 1:] if shared else BLACKBOARD.match(name)["name"]
    return {name: user(name, owner) for name, owner in owners.items()}


def attempt_time(name: str) -> datetime | None:
    """When an LMS name says the attempt was made (Blackboard's attempt time), else None."""
    found = BLACKBOARD.match(name)
    return datetime.strptime(found["time"], "%Y-%m-%d-%H-%M-%S").replace(tzinfo=timezone.utc) if found else None


def lms_named(name: str) -> bool:
    """Whether `name` is shaped like an LMS's name for one student's folder or file (Moodle's
    `Jo Li_1234_assignsubmission_file`, Canvas's `lijo_1234_5678…`, Blackboard's `HW 1_lijo_attempt_…`):
    such a folder is a student's, never one that wraps the class, and inside someone else's hand-in it claims a classmate."""
    return bool(MOODLE_FOLDER.match(name) or CANVAS_FILE.match(name) or BLACKBOARD.match(name))


class RosterError(ValueError):
    pass


@dataclass
class Roster:
    """An LMS roster export: which id each name, login or LMS number stands for.

    Recognised by its header: a Canvas gradebook export (`Student, ID, SIS User ID, SIS Login ID,
    ...`; id: the SIS login, else the SIS user id, else Canvas's ID), a Moodle participants export
    (`First name, Last name, ... ID number, Username, Email address`; id: the ID number, else the
    username, else the email), or a plain `name,id` CSV.
    """

    path: str
    kind: str
    ids: dict[str, set[str]] = field(default_factory=dict)  # key -> ids (more than one: ambiguous)

    @classmethod
    def read(cls, path) -> "Roster":
        try:
            with open(path, newline="", encoding="utf-8-sig") as fh:
                rows = list(csv.DictReader(fh))
        except (OSError, UnicodeDecodeError, csv.Error) as err:
            raise RosterError(f"roster {path}: not a readable CSV file ({err})") from err
        header = {(h or "").strip().casefold() for h in (rows[0].keys() if rows else [])}
        for kind, needs, entry in (("Canvas gradebook", {"student", "id"}, _canvas),
                                   ("Moodle participants", {"first name", "last name"}, _moodle),
                                   ("name,id", {"name", "id"}, _plain)):
            if needs <= header:
                roster = cls(str(path), kind)
                for row in rows:
                    row = {(k or "").strip().casefold(): (v or "").strip() for k, v in row.items()}
                    found = entry(row)
                    if found:
                        sid, names = found
                        for name in filter(None, {*names, sid}):
                            roster.ids.setdefault(_key(name), set()).add(sid)
                return roster
        raise RosterError(f"roster {path}: header not recognised (expected a Canvas gradebook export, "
                          "a Moodle participants export, or a name,id CSV)")

    def lookup(self, name: str) -> tuple[str | None, str | None]:
        """(id, None) for a name the roster lists, (None, why) for one it lists twice, (None, None)
        for one it does not list. Tried in turn: the name, the name in a Moodle folder name, the
        Canvas user number and name in a Canvas file prefix, the user in a Blackboard one."""
        keys = [name]
        for pattern, group in ((MOODLE_FOLDER, "name"), (CANVAS_FILE, "uid"), (CANVAS_PREFIX, "uid"),
                               (CANVAS_FILE, "name"), (CANVAS_PREFIX, "name"), (BLACKBOARD, "name")):
            found = pattern.match(name)
            if found:
                keys.append(found[group])
        for key in keys:
            ids = self.ids.get(_key(key))
            if ids and len(ids) == 1:
                return next(iter(ids)), None
            if ids:
                return None, (f"the roster lists {shown(key)} for {len(ids)} students "
                              f"({', '.join(sorted(ids))}): not collected, give it an id by hand")
        return None, None


def _canvas(row: dict):
    if not row.get("student") or row["student"].lower().startswith("points possible"):
        return None
    sid = row.get("sis login id") or row.get("sis user id") or row.get("id")
    last, _, first = row["student"].partition(",")
    squashed = "".join(ch for ch in f"{last}{first}".casefold() if ch.isalnum())  # Canvas zips: "lijo"
    return sid, [row["student"], f"{first} {last}", squashed, row.get("id", ""),
                 row.get("sis user id", ""), row.get("sis login id", "")]


def _moodle(row: dict):
    sid = row.get("id number") or row.get("username") or row.get("email address")
    full = f"{row.get('first name', '')} {row.get('last name', '')}"
    return (sid, [full, row.get("username", ""), row.get("email address", "")]) if sid else None


def _plain(row: dict):
    return (row["id"], [row.get("name", "")]) if row.get("id") else None


@dataclass
class Identities:
    """The ids of every student name found in one collection."""

    ids: dict[str, str] = field(default_factory=dict)      # name -> id
    refused: dict[str, str] = field(default_factory=dict)  # name -> why it has no id
    shared: dict[str, str] = field(default_factory=dict)   # name -> which other name gave its id
    unlisted: set[str] = field(default_factory=set)        # names a roster was given for and lacks


def identities(names, roster: Roster | None = None) -> Identities:
    """Ids for every one of `names` (folder names and file prefixes, as found): refused names
    left out with the reason, each id given to one student only. Names of one LMS owner (`lms_owner`:
    a user's Blackboard attempts) are one student."""
    out, claims = Identities(), {}  # claims: id -> owner -> the names that are the owner's
    users = blackboard_users(set(names))
    for name in sorted(set(names)):
        why = refusal(name)
        sid = None
        if why is None and roster is not None:
            sid, why = roster.lookup(name)
            if sid is None and why is None and name in users:
                sid, why = roster.lookup(users[name])
            if sid is None and why is None:
                out.unlisted.add(name)
        if why is None:
            sid = sid or student_id(users.get(name) or lms_owner(name))
            why = None if sid else f"the name {shown(name)} has no letter or digit"
        if why:
            out.refused[name] = why
        else:
            claims.setdefault(sid, {}).setdefault(users.get(name) or lms_owner(name), []).append(name)
    for sid, owners in claims.items():
        if len(owners) == 1:
            out.ids.update((name, sid) for name in next(iter(owners.values())))
            continue
        # Two names, one id: neither gets the id itself. Whichever rule chose the keeper, a name could be
        # picked to win it (`Frank_Li/`, the id as a folder name, beside `Frank Li/`), and the gradebook
        # row an LMS matches back would silently be the other student's. Both are numbered, the name
        # written as people type it first (`Frank Li` before `Frank  Li`, a composed `Zoë` before one with
        # a combining accent), then in code-point order; both are reported for the instructor to settle.
        n = 0
        for owner in sorted(owners, key=lambda o: (not _as_typed(o), o)):
            n += 1
            while f"{sid}{DUPLICATE_MARK}{n}" in claims:
                n += 1
            out.ids.update((name, f"{sid}{DUPLICATE_MARK}{n}") for name in owners[owner])
        for owner, mine in owners.items():
            for name in mine:
                others = ", ".join(f"{shown(o)} ({out.ids[o]})" for other, theirs in owners.items()
                                   if other != owner for o in theirs)
                out.shared[name] = (f"{shown(name)} and {others} give one id, {sid}: kept apart as "
                                    f"{out.ids[name]}, neither as {sid}; check who is who")
    return out


def read_roster(path: str | Path | None) -> Roster | None:
    return Roster.read(path) if path else None
