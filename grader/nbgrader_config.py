# nbgrader configuration of the Heads course.
#
# nbgrader reads this file from the working directory, so run its commands from grader/:
#     cd grader && nbgrader generate_assignment 00_representations --force
# or use `python grader/release.py`, which regenerates every lesson with this same file.
# The source notebooks are ../solutions, the release is ../lessons; submissions, autograded and
# feedback folders and the gradebook live here in grader/ (and are not committed).
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # for heads_feedback

c = get_config()  # noqa: F821 (provided by traitlets)

c.CourseDirectory.course_id = "heads"
c.CourseDirectory.root = HERE
c.CourseDirectory.source_directory = os.path.join(os.pardir, "solutions")
c.CourseDirectory.release_directory = os.path.join(os.pardir, "lessons")
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(HERE, "gradebook.db")

# What a student sees in place of a solution.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Autograding: every lesson cell runs in well under a second; 60 s means something loops.
c.Execute.timeout = 60
c.Execute.allow_errors = True
c.Execute.interrupt_on_timeout = True

# Feedback never shows the hidden tests: their source is cleared, and an error keeps only its
# last line (the check's message, which names the mistake), not the frames that quote test code.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, GetGrades  # noqa: E402

from heads_feedback import ShortenTracebacks  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ClearHiddenTests,
                                    ShortenTracebacks]
