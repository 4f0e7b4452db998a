"""Canvas through its REST API (canvas pull, canvas push) against the local Canvas (demo/canvas_server.py)."""
import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys

import pytest
from nbgrader.api import Gradebook

from autograder import course as course_mod
from autograder.course import ROOT, CanvasApi, CourseError
from autograder.demo.canvas_server import LocalCanvas
from autograder.lms.canvas import api
from autograder.nbgrading.run import nbgrader, tools_path
from helpers import COURSE, cli
from test_canvas import graded_class, write_notebook

ASSIGNMENT = "residual-connections"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
DEADLINE = COURSE.assignment(ASSIGNMENT).deadline
TOKEN = "7~Zq0fake-canvas-token-9bX"
# graded_class's roster (test_canvas.ROWS), as Canvas's users
# nbgrader's add_submission (graded_class) trips SQLAlchemy's autoflush warnings
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
STUDENTS = [("Abara, Chidi", 51001, "Section A"), ("Müller, Tobias", 51002, "Section B"),
            ("Dubois, Amélie", 51003, "Section A"), ("Eze, Ngozi", 51004, "Section B"),
            ("Fischer, Jonas", 51005, "Section A")]


@pytest.fixture
def canvas(tmp_path, monkeypatch):
    """The local Canvas with graded_class's five students (and the test student) and the assignment; the course
    (course.toml's, pointed at it) is what `python -m autograder` loads; tmp_path/instructor is the working area."""
    monkeypatch.setenv("PATH", tools_path())
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(tmp_path / "instructor"))
    monkeypatch.setenv(api.TOKEN_ENV, TOKEN)
    monkeypatch.setattr(api.ThrottledSession, "backoff_s", (0.01,) * 3)
    with LocalCanvas(TOKEN) as local:
        local.max_per_page = 2                    # every list takes several pages
        local.aid = local.add_assignment("Residual Connections", 100, DEADLINE, assignment_id=73101)
        for name, uid, section in STUDENTS:
            local.add_student(name, section, sis_user_id=f"S{uid % 10}", login_id=name.split(",")[0].lower(),
                              user_id=uid)
        local.add_student("Student, Test", "Section A", test_student=True, user_id=51999)
        course = dataclasses.replace(COURSE, canvas=CanvasApi(base_url=local.base_url, assignments={ASSIGNMENT: local.aid}),
                                     lms=dataclasses.replace(COURSE.lms, canvas_course_id=local.course_id))
        monkeypatch.setattr(course_mod, "load", lambda *args: course)
        yield local


def changes(local: LocalCanvas) -> list:
    """The requests that change something in Canvas (everything but GET)."""
    return [r for r in local.requests if r[0] != "GET"]


def comments(local: LocalCanvas, uid: int) -> list[tuple[str, list[str]]]:
    return [(c["comment"], [a["display_name"] for a in c["attachments"]])
            for c in local.submission(local.aid, uid)["submission_comments"]]


# --- pull -----------------------------------------------------------------------------------

def test_pull_files_the_latest_uploads_as_zip_collect_does(tmp_path, canvas):
    early = DEADLINE - dt.timedelta(hours=2)
    canvas.submit(canvas.aid, 51001, NOTEBOOK, b"{ truncated", early)      # superseded by the next attempt
    canvas.submit(canvas.aid, 51001, NOTEBOOK, write_notebook(tmp_path / "a.ipynb", "abara").read_bytes(), early,
                  also=(("notes.pdf", b"%PDF-1.4"),))
    canvas.extend(canvas.aid, 51002, DEADLINE + dt.timedelta(days=2))     # within the extension: not late
    canvas.submit(canvas.aid, 51002, NOTEBOOK, write_notebook(tmp_path / "b.ipynb", "muller").read_bytes(),
                  DEADLINE + dt.timedelta(days=1))
    canvas.submit(canvas.aid, 51003, NOTEBOOK, b"{ truncated", DEADLINE + dt.timedelta(hours=5))
    canvas.submit(canvas.aid, 51004, NOTEBOOK, write_notebook(tmp_path / "d.ipynb", "eze").read_bytes(), early)
    canvas.excuse(canvas.aid, 51004)
    proc = cli("canvas", "pull", ASSIGNMENT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = proc.stdout.splitlines()
    assert said[-5:] == [
        "roster: 5 students (Section A, Section B); Canvas's test student left out",
        "submitted: 3; late in Canvas: Dubois, Amélie (51003)",
        "missing: Fischer, Jonas (51005)",
        "excused (not collected, never graded here): Eze, Ngozi (51004)",
        "extensions: Müller, Tobias (51002) due 2027-02-17T23:59:00Z"]
    submitted = tmp_path / "instructor" / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["51001", "51002"]
    assert (submitted / "51002" / ASSIGNMENT / "timestamp.txt").read_text().startswith("2027-02-15 23:59:00")
    record = tmp_path / "instructor" / "canvas"
    problems = json.loads((record / f"collected-{ASSIGNMENT}.json").read_text(encoding="utf-8"))["problems"]
    assert [p.split(": ", 1)[1] for p in problems] == [
        "not a notebook (.ipynb); not collected", problems[1].split(": ", 1)[1]]
    assert problems[1].startswith("duboisamélie_LATE_51003_") and "is not a readable notebook" in problems[1]
    roster = json.loads((record / "roster.json").read_text(encoding="utf-8"))
    assert [s["id"] for s in roster["students"]] == ["51001", "51003", "51004", "51005", "51002"]
    assert roster["columns"] == {ASSIGNMENT: "Residual Connections (73101)"}
    assert roster["students"][0]["sis_login_id"] == "abara" and roster["students"][0]["section"] == "Section A"
    assert sum(1 for r in canvas.requests if r[1].endswith("/enrollments")) == 3    # 6 enrollments, 2 a page
    assert not changes(canvas)
    status = cli("status", ASSIGNMENT).stdout       # the override is 51002's deadline, as exceptions.toml's is
    assert "extended (exceptions.toml, Canvas overrides): 1: Müller, Tobias (51002) Canvas override: due " \
           "2027-02-17T23:59:00+00:00" in status, status


def test_bad_token_is_one_line_exit_1_and_written_nowhere(tmp_path, canvas, monkeypatch):
    monkeypatch.setenv(api.TOKEN_ENV, "revoked-" + TOKEN)
    for args in (("pull", ASSIGNMENT), ("push", ASSIGNMENT, "--final", "--yes")):
        proc = cli("canvas", *args)
        assert proc.returncode == 1
        assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
        assert "refused the access token (401" in proc.stderr and TOKEN not in proc.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert written == [] and not changes(canvas)


def test_token_file_must_be_its_owners_alone(tmp_path, canvas, monkeypatch):
    monkeypatch.delenv(api.TOKEN_ENV)
    token_file = tmp_path / "canvas-token"
    token_file.write_text(TOKEN + "\n")
    course = dataclasses.replace(course_mod.load(), canvas=dataclasses.replace(course_mod.load().canvas,
                                                                              token_file=str(token_file)))
    monkeypatch.setattr(course_mod, "load", lambda *args: course)
    token_file.chmod(0o644)
    proc = cli("canvas", "push", ASSIGNMENT, "--final")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert f"{token_file}: the Canvas token file is readable by others (mode 0644); refused" in proc.stderr
    token_file.chmod(0o600)
    assert api.read_token(course) == TOKEN


def test_canvas_settings_in_course_toml_are_checked(tmp_path):
    text = (ROOT / "course.toml").read_text(encoding="utf-8")
    bad = tmp_path / "course.toml"
    bad.write_text(text.replace("assignments = { residual-connections = 0,", "assignments = { residual = 7,"))
    with pytest.raises(CourseError, match=r"canvas\.assignments\.residual: not an assignment of this course"):
        course_mod.load(bad)
    bad.write_text(text.replace('base_url = ""', 'base_url = "canvas.example.edu"'))
    with pytest.raises(CourseError, match=r"canvas\.base_url: expected an http\(s\) URL"):
        course_mod.load(bad)


# --- push ------------------------------------------------------------------------------------

@pytest.fixture
def pushed_class(tmp_path, canvas):
    """graded_class's gradebook (Abara 70, Müller 50 with a written answer not graded) with feedback pages;
    both uploaded, Abara's notebook with written answers; Dubois excused in Canvas."""
    db_url = f"sqlite:///{tmp_path / 'instructor' / 'gradebook.db'}"
    graded_class(tmp_path, db_url)
    for uid in (51001, 51002):
        page = tmp_path / "instructor" / "feedback" / str(uid) / ASSIGNMENT / f"{ASSIGNMENT}.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<html>feedback for {uid}</html>")
        canvas.submit(canvas.aid, uid, NOTEBOOK, b"{}", DEADLINE)
    notebook = tmp_path / "instructor" / "submitted" / "51001" / ASSIGNMENT / NOTEBOOK
    notebook.parent.mkdir(parents=True)
    shutil.copy(ROOT / "submissions" / ASSIGNMENT / "full-marks.ipynb", notebook)   # three written answers
    canvas.excuse(canvas.aid, 51003)
    return db_url


def test_push_is_a_dry_run_until_yes_then_changes_nothing_again(canvas, pushed_class):
    proc = cli("canvas", "push", ASSIGNMENT)
    assert proc.returncode == 1 and "manual grades pending for 1 students" in proc.stderr
    assert f"canvas push {ASSIGNMENT} --final" in proc.stderr and not changes(canvas)
    proc = cli("canvas", "push", ASSIGNMENT, "--final")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "Student                    Canvas ID  Canvas grade -> new    comment",
        "Abara, Chidi               51001      - -> 70                feedback page + written answers PDF",
        "Müller, Tobias             51002      - -> 50                feedback page",
        "Dubois, Amélie             51003      excused                excused in Canvas: untouched",
        "Eze, Ngozi                 51004      - (left as is)         no graded submission",
        "Fischer, Jonas             51005      - (left as is)         no graded submission",
        f"dry run: 2 grades and 2 comments to change, of 5 students; `python -m autograder canvas push {ASSIGNMENT} "
        "--final --yes` makes them"]
    assert not changes(canvas)

    assert cli("canvas", "push", ASSIGNMENT, "--final", "--yes").returncode == 0
    assert [canvas.submission(canvas.aid, uid)["score"] for uid in (51001, 51002, 51003, 51004)] == \
        [70.0, 50.0, None, None]
    [(text, files)] = comments(canvas, 51001)
    assert files == [f"{ASSIGNMENT}.html", "written-answers.pdf"] and f"[autograder {ASSIGNMENT} " in text
    assert [files for _, files in comments(canvas, 51002)] == [[f"{ASSIGNMENT}.html"]]
    assert comments(canvas, 51003) == [] and canvas.submission(canvas.aid, 51003)["excused"]

    before = len(changes(canvas))
    proc = cli("canvas", "push", ASSIGNMENT, "--final", "--yes")
    assert proc.returncode == 0 and "pushed: 0 students changed" in proc.stdout
    assert len(changes(canvas)) == before


def test_a_changed_grade_is_updated_without_a_second_comment(canvas, pushed_class):
    assert cli("canvas", "push", ASSIGNMENT, "--final", "--yes").returncode == 0
    with Gradebook(pushed_class) as gb:
        written = gb.find_grade("written", ASSIGNMENT, ASSIGNMENT, "51002")
        written.manual_score, written.needs_manual_grade = 15.0, False
        gb.db.commit()
    proc = cli("canvas", "push", ASSIGNMENT, "--yes")      # nothing pending now
    assert proc.returncode == 0, proc.stderr
    assert "Müller, Tobias             51002      50 -> 65               feedback already posted" in proc.stdout
    assert canvas.submission(canvas.aid, 51002)["score"] == 65.0 and len(comments(canvas, 51002)) == 1


def test_throttling_and_a_dropped_connection_finish_on_rerun_with_nothing_twice(canvas, pushed_class):
    canvas.throttle(2)                  # waited out
    canvas.drop("PUT", 1)               # Abara's grade and comment are made, the answer is lost
    proc = cli("canvas", "push", ASSIGNMENT, "--final", "--yes")
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert "network failure (ConnectionError); run the same command again" in line and "Abara, Chidi (51001)" in line
    canvas.drop("POST", 1)              # Müller's upload is lost this time
    assert cli("canvas", "push", ASSIGNMENT, "--final", "--yes").returncode == 1
    proc = cli("canvas", "push", ASSIGNMENT, "--final", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert len(comments(canvas, 51001)) == 1 and len(comments(canvas, 51002)) == 1
    assert canvas.submission(canvas.aid, 51002)["score"] == 50.0
    assert sum(r[0] == "PUT" for r in canvas.requests) == 2


# --- the whole loop ----------------------------------------------------------------------------

@pytest.mark.slow
def test_pull_autograde_push_against_the_local_canvas(tmp_path, canvas):
    samples = ROOT / "submissions" / ASSIGNMENT
    canvas.submit(canvas.aid, 51001, NOTEBOOK, (samples / "full-marks.ipynb").read_bytes(), DEADLINE)
    canvas.extend(canvas.aid, 51002, DEADLINE + dt.timedelta(days=1))     # uploaded 2 hours after its override
    canvas.submit(canvas.aid, 51002, NOTEBOOK, (samples / "partly-right.ipynb").read_bytes(),
                  DEADLINE + dt.timedelta(hours=26))
    canvas.excuse(canvas.aid, 51003)
    assert cli("canvas", "pull", ASSIGNMENT).returncode == 0
    subprocess.run([sys.executable, "-m", "autograder", "autograde", ASSIGNMENT], cwd=ROOT, check=True,
                   env={**os.environ, "COURSE_INSTRUCTOR_DIR": str(tmp_path / "instructor")})
    nbgrader("generate_feedback", ASSIGNMENT, "--force", "--log-level=ERROR")
    with Gradebook(f"sqlite:///{tmp_path / 'instructor' / 'gradebook.db'}") as gb:
        expected = {s.student.id: s.score - (s.late_submission_penalty or 0) for s in gb.assignment_submissions(ASSIGNMENT)}
        # one started day late from Canvas's due date for 51002, not two from course.toml's
        assert gb.find_submission(ASSIGNMENT, "51002").late_submission_penalty == COURSE.assignment(ASSIGNMENT).late_per_day
    assert cli("canvas", "push", ASSIGNMENT, "--final", "--yes").returncode == 0
    for uid in (51001, 51002):
        assert canvas.submission(canvas.aid, uid)["score"] == pytest.approx(expected[str(uid)])
        [(_, files)] = comments(canvas, uid)
        assert files[0] == f"{ASSIGNMENT}.html"
    assert canvas.submission(canvas.aid, 51003)["score"] is None and comments(canvas, 51003) == []
    before = len(changes(canvas))
    assert cli("canvas", "push", ASSIGNMENT, "--final", "--yes").returncode == 0
    assert len(changes(canvas)) == before


def test_the_demo_ends_with_the_push_dry_run(demo_class):
    from autograder.demo import loop
    area, _ = demo_class
    with loop.class_canvas(COURSE) as canvas:     # the Canvas the demo pulled from, made again
        table = loop.push_dry_run(canvas, area).splitlines()
    assert table[0] == "Student                    Canvas ID  Canvas grade -> new    comment"
    assert table[1] == "Abara, Chidi               51001      - -> 100               feedback page + written answers PDF"
    assert table[-2].endswith("excused                excused in Canvas: untouched")
    assert table[-1] == "dry run: 14 grades and 14 comments to change, of 16 students; `--yes` makes them"
