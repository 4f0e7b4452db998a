"""Per-student exceptions to course.toml's deadlines and late policy: exceptions.toml in the instructor folder.

    [residual-connections.51003]       # an assignment of course.toml, then a roster student's Canvas ID
    extra_days = 2                     # an extension: days after the deadline (or: deadline = 2027-02-20T23:59:00Z)
    waive_late = true                  # no late penalty at all
    late_cap = 5                       # the late penalty is at most this many points
    grace_hours = 6                    # lateness counts from this long after the (extended) due date

    exceptions = load(path, course, roster_ids)     # ExceptionsError naming the file and the line
    e = exceptions.get("residual-connections", "51003")   # Exception_, or NONE
    e.due(assignment), e.extension(assignment)      # the student's due date, and how far it moves
    e.due(assignment, base=gradescopes_due_date)     # extra_days from another due date than course.toml's
    e.penalty(assignment, seconds_after_due)        # (started days, points off): grace, waiver and cap applied

Read whenever points are applied (nbgrader's gradebook, the Canvas CSV, feedback, the report, status), and
bundled into the Gradescope zip (lms/gradescope/allowances.py), whose runs take penalties from the same
Exception_.penalty; a change needs no regrading on the nbgrader path (docs/results.md, "Late penalties and exceptions").
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from pathlib import Path

from .course import Assignment, Course, CourseError, read_toml, where

FILE = "exceptions.toml"


class ExceptionsError(CourseError):
    """exceptions.toml names an unknown assignment or student, or has a value out of range."""


@dataclass(frozen=True)
class Exception_:
    extra_days: float = 0
    deadline: dt.datetime | None = None   # a personal deadline, in place of course.toml's
    waive_late: bool = False
    late_cap: float | None = None
    grace_hours: float = 0
    canvas: bool = False                  # the deadline is the student's Canvas override (Exceptions.with_due_dates)

    def due(self, assignment: Assignment, base: dt.datetime | None = None) -> dt.datetime:
        """The personal deadline, or the base due date (course.toml's deadline unless given: Gradescope's,
        a Canvas override's) moved by extra_days."""
        return self.deadline or (base or assignment.deadline) + dt.timedelta(days=self.extra_days)

    def extension(self, assignment: Assignment) -> dt.timedelta:
        """How far the due date moves (nbgrader's per-submission extension)."""
        return self.due(assignment) - assignment.deadline

    def penalty(self, assignment: Assignment, seconds_after_due: float) -> tuple[int, float]:
        """(started days late, points off) for a submission `seconds_after_due` after this student's due date."""
        days, off = assignment.late_penalty(seconds_after_due - 3600 * self.grace_hours)
        if self.waive_late:
            off = 0.0
        if self.late_cap is not None:
            off = min(off, self.late_cap)
        return days, off

    def describe(self) -> str:
        """"extended 2 days, late penalty waived": what is granted, in words."""
        said = [f"{'Canvas override: due' if self.canvas else 'deadline'} {self.deadline.isoformat()}"
                if self.deadline else "",
                f"extended {self.extra_days:g} day(s)" if self.extra_days else "",
                f"{self.grace_hours:g} h grace" if self.grace_hours else "",
                "late penalty waived" if self.waive_late else "",
                f"late penalty capped at {self.late_cap:g}" if self.late_cap is not None else ""]
        return ", ".join(s for s in said if s)

    def to_json(self) -> dict:
        """The keys exceptions.toml set, the deadline as ISO 8601 (the Gradescope zip carries them)."""
        return {k: (v.isoformat() if isinstance(v, dt.datetime) else v)
                for k in KEYS if (v := getattr(self, k)) != getattr(NONE, k)}

    @classmethod
    def from_json(cls, data: dict) -> Exception_:
        deadline = data.get("deadline")
        return cls(**{**data, "deadline": dt.datetime.fromisoformat(deadline) if deadline else None})


NONE = Exception_()
KEYS = ("extra_days", "deadline", "waive_late", "late_cap", "grace_hours")


@dataclass(frozen=True)
class Exceptions:
    path: Path
    by_student: dict[tuple[str, str], Exception_]

    def get(self, assignment: str, student: str) -> Exception_:
        return self.by_student.get((assignment, str(student)), NONE)

    def of(self, assignment: str) -> dict[str, Exception_]:
        return {s: e for (a, s), e in self.by_student.items() if a == assignment}

    def with_due_dates(self, assignment: str, due: dict[str, dt.datetime]) -> Exceptions:
        """These, with each student's Canvas override (their own due date, in `due`) as their deadline where
        this file moves none (no extra_days or deadline): exceptions.toml wins where both speak, and its
        waiver, cap and grace still apply."""
        found = dict(self.by_student)
        for student, when in due.items():
            own = found.get((assignment, student), NONE)
            if not own.deadline and not own.extra_days:
                found[(assignment, student)] = replace(own, deadline=when, canvas=True)
        return Exceptions(self.path, found)


def load(path: Path, course: Course, students: set[str] | None = None) -> Exceptions:
    """Read and check the exceptions file (none there: no exceptions). students: the roster's ids, when known;
    a student not among them is an error."""
    path = Path(path)
    if not path.is_file():
        return Exceptions(path, {})
    text, data = read_toml(path, ExceptionsError)

    def error(keys: list[str], problem: str) -> ExceptionsError:
        return ExceptionsError(f"{where(path, text, keys)}: {'.'.join(keys)}: {problem}")

    found = {}
    for assignment, table in data.items():
        if assignment not in course.assignments:
            raise error([assignment], f"unknown assignment; course.toml has: {', '.join(course.assignments)}")
        if not isinstance(table, dict):
            raise error([assignment], "expected a table of students: [ASSIGNMENT.CANVAS_ID]")
        for student, values in table.items():
            keys = [assignment, student]
            if students is not None and student not in students:
                raise error(keys, "unknown student: not in the Canvas roster (the Canvas ID, as in the roster)")
            if not isinstance(values, dict):
                raise error(keys, f"expected a table of {', '.join(KEYS)}")
            found[(assignment, student)] = _exception(values, keys, error)
    return Exceptions(path, found)


def _exception(values: dict, keys: list[str], error) -> Exception_:
    for key, value in values.items():
        if key not in KEYS:
            raise error(keys + [key], f"unknown key (expected one of: {', '.join(KEYS)})")
        if key == "deadline":
            if not isinstance(value, dt.datetime) or value.tzinfo is None:
                raise error(keys + [key], f"expected a date-time with a time zone (2027-02-20T23:59:00Z), got {value!r}")
        elif key == "waive_late":
            if not isinstance(value, bool):
                raise error(keys + [key], f"expected true or false, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise error(keys + [key], f"expected a number >= 0, got {value!r}")
    if "deadline" in values and "extra_days" in values:
        raise error(keys + ["extra_days"], "give either extra_days or deadline, not both")
    return Exception_(**{k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                         for k, v in values.items()})
