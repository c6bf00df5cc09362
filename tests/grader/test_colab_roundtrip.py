"""A self-learner's Colab submission, end to end: the lesson filled in on Colab, downloaded the way
Colab saves it ("Copy of …", nbformat 4.0, no cell ids, Colab metadata), handed in through an LMS zip,
collected, autograded in the sandbox and given feedback: full marks. (The grader takes the recording of
the lesson's checks made in this process, as the lessons' grading tests do.)"""
import zipfile

import nbformat

from course import colab_saved, fill, grade_py, make_course, release_nb, scores, solution_answers
from harness import recorded_here

LESSON = "03_sequence_head"


def test_a_colab_copy_filled_with_the_solution_gets_full_marks(tmp_path):
    root = tmp_path / "course"
    make_course(root, (LESSON,), extra_config=recorded_here(root, [LESSON]))
    filled = fill(release_nb(root, LESSON), solution_answers(LESSON))
    saved = colab_saved(filled, LESSON)
    assert "id" not in saved["cells"][0] and saved["nbformat_minor"] == 0
    lms = tmp_path / "lms.zip"
    with zipfile.ZipFile(lms, "w") as z:
        z.writestr(f"sam/Copy of {LESSON}.ipynb", nbformat.writes(nbformat.from_dict(saved)))

    for step in (["collect", str(lms)], ["--jobs", "1", "autograde"], ["feedback"]):
        proc = grade_py("--course", str(root), *step)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    graded = scores(root, LESSON)["sam"]
    points = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
              for c in release_nb(root, LESSON).cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert graded["cells"] == points, graded
    assert graded["score"] == sum(points.values()) > 0
    page = (root / "feedback" / "sam" / LESSON / f"{LESSON}.html").read_text()
    body = page[page.index("<body"):]
    assert body.count("<math ") > 10 and r"\ln K" not in body, "the feedback's maths is not MathML (shown offline)"
