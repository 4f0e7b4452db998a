"""A class's nbgrader autograde on every core: `python -m autograder autograde ASSIGNMENT`.

    code = autograde_class(course, "residual-connections", coursedir, workers=None)

Each worker (workers.py) is forked from this process before it has read any submission,
solution or gradebook, and runs nbgrader's Autograde converter for one student at a time
as this process hands them out, into its own copy of the gradebook, merged back when the
workers stop: also after Ctrl-C, SIGTERM, the run's own time limit or a worker's death,
and after SIGKILL by the next run. Results are kept in the results store, so an
interrupted run loses nothing: run it again.
"""
from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path

from ..course import SOLUTIONS, Course, CourseError
from .apply import apply_course, class_exceptions
from ..results.terminal import shown
from .autograde import class_store, part_cells, sync_gradebook
from .gradebook import open_gradebook
from .run import nbgrader


def submitted(course: Course, coursedir, assignment: str) -> dict[str, Path]:
    """{student id: notebook} for every student folder under nbgrader's submitted directory."""
    notebook = course.assignment(assignment).notebook
    root = Path(coursedir.format_path(coursedir.submitted_directory, "*", assignment)).parent.parent
    found = {}
    for folder in sorted(root.glob(f"*/{assignment}")):
        path = folder / notebook
        if path.exists():
            found[folder.parent.name] = path
    return found


def apply_class(course: Course, assignment: str, coursedir, roster_ids: set[str] | None = None) -> None:
    """apply_course for the class under nbgrader's submitted directory, with exceptions.toml (its students
    checked against roster_ids when given): points, scores and late penalties follow course.toml now."""
    exceptions = class_exceptions(course, coursedir.db_url, roster_ids)
    apply_course(course, assignment, coursedir.db_url, submitted(course, coursedir, assignment), exceptions)


def register(course: Course, assignment: str, db_url) -> None:
    """Put the assignment in the gradebook as autograde needs it: its cells (nbgrader
    generate_assignment, into a scratch release folder so assignments/ is left alone), its
    due date and the points of its part cells on this machine (sync_gradebook)."""
    from nbgrader.api import MissingEntry
    a = course.assignment(assignment)
    with open_gradebook(db_url) as gb:
        try:
            gb.find_assignment(assignment)
            known = True
        except MissingEntry:
            known = False
    if not known:
        with tempfile.TemporaryDirectory() as tmp:
            nbgrader("generate_assignment", assignment, "--force", "--log-level=WARN",
                     f"--CourseDirectory.release_directory={tmp}", f"--CourseDirectory.db_url={db_url}")
    sync_gradebook(course, assignment, db_url, part_cells(a.notebook_path(SOLUTIONS)))


class Stopped(Exception):
    """SIGTERM or the run's time limit: stop as after Ctrl-C (merge what is graded, then exit)."""


def _stop_on(signum, frame) -> None:
    raise Stopped("the time limit was reached" if signum == signal.SIGALRM else "stopped by SIGTERM")


def autograde_class(course: Course, assignment: str, coursedir, workers: int | None = None,
                    time_limit_s: int | None = None) -> int:
    """nbgrader autograde of every collected submission by parallel workers; prints a table.

    Returns 1 if nbgrader failed for a student, else 0: an unreadable notebook is listed, not
    autograded (score 0 unless the gradebook holds an earlier one), and is not a failure.
    time_limit_s: stop the run then (students graded by then are merged), as SIGTERM does.
    """
    count = max(1, workers or course.grading.workers or os.cpu_count() or 1)
    from .workers import Workers   # torch and nbgrader imported here, once, for every worker
    previous = {sig: signal.signal(sig, _stop_on) for sig in (signal.SIGTERM, signal.SIGALRM)}
    if time_limit_s:
        signal.alarm(time_limit_s)
    try:
        # the workers are forked before this process reads any student's name or file
        with Workers(assignment, count, course) as pool:
            found = submitted(course, coursedir, assignment)
            if not found:
                raise CourseError(f"no submissions of {assignment} under {coursedir.submitted_directory}/: "
                                  "collect them first (nbgrader zip_collect or nbgrader collect)")
            # the workers would each fail on a store graded with another secret: say so once, here
            class_store(coursedir.db_url, assignment)
            print(f"autograding {len(found)} submissions of {assignment} out of kernel, "
                  f"{min(count, len(found))} at a time", file=sys.stderr)
            register(course, assignment, coursedir.db_url)
            unreadable, failed = pool.autograde(found, coursedir.db_url)
    except (KeyboardInterrupt, Stopped) as e:
        why = str(e) or "interrupted"
        print(f"\n{why}: the students graded so far are in the gradebook; run the command again "
              "for the rest", file=sys.stderr)
        return 130
    finally:
        signal.alarm(0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    from nbgrader.api import MissingEntry
    apply_class(course, assignment, coursedir)     # an extension nbgrader's autograde did not see yet
    with open_gradebook(coursedir.db_url) as gb:
        for student in found:
            problem = unreadable.get(student) or failed.get(student)
            try:
                s = gb.find_submission(assignment, student)
            except MissingEntry:
                print(shown(f"  {student:<12}     0  NOT in the gradebook: {problem or 'not recorded'}"))
                continue
            line = f"  {student:<12} {s.code_score:>5g} / {s.max_code_score:g}"
            print(shown(line + (f"  (earlier; NOT autograded now: {problem})" if problem else "")))
    if failed:
        print(shown(f"{len(failed)} not autograded ({', '.join(failed)}); run the command again for them"),
              file=sys.stderr)
    return 1 if failed else 0
