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

# Autograding (grader/heads_autograde.py, grader/heads_sandbox.py). A whole lesson runs in well under
# 20 s and its longest cell in a few seconds, so a cell still running after 30 s loops: it is
# interrupted and fails. A notebook may take 180 s in all; cells after that, or after the kernel died
# (os._exit, a segfault, the memory limit), are not run and score 0 with the reason in the feedback.
from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, CheckCellMetadata, ClearOutput, DeduplicateIds, IgnorePattern, LimitOutput,
    OverwriteCells, OverwriteKernelspec, SaveAutoGrades)
from heads_autograde import DropEmptyNbgraderMetadata, HeadsExecute  # noqa: E402

c.Execute.timeout = 30
c.Execute.allow_errors = True
c.Execute.interrupt_on_timeout = True
c.Execute.error_on_timeout = {
    "ename": "CellTimeoutError",
    "evalue": "this cell ran longer than the grader allows (30 s): an infinite loop?",
    "traceback": ["CellTimeoutError: this cell ran longer than the grader allows (30 s): an infinite loop?"],
}
c.HeadsExecute.notebook_timeout = 180
c.HeadsExecute.max_output_chars = 20000     # per cell, while it runs; LimitOutput caps lines after
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 40
# Every kernel runs sandboxed by bubblewrap (no course files, no network, writes only to its own
# folder) with a 2 GiB address-space limit. HEADS_SANDBOX=required|auto|off overrides the mode.
c.Execute.kernel_manager_class = "heads_sandbox.SandboxKernelManager"
c.SandboxKernelManager.sandbox = "auto"
c.SandboxKernelManager.memory_limit = 2 * 1024**3
c.Autograde.autograde_preprocessors = [HeadsExecute, IgnorePattern, ClearMetadataPreprocessor,
                                       LimitOutput, SaveAutoGrades, AssignLatePenalties,
                                       CheckCellMetadata]
# Deleted test cells come back (scored), edited ones are restored, a student's copy of a graded
# cell becomes an ordinary cell instead of failing the notebook.
c.OverwriteCells.add_missing_cells = True
c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, DropEmptyNbgraderMetadata,
                                      OverwriteKernelspec, OverwriteCells, CheckCellMetadata]

# Feedback never shows the hidden tests: their source is cleared, and an error keeps only its
# last line (the check's message, which names the mistake), not the frames that quote test code.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, GetGrades  # noqa: E402

from heads_feedback import ShortenTracebacks  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ClearHiddenTests,
                                    ShortenTracebacks]

# Collecting (grader/heads_collect.py): `nbgrader zip_collect LESSON` recognises the names students
# really submit ("Copy of X.ipynb", "X (1).ipynb", a student folder or an id prefix).
c.ZipCollectApp.collector_plugin = "heads_collect.HeadsCollector"
# Exporting (grader/heads_export.py): `nbgrader export` writes one row per student, one column per
# notebook.
c.ExportApp.plugin_class = "heads_export.WideCsvExport"
