"""`make demo`: a semester's grading loop on the bundled sample class, offline, no setup.

    with class_canvas(course) as local:        # a local Canvas holding the class; `course` pointed at it
        grades_csv = run_loop(local)            # in dist/demo-class/
        print(push_dry_run(local))

A local Canvas (canvas_server.py) holds the class as Canvas would (class_canvas), and the loop runs
the steps an instructor runs against it: `canvas pull` (the roster, and each latest upload filed by
nbgrader zip_collect), autograde out of kernel (in parallel), nbgrader generate_feedback, nbgrader
export to Canvas's gradebook CSV; then `canvas push`'s dry run against the same Canvas. Everything is
written to dist/demo-class/, never to instructor/, the class report (what to reteach, similar
submissions) too: dist/demo-class/report/residual-connections/.
"""
from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import functools
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core import seeds
from ..course import ROOT, Course
from ..lms.canvas.api import TOKEN_ENV, CanvasApiError
from ..lms.canvas.plugins import FINAL
from ..lms.canvas.pull import pull, summary
from ..lms.canvas.roster import TEST_STUDENT, canvas_dir, read_roster
from ..nbgrading.classrun import register
from ..nbgrading.review import ClassQueue
from ..nbgrading.run import NbgraderError, nbgrader, nbgrader_config
from ..report.build import write_report
from ..report.classlist import class_report_dir, from_class
from . import fake_canvas
from .canvas_server import LocalCanvas

ASSIGNMENT = "residual-connections"
SAMPLES = ROOT / "submissions" / ASSIGNMENT
ROSTER = ROOT / "submissions" / "roster.csv"
AREA = ROOT / "dist" / "demo-class"
# The class, in roster order; the roster's last student submits nothing.
# copied-honest-a and renamed-honest-a are copies of honest-a, for the report's similarity check;
# the two forged-* samples hold tests for an instructor's review (python -m autograder review).
CLASS = ["full-marks", "partly-right", "renamed-honest-a", "silent-broadcasting", "in-place-add",
         "scaled-shortcut-ignored", "hard-coded-example", "pre-post-swapped", "copied-honest-a",
         "crash-at-import", "invalid-json", "checker-cheat", "honest-a", "forged-mutation-report",
         "forged-gradients-report"]
LATE = {"51005"}          # Canvas marks this upload LATE
RESUBMITTED = {"51002"}   # an older attempt (the untouched release) is superseded by a newer one


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run_loop(course: Course, area: Path = AREA, workers: int | None = None) -> Path:
    """Run the whole loop in `area` (emptied first), pulling from the Canvas `course` names (class_canvas's);
    return the Canvas CSV it exported."""
    if area.exists():
        shutil.rmtree(area)
    area.mkdir(parents=True)
    with _instructor_dir(area):
        return _loop(course, area, workers)


def review_line(course: Course, area: Path = AREA) -> str:
    """The review queue's line for the class graded in `area` (nbgrading/review.py), and the command that
    reviews it: with `area` as the instructor folder and the secret the demo graded with, without which
    nbgrader's autograde refuses the class's results store."""
    from nbgrader.coursedir import CourseDirectory
    with _instructor_dir(area):
        line = ClassQueue(course, ASSIGNMENT, CourseDirectory(config=nbgrader_config())).summary()
        throwaway = os.environ.get(seeds.ENV) == _throwaway_secret()   # else the caller's own, not shown
    secret = f" {seeds.ENV}={_throwaway_secret()}" if throwaway else ""
    return (f"{line}\nin the demo class{' (graded with a throwaway course secret, made for this run)' * throwaway}:"
            f"\n  COURSE_INSTRUCTOR_DIR={os.path.relpath(area, ROOT)}{secret} python -m autograder review {ASSIGNMENT}")


def class_report(course: Course, area: Path = AREA) -> Path:
    """The class report of the class graded in `area`, in its report/ASSIGNMENT/; returns report.html's path."""
    with _instructor_dir(area):
        out = class_report_dir(ASSIGNMENT)
        write_report(course, ASSIGNMENT, from_class(course, ASSIGNMENT), out)
    return out / "report.html"


@functools.cache
def _throwaway_secret() -> str:
    """The demo's course secret, one per process: the loop grades with it and the review command needs it."""
    return secrets.token_hex(32)


@contextmanager
def _instructor_dir(area: Path):
    """nbgrader_config.py's instructor folder set to `area`, here and in the nbgrader it runs. Unless a
    course secret is set in the environment (tests set one), the demo grades with a throwaway one
    (core/seeds.py), so that it never makes or reads the instructor's ~/.config secret."""
    demo_env = {"COURSE_INSTRUCTOR_DIR": str(area)}
    if not (os.environ.get(seeds.ENV) or os.environ.get(seeds.ENV_FILE)):
        demo_env[seeds.ENV] = _throwaway_secret()
    with _environ(demo_env):
        yield


@contextmanager
def _environ(values: dict[str, str]):
    """os.environ with `values` set, here and in the subprocesses started meanwhile; restored after."""
    before = {var: os.environ.get(var) for var in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for var, value in before.items():
            if value is None:
                del os.environ[var]
            else:
                os.environ[var] = value


@contextmanager
def class_canvas(course: Course) -> Iterator[Course]:
    """A local Canvas (canvas_server.py) holding the class as Canvas would: submissions/roster.csv's students
    in their sections, and Canvas's test student; its column for ASSIGNMENT as the assignment (title, id,
    points); CLASS's uploads in roster order, 2 hours before the due date, LATE's 26 hours after it, RESUBMITTED's
    a second attempt after one with the release notebook; the last student uploading nothing and excused.
    Yields `course` pointed at it, a throwaway token in CANVAS_TOKEN meanwhile."""
    a = course.assignment(ASSIGNMENT)
    roster = read_roster(ROSTER, tuple(course.assignments))
    title, _, canvas_id = roster.column(ASSIGNMENT).rpartition(" (")      # "Residual Connections (73101)"
    token = secrets.token_urlsafe(16)
    with LocalCanvas(token) as canvas, _environ({TOKEN_ENV: token}):
        aid = canvas.add_assignment(title, roster.points[ASSIGNMENT], a.deadline, assignment_id=int(canvas_id[:-1]))
        for s in roster.students:
            canvas.add_student(s.name, s.section, s.sis_user_id, s.sis_login_id, user_id=int(s.id))
        canvas.add_student(TEST_STUDENT, roster.students[0].section, test_student=True)
        stem, suffix = Path(a.notebook).stem, Path(a.notebook).suffix
        for s, name in zip(roster.students, CLASS):
            when = a.deadline + (fake_canvas.LATE if s.id in LATE else fake_canvas.ON_TIME)
            filename = a.notebook
            if s.id in RESUBMITTED:   # Canvas names a file uploaded again under the same name "-1"
                canvas.submit(aid, int(s.id), filename, a.notebook_path(ROOT / "assignments").read_bytes(),
                              when - dt.timedelta(hours=1))
                filename = f"{stem}-1{suffix}"
            canvas.submit(aid, int(s.id), filename, (SAMPLES / f"{name}.ipynb").read_bytes(), when)
        canvas.excuse(aid, int(roster.students[-1].id))
        yield dataclasses.replace(course, canvas=dataclasses.replace(course.canvas, base_url=canvas.base_url,
                                                                     assignments={ASSIGNMENT: aid}),
                                  lms=dataclasses.replace(course.lms, canvas_course_id=canvas.course_id))


def _loop(course: Course, area: Path, workers: int | None) -> Path:
    from nbgrader.coursedir import CourseDirectory

    config = nbgrader_config()
    db_url = config.CourseDirectory.db_url
    a = course.assignment(ASSIGNMENT)

    step(f"register {ASSIGNMENT} in the gradebook (nbgrader generate_assignment; due {a.deadline:%Y-%m-%d %H:%M %Z})")
    register(course, ASSIGNMENT, db_url)

    step(f"canvas pull from a local Canvas holding the class (python -m autograder canvas pull {ASSIGNMENT}; "
         "nbgrader zip_collect files the uploads)")
    try:
        pulled = pull(course, ASSIGNMENT, CourseDirectory(config=config))
    except (CanvasApiError, NbgraderError) as e:
        raise SystemExit(str(e)) from None
    print("\n".join(summary(pulled)))

    step("autograde out of kernel, in parallel (python -m autograder autograde)")
    command = [sys.executable, "-m", "autograder", "autograde", ASSIGNMENT]
    if workers:
        command += ["--workers", str(workers)]
    if subprocess.run(command, cwd=ROOT).returncode != 0:
        raise SystemExit("python -m autograder autograde failed")

    step("feedback (nbgrader generate_feedback)")
    _nbgrader("generate_feedback", ASSIGNMENT, "--force", log_level="ERROR")   # its late-penalty line: the export says it

    step(f"Canvas gradebook CSV (nbgrader export {FINAL})")
    print("the written answers are not graded and the held tests wait for review, so a plain `nbgrader export` "
          "refuses;\nthe demo exports as final: written answers count 0, held tests their points so far")
    _nbgrader("export", FINAL)
    return canvas_dir(db_url) / "grades.csv"


def push_dry_run(course: Course, area: Path = AREA) -> str:
    """`python -m autograder canvas push ASSIGNMENT --final`'s table for the class graded in `area`, against the
    Canvas `course` names (class_canvas's: the excused student untouched)."""
    from nbgrader.coursedir import CourseDirectory

    from ..lms.canvas.push import plan_push
    with _instructor_dir(area):
        plan = plan_push(course, ASSIGNMENT, CourseDirectory(config=nbgrader_config()), final=True)
    return f"{plan.table()}\ndry run: {plan.counts()}; `--yes` makes them"


def _nbgrader(*args: str, log_level: str = "WARN") -> None:
    try:
        nbgrader(*args, f"--log-level={log_level}")
    except NbgraderError as e:
        raise SystemExit(str(e)) from None


def grade_table(grades_csv: Path, uploaded: dict[str, str]) -> str:
    """The exported CSV as the instructor checks it before uploading, with what each student uploaded."""
    with grades_csv.open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], [r for r in rows[1:] if r[0].strip() != "Points Possible"]
    possible = next(r for r in rows[1:] if r[0].strip() == "Points Possible")
    column = header.index(next(h for h in header[5:] if h))
    title = f"{header[column]} (of {possible[column]})"
    lines = [f"{'Student':<24} {'Canvas ID':<10} {title:<40} uploaded (submissions/{ASSIGNMENT}/)"]
    lines += [f"{r[0]:<24} {r[1]:<10} {r[column]:<40} {uploaded.get(r[1], 'nothing')}" for r in body]
    return "\n".join(lines)
