"""A submission's written answers: nbgrader's manually graded markdown cells, taken by grade id.

    questions = Questions(Path("solutions/A/A.ipynb"))   # the source notebook's written questions
    for answer in questions.answers(Path("alice.ipynb")):  # one Answer per question, in the source's order
        answer.question.part, answer.question.points, answer.text, answer.html()

The question is the source notebook's text before its solution region (what the release shows
above YOUR ANSWER HERE); the answer is what the submission's cell holds after that text, or the
whole cell where the student edited the question. A cell left as released, emptied or deleted is
unanswered, and `note` says which. An answer is cut at MAX_CHARS, stripped of control and bidi
characters, and rendered with math as readable text (pylatexenc) and cleaned like feedback
(sanitize.py), without images: nothing in it is fetched or run where it is shown.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

import nbtest
from nbconvert.filters.markdown import markdown2html
from pylatexenc import macrospec
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec
from pylatexenc.latex2text import get_default_latex_context_db as text_macros
from pylatexenc.latexwalker import LatexWalker
from pylatexenc.latexwalker import get_default_latex_context_db as parse_macros

from ..core.extract import FILE_CELLS, NotebookError
from ..course import CourseError
from .sanitize import TAGS, clean

PLACEHOLDER = "YOUR ANSWER HERE"        # what nbgrader's release puts in a markdown solution cell
BEGIN = "### BEGIN SOLUTION"
MAX_CHARS = 20_000                      # of one answer's markdown; a page or two of prose is far less
SHORT = 90                              # characters of the question in an entry's name
ANSWER_TAGS = [t for t in TAGS if t != "img"]   # an image would be fetched from wherever the student points it
# C0 and C1 controls but tab and newline, and the bidi overrides that can make text read other than it is stored
ODD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$]+?)\$", re.S)
MAX_MATH = 2000                         # characters of one formula turned into text; a longer one stays LaTeX


@dataclass(frozen=True)
class Question:
    grade_id: str
    part: int
    points: float
    prompt: str     # the question's markdown, as released

    @property
    def short(self) -> str:
        """The prompt's first sentence after its "**Written (N points).**" label, math as text, cut to SHORT."""
        text = re.sub(r"[*`#]", "", re.sub(r"^\s*\*\*[^*]*\*\*\s*", "", self.prompt))
        text = " ".join(MATH.sub(lambda m: math_text(m.group(1) or m.group(2)), text).split())
        first = re.match(r".+?[.?!](?=\s|$)", text)
        text = first.group(0) if first else text
        return text if len(text) <= SHORT else text[:SHORT - 1].rstrip() + "…"


@dataclass(frozen=True)
class Answer:
    question: Question
    text: str | None    # the student's markdown, cleaned and cut; None: not answered
    note: str = ""      # why there is no answer, or that it was cut

    def html(self) -> str:
        """The answer rendered and cleaned; for no answer, the note."""
        if self.text is None:
            return f"<p><em>{html.escape(self.note)}</em></p>"
        body = render(self.text)
        return body + (f"<p><em>{html.escape(self.note)}</em></p>" if self.note else "")


class Questions:
    """The written questions of an assignment's source notebook (nbgrader: grade and solution, markdown)."""

    def __init__(self, source: Path, max_cell_kb: int = 512, points: dict[str, float] | None = None):
        """points: {grade_id: points}, course.toml's (Assignment.cell_points); else the notebook's own."""
        self.max_bytes = FILE_CELLS * max_cell_kb << 10
        self.questions: list[Question] = []
        for cell in nbtest.read_notebook(source)["cells"]:
            meta = nbtest.nbgrader_meta(cell)
            if cell.get("cell_type") != "markdown" or not (meta.get("grade") and meta.get("solution")):
                continue
            part = re.match(r"part(\d+)-", meta.get("grade_id") or "")
            if not part:
                raise CourseError(f"{source}: written-answer cell {meta.get('grade_id')!r} has no grade id "
                                  "partN-...; name it for its part (part2-written)")
            prompt = "".join(cell["source"]).split(BEGIN)[0].rstrip()
            self.questions.append(Question(meta["grade_id"], int(part.group(1)),
                                           (points or {}).get(meta["grade_id"], meta.get("points", 0)), prompt))

    def answers(self, submission: Path) -> list[Answer]:
        """One Answer per question; where the file is no readable notebook, each says why."""
        try:
            nb = nbtest.read_notebook(submission, self.max_bytes)
        except NotebookError as e:
            return [Answer(q, None, f"Not read: {e}") for q in self.questions]
        cells = {}
        for cell in nb["cells"]:
            if cell.get("cell_type") == "markdown" and nbtest.grade_id(cell) is not None:
                cells.setdefault(nbtest.grade_id(cell), cell)
        return [answer(q, cells.get(q.grade_id)) for q in self.questions]


def answer(q: Question, cell: dict | None) -> Answer:
    """The student's part of the cell, or why there is none."""
    if cell is None:
        return Answer(q, None, "Not answered: the cell was deleted from the notebook.")
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else source
    text = source[len(q.prompt):] if source.startswith(q.prompt) else source
    text = ODD.sub("", text.encode("utf-8", "replace").decode("utf-8")).strip()
    if not text or text == PLACEHOLDER:
        return Answer(q, None, f"Not answered: the cell still holds {PLACEHOLDER}." if text else
                      "Not answered: the cell is empty.")
    if len(text) > MAX_CHARS:
        return Answer(q, text[:MAX_CHARS], f"Cut at {MAX_CHARS:,} of its {len(text):,} characters; "
                                           "the notebook holds the whole answer.")
    return Answer(q, text)


def render(markdown: str) -> str:
    """markdown as cleaned HTML with its math as text; where the renderer fails on it, the text as is."""
    try:
        rendered = markdown2html(markdown)
    except Exception:   # noqa: BLE001 - e.g. nesting deep enough to exhaust the parser: show the source instead
        rendered = f"<pre>{html.escape(markdown)}</pre>"
    return clean(MATH.sub(_math_html, rendered), ANSWER_TAGS)


def _math_html(m: re.Match) -> str:
    display = m.group(1) is not None
    text = html.escape(math_text(html.unescape(m.group(1) if display else m.group(2))))
    return f"<span class=\"math display\">{text}</span>" if display else f"<span class=\"math\">{text}</span>"


def _latex() -> tuple[LatexNodes2Text, object]:
    """pylatexenc with \\dfrac and \\tfrac as fractions and braces kept where they group (x_{l+1})."""
    fractions = ("frac", "dfrac", "tfrac")
    words = text_macros()
    words.add_context_category("course", prepend=True,
                               macros=[MacroTextSpec(f, simplify_repl="(%s)/(%s)") for f in fractions])
    parse = parse_macros()
    parse.add_context_category("course", prepend=True, macros=[macrospec.std_macro(f, False, 2) for f in fractions])
    return LatexNodes2Text(latex_context=words, math_mode="text", keep_braced_groups=True), parse


_TO_TEXT, _PARSE = _latex()


def math_text(latex: str) -> str:
    """A formula as readable text: \\partial L/\\partial x_0 -> ∂L/∂x_0. A formula pylatexenc cannot
    read, or over MAX_MATH characters, stays as written."""
    if len(latex) > MAX_MATH:
        return latex
    try:
        nodes = LatexWalker(latex, latex_context=_PARSE, tolerant_parsing=True).get_latex_nodes()[0]
        return " ".join(_TO_TEXT.nodelist_to_text(nodes).split()) or latex
    except Exception:   # noqa: BLE001 - a parser's failure on odd input keeps the source, as MathJax would
        return latex
