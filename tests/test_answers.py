"""Written answers: taken from a notebook by grade id, rendered and cleaned, as results.json entries
and as one PDF per submission (`python -m autograder answers`)."""
import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from pypdf import PdfReader

from autograder.lms.gradescope.pdf import MAX_BLOCKS, write_pdf
from autograder.lms.gradescope.results import to_gradescope
from autograder.nbgrading import answers as written
from autograder.nbgrading.answers import MAX_CHARS, MAX_LINES, PLACEHOLDER, Answer, Questions, math_text, render
from autograder.results.result import Result
from autograder.results.result import TestResult as Entry   # not collected as a test class
from helpers import COURSE, ROOT, cli, sample_generator
import honest_markdown

ASSIGNMENT = "residual-connections"
SAMPLES = ROOT / "submissions" / ASSIGNMENT
QUESTIONS = Questions(COURSE.assignment(ASSIGNMENT).notebook_path(ROOT / "solutions"))
WRITTEN = sample_generator(ASSIGNMENT).WRITTEN      # sample -> {grade id: the answer its notebook holds}
SCHEMA = Draft202012Validator(json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text()))
HOSTILE = ('A [link](javascript:alert(1)) and an image ![secret](/etc/passwd).\n\n'
           '<script>alert("x")</script> <img src="https://tracker.example/p.png" onerror="alert(2)">\n\n'
           "Plain text with \u202eevil\u202c bidi, a NUL\x00, a bell\x07, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and $\\dfrac{a}{b}$.\n\n"
           + "> " * 3000 + "deep\n\n" + "$" + "{" * 5000 + "$\n\n" + "A long answer. " * 100_000)


def words(markdown: str) -> list[str]:
    """The answer's plain words of 6 letters or more, outside its math: what any rendering keeps."""
    return re.findall(r"[A-Za-z]{6,}", re.sub(r"\$[^$]*\$", " ", markdown))


def hostile_notebook(tmp_path: Path) -> Path:
    nb = json.loads((SAMPLES / "untouched-release.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "part2-written":
            cell["source"] = "".join(cell["source"]).replace(PLACEHOLDER, HOSTILE)
    path = tmp_path / "hostile.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_questions_are_the_source_notebooks_written_cells_with_course_toml_points():
    for a in COURSE.assignments.values():
        questions = Questions(a.notebook_path(ROOT / "solutions")).questions
        assert {q.part: q.points for q in questions} == a.manual, a.name
        assert all(PLACEHOLDER not in q.prompt and "BEGIN SOLUTION" not in q.prompt for q in questions)
    q = QUESTIONS.questions[0]
    assert q.short.startswith("Derive (∂L)/(∂x_0) = ") and len(q.short) <= 90


def test_every_sample_with_written_answers_gives_the_students_text():
    assert len(WRITTEN) >= 4
    for sample, given in WRITTEN.items():
        answers = {a.question.grade_id: a for a in QUESTIONS.answers(SAMPLES / f"{sample}.ipynb")}
        assert list(answers) == [q.grade_id for q in QUESTIONS.questions]
        for grade_id, a in answers.items():
            if grade_id in given:
                assert a.text == given[grade_id].strip() and not a.note
                page = a.html()
                assert all(w in page for w in words(given[grade_id])), (sample, grade_id)
            else:
                assert a.text is None and a.note == f"Not answered: the cell still holds {PLACEHOLDER}."


def test_unanswered_deleted_and_unreadable(tmp_path):
    nb = json.loads((SAMPLES / "full-marks.ipynb").read_text())
    nb["cells"] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != "part3-written"]
    for c in nb["cells"]:
        if c["metadata"].get("nbgrader", {}).get("grade_id") == "part4-written":
            c["source"] = ""
    (tmp_path / "edited.ipynb").write_text(json.dumps(nb))
    notes = {a.question.grade_id: a.note for a in QUESTIONS.answers(tmp_path / "edited.ipynb")}
    assert notes["part3-written"] == "Not answered: the cell was deleted from the notebook."
    assert notes["part4-written"] == "Not answered: the cell is empty."
    unreadable = QUESTIONS.answers(SAMPLES / "invalid-json.ipynb")
    assert all(a.text is None and a.note.startswith("Not read: invalid-json.ipynb is not a readable notebook")
               for a in unreadable)
    assert "Not read: invalid-json.ipynb" in unreadable[0].html()


def test_a_written_answer_split_in_two_is_shown_whole(tmp_path):
    """JupyterLab's Split Cell copies the cell's metadata to both halves: the answer is both, in order."""
    nb = json.loads((SAMPLES / "full-marks.ipynb").read_text())
    at = next(i for i, c in enumerate(nb["cells"])
              if c["metadata"].get("nbgrader", {}).get("grade_id") == "part2-written")
    nb["cells"].insert(at + 1, {**nb["cells"][at], "id": "half", "source": "A second thought."})
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    whole = QUESTIONS.answers(SAMPLES / "full-marks.ipynb")[0].text
    assert QUESTIONS.answers(tmp_path / "nb.ipynb")[0].text == whole + "\n\nA second thought."


def test_a_written_answer_whose_cell_lost_its_metadata_is_found_by_its_question(tmp_path):
    """A round trip that keeps no cell metadata leaves no grade id: the cell that starts with the question as
    released is the answer; a question whose cell is gone, or was rewritten with the metadata lost, is not."""
    nb = json.loads((SAMPLES / "full-marks.ipynb").read_text())
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in ("part2-written", "part3-written"):
            cell["metadata"] = {}
            if grade_id == "part3-written":
                cell["source"] = "My own words."
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    got, want = QUESTIONS.answers(tmp_path / "nb.ipynb"), QUESTIONS.answers(SAMPLES / "full-marks.ipynb")
    assert got[0] == want[0] and got[2:] == want[2:]
    assert got[1].note == "Not answered: the cell was deleted from the notebook."


def test_an_answer_that_rewrites_the_question_is_shown_whole(tmp_path):
    nb = json.loads((SAMPLES / "untouched-release.ipynb").read_text())
    for c in nb["cells"]:
        if c["metadata"].get("nbgrader", {}).get("grade_id") == "part3-written":
            c["source"] = "My own heading\n\nIt decays geometrically."
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    a = QUESTIONS.answers(tmp_path / "nb.ipynb")[1]
    assert a.text == "My own heading\n\nIt decays geometrically."


def test_an_answer_of_many_lines_is_cut_and_its_empty_items_dropped():
    """fpdf2 lays out a block per line in time that grows with their number squared, and gives an empty list item a
    page or more: 10,000 of them in one answer made a 38,830-page PDF in 9 minutes (red team 38)."""
    q = written.Question("q", 2, 10, "Why?")
    for text in ("-\n" * 10000, "- x\n" * 10000, "a\n\n" * 6666):
        a = written.answer(q, "Why?" + text)
        assert a.text.count("\n") < MAX_LINES and a.note.startswith("Cut at ") and f"{MAX_LINES} lines" in a.note
    assert render("- a\n-\n- b\n") == "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n"


def test_a_hostile_answer_is_cleaned_and_bounded(tmp_path):
    a = QUESTIONS.answers(hostile_notebook(tmp_path))[0]
    page = a.html()
    assert len(a.text) == MAX_CHARS and a.note.startswith(f"Cut at {MAX_CHARS:,} of its ")
    assert len(page) < 6 * MAX_CHARS
    assert "<script" not in page and "<img" not in page and "href" not in page   # no tag, no live link
    assert "&lt;script&gt;" in page and "&lt;img" in page  # shown as text, not dropped
    assert not re.search("[\x00-\x08\x0b-\x1f\u202a-\u202e]", page)
    assert "𝔘𝔫𝔦𝔠𝔬𝔡𝔢" in page and "(a)/(b)" in page and "A long answer." in page


def test_math_becomes_readable_text():
    assert math_text(r"\dfrac{\partial L}{\partial x_0}") == "(∂L)/(∂x_0)"
    assert math_text(r"x_{l+1} = \alpha x_l + F_l(x_l)") == "x_{l+1} = αx_l + F_l(x_l)"
    assert math_text(r"\sqrt{64} \cdot 0.5^{20}") == "√(64) ·0.5^{20}"
    # what pylatexenc drops or writes in characters the PDFs' fonts lack
    assert math_text(r"\|\nabla L\| \le \left\| J \right\|") == "‖∇L‖ ≤‖ J ‖"
    assert math_text(r"a \implies b \iff c, \neg p \land q \lor r") == "a ⟹ b ⟺ c, ¬p ∧ q ∨ r"
    assert math_text(r"\det(I+J), \dim \ker J, \Pr(A), \arg\max_x") == "det(I+J), dim ker J, Pr(A), argmax_x"
    assert math_text(r"\mathbf{x}_l + \mathcal{N}(0, 1) \in \mathbb{R}^d, \mathbb{E}[x]") == "x_l + N(0, 1) ∈ℝ^d, E[x]"
    assert math_text(r"\binom{L}{2}, a \bmod b, \sqrt[3]{d}, f''(x), \operatorname{tr}(J)") == \
        "(L choose 2), a mod b, (d)^(1/3), f′′(x), tr(J)"
    assert math_text(r"\begin{cases} 1 & z > 0 \\ 0 & \text{otherwise} \end{cases}") == "1 z > 0\n0 otherwise"
    assert math_text(r"x + \frac{a") == r"x + \frac{a" and "%s" not in math_text(r"\frac{a}")   # cut short
    deep = "\\frac{" * 300                                # pylatexenc gives up: the formula stays as written
    assert math_text(deep) == deep and math_text("{" * 5000) == "{" * 5000


@pytest.mark.parametrize("markdown, shown, not_shown", [
    # math only where Jupyter finds it: never in code, never across paragraphs; \$ is a dollar
    ("Set `DATA=$HOME` and run `train --out $OUT`.", ["<code>DATA=$HOME</code>", "<code>train --out $OUT</code>"],
     ['class="math"']),
    ("I paid $3 an hour.\n\n- depth 10\n- depth 50\n\nIt cost $12.", ["$3 an hour", "<li>depth 50</li>", "$12"],
     ['class="math"']),
    ("It cost \\$5 and \\$10.", ["It cost $5 and $10."], ['class="math"']),
    ("## Result: $\\frac{\\partial L}{\\partial x_0} \\approx 1$", ['<h2>Result: <span class="math">(∂L)/(∂x_0) ≈1'],
     ["id=", "%5C"]),
    ("$$\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}$$",
     ['<span class="math display">a = b<br>c = d</span>'], []),
    ("\\begin{align} a &= b \\end{align}", ['<span class="math display">a = b</span>'], ["begin"]),
    # a pasted image (JupyterLab writes an attachment) as its alt text, the rest rendered
    ("![image.png](attachment:image.png) **Observation:** flat", ["<em>[image: image.png]</em>",
                                                                  "<strong>Observation:</strong>"], ["<pre>"]),
    ("- [x] derived\n- [ ] checked", ["<li>☑ derived</li>", "<li>☐ checked</li>"], ["input"]),
    ("5. fifth\n6. sixth", ['<ol start="5">'], []),
    ("```python\ndef f(x):\n\treturn x\n```", ["\n    return x"], ["\t"]),
    ("<details><summary>Why</summary><u>u</u> <mark>m</mark> <kbd>Ctrl</kbd></details>\n\nTerm\n: meaning",
     ["<details><summary>Why</summary><u>u</u>", "<kbd>Ctrl</kbd>", "<dt>Term</dt>"], ["&lt;"]),
])
def test_an_answer_is_read_as_jupyter_renders_it(markdown, shown, not_shown):
    page = render(markdown)
    assert all(s in page for s in shown) and not any(s in page for s in not_shown), page


def test_results_json_has_one_entry_per_question_after_its_parts_tests(tmp_path):
    # parts 1, 2, 2, 4, then each part's 0-point rules test, as the suites list them; part 3 has no test
    result = Result(ASSIGNMENT, 1, [Entry(f"t{i}", p, 1, 1, "passed") for i, p in enumerate((1, 2, 2, 4, 1, 2, 4))])
    answers = QUESTIONS.answers(SAMPLES / "partly-right.ipynb")
    doc = to_gradescope(result, visibility="visible", answers=answers)
    assert not list(SCHEMA.iter_errors(doc))
    assert [t["number"] for t in doc["tests"]] == ["1.1", "2.1", "2.2", "2.4", "3.1", "4.1", "4.3", "1.2", "2.3",
                                                  "4.2", "5.1"]
    written = [t for t in doc["tests"] if "written answer" in t["tags"]]
    assert [t["extra_data"]["part"] for t in written] == [2, 3, 4, 5]
    for t, q in zip(written, QUESTIONS.questions):
        assert (t["score"], t["max_score"], t["visibility"], t["output_format"]) == (0, 0, "after_published", "html")
        assert t["tags"] == [f"part {q.part}", "written answer", f"{q.points:g} manual points"]
        assert t["extra_data"]["manual_points"] == q.points and t["name"].endswith(q.short)
    assert "0.5 is less than 1" in written[1]["output"] and written[1]["extra_data"]["answered"]
    assert "Not answered" in written[2]["output"] and not written[2]["extra_data"]["answered"]
    assert doc["score"] == result.score and "written answers (35 points) are graded by hand" in doc["output"]
    hostile = to_gradescope(result, visibility="visible", answers=QUESTIONS.answers(hostile_notebook(tmp_path)))
    assert not list(SCHEMA.iter_errors(hostile)) and len(json.dumps(hostile)) < 10 * MAX_CHARS


def pdf_text(path: Path) -> tuple[int, str]:
    reader = PdfReader(path)
    return len(reader.pages), "\n".join(page.extract_text() for page in reader.pages)


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory):
    """`python -m autograder answers` on the samples with written answers, the release, an unreadable
    file and a hostile answer."""
    folder, out = tmp_path_factory.mktemp("notebooks"), tmp_path_factory.mktemp("answers")
    for name in [*WRITTEN, "untouched-release", "invalid-json"]:
        (folder / f"{name}.ipynb").write_bytes((SAMPLES / f"{name}.ipynb").read_bytes())
    (folder / "deeper").mkdir()
    hostile_notebook(folder / "deeper")
    done = cli("answers", ASSIGNMENT, folder, "--out", out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stdout


def test_answers_command_writes_one_pdf_per_notebook(pdfs):
    out, stdout = pdfs
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.pdf")) == sorted(
        [f"{n}.pdf" for n in [*WRITTEN, "untouched-release", "invalid-json"]] + ["deeper/hostile.pdf"])
    assert f"{len(WRITTEN) + 3} PDFs of 4 written questions" in stdout
    for sample, given in WRITTEN.items():
        pages, text = pdf_text(out / f"{sample}.pdf")
        assert pages == len(QUESTIONS.questions), sample          # each question on its own page, each fits
        flat = " ".join(text.split())
        for grade_id, answer in given.items():
            assert all(w in flat for w in words(answer)), (sample, grade_id)
        assert flat.count("Not answered: the cell still holds YOUR ANSWER HERE.") == 4 - len(given)
        assert "Part 2: written answer (10 points)" in flat and f"{ASSIGNMENT}: {sample}" in flat
    assert "∂L/∂x_0" in " ".join(pdf_text(out / "full-marks.pdf")[1].split())   # math as text, in DejaVu
    pages, text = pdf_text(out / "invalid-json.pdf")
    assert pages == 4 and text.count("Not read: invalid-json.ipynb") == 4


def test_a_hostile_answer_gives_a_bounded_pdf(pdfs):
    out, _ = pdfs
    pages, text = pdf_text(out / "deeper" / "hostile.pdf")
    assert 4 < pages < 40
    flat = " ".join(text.split())
    assert "<script>alert" in flat and "A long answer." in flat and f"Cut at {MAX_CHARS:,}" in flat


FUZZED = 8, 8      # PDFs, generated answers on each (loading the fonts is most of a PDF's time)


def test_an_answer_of_thousands_of_blocks_on_one_line_is_written_as_its_text(tmp_path):
    """MAX_LINES counts lines, and 4,985 <hr> on one line are one: fpdf2 laid each out again at every block after
    it, 25 s and 72 pages an answer (red team 39). Past MAX_BLOCKS the answer is written as its text, which
    takes a page or two; an answer under it is still rendered."""
    q = QUESTIONS.questions[0]
    assert write_pdf([Answer(q, "A rule: " + "<hr>" * 4985)], tmp_path / "rules.pdf", "rules") < 10
    flat = " ".join(pdf_text(tmp_path / "rules.pdf")[1].split())
    assert f"more than {MAX_BLOCKS} paragraphs" in flat and "A rule: <hr><hr>" in flat
    write_pdf([Answer(q, "A rule: " + "<hr>" * 50)], tmp_path / "fifty.pdf", "fifty")
    flat = " ".join(pdf_text(tmp_path / "fifty.pdf")[1].split())
    assert "A rule:" in flat and "<hr>" not in flat and "as written" not in flat


def test_an_in_page_link_and_a_heading_give_a_pdf_with_their_text(tmp_path):
    """fpdf2 refuses a link to a named destination it was never given: `[see above](#derivation)`, and the
    anchor nbconvert puts on every heading, keep their text and lose the link."""
    answer = "## Derivation\n\nThe gradient (see [the derivation above](#derivation)) is 1 + F'(x).\n"
    q = QUESTIONS.questions[0]
    pages = write_pdf([Answer(q, answer)], tmp_path / "a.pdf", "anchors")
    flat = " ".join(pdf_text(tmp_path / "a.pdf")[1].split())
    assert pages == 1 and "the derivation above" in flat and "could not lay this answer out" not in flat


def test_a_table_with_formatted_cells_and_a_dropped_link_are_laid_out(tmp_path):
    """fpdf2 refuses a table cell that mixes text and tags, and a link with no target (bleach drops a
    javascript: href): the cell is written as its text, the link as its text, the rest as rendered."""
    answer = ("| layout | gradient |\n|---|---|\n| **pre**-LN | about $1.0$, `stable` |\n| post-LN | shrinks<br>fast |"
              "\n\nSee [here](javascript:alert(1)) and **this**.")
    write_pdf([Answer(QUESTIONS.questions[0], answer)], tmp_path / "a.pdf", "table")
    flat = " ".join(pdf_text(tmp_path / "a.pdf")[1].split())
    assert "pre-LN about 1.0, stable" in flat and "shrinks fast" in flat and "See here and this." in flat, flat
    assert "could not lay this answer out" not in flat


def test_a_table_cell_of_spaces_is_laid_out_as_its_text(tmp_path):
    """A cell of a tab, 3,000 spaces and a <br>: the check for one inline tag backtracked in cubic time over the
    spaces (hours for 20,000, in `answers` and `canvas push`, one student after another: red team 37)."""
    answer = "| a | b |\n|---|---|\n| &#9;" + " " * 3000 + "<br>spaced | c |\n"
    write_pdf([Answer(QUESTIONS.questions[0], answer)], tmp_path / "a.pdf", "spaces")
    flat = " ".join(pdf_text(tmp_path / "a.pdf")[1].split())
    assert "spaced" in flat and "could not lay this answer out" not in flat, flat


def test_a_character_the_fonts_lack_is_named_with_its_pdf(tmp_path, caplog):
    """fpdf2 warns of each character DejaVu lacks: in a class's run, the warning names the PDF it concerns."""
    write_pdf([Answer(QUESTIONS.questions[0], "残差 connections")], tmp_path / "alice.pdf", "cjk")
    warned = [r.getMessage() for r in caplog.records if r.name == "fpdf.output"]
    assert warned and all(m.startswith(f"{tmp_path / 'alice.pdf'}: ") and "残" in m for m in warned), warned


def test_every_generated_honest_markdown_gives_an_answers_pdf(tmp_path):
    """Links, anchors, HTML, tables, math, images, code and lists, mixed at random: a PDF every time, with every
    answer on it, laid out (none written out as its source)."""
    q = QUESTIONS.questions[0]
    files, each = FUZZED
    for n in range(files):
        answers = [Answer(q, honest_markdown.markdown(n * each + i)) for i in range(each)]
        path = tmp_path / f"{n}.pdf"
        pages = write_pdf([*answers, Answer(q, None, "Not answered: the cell is empty.")], path, "fuzz")
        assert pages > each and path.read_bytes().startswith(b"%PDF"), [a.text for a in answers]
        text = pdf_text(path)[1]
        assert "Not answered: the cell is empty." in text, [a.text for a in answers]
        assert "could not lay this answer out" not in text, [a.text for a in answers]
