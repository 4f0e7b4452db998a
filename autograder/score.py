"""Grade notebooks: extract the code, run it in a sandbox, score the hidden tests.

    with Grader("residual-connections") as grader:       # torch imported, fork server up
        result = grader.grade("submissions/alice.ipynb")   # safe to call from several threads

A result is {"assignment", "score", "max_score", "seed", "tests": [{"name", "part",
"score", "max_score", "output"}]}: every test of the suite, also when the notebook
could not be read, crashed or hung (score 0, the reason in "output").

A test that needs CUDA (a timing test) on a machine without it is not run; its entry
says "skipped: ..." and course.toml's [timing] without_cuda decides its points:
"redistribute" keeps them in max_score and scores them at the fraction the graded
tests earned (27 of 30 automatic points graded -> 9 of its 10), so the total is what
the graded parts would carry scaled up to the whole; "skip" leaves them out (score 0,
max_score 0), so max_score drops by them.
"""
from __future__ import annotations

import dataclasses
import importlib
import re
import secrets
import sys
import threading
from pathlib import Path

import torch

from . import course as course_mod
from . import suites
from .course import SOLUTIONS, Course, CourseError
from .extract import NotebookError, Template, nbtest
from .sandbox import PROBE, Died, GraderError, Hung, Limits, Sandbox, Zygote
from .suite import Failed, Test, Trial

MAX_OUTPUT = 1500   # characters of feedback per test


class Grader:
    """What grading one assignment needs, set up once: fork server, reference, hidden suite."""

    def __init__(self, assignment: str, course: Course | None = None, *, timeout_s: float | None = None,
                 memory_mb: int | None = None, fork: bool = False, cuda: bool | None = None):
        """fork: start the fork server by forking this process (see Zygote); only for a process
        that has loaded nothing secret and holds no other student's data.
        cuda: whether submissions of a Suite(cuda=True) run on the GPU and CUDA-only tests run;
        None: whether this machine has a CUDA GPU."""
        course = course or course_mod.load()
        self.assignment = course.assignment(assignment)
        self.limits = Limits(timeout_s or course.grading.timeout_s, memory_mb or course.grading.memory_mb)
        self.workers = course.grading.workers
        child_modules = suites.child_modules(assignment)
        torch.set_num_threads(1)   # the grader's own tensors are tiny; threads would only fight the children
        machine_cuda = cuda_present() if cuda is None else bool(cuda)
        # First the fork server, while this process holds nothing secret; then the secrets.
        # Without CUDA, Triton (where a suite's child modules import it) is built for its interpreter.
        self.zygote = Zygote([PROBE, *child_modules], fork=fork,
                             env={"TRITON_INTERPRET": "0" if machine_cuda else "1"})
        try:
            source = self.assignment.notebook_path(SOLUTIONS)
            self.template = Template(source)
            self.reference = nbtest.load(source, name=f"autograder_reference_{assignment.replace('-', '_')}")
            self.suite = suites.load(assignment)
            self.suite.check_points(self.assignment.auto)
            if any(t.needs_cuda for t in self.suite.tests) and self.assignment.timing is None:
                raise CourseError(f"hidden suite of {assignment} has tests that need CUDA; course.toml needs "
                                  f"[assignments.{assignment}.timing] with without_cuda")
        except BaseException:
            self.zygote.close()
            raise
        self.cuda = machine_cuda and self.suite.cuda
        self.limits = dataclasses.replace(self.limits, cuda=self.cuda)
        self.graded = [t for t in self.suite.tests if self.cuda or not t.needs_cuda]
        self.specs_module = child_modules[0] if child_modules else None
        self.specs = importlib.import_module(self.specs_module).SPECS if child_modules else {}
        self._open: set[Sandbox] = set()
        self._lock = threading.Lock()
        self._warned = False

    def __enter__(self) -> "Grader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def grade(self, path: str | Path, seed: int | None = None) -> dict:
        """Grade one notebook; inputs are drawn from `seed` (a fresh one when None)."""
        seed = new_seed() if seed is None else int(seed)
        try:
            extracted = self.template.fill(Path(path))
        except NotebookError as e:
            return self._result(seed, [_entry(t, 0, f"could not read the notebook: {e}") for t in self.graded])
        with Sandbox(self.zygote, extracted.cells, self.specs_module, self.limits) as box:
            with self._lock:
                self._open.add(box)
            try:
                box.problems.update(extracted.problems)
                entries = [self._run(test, box, seed) for test in self.graded]
            finally:
                with self._lock:
                    self._open.discard(box)
            self._warn_isolation(box.isolation)
        return self._result(seed, entries)

    def _run(self, test: Test, box: Sandbox, seed: int) -> dict:
        trial = Trial(test, seed, box, self.limits.timeout_s, self.reference, self.specs,
                      lambda name: self._explain(name, box), cuda=self.cuda, timing=self.assignment.timing)
        try:
            test.check(trial)
        except Failed as e:
            return _entry(test, 0, str(e))
        except Hung:
            return _entry(test, 0, f"timed out: {trial.current} did not finish within {self.limits.timeout_s:g} s "
                                   "(an endless loop, or far too slow)")
        except Died as e:
            return _entry(test, 0, f"{trial.current} stopped the grading process: {e}")
        except GraderError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as e:
            return _entry(test, 0, f"could not be checked: the submission's reply was unusable "
                                   f"({type(e).__name__}: {str(e)[:200]})")
        finally:
            if test.own_child:
                box.discard()
        return _entry(test, test.points, "passed" + "".join(f"\n{note}" for note in trial.notes))

    def _explain(self, name: str, box: Sandbox) -> str:
        """Why a name the test needs is not defined: the problem of the cell that should define it."""
        cell = self.template.owner.get(name)
        if cell is None:
            return "the assignment does not define it either"
        return box.problems.get(cell, f"cell '{cell}' ran but did not define it (renamed or deleted?)")

    def _result(self, seed: int, entries: list[dict]) -> dict:
        """The result of the graded tests' entries, with an entry for each test skipped without CUDA."""
        ran = dict(zip((t.name for t in self.graded), entries))
        earned, graded = sum(e["score"] for e in entries), sum(e["max_score"] for e in entries)
        tests = [ran.get(t.name) or self._skipped(t, earned, graded) for t in self.suite.tests]
        return {"assignment": self.assignment.name, "score": _points(sum(e["score"] for e in tests)),
                "max_score": sum(e["max_score"] for e in tests), "seed": seed, "tests": tests}

    def _skipped(self, test: Test, earned: float, graded: int) -> dict:
        """The entry of a CUDA-only test on a machine without CUDA; its points follow course.toml."""
        rule = self.assignment.timing.without_cuda
        score, top = without_cuda_points(rule, test.points, earned, graded)
        why = "skipped: needs a CUDA GPU (none on the grading machine)"
        if rule == "skip":
            return _entry(test, score, f"{why}; not graded, per course.toml (without_cuda = \"skip\"): its "
                                       f"{test.points} points are left out of the maximum", max_score=top)
        parts = " and ".join(f"part {p}" for p in sorted({t.part for t in self.graded})) or "no part"
        return _entry(test, score, f"{why}; its {test.points} points are redistributed to {parts} per course.toml "
                                   f"(without_cuda = \"redistribute\"): they follow the fraction of {parts} you "
                                   f"earned, {_points(earned)} of {graded}, so {score} of {test.points}",
                      max_score=top)

    def _warn_isolation(self, isolation: str) -> None:
        if not isolation.startswith("landlock") and not self._warned:
            self._warned = True
            print(f"warning: sandbox children run with {isolation}: student code can read any file "
                  "this user can (solutions/ included). Grade on Linux 5.13 or newer.", file=sys.stderr)

    def close(self) -> None:
        """Stop every running sandbox child and the fork server."""
        with self._lock:
            for box in list(self._open):
                box.close()
        self.zygote.close()


def cuda_present() -> bool:
    """Whether this machine has a CUDA GPU, asked through NVML where it can be: a process that
    initialised CUDA cannot be forked into a fork server whose children use the GPU."""
    return torch.cuda.device_count() > 0


def new_seed() -> int:
    return secrets.randbelow(2 ** 31)


def _entry(test: Test, score: float, output: str, max_score: int | None = None) -> dict:
    output = re.sub(r"\s+\n", "\n", output).strip()
    if len(output) > MAX_OUTPUT:
        output = output[:MAX_OUTPUT - 20] + " ... (cut)"
    return {"name": test.name, "part": test.part, "score": score,
            "max_score": test.points if max_score is None else max_score, "output": output}


def without_cuda_points(rule: str, points: int, earned: float, graded: int) -> tuple[float, int]:
    """(score, max_score) of a test that needs CUDA on a machine without it, by course.toml's without_cuda:
    "redistribute" scores its points at the fraction `earned` of `graded` (the tests that ran);
    "skip" leaves them out of the maximum."""
    if rule == "skip":
        return 0, 0
    return (_points(points * earned / graded) if graded else 0), points


def _points(value: float) -> float | int:
    """A score to two decimals, as a whole number where it is one."""
    value = round(value, 2)
    return int(value) if value == int(value) else value
