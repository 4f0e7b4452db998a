"""What still stands between an assignment's grades and Canvas, from nbgrader's gradebook and the class's results.

    pending = find_pending(gb, course, "residual-connections", coursedir)
    pending.manual          # {student: grade cells waiting for a manual grade}
    pending.held            # {student: points held by a flagged submission waiting for a review decision}
    pending.not_autograded  # [student] collected by zip_collect, not in the gradebook yet
    pending.lines(names)    # one line per kind of pending work, saying how to finish it; [] when none
"""
from __future__ import annotations

from dataclasses import dataclass

from nbgrader.api import Gradebook

from ...course import Course
from ...nbgrading.review import ClassQueue
from ...results.store import StoreError
from .collect import load_collection


@dataclass(frozen=True)
class Pending:
    assignment: str
    manual: dict[str, int]
    held: dict[str, float]
    not_autograded: list[str]

    def lines(self, names: dict[str, str]) -> list[str]:
        """What is pending, a line per kind, naming the students (names: {id: name}, from the roster)."""
        def who(ids):
            return ", ".join(f"{names[s]} ({s})" if s in names else s for s in ids)
        a, lines = self.assignment, []
        if self.manual:
            lines.append(f"{a}: manual grades pending for {len(self.manual)} students "
                         f"({sum(self.manual.values())} cells): {who(self.manual)}; grade them in formgrader")
        if self.held:
            lines.append(f"{a}: {len(self.held)} flagged submissions wait for a review decision "
                         f"({sum(self.held.values()):g} points held): {who(self.held)}; "
                         f"decide with `python -m autograder review {a}`")
        if self.not_autograded:
            lines.append(f"{a}: collected but not autograded: {who(self.not_autograded)}; "
                         f"run `python -m autograder autograde {a}`")
        return lines


def find_pending(gb: Gradebook, course: Course, assignment: str, coursedir) -> Pending:
    """The assignment's pending work; a class not autograded yet has no review queue to wait on."""
    submissions = gb.assignment_submissions(assignment)
    manual = {s.student.id: n for s in sorted(submissions, key=lambda s: s.student.id)
              if (n := sum(g.needs_manual_grade for nb in s.notebooks for g in nb.grades))}
    try:
        waiting = {s: r.held_points for s, r in ClassQueue(course, assignment, coursedir).flagged().items()
                   if r.waiting}
    except StoreError:
        waiting = {}
    graded = {s.student.id for s in submissions}
    collected = load_collection(coursedir.db_url, assignment)["students"]
    return Pending(assignment, manual, dict(sorted(waiting.items())), sorted(set(collected) - graded))
