"""Grade notebooks: extract the code, run it in a sandbox, score the hidden tests.

    with Grader("residual-connections", course) as grader:   # torch imported, fork server up
        result = grader.grade(Path("alice.ipynb"), seed)      # a Result; safe from several threads

Every test of the suite has an entry, also when the notebook could not be read, crashed
or hung (score 0, the reason in its output). A test that needs CUDA is not run on a
machine without it; results.result.not_run gives its entry by course.toml's without_cuda
(Grader(time_on_cpu=True), for tests only, runs it on the CPU's clock instead).
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbtest
import torch
from nbtest import policy

from .. import contract as contract_mod
from .. import suites
from ..core import seeds
from ..core.extract import Extracted, NotebookError, Template, unreadable_key
from ..core.sandbox import BACKSTOP, PROBE, Budget, Died, GraderError, Hung, Limits, Sandbox, Zygote
from ..course import SOLUTIONS, Course, CourseError
from ..kit import Failed, Test, Trial
from ..results.result import Result, TestResult, entry, held_entry, not_run
from .cuda import cuda_present

RETRIED = ("(retried once, on a fresh process: its first run reached the {:g} s wall-clock backstop with CPU "
           "time to spare; docs/results.md)")


class Grader:
    """What grading one assignment needs, set up once: fork server, reference, hidden suite."""

    def __init__(self, assignment: str, course: Course, *, timeout_s: float | None = None,
                 memory_mb: int | None = None, fork: bool = False, cuda: bool | None = None,
                 user: tuple[int, int] | None = None, time_on_cpu: bool = False, parts_at_once: int = 1):
        """fork: start the fork server by forking this process (see Zygote); only for a process
        that has loaded nothing secret and holds no other student's data.
        cuda: whether submissions of a Suite(cuda=True) run on the GPU and CUDA-only tests run;
        None: whether this machine has a CUDA GPU.
        user: (uid, gid) that sandbox children run student code as (needs root; Gradescope's runner).
        time_on_cpu: without CUDA, run the tests that need it anyway, on the CPU's clock at the sizes and
        thresholds each sets for the CPU (Triton's interpreter against eager PyTorch): how tests/ and
        benchmarks/timing_check.py prove the timing machinery without a GPU. Never for grades: a grader
        without CUDA skips those tests and gives their points by course.toml's without_cuda.
        parts_at_once: a notebook's parts graded in parallel children (each part has a child of its own); more
        than 1 only where nothing else is graded beside it (the command line grading one notebook)."""
        self.assignment = course.assignment(assignment)
        self.limits = Limits(timeout_s or course.grading.timeout_s, memory_mb or course.grading.memory_mb,
                             user=user, budget_s=max(course.grading.submission_budget_s, timeout_s or 0))
        self.parts_at_once = max(1, parts_at_once)
        child_modules = suites.child_modules(assignment)
        torch.set_num_threads(1)   # the grader's own tensors are tiny; threads would only fight the children
        machine_cuda = cuda_present() if cuda is None else bool(cuda)
        # First the fork server, while this process holds nothing secret; then the secrets.
        # Without CUDA, Triton (where a suite's child modules import it) is built for its interpreter.
        self.zygote = Zygote([PROBE, *child_modules], fork=fork and not seeds.loaded(), secret=suites.is_hidden,
                             env={"TRITON_INTERPRET": "0" if machine_cuda else "1"})
        try:
            source = self.assignment.notebook_path(SOLUTIONS)
            self.template = Template(source, course.grading.max_cell_kb)
            self.contract = contract_mod.load(source.parent)
            self.policy = policy.for_assignment(self.assignment.rules)
            self.secret = seeds.read_secret()
            self.secret_id = seeds.secret_id(self.secret)
            self.reference = nbtest.load(source, name=f"autograder_reference_{assignment.replace('-', '_')}")
            self.suite = suites.load(assignment)
            self.tests = self.suite.scaled(self.assignment.auto)    # course.toml's points per part
            if any(t.needs_cuda for t in self.tests) and self.assignment.timing is None:
                raise CourseError(f"hidden suite of {assignment} has tests that need CUDA; course.toml needs "
                                  f"[assignments.{assignment}.timing] with without_cuda")
        except BaseException:
            self.zygote.close()
            raise
        self.cuda = machine_cuda and self.suite.cuda
        self.limits = dataclasses.replace(self.limits, cuda=self.cuda)
        self.graded = [t for t in self.tests if self.cuda or time_on_cpu or not t.needs_cuda]
        self.specs_module = child_modules[0] if child_modules else None
        self.specs = importlib.import_module(self.specs_module).SPECS if child_modules else {}
        self._open: set[Sandbox] = set()
        self._lock = threading.Lock()
        self._warned = False

    def __enter__(self) -> "Grader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def grade(self, path: str | Path, seed: int | None = None) -> Result:
        """Grade one notebook; inputs are drawn from `seed`, or when None from a seed derived from the
        code and the course secret (the same code always gets the same inputs)."""
        try:
            extracted, problem = self.template.fill(Path(path)), None
        except NotebookError as e:
            extracted, problem = None, e
        key = extracted.key if extracted else unreadable_key(Path(path))
        stamp = {"seed_from": "code" if seed is None else "given", "code_key": key, "secret_id": self.secret_id}
        seed = seeds.derive(self.secret, self.assignment.name, key) if seed is None else int(seed)
        if problem is not None:
            return self._result(seed, [_entry(t, 0, f"could not read the notebook: {problem}", kind="unreadable")
                                       for t in self.graded],
                                **stamp)
        violations = policy.check_cells(self.template.marked(extracted), self.policy)
        parts = nbtest.cell_parts(extracted.cells, {name: entry.part for name, entry in self.contract.items()})
        budget = Budget(self.limits.budget_s)

        def grade_group(tests: list[Test]):
            """(entries, the monitor's events, the sandbox, [(fn, how a call of it changed its inputs)], {test id:
            the functions whose inputs it read back})."""
            with self._sandbox(extracted, tests[0].part, budget) as box:
                _drop_raising_cells(box, violations)
                graded, claims = {}, {}
                for t in tests:
                    first = len(box.kept)
                    graded[t.id] = self._run(t, box, seed, violations, parts)
                    claims[t.id] = {a.fn for a in box.kept[first:] if a.claimed}
                # once every test has run: the inputs of each call, as it returned and as they are now
                touched = [(a.fn, why) for a in box.kept
                           if (why := CHANGED_ELSEWHERE if a.changed() else WRITTEN_LATER if a.written_later() else None)]
            self._warn_isolation(box.isolation)
            return graded, observed(box), box, touched, claims

        groups = self._groups()
        pool = ThreadPoolExecutor(min(self.parts_at_once, len(groups)) or 1)
        try:
            done = list(pool.map(grade_group, groups))          # in group order, however they finished
        except BaseException:
            # SIGTERM, Ctrl-C or a grader error: the other parts' children could run on for the whole budget
            self._stop_children()
            raise
        finally:
            pool.shutdown()
        entries = {name: e for graded, *_ in done for name, e in graded.items()}
        # a test that read a function's inputs back vouches that it leaves them alone at every call its part made
        # (in each of the part's children): a call of it that changed them, or a write through a reference kept
        # from one, fails it, so that no call but the one read back may change them
        changed = {}      # (part, fn) -> why; a change during a call outranks a write after one
        for group, (_, _, _, touched, _) in zip(groups, done):
            for fn, why in touched:
                if changed.get((group[0].part, fn)) != CHANGED_ELSEWHERE:
                    changed[(group[0].part, fn)] = why
        for group, (_, _, _, _, claims) in zip(groups, done):
            for t in group:
                why = next((changed[(t.part, fn)] for fn in sorted(claims[t.id]) if (t.part, fn) in changed), None)
                if why and entries[t.id].kind in ("passed", "held"):
                    entries[t.id] = _entry(t, 0, why, t.misconception, "failed")
        # a test that judges every traced call of its part fails at the first one, in any of the part's children, that
        # its judge finds wanting: a call that earns points runs no otherwise than the ones the test traced itself
        traced: dict[int, list[tuple[str, dict]]] = {}
        for group, (_, _, box, _, _) in zip(groups, done):
            traced.setdefault(group[0].part, []).extend(box.traced)
        for t in self.graded:
            if t.judges is not None and t.id in entries and entries[t.id].kind in ("passed", "held"):
                why = _judged(t, traced.get(t.part, []))
                if why:
                    entries[t.id] = _entry(t, 0, f"at a call another test made: {why}", t.misconception, "failed")
        # a cell several children load: its events once, in notebook order, however the tests were grouped
        order = {label: i for i, (label, _, _) in enumerate(self.template.cells)}
        events = sorted(dict.fromkeys(e for _, seen, *_ in done for e in seen),
                        key=lambda v: (order.get(v.cell, len(order)), v.line, v.message))
        boxes = {group[0].part: box for group, (_, _, box, *_) in zip(groups, done)}
        for test in self.graded:      # each part's rules test, once every child has run: it lists all they saw
            if test.reads_findings:
                entries[test.id] = self._run(test, boxes[test.part], seed, violations + events, parts)
        return self._result(seed, [entries[t.id] for t in self.graded], review=tuple(map(str, violations + events)),
                            **stamp)

    def not_graded(self, why: str) -> Result:
        """Every graded test at 0, saying why: for a submission whose grading failed in the grader itself."""
        return self._result(0, [_entry(t, 0, f"not graded: {why}", kind="crashed") for t in self.graded])

    def _groups(self) -> list[list[Test]]:
        """The graded tests, rules tests aside, in groups that each get a sandbox child of their own, in the
        order they start: one group per part; where parts run at once, each slow test first, alone, so that
        the longest runs start at once and the rest share out the other cores."""
        split = self.parts_at_once > 1
        tests = [t for t in self.graded if not t.reads_findings]
        alone = [[t] for t in tests if split and t.slow]
        rest = [t for t in tests if not (split and t.slow)]
        return alone + [[t for t in rest if t.part == part] for part in dict.fromkeys(t.part for t in rest)]

    @contextlib.contextmanager
    def _sandbox(self, extracted: Extracted, part: int, budget: Budget):
        """The sandbox that runs one part's tests: a child of its own that loads only the cells the part's
        names need (Template.needed), so that what another cell does never runs beside these tests."""
        cells = self.template.needed(extracted, self.contract.used_by(part), set(self.contract))
        own = {label for label, _ in cells} - {label for label, _, _ in self.template.cells}
        with Sandbox(self.zygote, cells, self.specs_module, self.limits, self.contract.wire(), budget, own) as box:
            box.problems.update(extracted.problems)
            with self._lock:
                self._open.add(box)
            try:
                yield box
            finally:
                with self._lock:
                    self._open.discard(box)

    def _run(self, test: Test, box: Sandbox, seed: int, violations: list[policy.Violation],
             parts: Mapping[str, int], retried: bool = False) -> TestResult:
        """The test's entry; one that reached only the wall-clock backstop (its CPU time unspent: it
        waited, or the machine starved it) runs once more, on a fresh child, and says so. parts: each cell's
        part (nbtest.cell_parts, as the public tests' rules test reads it), for the violations the test sees."""
        trial = Trial(test, seed, box, self.limits.timeout_s, self.reference, self.specs,
                      lambda name: self._explain(name, box), cuda=self.cuda, timing=self.assignment.timing,
                      contract=self.contract,
                      violations=[v for v in dict.fromkeys(violations + observed(box))
                                  if v.cell == UNNAMED or parts.get(v.cell) == test.part])
        try:
            test.check(trial)
            # the monitor's events up to now: one the code caused after this test's requests cannot have
            # changed their replies, which the grader already holds
            rests = tuple(sorted(trial.rests))
            held = _held(test, bool(rests), violations + observed(box), {label for label, _ in box.cells})
            if held:
                return dataclasses.replace(held_entry(
                    test.name, test.part, test.points, "The test passed, but it rests on what your code's process "
                    "reports, and the code breaks a rule that could forge that report:\n"
                    + "\n".join(f"  {v}" for v in held)), rests=rests)
        except Failed as e:
            return _entry(test, 0, str(e), e.misconception, e.kind)
        except Hung as e:
            if box.over_budget:
                return _entry(test, 0, f"not graded: this submission used up its time budget of "
                                       f"{self.limits.budget_s:g} s (course.toml grading.submission_budget_s, "
                                       "loading and all tests together) before this test finished", kind="timed_out")
            if e.backstop and not retried:
                again = self._run(test, box, seed, violations, parts, retried=True)
                return dataclasses.replace(again, retried=True,
                                           output=again.output + "\n" + RETRIED.format(BACKSTOP * self.limits.timeout_s))
            if e.backstop or e.idle:
                waited = BACKSTOP * self.limits.timeout_s if e.backstop else self.limits.timeout_s
                return _entry(test, 0, f"timed out: {trial.current} waited {waited:g} s without finishing (for "
                                       "something that never comes: input(), a sleep, a lock?)", kind="timed_out")
            return _entry(test, 0, f"timed out: {trial.current} did not finish within {self.limits.timeout_s:g} s "
                                   "of CPU time (an endless loop, or far too slow)", kind="timed_out")
        except Died as e:
            return _entry(test, 0, f"{trial.current} stopped the grading process: {e}", kind="crashed")
        except GraderError:
            raise
        except Exception as e:     # replies are checked (core/replies.py); what a test still cannot use costs it alone
            return _entry(test, 0, f"could not be checked: the submission's reply was unusable "
                                   f"({type(e).__name__}: {str(e)[:200]})", kind="unusable")
        finally:
            if test.own_child:
                box.discard()
        return dataclasses.replace(_entry(test, test.points, "passed" + "".join(f"\n{note}" for note in trial.notes),
                                          kind="passed"), rests=tuple(sorted(trial.rests)))

    def _explain(self, name: str, box: Sandbox) -> str:
        """Why a name the test needs is not defined: the problem of the cell that should define it."""
        cell = self.template.owner.get(name)
        if cell is None:
            # a name only a locked cell that is no module cell binds (import numpy as np in Part 5's data cell)
            return ("no cell the grader runs defines it: import or define it in your own code (a locked cell that "
                    "only sets up the notebook's examples, such as one that loads data, does not run here)")
        return box.problems.get(cell, f"cell '{cell}' ran but did not define it (renamed or deleted?)")

    def _result(self, seed: int, entries: list[TestResult], **stamp) -> Result:
        """The graded tests' entries, with an entry for each test not run without CUDA, in suite order."""
        ran = dict(zip((t.id for t in self.graded), entries))
        rule = self.assignment.timing.without_cuda if self.assignment.timing else "skip"
        tests = [dataclasses.replace(ran.get(t.id) or not_run(t.name, t.part, t.points, rule, entries), id=t.id)
                 for t in self.tests]
        return Result(self.assignment.name, seed, tests, **stamp)

    def _warn_isolation(self, isolation: str) -> None:
        if "degraded" in isolation and not self._warned:
            self._warned = True
            print(f"warning: sandbox children are {isolation}. Grade as root on Linux 5.13 or newer for the "
                  "whole box (docs/security.md).", file=sys.stderr)

    def close(self) -> None:
        """Stop every running sandbox child and the fork server."""
        self._stop_children()
        self.zygote.close()

    def _stop_children(self) -> None:
        """Kill every running sandbox child: the thread waiting on each then closes its sandbox at once."""
        with self._lock:
            for box in self._open:
                box.stop()


def _drop_raising_cells(box: Sandbox, violations: list[policy.Violation]) -> None:
    """Leave out of the child every cell that raised when loaded and breaks a withhold rule: what it did
    before raising (patching the probe, say) must not outlive it, and what it meant to define is missing
    anyway. Such a cell is then treated as one that killed its child: it holds no test (_held)."""
    reaching = {v.cell for v in violations if v.severity == policy.WITHHOLD}
    if not reaching:
        return
    try:
        box.start()
    except Hung:          # the submission's budget ran out while it loaded: each test will say so
        return
    raised = reaching & set(box.problems) & {label for label, _ in box.cells}
    if raised:
        box.cells = [(label, src) for label, src in box.cells if label not in raised]
        box.discard()


def _held(test: Test, rests: bool, violations: list[policy.Violation], loaded: set[str]) -> list[policy.Violation]:
    """The violations that hold a test for review: a rule it names in held_by, or, for a test that rests
    on the child's reports (rests: its trial read one of kit.trial.REPORTS), a withhold-severity construct in
    any cell that loaded (any loaded cell shares the process with the code under test; a cell that killed its
    child ran in no later one); the monitor's events count alike, and one no cell can be named for always."""
    return [v for v in violations if v.rule in test.held_by
            or (rests and v.severity == policy.WITHHOLD and v.cell in loaded | {UNNAMED})]


MONITOR, UNNAMED = "monitor", "the submission"
CHANGED_ELSEWHERE = ("another call of the same function, in this test or another of this part, changed its inputs: "
                     "a function leaves its inputs unchanged at every call, not only at the one this test reads back. "
                     "Compute new tensors (x + fx, not x += fx).")
WRITTEN_LATER = ("the inputs of a call of the function this test reads back (this test's call or another of this part) "
                 "changed after the call returned, written by your code later "
                 "(at a later call or in a later test) through a reference it kept: a function leaves its inputs "
                 "unchanged for good, not only until it returns. Compute new tensors; keep no reference to write later.")


def observed(box: Sandbox) -> list[policy.Violation]:
    """The monitor's events in the sandbox's children so far, as violations of the rule 'monitor' with
    the cell's line quoted; an event no cell can be named for is charged to 'the submission'."""
    sources = dict(box.all_cells)
    return [policy.Violation(e.cell or UNNAMED, e.line, MONITOR, policy.WITHHOLD, f"{e.event}: {e.detail}",
                             policy.quote(sources.get(e.cell, ""), e.line)) for e in box.events]


def _judged(test: Test, calls: list[tuple[str, dict]]) -> str | None:
    """Why the first of the traced calls that test.judges finds wanting fails the test, or None."""
    for label, report in calls:
        try:
            why = test.judges(label, report)
        except Exception as e:     # the child's report, read by suite code: one it cannot use costs the test alone
            why = f"could not be checked: the submission's reply to {label} was unusable ({type(e).__name__})"
        if why:
            return why
    return None


def _entry(test: Test, score: float, output: str, misconception: str | None = None, kind: str = "") -> TestResult:
    return entry(test.name, test.part, score, test.points, output, misconception, kind)
