"""The class report: what the class got wrong, exercise by exercise (`grade.py report`).

    python grader/grade.py report [LESSON...]   # <course>/reports/class.html and mistakes.csv

After autograde, every graded notebook has a verdict file, `<course>/verdicts/<lesson>/<student>/
<notebook>.json` (grader/heads_outside.py): for each test cell, whether it passed and, if not, the
`mistake` it names (the same key for every student who made it) and the `message` the student saw.
This module reads those files and the gradebook, and writes:

- `class.html`, one static page (no server, no script, nothing fetched): for every lesson the
  distribution of scores; for every exercise (test cell) its score distribution, the number of
  students diagnosed with each mistake, most frequent first, a bar chart (a PNG inside the page,
  its counts in the alt text) and each mistake's explanation as one of those students saw it; then
  every student's mistakes by lesson, behind their id (`<details>`), for office hours.
- `mistakes.csv`: a row per student, lesson, exercise and mistake (every exercise not passed):
  student, lesson, exercise, mistake, message, score, max_score (the exercise's points in the
  gradebook), status (`mistake`, or why it is counted apart).

Counted apart, never as a mistake: a cell that did not run to the end (an earlier crash, the time
limit, a dead kernel: `NoAnswers`), whose answers the grader could not read (`BadAnswers`), that the
grader failed on (`GraderError`) or that was not written yet (`NotImplementedError`); a notebook
with no verdict (missing, unreadable, graded before verdicts existed); and every exercise of a
submission flagged for review (grader/heads_flags.py), whose results may be forged. A crash in the
student's own function is a mistake ("... raised IndexError"), as is a renamed answer (`NameError`).

Every student-provided string (ids, messages that quote answers, flags) is escaped.
"""
from __future__ import annotations

import base64
import csv
import html
import io
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PASSED, MISTAKE, FLAGGED, NO_VERDICT = "passed", "mistake", "flagged", "not graded"
APART = {   # verdict error → why the exercise is counted apart (short: it labels a bar)
    "NoAnswers": "did not run",
    "BadAnswers": "unreadable answers",
    "GraderError": "grader error",
    "NotImplementedError": "not written yet",
}
CSV_COLUMNS = ["student", "lesson", "exercise", "mistake", "message", "score", "max_score", "status"]


@dataclass(frozen=True)
class Outcome:
    """One student's result on one exercise (test cell)."""

    student: str
    lesson: str
    exercise: str          # the test cell's grade_id (`notebook:grade_id` in a lesson of several notebooks)
    score: float           # the cell's score in the gradebook
    max_score: float
    status: str            # PASSED, MISTAKE, or why it is counted apart (APART's values, FLAGGED, NO_VERDICT)
    mistake: str = ""      # the mistake's key, the same for every student who made it
    message: str = ""      # what the student saw: "<error>: <message>"


@dataclass
class Exercise:
    """The class's outcomes on one exercise."""

    lesson: str
    name: str
    max_score: float
    scores: Counter = field(default_factory=Counter)           # score → students
    mistakes: dict = field(default_factory=dict)               # key → [Outcome], most frequent first
    apart: dict = field(default_factory=dict)                  # reason → [Outcome]
    passed: int = 0


# --- reading ---------------------------------------------------------------------------------------
def status_of(verdict: dict | None, flagged: bool, apart: dict[str, str] = APART) -> str:
    """How an exercise is counted: passed, a mistake, or apart (flagged, not graded, `apart[error]`)."""
    if flagged:
        return FLAGGED
    if not isinstance(verdict, dict):
        return NO_VERDICT
    if verdict.get("passed"):
        return PASSED
    return apart.get(verdict.get("error", ""), MISTAKE)


def read_verdicts(path: Path) -> dict:
    """{grade_id: verdict} from a verdict file, {} when there is none or it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_class(db_url: str, verdicts: Path, lessons: list[str], flags: dict[str, list[str]],
               apart: dict[str, str] = APART) -> tuple[list[Outcome], dict, dict]:
    """(every student's outcome on every autograded cell, {(student, lesson): (score, max_score)},
    {lesson: [exercise, ...] in the notebook's order}) from the gradebook at `db_url`, the verdict
    files under `verdicts` and `flags` ({"student/lesson": [flag, ...]}, grade.py's `flags`)."""
    from nbgrader.api import Gradebook, MissingEntry

    outcomes, totals, order = [], {}, {}
    with Gradebook(db_url) as gb:
        for lesson in lessons:
            try:
                assignment = gb.find_assignment(lesson)
            except MissingEntry:
                continue
            several = len(assignment.notebooks) > 1
            order[lesson] = [f"{nb.name}:{c.name}" if several else c.name
                             for nb in assignment.notebooks for c in nb.grade_cells if c.cell_type == "code"]
            for sub in assignment.submissions:
                student = sub.student.id
                totals[(student, lesson)] = (sub.score, sub.max_score)
                flagged = bool(flags.get(f"{student}/{lesson}"))
                for nb in sub.notebooks:
                    found = read_verdicts(verdicts / lesson / student / f"{nb.name}.json")
                    for grade in nb.grades:
                        if grade.cell_type != "code":
                            continue
                        verdict = found.get(grade.name)
                        status = status_of(verdict, flagged, apart)
                        failed = isinstance(verdict, dict) and not verdict.get("passed")
                        outcomes.append(Outcome(
                            student, lesson, f"{nb.name}:{grade.name}" if several else grade.name,
                            float(grade.score or 0), float(grade.max_score or 0), status,
                            str(verdict.get("mistake", "")) if failed else "",
                            f"{verdict.get('error', '')}: {verdict.get('message', '')}" if failed else ""))
    return outcomes, totals, order


# --- counting --------------------------------------------------------------------------------------
def tally(outcomes: list[Outcome], order: dict[str, list[str]] | None = None) -> list[Exercise]:
    """Per exercise (lessons and exercises in `order`, else as they come): its score distribution and
    the outcomes by mistake, most frequent first (ties by key), and by reason counted apart."""
    exercises: dict[tuple[str, str], Exercise] = {}
    for lesson, names in (order or {}).items():
        for name in names:
            exercises[(lesson, name)] = Exercise(lesson, name, 0.0)
    for o in sorted(outcomes, key=lambda o: o.student):   # the first student of a group is its example
        ex = exercises.setdefault((o.lesson, o.exercise), Exercise(o.lesson, o.exercise, o.max_score))
        ex.max_score = max(ex.max_score, o.max_score)
        ex.scores[o.score] += 1
        if o.status == PASSED:
            ex.passed += 1
        elif o.status == MISTAKE:
            ex.mistakes.setdefault(o.mistake, []).append(o)
        else:
            ex.apart.setdefault(o.status, []).append(o)
    for ex in exercises.values():
        ex.mistakes, ex.apart = _most_frequent_first(ex.mistakes), _most_frequent_first(ex.apart)
    return [ex for ex in exercises.values() if ex.scores]


def _most_frequent_first(groups: dict[str, list]) -> dict[str, list]:
    return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def counts(exercise: Exercise) -> dict[str, int]:
    """{mistake key or reason counted apart: students}, mistakes first, as the report shows them."""
    return {key: len(found) for key, found in [*exercise.mistakes.items(), *exercise.apart.items()]}


# --- the chart -------------------------------------------------------------------------------------
def chart_png(exercise: Exercise, width: float = 6.5, bar_height: float = 0.32, dpi: int = 80) -> bytes:
    """A horizontal bar chart of `exercise`: passed, each mistake (M1, M2, ... as in the table),
    each reason counted apart; `width` inches wide, `bar_height` inches a bar, at `dpi`."""
    from matplotlib.figure import Figure   # no pyplot: no global state, no display

    bars = [("passed", exercise.passed, "#4c9a2a")]
    bars += [(f"M{i}", len(v), "#d9622b") for i, v in enumerate(exercise.mistakes.values(), 1)]
    bars += [(reason, len(v), "#9a9a9a") for reason, v in exercise.apart.items()]
    fig = Figure(figsize=(width, 0.6 + bar_height * len(bars)), dpi=dpi)
    ax = fig.subplots()
    labels, values, colors = zip(*bars)
    y = range(len(bars))
    ax.barh(y, values, color=colors)
    ax.set_yticks(list(y), labels)
    ax.invert_yaxis()
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("students")
    for i, v in enumerate(values):
        ax.annotate(str(v), (v, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=9)
    ax.set_xlim(0, max(values + (1,)) * 1.12)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def chart_alt(exercise: Exercise) -> str:
    """The chart's counts in words, for its alt text."""
    parts = [f"passed: {exercise.passed}"]
    parts += [f"M{i} ({key}): {len(v)}" for i, (key, v) in enumerate(exercise.mistakes.items(), 1)]
    parts += [f"{reason}: {len(v)}" for reason, v in exercise.apart.items()]
    return f"{exercise.lesson} {exercise.name}, students by outcome. " + "; ".join(parts)


# --- the page --------------------------------------------------------------------------------------
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h2 { border-bottom: 2px solid #ddd; padding-bottom: .2rem; margin-top: 2.5rem; }
table { border-collapse: collapse; margin: .5rem 0; }
td, th { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.n { text-align: right; }
pre { white-space: pre-wrap; margin: 0; font-size: .85rem; }
.apart { color: #666; }
details { margin: .3rem 0; }
summary { cursor: pointer; }
img { max-width: 100%; }
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _points(x: float) -> str:
    return f"{x:g}"


def _distribution(scores: Counter, max_score: float) -> str:
    return " · ".join(f"{_points(s)}/{_points(max_score)}: {n}" for s, n in sorted(scores.items()))


def render_exercise(exercise: Exercise, chart: bytes) -> str:
    rows = []
    for i, (key, found) in enumerate(exercise.mistakes.items(), 1):
        rows.append(f"<tr><td>M{i}</td><td class='n'>{len(found)}</td><td>{_e(key)}</td>"
                    f"<td><pre>{_e(found[0].message)}</pre></td></tr>")
    for reason, found in exercise.apart.items():
        who = ", ".join(o.student for o in found)
        rows.append(f"<tr class='apart'><td>apart</td><td class='n'>{len(found)}</td><td>{_e(reason)}</td>"
                    f"<td>students: {_e(who)}</td></tr>")
    table = ("<table><tr><th></th><th>students</th><th>mistake</th><th>as the student saw it</th></tr>"
             + "".join(rows) + "</table>") if rows else "<p>No mistakes.</p>"
    image = base64.b64encode(chart).decode("ascii")
    return (f"<h3>{_e(exercise.name)}</h3>\n"
            f"<p>Scores: {_e(_distribution(exercise.scores, exercise.max_score))}"
            f" · passed {exercise.passed}</p>\n"
            f"<img src='data:image/png;base64,{image}' alt='{_e(chart_alt(exercise))}'>\n{table}\n")


def render_student(index: int, student: str, outcomes: list[Outcome], totals: dict,
                   flags: dict[str, list[str]]) -> str:
    parts = []
    for lesson in sorted({o.lesson for o in outcomes}):
        mine = [o for o in outcomes if o.lesson == lesson and o.status != PASSED]
        score, max_score = totals.get((student, lesson), (0.0, 0.0))
        items = [f"<li><b>{_e(o.exercise)}</b> ({_e(o.status)}): {_e(o.mistake or o.status)}"
                 + (f"<pre>{_e(o.message)}</pre>" if o.message else "") + "</li>" for o in mine]
        items += [f"<li class='apart'>flag: {_e(flag)}</li>" for flag in flags.get(f"{student}/{lesson}", [])]
        parts.append(f"<p>{_e(lesson)}: {_points(score)} / {_points(max_score)}</p>"
                     + (f"<ul>{''.join(items)}</ul>" if items else "<p>No mistakes.</p>"))
    wrong = sum(o.status == MISTAKE for o in outcomes)
    apart = sum(o.status not in (PASSED, MISTAKE) for o in outcomes)
    summary = f"{_e(student)} · {wrong} mistake{'' if wrong == 1 else 's'}" + (
        f", {apart} counted apart" if apart else "")
    return f"<details id='student-{index}'><summary>{summary}</summary>{''.join(parts)}</details>\n"


def render(exercises: list[Exercise], outcomes: list[Outcome], totals: dict, flags: dict[str, list[str]],
           title: str = "What the class got wrong", chart=chart_png) -> str:
    """The whole page: lessons, exercises, then students; `chart(exercise)` makes each PNG."""
    body = [f"<h1>{_e(title)}</h1>",
            "<p>Each exercise: its scores in the gradebook, the students diagnosed with each mistake (most "
            "frequent first) and the explanation they saw. Counted apart, not as mistakes: cells that did "
            "not run to the end, unreadable answers, grader errors, answers not written yet, notebooks "
            "without a verdict and flagged submissions. A mistake named <code>unnamed-</code> and eight hex digits "
            "is a wrong answer that no named mistake explains; the students in its row returned the same outputs "
            "on the grader's inputs, so they wrote the same wrong function.</p>"]
    for lesson in dict.fromkeys(ex.lesson for ex in exercises):
        lesson_totals = Counter(s for (_, le), (s, _) in totals.items() if le == lesson)
        top = max((m for (_, le), (_, m) in totals.items() if le == lesson), default=0)
        flagged = sorted(k.split("/")[0] for k, v in flags.items() if v and k.endswith(f"/{lesson}"))
        body.append(f"<h2>{_e(lesson)}</h2>\n<p>{sum(lesson_totals.values())} students. Lesson scores: "
                    f"{_e(_distribution(lesson_totals, top))}"
                    + (f". Flagged for review: {_e(', '.join(flagged))}" if flagged else "") + "</p>")
        body += [render_exercise(ex, chart(ex)) for ex in exercises if ex.lesson == lesson]
    body.append("<h2>Students</h2>")
    by_student = defaultdict(list)
    for o in outcomes:
        by_student[o.student].append(o)
    body += [render_student(i, s, by_student[s], totals, flags) for i, s in enumerate(sorted(by_student))]
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


# --- the CSV ---------------------------------------------------------------------------------------
def _csv_safe(value):
    """A text cell a spreadsheet would read as a formula (=, +, -, @ first) gets a leading quote."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def write_csv(outcomes: list[Outcome], path: Path) -> int:
    """A row per student, lesson, exercise not passed; the number of rows."""
    rows = sorted((o for o in outcomes if o.status != PASSED), key=lambda o: (o.student, o.lesson, o.exercise))
    # errors: a lone surrogate a kernel put in a message (S1) is written as \udcff, not the end of the class's file
    with path.open("w", newline="", encoding="utf-8", errors="backslashreplace") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        for o in rows:
            text = [_csv_safe(v) for v in (o.student, o.lesson, o.exercise, o.mistake, o.message)]
            writer.writerow([*text, _points(o.score), _points(o.max_score), o.status])
    return len(rows)


def write_report(course_root: Path, db_url: str, lessons: list[str], flags: dict[str, list[str]],
                 out: Path | None = None, apart: dict[str, str] = APART) -> tuple[Path, Path, list[Exercise]]:
    """Write `out`/class.html and `out`/mistakes.csv (`out` defaults to `course_root`/reports) for
    `lessons`, from the gradebook at `db_url` and the verdicts under `course_root`/verdicts."""
    out = Path(out) if out else Path(course_root) / "reports"
    out.mkdir(parents=True, exist_ok=True)
    outcomes, totals, order = read_class(db_url, Path(course_root) / "verdicts", lessons, flags, apart)
    exercises = tally(outcomes, order)
    page, table = out / "class.html", out / "mistakes.csv"
    page.write_text(render(exercises, outcomes, totals, flags), encoding="utf-8", errors="backslashreplace")
    write_csv(outcomes, table)
    return page, table, exercises
