"""course.toml's points and late policy and the instructor's exceptions, applied to nbgrader's gradebook from
the results store: nothing is regraded. The step every path that shows a grade runs first (nbgrader export,
generate_feedback, the class report, autograde's end), so formgrader's totals, the Canvas CSV and the
feedback agree after any change to course.toml or exceptions.toml.

    exceptions = class_exceptions(course, db_url, roster_ids)   # exceptions.toml and Canvas's overrides
    apply_course(course, "residual-connections", db_url, students, exceptions)   # students: {id: notebook}

Per grade cell its points (course.toml's auto for partN-tests, manual for partN-written); per submission
its extension (exceptions.toml, else the student's Canvas override as canvas pull recorded it), each part's
automatic score (the kept result under course.toml now, Result.under: its points and without_cuda) and its
late penalty (course.toml's late_per_day from the student's own due date, with the student's grace, waiver
and cap). Manual scores are left as graders gave them.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from ..core.extract import Template
from ..course import SOLUTIONS, Course
from ..exceptions import FILE, Exceptions, load
from .autograde import PART_CELL, class_store, part_cells, store_path, sync_gradebook
from .gradebook import beside_gradebook, open_gradebook


def exceptions_path(db_url) -> Path:
    """exceptions.toml, beside the gradebook."""
    return beside_gradebook(db_url) / FILE


def pulled_path(db_url, assignment: str) -> Path:
    """canvas pull's record of an assignment (lms/canvas/pull.py): Canvas's states and due date per student."""
    return beside_gradebook(db_url) / "canvas" / f"pulled-{assignment}.json"


def class_exceptions(course: Course, db_url, roster_ids: set[str] | None = None) -> Exceptions:
    """exceptions.toml (checked against roster_ids when given), with each Canvas override that canvas pull
    recorded as that student's deadline where the file moves none (Exceptions.with_due_dates)."""
    exceptions = load(exceptions_path(db_url), course, roster_ids)
    for name in course.assignments:
        path = pulled_path(db_url, name)
        if path.is_file():
            students = json.loads(path.read_text(encoding="utf-8"))["students"]
            exceptions = exceptions.with_due_dates(name, {
                s: dt.datetime.fromisoformat(v["due_at"].replace("Z", "+00:00"))
                for s, v in students.items() if v.get("due_at")})
    return exceptions


def apply_course(course: Course, assignment: str, db_url, students: dict[str, Path], exceptions: Exceptions) -> None:
    """Bring the gradebook's points, automatic scores and late penalties of `assignment` in line with
    course.toml, exceptions.toml and the results store (see the module's docstring). students: {student id:
    submitted notebook}, whose kept results give the automatic scores; exceptions: exceptions.toml's."""
    from nbgrader.api import MissingEntry
    with open_gradebook(db_url) as gb:
        try:
            registered = bool(gb.find_assignment(assignment).notebooks)
        except MissingEntry:
            registered = False
    if not registered:          # its cells are not in the gradebook before autograde registers them
        return
    a = course.assignment(assignment)
    source = a.notebook_path(SOLUTIONS)
    sync_gradebook(course, assignment, db_url, part_cells(source))
    results = {}
    if store_path(db_url, assignment).is_file():
        store, template = class_store(db_url, assignment), Template(source)
        results = {s: r.under(a) for s, nb in students.items() if (r := store.get(template.key(nb)))}
    with open_gradebook(db_url) as gb:
        submissions = gb.assignment_submissions(assignment)
        for submission in submissions:
            student = submission.student.id
            submission.extension = exceptions.get(assignment, student).extension(a) or None
            parts = results[student].parts() if student in results else None
            for grade in (g for nb in submission.notebooks for g in nb.grades) if parts is not None else ():
                if (match := PART_CELL.fullmatch(grade.name)) and grade.auto_score is not None:
                    score, top = parts.get(int(match.group(1)), (0, 0))
                    grade.auto_score = round(score * grade.max_score / top, 2) if top else 0
        gb.db.commit()       # the notebooks' scores (SQL sums) are read back below with these
        gb.db.expire_all()
        for submission in submissions:
            allowance = exceptions.get(assignment, submission.student.id)
            _, off = allowance.penalty(a, submission.total_seconds_late)
            for notebook in submission.notebooks:
                notebook.late_submission_penalty = min(off, notebook.score) or None   # as nbgrader caps it
        gb.db.commit()
