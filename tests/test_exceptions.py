"""exceptions.toml: per-student extensions, waivers, caps and grace periods, checked line by line
(autograder/exceptions.py). Their effect on the gradebook and the Canvas CSV: tests/test_course_points.py."""
import datetime as dt

import pytest

from autograder import exceptions
from helpers import ASSIGNMENT, COURSE

A = COURSE.assignment(ASSIGNMENT)


@pytest.mark.parametrize("text, problem", [
    ('[residual-connections.51999]\nextra_days = 2\n', r"exceptions.toml:1: residual-connections.51999: unknown student"),
    ('[residual-connections.51001]\n\nextra_days = -1\n', r"exceptions.toml:3: residual-connections.51001.extra_days: "
                                                           r"expected a number >= 0"),
    ('[homework-9.51001]\nwaive_late = true\n', r"exceptions.toml:1: homework-9: unknown assignment"),
    ('[residual-connections.51001]\nwaive_late = "yes"\n', r"exceptions.toml:2: .*waive_late: expected true or false"),
    ('[residual-connections.51001\n', r"exceptions.toml:1: not valid TOML"),
])
def test_bad_exceptions_are_named_by_file_and_line(tmp_path, text, problem):
    (tmp_path / "exceptions.toml").write_text(text)
    with pytest.raises(exceptions.ExceptionsError, match=problem):
        exceptions.load(tmp_path / "exceptions.toml", COURSE, {"51001"})


def test_an_exception_moves_the_due_date_and_bounds_the_penalty():
    day = 86400
    assert exceptions.NONE.penalty(A, 1.5 * day) == (2, 2 * A.late_per_day)
    extended = exceptions.Exception_(extra_days=2)
    assert extended.due(A) == A.deadline + dt.timedelta(days=2) and extended.extension(A) == dt.timedelta(days=2)
    assert exceptions.Exception_(grace_hours=6).penalty(A, 5 * 3600) == (0, 0)
    assert exceptions.Exception_(waive_late=True).penalty(A, 3 * day)[1] == 0
    assert exceptions.Exception_(late_cap=7).penalty(A, 3 * day)[1] == 7


def test_gradescope_users_are_matched_to_the_roster_or_told_why_not():
    from autograder.lms.gradescope.allowances import Granted
    extended = exceptions.Exception_(extra_days=1, waive_late=True)
    roster = [{"id": "51001", "sis_user_id": "20270001", "login_id": "cabara", "names": ["Abara, Chidi", "Chidi Abara"],
               "exception": extended.to_json()},
              {"id": "51002", "sis_user_id": "20270002", "login_id": "lberg", "names": ["Berg, Lina", "Lina Berg"],
               "exception": None},
              {"id": "51003", "sis_user_id": "20270003", "login_id": "lberg2", "names": ["Berg, Lina", "Lina Berg"],
               "exception": None}]
    granted = Granted(roster)
    for user in ({"sid": "20270001", "name": "C. A."}, {"email": "CAbara@uni.example"}, {"name": "chidi  abara"}):
        match = granted.match([user])
        assert (match.exception, match.canvas_id, match.problem) == (extended, "51001", ""), user
    assert exceptions.Exception_.from_json(extended.to_json()) == extended
    assert granted.match([{"email": "lberg@uni.example"}]).canvas_id == "51002"
    for users in ([{"name": "Lina Berg"}], [{"name": "Someone Else", "email": "x@y.z"}], [], None):
        match = granted.match(users)                   # two Lina Bergs, a stranger, no users: no exception
        assert match.exception == exceptions.NONE and "Not matched to the course roster" in match.problem, users
    group = granted.match([{"sid": "20270001"}, {"sid": "20270002"}])
    assert group.exception == exceptions.NONE and "different per-student exceptions" in group.problem
    assert Granted([]).match([{"name": "Anyone"}]) == type(group)()      # no exceptions: nothing to say


def test_a_canvas_override_is_the_deadline_where_exceptions_toml_moves_none(tmp_path):
    (tmp_path / "exceptions.toml").write_text('[residual-connections.51001]\nextra_days = 1\n'
                                              '[residual-connections.51002]\nwaive_late = true\n')
    canvas_due = A.deadline + dt.timedelta(days=3)
    merged = exceptions.load(tmp_path / "exceptions.toml", COURSE).with_due_dates(
        ASSIGNMENT, {s: canvas_due for s in ("51001", "51002", "51003")})
    assert merged.get(ASSIGNMENT, "51001").due(A) == A.deadline + dt.timedelta(days=1)     # the file wins
    assert merged.get(ASSIGNMENT, "51002") == exceptions.Exception_(deadline=canvas_due, waive_late=True, canvas=True)
    assert merged.get(ASSIGNMENT, "51003").extension(A) == dt.timedelta(days=3)
    assert merged.get(ASSIGNMENT, "51003").describe().startswith("Canvas override: due 2027-")
