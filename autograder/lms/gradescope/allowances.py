"""exceptions.toml on Gradescope: bundled into the zip with the roster's students, and each submission's
Gradescope users matched to them.

    text = bundle("residual-connections", granted, roster.students)   # the zip's exceptions.json (build.py)
    match = Granted.read(source / FILE).match(metadata["users"])   # Match: .exception, .canvas_id, .problem

exceptions.json holds the assignment's exceptions and, when there is one, every roster student's Canvas
ID, SIS user ID, login ID and name: Gradescope names its users by e-mail, name and (in some courses) the
student ID, never by Canvas ID. A user matches the one roster student with the same SIS user ID (`sid`),
else whose login ID is the e-mail or the part before its @, else whose name is the same ("First Last" or
"Last, First"). A user who matches no one, or several, gets no exception, and Match.problem says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ...course import CourseError
from ...exceptions import NONE, Exception_

FILE = "exceptions.json"


def bundle(assignment: str, granted: dict[str, Exception_], students) -> str:
    """exceptions.json's text. granted: exceptions.toml's for `assignment` ({Canvas ID: Exception_}, checked
    against the roster); students: the roster's RosterStudents, or None where none was imported. The students
    go in only when the assignment has an exception."""
    if granted and students is None:
        raise CourseError(f"exceptions.toml names students of {assignment} by Canvas ID, but no roster was "
                          "imported to find them on Gradescope by: run `python -m autograder roster EXPORT.csv` "
                          "(or `canvas pull`) first")
    rows = [{"id": s.id, "sis_user_id": s.sis_user_id, "login_id": s.sis_login_id,
             "names": [s.name, f"{s.first_name} {s.last_name}".strip()],
             "exception": granted[s.id].to_json() if s.id in granted else None}
            for s in (students if granted else [])]
    return json.dumps({"assignment": assignment, "students": rows}, indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Match:
    exception: Exception_ = NONE
    canvas_id: str = ""      # the roster students the submission's users are, comma-separated
    problem: str = ""        # why no exception could apply, for the student's results; "" when none


@dataclass(frozen=True)
class Granted:
    students: list[dict]      # exceptions.json's

    @classmethod
    def read(cls, path: Path) -> Granted:
        """The zip's exceptions.json; none there (a zip built without): no exceptions."""
        try:
            return cls(json.loads(path.read_text(encoding="utf-8"))["students"])
        except FileNotFoundError:
            return cls([])

    def match(self, users) -> Match:
        """The exception of submission_metadata.json's users (a group's must agree); Match() when the
        assignment has no exceptions."""
        if not self.students:
            return Match()
        users = [u for u in users or [] if isinstance(u, dict)]
        found = [(u.get("name") or u.get("email") or "?", self._find(u)) for u in users]
        if not found or any(s is None for _, s in found):
            lost = ", ".join(str(name) for name, s in found if s is None) or "no user in submission_metadata.json"
            return Match(problem=f"Not matched to the course roster ({lost}): graded without per-student exceptions; "
                          "ask your instructor if you have one.")
        students = [s for _, s in found]
        ids = ", ".join(s["id"] for s in students)
        if len({json.dumps(s["exception"], sort_keys=True) for s in students}) > 1:
            return Match(canvas_id=ids, problem="The group's students have different per-student exceptions: "
                                                "none applied; ask your instructor.")
        exception = students[0]["exception"]
        return Match(Exception_.from_json(exception) if exception else NONE, ids)

    def _find(self, user: dict) -> dict | None:
        """The one roster student this Gradescope user is (see the module's docstring), or None."""
        sid = str(user.get("sid") or "").strip()
        email = str(user.get("email") or "").strip().casefold()
        name = " ".join(str(user.get("name") or "").split()).casefold()
        tests = [lambda s: sid and s["sis_user_id"] == sid,
                 lambda s: email and s["login_id"] and s["login_id"].casefold() in (email, email.split("@")[0]),
                 lambda s: name and name in (n.casefold() for n in s["names"])]
        for test in tests:
            hits = [s for s in self.students if test(s)]
            if hits:
                return hits[0] if len(hits) == 1 else None
        return None

