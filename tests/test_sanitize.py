"""Feedback HTML: a student's markdown and outputs reach the page as text, never as script."""
import nbformat
from nbconvert.filters.markdown import markdown2html
from nbconvert.preprocessors.sanitize import SanitizeHTML
from traitlets.config import Config

from autograder.nbgrading.sanitize import ATTRIBUTES, TAGS, SanitizeMarkdown


def rendered(cells):
    """Each cell as nbgrader's feedback page shows it, after the preprocessors nbgrader_config.py sets."""
    nb = nbformat.v4.new_notebook(cells=cells)
    config = Config()
    config.SanitizeHTML.tags, config.SanitizeHTML.attributes = TAGS, ATTRIBUTES
    nb, _ = SanitizeMarkdown(config=config).preprocess(nb, {})
    nb, _ = SanitizeHTML(config=config).preprocess(nb, {})
    return [markdown2html(c.source) if c.cell_type == "markdown" else c.outputs for c in nb.cells]


def test_a_students_script_is_shown_as_text():
    page, outputs = rendered([
        nbformat.v4.new_markdown_cell('<script>alert("x")</script> <img src=x onerror="alert(2)">\n\n'
                                      '[link](javascript:alert(3))'),
        nbformat.v4.new_code_cell("1", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/html": "<script>alert(4)</script>", "application/javascript": "alert(5)"})])])
    assert "&lt;script&gt;" in page and "<script" not in page
    assert "onerror" not in page.replace('onerror="alert(2)"&gt;', "")   # only inside the escaped text
    assert "javascript:" not in page
    assert outputs[0]["data"] == {"text/html": "&lt;script&gt;alert(4)&lt;/script&gt;"}


def test_course_markdown_keeps_its_formatting():
    (page,) = rendered([nbformat.v4.new_markdown_cell(
        "# Part 1\n\nCompute $a < b$ with **care**, see [the docs](https://pytorch.org).\n\n```\nx = 1\n\ny = 2\n```")])
    assert '<h1 id="Part-1">' in page and "<strong>care</strong>" in page
    assert '<a href="https://pytorch.org">the docs</a>' in page and "$a &lt; b$" in page
    assert "<pre><code>x = 1\n&#10;\ny = 2" in page
