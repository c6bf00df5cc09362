"""Feedback pages and the formgrader show their maths offline: MathML, which a browser lays out itself,
in place of TeX left for MathJax (a script from a CDN, which the grading server's CSP blocks too)."""
import nbformat
from nbconvert import HTMLExporter
from traitlets.config import Config

from heads_feedback import markdown2html

PROSE = r"""An untrained head gives each class $1/K$, so its loss is $-\ln(1/K) = \ln K$:

$$\frac{\partial L}{\partial z} = \hat p - y$$

\begin{equation}\sum_i \hat p_i = 1\end{equation}

and a macro the converter does not know is shown by its name: $\foo{K}$."""


def page(source: str) -> str:
    config = Config()
    config.HTMLExporter.filters = {"markdown2html": markdown2html}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source)])
    return HTMLExporter(config=config, template_name="classic").from_notebook_node(nb)[0]


def test_maths_becomes_mathml_and_no_tex_is_left_for_mathjax():
    html = page(PROSE)
    body = html[html.index("<body"):]
    assert body.count("<math ") == 5, body
    assert 'display="block"' in body and "<mfrac>" in body
    for tex in (r"\ln", r"\frac", r"\hat", r"\sum", "$$"):
        assert tex not in body, f"{tex} was left as TeX"


def test_tex_the_converter_cannot_read_is_shown_as_its_source_and_html_in_tex_stays_text():
    body = page(r"see $\begin{foo}x$ and $<b>x</b>$")
    assert r"$\begin{foo}x$" in body and "<b>" not in body and "&lt;" in body
