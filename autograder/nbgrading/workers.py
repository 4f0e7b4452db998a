"""Worker processes for `python -m autograder autograde`: nbgrader's Autograde, one student at a time.

    with Workers("residual-connections", 2, course) as pool:   # forked now, fork servers started
        unreadable, failed = pool.autograde({"51001": Path(".../51001/residual-connections/x.ipynb")}, db_url)

This module imports torch and nbgrader, so a worker forked from the process that
imported it starts without importing either. The workers are forked before that
process reads anything of a student's, and each starts its sandbox fork server
(Grader(fork=True)) before it reads anything itself: sandbox children inherit code only.
The parent hands out students as workers ask, so a slow submission delays one worker,
not a fixed share of the class. Each worker records into its own copy of the gradebook,
merged back at the end (gradebook.py), so workers never wait for each other's commits.
A journal beside each copy lists the students it holds, so a run killed before its merge
(SIGKILL, a power cut) is merged by the next one. A worker whose student takes longer than
the submission's budget plus STUCK_MARGIN_S is stopped and the student recorded as not
graded, with the reason; the others go on. Workers die with the parent (PDEATHSIG), and the
grading children with their worker's fork server: no process of the run outlives it.
In a worker, nbgrader's autograde reaches the grader through plugins.grading_for, which
the worker gives its Grader before the first student.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sqlite3
import sys
import time
import warnings
from pathlib import Path

from nbgrader.apps.nbgraderapp import NbGraderApp
from nbgrader.converters.autograde import Autograde
from sqlalchemy import event
from sqlalchemy.engine import Engine

from ..core.box import die_with_parent
from ..course import ROOT, Course, CourseError
from ..grading.grader import Grader
from ..results.render import Progress
from . import plugins
from .gradebook import GradebookError, copy_gradebook, merge_submissions, sqlite_path
from .run import unreadable

_FORK = multiprocessing.get_context("fork")
STOP_WAIT_S = 30     # how long a worker told to stop may take to finish its current student
STUCK_MARGIN_S = 60  # beyond a submission's budget: nbgrader's own work on it (feedback, database)


class Workers:
    """`count` forked worker processes, each with its own Grader for `assignment`."""

    def __init__(self, assignment: str, count: int, course: Course):
        self.assignment = assignment
        self.stuck_s = course.grading.submission_budget_s + STUCK_MARGIN_S
        self._pipes = []
        self._processes = []
        for _ in range(count):
            ours, theirs = _FORK.Pipe()
            process = _FORK.Process(target=_work, args=(assignment, course, theirs, [*self._pipes, ours]),
                                    daemon=True)
            process.start()
            theirs.close()
            self._pipes.append(ours)
            self._processes.append(process)

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def autograde(self, found: dict[str, Path], db_url: str) -> tuple[dict[str, str], dict[str, str]]:
        """Autograde each student's notebook into the gradebook; returns ({student: why unreadable},
        {student: why not graded}). Progress goes to stderr as students finish.

        Each worker records its students in a copy of the gradebook (beside it, so results are
        kept in the same place); when the workers have stopped, also after Ctrl-C or a worker's
        death, the students they reported are merged back and the copies removed."""
        merge_left_over(db_url, self.assignment)
        main = sqlite_path(db_url)
        copies = [main.with_name(f"{main.stem}.{self.assignment}.worker-{i}{main.suffix}")
                  for i in range(len(self._pipes))]
        for copy in copies:
            copy_gradebook(db_url, copy)
            _journal(copy).write_text("")
        graded: dict = {pipe: _journal(copy) for pipe, copy in zip(self._pipes, copies)}
        finished = False
        try:
            result = self._dispatch(found, {pipe: f"sqlite:///{copy}" for pipe, copy in zip(self._pipes, copies)},
                                    graded)
            finished = True
            return result
        finally:
            self.close(STOP_WAIT_S if finished else 1)
            for copy in copies:
                _merge(db_url, copy, self.assignment)

    def _dispatch(self, found: dict[str, Path], gradebooks: dict, graded: dict[object, Path]) -> tuple[dict, dict]:
        """Hand each worker its gradebook copy when it is ready, then a student whenever it asks;
        graded: each worker's journal, where the students it recorded are listed as they come."""
        waiting = list(found.items())
        busy: dict = {}                      # pipe -> the student its worker is grading
        since: dict = {}                     # pipe -> when it was handed that student (monotonic)
        unreadable, failed = {}, {}
        bar = Progress(len(found))
        working = dict(zip(self._pipes, self._processes))
        while working:
            for pipe, started in list(since.items()):   # a worker stuck on one student: stop it
                if pipe in busy and time.monotonic() - started > self.stuck_s:
                    _stop(working[pipe])
                    failed[busy[pipe]] = (f"its grading took longer than {self.stuck_s:g} s (course.toml grading."
                                          "submission_budget_s plus a margin): stopped, not graded")
                    since.pop(pipe)
            for pipe in multiprocessing.connection.wait(list(working), timeout=5):
                try:
                    message = pipe.recv()
                except (EOFError, OSError):  # the worker died (a reset if it left a message unread): its
                    # student is not graded, the rest go on
                    process = working.pop(pipe)
                    process.join(5)
                    pipe.close()
                    if pipe in busy:
                        student = busy.pop(pipe)
                        failed.setdefault(student, f"its worker stopped (exit code {process.exitcode}) while grading it")
                        bar.update(f"{student} NOT graded")
                    continue
                try:
                    if message is None:      # ready: its gradebook first
                        pipe.send(gradebooks[pipe])
                    else:
                        student, kind, why = message
                        del busy[pipe]
                        if kind == "graded":
                            with graded[pipe].open("a") as journal:
                                journal.write(student + "\n")
                        elif kind == "unreadable":
                            unreadable[student] = why
                        else:
                            failed[student] = why
                        bar.update(f"{student} {'graded' if kind == 'graded' else 'NOT graded'}")
                    if waiting:
                        pipe.send((waiting[0][0], str(waiting[0][1])))
                        busy[pipe] = waiting.pop(0)[0]
                        since[pipe] = time.monotonic()
                    else:
                        pipe.send(None)
                        pipe.close()
                        del working[pipe]
                except OSError:              # the worker has gone: the next wait() sees its pipe's end
                    pass
        for student, _ in waiting:           # every worker died before these were handed out
            failed[student] = "no worker was left to grade it"
        return unreadable, failed

    def close(self, wait_s: float = STOP_WAIT_S) -> None:
        """Tell the workers still listening to stop after their current student; stop any that do not
        within wait_s."""
        for pipe in self._pipes:
            if not pipe.closed:
                try:
                    pipe.send(None)
                except OSError:              # that worker has gone already
                    pass
                pipe.close()
        deadline = time.monotonic() + wait_s
        for process in self._processes:
            process.join(max(0.0, deadline - time.monotonic()))
            _stop(process)


def _stop(process) -> None:
    """SIGTERM a worker (it closes its grader, whose children then die), SIGKILL if it lingers."""
    if process.is_alive():
        process.terminate()
        process.join(5)
    if process.is_alive():
        process.kill()
        process.join()


def _journal(copy: Path) -> Path:
    """The list of students a worker's gradebook copy holds, one a line, written as they are reported."""
    return copy.with_name(copy.name + ".graded")


def _merge(db_url, copy: Path, assignment: str) -> None:
    """Merge the journalled students of a worker's copy into the gradebook, then remove the copy."""
    journal = _journal(copy)
    students = journal.read_text().split() if journal.exists() else []
    try:
        merge_submissions(db_url, copy, assignment, students)
    except (sqlite3.Error, GradebookError) as e:
        raise CourseError(f"could not merge {copy.name} into the gradebook ({e}); the grading "
                          "results are kept, so running the command again is quick") from e
    for path in (copy, copy.with_name(copy.name + "-journal"), journal):
        path.unlink(missing_ok=True)


def merge_left_over(db_url, assignment: str) -> list[str]:
    """Merge the worker copies a killed run left beside the gradebook; returns their file names."""
    main = sqlite_path(db_url)
    left = sorted(main.parent.glob(f"{main.stem}.{assignment}.worker-*{main.suffix}"))
    for copy in left:
        _merge(db_url, copy, assignment)
    return [copy.name for copy in left]


def _work(assignment: str, course: Course, pipe, parent_ends: list) -> None:
    """A worker: its fork server first, then nbgrader's Autograde for each student it is sent.

    parent_ends: the parent's ends of the pipes, which a fork copies; closed, so that the
    worker sees the end of its pipe when the parent has gone."""
    for end in parent_ends:
        end.close()
    die_with_parent(signal.SIGTERM)                           # even when the parent is SIGKILLed
    signal.signal(signal.SIGINT, signal.SIG_IGN)              # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGALRM, signal.SIG_DFL)             # the parent's time limit is not ours
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        grader = Grader(assignment, course, fork=True)
    except CourseError as e:
        sys.exit(f"error: a worker could not start grading {assignment}: {e}")
    try:
        app = _autograde_app(assignment)
        pipe.send(None)                                       # ready
        gradebook = pipe.recv()                               # its own copy of the gradebook
        if gradebook is None:                                 # told to stop before it began
            return
        app.coursedir.db_url = gradebook
        plugins.grading_for(assignment, gradebook, grader)
        while (task := pipe.recv()) is not None:
            student, path = task
            pipe.send((student, *_autograde_one(app, student, Path(path))))
    except (EOFError, BrokenPipeError):                       # the parent has gone
        pass
    finally:
        grader.close()


def _autograde_app(assignment: str):
    """nbgrader's AutogradeApp, set up as `nbgrader autograde ASSIGNMENT --force` would be.

    Its gradebook is the worker's scratch copy, so SQLite need not wait for the disk at each
    commit: after a power cut the copy is dropped and a rerun regrades from the kept results."""
    event.listen(Engine, "connect", lambda connection, _: connection.execute("PRAGMA synchronous = OFF"))
    os.chdir(ROOT)                                            # where nbgrader_config.py is
    warnings.filterwarnings("ignore", module=r"nbgrader\.api")  # SQLAlchemy chatter inside nbgrader
    app = NbGraderApp.instance()
    app.initialize(["autograde", assignment, "--force", "--log-level=ERROR"])
    app.subapp.coursedir.assignment_id = assignment
    return app.subapp


def _autograde_one(app, student: str, path: Path) -> tuple[str, str]:
    """("graded", ""), ("unreadable", why) or ("failed", why) for one student's submission."""
    problem = unreadable(path)
    if problem:
        return "unreadable", problem
    app.coursedir.student_id = student
    try:
        Autograde(coursedir=app.coursedir, parent=app).start()
    except (Exception, SystemExit) as e:   # nbgrader logged the details; only this student is not recorded
        return "failed", f"nbgrader autograde failed ({type(e).__name__}: {e})"
    return "graded", ""
