"""Shared fixtures: the reference solution and the release's stubs as modules (paths in helpers.py),
and one run of the demo's grading loop; how `make test` splits the tests between its workers."""
import os
from pathlib import Path

import nbtest
import pytest

from helpers import COURSE, RELEASE_NB, SOURCE_NB

# A throwaway course secret (core/seeds.py), set before any module-scoped grader reads it and
# inherited by the command lines the tests start: runs are deterministic and ~/.config untouched.
os.environ["RESIDUAL_COURSE_SECRET"] = "00" * 32
os.environ.pop("RESIDUAL_COURSE_SECRET_FILE", None)


@pytest.fixture(scope="session")
def reference():
    """The solution cells of the source notebook, as a module."""
    return nbtest.load(SOURCE_NB, name="reference_solution")


@pytest.fixture(scope="session")
def release():
    """The stub cells of the released notebook, as a module."""
    return nbtest.load(RELEASE_NB, name="released_stubs")


@pytest.fixture(scope="session")
def demo_class(tmp_path_factory) -> tuple[Path, Path]:
    """(instructor folder, Canvas CSV) of one run of the demo's loop (make demo), in a folder of its own.
    Every test that reads it shares this run; a test that adds to the class works on a copy."""
    from autograder.demo import loop as demo   # here: nbgrader's import is the slow tests' cost alone

    area = tmp_path_factory.mktemp("demo") / "instructor"
    return area, demo.run_loop(COURSE, area)


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items):
    """`make test` runs pytest-xdist with --dist loadgroup: a module's tests go to one worker, so that
    its module-scoped fixtures (a grader, a graded class) are built once, and the tests on the demo
    class, in whichever module, go to one worker, so that the class is graded once. Groups with a
    slow test are handed out first, so that no long group starts when the others are done."""
    groups = {item: "demo-class" if "demo_class" in item.fixturenames else item.module.__name__ for item in items}
    slow = {groups[item] for item in items if item.get_closest_marker("slow")}
    for item, group in groups.items():
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: groups[item] not in slow)   # stable: each group keeps its order
