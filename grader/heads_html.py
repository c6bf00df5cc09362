"""Student output is shown, never run: what a rendered hand-in may hold, and the server's CSP.

Whatever a student's notebook holds (outputs and their metadata, markdown and raw cells, attachments)
the instructor's browser renders: in the formgrader, logged in, where a script could set its own
grade through the formgrader's API, write into the course or open a terminal, and in the feedback
pages students open. One preprocessor, `SanitizeOutputs`, makes a notebook inert; it runs twice:

- at autograde (right after the kernel), so the stored autograded notebook and the feedback built
  from it hold no script;
- again whenever the formgrader or the feedback renders a notebook (`c.HTMLExporter.preprocessors`
  in nbgrader_config.py), so a notebook autograded before a fix is safe too.

What it does:
- outputs keep only inert mimetypes; HTML is cleaned to a small set of tags and attributes, and every
  URL must be http(s) or mailto (an image may also be an embedded PNG, JPEG, GIF or WebP);
- output metadata keeps only what nbconvert's templates may safely print: `width` and `height` as
  positive integers and `unconfined` as a boolean. The templates write `width={{ width }}` without
  quotes, so a string like `1 onerror=...` became an event handler (docs/upstream/nbconvert-image-size.md);
- markdown (cells the student wrote or changed, and `text/markdown` outputs) is rendered to HTML here,
  cleaned, and stored as one line of HTML that any markdown renderer passes through unchanged: the
  templates render markdown with links like `[x](javascript:...)` intact, and nbgrader's formgrade
  template does not clean them;
- a lone surrogate anywhere (a kernel's exception text, the notebook's JSON) is written out as the
  text `\\udcff`: no UTF-8 file can hold one, and nbgrader would fail the whole notebook writing it;
- cell attachments keep only PNG and JPEG; widget state (rendered inside a <script>) is dropped; a
  cell's nbgrader metadata whose `grade_id` is not a plain name is dropped (the formgrade template prints
  it unescaped).

The grading server's configuration (grader/jupyter_server_config.py: no terminals, a Content-Security-
Policy) is the second line.
"""
from __future__ import annotations

import os
import re
from html import escape as html_escape

import bleach
import nbformat
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import Preprocessor
from traitlets import Set

from heads_files import setting

TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em", "h1", "h2",
        "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong",
        "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
LINK_SCHEMES = {"http", "https", "mailto"}
EMBEDDED_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[a-z0-9+/=]*\Z", re.I)
IMAGE_MIMETYPES = ("image/png", "image/jpeg")
GRADE_ID = re.compile(r"[\w.\-]{1,200}")
# Browsers drop these anywhere in a URL ("java\tscript:" is "javascript:").
_IGNORED_IN_URL = re.compile(r"[\x00-\x20\x7f]+")
_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):", re.I)


def safe_url(url: str, image: bool = False) -> bool:
    """True for an http(s) or mailto URL, or a link to a place on the page; for an image, an embedded
    PNG, JPEG, GIF or WebP too. Anything else is not: javascript:, vbscript:, data:text/html, an unknown
    scheme, and paths on the grading server (the student's own files are served there)."""
    url = _IGNORED_IN_URL.sub("", url)
    if image and EMBEDDED_IMAGE.match(url):
        return True
    if url.startswith("#") and not image:
        return True
    scheme = _SCHEME.match(url)
    return scheme is not None and scheme.group(1).lower() in LINK_SCHEMES \
        and not (image and scheme.group(1).lower() == "mailto")


def _positive_int(value) -> bool:
    """A JSON integer (not a boolean) in 1..100000."""
    return type(value) is int and 0 < value <= 100_000


def _positive_int_attribute(value: str) -> bool:
    return value.isascii() and value.isdigit() and _positive_int(int(value))


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    if tag == "a":
        return name == "title" or name == "href" and safe_url(value)
    if tag == "img":
        return name in ("alt", "title") or name == "src" and safe_url(value, image=True) \
            or name in ("width", "height") and _positive_int_attribute(value)
    if tag in ("td", "th"):
        return name in ("colspan", "rowspan") and _positive_int_attribute(value)
    return tag in ("code", "pre", "span") and name == "class"  # syntax highlighting


# bleach checks the protocol again after the filter; "data" is needed there for embedded images,
# which the filter allows only in an <img src>.
_CLEANER = bleach.Cleaner(tags=TAGS, attributes=_allowed_attribute, protocols=LINK_SCHEMES | {"data"},
                          strip=False, strip_comments=True)


def clean_html(html: str) -> str:
    """The HTML with only `TAGS`, their few safe attributes and safe URLs; other tags are escaped
    (shown as text), comments dropped."""
    return _CLEANER.clean(html)


def markdown_as_clean_html(source: str, attachments: dict | None = None) -> str:
    """Markdown rendered to HTML the way nbconvert renders it (maths kept as text for MathJax), cleaned,
    as one line inside a <div>: a markdown renderer passes such a line through as raw HTML (an HTML
    block ends only at a blank line), so rendering it again cannot turn escaped text into a link."""
    renderer = _Renderer(escape=False, allow_harmful_protocols=False, exclude_anchor_links=True,
                         attachments=_image_attachments(attachments or {}))
    try:
        html = MarkdownWithMath(renderer=renderer).render(source)
    except Exception:  # a renderer's bug must not cost the instructor the page: show the source
        html = f"<pre>{html_escape(source)}</pre>"
    one_line = clean_html(html).replace("\r", "&#13;").replace("\n", "&#10;")
    return f"<div>{one_line}</div>"


class _Renderer(IPythonRenderer):
    """nbconvert's renderer, except that an attachment it does not have (dropped, or never there) is an
    image with no source instead of an error that fails the whole page."""

    def _embed_image_or_attachment(self, src: str) -> str:
        if src.startswith("attachment:") and src.removeprefix("attachment:") not in self.attachments:
            return "#missing-attachment"  # not an image URL: the cleaner drops it
        return super()._embed_image_or_attachment(src)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(value):
    """`value` (a notebook, or any part of one) with every lone surrogate in a string or a key written
    out as the text `\\udcff`. A kernel's output (a repr, an exception's text) and a notebook's JSON
    (`"\\ud800"`) can carry one, but no UTF-8 file can: nbgrader then fails the whole notebook when
    it writes it, and the student scores 0 for cells that passed."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", value)
    if isinstance(value, dict):
        items = [(without_lone_surrogates(k), without_lone_surrogates(v)) for k, v in value.items()]
        value.clear()
        value.update(items)
    elif isinstance(value, list):
        value[:] = [without_lone_surrogates(v) for v in value]
    return value


def _image_attachments(attachments: dict) -> dict:
    return {name: {m: data for m, data in bundle.items() if m in IMAGE_MIMETYPES}
            for name, bundle in attachments.items()
            if isinstance(bundle, dict) and any(m in IMAGE_MIMETYPES for m in bundle)}


def clean_output_metadata(metadata: dict) -> dict:
    """Only what the templates may print: positive integer `width`/`height` and a boolean
    `unconfined`, top-level or under an image mimetype. `filenames`, `isolated`, alt text and anything
    unknown are dropped."""
    def flat(md) -> dict:
        if not isinstance(md, dict):
            return {}
        kept = {k: md[k] for k in ("width", "height") if _positive_int(md.get(k))}
        if type(md.get("unconfined")) is bool:
            kept["unconfined"] = md["unconfined"]
        return kept

    cleaned = flat(metadata)
    for mimetype in IMAGE_MIMETYPES:
        nested = flat(metadata.get(mimetype))
        if nested:
            cleaned[mimetype] = nested
    return cleaned


class SanitizeOutputs(Preprocessor):
    """Make a hand-in inert for display (see the module's docstring). The lesson's own markdown and raw
    cells, exactly as released, are left alone: the release is the instructor's."""

    safe_output_keys = Set(
        {"text/plain", "text/latex", "application/json", "image/png", "image/jpeg",
         "application/vnd.jupyter.widget-view+json"},
        help="Output mimetypes stored as they are (besides text/html and text/markdown, which are "
             "cleaned); any other is dropped.",
    ).tag(config=True)

    enabled = setting(True, "nbconvert's preprocessors are off unless enabled; this one must run.")

    def preprocess(self, nb, resources):
        without_lone_surrogates(nb)  # so that the notebook can be written at all
        nb.metadata.pop("widgets", None)  # rendered inside a <script> tag of the page
        self._released = self._released_text(resources)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        grading = cell.metadata.get("nbgrader")
        if isinstance(grading, dict) and not GRADE_ID.fullmatch(str(grading.get("grade_id", "-"))):
            del cell.metadata["nbgrader"]  # nbgrader's formgrade template prints the id unescaped
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                self._clean_output(output)
            return cell, resources
        if "attachments" in cell:
            cell.attachments = _image_attachments(cell.attachments)
            if not cell.attachments:
                del cell["attachments"]
        if cell.cell_type in ("markdown", "raw") and cell.source not in self._released:
            if cell.cell_type == "markdown":
                cell.source = markdown_as_clean_html(cell.source, cell.pop("attachments", None))
            else:
                cell.source = clean_html(cell.source)
        return cell, resources

    def _clean_output(self, output) -> None:
        if output.get("output_type") not in ("display_data", "execute_result"):
            return  # stream and error outputs are text, escaped by every template
        data = output.get("data", {})
        for key in list(data):
            value = data[key]
            if key == "text/html":
                data[key] = clean_html(_text(value))
            elif key == "text/markdown":
                data[key] = markdown_as_clean_html(_text(value))
            elif key not in self.safe_output_keys:
                del data[key]
        output["metadata"] = clean_output_metadata(output.get("metadata") or {})

    def _released_text(self, resources) -> set[str]:
        """The markdown and raw cells of the released notebook (none if it cannot be found: then every
        cell is cleaned)."""
        info = resources.get("nbgrader", {})
        assignment = info.get("assignment") or resources.get("assignment_id")  # autograde, feedback
        notebook = info.get("notebook") or resources.get("notebook_id")         # or the formgrader
        coursedir = getattr(getattr(self.parent, "parent", None), "coursedir", None)
        if coursedir is None:
            from nbgrader.coursedir import CourseDirectory

            coursedir = CourseDirectory(config=self.config)
        if not (assignment and notebook):
            return set()
        folder = coursedir.format_path(coursedir.release_directory, ".", assignment)
        try:
            nb = nbformat.read(os.path.join(folder, f"{notebook}.ipynb"), as_version=4)
        except (OSError, ValueError):
            return set()
        return {c.source for c in nb.cells if c.cell_type in ("markdown", "raw")}


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)
