"""grader/heads_html.py without a browser (the fast tier): URLs, output metadata, student markdown.
tests/grader/test_formgrader_xss.py runs the same placements through the grader and Chromium."""
from __future__ import annotations

import nbformat
import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from heads_html import SanitizeOutputs, clean_html, clean_output_metadata, markdown_as_clean_html, safe_url

UNSAFE_URLS = ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)", " javascript:x",
               "\x01javascript:x", "vbscript:msgbox", "data:text/html;base64,PHNjcmlwdD4=", "file:///etc/passwd",
               "foo:bar", "/api/terminals", "../../files/x.html", "//evil.example/x"]


@pytest.mark.parametrize("url", UNSAFE_URLS)
def test_a_link_or_image_may_not_point_anywhere_but_the_web(url):
    assert not safe_url(url) and not safe_url(url, image=True)


@pytest.mark.parametrize("url, image", [("https://example.org/a?b=c", False), ("http://x", False),
                                        ("mailto:a@b.org", False), ("#section", False),
                                        ("data:image/png;base64,iVBORw0KGgo=", True),
                                        ("data:image/jpeg;base64,/9j/", True), ("https://x/p.png", True)])
def test_web_links_fragments_and_embedded_images_are_kept(url, image):
    assert safe_url(url, image=image)


def test_only_images_may_be_embedded_data():
    assert not safe_url("data:image/png;base64,iVBORw0KGgo=")  # a link to data: opens a document
    assert not safe_url("data:image/svg+xml;base64,PHN2Zz4=", image=True)


def test_output_metadata_keeps_integer_sizes_and_the_unconfined_flag_only():
    payload = "1 onerror=alert(1)"
    metadata = {"width": payload, "height": 40, "unconfined": True, "alt": payload, "isolated": True,
                "filenames": {"image/png": payload}, "needs_background": payload, "custom": {"a": 1},
                "image/png": {"width": 30, "height": payload, "unconfined": "yes"},
                "image/jpeg": {"height": True}, "text/html": {"isolated": True}}
    assert clean_output_metadata(metadata) == {"height": 40, "unconfined": True, "image/png": {"width": 30}}
    assert clean_output_metadata({"width": -3, "height": 10**9}) == {}


LINKS = ["[x](javascript:alert(1))", "[x][r]\n\n[r]: javascript:alert(1)", "<javascript:alert(1)>",
         "[x](java&#09;script:alert(1))", "[x](vbscript:x)", "[x](data:text/html,<script>x</script>)",
         '<a href="javascript:alert(1)">x</a>', "![x](javascript:alert(1))"]


@pytest.mark.parametrize("markdown", LINKS)
def test_markdown_links_lose_script_urls(markdown):
    html = markdown_as_clean_html(markdown)
    assert not any(f'{attr}="{scheme}' in html.lower() for attr in ("href", "src")
                   for scheme in ("javascript", "vbscript", "data:text"))


@pytest.mark.parametrize("markdown", [*LINKS, "```\n[x](javascript:alert(1))\n\n\n[y](javascript:1)\n```",
                                      "<div>\n\n[x](javascript:1)\n\n</div>", "a\n\n| t | u |\n|---|---|\n| 1 | 2 |"])
def test_cleaned_markdown_renders_again_unchanged(markdown):
    """Stored as one HTML line, it passes through the formgrader's own markdown renderer as it is:
    escaped text can never become a link there."""
    html = markdown_as_clean_html(markdown)
    assert "\n" not in html
    assert markdown2html_mistune(html).strip() == html


def test_html_keeps_text_and_safe_structure():
    html = clean_html('<p onclick="x">ok <b>bold</b><script>bad()</script><img src="x" onerror="y">'
                      '<a href="https://example.org" style="x">web</a></p>'
                      '<table><tr><td colspan="2 onx=1">c</td><td rowspan="2">d</td></tr></table>')
    assert html == ('<p>ok <b>bold</b>&lt;script&gt;bad()&lt;/script&gt;<img>'
                    '<a href="https://example.org">web</a></p>'
                    '<table><tbody><tr><td>c</td><td rowspan="2">d</td></tr></tbody></table>')


def test_a_missing_or_dropped_attachment_costs_only_its_image():
    html = markdown_as_clean_html("text ![a](attachment:page.html)",
                                  {"page.html": {"text/html": "PHNjcmlwdD4="}})
    assert html == '<div><p>text <img alt="a"></p>&#10;</div>'


def test_the_released_cells_are_left_alone_and_the_students_are_cleaned():
    released = nbformat.v4.new_markdown_cell("[lesson](https://example.org) <b>as released</b>")
    student = nbformat.v4.new_markdown_cell("[mine](javascript:alert(1))")
    student.attachments = {"a.svg": {"image/svg+xml": "PHN2Zz4="}, "p.png": {"image/png": "iVBOR"}}
    raw = nbformat.v4.new_raw_cell('<img src=x onerror="y">')
    code = nbformat.v4.new_code_cell("x")
    code.outputs = [nbformat.v4.new_output("display_data", data={
        "text/html": '<img src=x onerror="y">', "application/javascript": "x", "image/svg+xml": "<svg/>",
        "text/plain": "p"}, metadata={"width": "1 onerror=y"})]
    nb = nbformat.v4.new_notebook(cells=[released, student, raw, code], metadata={"widgets": {"x": 1}})
    cleaner = SanitizeOutputs()
    cleaner._released_text = lambda resources: {released.source}
    nb, _ = cleaner.preprocess(nb, {})
    assert nb.cells[0].source == released.source
    assert nb.cells[1].source == '<div><p><a href="#harmful-link">mine</a></p>&#10;</div>' and "attachments" not in nb.cells[1]
    assert nb.cells[2].source == "<img>"
    assert nb.cells[3].outputs[0].data == {"text/html": "<img>", "text/plain": "p"}
    assert nb.cells[3].outputs[0].metadata == {} and "widgets" not in nb.metadata


def test_unchanged_cells_keep_only_raster_attachments():
    cell = nbformat.v4.new_markdown_cell("![p](attachment:p.png)")
    cell.attachments = {"p.png": {"image/png": "iVBOR", "image/svg+xml": "PHN2Zz4="}, "s.svg": {"image/svg+xml": "x"}}
    nb = nbformat.v4.new_notebook(cells=[cell])
    cleaner = SanitizeOutputs()
    cleaner._released_text = lambda resources: {cell.source}
    nb, _ = cleaner.preprocess(nb, {})
    assert nb.cells[0].attachments == {"p.png": {"image/png": "iVBOR"}}


def test_a_grade_id_that_is_not_a_plain_name_loses_its_nbgrader_metadata():
    cells = [nbformat.v4.new_code_cell("x"), nbformat.v4.new_code_cell("y")]
    cells[0].metadata["nbgrader"] = {"grade": True, "grade_id": 'x"><img src=x onerror=alert(1)>'}
    cells[1].metadata["nbgrader"] = {"grade": True, "grade_id": "test_padding_mask"}
    nb, _ = SanitizeOutputs().preprocess(nbformat.v4.new_notebook(cells=cells), {})
    assert "nbgrader" not in nb.cells[0].metadata and nb.cells[1].metadata["nbgrader"]["grade"]


def test_a_lone_surrogate_is_written_out_as_text_so_the_notebook_can_be_saved():
    """A kernel's exception text with a lone surrogate (a red team's S1) made nbgrader fail writing the
    notebook, and the student scored 0; escaped, the notebook is written and reads the same."""
    error = nbformat.v4.new_output("error", ename="ValueError", evalue="boom \udcff", traceback=["at \ud800 x"])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("f()", outputs=[error])])
    nb.metadata["key \udfff"] = "value"
    with pytest.raises(UnicodeEncodeError):
        nbformat.writes(nb).encode("utf-8")
    nb, _ = SanitizeOutputs().preprocess(nb, {})
    saved = nbformat.reads(nbformat.writes(nb).encode("utf-8").decode("utf-8"), as_version=4)
    assert saved.cells[0].outputs[0].evalue == "boom \\udcff"
    assert saved.cells[0].outputs[0].traceback == ["at \\ud800 x"] and saved.metadata["key \\udfff"] == "value"
