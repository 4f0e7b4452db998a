"""Without CUDA, fused-add-norm's timing test is not run: every path gives the same total by each rule.

docs/results.md: the command line, the gradebook after `nbgrader autograde`, the gradebook after
`python -m autograder autograde`, and the feedback all agree, with "redistribute" and with "skip".
"""
import html
import os
import re
import subprocess
import sys

import pytest
from nbgrader.api import Gradebook

from autograder import course as course_mod
from autograder.course import ROOT
from autograder.grading.batch import grade_many
from autograder.nbgrading.run import nbgrader

pytestmark = pytest.mark.slow

ASSIGNMENT = "fused-add-norm"
SAMPLES = ["full-marks", "no-mask"]   # all of part 1, and a part of it


@pytest.mark.parametrize("rule", ["redistribute", "skip"])
def test_every_path_gives_the_same_total(tmp_path, monkeypatch, rule):
    toml = tmp_path / "course.toml"
    text = (ROOT / "course.toml").read_text()
    toml.write_text(text.replace('without_cuda = "redistribute"', f'without_cuda = "{rule}"'))
    instructor = tmp_path / "instructor"
    monkeypatch.setenv("COURSE_FILE", str(toml))
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(instructor))
    course = course_mod.load(toml)
    sources = [ROOT / "submissions" / ASSIGNMENT / f"{name}.ipynb" for name in SAMPLES]
    for i, source in enumerate(sources):
        folder = instructor / "submitted" / f"s{i}" / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{ASSIGNMENT}.ipynb").write_bytes(source.read_bytes())
    results = grade_many(ASSIGNMENT, sources, course, seed=5)      # one fork server for both (`grade FOLDER`)
    cli = {f"s{i}": (r.score, r.max_score) for i, r in enumerate(results)}
    assert cli["s0"] == ((40, 40) if rule == "redistribute" else (30, 30))
    assert cli["s1"][0] < cli["s1"][1]

    command = [sys.executable, "-m", "autograder", "autograde", ASSIGNMENT, "--workers", "1"]
    proc = subprocess.run(command, cwd=ROOT, env=os.environ, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert gradebook_totals(instructor) == cli, "the class command"

    nbgrader("autograde", ASSIGNMENT, "--force", "--log-level=ERROR")
    assert gradebook_totals(instructor) == cli, "nbgrader autograde"

    nbgrader("generate_feedback", ASSIGNMENT, "--force", "--log-level=ERROR")
    for student, (score, top) in cli.items():
        page = next((instructor / "feedback" / student / ASSIGNMENT).glob("*.html")).read_text(encoding="utf-8")
        text = html.unescape(re.sub(r"<[^>]+>", " ", page))
        cells = [(float(s), float(m)) for s, m in re.findall(r"Test cell\s*\(Score:\s*([\d.]+)\s*/\s*([\d.]+)\s*\)", text)]
        assert len(cells) == 2 and "graded by hidden tests run outside your notebook" in text
        assert (round(sum(s for s, _ in cells), 2), sum(m for _, m in cells)) == (score, top), student
        if rule == "skip":
            assert "not run" in text and "left out of the maximum" in text


def gradebook_totals(instructor) -> dict[str, tuple[float, float]]:
    """{student: (automatic score, automatic maximum)} from the gradebook."""
    with Gradebook(f"sqlite:///{instructor / 'gradebook.db'}") as gb:
        return {s.student.id: (round(s.code_score, 2), s.max_code_score)
                for s in gb.assignment_submissions(ASSIGNMENT)}
