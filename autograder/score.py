"""Grade notebooks: extract the code, run it in a sandbox, score the hidden tests.

    with Grader("residual-connections") as grader:       # torch imported, fork server up
        result = grader.grade("submissions/alice.ipynb")   # safe to call from several threads

A result is {"assignment", "score", "max_score", "seed", "tests": [{"name", "part",
"score", "max_score", "output"}]}: every test of the suite, also when the notebook
could not be read, crashed or hung (score 0, the reason in "output").
"""
from __future__ import annotations

import importlib
import re
import secrets
import sys
import threading
from pathlib import Path

import torch

from . import course as course_mod
from . import suites
from .course import SOLUTIONS, Course
from .extract import NotebookError, Template, nbtest
from .sandbox import PROBE, Died, GraderError, Hung, Limits, Sandbox, Zygote
from .suite import Failed, Test, Trial

MAX_OUTPUT = 1500   # characters of feedback per test


class Grader:
    """What grading one assignment needs, set up once: fork server, reference, hidden suite."""

    def __init__(self, assignment: str, course: Course | None = None, *, timeout_s: float | None = None,
                 memory_mb: int | None = None, fork: bool = False):
        """fork: start the fork server by forking this process (see Zygote); only for a process
        that has loaded nothing secret and holds no other student's data."""
        course = course or course_mod.load()
        self.assignment = course.assignment(assignment)
        self.limits = Limits(timeout_s or course.grading.timeout_s, memory_mb or course.grading.memory_mb)
        self.workers = course.grading.workers
        child_modules = suites.child_modules(assignment)
        torch.set_num_threads(1)   # the grader's own tensors are tiny; threads would only fight the children
        # First the fork server, while this process holds nothing secret; then the secrets.
        self.zygote = Zygote([PROBE, *child_modules], fork=fork)
        try:
            source = self.assignment.notebook_path(SOLUTIONS)
            self.template = Template(source)
            self.reference = nbtest.load(source, name=f"autograder_reference_{assignment.replace('-', '_')}")
            self.suite = suites.load(assignment)
            self.suite.check_points(self.assignment.auto)
        except BaseException:
            self.zygote.close()
            raise
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
            return self._result(seed, [_entry(t, 0, f"could not read the notebook: {e}") for t in self.suite.tests])
        with Sandbox(self.zygote, extracted.cells, self.specs_module, self.limits) as box:
            with self._lock:
                self._open.add(box)
            try:
                box.problems.update(extracted.problems)
                entries = [self._run(test, box, seed) for test in self.suite.tests]
            finally:
                with self._lock:
                    self._open.discard(box)
            self._warn_isolation(box.isolation)
        return self._result(seed, entries)

    def _run(self, test: Test, box: Sandbox, seed: int) -> dict:
        trial = Trial(test, seed, box, self.limits.timeout_s, self.reference, self.specs,
                      lambda name: self._explain(name, box))
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
        return _entry(test, test.points, "passed")

    def _explain(self, name: str, box: Sandbox) -> str:
        """Why a name the test needs is not defined: the problem of the cell that should define it."""
        cell = self.template.owner.get(name)
        if cell is None:
            return "the assignment does not define it either"
        return box.problems.get(cell, f"cell '{cell}' ran but did not define it (renamed or deleted?)")

    def _result(self, seed: int, entries: list[dict]) -> dict:
        return {"assignment": self.assignment.name, "score": sum(e["score"] for e in entries),
                "max_score": self.assignment.max_auto, "seed": seed, "tests": entries}

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


def new_seed() -> int:
    return secrets.randbelow(2 ** 31)


def _entry(test: Test, score: int, output: str) -> dict:
    output = re.sub(r"\s+\n", "\n", output).strip()
    if len(output) > MAX_OUTPUT:
        output = output[:MAX_OUTPUT - 20] + " ... (cut)"
    return {"name": test.name, "part": test.part, "score": score, "max_score": test.points, "output": output}
