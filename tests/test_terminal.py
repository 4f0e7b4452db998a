"""Student text never drives the instructor's terminal: every command prints it through results/terminal.py.

The collection's file names (`nbgrader zip_collect`'s lines) are checked in tests/test_canvas.py."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.course import ROOT
from autograder.results.terminal import shown
from helpers import write_export

ASSIGNMENT = "residual-connections"
FULL_MARKS = ROOT / "submissions" / ASSIGNMENT / "full-marks.ipynb"
# set the window title, erase the line, the same through C1's CSI, a backspace, right-to-left (no carriage
# return: Python would end the quoted line there)
ATTACK = "\x1b]0;owned\x07\x1b[2K\x9b2K\x08\u202eevil\u2066"
CONTROLS = ["\x1b", "\x07", "\x9b", "\r", "\x08", "\u202e", "\u2066", "\x00"]


def test_shown_writes_what_a_terminal_would_act_on_as_text():
    text = f"line one\tcell\n{ATTACK}\r\x00 déjà vu 数学"
    out = shown(text)
    assert not any(c in out for c in CONTROLS)
    assert out == "line one\tcell\n\\x1b]0;owned\\x07\\x1b[2K\\x9b2K\\x08\\u202eevil\\u2066\\r\\x00 déjà vu 数学"
    assert shown("a\nb\tc", keep="") == "a\\nb\\tc"          # one line: a newline cannot forge another


def hostile(path: Path) -> Path:
    """full-marks with a rule broken on a line that carries terminal controls (a quoted line of review)."""
    nb = json.loads(FULL_MARKS.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "residual_add")
    cell["source"] = "".join(cell["source"]) + f"\nimport sys  # {ATTACK}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def run(*args, env=None) -> str:
    proc = subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.mark.slow
def test_no_command_prints_a_students_terminal_controls(tmp_path):
    """A submission whose quoted line holds ESC ]0; (title), ESC [2K (erase) and their kin, in a file whose
    name holds them too: grade (one notebook's table; a folder into a store), review of that store, and a
    class's roster, autograde, review and status print each as text; review shows the quoted line."""
    said = {}
    one = hostile(tmp_path / "one" / "hostile.ipynb")
    said["grade"] = run("grade", ASSIGNMENT, one)
    folder = tmp_path / "batch"
    hostile(folder / f"hostile{ATTACK}.ipynb")
    store = tmp_path / "store.jsonl"
    said["grade --out"] = run("grade", ASSIGNMENT, folder, "--out", store)
    said["review --results"] = run("review", ASSIGNMENT, "--results", store)

    instructor = tmp_path / "instructor"
    env = {"COURSE_INSTRUCTOR_DIR": str(instructor)}
    roster = (ROOT / "submissions" / "roster.csv").read_text(encoding="utf-8-sig")
    (tmp_path / "roster.csv").write_text(roster.replace('"Abara, Chidi"', f'"Abara{ATTACK}, Chidi"'), encoding="utf-8")
    said["roster"] = run("roster", tmp_path / "roster.csv", env=env)
    hostile(instructor / "submitted" / "51001" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    said["autograde"] = run("autograde", ASSIGNMENT, "--workers", "1", env=env)
    said["review"] = run("review", ASSIGNMENT, env=env)
    said["status"] = run("status", ASSIGNMENT, env=env)
    for command, text in said.items():
        assert not [c for c in CONTROLS if c in text], (command, text[-2000:])
    quoted = shown(f"import sys  # {ATTACK}")
    for command in ("review --results", "review"):
        assert quoted in said[command], (command, said[command][-2000:])
    assert shown(f"hostile{ATTACK}.ipynb", keep="") in said["grade --out"]
    assert shown(f"Abara{ATTACK}") in said["status"]


def test_a_students_text_starts_no_line_of_a_table_or_a_grade_cell():
    """A file name holding a newline, and a test's output holding the other characters str.splitlines breaks at
    (a quoted line's U+2028): each stays on its own line, so neither forges a line, such as a classmate's score
    in a batch's listing."""
    from autograder.results.render import feedback_text, score_line, table
    from autograder.results.result import Result, TestResult
    forged = " 100 / 100  /course/alice.ipynb"
    output = f"flagged:\n  residual_add line 2: [dunder] ... | x = 1  #\u2028{forged}"
    result = Result(ASSIGNMENT, 7, [TestResult("rules", 1, 0, 0, output)], submission=f"/course/zz\n{forged}")
    for text in (shown(table(result)), feedback_text(result, 1), score_line(result)):
        assert not any(line.strip().startswith(forged.strip()) for line in text.split("\n")), text
    assert len(score_line(result).split("\n")) == 1


@pytest.mark.slow
def test_an_export_and_the_answers_print_a_students_terminal_controls_as_text(tmp_path):
    """review, status and report of a Gradescope export (a submitter's own display name, a quoted line, a folder
    the metadata does not list) and answers (a notebook's file name) print each as text."""
    from autograder.lms.gradescope.late import Late
    from autograder.lms.gradescope.results import to_gradescope
    from autograder.results.result import Result, held_entry
    line = f"residual_add line 3: [import] import sys  # {ATTACK}"
    result = Result(ASSIGNMENT, 7, [held_entry("gradient flows", 2, 4, line)], review=(line,))
    doc = to_gradescope(result, visibility="visible", late=Late(0, 0, 1, "2027-02-15T23:59:00+00:00", 0))
    # YAML's own escapes: a display name Gradescope stores as the student typed it
    name = '"Eve \\e]0;owned\\a\\e[2K\\u202eevil"'
    export = write_export(tmp_path / "assignment_1_export.zip",
                          {"submission_1": ([(name, "51001")], doc, {"mine.ipynb": FULL_MARKS.read_bytes()})})
    with zipfile.ZipFile(export, "a") as zf:
        zf.writestr(f"assignment_1_export/submission_{ATTACK}/mine.ipynb", b"{}")
    said = {command: run(command, ASSIGNMENT, "--gradescope-export", export) for command in ("review", "status")}
    # report lists what it left out of the export as it is read (red team 38: printed raw)
    said["report"] = run("report", ASSIGNMENT, "--gradescope-export", export, "--out", tmp_path / "report")
    hostile(tmp_path / "answers" / f"hostile{ATTACK}.ipynb")
    said["answers"] = run("answers", ASSIGNMENT, tmp_path / "answers", "--out", tmp_path / "pdfs")
    for command, text in said.items():
        assert not [c for c in CONTROLS if c in text], (command, text[-2000:])
    assert shown(f"import sys  # {ATTACK}") in said["review"] and shown(f"submission_{ATTACK}") in said["review"]
    assert shown("Eve \x1b]0;owned\x07\x1b[2K\u202eevil") in said["status"]
    assert shown(f"hostile{ATTACK}.pdf") in said["answers"] and shown(f"submission_{ATTACK}") in said["report"]
