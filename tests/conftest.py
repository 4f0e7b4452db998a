"""Shared fixtures: the reference solution and the release's stubs as modules (paths in helpers.py),
and one run of the demo's grading loop; the order in which `make test` hands the modules out."""
import fcntl
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
def demo_class(tmp_path_factory, worker_id) -> tuple[Path, Path]:
    """(instructor folder, Canvas CSV) of one run of the demo's loop (make demo), made once per test run:
    the first pytest-xdist worker that needs it runs the loop in the run's shared temporary folder, and
    the others wait for it there (a file lock). Tests only read it; one that changes the class works on
    a copy."""
    from autograder.demo import loop as demo   # here: nbgrader's import is the slow tests' cost alone

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base      # the workers' folders sit side by side
    area, made = shared / "demo" / "instructor", shared / "demo" / "grades-csv.txt"
    with open(shared / "demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)                           # released when the file closes
        if not made.exists():
            made.parent.mkdir(exist_ok=True)
            made.write_text(str(demo.run_loop(COURSE, area)))
    return area, Path(made.read_text())


def pytest_collection_modifyitems(items):
    """`make test` runs pytest-xdist with --dist loadscope: a module's tests go to one worker, so that
    its module-scoped fixtures (a grader, a graded class) are built once. Modules with a slow test are
    handed out first, so that no long module starts when the others are done."""
    slow = {item.module for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.module not in slow)     # stable: each module keeps its order
