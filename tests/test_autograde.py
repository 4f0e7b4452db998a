"""The instructor's loop with nbgrader and Canvas, end to end on the sample class (make demo)."""
import csv
import html
import json
import os
import re
import signal
import subprocess
import sys
import time

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder import autograde, canvas, demo
from autograder.course import ROOT
from test_release import ASSIGNMENTS, solution_lines

pytestmark = pytest.mark.slow

EXPECTED = json.loads((demo.SAMPLES / "expected.json").read_text())["samples"]
SUITE_FILES = sorted((ROOT / "autograder" / "suites").glob("*.py"))


@pytest.fixture(scope="module")
def area(tmp_path_factory):
    """One run of the demo's loop in a folder of its own."""
    area = tmp_path_factory.mktemp("class")
    grades = demo.run_loop(area / "instructor")
    return area / "instructor", grades


def db_url(area):
    return f"sqlite:///{area / 'gradebook.db'}"


def gradebook_scores(area) -> dict[str, dict[str, float]]:
    """{student: {grade cell: auto score}} from the nbgrader gradebook."""
    with Gradebook(db_url(area)) as gb:
        return {s.student.id: {g.name: g.auto_score for g in s.notebooks[0].grades}
                for s in gb.assignment_submissions(demo.ASSIGNMENT)}


def test_canvas_csv_has_the_expected_score_for_every_roster_student(area):
    _, grades = area
    rows = list(csv.reader(grades.open(encoding="utf-8")))
    header, body = rows[0], {r[1]: r for r in rows[1:] if r[0] != "Points Possible"}
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    roster = [s.id for s in canvas.read_roster(demo.ROSTER).students]
    assert sorted(body) == sorted(roster)                                     # every student has a row
    for canvas_id, sample in zip(roster, demo.CLASS):
        assert float(body[canvas_id][5]) == EXPECTED[f"{sample}.ipynb"]["score"], (canvas_id, sample)
    no_submission = roster[len(demo.CLASS):]
    assert no_submission and all(body[cid][5] == "0" for cid in no_submission)


def test_cheating_in_the_kernel_gains_nothing(area):
    """checker-cheat patches every comparison helper on top of wrong-answers: the same score."""
    assert EXPECTED["checker-cheat.ipynb"]["score"] == EXPECTED["wrong-answers.ipynb"]["score"]
    cheat = demo.CLASS.index("checker-cheat")
    _, grades = area
    body = [r for r in csv.reader(grades.open(encoding="utf-8"))][2:]
    assert float(body[cheat][5]) == EXPECTED["wrong-answers.ipynb"]["score"]


def test_part_scores_in_grade_cells_match_the_grader(area):
    instructor, _ = area
    scores = gradebook_scores(instructor)
    from autograder.grade import grade_notebook
    sample = demo.CLASS.index("pre-post-swapped")
    student = sorted(scores)[sample]
    result = grade_notebook(demo.ASSIGNMENT, demo.SAMPLES / "pre-post-swapped.ipynb")
    for part, (score, _) in autograde.part_scores(result).items():
        assert scores[student][f"part{part}-tests"] == score


def visible_text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_feedback_shows_results_but_no_hidden_tests_or_solutions(area):
    instructor, _ = area
    pages = sorted((instructor / "feedback").glob(f"*/{demo.ASSIGNMENT}/*.html"))
    assert len(pages) == len(demo.CLASS) - 1        # the unreadable upload is never collected
    hidden = {l.strip() for f in SUITE_FILES for l in f.read_text().splitlines() if len(l.strip()) > 30}
    answers = solution_lines(ASSIGNMENTS[0])
    for page in pages:
        text = visible_text(page.read_text(encoding="utf-8"))
        nb = nbformat.read(instructor / "submitted" / page.parent.parent.name / demo.ASSIGNMENT /
                           f"{demo.ASSIGNMENT}.ipynb", as_version=4)
        submitted = "\n".join(cell.source for cell in nb.cells)
        assert "graded by hidden tests run outside your notebook" in text
        assert [l for l in hidden if l in text and l not in submitted] == [], page
        assert [l for l in answers if l in text and l not in submitted] == [], page


def test_autograde_twice_gives_identical_grades(area, monkeypatch):
    instructor, _ = area
    before = gradebook_scores(instructor)
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(instructor))
    assert autograde.nbgrader("autograde", demo.ASSIGNMENT, "--force", "--log-level=ERROR") == 0
    assert gradebook_scores(instructor) == before


def test_a_warning_on_stderr_costs_nothing(area):
    instructor, _ = area
    nb = nbformat.read(demo.SAMPLES / "full-marks.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "residual_add")
    cell.source = ("import sys, warnings\nwarnings.warn('a UserWarning on stderr')\n"
                   "print('noise', file=sys.stderr)\n" + cell.source)
    folder = instructor / "submitted" / "noisy" / demo.ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / f"{demo.ASSIGNMENT}.ipynb"))
    env = {**os.environ, "COURSE_INSTRUCTOR_DIR": str(instructor)}
    proc = subprocess.run([sys.executable, "-m", "autograder", "autograde", demo.ASSIGNMENT], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert sum(gradebook_scores(instructor)["noisy"].values()) == 75


def test_interrupted_class_loses_nothing(tmp_path):
    """Kill `python -m autograder autograde` mid-class; the rerun finishes with the same grades."""
    instructor = tmp_path / "instructor"
    env = {**os.environ, "COURSE_INSTRUCTOR_DIR": str(instructor)}
    samples = ["full-marks", "partly-right", "pre-post-swapped", "wrong-answers", "hard-coded-example",
               "untouched-release"]
    for i, name in enumerate(samples):
        folder = instructor / "submitted" / f"s{i}" / demo.ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{demo.ASSIGNMENT}.ipynb").write_bytes((demo.SAMPLES / f"{name}.ipynb").read_bytes())
    command = [sys.executable, "-m", "autograder", "autograde", demo.ASSIGNMENT, "--workers", "1"]
    first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    kept = instructor / "grading" / demo.ASSIGNMENT
    deadline = time.monotonic() + 120
    while len(list(kept.glob("*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)   # the command and its nbgrader shards, as a crash would
    first.wait()
    assert 2 <= len(list(kept.glob("*.json"))) < len(samples)
    assert list(kept.glob("*.tmp")) == []
    second = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    totals = {s: sum(v.values()) for s, v in gradebook_scores(instructor).items()}
    assert totals == {f"s{i}": EXPECTED[f"{name}.ipynb"]["score"] for i, name in enumerate(samples)}
