"""A graded class: each student's notebook, its result from the results store, and its upload time.

    students = from_folder(store, template, Path("submissions/residual-connections"))   # NAME.ipynb
    students = from_nbgrader(store, template, Path("submitted"), "residual-connections", deadline)
    students = from_store(store)                         # the store's own submission paths
    students = from_class(course, "residual-connections")  # what `python -m autograder autograde` graded

A result is found by the key of the code the grader ran (core/extract.py), so a class graded
by nbgrader (whose store names no files) and one graded by `grade --out` are read alike.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from ..core.extract import Template
from ..course import SOLUTIONS, Course
from ..results.result import Result
from ..results.store import Store, StoreError


@dataclass(frozen=True)
class Student:
    name: str
    notebook: Path | None      # None where the store names a file that is gone
    result: Result | None      # None: the notebook was never graded into this store
    late: bool | None = None   # None: the upload time is not known


def from_folder(store: Store, template: Template, folder: Path) -> list[Student]:
    """Every *.ipynb in the folder, named by its file name without .ipynb."""
    return [Student(nb.stem, nb, store.get(template.key(nb))) for nb in sorted(folder.glob("*.ipynb"))]


def from_nbgrader(store: Store, template: Template, submitted: Path, assignment: str,
                  deadline: dt.datetime) -> list[Student]:
    """nbgrader's submitted/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb, late when timestamp.txt is after the deadline."""
    out = []
    for folder in sorted(p for p in submitted.glob(f"*/{assignment}") if p.is_dir()):
        for nb in sorted(folder.glob("*.ipynb")):
            out.append(Student(folder.parent.name, nb, store.get(template.key(nb)), _late(folder, deadline)))
    return out


def from_store(store: Store) -> list[Student]:
    """The store's own results, named by their submission's file name (one per file graded)."""
    out = {}
    for result in store.submissions():
        path = Path(result.submission) if result.submission else None
        name = path.stem if path else "?"
        out[name] = Student(name, path if path and path.is_file() else None, result)
    return sorted(out.values(), key=lambda s: s.name)


def from_class(course: Course, assignment: str) -> list[Student]:
    """The class nbgrader collected (its submitted/ folder) and `python -m autograder autograde` graded
    (the results store beside the gradebook), as nbgrader_config.py places them."""
    from ..nbgrading.autograde import store_path
    from ..nbgrading.run import nbgrader_config
    config = nbgrader_config().CourseDirectory
    path = store_path(config.db_url, assignment)
    if not path.is_file():
        raise StoreError(f"{path}: no results yet; run `python -m autograder autograde {assignment}` first, "
                         "or give --results FILE")
    a = course.assignment(assignment)
    return from_nbgrader(Store(path, assignment), Template(a.notebook_path(SOLUTIONS)),
                         Path(config.submitted_directory), assignment, a.deadline)


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
