"""Feedback preprocessing for the Heads course (loaded by nbgrader_config.py)."""
from html import escape as html_escape

from jinja2 import pass_context
from latex2mathml.converter import convert as latex_to_mathml
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import Preprocessor
from nbformat.notebooknode import NotebookNode

from heads_files import setting


class ShortenTracebacks(Preprocessor):
    """Replace each error's traceback by its last line, `ExceptionType: message`.

    Traceback frames quote the code that raised, which for a hidden test is the hidden test itself.
    The course's checks put everything a student needs into the message.
    """

    # nbconvert's preprocessors are off unless enabled; this one must always run.
    enabled = setting(True)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


def hidden_test_lines(nb, min_chars: int = 12) -> list[str]:
    """The lines (stripped) of every hidden-test region with at least `min_chars` characters."""
    lines = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) >= min_chars:
                lines.append(line.strip())
    return lines


def joined_streams(outputs: list) -> list:
    """The outputs with each run of consecutive same-stream outputs joined into one.

    One print can reach the notebook in several outputs (the kernel flushes on a timer, or on the
    code's own flush), so a line is looked for in what the reader sees joined, not piece by piece.
    """
    joined = []
    for output in outputs:
        last = joined[-1] if joined else None
        if (last is not None and output.get("output_type") == "stream" == last.get("output_type")
                and output.get("name") == last.get("name")):
            last["text"] = str(last.get("text", "")) + str(output.get("text", ""))
        else:
            joined.append(output)
    return joined


class HideQuotedTests(Preprocessor):
    """Remove every output that quotes a line of a hidden test, before `ClearHiddenTests` runs.

    Hidden tests no longer run in the student's kernel (grader/heads_outside.py); this stays as a
    second guard, should a hidden line ever reach an output, since that output would reach the
    feedback. A quoted line is found
    by its text: every line of a hidden-test region with at least `min_chars` characters.
    """

    enabled = setting(True)
    min_chars = setting(12, "Shorter lines of hidden tests are not looked for.")

    def preprocess(self, nb, resources):
        self._lines = {" ".join(line.split()) for line in hidden_test_lines(nb, self.min_chars)}
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if not self._lines or cell.cell_type != "code":
            return cell, resources
        cell.outputs = joined_streams(cell.get("outputs", []))
        for i, output in enumerate(cell.outputs):
            # Tracebacks are left out: their frames quote the test cell itself, and
            # ShortenTracebacks replaces them by `ename: evalue` anyway.
            shown = " ".join(" ".join([str(output.get("text", "")), str(output.get("ename", "")),
                                       str(output.get("evalue", "")),
                                       *map(str, output.get("data", {}).values())]).split())
            if any(line in shown for line in self._lines):
                note = "[output removed by the grader: it quoted the hidden tests]"
                cell.outputs[i] = (NotebookNode(output_type="error", ename=output["ename"], evalue=note,
                                                traceback=[f"{output['ename']}: {note}"])
                                   if output.get("output_type") == "error" else
                                   NotebookNode(output_type="stream", name="stdout", text=note + "\n"))
        return cell, resources


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer with the maths written as MathML, which browsers lay out themselves.

    nbconvert keeps `$...$` as text for MathJax, a script its templates load from a CDN: a feedback page
    opened offline (from an LMS zip, on a train) showed raw LaTeX, and the grading server's CSP blocks
    that script anyway. MathML needs no script and no network. TeX the converter cannot read stays as
    text, as it was."""

    def inline_math(self, body: str) -> str:
        return _mathml(body, "inline", f"${body}$")

    def block_math(self, body: str) -> str:
        return _mathml(body, "block", f"$${body}$$")

    def latex_environment(self, name: str, body: str) -> str:
        tex = f"\\begin{{{name}}}{body}\\end{{{name}}}"
        return _mathml(tex, "block", tex)


def _mathml(tex: str, display: str, source: str) -> str:
    try:
        return latex_to_mathml(tex, display=display)
    except Exception:   # a macro the converter lacks: the reader still sees the formula's source
        return html_escape(source)


@pass_context
def markdown2html(context, source: str) -> str:
    """The `markdown2html` filter of HTML pages (feedback and formgrader, `c.HTMLExporter.filters`), with
    MathML for the maths; otherwise as nbconvert's, attachments included."""
    cell = context.get("cell", {})
    path = context.get("resources", {}).get("metadata", {}).get("path", "")
    renderer = MathMLRenderer(escape=False, attachments=cell.get("attachments", {}), path=path)
    return MarkdownWithMath(renderer=renderer).render(source)
