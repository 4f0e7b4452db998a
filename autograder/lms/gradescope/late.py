"""Late and resubmission facts from Gradescope's submission_metadata.json, by course.toml's policy and the
student's exceptions.toml entry (bundled in the zip: allowances.py).

    late = lateness(metadata, assignment, policy="late_per_day", match=Match(...))   # Late, or None with "none"

Times come from the metadata (created_at, assignment.due_date), never from the clock, so a
regrade gives the same answer (Gradescope's advice). Without a due date in the metadata,
course.toml's deadline counts. The student's extension moves that due date and the penalty is
Exception_.penalty's, with grace, waiver and cap: the nbgrader path's own (autograder/exceptions.py).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass

from ...course import Assignment
from .allowances import Match


@dataclass(frozen=True)
class Late:
    days: int            # started days after the due date (0: on time)
    penalty: float       # points off the total: days x course.toml's late_per_day
    per_day: float
    due: str             # the due date that counted, ISO 8601
    previous: int        # this student's earlier submissions to the assignment
    exception: str = ""  # the student's exceptions.toml entry, in words ("" when none)
    canvas_id: str = ""  # the roster student(s) the submission's users matched ("" when not looked up)
    problem: str = ""    # why no exception could apply (allowances.Match.problem)

    def line(self) -> str:
        tries = f"Submission {self.previous + 1} to this assignment"
        granted = f" Your exception: {self.exception}." if self.exception else ""
        if not self.days:
            return f"{tries}, on time (due {self.due}).{granted} {self.problem}".rstrip()
        return (f"{tries}, {self.days} started day(s) after the due date {self.due}: {self.penalty:g} points off "
                f"({self.per_day:g} per day, course.toml late_per_day).{granted} {self.problem}").rstrip()

    def to_json(self) -> dict:
        return asdict(self)


def lateness(metadata: dict, assignment: Assignment, policy: str, match: Match = Match()) -> Late | None:
    if policy == "none":
        return None
    created = _time(metadata.get("created_at"))
    allowance = match.exception
    due = allowance.due(assignment, _time((metadata.get("assignment") or {}).get("due_date")))
    late_s = (created - due).total_seconds() if created else 0.0
    days, penalty = allowance.penalty(assignment, late_s)
    return Late(days, penalty, assignment.late_per_day, due.isoformat(),
                len(metadata.get("previous_submissions") or []), allowance.describe(), match.canvas_id, match.problem)


def _time(text) -> dt.datetime | None:
    """Gradescope writes ISO 8601 with microseconds and an offset: 2027-02-16T01:14:09.365935+00:00."""
    try:
        value = dt.datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value if value is None or value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
