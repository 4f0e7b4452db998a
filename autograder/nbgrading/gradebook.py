"""nbgrader's gradebook: the files kept beside it, its copies for workers, their merge.

A class is autograded by workers that each write to a copy of the gradebook (one
SQLite file's commits would make them wait for each other's disk syncs); what
nbgrader autograde wrote for their students is then merged back in one transaction:

    copy_gradebook(db_url, copy)                     # after the assignment is registered
    ... nbgrader autograde with db_url = sqlite:///copy ...
    merge_submissions(db_url, copy, "residual-connections", ["51001", "51002"])
"""
from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy.engine import make_url

from .run import tools_path

# The schema the raw SQL below is written for: nbgrader 0.9's newest alembic revision.
SCHEMA = "e43177bfe90b"


class GradebookError(ValueError):
    """The gradebook cannot be used here: not a SQLite file (nothing to keep beside it), or another schema."""


def sqlite_path(db_url) -> Path:
    """The file of the SQLite gradebook that db_url (str or SQLAlchemy URL) names."""
    url = make_url(db_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        raise GradebookError(f"gradebook {url}: the course keeps its files beside a SQLite gradebook file")
    return Path(url.database).resolve()


def beside_gradebook(db_url) -> Path:
    """The folder of the SQLite gradebook that db_url names."""
    return sqlite_path(db_url).parent


def copy_gradebook(db_url, copy: Path) -> None:
    """A consistent copy of the gradebook (SQLite's backup), replacing `copy` if it exists."""
    with closing(_connect(sqlite_path(db_url))) as source, closing(_connect(copy)) as dest:
        source.backup(dest)


# What `nbgrader autograde` writes (nbgrader 0.9's schema): per table, the rows of one
# assignment's submissions by some students ({db}: main or copy) and the columns it sets;
# the others (manual scores, comments, flags) are the formgrader's; the extension is exceptions.toml's.
_SUBMISSIONS = ("SELECT sa.id FROM {db}.submitted_assignment sa JOIN {db}.assignment a ON sa.assignment_id = a.id "
                "WHERE a.name = :assignment AND sa.student_id IN (SELECT id FROM temp.merging)")
_NOTEBOOKS = f"SELECT id FROM {{db}}.submitted_notebook WHERE assignment_id IN ({_SUBMISSIONS})"
_AUTOGRADED = {   # table: (its rows, the columns autograde sets), parents first
    "submitted_assignment": (f"id IN ({_SUBMISSIONS})", ["timestamp", "extension"]),
    "submitted_notebook": (f"id IN ({_NOTEBOOKS})", ["late_submission_penalty"]),
    "grade": (f"notebook_id IN ({_NOTEBOOKS})", ["auto_score", "needs_manual_grade"]),
    "comment": (f"notebook_id IN ({_NOTEBOOKS})", ["auto_comment"]),
}


def merge_submissions(db_url, copy: Path, assignment: str, students: list[str]) -> None:
    """Bring these students' submissions of `assignment` from `copy` (a copy_gradebook() that
    nbgrader autograded them in) into the gradebook, in one transaction, as `nbgrader autograde`
    would have written them: new rows are added; existing ones get the autograded columns only,
    so manual grades, even those given while the workers ran, stay. A student the copy added
    (one not on the roster) is added too. On any error nothing changes."""
    if not students:
        return
    with closing(_connect(sqlite_path(db_url))) as db:
        db.execute("ATTACH DATABASE ? AS copy", (str(copy),))
        for name in ("main", "copy"):
            _check_schema(db, name)
        db.execute("CREATE TEMP TABLE merging (id TEXT PRIMARY KEY)")
        db.executemany("INSERT OR IGNORE INTO temp.merging VALUES (?)", [(s,) for s in students])
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT OR IGNORE INTO main.student SELECT * FROM copy.student "
                       "WHERE id IN (SELECT id FROM temp.merging)")
            for table, (rows, columns) in _AUTOGRADED.items():
                db.execute(f"INSERT INTO main.{table} SELECT * FROM copy.{table} WHERE {rows.format(db='copy')} "
                           f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in columns)}",
                           {"assignment": assignment})
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def _check_schema(db: sqlite3.Connection, name: str) -> None:
    """Refuse to write a gradebook of another schema than the SQL here was written for."""
    try:
        found = [row[0] for row in db.execute(f"SELECT version_num FROM {name}.alembic_version")]
    except sqlite3.Error:
        found = []
    if found != [SCHEMA]:
        raise GradebookError(f"gradebook ({name}) has schema {found or 'unknown'}, this merge is written for "
                             f"{SCHEMA} (nbgrader 0.9): install the nbgrader version pyproject.toml pins")


def _connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), waiting up to 60 s for a lock."""
    return sqlite3.connect(str(path), timeout=60, isolation_level=None)


def open_gradebook(db_url, course_id: str = ""):
    """nbgrader's Gradebook, opened (or created) with alembic reachable."""
    from nbgrader import api
    os.environ["PATH"] = tools_path()
    # Creating a gradebook, nbgrader asks the `alembic` command for its newest schema revision: a process
    # that imports all of nbgrader, seconds each time. For the pinned nbgrader that is SCHEMA
    # (tests/test_gradebook.py asks alembic).
    api.get_alembic_version = lambda: SCHEMA
    return api.Gradebook(db_url, course_id)


def set_assignment(db_url, assignment: str, notebook: str, duedate, points: dict[str, tuple[float, str]]) -> None:
    """Give a registered assignment this due date (naive UTC, as nbgrader keeps it) and its notebook's
    grade cells these maximum points, with the checksums that go with them ({grade_id: (points,
    checksum)}; None: the cell's own stays; a cell the gradebook lacks is skipped): nbgrader's totals and
    feedback follow a grade cell's max_score."""
    from nbgrader.api import MissingEntry
    with open_gradebook(db_url) as gb:
        gb.update_or_create_assignment(assignment, duedate=duedate)
        for grade_id, (value, checksum) in points.items():
            try:
                gb.find_grade_cell(grade_id, notebook, assignment).max_score = value
            except MissingEntry:      # not registered (generate_assignment adds the cells the notebook has)
                continue
            if checksum is not None:
                gb.find_source_cell(grade_id, notebook, assignment).checksum = checksum
        gb.db.commit()
