"""course.toml is the one source of points, and policy changes (points, late_per_day, exceptions.toml) reach
every path from the kept results: nothing is regraded (autograder/nbgrading/apply.py, autograder/exceptions.py)."""
import csv
import dataclasses
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder import suites
from autograder.course import COURSE_FILE, ROOT, load, split_points
from autograder.lms.canvas.plugins import FINAL
from autograder.lms.gradescope.allowances import FILE, Granted
from autograder.nbgrading.run import nbgrader
from autograder.results.result import Result, not_run
from autograder.results.result import TestResult as Entry
from helpers import ASSIGNMENT, COURSE, SOURCE_NB, cli

A = COURSE.assignment(ASSIGNMENT)


def test_split_points_sums_exactly():
    assert split_points([2, 2, 1], 25) == [10, 10, 5]
    assert split_points([1, 1, 1], 20) == [6.67, 6.66, 6.67] and sum(split_points([1, 1, 1], 20)) == 20
    assert split_points([0, 0], 5) == [0, 0]


def test_a_kept_result_takes_course_toml_points_keeping_what_it_earned():
    kept = Result(ASSIGNMENT, 1, [Entry("a", 1, 2, 2, "passed"), Entry("b", 1, 0, 2, "failed"),
                                  Entry("rules", 1, 0, 0, "passed"), Entry("c", 2, 1.5, 3, "half")])
    assert kept.scaled({1: 4, 2: 3}) == kept                               # course.toml as graded: the same
    scaled = kept.scaled({1: 25, 2: 6})
    assert scaled.parts() == {1: (12.5, 25), 2: (3, 6)} and scaled.max_score == 31
    assert [t.output for t in scaled.tests] == [t.output for t in kept.tests]



@pytest.mark.parametrize("graded_under, now", [("skip", "redistribute"), ("redistribute", "skip")])
def test_a_kept_result_takes_course_toml_without_cuda_rule_keeping_what_it_earned(graded_under, now):
    """fused-add-norm's timing test, not run without CUDA: its kept entry follows the rule course.toml
    gives now, at the part's points now, from the fraction of the other tests earned (24 of 30)."""
    fused = COURSE.assignment("fused-add-norm")
    timing = next(t for t in suites.load(fused.name).tests if t.needs_cuda)
    ran = [Entry("values", 1, 24, 30, "failed", id="values")]
    kept = Result(fused.name, 1, [*ran, dataclasses.replace(not_run(timing.name, 2, 10, graded_under, ran), id=timing.id)])
    rule = dataclasses.replace(fused.timing, without_cuda=now)
    ruled = kept.under(dataclasses.replace(fused, timing=rule))
    assert ruled.parts() == ({1: (24, 30), 2: (8, 10)} if now == "redistribute" else {1: (24, 30), 2: (0, 0)})
    assert ruled.tests[1].id == timing.id and not ruled.tests[1].ran
    assert f'without_cuda = "{now}"' in ruled.tests[1].output
    doubled = kept.under(dataclasses.replace(fused, timing=rule, auto={1: 30, 2: 20}))
    assert doubled.parts()[2] == ((16, 20) if now == "redistribute" else (0, 0))      # its points now


@pytest.mark.parametrize("machine_cuda", [False, True])
def test_a_part_leaves_the_gradebooks_maximum_by_the_kept_results_not_the_machine(machine_cuda, monkeypatch):
    """With without_cuda = "skip", fused-add-norm's timing part leaves the gradebook's maximum where the
    class's kept results did not run its test, whichever machine syncs the gradebook: a class graded
    without CUDA and exported where there is one would otherwise show the part at 0 of its points. With
    nothing kept yet, the machine that will grade decides; "redistribute" never leaves a part out."""
    from autograder.grading import cuda
    monkeypatch.setattr(cuda, "cuda_present", lambda: machine_cuda)
    fused = COURSE.assignment("fused-add-norm")
    skip = dataclasses.replace(fused, timing=dataclasses.replace(fused.timing, without_cuda="skip"))
    timing = next(t for t in suites.load(fused.name).tests if t.needs_cuda)
    ran = [Entry("values", 1, 24, 30, "failed", id="values")]
    not_ran = Result(fused.name, 1, [*ran, dataclasses.replace(not_run(timing.name, 2, 10, "skip", ran), id=timing.id)])
    timed = Result(fused.name, 2, [*ran, Entry(timing.name, 2, 10, 10, "passed", id=timing.id)])
    assert cuda.parts_left_out(skip, [not_ran]) == {timing.part}
    assert cuda.parts_left_out(skip, [not_ran, timed]) == set()      # one ran it: regrade the others
    assert cuda.parts_left_out(skip, [timed]) == set()
    assert cuda.parts_left_out(skip, []) == (set() if machine_cuda else {timing.part})
    redistribute = dataclasses.replace(fused, timing=dataclasses.replace(fused.timing, without_cuda="redistribute"))
    assert cuda.parts_left_out(redistribute, [not_ran]) == set()


def test_a_deleted_grade_cell_comes_back_with_course_toml_points():
    import nbformat
    from autograder.nbgrading.autograde import part_cells, write_grades
    source = A.notebook_path(ROOT / "solutions")
    nb = nbformat.read(str(source), as_version=4)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "part1-tests"]
    kept = Result(ASSIGNMENT, 1, [Entry("a", 1, 2, 2, "passed"), Entry("b", 1, 0, 2, "failed")])
    write_grades(nb, kept.scaled({1: 25}), part_cells(source, {**A.cell_points, "part1-tests": 25}))
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "part1-tests")
    assert cell.metadata.nbgrader["points"] == 25 and cell.outputs[-1].data["text/plain"] == "12.5"


def run_check(env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", "check"], cwd=ROOT, env=env, capture_output=True,
                          text=True)


def test_check_passes_on_the_repository_and_prints_the_gradescope_outline():
    done = cli("check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "residual-connections: autograder 100 points; Part 2 written, 10; Part 3 written, 5" in done.stdout


def test_check_names_the_line_of_a_broken_course_toml(tmp_path):
    text = COURSE_FILE.read_text().replace("late_per_day = 5      #", 'late_per_day = "five"      #', 1)
    (tmp_path / "course.toml").write_text(text)
    line = 1 + text.splitlines().index(next(l for l in text.splitlines() if '"five"' in l))
    done = run_check({**os.environ, "COURSE_FILE": str(tmp_path / "course.toml")})
    assert done.returncode == 2 and f"course.toml:{line}: assignments.{ASSIGNMENT}.late_per_day" in done.stderr


# ---- on a copy of the demo class (make demo): no test here regrades anything


@pytest.fixture
def demo_copy(demo_class, tmp_path, monkeypatch):
    """A copy of the demo's instructor folder and of course.toml, that nbgrader and the command line use."""
    area = tmp_path / "instructor"
    shutil.copytree(demo_class[0], area)
    course_file = tmp_path / "course.toml"
    course_file.write_text(COURSE_FILE.read_text())
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(area))
    monkeypatch.setenv("COURSE_FILE", str(course_file))
    return area, course_file


def csv_scores(area: Path) -> dict[str, str]:
    rows = list(csv.reader((area / "canvas" / "grades.csv").open(encoding="utf-8")))
    return {r[1] if r[0] != "Points Possible" else "possible": r[5] for r in rows[1:]}


def gradebook_totals(area: Path) -> dict[str, float]:
    """What formgrader shows: each submission's score less its late penalty, and the points possible."""
    with Gradebook(f"sqlite:///{area / 'gradebook.db'}") as gb:
        out = {s.student.id: round(s.score - (s.late_submission_penalty or 0), 2)
               for s in gb.assignment_submissions(ASSIGNMENT)}
        out["possible"] = gb.find_assignment(ASSIGNMENT).max_score
        return out


def assert_csv_matches_gradebook(area: Path) -> dict[str, str]:
    scores, totals = csv_scores(area), gradebook_totals(area)
    for student, total in totals.items():
        assert float(scores[student]) == max(0, total), student
    return scores


def test_new_points_in_course_toml_reach_every_path_without_regrading(demo_copy, tmp_path):
    area, course_file = demo_copy
    store = area / "grading" / f"{ASSIGNMENT}.jsonl"
    kept = store.read_bytes()
    before = csv_scores(area)
    text = course_file.read_text().replace("auto = { 1 = 20,", "auto = { 1 = 25,")
    course_file.write_text(text.replace("manual = { 2 = 10, 3 = 5", "manual = { 2 = 12, 3 = 5"))

    check = run_check(os.environ)
    assert check.returncode == 1
    line = 1 + text.splitlines().index(next(l for l in text.splitlines() if "1 = 25" in l))
    assert re.search(rf"assignments/{ASSIGNMENT}/{ASSIGNMENT}.ipynb:\d+: part1-tests carries 20 points, "
                     rf"{course_file}:{line} gives 25: run `make release`", check.stdout), check.stdout
    assert "part2-written carries 10 points" in check.stdout and "the prompt says 10 points" in check.stdout

    nbgrader("export", FINAL, "--log-level=ERROR")
    after = assert_csv_matches_gradebook(area)
    assert after["possible"] == "142" and before["possible"] == "135"
    assert float(after["51001"]) == float(before["51001"]) + 5           # full marks: part 1 now 25 of 25

    nbgrader("generate_feedback", ASSIGNMENT, "--student=51001", "--force", "--log-level=ERROR")
    page = (area / "feedback" / "51001" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "Score: 25.0 / 25.0" in page and re.search(r"/ 12(\.0)?\b|\(12 points\)", page)

    done = subprocess.run([sys.executable, "-m", "autograder", "answers", ASSIGNMENT, str(area / "submitted"),
                           "--out", str(tmp_path / "answers")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    from pypdf import PdfReader
    pdf = next((tmp_path / "answers").rglob("*.pdf"))
    assert "12 points" in " ".join(p.extract_text() for p in PdfReader(pdf).pages)

    done = subprocess.run([sys.executable, "-m", "autograder", "gradescope", ASSIGNMENT, "--out",
                           str(tmp_path / "gs")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(next((tmp_path / "gs").rglob("autograder.zip"))) as zf:
        shipped = load_text(zf.read("course.toml").decode(), tmp_path)
    assert shipped.auto[1] == 25 and shipped.manual[2] == 12     # its Grader shares 25 over part 1's tests
    assert store.read_bytes() == kept                             # nothing was graded again


def load_text(text: str, folder: Path):
    (folder / "shipped.toml").write_text(text)
    return load(folder / "shipped.toml").assignment(ASSIGNMENT)


def test_late_policy_and_exceptions_apply_without_regrading(demo_copy, monkeypatch):
    area, course_file = demo_copy
    store = area / "grading" / f"{ASSIGNMENT}.jsonl"
    kept = store.read_bytes()
    late = "51005"     # the demo's LATE upload: 26 hours after the deadline
    course_file.write_text(course_file.read_text().replace("late_per_day = 5      #", "late_per_day = 10      #", 1))
    nbgrader("export", FINAL, "--log-level=ERROR")
    full = gradebook_totals(area)[late] + 20
    assert float(assert_csv_matches_gradebook(area)[late]) == full - 20          # 2 started days x 10

    (area / "exceptions.toml").write_text(f'[{ASSIGNMENT}.{late}]\nextra_days = 1\n')
    nbgrader("export", FINAL, "--log-level=ERROR")
    assert float(assert_csv_matches_gradebook(area)[late]) == full - 10          # 2 hours after the extension
    assert gradescope_matches_gradebook(area, course_file, late, gradescope_exceptions(area)) == 10

    (area / "exceptions.toml").write_text(f'[{ASSIGNMENT}.{late}]\nextra_days = 1\nwaive_late = true\n')
    nbgrader("export", FINAL, "--log-level=ERROR")
    assert float(assert_csv_matches_gradebook(area)[late]) == full
    granted = gradescope_exceptions(area)
    assert gradescope_matches_gradebook(area, course_file, late, granted) == 0
    stranger = gradescope_late(area, course_file, late, {"name": "Not On The Roster", "email": "who@example.org"},
                               granted)
    assert stranger.penalty == 20 and "Not matched to the course roster" in stranger.line()
    from autograder.cli import check
    monkeypatch.setattr(check, "GRADESCOPE", area / "gs")       # where gradescope_exceptions built the zip
    assert cli("check").returncode == 0
    (area / "exceptions.toml").write_text(f'[{ASSIGNMENT}.{late}]\nextra_days = 2\n')
    done = cli("check")
    assert done.returncode == 1 and "built with other exceptions than instructor/exceptions.toml" in done.stdout
    with Gradebook(f"sqlite:///{area / 'gradebook.db'}") as gb:
        assert gb.find_submission(ASSIGNMENT, late).extension == dt.timedelta(days=1)   # formgrader shows it
    assert store.read_bytes() == kept


def gradescope_exceptions(area: Path) -> Granted:
    """The exceptions the Gradescope zip carries, built as `make gradescope` builds it (the instructor folder's
    exceptions.toml and roster)."""
    done = subprocess.run([sys.executable, "-m", "autograder", "gradescope", ASSIGNMENT, "--out",
                           str(area / "gs")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(area / "gs" / ASSIGNMENT / "autograder.zip") as zf:
        return Granted(json.loads(zf.read(FILE))["students"])


def gradescope_late(area: Path, course_file: Path, student: str, user: dict, granted: Granted):
    """The Late a Gradescope run gives the student's upload (its time; Gradescope's due date the deadline),
    for a Gradescope user named by e-mail and name."""
    from autograder.lms.gradescope.late import lateness
    with Gradebook(f"sqlite:///{area / 'gradebook.db'}") as gb:
        uploaded = gb.find_submission(ASSIGNMENT, student).timestamp.replace(tzinfo=dt.timezone.utc)
    metadata = {"id": 1, "created_at": uploaded.isoformat(), "users": [user],
                "assignment": {"due_date": A.deadline.isoformat(), "late_due_date": None}}
    return lateness(metadata, load(course_file).assignment(ASSIGNMENT), "late_per_day", granted.match([user]))


def gradescope_matches_gradebook(area: Path, course_file: Path, student: str, granted: Granted) -> float:
    """The student's Gradescope score (the kept result less the penalty) equals the gradebook's automatic
    score less its late penalty: the penalty, which both took from Exception_.penalty."""
    from autograder.core.extract import Template
    from autograder.lms.gradescope.results import to_gradescope
    from autograder.nbgrading.autograde import class_store
    late = gradescope_late(area, course_file, student, {"email": "neze@uni.example", "name": "Ngozi Eze"}, granted)
    notebook = next((area / "submitted" / student / ASSIGNMENT).glob("*.ipynb"))
    kept = class_store(f"sqlite:///{area / 'gradebook.db'}", ASSIGNMENT).get(Template(SOURCE_NB).key(notebook))
    with Gradebook(f"sqlite:///{area / 'gradebook.db'}") as gb:
        submission = gb.find_submission(ASSIGNMENT, student)
        gradebook = (submission.code_score, submission.late_submission_penalty or 0)
    doc = to_gradescope(kept.scaled(load(course_file).assignment(ASSIGNMENT).auto), visibility="visible", late=late)
    assert (doc["extra_data"]["auto_score"], late.penalty) == gradebook
    assert doc["score"] == gradebook[0] - gradebook[1] and late.canvas_id == student and late.exception
    return late.penalty


# the roster is the export's to check against: feedback refuses only what is wrong in the file itself
@pytest.mark.parametrize("text, problem, feedback_refuses", [
    ("[residual-connections.51999]\nextra_days = 2\n", "exceptions.toml:1: residual-connections.51999: unknown student",
     False),
    ("[residual-connections.51005]\nextra_days = -2\n", "exceptions.toml:2: residual-connections.51005.extra_days",
     True),
])
def test_a_bad_exceptions_file_stops_export_and_feedback_changing_nothing(demo_copy, text, problem, feedback_refuses):
    area, _ = demo_copy
    csv_before, db_before = (area / "canvas" / "grades.csv").read_bytes(), (area / "gradebook.db").read_bytes()
    (area / "exceptions.toml").write_text(text)
    done = nbgrader("export", FINAL, capture=True, check=False)
    assert done.returncode != 0 and problem in done.stdout + done.stderr
    assert (area / "canvas" / "grades.csv").read_bytes() == csv_before
    assert (area / "gradebook.db").read_bytes() == db_before
    if feedback_refuses:        # nbgrader's --force would remove the old pages first
        page = area / "feedback" / "51001" / ASSIGNMENT / f"{ASSIGNMENT}.html"
        old_page = page.read_bytes()
        done = nbgrader("generate_feedback", ASSIGNMENT, "--force", capture=True, check=False)
        assert done.returncode != 0 and problem in done.stdout + done.stderr
        assert page.read_bytes() == old_page and (area / "gradebook.db").read_bytes() == db_before
