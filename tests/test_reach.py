"""Nothing of the grader is reachable from a sandbox child's first student cell without an audited event.

tests/reachable.py runs as that cell, in a real child (the box, the monitor and the assignment's specs module
set up as for a grade), and walks everything a cell can name without gc or frames (docs/security.md)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch

from autograder.course import ROOT
from nbtest.sealed import seal

WALKER = ROOT / "tests" / "reachable.py"
# A grading process up to a child's first cell, in a process of its own: the modules of the three commands whose
# fork server is their own process forked (`grade` of one notebook, `gradescope-run`, and `autograde`'s workers,
# with what a worker holds when it forks: nbgrader and its course directory, made from the course's config, and
# the worker's signal handlers, one of them a function of the grader's), then a Grader, whose fork server is this
# process forked ("fork") or a fresh interpreter ("fresh": batches). argv: assignment, fork or fresh, the walker.
GRADING = """
import json, signal, sys
from nbgrader.coursedir import CourseDirectory
from autograder.cli import autograde, grade, gradescope
from autograder.core.sandbox import Deadline, Limits, Sandbox
from autograder.course import load
from autograder.grading.grader import Grader
from autograder.nbgrading import classrun, workers
from autograder.nbgrading.run import nbgrader_config

assignment, fork, walker = sys.argv[1], sys.argv[2] == "fork", open(sys.argv[3]).read()
coursedir = CourseDirectory(config=nbgrader_config())
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
with Grader(assignment, load(), fork=fork) as grader:
    out = {"forked": grader.zygote._process is None}
    with Sandbox(grader.zygote, [("walk", walker)], grader.specs_module, Limits(600, 8192)) as box:
        box.start()
        out["problems"] = box.problems
        for fn in ("found", "live", "through_subclasses"):
            out[fn] = [item["value"] for item in box.request(
                {"op": "call", "fn": fn, "args": [], "kwargs": {}}, Deadline.after(60))["result"]["items"]]
print(json.dumps(out))
"""


@pytest.mark.parametrize("assignment", ["residual-connections", "fused-add-norm"])
@pytest.mark.parametrize("zygote", ["fresh", "fork"])
def test_nothing_of_the_grader_is_reachable_from_the_first_student_cell(assignment, zygote):
    """Nothing of the grader by attributes and items, whether the fork server is a fresh interpreter or the
    grading process forked (with every module it loaded); through __subclasses__() its classes and modules, but
    none of the private module dicts the serve loop, the probe and the monitor read (nbtest.sealed)."""
    proc = subprocess.run([sys.executable, "-c", GRADING, assignment, zygote, str(WALKER)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["forked"] == (zygote == "fork") and out["problems"] == {}, out
    assert out["found"] == [], "\n".join(out["found"])
    assert out["live"] == [], "\n".join(out["live"])
    assert out["through_subclasses"], "the walk through __subclasses__() reaches the grader's classes, so the " \
                                      "check above means something"


def test_the_walk_finds_the_probe_behind_each_kind_of_link():
    """The walker itself: a probe function behind a closure, a partial, a property, a weak reference, a slot,
    a bound method and a default argument is found, with its path; plain library objects are not."""
    import functools
    import weakref

    from autograder.core import probe
    spec = importlib.util.spec_from_file_location("reachable", WALKER)
    walker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(walker)

    def closure():
        return probe.serve_request

    class Slotted:
        __slots__ = ("held",)

    class Holder:
        def method(self):
            pass

    slotted, holder = Slotted(), Holder()
    slotted.held, holder.x = probe.encode, 1
    holder.__class__.prop = property(probe.structure)
    links = {"closure": closure, "partial": functools.partial(probe.describe_error),
             "weak": weakref.ref(probe.Missing), "slot": slotted, "bound": holder.method,
             "default": lambda f=probe.declared: f, "plain": [torch.ones(1), (1, "a"), {"b": [2.0]}]}
    links["sealed"] = seal(probe.serve_request, ("autograder",))
    found = walker.walk([(f"links[{k!r}]", v) for k, v in links.items()])
    for route in ("links['closure'].__closure__[0]", "links['closure'].__globals__", "links['partial'].func",
                  "links['weak']()", "links['slot'].held", "links['default'].__defaults__[0]"):
        assert any(line.startswith(route) for line in found), (route, found)
    assert not any(line.startswith("links['plain']") for line in found), found
    assert [line.split(":")[0] for line in walker.walk([("sealed", links["sealed"])], found_if=walker._sealed)] == [
        "sealed"]
    assert not walker.walk([("probe", probe.serve_request)], found_if=walker._sealed)
    assert any(line.startswith("object.__subclasses__()") and "Missing" in line
               for line in walker.walk([("object", object)], subclasses=True))


def test_a_sealed_function_reads_its_own_copy_of_its_modules(monkeypatch):
    """A write to the module a sealed function came from (reachable from a cell through a class's methods) and to
    the builtins changes nothing in the copy; the function itself still works as the module's does."""
    from autograder.core import probe
    encode = seal(probe.encode, ("autograder",))
    monkeypatch.setattr(probe, "_text", lambda s: "forged")
    monkeypatch.setattr(probe, "MAX_ITEMS", 0)
    assert probe.encode("abc")["value"] == "forged"
    assert encode("abc") == {"kind": "str", "value": "abc"}
    assert encode([1, 2]) == {"kind": "list", "length": 2, "items": [encode(1), encode(2)]}
