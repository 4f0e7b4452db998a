"""A student's markdown as HTML without their script: feedback pages' markdown cells, and written answers.

nbgrader's feedback template renders markdown cells itself (markdown2html, no cleaning),
so nbconvert's sanitize_html misses them, and escaping the markdown source still lets
[text](javascript:...) become a live link. Here each markdown cell is rendered to HTML and
cleaned by bleach (allowed tags only, no event attributes, links only to http, https and
mailto), as one HTML block that the template's own rendering passes through unchanged.
Outputs are cleaned by nbconvert's SanitizeHTML, which nbgrader_config.py runs after this.
"""
from __future__ import annotations

import re

import bleach
from nbconvert.filters.markdown import markdown2html
from nbconvert.preprocessors import Preprocessor

TAGS = [*bleach.ALLOWED_TAGS, "p", "div", "span", "pre", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6",
        "table", "thead", "tbody", "tr", "th", "td", "sub", "sup", "del", "img", "u", "s", "mark", "kbd", "small",
        "details", "summary", "dl", "dt", "dd"]
ATTRIBUTES = {**bleach.ALLOWED_ATTRIBUTES, "*": ["class", "id"], "img": ["src", "alt"], "ol": ["start"]}


def clean(html: str, tags: list[str] = TAGS) -> str:
    """html with only the allowed tags and attributes (the others' text escaped), links only to http,
    https and mailto."""
    return bleach.clean(html, tags=tags, attributes=ATTRIBUTES)


class SanitizeMarkdown(Preprocessor):
    """Replace each markdown cell's source by its rendered, cleaned HTML."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            html = clean(markdown2html(cell.source))
            # one HTML block for the template's markdown2html, passed through as is: a blank line
            # would end it and render what follows as markdown again (a javascript: link, say)
            cell.source = "<div>\n" + re.sub(r"\n\s*\n", "\n&#10;\n", html.strip()) + "\n</div>"
        return cell, resources
