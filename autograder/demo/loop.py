"""`make demo`: a semester's grading loop on the bundled sample class, offline, no setup.

A Canvas roster and a Canvas bulk download (built from submissions/) go through the
same steps an instructor runs: import the roster, nbgrader zip_collect, autograde
out of kernel (in parallel), nbgrader generate_feedback, nbgrader export to Canvas's
gradebook CSV; then `canvas push`'s dry run against a local Canvas (canvas_server.py)
that holds the same class. Everything is written to dist/demo-class/, never to instructor/, the class
report (what to reteach, similar submissions) too: dist/demo-class/report/residual-connections/.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
import os
import secrets
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from ..core import seeds
from ..course import ROOT, Course
from ..lms.canvas.plugins import FINAL
from ..lms.canvas.roster import canvas_dir, import_roster
from ..nbgrading.classrun import register
from ..nbgrading.review import ClassQueue
from ..nbgrading.run import NbgraderError, nbgrader, nbgrader_config
from ..report.build import write_report
from ..report.classlist import class_report_dir, from_class
from .canvas_server import LocalCanvas
from .fake_canvas import build_bulk_download, pair_uploads

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
RESUBMITTED = {"51002"}   # an older upload (the untouched release) is superseded by a newer one


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run_loop(course: Course, area: Path = AREA, workers: int | None = None) -> Path:
    """Run the whole loop in `area` (emptied first); return the Canvas CSV it exported."""
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
    before = {var: os.environ.get(var) for var in demo_env}
    os.environ.update(demo_env)
    try:
        yield
    finally:
        for var, value in before.items():
            if value is None:
                del os.environ[var]
            else:
                os.environ[var] = value


def _loop(course: Course, area: Path, workers: int | None) -> Path:
    config = nbgrader_config()
    db_url = config.CourseDirectory.db_url
    a = course.assignment(ASSIGNMENT)

    step(f"register {ASSIGNMENT} in the gradebook (nbgrader generate_assignment; due {a.deadline:%Y-%m-%d %H:%M %Z})")
    register(course, ASSIGNMENT, db_url)

    step(f"import the Canvas roster {ROSTER.relative_to(ROOT)}")
    roster = import_roster(ROSTER, db_url, tuple(course.assignments))
    print(f"{len(roster.students)} students")

    step("Canvas 'Download Submissions' zip")
    uploads = pair_uploads(roster, [SAMPLES / f"{name}.ipynb" for name in CLASS], late=LATE,
                           resubmitted=RESUBMITTED, earlier=a.notebook_path(ROOT / "assignments"))
    archive = ROOT / config.ZipCollectApp.downloaded_directory / ASSIGNMENT / "archive" / "submissions.zip"
    build_bulk_download(archive, uploads, a.notebook, a.deadline)
    print(f"{archive.relative_to(ROOT)}: {len(uploads)} students uploaded, "
          f"{len(roster.students) - len(uploads)} did not")

    step("collect (nbgrader zip_collect)")
    _nbgrader("zip_collect", ASSIGNMENT, "--force", log_level="ERROR")   # the plugins print what matters

    step("autograde out of kernel, in parallel (python -m autograder autograde)")
    command = [sys.executable, "-m", "autograder", "autograde", ASSIGNMENT]
    if workers:
        command += ["--workers", str(workers)]
    if subprocess.run(command, cwd=ROOT).returncode != 0:
        raise SystemExit("python -m autograder autograde failed")

    step("feedback (nbgrader generate_feedback)")
    _nbgrader("generate_feedback", ASSIGNMENT, "--force")

    step(f"Canvas gradebook CSV (nbgrader export {FINAL})")
    print("the written answers are not graded and the held tests wait for review, so a plain `nbgrader export` "
          "refuses;\nthe demo exports as final: written answers count 0, held tests their points so far")
    _nbgrader("export", FINAL)
    return canvas_dir(db_url) / "grades.csv"


def push_dry_run(course: Course, area: Path = AREA) -> str:
    """`python -m autograder canvas push ASSIGNMENT --final`'s table for the class graded in `area`, against a
    local Canvas holding the roster and its uploads, the student who uploaded nothing excused there."""
    from nbgrader.coursedir import CourseDirectory

    from ..lms.canvas.api import TOKEN_ENV
    from ..lms.canvas.push import plan_push
    from ..lms.canvas.roster import read_roster
    a = course.assignment(ASSIGNMENT)
    token = secrets.token_urlsafe(16)
    with LocalCanvas(token) as canvas, _instructor_dir(area):
        aid = canvas.add_assignment("Residual Connections", a.max_auto + a.max_manual, a.deadline, assignment_id=73101)
        roster = read_roster(ROSTER)
        for s in roster.students:
            canvas.add_student(s.name, s.section, s.sis_user_id, s.sis_login_id, user_id=int(s.id))
        for s, name in zip(roster.students, CLASS):
            canvas.submit(aid, int(s.id), a.notebook, (SAMPLES / f"{name}.ipynb").read_bytes(), a.deadline)
        canvas.excuse(aid, int(roster.students[-1].id))
        local = dataclasses.replace(course, canvas=dataclasses.replace(course.canvas, base_url=canvas.base_url,
                                                                       assignments={ASSIGNMENT: aid}),
                                    lms=dataclasses.replace(course.lms, canvas_course_id=canvas.course_id))
        before = os.environ.get(TOKEN_ENV)
        os.environ[TOKEN_ENV] = token
        try:
            plan = plan_push(local, ASSIGNMENT, CourseDirectory(config=nbgrader_config()), final=True)
        finally:
            os.environ.pop(TOKEN_ENV) if before is None else os.environ.update({TOKEN_ENV: before})
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
