"""A graded class: each student's notebook, its result from the results store, and its upload time.

    students = from_folder(store, template, Path("submissions/residual-connections"))   # NAME.ipynb
    students = from_nbgrader(store, template, Path("submitted"), "residual-connections", deadline)
    students = from_store(store)                         # the store's own submission paths
    students = from_class(course, "residual-connections")  # what `python -m autograder autograde` graded,
                                                         # named from the Canvas roster, non-submitters too
    students = from_gradescope(read_export(ZIP, A), tmp)   # a Gradescope export, its notebooks written to tmp
    out = class_report_dir("residual-connections")       # instructor/report/ASSIGNMENT/, beside the gradebook

A result is found by the key of the code the grader ran (core/extract.py), so a class graded
by nbgrader (whose store names no files) and one graded by `grade --out` are read alike.
"""
from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.extract import Template
from ..course import SOLUTIONS, Course
from ..results.result import Result
from ..results.store import Store, StoreError

if TYPE_CHECKING:
    from ..lms.canvas.roster import Roster
    from ..lms.gradescope.export import Export


@dataclass(frozen=True)
class Student:
    name: str
    notebook: Path | None      # None where the store names a file that is gone
    result: Result | None      # None: the notebook was never graded into this store
    late: bool | None = None   # None: the upload time is not known
    submitted: bool = True     # False: on the roster, nothing submitted


def from_folder(store: Store, template: Template, folder: Path) -> list[Student]:
    """Every *.ipynb in the folder, named by its file name without .ipynb."""
    return [Student(nb.stem, nb, store.get(template.key(nb))) for nb in sorted(folder.glob("*.ipynb"))]


def from_nbgrader(store: Store, template: Template, submitted: Path, assignment: str,
                  deadline: dt.datetime, due: dict[str, dt.datetime] | None = None) -> list[Student]:
    """nbgrader's submitted/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb, late when timestamp.txt is after the deadline
    (or the student's own, in due: exceptions.toml's)."""
    out = []
    for folder in sorted(p for p in submitted.glob(f"*/{assignment}") if p.is_dir()):
        student = folder.parent.name
        for nb in sorted(folder.glob("*.ipynb")):
            out.append(Student(student, nb, store.get(template.key(nb)),
                               _late(folder, (due or {}).get(student, deadline))))
    return out


def from_store(store: Store) -> list[Student]:
    """The store's own results, one per file graded, named by the file's name, or where two files share a name (a
    folder per student, each holding the assignment's notebook) by its path below the folder all the files share:
    named by the file name alone, the last of them written replaced the others in the report."""
    results = [(Path(os.path.abspath(r.submission)) if r.submission else None, r) for r in store.submissions()]
    stems = Counter(path.stem for path, _ in results if path is not None)
    shared = {stem for stem, count in stems.items() if count > 1}
    root = Path(os.path.commonpath([path.parent for path, _ in results if path is not None])) if shared else None
    students = []
    for index, (path, result) in enumerate(results):
        name = (f"? {index + 1}" if path is None else path.relative_to(root).with_suffix("").as_posix()
                if path.stem in shared else path.stem)
        students.append(Student(name, path if path and path.is_file() else None, result))
    return sorted(students, key=lambda s: s.name)


def from_class(course: Course, assignment: str) -> list[Student]:
    """The class nbgrader collected (its submitted/ folder) and `python -m autograder autograde` graded
    (the results store beside the gradebook, its review decisions applied), as nbgrader_config.py places
    them; named from the Canvas roster with the roster's non-submitters added, where one was imported."""
    from ..lms.canvas.roster import CanvasError, load_roster
    from ..nbgrading.apply import class_exceptions
    from ..nbgrading.autograde import store_path
    from ..nbgrading.run import nbgrader_config
    config = nbgrader_config().CourseDirectory
    path = store_path(config.db_url, assignment)
    if not path.is_file():
        raise StoreError(f"{path}: no results yet; run `python -m autograder autograde {assignment}` first, "
                         "or give --results FILE")
    a = course.assignment(assignment)
    try:
        roster = load_roster(config.db_url)
    except CanvasError:      # no roster imported: students stay named by their nbgrader id
        roster = None
    granted = class_exceptions(course, config.db_url, roster.ids if roster else None).of(assignment)
    due = {s: e.due(a) + dt.timedelta(hours=e.grace_hours) for s, e in granted.items()}
    students = from_nbgrader(Store(path, assignment), Template(a.notebook_path(SOLUTIONS)),
                             Path(config.submitted_directory), assignment, a.deadline, due)
    return with_roster(students, roster) if roster else students


def from_gradescope(export: Export, folder: Path) -> list[Student]:
    """A Gradescope export's submissions (lms/gradescope/export.py), named by their submitters, late by
    results.json's late record; each notebook is written to folder/SUBMISSION_ID.ipynb for the report to read."""
    out = []
    for s in export.submissions:
        path = folder / f"{s.id}.ipynb" if s.notebook is not None else None
        if path is not None:
            path.write_bytes(s.notebook)
        out.append(Student(s.name, path, s.result, None if s.late_days is None else s.late_days > 0))
    return out


def with_roster(students: list[Student], roster: Roster) -> list[Student]:
    """Each student named "Last, First (ID)" where the roster knows the ID, and each roster student with
    no submission added (submitted=False); sorted by name, so by last name."""
    names = {s.id: f"{s.name} ({s.id})" for s in roster.students}
    seen = {s.name for s in students}
    named = [replace(s, name=names.get(s.name, s.name)) for s in students]
    missing = [Student(names[s.id], None, None, submitted=False) for s in roster.students if s.id not in seen]
    return sorted(named + missing, key=lambda s: s.name.casefold())


def class_report_dir(assignment: str) -> Path:
    """The class report's folder: report/ASSIGNMENT/ in the instructor folder (beside the gradebook that
    nbgrader_config.py places, so COURSE_INSTRUCTOR_DIR moves it too)."""
    from ..nbgrading.gradebook import beside_gradebook
    from ..nbgrading.run import nbgrader_config
    return beside_gradebook(nbgrader_config().CourseDirectory.db_url) / "report" / assignment


def _late(folder: Path, deadline: dt.datetime) -> bool | None:
    """nbgrader's timestamp.txt ("2027-02-16 10:00:00.000000 UTC") against the deadline; None without one."""
    stamp = folder / "timestamp.txt"
    if not stamp.is_file():
        return None
    text = stamp.read_text(encoding="utf-8").strip().removesuffix(" UTC").removesuffix("Z")
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)) > deadline
