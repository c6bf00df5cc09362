# nbgrader configuration of the Heads course.
#
# nbgrader reads this file from the working directory, so run its commands from grader/:
#     cd grader && nbgrader generate_assignment 00_representations --force
# or use `python grader/release.py`, which regenerates every lesson with this same file.
# The source notebooks are ../solutions, the release is ../lessons; submissions, autograded and
# feedback folders and the gradebook live here in grader/ (and are not committed).
# The course's plugins (heads_*.py beside this file) are imported by name: the requirements install them
# (`-e ./grader`, grader/pyproject.toml), on the instructor's machine and on every Dask worker alike.
import os

HERE = os.path.dirname(os.path.abspath(__file__))

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
from heads_autograde import (CurrentSchemaVersion, DropEmptyNbgraderMetadata, DropUnknownGradeIds,  # noqa: E402
                             HeadsExecute)
from heads_files import ScrubWorkdir  # noqa: E402
from heads_html import SanitizeOutputs  # noqa: E402

c.Execute.timeout = 30
c.Execute.allow_errors = True
c.Execute.interrupt_on_timeout = True
c.Execute.error_on_timeout = {
    "ename": "CellTimeoutError",
    "evalue": "this cell ran longer than the grader allows (30 s): an infinite loop?",
    "traceback": ["CellTimeoutError: this cell ran longer than the grader allows (30 s): an infinite loop?"],
}
c.HeadsExecute.notebook_timeout = 180
# Output kept while it arrives, every mimetype counted (a lesson's plots take ~0.1 MB a cell).
c.HeadsExecute.max_output_chars = 20000     # of text per cell; LimitOutput caps lines after
c.HeadsExecute.max_output_bytes = 1024**2   # of all mimetypes per cell
c.HeadsExecute.max_notebook_output_bytes = 8 * 1024**2
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 40
# Every kernel runs sandboxed by bubblewrap (no course files, no network, writes only to its own
# folder) with a 3 GiB address-space limit. The sandbox is required: without bubblewrap no kernel
# starts. Grading without it takes `python grader/grade.py --no-sandbox autograde`, which says what the
# kernel can then read (the recordings: every hidden case and expected value). HEADS_SANDBOX=
# required|auto|off overrides the mode.
# Its other limits: 64 MiB a file, a 256 MiB /scratch, 128 MiB on disk in all (else it is killed),
# 64 processes and threads (a kernel with torch uses ~11), nice 10; processes a cell leaves
# running are stopped after it.
c.Execute.kernel_manager_class = "heads_sandbox.SandboxKernelManager"
c.SandboxKernelManager.sandbox = "required"
# 3 GiB: lesson 08 loads a real 22M-parameter model and fine-tunes two layers (peak ≈ 2 GB of address
# space measured in the sandbox), beside torch and transformers.
c.SandboxKernelManager.memory_limit = 3 * 1024**3
c.SandboxKernelManager.file_size_limit = 64 * 1024**2
c.SandboxKernelManager.scratch_size = 256 * 1024**2
c.SandboxKernelManager.disk_limit = 128 * 1024**2
c.SandboxKernelManager.process_limit = 64
c.SandboxKernelManager.niceness = 10
# After the kernel (the only step that runs student code), nothing it left on disk is followed and no output it made can run:
# ScrubWorkdir removes links, FIFOs, sockets, devices and caps the folder (grader/heads_files.py);
# SanitizeOutputs makes outputs, their metadata and the student's markdown inert (grader/heads_html.py).
c.ScrubWorkdir.max_folder_bytes = 64 * 1024**2
# Test cells are scored outside the student's process (grader/heads_outside.py): the kernel only runs
# the answers on recorded inputs; this process replays the checks on the results and writes the
# cells' outputs, from which SaveAutoGrades scores them.
# Before that, each statement that holds the notebook's score for review (grader/heads_flags.py) is replaced by
# `pass`, so a patch that could forge the score does nothing (grader/heads_unrun.py).
from heads_outside import JudgeOutsideKernel, RunAnswersOnly  # noqa: E402
from heads_unrun import SkipFlaggedCode  # noqa: E402

c.Autograde.autograde_preprocessors = [SkipFlaggedCode, RunAnswersOnly, HeadsExecute, ScrubWorkdir, JudgeOutsideKernel,
                                       SanitizeOutputs, IgnorePattern, ClearMetadataPreprocessor,
                                       LimitOutput, SaveAutoGrades, AssignLatePenalties,
                                       CheckCellMetadata]
# A hand-in is measured before nbgrader reads it (grader/heads_intake.py): one over 16 MiB, 1000 cells
# or 8 MiB of stored output is refused with its reason (a lesson with its outputs: under 0.5 MiB and
# 60 cells). `grade.py autograde` sets it aside unread (NAME.ipynb.too-large, scored 0); `nbgrader
# autograde` run by hand fails that notebook only.
from nbgrader.converters import Autograde  # noqa: E402
from heads_intake import refuse_oversized  # noqa: E402

c.HandInLimits.max_bytes = 16 * 1024**2
c.HandInLimits.max_cells = 1000
c.HandInLimits.max_output_bytes = 8 * 1024**2
Autograde.convert_single_notebook = refuse_oversized(Autograde.convert_single_notebook)
# nbgrader chmods the autograded files and copies the folder's other files into feedback, following
# links; nbgrader has no setting for either, so the course replaces the two methods. Feedback gets
# only the HTML and the two records `nbgrader release_feedback` needs, read without following links
# (grader/heads_exchange.py).
from nbgrader.converters import GenerateFeedback  # noqa: E402
from nbgrader.converters.base import BaseConverter  # noqa: E402
from heads_exchange import copy_release_records  # noqa: E402
from heads_files import set_permissions_nofollow  # noqa: E402

BaseConverter.set_permissions = set_permissions_nofollow
GenerateFeedback.init_assignment = copy_release_records
# `nbgrader release_feedback` goes on past a student whose feedback cannot be released, instead of
# stopping there (grader/heads_exchange.py).
c.ExchangeFactory.release_feedback = "heads_exchange.ReleaseFeedback"
# `nbgrader collect` copies each hand-in from the exchange following no link a student planted in it
# (nbgrader's copy follows them), leaves out hard links, FIFOs and devices, names what it left out, and
# refuses a hand-in larger than 64 MiB (grader/heads_exchange.py).
c.ExchangeFactory.collect = "heads_exchange.Collect"
c.Collect.max_bytes = 64 * 1024**2
# Deleted test cells come back (scored), edited ones are restored, a student's copy of a graded
# cell, or a cell marked with a grade_id the lesson does not have, becomes an ordinary cell instead of
# failing the notebook.
c.OverwriteCells.add_missing_cells = True
c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, DropEmptyNbgraderMetadata,
                                      DropUnknownGradeIds, CurrentSchemaVersion, OverwriteKernelspec,
                                      OverwriteCells, CheckCellMetadata]

# Feedback never shows the hidden tests: their source is cleared, an output that quotes them is
# removed, and an error keeps only its last line (the check's message, which names the mistake),
# not the frames that quote test code.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, GetGrades  # noqa: E402

from heads_feedback import HideQuotedTests, ShortenTracebacks, markdown2html  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, HideQuotedTests,
                                    ClearHiddenTests, ShortenTracebacks]
# Feedback pages and the formgrader (which reads this file too) make the notebook inert again when they
# render it, so a notebook autograded before a fix of grader/heads_html.py is safe too; nbconvert's own
# sanitiser runs after.
c.HTMLExporter.preprocessors = [SanitizeOutputs]
c.HTMLExporter.sanitize_html = True
# Maths as MathML, not TeX for MathJax: the pages show their formulas offline and under the CSP.
c.HTMLExporter.filters = {"markdown2html": markdown2html}

# Collecting (grader/heads_collect.py): `nbgrader zip_collect LESSON` recognises the names students
# really submit ("Copy of X.ipynb", "X (1).ipynb", a student folder or an id prefix).
c.ZipCollectApp.collector_plugin = "heads_collect.HeadsCollector"
# Archives unpack with their own timestamps, no links, at most 2 levels deep and 1 GiB expanded.
c.ZipCollectApp.extractor_plugin = "heads_collect.HeadsExtractor"
c.HeadsExtractor.max_depth = 2
c.HeadsExtractor.max_expanded_bytes = 1024**3
# Exporting (grader/heads_export.py): `nbgrader export` writes one row per student, one column per
# notebook.
c.ExportApp.plugin_class = "heads_export.WideCsvExport"
