"""Without CUDA, fused-add-norm's timing test is not run: every path gives the same total by each rule.

docs/results.md: the command line, the gradebook after `nbgrader autograde`, the gradebook after
`python -m autograder autograde`, and the feedback all agree, with "redistribute" and with "skip", and a
change of the rule reaches the gradebook and the feedback from the kept results, regrading nothing.
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


def test_every_path_gives_the_same_total_and_a_new_rule_applies_without_regrading(tmp_path, monkeypatch):
    """Graded under "redistribute" by the class command; then course.toml says "skip": nbgrader autograde,
    the feedback and the gradebook follow it from the kept results, as the command line grading afresh
    does; back to "redistribute", the next feedback (or export) restores its totals. Nothing is graded twice."""
    toml = tmp_path / "course.toml"
    text = (ROOT / "course.toml").read_text()
    assert 'without_cuda = "redistribute"' in text
    instructor = tmp_path / "instructor"
    monkeypatch.setenv("COURSE_FILE", str(toml))
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(instructor))
    sources = [ROOT / "submissions" / ASSIGNMENT / f"{name}.ipynb" for name in SAMPLES]
    for i, source in enumerate(sources):
        folder = instructor / "submitted" / f"s{i}" / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{ASSIGNMENT}.ipynb").write_bytes(source.read_bytes())

    def command_line(rule: str) -> dict[str, tuple[float, float]]:
        """{student: (score, max_score)} from `grade FOLDER`'s grader under `rule`, graded afresh."""
        toml.write_text(text.replace('without_cuda = "redistribute"', f'without_cuda = "{rule}"'))
        results = grade_many(ASSIGNMENT, sources, course_mod.load(toml), seed=5)     # one fork server for both
        return {f"s{i}": (r.score, r.max_score) for i, r in enumerate(results)}

    redistributed = command_line("redistribute")
    assert redistributed["s0"] == (40, 40) and redistributed["s1"][0] < redistributed["s1"][1]
    command = [sys.executable, "-m", "autograder", "autograde", ASSIGNMENT, "--workers", "1"]
    proc = subprocess.run(command, cwd=ROOT, env=os.environ, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert gradebook_totals(instructor) == redistributed, "the class command"
    store = instructor / "grading" / f"{ASSIGNMENT}.jsonl"
    kept = store.read_bytes()

    skipped = command_line("skip")
    assert skipped["s0"] == (30, 30) and skipped["s1"][1] == 30
    nbgrader("autograde", ASSIGNMENT, "--force", "--log-level=ERROR")
    assert gradebook_totals(instructor) == skipped, "nbgrader autograde, from the kept results"
    nbgrader("generate_feedback", ASSIGNMENT, "--force", "--log-level=ERROR")
    for student, (score, top) in skipped.items():
        page = next((instructor / "feedback" / student / ASSIGNMENT).glob("*.html")).read_text(encoding="utf-8")
        text_shown = html.unescape(re.sub(r"<[^>]+>", " ", page))
        cells = [(float(s), float(m)) for s, m in re.findall(r"Test cell\s*\(Score:\s*([\d.]+)\s*/\s*([\d.]+)\s*\)",
                                                             text_shown)]
        assert len(cells) == 2 and "graded by hidden tests run outside your notebook" in text_shown
        assert (round(sum(s for s, _ in cells), 2), sum(m for _, m in cells)) == (score, top), student
        assert "not run" in text_shown and "left out of the maximum" in text_shown

    toml.write_text(text)
    nbgrader("generate_feedback", ASSIGNMENT, "--force", "--log-level=ERROR")
    assert gradebook_totals(instructor) == redistributed, "the feedback's apply step, back to redistribute"
    assert store.read_bytes() == kept, "a result was graded again"


def gradebook_totals(instructor) -> dict[str, tuple[float, float]]:
    """{student: (automatic score, automatic maximum)} from the gradebook."""
    with Gradebook(f"sqlite:///{instructor / 'gradebook.db'}") as gb:
        return {s.student.id: (round(s.code_score, 2), s.max_code_score)
                for s in gb.assignment_submissions(ASSIGNMENT)}
