"""A submission's written answers: nbgrader's manually graded markdown cells, taken by grade id.

    questions = Questions(Path("solutions/A/A.ipynb"))   # the source notebook's written questions
    for answer in questions.answers(Path("alice.ipynb")):  # one Answer per question, in the source's order
        answer.question.part, answer.question.points, answer.text, answer.html()

The question is the source notebook's text before its solution region (what the release shows
above YOUR ANSWER HERE); the answer is what the submission's cell holds after that text, or the
whole cell where the student edited the question. A cell left as released, emptied or deleted is
unanswered, and `note` says which. An answer is cut at MAX_CHARS and MAX_LINES, stripped of control and bidi
characters, and rendered as Jupyter parses markdown (math never in code nor across paragraphs, `\\$` a
dollar) with math as readable text (pylatexenc) and each image as its alt text, then cleaned like feedback
(sanitize.py): nothing in it is fetched or run where it is shown.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

import nbtest
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from pylatexenc import macrospec
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec
from pylatexenc.latex2text import get_default_latex_context_db as text_macros
from pylatexenc.latexwalker import LatexWalker
from pylatexenc.latexwalker import get_default_latex_context_db as parse_macros

from ..core.extract import NotebookError
from ..course import CourseError
from .sanitize import TAGS, clean

PLACEHOLDER = "YOUR ANSWER HERE"        # what nbgrader's release puts in a markdown solution cell
BEGIN = "### BEGIN SOLUTION"
MAX_CHARS = 20_000                      # of one answer's markdown; a page or two of prose is far less
# and of its lines: fpdf2 lays out a block per line in time that grows with their number squared, 10,000 empty
# list items over 38,000 pages in 9 minutes (red team 38); a page of prose is some 50
MAX_LINES = 400
SHORT = 90                              # characters of the question in an entry's name
ANSWER_TAGS = [t for t in TAGS if t != "img"]   # an image would be fetched from wherever the student points it
EMPTY_ITEM = re.compile(r"<li>\s*</li>\n?")
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
        self.max_bytes = nbtest.Limits(max_cell_kb).file_bytes
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
        sources: dict[str, list[str]] = {}    # a cell split in two (JupyterLab copies its metadata): both halves
        unmarked = []                          # markdown cells with no grade id: one lost its metadata?
        for cell in nb["cells"]:
            if cell.get("cell_type") == "markdown":
                source, grade_id = nbtest.cell_text(cell), nbtest.grade_id(cell)
                if grade_id is None:
                    unmarked.append(source)
                else:
                    sources.setdefault(grade_id, []).append(source)

        def lost(q: Question) -> str | None:     # a cell whose metadata a round trip dropped starts with its question
            return next((source for source in unmarked if q.prompt and source.startswith(q.prompt)), None)

        return [answer(q, "\n\n".join(sources[q.grade_id]) if q.grade_id in sources else lost(q))
                for q in self.questions]


def answer(q: Question, source: str | None) -> Answer:
    """The student's part of the cell's source (its halves joined where it was split), or why there is none."""
    if source is None:
        return Answer(q, None, "Not answered: the cell was deleted from the notebook.")
    text = source[len(q.prompt):] if source.startswith(q.prompt) else source
    text = ODD.sub("", text.encode("utf-8", "replace").decode("utf-8")).strip()
    if not text or text == PLACEHOLDER:
        return Answer(q, None, f"Not answered: the cell still holds {PLACEHOLDER}." if text else
                      "Not answered: the cell is empty.")
    cut = "\n".join(text[:MAX_CHARS].split("\n")[:MAX_LINES])
    if cut == text:
        return Answer(q, text)
    return Answer(q, cut, f"Cut at {len(cut):,} of its {len(text):,} characters ({MAX_CHARS:,} at most, in "
                          f"{MAX_LINES} lines); the notebook holds the whole answer.")


def render(markdown: str) -> str:
    """markdown as cleaned HTML with its math as text; where the renderer fails on it, the text as is."""
    try:
        rendered = MarkdownWithMath(renderer=_AnswerHTML()).render(markdown)
    except Exception:   # noqa: BLE001 - e.g. nesting deep enough to exhaust the parser: show the source instead
        rendered = f"<pre>{html.escape(markdown)}</pre>"
    # an empty list item shows nothing, and fpdf2 gives each a page or more (red team 38: 849 pages for 600)
    return EMPTY_ITEM.sub("", clean(rendered, ANSWER_TAGS))


class _AnswerHTML(IPythonRenderer):
    """nbconvert's renderer, whose parser finds math where Jupyter does, with math as text. An image is its alt
    text: never fetched, and a pasted image's attachment is not carried (nbconvert fails on it). No heading
    anchors; code blocks uncoloured, tabs as spaces; a task list's boxes as characters."""

    def __init__(self):
        super().__init__(escape=False, exclude_anchor_links=True)

    def inline_math(self, body: str) -> str:
        return _math_html(body, display=False)

    def block_math(self, body: str) -> str:
        return _math_html(body, display=True)

    def latex_environment(self, name: str, body: str) -> str:
        return _math_html(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)

    def image(self, text: str, url: str, title: str | None = None) -> str:
        return f"<em>[image{': ' + text if text.strip() else ''}]</em>"

    def block_code(self, code: str, info: str | None = None) -> str:
        return super(IPythonRenderer, self).block_code(code.expandtabs(4), info)    # mistune's, not pygments

    def task_list_item(self, text: str, checked: bool = False) -> str:
        return f"<li>{'☑' if checked else '☐'} {text}</li>\n"


def _math_html(latex: str, display: bool) -> str:
    """A formula as text in a span; a display formula's rows (\\\\ in aligned, cases, a matrix) on lines of
    their own."""
    rows = [html.escape(row) for row in math_text(latex).split("\n")]
    if display:
        return f"<span class=\"math display\">{'<br>'.join(rows)}</span>"
    return f"<span class=\"math\">{'; '.join(rows)}</span>"


# what pylatexenc drops or writes in characters DejaVu lacks: norms and logic, operator names, and letter styles
# (\\mathbf{x} in mathematical bold, outside the fonts' range), written plain
SYMBOLS = {"|": "‖", "Vert": "‖", "lVert": "‖", "rVert": "‖", "vert": "|", "lvert": "|", "rvert": "|", "mid": "|",
           "implies": " ⟹ ", "impliedby": " ⟸ ", "iff": " ⟺ ", "land": " ∧ ", "lor": " ∨ ", "neg": "¬", "lnot": "¬",
           "bmod": " mod "}
OPERATORS = ("det", "dim", "ker", "Pr", "arg", "deg", "gcd", "hom")   # kept apart from what follows as written
PLAIN_STYLES = ("mathbf", "mathit", "mathsf", "mathtt", "mathcal", "mathscr", "mathfrak", "mathrm", "boldsymbol",
                "bm", "operatorname")
LETTERLIKE = dict(zip("CHNPQRZ", "ℂℍℕℙℚℝℤ"))   # \\mathbb's letters that DejaVu has


def _latex() -> tuple[LatexNodes2Text, object]:
    """pylatexenc with \\dfrac and \\tfrac as fractions, braces kept where they group (x_{l+1}), and SYMBOLS,
    OPERATORS, PLAIN_STYLES, \\mathbb, \\binom, \\pmod and \\sqrt[n] in characters the PDFs' fonts have."""
    fractions = ("frac", "dfrac", "tfrac")
    arg = lambda node, l2tobj, i=0: l2tobj.node_arg_to_text(node, i)
    root = lambda node, l2tobj: (f"({arg(node, l2tobj, 1)})^(1/{arg(node, l2tobj)})" if node.nodeargd.argnlist[0]
                                 else f"√({arg(node, l2tobj, 1)})")
    words = text_macros()
    words.add_context_category("course", prepend=True, macros=[
        *(MacroTextSpec(f, simplify_repl=_given("({})/({})")) for f in fractions),
        *(MacroTextSpec(name, simplify_repl=text) for name, text in SYMBOLS.items()),
        *(MacroTextSpec(name, simplify_repl=lambda node: node.macroname + (" " if node.macro_post_space else ""))
          for name in OPERATORS),
        *(MacroTextSpec(style, simplify_repl=arg) for style in PLAIN_STYLES),
        MacroTextSpec("mathbb", simplify_repl=lambda node, l2tobj: "".join(
            LETTERLIKE.get(c, c) for c in arg(node, l2tobj))),
        MacroTextSpec("binom", simplify_repl=_given("({} choose {})")),
        MacroTextSpec("pmod", simplify_repl=_given(" (mod {})")),
        MacroTextSpec("sqrt", simplify_repl=_given(root))])
    parse = parse_macros()
    parse.add_context_category("course", prepend=True, macros=[
        *(macrospec.std_macro(f, False, 2) for f in fractions), macrospec.std_macro("binom", False, 2),
        *(macrospec.std_macro(name, False, 1) for name in ("operatorname", "boldsymbol", "bm", "pmod"))])
    return LatexNodes2Text(latex_context=words, math_mode="text", keep_braced_groups=True), parse


def _given(form):
    """A macro's text: form (a str) filled with its arguments' text, or form(node, l2tobj); the macro as written
    where the formula ends before its last argument (\\frac{a), as MathJax shows it."""
    def fill(node, l2tobj):
        args = node.nodeargd.argnlist if node.nodeargd else []
        if not args or args[-1] is None:
            return node.latex_verbatim()
        if callable(form):
            return form(node, l2tobj)
        return form.format(*(l2tobj.node_arg_to_text(node, i) for i in range(len(args))))
    return fill


_TO_TEXT, _PARSE = _latex()


def math_text(latex: str) -> str:
    """A formula as readable text: \\partial L/\\partial x_0 -> ∂L/∂x_0, a prime as ′, the rows of an aligned,
    a cases or a matrix on lines of their own. A formula pylatexenc cannot read, with unbalanced braces (cut
    short: MathJax refuses it too) or over MAX_MATH characters, stays as written."""
    braces = latex.replace("\\{", "").replace("\\}", "")
    if len(latex) > MAX_MATH or braces.count("{") != braces.count("}"):
        return latex
    try:
        nodes = LatexWalker(latex.replace("'", "′"), latex_context=_PARSE, tolerant_parsing=True).get_latex_nodes()[0]
        rows = (" ".join(row.split()) for row in _TO_TEXT.nodelist_to_text(nodes).split("\n"))
        return "\n".join(row for row in rows if row) or latex
    except Exception:   # noqa: BLE001 - a parser's failure on odd input keeps the source, as MathJax would
        return latex
