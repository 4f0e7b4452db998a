"""What a hidden test sees, and how it fails.

    SUITE = Suite("residual-connections")

    @SUITE.test(1, 2, "residual_add returns x + fx on odd shapes")
    def _(t: Trial):
        x, fx = t.randn(3, 5), t.randn(3, 5)
        out = t.tensor(t.call("residual_add", x, fx).result, "residual_add(x, fx)")
        t.check(out, x + fx, "residual_add(x, fx)", "must be x + fx")

A test runs in the grader process. t.call, t.new and t.invoke run the submission
in its sandbox child and return raw observations; every comparison happens here,
against values computed here. A test passes by returning and fails by raising
Failed (t.fail), all or nothing; the message names the misconception it caught,
and the failure carries that misconception's id, declared in the suite's table
(suites/ASSIGNMENT/misconceptions.py): per test (Suite.test(..., misconception=ID)),
per failure (t.fail(..., misconception=ID), t.check(..., misconception=ID)) or per
wrong answer it recognises (a third item in check's alternatives).

A test's id is its function's name (residual_add_values): the results store keeps it beside the
sentence (its title), and its hidden inputs are drawn from the seed and the id, so rewording the
sentence changes neither. A test that reads what the child reports besides the returned value (an error it
raised, its inputs after the call, gradients, the structure report, a launch trace, timings: REPORTS)
rests on that report and is held for review when the code breaks a withhold rule (docs/security.md):
the Trial marks it as the test reads one, so the hold follows what the test asks, and no list names them.

A suite built with Suite(name, cuda=True) runs the submission on the GPU where the
grading machine has one (t.cuda, t.device; tensors are moved there in the child), and a
test registered with needs_cuda=True is not run without one: its points then follow
course.toml's [timing] without_cuda (results.result.not_run). Under Grader(time_on_cpu=True)
(tests only) it runs without CUDA, t.cuda False, and t.time takes the CPU's clock.
"""
from __future__ import annotations

import dataclasses
import random
import re
from dataclasses import dataclass
from typing import Callable

import torch
from nbtest import names_shape as shape_in  # noqa: F401 (kit's name for the public tests' own reading)
from nbtest.cellcode import kernel_defs

from ..contract import Contract
from ..core import arena, probe
from ..core.sandbox import Deadline
from ..course import CourseError, split_points

SHOWN_VALUES = 6   # tensor entries shown in "yours / expected"
STUDENT_TEXT = 120  # characters of a message, string or type name the submission made, shown in feedback
STUDENT_NAME = 60   # of a type name


class Failed(Exception):
    """A hidden test's verdict: the message says what is wrong and why; misconception: its id, or None;
    kind: "failed" (a wrong answer), "error" (the submission raised), "not_attempted" (a stub)."""

    def __init__(self, message: str, misconception: str | None = None, kind: str = "failed"):
        super().__init__(message)
        self.misconception, self.kind = misconception, kind


TEST_DEFAULT = object()   # t.fail's misconception when not given: the test's own


@dataclass(frozen=True)
class Test:
    name: str
    part: int
    points: float              # @test's weight within its part; course.toml's points after Suite.scaled
    check: Callable[["Trial"], None]
    needs_cuda: bool = False   # skipped on a grading machine without CUDA
    own_child: bool = False    # its sandbox child is discarded afterwards (memory it may have corrupted)
    misconception: str | None = None   # the id its failures show unless a failure names another
    held_by: frozenset[str] = frozenset()   # policy rules whose breach holds it for review
    slow: bool = False          # it trains: run first, in a child of its own, where a notebook has cores to spare
    # it judges every traced call of its part, its own and other tests', in every child: judges(label, report) ->
    # why the test fails, or None (grading/grader.py), so that no call that earns points runs unjudged
    judges: Callable[[str, dict], str | None] | None = None

    @property
    def id(self) -> str:
        """What stores and samples know it by: the check function's name (a part's rules test: rules_partN)."""
        return f"rules_part{self.part}" if self.check is rules else self.check.__name__

    @property
    def reads_findings(self) -> bool:
        """A part's rules test: it reads what the policy and the monitor found, and calls nothing."""
        return self.check is rules


def rules(t: "Trial") -> None:
    """The part's solution cells follow the assignment's static policy (nbtest/policy.py)."""
    if t.violations:
        t.fail("flagged for an instructor's review: the code breaks the assignment's rules. This test itself "
               "carries no points; a test these rules hold says so, with the points it holds:\n"
               + "\n".join(f"  {v}" for v in t.violations))


class Suite:
    """An assignment's hidden tests, in the order they run."""

    def __init__(self, assignment: str, cuda: bool = False, held_by: dict[str, set[str]] | None = None):
        """held_by: test id -> the policy rules that hold it besides the withhold rules that hold every
        test resting on the child's reports (REPORTS)."""
        self.assignment = assignment
        self.cuda = cuda             # the submission runs on the GPU where there is one
        self.tests: list[Test] = []
        self._held_by = dict(held_by or {})
        self._finished = False

    def test(self, part: int, points: int, name: str, needs_cuda: bool = False, own_child: bool = False,
             misconception: str | None = None, slow: bool = False, judges=None):
        """own_child: the tests after this one get a fresh child, unharmed by what it ran (a kernel
        that wrote past the end of a tensor corrupts the child's heap, to crash it later).
        misconception: the id of what a failure of this test shows, unless the failure names another.
        slow: it takes several times a typical test's time (it trains a model); where one notebook is
        graded on several cores (Grader(parts_at_once=...)), it runs first, in a child of its own.
        judges: judges(label, report) -> why the test fails, or None, applied to every call of its part that was
        traced (t.call(..., trace=...)) and returned, in any of the part's children, once all have run."""
        def register(check: Callable[[Trial], None]) -> Callable[[Trial], None]:
            self.tests.append(Test(name, part, points, check, needs_cuda, own_child, misconception, slow=slow,
                                   judges=judges))
            return check
        return register

    def finish(self) -> "Suite":
        """Put the tests in the order of their parts (a suite's part modules may be imported in any
        order; each part's tests keep the order they were registered in), mark the tests named in
        held_by, and add a 0-point rules test to each part that has tests run without CUDA. Called once,
        after the suite's modules registered their tests."""
        if self._finished:
            return self
        self.tests.sort(key=lambda t: t.part)
        ids = [t.id for t in self.tests]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise CourseError(f"hidden suite of {self.assignment}: two tests have the function name {twice[0]}; a "
                              "test's id is its function's name, so each must have its own")
        unknown = set(self._held_by) - set(ids)
        if unknown:
            raise CourseError(f"hidden suite of {self.assignment}: held_by names no test: {sorted(unknown)}")
        self.tests = [dataclasses.replace(t, held_by=frozenset(self._held_by.get(t.id, ()))) for t in self.tests]
        for part in sorted({t.part for t in self.tests if not t.needs_cuda}):
            self.tests.append(Test(f"part {part}: the code follows the assignment's rules (0 points; "
                                   "a break flags the notebook for review)", part, 0, rules))
        self._finished = True
        return self

    def scaled(self, auto: dict[int, int]) -> list[Test]:
        """The tests with course.toml's points: within a part, each test's @test points are its weight, and
        the part's tests share out the part's `auto` points in proportion (course.split_points)."""
        weights = {part: [t.points for t in self.tests if t.part == part] for part in {t.part for t in self.tests}}
        extra = sorted(p for p, w in weights.items() if sum(w) and not auto.get(p))
        empty = sorted(p for p, v in auto.items() if v and not sum(weights.get(p, ())))
        if extra or empty:
            raise CourseError(f"hidden suite of {self.assignment}: "
                              + "; ".join([f"part {p} has weighted tests but no `auto` points" for p in extra]
                                          + [f"part {p} has `auto` points but no weighted test" for p in empty]))
        shares = {part: iter(split_points(w, auto.get(part, 0))) for part, w in weights.items()}
        return [dataclasses.replace(t, points=next(shares[t.part])) for t in self.tests]


# What a reply carries besides the value returned, each the child's own account, which code sharing its
# process could forge: an accessor of Observation or Remote that hands one out marks the trial as resting on
# it (RETURNED: the accessors that hand out what the call returned, checked here against values computed here)
REPORTS = {"error": "the error it raised", "args_after": "its inputs after the call",
           "shares_input": "whether its result shares an input's memory", "grads": "the gradients",
           "trace": "a tracer's report (kernel launches)", "structure": "the structure report (modules, parameters)",
           "reply": "the whole reply (timings, the values checked while timing)",
           "run": "what the grader's own code found in the child (Part 5's training and its checks)"}
RETURNED = {"result", "handle", "label"}


class Observation:
    """A reply from the sandbox: the raw result of one call. Reading anything but `result` marks the trial
    (rests: the REPORTS keys read so far), and `result` too where the call was the grader's own code (t.run):
    what it returns is its account of the submission's objects, made where they live."""

    def __init__(self, reply: dict, rests: set[str], graders_code: bool = False):
        self._reply, self._rests, self._graders_code = reply, rests, graders_code

    def _report(self, key: str):
        self._rests.add(key)
        return self._reply if key == "reply" else self._reply.get(key)

    @property
    def reply(self) -> dict:
        return self._report("reply")

    @property
    def error(self) -> dict | None:
        return self._report("error")

    @property
    def result(self) -> dict:
        if self._graders_code:
            self._rests.add("run")
        return self._reply.get("result", {"kind": "none"})

    @property
    def args_after(self) -> list:
        return self._report("args_after") or []

    @property
    def grads(self):
        return self._report("grads")

    @property
    def shares_input(self) -> bool:
        return self._report("shares_input") is True

    @property
    def trace(self) -> dict:
        """What the call did besides returning (t.call(..., trace=NAME)): the tracer's report."""
        trace = self._report("trace")
        return trace if isinstance(trace, dict) else {}


@dataclass(frozen=True)
class Remote:
    """An object made in the sandbox by t.new: its handle and its structure report (reading it marks the
    trial, as Observation's reports do)."""
    handle: int
    label: str
    _structure: dict
    _rests: set = dataclasses.field(default_factory=set, compare=False, repr=False)

    @property
    def structure(self) -> dict:
        self._rests.add("structure")
        return self._structure

    def module(self, path: str) -> dict | None:
        """The structure entry of the submodule at `path` ("ffn.0"), or None."""
        return next((m for m in self.structure.get("modules", []) if m.get("path") == path), None)


def part_label(obj: Remote, path: str) -> str:
    """How Python reaches the submodule at `path` of obj: "residual_mlp(...)[0].ffn"."""
    return obj.label + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path.split(".") if p)


class Trial:
    """One run of one test: seeded inputs, the reference, and calls into the sandbox."""

    def __init__(self, test: Test, seed: int, sandbox, timeout_s: float, reference, specs: dict,
                 explain: Callable[[str], str], *, cuda: bool = False, timing=None,
                 contract: Contract | None = None, violations=()):
        self.rng = random.Random(f"{seed}/{test.id}")
        self._torch_seeds = random.Random(f"{seed}/{test.id}/torch")   # the child's RNG, call by call
        self.gen = torch.Generator().manual_seed(self.rng.getrandbits(63))
        self.ref, self.specs, self._explain = reference, specs, explain
        self._sandbox, self._timeout_s, self._deadline = sandbox, timeout_s, None
        self.cuda = cuda                       # the submission runs on the GPU (Suite(cuda=True) and one is here)
        self.device = "cuda" if cuda else "cpu"   # where the child puts the tensors it is sent
        self.timing = timing                   # course.toml's [timing] table of the assignment, or None
        self.contract = contract or Contract()  # the assignment's names, parameters and attributes
        self.notes: list[str] = []             # shown after "passed" (t.note)
        self.misconception = test.misconception   # what t.fail and t.check name unless told otherwise
        self.violations = list(violations)     # the static policy's findings in this test's part
        self.current = "the notebook's code"   # what was running, for timeout messages
        self.rests: set[str] = set()           # the REPORTS this test has read: it rests on the child's word

    # ---------------------------------------------------------------- inputs

    def size(self, lo: int = 3, hi: int = 11) -> int:
        """A random odd size in [lo, hi]."""
        return self.rng.randrange(lo | 1, hi + 1, 2)

    def uniform(self, lo: float, hi: float) -> float:
        return self.rng.uniform(lo, hi)

    def choice(self, options):
        return self.rng.choice(list(options))

    def randn(self, *shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> torch.Tensor:
        return (scale * torch.randn(*shape, generator=self.gen, dtype=torch.float64)).to(dtype)

    def build(self, spec: dict):
        """The grader's own copy of an object described by a spec, for the reference."""
        return probe.build(self.specs, spec["spec"])

    # ---------------------------------------------------------------- the sandbox

    def call(self, fn: str, *args, grad=None, grad_args=(), expect_error=False, trace: str | None = None,
             readback=(), **kwargs) -> Observation:
        """fn(*args, **kwargs) in the submission; with grad, also backward(grad) into args[grad_args];
        with trace, the report of that child-side tracer (probe.TRACERS) in obs.trace. The tensors at
        `readback` are passed in shared memory the grader reads back itself (core/arena.py): their
        obs.args_after is what the call left there, not what the child reports, and the test then vouches
        that fn leaves its inputs alone at every call the part makes (grading/grader.py). Every other
        top-level tensor argument goes there too (watched), so that no call of fn runs otherwise than
        the one read back."""
        request = {"op": "call", "fn": fn, "args": _wire(args), "kwargs": _wire(kwargs),
                   "grad": grad, "grad_args": list(grad_args), "readback": list(readback),
                   "watched": [i for i, a in enumerate(args) if i not in readback and arena.readable(a)]}
        if trace:
            request["trace"] = trace
        return self._ask(request, f"{fn}(...)", expect_error)

    def run(self, spec: list, *args, **kwargs) -> Observation:
        """The callable a spec builds in the child (the assignment's SPECS: the grader's own code, such as Part
        5's trainer) called on args, the submission's objects among them: what the grader's code does with them
        in the submission's process, where they live."""
        request = {"op": "call", "spec_fn": list(spec), "args": _wire(args), "kwargs": _wire(kwargs)}
        return Observation(self._ask(request, f"the grader's {spec[0]}(...)", False)._reply, self.rests, True)

    def time(self, fn: str, *args, against: dict, reps: int, inner: int, budget_ms: float, fresh: list[int],
             rows: list[int], **kwargs) -> Observation:
        """Time fn(*args, **kwargs) and each callable spec in `against` on the same arguments, interleaved,
        on the device's clock (CUDA events on the GPU, the CPU's clock without one), the arguments at
        `fresh` redrawn before every round of calls (probe._time); obs.reply: {"ms": {"fn": [...], name:
        [...]}, "device": NAME, "checked": [{"args": [...], "result": ...}, ...]}, ms per call, and for
        each timed call of fn the `rows` of its fresh arguments and of its result."""
        return self._ask({"op": "time", "fn": fn, "args": _wire(args), "kwargs": _wire(kwargs),
                          "against": against, "reps": reps, "inner": inner, "budget_ms": budget_ms,
                          "fresh": fresh, "rows": rows, "seed": self.rng.getrandbits(63)},
                         f"{fn}(...)", False)

    def new(self, cls: str | dict, *args, double: bool = False, expect_error: bool = False, **kwargs):
        """cls(*args, **kwargs) in the submission (as float64 in eval mode with double); a Remote. cls a spec
        ({"spec": [KIND, ...]}): the grader's own object that spec builds in the child, for the submission's
        functions to work on."""
        if isinstance(cls, dict):
            kind, *params = cls["spec"]
            label = f"the grader's {kind}({', '.join(map(_short, params))})"
            request = {"op": "new", "spec": list(cls["spec"]), "double": double}
        else:
            label = f"{cls}({', '.join([*map(_short, args), *(f'{k}={_short(v)}' for k, v in kwargs.items())])})"
            request = {"op": "new", "cls": cls, "args": _wire(args), "kwargs": _wire(kwargs), "double": double}
        obs = self._ask(request, label, expect_error)
        if expect_error:
            return obs
        return Remote(obs._reply["handle"], label, obs._reply["structure"], self.rests)

    def load(self, obj: Remote, weights: dict[str, torch.Tensor]) -> None:
        """Copy tensors into obj's parameters, by dotted path ("ffn.0.weight"; a number is a position in an
        nn.Sequential or nn.ModuleList, whatever the child is named)."""
        # the child's word that it could not is no more than a failure
        error = self._ask({"op": "load", "handle": obj.handle, "weights": weights}, obj.label, True)._reply.get("error")
        if error:
            entry = self.contract.get(obj.label.split("(")[0])
            names = f" ({', '.join(entry.attributes)})" if entry and entry.attributes else ""
            self.fail(f"{obj.label}: the grader could not set its weights: {excerpt(error['message'])}. It "
                      "reaches each layer as the docstring states: by position in an nn.Sequential or nn.ModuleList "
                      f"(model[l], ffn[2]) and by the attribute names given{names}.", misconception=None)

    def invoke(self, obj: Remote, *args, at: str = "", expect_error=False, **kwargs) -> Observation:
        """obj(*args, **kwargs) in the submission; with `at` ("0.ffn", "attn"), the submodule there, reached
        as t.load reaches a layer: the grader drives the parts by the paths the assignment states."""
        request = {"op": "invoke", "handle": obj.handle, "at": at, "args": _wire(args), "kwargs": _wire(kwargs)}
        return self._ask(request, f"{part_label(obj, at)}(...)", expect_error)

    def drive(self, obj: Remote, path: str, *args, **kwargs) -> torch.Tensor:
        """The tensor that obj's submodule at `path` returns on args (the first item of a returned tuple,
        as nn.MultiheadAttention's (output, weights)): structure by behaviour, on the grader's inputs."""
        label = part_label(obj, path)
        obs = self.invoke(obj, *args, at=path, expect_error=True, **kwargs)
        if obs._reply.get("error"):      # the child's word that it raised only fails the test
            self.fail(self.raised(f"{label}(...)", obs._reply["error"]) + f"; the grader calls {label} itself: it must be "
                      "the layer the docstring names, at that place")
        result = obs.result
        if result.get("kind") in ("tuple", "list") and result.get("items"):
            result = result["items"][0]
        return self.tensor(result, f"{label}(...)")

    def _ask(self, request: dict, label: str, expect_error: bool) -> Observation:
        self.current = label
        if self.device != "cpu":
            request["device"] = self.device
        # what the submission draws from torch's global RNG (a model's initial weights) follows the
        # grading seed, so a grade reproduces to the last digit of its notes
        request["torch_seed"] = self._torch_seeds.getrandbits(63)
        self._sandbox.start()
        if self._deadline is None:       # the clock runs from the first call, after the cells loaded
            self._deadline = Deadline.after(self._timeout_s)
        reply = self._sandbox.request(request, self._deadline)
        missing, error = reply.get("missing"), reply.get("error")
        if missing:
            raise Failed(f"{missing} is not defined: {self._explain(missing)}", kind="error")
        if error and (not expect_error or "NotImplementedError" in error.get("is", [])):
            stub = "NotImplementedError" in error.get("is", [])
            raise Failed(self.raised(label, error) + self._breach(label), kind="not_attempted" if stub else "error")
        if "trace" in request and not error:      # for the tests that judge every traced call (Test.judges)
            report = reply.get("trace")
            if isinstance(report, dict):   # the grader's own reading of the cells, whatever the child wrote there
                report["kernel_defs"] = sorted(kernel_defs(tuple(self._sandbox.cells)))
            self._sandbox.traced.append((_traced_label(request), report if isinstance(report, dict) else {}))
        return Observation(reply, self.rests)

    def _breach(self, label: str) -> str:
        """How the called name breaks the assignment's contract, as a line to add; "" if it does not."""
        problem = self.contract.problems(self._sandbox.declared).get(label.split("(")[0])
        return f"\n(Note: {problem}.)" if problem else ""

    def raised(self, label: str, error: dict) -> str:
        """A readable line for an exception the submission raised."""
        if "NotImplementedError" in error.get("is", []):
            return f"{label} is not implemented yet: it still raises NotImplementedError."
        text = f"{label} raised {excerpt(error['type'], STUDENT_NAME)}: {excerpt(error['message'])}"
        name = re.search(r"name '(\w+)' is not defined", error["message"])
        if name:
            text += f" ({self._explain(name.group(1))})"
        return text

    # ---------------------------------------------------------------- observations

    def fail(self, message: str, misconception: str | None = TEST_DEFAULT, kind: str = "failed"):
        """Fail the test; misconception: the id it shows (default: the test's own; None: none);
        kind "error" where the submission raised something other than what the test asked for."""
        if kind != "failed":
            raise Failed(message, None, kind)
        raise Failed(message, self.misconception if misconception is TEST_DEFAULT else misconception)

    def note(self, text: str) -> None:
        """A line for the student when the test passes (measurements, say), shown under "passed"."""
        self.notes.append(text)

    def tensor(self, value: dict, what: str) -> torch.Tensor:
        """The tensor a call returned, or a failure saying what came back instead."""
        if value.get("kind") == "tensor" and type(value.get("value")) is torch.Tensor:
            return value["value"]
        self.fail(f"{what} returned {describe(value)}, expected a torch.Tensor", misconception=None)

    def number(self, value: dict, what: str) -> float:
        """A returned real number (a Python or NumPy number, or a one-element tensor)."""
        if value.get("kind") == "number" and type(value.get("value")) is float:
            return value["value"]
        if value.get("kind") == "tensor" and type(value.get("value")) is torch.Tensor and value["value"].numel() == 1:
            return float(value["value"].double().item())
        self.fail(f"{what} returned {describe(value)}, expected a float", misconception=None)

    def numbers(self, value: dict, what: str, length: int, kinds=("list", "tuple")) -> list[float]:
        """A returned list (or tuple) of `length` real numbers."""
        if value.get("kind") not in kinds:
            self.fail(f"{what} returned {describe(value)}, expected a {' or '.join(kinds)} of {length} floats",
                      misconception=None)
        if value.get("length") != length:
            self.fail(f"{what} returned {value.get('length')} values, expected {length}", misconception=None)
        return [self.number(item, f"{what}, entry {i},") for i, item in enumerate(value["items"])]

    def check(self, got, want, what: str, why: str, *, rtol: float = 1e-5, atol: float = 1e-8,
              exact: bool = False, alternatives=(), misconception=TEST_DEFAULT) -> None:
        """got must match want (tensors, numbers or lists of numbers).

        On a mismatch the message leads with the misconception of the first
        alternative (text, value) or (text, value, id) that got matches, else with
        `why`; the failure carries that alternative's id, else `misconception`
        (default: the test's own). alternatives may be a function returning that list:
        costly wrong answers are then computed only for a submission that needs them.
        """
        misconception = self.misconception if misconception is TEST_DEFAULT else misconception
        given = got, want                # shown as given: a list reads as numbers, a tensor by show()
        got, want = _as_tensor(got), _as_tensor(want)
        if got.is_complex() or got.dtype == torch.bool:
            self.fail(f"{what}: returned a {got.dtype} tensor; {why}", misconception)
        if got.shape != want.shape:
            self.fail(f"{what}: returned shape {tuple(got.shape)}, expected {tuple(want.shape)}; {why}",
                      misconception)
        if _matches(got, want, rtol, atol, exact):
            return
        if callable(alternatives):
            alternatives = alternatives()
        headline, misconception = next(
            ((text, rest[0] if rest else misconception) for text, alt, *rest in alternatives
             if _as_tensor(alt).shape == got.shape and _matches(got, _as_tensor(alt), rtol, atol, exact)),
            (why, misconception))
        shown = f"\n  yours:    {_display(given[0])}\n  expected: {_display(given[1])}\n"
        diff = (got.double() - want.double()).abs()
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
        where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape)) if diff.dim() else ()
        # the values there, which the first few shown above may not reach
        there = f" at index {where}: yours {got[where].item():.10g}, expected {want[where].item():.10g}" \
            if where else ""
        # the bound it broke: two values that print alike at six digits may differ by more
        allowed = "" if exact else f" (allowed: {atol:g} + {rtol:g} x |expected|)"
        self.fail(f"{what}: {headline}{shown}  largest difference {diff.max().item():.3g}{there}{allowed}",
                  misconception)


def _matches(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float, exact: bool) -> bool:
    if exact:
        return got.dtype == want.dtype and torch.equal(got, want)
    return bool(torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol))


def _as_tensor(value) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    return torch.tensor(value, dtype=torch.float64)


def _wire(value):
    """Request arguments: Remote objects become handles; tensors, specs and plain data pass as they are."""
    if isinstance(value, Remote):
        return {"handle": value.handle}
    if isinstance(value, (list, tuple)):
        return type(value)(_wire(v) for v in value)
    if isinstance(value, dict) and "spec" not in value:
        return {k: _wire(v) for k, v in value.items()}
    return value


def _traced_label(request: dict) -> str:
    """A traced call as its judge's verdict names it: fused_add_layernorm(float16 (3, 100), ..., eps=0.01)."""
    def arg(value) -> str:
        if isinstance(value, torch.Tensor):
            return f"{str(value.dtype).removeprefix('torch.')} {tuple(value.shape)}"
        return repr(value)[:40]
    args = [arg(a) for a in request.get("args", [])] + [f"{k}={arg(v)}" for k, v in request.get("kwargs", {}).items()]
    return f"{request.get('fn', '?')}({', '.join(args)})"


def _short(value) -> str:
    """An argument in a label: tensor(3, 5), <branch linear>, 'pre', 7."""
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    if isinstance(value, dict) and "spec" in value:
        return "<" + " ".join(p for p in value["spec"] if isinstance(p, str)) + ">"
    return repr(value)


def _display(value) -> str:
    """A value as the student wrote it: tensors by show(), numbers and lists of numbers as such."""
    if isinstance(value, torch.Tensor):
        return show(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(f"{v:.10g}" for v in value) + "]"
    return f"{value:.10g}"


def show(t: torch.Tensor) -> str:
    """A tensor in one line: shape, dtype and its first few values."""
    if t.dim() == 0:
        return f"{t.item():.10g}"
    flat = t.reshape(-1)
    values = ", ".join(f"{v:.6g}" for v in flat[:SHOWN_VALUES].tolist())
    more = ", ..." if flat.numel() > SHOWN_VALUES else ""
    return f"tensor of shape {tuple(t.shape)}, {str(t.dtype).removeprefix('torch.')}: [{values}{more}]"


def describe(value: dict) -> str:
    """What came back, in words, for something that is not what the test wanted."""
    kind = value.get("kind")
    if kind == "tensor" and type(value.get("value")) is torch.Tensor:
        return show(value["value"])
    if kind == "number":
        return f"the {excerpt(value.get('type', 'number'), STUDENT_NAME)} {value.get('value')!r}"
    if kind in ("list", "tuple"):
        return f"a {kind} of {value.get('length')} items"
    if kind == "none":
        return "None"
    if kind == "bool":
        return f"the bool {value.get('value')}"
    if kind == "str":
        return f"the string {excerpt(value.get('value'))!r}"
    return f"an object of type {excerpt(value.get('type', '?'))}"


def excerpt(text, limit: int = STUDENT_TEXT) -> str:
    """A one-line excerpt of text the submission made (an exception's message, a returned string, a type
    name), cut here in the grader: a submission can put any hidden input it received into such text, and
    feedback carries no more of it than a test needs to name the mistake."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 10] + " ... (cut)"
