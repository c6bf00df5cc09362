"""Student output is shown, never run: what the autograded notebook stores, and the server's CSP.

A notebook's outputs are whatever the student's code displayed: HTML with a `<script>` or an
`onerror` handler, JavaScript, SVG. Rendered unsanitised in the formgrader, that code runs with the
instructor's login (it can set its own score through the formgrader's API). Three layers:

- `SanitizeOutputs` (an autograde preprocessor, right after the kernel): every code cell's outputs
  keep only inert mimetypes; HTML and markdown are cleaned by bleach (nbconvert's `SanitizeHTML`),
  JavaScript, SVG and anything unknown are dropped. The autograded notebook, which both the
  formgrader and the feedback render, never holds a script.
- `c.HTMLExporter.sanitize_html = True` in nbgrader_config.py: feedback and formgrader pages clean
  markdown cells and outputs again when they render them.
- `CONTENT_SECURITY_POLICY`, sent by the Jupyter server that runs the formgrader (see
  grader/jupyter_server_config.py): no plugins, no requests, images or forms to other sites.
  nbgrader's own formgrader pages use inline scripts, so the policy cannot forbid those; it limits
  what a script that got through could reach.
"""
from __future__ import annotations

import os

import nbformat
from nbconvert.preprocessors.sanitize import SanitizeHTML
from traitlets import Bool, Set

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval'",  # nbgrader's pages and JupyterLab need these
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "frame-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
])


class SanitizeOutputs(SanitizeHTML):
    """nbconvert's `SanitizeHTML` for code-cell outputs, and for the markdown and raw cells the
    student wrote or changed (nbgrader's feedback and formgrader templates render markdown
    unsanitised; the lesson's own cells, as released, are left alone). Widget views, which are only
    a model id, are kept."""

    safe_output_keys = Set(
        {"metadata", "text/plain", "text/latex", "application/json", "image/png", "image/jpeg",
         "application/vnd.jupyter.widget-view+json"},
        help="Output mimetypes stored as they are; any other not in sanitized_output_types is dropped.",
    ).tag(config=True)

    enabled = Bool(True, help="nbconvert's preprocessors are off unless enabled; this one must run.") \
        .tag(config=True)

    def preprocess(self, nb, resources):
        # Widget state is rendered inside a <script> tag of the page: the student's, so dropped.
        nb.metadata.pop("widgets", None)
        self._released = self._released_text(resources)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            cell.outputs = self.sanitize_code_outputs(cell.outputs)
        elif cell.cell_type in ("markdown", "raw") and cell.source not in self._released:
            cell.source = self.sanitize_html_tags(cell.source)
        return cell, resources

    def _released_text(self, resources) -> set[str]:
        """The markdown and raw cells of the released notebook (none if it cannot be found)."""
        coursedir = getattr(getattr(self.parent, "parent", None), "coursedir", None)  # exporter, converter
        info = resources.get("nbgrader", {})
        if coursedir is None or "assignment" not in info:
            return set()
        folder = coursedir.format_path(coursedir.release_directory, ".", info["assignment"])
        try:
            nb = nbformat.read(os.path.join(folder, f"{info['notebook']}.ipynb"), as_version=4)
        except (OSError, ValueError):
            return set()
        return {c.source for c in nb.cells if c.cell_type in ("markdown", "raw")}
