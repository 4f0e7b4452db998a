"""The review queue of a class graded with nbgrader: flagged submissions and the instructor's decisions.

    queue = Queue(course, "residual-connections", coursedir)   # the class's results store and submissions
    queue.flagged()                  # {student: Result} with policy findings or held tests, decisions applied
    queue.decide("51014", "release", note="the sys import only prints the version")
    queue.apply(["51014"])           # nbgrader autograde and feedback again for them: the gradebook follows
    queue.summary()                  # "review: 2 submissions of A wait ...: python -m autograder review A"

A decision is a line of the results store (results/store.py) on the code the student submitted:
it holds whenever that code is graded again, and a new submission waits for a decision of its own.
Applying it regrades nothing: nbgrader's autograde reads the kept result with the decision applied
(autograde.NotebookGrading.result_for), so the grade cells, the gradebook and the feedback follow.
"""
from __future__ import annotations

from pathlib import Path

from ..core import seeds
from ..core.extract import Template
from ..course import SOLUTIONS, Course
from ..results.render import review_summary
from ..results.result import Result
from ..results.store import Store, StoreError
from .autograde import store_path
from .classrun import submitted
from .run import nbgrader


class ReviewError(ValueError):
    """A decision that cannot be recorded: no such student, nothing graded, nothing flagged."""


class Queue:
    def __init__(self, course: Course, assignment: str, coursedir):
        self.assignment, self.coursedir = assignment, coursedir
        path = store_path(coursedir.db_url, assignment)
        if not path.is_file():
            raise StoreError(f"{path}: no results yet; run `python -m autograder autograde {assignment}` first")
        self.store = Store(path, assignment)
        self.template = Template(course.assignment(assignment).notebook_path(SOLUTIONS))
        self.notebooks: dict[str, Path] = submitted(course, coursedir, assignment)
        self.keys = {student: self.template.key(nb) for student, nb in self.notebooks.items()}

    def results(self) -> dict[str, Result]:
        """{student: the result kept for their submitted code, decision applied}, for those graded."""
        return {s: r for s, key in self.keys.items() if (r := self.store.get(key)) is not None}

    def flagged(self) -> dict[str, Result]:
        """The results with policy findings or held tests, waiting ones first."""
        found = {s: r for s, r in self.results().items() if r.review or any(t.held for t in r.tests)}
        return dict(sorted(found.items(), key=lambda kv: (not kv[1].waiting, kv[0])))

    def decide(self, student: str, verdict: str, note: str = "") -> Result:
        """Record the decision on the student's submitted code; returns their result with it applied."""
        if student not in self.notebooks:
            raise ReviewError(f"{student}: no submission of {self.assignment} under "
                              f"{self.coursedir.submitted_directory}/ (the nbgrader student id, a folder there)")
        result = self.store.get(self.keys[student])
        if result is None:
            raise ReviewError(f"{student}: submitted, but not graded into {self.store.path}; run "
                              f"`python -m autograder autograde {self.assignment}` first")
        if not (result.review or any(t.held for t in result.tests)):
            raise ReviewError(f"{student}: not flagged for review (no policy finding, no held test): nothing to decide")
        # nbgrader's autograde, which applies the decision, opens the store only with the secret it was graded
        # with: refuse here, before anything is recorded, as it would (StoreError says what to set)
        Store(self.store.path, self.assignment, secret_id=seeds.secret_id(seeds.read_secret()))
        self.store.decide(self.keys[student], verdict, student, note)
        return self.store.get(self.keys[student])

    def apply(self, students: list[str]) -> None:
        """nbgrader autograde (from the kept results: nothing is regraded) and feedback for these students."""
        for student in students:
            for command in ("autograde", "generate_feedback"):
                nbgrader(command, self.assignment, f"--student={student}", "--force", "--log-level=ERROR")

    def summary(self) -> str:
        """One line: how many submissions wait for a decision, the points they hold, and the command."""
        return review_summary(list(self.results().values()), self.assignment)
