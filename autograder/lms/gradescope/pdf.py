"""Written answers as one PDF per submission, for a Gradescope PDF assignment (docs/gradescope.md).

    pages = write_pdf(questions.answers(notebook), Path("out/alice.pdf"), "residual-connections: alice")
    written, failed = write_folder(questions, Path("submissions/"), Path("dist/answers/A"), "A")

Each question starts a page: its part and points, the question as released, then the answer
rendered as in results.json (nbgrading/answers.py: markdown, math as text, images as their alt text, cleaned)
through fpdf2's HTML subset, in DejaVu fonts: matplotlib's copies, so any machine with the
project's dependencies has them. A link within the page (`[see above](#derivation)`), or one whose target
the cleaning dropped, leads nowhere in the PDF: its text stays, the link goes (fpdf2 refuses a named
destination it was never given, and a link with no target). A table cell that mixes text and tags is written as its text, which fpdf2 lays out. Where fpdf2
cannot lay an answer out, its text follows as written; where it cannot write the file
at all, every answer does (`tests/test_answers.py` fuzzes it with generated markdown).
"""
from __future__ import annotations

import logging
import re
from contextvars import ContextVar
from pathlib import Path

import matplotlib
from fpdf import FPDF
from fpdf.fonts import FontFace
from fpdf.html import DEFAULT_TAG_STYLES

from ...grading.batch import notebooks
from ...nbgrading.answers import Answer, Questions, render
from ...results.terminal import shown

FONTS = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
FACES = {"": "", "B": "-Bold", "I": "-Oblique", "BI": "-BoldOblique"}
SANS, MONO = "DejaVuSans", "DejaVuSansMono"
# inline code and code blocks in the monospaced face, fpdf2's own styles otherwise
CODE_STYLES = {"code": FontFace(family=MONO), "pre": DEFAULT_TAG_STYLES["pre"].replace(font_family=MONO)}
# in the cleaned HTML (attributes double-quoted): a link to "#..." or to nowhere (bleach drops a javascript: href)
NOWHERE = re.compile(r'<a\b(?![^>]*\bhref="[^#"])[^>]*>(.*?)</a>', re.S)
# a table's cell, and what fpdf2 lays out inside one: text, or text in one inline tag (**bold** alone)
CELL = re.compile(r"(<t[dh]\b[^>]*>)(.*?)(</t[dh]>)", re.S)
# (matched on the stripped text: \s* around [^<]* backtracked in cubic time over a cell of spaces, red team 37)
ONE_TAG = re.compile(r"[^<]*|<(\w+)\b[^>]*>[^<]*</\1>", re.S)
# the blocks fpdf2 lays out one after another, each time laying out again those before it in time that grows with
# their number squared: 4,985 <hr> on one line of an answer took 25 s and 72 pages (red team 39); more than
# MAX_BLOCKS in one answer, which no page of prose comes near, and its text is written as it is
BLOCK = re.compile(r"<(?:p|hr|br|li|tr|h[1-6]|pre|blockquote|div|table|ul|ol|dl|dt|dd)\b", re.I)
MAX_BLOCKS = 400


_WRITING: ContextVar[str] = ContextVar("writing", default="")   # the PDF being written, for fpdf2's warnings


def _as_text(record: logging.LogRecord) -> bool:
    """fpdf2's warnings name the characters a font lacks, a student's among them: written as text
    (results/terminal.py), after the PDF they concern, one of a class's."""
    where = _WRITING.get()
    record.msg, record.args = shown(f"{where}: " * bool(where) + record.getMessage()), ()
    return True


logging.getLogger("fpdf.output").addFilter(_as_text)


def write_pdf(answers: list[Answer], path: Path, title: str) -> int:
    """Write the answers to path; returns its number of pages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writing = _WRITING.set(str(path))
    try:
        pdf = _layout(answers, title, rendered=True)
        pdf.output(str(path))
    except Exception:   # noqa: BLE001 - what fpdf2 accepted on the page but cannot write out: all as text
        pdf = _layout(answers, title, rendered=False)
        pdf.output(str(path))
    finally:
        _WRITING.reset(writing)
    return pdf.pages_count


def _layout(answers: list[Answer], title: str, rendered: bool) -> FPDF:
    """The pages: each answer rendered through fpdf2's HTML subset, or (rendered=False) as its text."""
    pdf = FPDF(format="A4")
    pdf.set_title(title)
    pdf.set_creator("python -m autograder answers")
    for family in (SANS, MONO):
        for style, suffix in FACES.items():
            pdf.add_font(family, style, FONTS / f"{family}{suffix}.ttf")
    pdf.set_auto_page_break(True, margin=15)
    for a in answers:
        q = a.question
        pdf.add_page()
        pdf.set_font(SANS, "", 8)
        pdf.cell(0, 5, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font(SANS, "B", 13)
        pdf.cell(0, 8, f"Part {q.part}: written answer ({q.points:g} points)", new_x="LMARGIN", new_y="NEXT")
        _html(pdf, render(q.prompt) if rendered else None, q.prompt, size=9)
        pdf.set_draw_color(160)
        pdf.line(pdf.l_margin, pdf.get_y() + 1, pdf.w - pdf.r_margin, pdf.get_y() + 1)
        pdf.ln(3)
        pdf.set_font(SANS, "B", 11)
        pdf.cell(0, 7, "Answer", new_x="LMARGIN", new_y="NEXT")
        _html(pdf, a.html() if rendered else None, "\n\n".join(filter(None, [a.text, a.note])), size=11)
    return pdf


def _html(pdf: FPDF, rendered: str | None, text: str, size: int) -> None:
    """rendered through fpdf2's HTML subset, links to nowhere and mixed table cells as their text; where fpdf2
    fails on it, or it has more than MAX_BLOCKS blocks (or for None), the text, whole."""
    pdf.set_font(SANS, "", size)
    blocks = len(BLOCK.findall(rendered)) if rendered is not None else 0
    if rendered is not None and blocks <= MAX_BLOCKS:
        try:
            pdf.write_html(CELL.sub(_cell_as_text, NOWHERE.sub(r"\1", rendered)), font_family=SANS, tag_styles=CODE_STYLES)
            return
        except Exception:   # noqa: BLE001 - a student's markup fpdf2 cannot lay out (odd tables, say)
            pass
    pdf.set_font(SANS, "I", size)
    why = f"it has more than {MAX_BLOCKS} paragraphs, rules and items" if blocks > MAX_BLOCKS else \
        "fpdf2 could not lay this answer out"
    pdf.multi_cell(0, size * 0.5, f"({why}; here it is as written:)", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(SANS, "", size)
    pdf.multi_cell(0, size * 0.5, text)


def _cell_as_text(cell: re.Match) -> str:
    """A table cell as fpdf2 can lay it out: one that mixes text and tags (`**clean** path`, `a<br>b`) as its
    text, where fpdf2 refuses the whole table."""
    inner = cell[2]
    if not ONE_TAG.fullmatch(inner.strip()):
        inner = re.sub(r"<[^>]*>", "", re.sub(r"<br\s*/?>", " ", inner))
    return cell[1] + inner + cell[3]


def write_folder(questions: Questions, folder: Path, out: Path, assignment: str) -> tuple[dict[Path, int], dict[Path, str]]:
    """A PDF per notebook under folder, at the same relative path under out: ({pdf: pages}, {notebook: why not})."""
    written, failed = {}, {}
    for nb in notebooks([folder]):
        rel = nb.relative_to(folder)
        target = out / rel.with_suffix(".pdf")
        try:
            written[target] = write_pdf(questions.answers(nb), target, f"{assignment}: {rel.with_suffix('')}")
        except Exception as e:   # noqa: BLE001 - one notebook never stops the others
            failed[nb] = f"{type(e).__name__}: {e}"
    return written, failed
