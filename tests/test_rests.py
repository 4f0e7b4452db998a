"""What a hidden test rests on is derived from what it reads (kit/trial.py: REPORTS), and a test is known by
its function's name: every report a reply can carry marks the trial that reads it, and rewording a test's
sentence changes neither its id nor its inputs."""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
import re
import types

import pytest
import torch

from autograder import suites
from autograder.course import ROOT
from autograder.core import probe
from autograder.kit import trial as kit
from autograder.kit.trial import REPORTS, RETURNED, Failed, Observation, Remote, Suite, Trial

SUBMISSION = """
import torch
from torch import nn
def add(x, y):
    return x + y
def refuse(x):
    raise ValueError("no")
class Lin(nn.Linear):
    pass
"""
# one request of each op the probe serves, with every option that adds a field to the reply
REQUESTS = [{"op": "call", "fn": "add", "args": [torch.ones(2, requires_grad=True), torch.ones(2)],
             "grad": torch.ones(2), "grad_args": [0], "trace": "none registered"},
            {"op": "call", "fn": "refuse", "args": [torch.ones(2)]},
            {"op": "new", "cls": "Lin", "args": [2, 2]},
            {"op": "load", "handle": 0, "weights": {"weight": torch.zeros(2, 2)}},
            {"op": "invoke", "handle": 0, "args": [torch.ones(2)]},
            {"op": "time", "fn": "add", "args": [torch.ones(2), torch.ones(2)], "kwargs": {}, "against": {},
             "reps": 1, "inner": 1, "budget_ms": 1000, "fresh": [], "rows": [0]}]
# reply fields that are no report: the value returned (checked against values computed here), the handle
# of an object made, and the name the submission does not define (the test fails on it)
NOT_REPORTS = {"result", "handle", "missing"}


class FakeBox:
    """A sandbox whose child answers every request with `reply`."""

    def __init__(self, reply: dict):
        self.reply, self.declared, self.traced = reply, {}, []

    def start(self):
        pass

    def request(self, request, deadline):
        return dict(self.reply)


def trial(reply: dict, name: str = "a sentence", check=None) -> Trial:
    test = kit.Test(name, 1, 1, check or (lambda t: None))
    return Trial(test, 7, FakeBox(reply), 5.0, None, {}, lambda name: "")


def test_every_field_the_probe_replies_with_is_a_report_or_the_returned_value():
    """A reply field the probe adds (a new op, a new option) must be named in REPORTS, and handed out by an
    accessor that marks the trial, or be the returned value: nothing it reports reaches a test unmarked."""
    assert {r["op"] for r in REQUESTS} == set(probe._OPS), "a new op: add a request for it here"
    module = types.ModuleType("submission")
    exec(SUBMISSION, module.__dict__)
    objects, fields = {}, set()
    for request in REQUESTS:
        fields |= set(probe.serve_request(module, {}, objects, request))
    # the time op's figures reach a test only through obs.reply, itself a report
    assert fields - NOT_REPORTS <= set(REPORTS) | {"ms", "device", "checked"}, \
        f"reply fields no accessor marks: {fields - NOT_REPORTS - set(REPORTS)}"


def _accessors(cls) -> set[str]:
    """The public properties, methods and dataclass fields of cls."""
    names = {name for name, value in inspect.getmembers(cls)
             if not name.startswith("_") and (isinstance(value, property) or inspect.isfunction(value))}
    return names | {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")} \
        if dataclasses.is_dataclass(cls) else names


@pytest.mark.parametrize("cls", [Observation, Remote])
def test_every_accessor_but_the_returned_value_marks_the_trial(cls):
    """Enumerated from the classes: an accessor added to Observation or Remote either hands out what the call
    returned (RETURNED) or marks the trial as resting on the child's report."""
    names = sorted(set(_accessors(cls)) - RETURNED)
    assert names, cls
    for name in names:
        rests: set[str] = set()
        reply = {key: None for key in REPORTS}
        obj = Observation(reply, rests) if cls is Observation else Remote(0, "m", {"modules": []}, rests)
        value = getattr(obj, name)
        if callable(value):
            value("0")
        assert rests, f"{cls.__name__}.{name} hands out the child's report without marking the trial"
        assert rests <= set(REPORTS)


def test_each_request_kind_marks_what_its_test_reads():
    """The requests a test makes, read as tests read them: each report marks the trial, the returned value
    alone does not."""
    error = {"type": "ValueError", "message": "shapes", "is": ["ValueError"]}
    cases = {"error": lambda t: t.call("f", expect_error=True).error,
             "grads": lambda t: t.call("f", grad=torch.ones(1)).grads,
             "args_after": lambda t: t.call("f", readback=[0]).args_after,
             "shares_input": lambda t: t.call("f").shares_input,
             "trace": lambda t: t.call("f", trace="launches").trace,
             "structure": lambda t: t.new("C").structure,
             "reply": lambda t: t.time("f", against={}, reps=1, inner=1, budget_ms=1, fresh=[], rows=[]).reply,
             "run": lambda t: t.run(["trainer"]).result}
    assert set(cases) == set(REPORTS)
    for key, read in cases.items():
        t = trial({"error": error} if key == "error" else {"handle": 0, "structure": {}, "result": {"kind": "none"}})
        read(t)
        assert t.rests == {key}, key
    t = trial({"result": {"kind": "none"}})
    assert t.call("f").result == {"kind": "none"} and not t.rests


@pytest.mark.parametrize("test_id", ["weight_shape", "float64_refused", "shape_mismatch"])
def test_the_fused_refusals_rest_on_the_childs_valueerror(test_id):
    """They score on the child's report of its ValueError: read (whatever the message says), so held like
    every such test."""
    test = next(t for t in suites.load("fused-add-norm").tests if t.id == test_id)
    t = trial({"error": {"type": "ValueError", "message": "weight must have shape (n,); float64 refused",
                         "is": ["ValueError"]}}, test.name, test.check)
    with contextlib.suppress(Failed):
        test.check(t)
    assert "error" in t.rests


def test_rewording_a_sentence_keeps_the_id_and_the_inputs():
    """A test's id is its function's name and its inputs are drawn from the seed and the id: a new sentence
    renames nothing in the stores and draws the same inputs."""
    def residual_add_values(t):
        return t.size(), t.uniform(0, 1), t.randn(3, 4)

    first, reworded = (kit.Test(name, 1, 2, residual_add_values) for name in ("adds x and fx", "returns x + fx"))
    assert first.id == reworded.id == "residual_add_values"
    a, b = (Trial(test, 11, FakeBox({}), 5.0, None, {}, str) for test in (first, reworded))
    (size_a, u_a, x_a), (size_b, u_b, x_b) = residual_add_values(a), residual_add_values(b)
    assert (size_a, u_a) == (size_b, u_b) and torch.equal(x_a, x_b)
    other = kit.Test("adds x and fx", 1, 2, lambda t: None)
    assert not torch.equal(Trial(other, 11, FakeBox({}), 5.0, None, {}, str).randn(3, 4), x_a)


def test_a_suite_refuses_two_tests_with_one_function_name():
    suite = Suite("demo")

    def check(t):
        pass

    suite.test(1, 1, "one sentence")(check)
    suite.test(1, 1, "another sentence")(check)
    with pytest.raises(kit.CourseError, match="function name check"):
        suite.finish()


def test_every_suite_test_has_an_id_of_its_own():
    for assignment in ("residual-connections", "fused-add-norm"):
        ids = [t.id for t in suites.load(assignment).tests]
        assert len(ids) == len(set(ids)) and all(i.isidentifier() for i in ids), ids


def security_table(assignment: str) -> dict[str, str]:
    """Test id -> the 'rests on' column of docs/security.md's per-test table of the assignment."""
    text = (ROOT / "docs" / "security.md").read_text()
    table = text[text.index(f"**{assignment}**"):].split("\n\n")[1]
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    return {test_id: row[1] for row in rows for test_id in re.findall(r"`(\w+)`", row[0])}


@pytest.mark.parametrize("assignment", ["residual-connections", "fused-add-norm"])
def test_the_security_table_says_what_each_test_rests_on(sample_results, assignment):
    """Each hidden test has a row, and the row says "held by (b)" exactly where the reference's pass read a
    child's report (the store's `rests`), or the suite holds it by a rule (held_by): the table cannot drift
    from what the tests ask."""
    table = security_table(assignment)
    full_marks = {t["id"]: t for t in sample_results(assignment)[1]["full-marks.ipynb"]["tests"]}
    for test in suites.load(assignment).tests:
        if test.reads_findings:
            continue
        assert test.id in table, f"docs/security.md: no row for {test.id}"
        entry = full_marks[test.id]
        if entry["kind"] == "not_run":      # a CUDA test graded without CUDA: what it reads is not seen here
            continue
        rests = bool(entry["rests"]) or bool(test.held_by)
        assert ("held by (b)" in table[test.id]) == rests, \
            f"docs/security.md: {test.id} reads {entry['rests'] or 'no report'}, but its row says {table[test.id]!r}"


def test_a_values_mismatch_shows_both_values_where_they_differ_most():
    """The first six values of each side may all agree (a ratio of norms wrong only at its last entry): the
    failure names the index of the largest difference and both values there (red team 37's fairness round)."""
    want = torch.zeros(10, dtype=torch.float64)
    want[7] = 0.5
    with pytest.raises(Failed) as e:
        trial({}).check(torch.zeros(10, dtype=torch.float64), want, "gradient_norms(...)", "the ratios differ")
    assert "largest difference 0.5 at index (7,): yours 0, expected 0.5 (allowed: 1e-08 + 1e-05 x |expected|)" in \
        str(e.value)
