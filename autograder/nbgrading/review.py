"""The review queue of a class graded with nbgrader: flagged submissions and the instructor's decisions.

    queue = ClassQueue(course, "residual-connections", coursedir)   # the class's results store and submissions
    queue.flagged()                  # {student: Result} with policy findings or held tests, decisions applied
    queue.decide("51014", "release", note="the sys import only prints the version")
    queue.apply(["51014"])           # nbgrader autograde and feedback again for them: the gradebook follows
    queue.summary()                  # "review: 2 submissions of A wait ...: python -m autograder review A"

The queue itself (results/review.py) is the one a `grade --out` store has; here it is keyed by
nbgrader's student ids. Applying a decision regrades nothing: nbgrader's autograde reads the kept
result with the decision applied (autograde.NotebookGrading.result_for), so the grade cells, the
gradebook and the feedback follow.
"""
from __future__ import annotations

from ..core.extract import Template
from ..course import SOLUTIONS, Course
from ..results.review import Queue, ReviewError
from ..results.store import Store, StoreError
from .autograde import class_store, store_path
from .classrun import submitted
from .run import nbgrader


class ClassQueue(Queue):
    def __init__(self, course: Course, assignment: str, coursedir):
        self.coursedir = coursedir
        path = store_path(coursedir.db_url, assignment)
        if not path.is_file():
            raise StoreError(f"{path}: no results yet; run `python -m autograder autograde {assignment}` first")
        template = Template(course.assignment(assignment).notebook_path(SOLUTIONS))
        notebooks = submitted(course, coursedir, assignment)
        super().__init__(Store(path, assignment), {s: template.key(nb) for s, nb in notebooks.items()})

    def known(self, student: str) -> str:
        if student not in self.keys:
            raise ReviewError(f"{student}: no submission of {self.assignment} under "
                              f"{self.coursedir.submitted_directory}/ (the nbgrader student id, a folder there)")
        return student

    def decide(self, student: str, verdict: str, note: str = ""):
        # nbgrader's autograde, which applies the decision, opens the store only with the secret it was graded
        # with: refuse here, before anything is recorded, as it would (StoreError says what to set)
        self.known(student)
        class_store(self.coursedir.db_url, self.assignment)
        return super().decide(student, verdict, note)

    def apply(self, students: list[str]) -> None:
        """nbgrader autograde (from the kept results: nothing is regraded) and feedback for these students."""
        for student in students:
            for command in ("autograde", "generate_feedback"):
                nbgrader(command, self.assignment, f"--student={student}", "--force", "--log-level=ERROR")
