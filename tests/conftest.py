"""Shared fixtures: the reference solution and the release's stubs as modules (paths in helpers.py),
one grading of each sample class and one run of the demo's grading loop per test run; the order in
which `make test` hands the modules out."""
import contextlib
import fcntl
import os
import random
from dataclasses import replace
from pathlib import Path

import nbtest
import pytest
import torch

from helpers import COURSE, RELEASE_NB, SAMPLE_TIMEOUT_S, SOURCE_NB, SampleClass

# A throwaway course secret (core/seeds.py), set before any module-scoped grader reads it and
# inherited by the command lines the tests start: runs are deterministic and ~/.config untouched.
os.environ["RESIDUAL_COURSE_SECRET"] = "00" * 32
os.environ.pop("RESIDUAL_COURSE_SECRET_FILE", None)
# The sample classes' seed (helpers.SampleClass.seed), drawn once per run here, where pytest starts:
# pytest-xdist's workers inherit it, so every module grades with the same seed and each failure names it.
os.environ.setdefault("SAMPLE_SEED", str(random.randrange(2 ** 31)))
# Triton reads TRITON_INTERPRET once, when first imported, and torch imports it unasked (its first optimizer
# step loads torch._dynamo): without a GPU, set it before any test can import it, as fused-add-norm's setup
# cell and the grader's fork server do, so that a test loading that notebook after such a step still runs
# its kernels in the interpreter.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(scope="session")
def reference():
    """The solution cells of the source notebook, as a module."""
    return nbtest.load(SOURCE_NB, name="reference_solution")


@pytest.fixture(scope="session")
def release():
    """The stub cells of the released notebook, as a module."""
    return nbtest.load(RELEASE_NB, name="released_stubs")


@contextlib.contextmanager
def _once_per_run(tmp_path_factory, worker_id, name: str):
    """A folder shared by this run's pytest-xdist workers, held under a file lock: the first worker to
    get it makes what `name` stands for there, the others wait and read it."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base      # the workers' folders sit side by side
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)                           # released when the file closes
        yield shared


@pytest.fixture(scope="session")
def demo_class(tmp_path_factory, worker_id) -> tuple[Path, Path]:
    """(instructor folder, Canvas CSV) of one run of the demo's loop (make demo), made once per test run.
    Tests only read it; one that changes the class works on a copy."""
    from autograder.demo import loop as demo   # here: nbgrader's import is the slow tests' cost alone

    with _once_per_run(tmp_path_factory, worker_id, "demo") as shared:
        area, made = shared / "demo" / "instructor", shared / "demo" / "grades-csv.txt"
        if not made.exists():
            made.parent.mkdir(exist_ok=True)
            with demo.class_canvas(COURSE) as canvas:
                made.write_text(str(demo.run_loop(canvas, area)))
    return area, Path(made.read_text())


@pytest.fixture(scope="session")
def sample_results(tmp_path_factory, worker_id):
    """assignment -> (results store, {sample file name: its result as the store keeps it}): each sample
    class graded once per test run, with SampleClass.seed and SAMPLE_TIMEOUT_S a hidden test, by the
    batch grader (grade --out). Tests only read it."""
    from autograder.course import load
    from autograder.grading.batch import grade_many
    from autograder.results.store import Store
    def results(assignment: str) -> tuple[Path, dict[str, dict]]:
        samples = SampleClass(assignment)
        with _once_per_run(tmp_path_factory, worker_id, f"samples-{assignment}") as shared:
            path, done = shared / f"samples-{assignment}.jsonl", shared / f"samples-{assignment}.done"
            if not done.exists():
                grade_many(assignment, [samples.folder / name for name in samples.expected], load(),
                           Store(path, assignment, samples.seed), timeout_s=SAMPLE_TIMEOUT_S)
                done.touch()
        # each as a grade of the notebook alone gives it: without the batch's "submission"
        graded = {Path(r.submission).name: replace(r, submission=None).to_store()
                  for r in Store(path, assignment).submissions()}
        return path, graded
    return results


# fixtures that grade a whole sample class or run the demo (minutes each): a test using one is slow
WHOLE_CLASS = {"sample_results", "demo_class", "graded"}
# the modules to start first (`pytest --durations=0` on 2 cores, summed per module: test_hostile 5.5 minutes,
# test_autograde 4, test_student_dist 2), longest first: each starts at once, and the shorter modules fill the
# other workers around them
LONGEST = ("test_hostile.py", "test_autograde.py", "test_student_dist.py")


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one and a half workers per core. Many tests wait (on a child's backstop, a fork server, a
    subprocess), and a worker that waits leaves its core to another: on 2 cores, 3 workers ran the suite in
    7.9 minutes where 2 took 9.6 (the same tree, a quiet machine). Handing the longest modules' tests out one
    by one was slower still (9.7): their tests, side by side, each keep several processes busy."""
    cpus = os.cpu_count() or 1
    return cpus + (cpus + 1) // 2


def pytest_collection_modifyitems(items):
    """Mark the tests that need a WHOLE_CLASS fixture slow (`make test-fast` leaves them out).

    `make test` runs pytest-xdist with --dist loadscope: a module's tests go to one worker, so that
    its module-scoped fixtures (a grader, a graded class) are built once. The LONGEST modules are handed
    out first, then the others with a slow test, so that no long module starts when the others are done."""
    for item in items:
        if WHOLE_CLASS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    slow = {item.module for item in items if item.get_closest_marker("slow")}
    rank = lambda item: LONGEST.index(item.path.name) if item.path.name in LONGEST else len(LONGEST)
    items.sort(key=lambda item: (rank(item), item.module not in slow))     # stable: each module keeps its order
