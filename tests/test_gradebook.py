"""Workers' gradebook copies merged back into the gradebook (autograder/gradebook.py)."""
import os
import sqlite3
import subprocess

import pytest

from autograder.nbgrading.gradebook import (SCHEMA, GradebookError, copy_gradebook, merge_submissions,
                                            open_gradebook)
from autograder.nbgrading.run import tools_path


def make_gradebook(db_url) -> None:
    """Two assignments, one notebook each with an autograded and a written cell; ann and ben submitted both."""
    with open_gradebook(db_url) as gb:
        for a in ("hw1", "hw2"):
            gb.add_assignment(a)
            gb.add_notebook("nb", a)
            gb.add_grade_cell("auto", "nb", a, max_score=10, cell_type="code")
            gb.add_grade_cell("written", "nb", a, max_score=5, cell_type="markdown")
        for s in ("ann", "ben"):
            gb.add_student(s, first_name=s.title())
            for a in ("hw1", "hw2"):
                gb.add_submission(a, s)
                gb.find_grade("auto", "nb", a, s).auto_score = 2
                gb.find_grade("written", "nb", a, s).manual_score = 4
        gb.db.commit()


def scores(db_url) -> dict:
    """{(assignment, student): (autograded score, written score, total)}."""
    with open_gradebook(db_url) as gb:
        return {(a.name, sub.student.id): (gb.find_grade("auto", "nb", a.name, sub.student.id).score,
                                           gb.find_grade("written", "nb", a.name, sub.student.id).score, sub.score)
                for a in gb.assignments for sub in a.submissions}


@pytest.fixture
def gradebook(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    make_gradebook(db_url)
    copy = tmp_path / "gradebook.hw1.worker-0.db"
    copy_gradebook(db_url, copy)
    return db_url, copy


def test_merge_replaces_the_named_students_submissions_only(gradebook):
    db_url, copy = gradebook
    with open_gradebook(f"sqlite:///{copy}") as gb:   # what a worker's nbgrader autograde writes
        gb.find_grade("auto", "nb", "hw1", "ann").auto_score = 9
        gb.find_grade("auto", "nb", "hw1", "ben").auto_score = 1     # ben is not merged
        gb.find_grade("auto", "nb", "hw2", "ann").auto_score = 7     # nor is another assignment
        gb.update_or_create_student("cal")                           # not on the roster
        gb.add_submission("hw1", "cal")
        gb.find_grade("auto", "nb", "hw1", "cal").auto_score = 8
        gb.db.commit()
    with open_gradebook(db_url) as gb:                  # the formgrader, while the workers ran
        gb.find_grade("written", "nb", "hw1", "ann").manual_score = 5
        gb.db.commit()
    before = scores(db_url)
    merge_submissions(db_url, copy, "hw1", ["ann", "cal"])
    after = scores(db_url)
    assert after[("hw1", "ann")] == (9, 5, 14)                       # the new written grade is kept
    assert after[("hw1", "cal")] == (8, 0, 8)
    assert {k: v for k, v in after.items() if k[1] != "cal" and k != ("hw1", "ann")} == \
        {k: v for k, v in before.items() if k != ("hw1", "ann")}
    with open_gradebook(db_url) as gb:
        assert gb.find_student("ann").first_name == "Ann"            # the roster's rows are not replaced
        assert gb.find_student("cal").id == "cal"


def test_a_merge_that_fails_changes_nothing(gradebook, tmp_path):
    db_url, copy = gradebook
    broken = tmp_path / "broken.db"
    with sqlite3.connect(broken) as db:                              # nbgrader's schema named, no tables
        db.execute("CREATE TABLE alembic_version (version_num TEXT)")
        db.execute("INSERT INTO alembic_version VALUES (?)", (SCHEMA,))
        db.execute("CREATE TABLE student (id TEXT)")
    before = scores(db_url)
    with pytest.raises(sqlite3.OperationalError):
        merge_submissions(db_url, broken, "hw1", ["ann"])
    assert scores(db_url) == before


def test_a_copy_of_another_schema_is_refused(gradebook, tmp_path):
    db_url, copy = gradebook
    with sqlite3.connect(copy) as db:                                # as if another nbgrader wrote it
        db.execute("UPDATE alembic_version SET version_num = 'f00'")
    before = scores(db_url)
    with pytest.raises(GradebookError, match=r"schema \['f00'\].*written for " + SCHEMA):
        merge_submissions(db_url, copy, "hw1", ["ann"])
    assert scores(db_url) == before


def test_merging_nobody_leaves_the_gradebook_alone(gradebook):
    db_url, copy = gradebook
    before = scores(db_url)
    merge_submissions(db_url, copy, "hw1", [])
    assert scores(db_url) == before


def test_schema_is_the_head_alembic_gives_a_new_gradebook():
    """open_gradebook tells nbgrader SCHEMA instead of running `alembic heads`; alembic agrees."""
    from nbgrader.dbutil import _temp_alembic_ini
    with _temp_alembic_ini("sqlite:////tmp/unused.db") as ini:
        heads = subprocess.run(["alembic", "-c", ini, "heads"], capture_output=True, text=True, check=True,
                               env={**os.environ, "PATH": tools_path()}).stdout.split()
    assert heads[0] == SCHEMA, heads
