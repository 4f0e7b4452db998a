"""Grade Gradescope submissions: what run_autograder calls inside Gradescope's container.

    grade_roots(course, [Path("/autograder")], student="student")

Each root is laid out as Gradescope's /autograder:
    source/                    the zip, unpacked: this package, course.toml, exceptions.json, solutions/A/ (root-only)
    submission/                what the student uploaded, any file names
    submission_metadata.json   the submission's id and time, the due date, earlier submissions
    results/results.json       written here in every case (root-only)

Per root: a "not graded" results.json first (what stays if Gradescope kills the run), then
the graded Result and the written answers (results.py), replacing it atomically. Student code runs in sandbox
children as the student user. The seed is the submission's Gradescope id, so a regrade
draws the same inputs and `python -m autograder grade A NOTEBOOK --seed ID` reproduces it.
Several roots share one Grader, graded side by side (a class graded in one process, as the tests do).
"""
from __future__ import annotations

import json
import os
import pwd
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ...course import ROOT, SOLUTIONS, Assignment, Course, CourseError
from ...grading.batch import notebooks
from ...grading.grader import Grader
from ...nbgrading.answers import Questions
from ...results.terminal import shown
from .allowances import FILE, Granted
from .late import lateness
from .results import not_graded, to_gradescope

KILLED = ("the grader stopped before finishing (out of memory, or over Gradescope's time limit); this is not "
          "your fault: ask your instructor to look at this submission")


class NoNotebook(Exception):
    """The upload holds no single notebook to grade; the message says what it holds instead."""


def pick_notebook(submission: Path) -> Path:
    """The one .ipynb in the upload, under any name and folder, the extension in any case (Jupyter's
    checkpoints ignored)."""
    found = notebooks([submission])
    if len(found) == 1:
        return found[0]
    if found:
        raise NoNotebook(f"{len(found)} notebooks were uploaded ({', '.join(str(p.relative_to(submission)) for p in found)}); "
                         "upload only the assignment's notebook")
    uploaded = sorted(str(p.relative_to(submission)) for p in submission.rglob("*") if p.is_file())
    listing = ", ".join(uploaded[:20]) + (f" and {len(uploaded) - 20} more" if len(uploaded) > 20 else "")
    raise NoNotebook(f"no notebook (.ipynb) was uploaded, only: {listing or 'nothing'}. Upload the assignment's "
                     ".ipynb file itself (File > Download in Jupyter), not a zip, PDF or .py export")


def write_results(root: Path, data: dict) -> None:
    """results.json whole or not at all: a kill mid-write leaves the previous file."""
    tmp = root / "results" / ".results.json.tmp"
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, root / "results" / "results.json")


def student_ids(name: str) -> tuple[int, int]:
    """(uid, gid) of the user that student code runs as."""
    if os.geteuid() != 0:
        raise CourseError("gradescope-run runs as root, as Gradescope runs run_autograder, so that student "
                          f"code can run as the unprivileged user {name!r}")
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        raise CourseError(f"no user {name!r} on this machine (setup.sh creates 'student')") from None
    return user.pw_uid, user.pw_gid


def closed_folders() -> list[Path]:
    """Folders on the way to this Python that other users cannot enter. Student code, run as
    another user, imports from there: a module not imported yet would fail to load."""
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    folders = {f for p in prefixes for f in [*p.parents, p]}
    return sorted(f for f in folders if not f.stat().st_mode & 0o001)


def lock_down(root: Path) -> None:
    """The suites, solutions, results and the metadata (e-mail addresses): root's alone."""
    (root / "results").mkdir(exist_ok=True)
    for folder in (root / "source", root / "results"):
        os.chmod(folder, 0o700)
    if (root / "submission_metadata.json").exists():
        os.chmod(root / "submission_metadata.json", 0o600)


def grade_roots(course: Course, roots: list[Path], student: str, assignment: str | None = None) -> None:
    """Grade each root's submission into its results.json (see the module's docstring)."""
    name = assignment or only_assignment(course)
    for root in roots:
        lock_down(root)
        write_results(root, not_graded(name, KILLED))
    a = course.assignment(name)
    try:
        granted = Granted.read(ROOT / FILE)        # the zip's: exceptions.toml's, with the roster to match by
        questions = Questions(a.notebook_path(SOLUTIONS), course.grading.max_cell_kb, a.cell_points)
        if closed := closed_folders():
            raise CourseError(f"student code runs as {student!r} but cannot enter {', '.join(map(str, closed))} "
                              "(the Python installation it imports from); install Python where every user can "
                              "read it, as setup.sh does (/usr and /opt/autograder-venv)")
        grader = Grader(name, course, fork=True, user=student_ids(student))
    except Exception as e:
        for root in roots:
            write_results(root, not_graded(name, f"the grader could not start ({type(e).__name__}: {e}); this is "
                                                 "not your fault: ask your instructor to look at the autograder"))
        raise
    # several roots (the tests' class) are graded side by side, as grade_many does; Gradescope's one alone
    with grader, ThreadPoolExecutor(course.grading.graders()) as pool:
        for line in pool.map(lambda root: _grade_root(grader, root, a, course, questions, granted), roots):
            if line:
                print(line, flush=True)


def _grade_root(grader: Grader, root: Path, a: Assignment, course: Course, questions: Questions,
                granted: Granted) -> str | None:
    """Grade one root into its results.json; the line the log shows, or None when there is no notebook."""
    start = time.monotonic()
    metadata = _metadata(root)
    try:
        notebook = pick_notebook(root / "submission")
    except NoNotebook as e:
        write_results(root, not_graded(a.name, str(e)))
        return None
    # Gradescope's submission id, so `grade --seed ID` reproduces it; else derived from the code
    seed = metadata["id"] if isinstance(metadata.get("id"), int) else None
    try:
        result = grader.grade(notebook, seed)
    except Exception as e:         # the grader's own failure, never the submission's
        write_results(root, not_graded(a.name, f"the grader failed ({type(e).__name__}); this is not your "
                                               "fault: ask your instructor to regrade"))
        raise
    late = lateness(metadata, a, course.lms.gradescope.late, granted.match(metadata.get("users")))
    write_results(root, to_gradescope(result, visibility=course.lms.visibility(a), late=late,
                                      answers=questions.answers(notebook),
                                      execution_time=time.monotonic() - start))
    return f"{root}: {shown(notebook.name, keep='')}: {result.score} / {result.max_score} (seed {seed})"


def only_assignment(course: Course) -> str:
    if len(course.assignments) != 1:
        raise CourseError(f"course.toml lists {len(course.assignments)} assignments; name the one to grade "
                          "(an autograder zip's course.toml lists only its own)")
    return next(iter(course.assignments))


def _metadata(root: Path) -> dict:
    """submission_metadata.json, or {} where it is missing or unreadable (then no id, no lateness)."""
    try:
        data = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
