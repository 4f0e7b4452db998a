"""The static policy (nbtest/policy.py) against the reference solutions, honest variants, the sample
class and forgeries, with the rules course.toml gives each assignment."""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder import course
from nbtest import cellcode, cellsource, policy
from autograder.core.extract import Template
from nbtest.policy import FLAG, WITHHOLD
from autograder.course import ROOT, SOLUTIONS

sys.path.insert(0, str(ROOT / "submissions"))
import fused_add_norm as fused_class  # noqa: E402  (the sample classes: honest variants, forgeries' twins)
import residual_connections as residual_class  # noqa: E402
from fused_add_norm_idioms import IDIOMS as FUSED_IDIOMS  # noqa: E402  (honest idioms, one solution cell each)
from residual_connections_idioms import IDIOMS as RESIDUAL_IDIOMS  # noqa: E402
from residual_connections_variants import MODES, REACHES, STYLES  # noqa: E402  (forgery sources, styles)

RESIDUAL_NB = SOLUTIONS / "residual-connections/residual-connections.ipynb"
FUSED_NB = SOLUTIONS / "fused-add-norm/fused-add-norm.ipynb"
RESIDUAL = policy.for_assignment(course.load().assignment("residual-connections").rules)
FUSED = policy.for_assignment(course.load().assignment("fused-add-norm").rules)


def solution(path: Path) -> list[tuple[str, str, bool]]:
    """The module cells of a source notebook, as the grader runs them."""
    return Template(path).cells


def with_cells(path: Path, **sources: str) -> list[tuple[str, str, bool]]:
    """The reference notebook's cells with some solution cells replaced (sources dedented)."""
    cells = solution(path)
    unknown = set(sources) - {label for label, _, student in cells if student}
    assert not unknown, f"no solution cells {unknown}"
    return [(label, textwrap.dedent(sources[label]) if label in sources else src, student)
            for label, src, student in cells]


def rules(violations) -> set[tuple[str, str]]:
    return {(v.rule, v.severity) for v in violations}


# ============================================================ each withhold rule explained

def withhold_rules() -> set[str]:
    """Every rule name nbtest writes with severity withhold: a string just before WITHHOLD, in a call's
    arguments (Violation(..., "too-deep", WITHHOLD, ...)) or a tuple's items (("process-introspection", WITHHOLD))."""
    found = set()
    for path in (ROOT / "nbtest").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = node.args if isinstance(node, ast.Call) else node.elts if isinstance(node, ast.Tuple) else []
            for rule, severity in zip(items, items[1:]):
                if isinstance(rule, ast.Constant) and isinstance(rule.value, str) and \
                        (getattr(severity, "id", None) or getattr(severity, "attr", None)) == "WITHHOLD":
                    found.add(rule.value)
    return found


def test_each_withhold_rule_says_what_it_still_guards():
    """A withhold rule stays only for what it alone defends, now that the grader is out of a cell's reach:
    policy.GUARDS says what, and docs/security.md's table says the same (a new rule without it fails)."""
    rules = withhold_rules()
    assert {"process-introspection", "too-deep", "monitor"} <= rules
    assert set(policy.GUARDS) == rules
    docs = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    assert [r for r, why in policy.GUARDS.items() if f"| `{r}` | {why} |" not in docs] == []


# ============================================================ reference solutions and sample class

@pytest.mark.parametrize("path, pol", [(RESIDUAL_NB, RESIDUAL), (FUSED_NB, FUSED)])
def test_reference_solutions_trip_nothing(path, pol):
    assert policy.check_cells(solution(path), pol) == []


SAMPLES = {"residual-connections": RESIDUAL, "fused-add-norm": FUSED}
# samples that cheat or break the rules, and the rules each must trip; every other sample trips none
SAMPLE_RULES = {
    ("residual-connections", "checker-cheat"): {("monkeypatch", FLAG)},
    ("residual-connections", "always-equal"): {("override", FLAG), ("protocol", WITHHOLD)},   # its __getattr__
    ("residual-connections", "reads-solutions"): {("import", WITHHOLD), ("process-introspection", WITHHOLD),
                                                  ("dynamic-code", WITHHOLD)},
    ("residual-connections", "segfault-at-import"): {("process-introspection", WITHHOLD)},
    ("residual-connections", "crash-at-import"): {("import", WITHHOLD)},     # a module outside course.toml's list
    ("residual-connections", "exits-at-import"): {("process-introspection", WITHHOLD)},
    # the forgeries of the child's reports and their twins (TWINS of each sample class)
    ("residual-connections", "forged-mutation-report"): {("process-introspection", WITHHOLD),
                                                         ("private-attribute", WITHHOLD)},
    ("residual-connections", "forged-gradients-report"): {("process-introspection", WITHHOLD),
                                                          ("private-attribute", WITHHOLD)},
    ("residual-connections", "wraps-encoder-layer"): {("transformer-class", FLAG)},
    # the probe reached without the spellings the policy once knew (REACHES); the two that pass a string
    # to a library that runs it trip nothing here: the monitor reports them (test_grader.py); the two that
    # alias getattr find the probe out of reach (OUT_OF_REACH), and an alias is computed-attribute's (it
    # reads and sets names out of the policy's sight)
    ("residual-connections", "reach-reexport-torch"): {("process-introspection", WITHHOLD),
                                                       ("private-attribute", WITHHOLD)},
    ("residual-connections", "reach-reexport-serialization"): {("process-introspection", WITHHOLD),
                                                               ("private-attribute", WITHHOLD)},
    # the red team's routes, each tried against a probe that is out of reach: flagged by their write to the
    # probe (its private _grads) and the modules they import (a submodule of torch is read as its path); a
    # string in the code dataclasses compiles trips nothing here, and the monitor sees the frame it reads
    # (test_monitor.py, test_grader.py)
    ("residual-connections", "reach-reexport-renamed"): {("process-introspection", WITHHOLD),
                                                         ("private-attribute", WITHHOLD)},
    ("residual-connections", "reach-attrgetter"): {("import", WITHHOLD), ("private-attribute", WITHHOLD),
                                                   ("process-introspection", WITHHOLD)},
    # getattr under another name handed the module torch: a module held or passed hides its paths
    # the reply frame written through gzip, reached as torch.profiler.profiler.gzip: a module outside the
    # assignment's imports, held as its import would be
    ("residual-connections", "forged-reply-frame"): {("import", WITHHOLD)},
    ("residual-connections", "reach-alias-getattr"): {("process-introspection", WITHHOLD),
                                                      ("computed-attribute", WITHHOLD)},
    ("residual-connections", "reach-alias-partial"): {("process-introspection", WITHHOLD),
                                                      ("computed-attribute", WITHHOLD)},
    ("residual-connections", "reach-own-private-name"): {("process-introspection", WITHHOLD),
                                                         ("private-attribute", WITHHOLD)},
    # the gradients' reads answered by a torch function mode (MODES): the monitor alone sees them (a mode
    # still active after the cell, test_grader.py); here only their imports (contextlib, and torch.overrides,
    # read as its path) and a class statement's override are found
    ("residual-connections", "reach-dynamic-class-call"): {("import", WITHHOLD), ("process-introspection", WITHHOLD)},
    ("residual-connections", "reach-dynamic-class-metaclass"): {("import", WITHHOLD),
                                                                ("process-introspection", WITHHOLD)},
    ("residual-connections", "reach-torch-mode-generator"): {("import", WITHHOLD), ("process-introspection", WITHHOLD),
                                                             ("override", FLAG)},
    ("residual-connections", "reach-torch-mode-entered"): {("import", WITHHOLD), ("process-introspection", WITHHOLD),
                                                           ("override", FLAG)},
    # an exception whose class claims to be a ValueError: the probe reads its own type (test_grader.py), so
    # neither needs a rule; the class statement's override is flagged, the metaclass call on keywords is not
    ("residual-connections", "claims-error-class-statement"): {("override", FLAG)},
    # the same RuntimeError retyped in memory by a Triton kernel: only the import is a rule's; the interpreter's
    # check of every store against the launch's tensors stops it (test_fused_add_norm.py)
    ("residual-connections", "kernel-retypes-error"): {("import", WITHHOLD)},
    # and by the interpreter's own raw store, which a kernel's first launch left in the notebook's namespace
    ("residual-connections", "injected-retypes-error"): {("import", WITHHOLD)},
    # and by cffi, an installed library outside the assignment's imports
    ("residual-connections", "cffi-retypes-error"): {("import", WITHHOLD)},
    # and by numpy, at the address its object's __array_interface__ names: the class body's special name
    ("residual-connections", "interface-retypes-error"): {("protocol", WITHHOLD)},
    # and by the same object, its special name set by setattr under another name
    ("residual-connections", "alias-setattr-retypes-error"): {("computed-attribute", WITHHOLD)},
    # red team round 7: numpy's array class called over a buffer, names from computed annotations and a
    # make_dataclass namespace, type from typing.get_args, resize's refcheck in a ** display; the legacy
    # new() on a sparse gradient breaks no rule (torch's check of each sparse tensor stops it)
    ("residual-connections", "object-buffer-retypes-error"): {("unchecked-memory", WITHHOLD)},
    ("residual-connections", "annotations-retypes-error"): {("protocol", WITHHOLD)},
    ("residual-connections", "namespace-retypes-error"): {("protocol", WITHHOLD)},
    ("residual-connections", "getargs-type-retypes-error"): {("protocol", WITHHOLD)},
    ("residual-connections", "refcheck-kwargs-retypes-error"): {("unchecked-memory", WITHHOLD)},
    # red team round 8: paths judged by what they reach (numpy.ma.core.ndarray, numpy.ma.core.np.lib,
    # dataclasses.types, typing.ABCMeta, typing.operator) and keywords named at run time; the DLPack routes
    # break no rule (the child's exports cannot be resized)
    ("residual-connections", "ma-core-ndarray-retypes-error"): {("unchecked-memory", WITHHOLD)},
    ("residual-connections", "reexported-numpy-strided-retypes-error"): {("process-introspection", WITHHOLD)},
    ("residual-connections", "dataclasses-types-namespace-retypes-error"): {("computed-attribute", WITHHOLD),
                                                                            ("process-introspection", WITHHOLD)},
    ("residual-connections", "abcmeta-retypes-error"): {("protocol", WITHHOLD), ("import", WITHHOLD)},
    ("residual-connections", "class-dict-wraps-retypes-error"): {("dunder", WITHHOLD)},
    ("residual-connections", "methodcaller-refcheck-retypes-error"): {("computed-attribute", WITHHOLD),
                                                                      ("import", WITHHOLD)},
    # red team round 9: type kept by an object's __eq__ it is compared with, read by a match's class pattern
    ("residual-connections", "compare-type-retypes-error"): {("protocol", WITHHOLD)},
    ("residual-connections", "match-class-retypes-error"): {("dunder", WITHHOLD)},
    # and by torch alone, adding a sparse tensor whose index lies at the address
    ("residual-connections", "sparse-retypes-error"): {("unchecked-memory", WITHHOLD)},
    # a storage read to tell the read-back call apart: storages shrink under their views
    ("residual-connections", "tells-read-back-storage"): {("unchecked-memory", WITHHOLD)},
    ("residual-connections", "hides-encoder-layer"): {("dunder", WITHHOLD), ("transformer-class", FLAG)},
    ("residual-connections", "forged-structure-report"): {("dynamic-code", WITHHOLD), ("transformer-class", FLAG)},
    ("fused-add-norm", "forged-launch-trace"): {("process-introspection", WITHHOLD)},
    ("fused-add-norm", "numpy-wrapper"): {("import", WITHHOLD), ("forbidden-module", FLAG)},
    ("fused-add-norm", "numpy-empty-kernel"): {("import", WITHHOLD), ("forbidden-module", FLAG)},
    # a kernel asking a tl.constexpr parameter for its attributes (the object handed to it runs inside the launch)
    ("fused-add-norm", "constexpr-method"): {("kernel-python", FLAG)},
    ("fused-add-norm", "constexpr-item-method"): {("kernel-python", FLAG)},
    # an empty kernel, and h and y computed where the policy cannot name the callee, or in a heuristic
    ("fused-add-norm", "torch-under-another-name"): {("process-introspection", WITHHOLD)},
    ("fused-add-norm", "heuristic-computes"): {("kernel-decorator", FLAG)},
    ("fused-add-norm", "kernel-local-named-tl"): {("kernel-python", FLAG)},
    ("fused-add-norm", "jit-called-numpy-body"): {("kernel-decorator", FLAG)},
    ("fused-add-norm", "rewrite-cache-written-computes"): {("kernel-decorator", FLAG)},   # triton.jit called
    ("fused-add-norm", "library-method-reassigned"): {("monkeypatch", FLAG)},
    # red team 18: a kernel's fn set by setattr; tl.sum replaced by a def of the cell's
    ("fused-add-norm", "kernel-fn-set-computes"): {("kernel-attribute", FLAG)},
    ("fused-add-norm", "language-function-replaced"): {("monkeypatch", FLAG)},
    # red team 17: Triton's kernel class given a run of the cell's, reached through type() of a kernel
    ("fused-add-norm", "run-replaced-on-odd-widths"): {("protocol", WITHHOLD), ("kernel-decorator", FLAG)},
    ("fused-add-norm", "run-replaced-when-untraced"): {("protocol", WITHHOLD), ("process-introspection", WITHHOLD),
                                                       ("kernel-decorator", FLAG)},
    # a tensor class's own __torch_dispatch__ (measured; the class's override is flagged)
    ("fused-add-norm", "tensor-class-computes"): {("override", FLAG)},
    # red team 20: where the tracer's modes do not reach (measured; the imports hold the tests too)
    ("fused-add-norm", "listener-thread-computes"): {("import", WITHHOLD)},
    ("fused-add-norm", "tracer-modes-swapped"): {("process-introspection", WITHHOLD)},   # torch.fx's mode class
    ("fused-add-norm", "kernel-prints-values"): {("import", WITHHOLD)},
    # red team round 11: a kernel's attribute (the launch hook is MEASURED too)
    ("fused-add-norm", "launch-hook-computes"): {("kernel-attribute", FLAG)},
    ("residual-connections", "held-maker-retypes-error"): {("protocol", WITHHOLD)},
    # red team round 12: a heuristic set after decoration, ParameterDict
    ("fused-add-norm", "heuristic-set-later-computes"): {("kernel-attribute", FLAG)},
    ("residual-connections", "parameterdict-retypes-error"): {("computed-attribute", WITHHOLD)},
    # red team round 13: a ParameterDict out of the holders' sight
    ("residual-connections", "parameterdict-in-a-list-retypes-error"): {("computed-attribute", WITHHOLD)},
    # red team round 14: an import's name bound again by an object compared with type(int)
    ("residual-connections", "import-rebound-retypes-error"): {("protocol", WITHHOLD)},
    # a standard-library helper makes an attribute from data: any module outside the list holds
    ("residual-connections", "enum-retypes-error"): {("import", WITHHOLD)},
    ("residual-connections", "namespace-kwargs-retypes-error"): {("import", WITHHOLD)},
    # red team 32: enum's class reached under torch's path is an import of enum
    ("residual-connections", "reexported-enum-retypes-error"): {("import", WITHHOLD)},
    # red team 33: torch's helpers that follow a dotted attribute path from a string; torch.ao is a process path
    ("residual-connections", "fqn-path-retypes-error"): {("process-introspection", WITHHOLD)},
    ("residual-connections", "pruning-state-retypes-error"): {("process-introspection", WITHHOLD)},
    # red team 34: a special name a class binds by a match capture or an import's alias
    ("residual-connections", "match-capture-retypes-error"): {("protocol", WITHHOLD)},
    ("residual-connections", "import-alias-retypes-error"): {("protocol", WITHHOLD), ("monkeypatch", FLAG)},
    ("residual-connections", "match-getattr-retypes-error"): {("protocol", WITHHOLD)},
    # red team 36: numpy's resize with its check on, a comprehension's target named globals and vars
    ("residual-connections", "base-resize-retypes-error"): {("unchecked-memory", WITHHOLD)},
    ("residual-connections", "comprehension-scope-retypes-error"): {("dynamic-code", WITHHOLD)},
    # red team 38: a kernel is what its decorator is (tl.standard.jit is triton.jit), and its body is read
    ("fused-add-norm", "standard-jit-origin-computes"): {("kernel-python", FLAG), ("kernel-decorator", FLAG),
                                                         ("kernel-attribute", FLAG), ("rebound", FLAG)},
    # red team 38: a private name in a class is its mangled name
    ("residual-connections", "mangled-name-retypes-error"): {("computed-attribute", WITHHOLD)},
    # red team 39: an AttributeError's .obj is the object whose attribute was missing; a layer past the cap
    ("residual-connections", "attribute-error-obj-retypes-error"): {("process-introspection", WITHHOLD)},
    ("residual-connections", "hides-encoder-layer-past-the-cap"): {("transformer-class", FLAG)},
    # red team 39: abs bound through a function's global is the notebook's (and refused at the launch)
    ("fused-add-norm", "constexpr-function-abs-computes"): {("kernel-python", FLAG)},
    ("fused-add-norm", "posing-class-abs-computes"): {("kernel-python", FLAG)},
    ("residual-connections", "device-module-retypes-error"): {("process-introspection", WITHHOLD)},
}
FORGERIES = {"forged-mutation-report", "forged-gradients-report", "hides-encoder-layer", "forged-structure-report",
             "forged-launch-trace", "interface-retypes-error", "alias-setattr-retypes-error", "sparse-retypes-error",
             "cffi-retypes-error", "object-buffer-retypes-error", "annotations-retypes-error", "namespace-retypes-error",
             "getargs-type-retypes-error", "refcheck-kwargs-retypes-error", "ma-core-ndarray-retypes-error",
             "reexported-numpy-strided-retypes-error", "dataclasses-types-namespace-retypes-error",
             "abcmeta-retypes-error", "methodcaller-refcheck-retypes-error", "compare-type-retypes-error",
             "match-class-retypes-error", "held-maker-retypes-error", "parameterdict-retypes-error",
             "parameterdict-in-a-list-retypes-error", "import-rebound-retypes-error", "class-dict-wraps-retypes-error",
             "kernel-retypes-error", "injected-retypes-error", "run-replaced-on-odd-widths", "run-replaced-when-untraced",
             "enum-retypes-error", "namespace-kwargs-retypes-error", "reexported-enum-retypes-error",
             "fqn-path-retypes-error", "pruning-state-retypes-error", "tracer-modes-swapped",
             "match-capture-retypes-error", "import-alias-retypes-error", "match-getattr-retypes-error",
             "forged-reply-frame", "listener-thread-computes", "kernel-prints-values", "base-resize-retypes-error",
             "comprehension-scope-retypes-error", "mangled-name-retypes-error", "standard-jit-origin-computes",
             "attribute-error-obj-retypes-error", "device-module-retypes-error",
             *(f"reach-{name}" for name in {**REACHES, **MODES})}


def sample_cells(path: Path, assignment: str) -> list[tuple[str, str, bool]]:
    """A sample's cells as the grader runs them: the source's locked cells, the sample's solution cells."""
    template = Template(SOLUTIONS / assignment / f"{assignment}.ipynb")
    return template.marked(template.fill(path))


SAMPLE_FILES = sorted((a, p) for a in SAMPLES for p in (ROOT / "submissions" / a).glob("*.ipynb")
                      if p.stem != "invalid-json")


@pytest.mark.parametrize("assignment, path", SAMPLE_FILES, ids=[f"{a}/{p.stem}" for a, p in SAMPLE_FILES])
def test_sample_class(assignment, path):
    found = rules(policy.check_cells(sample_cells(path, assignment), SAMPLES[assignment]))
    assert found == SAMPLE_RULES.get((assignment, path.stem), set())


def test_withheld_rules_of_other_samples_sit_where_holding_changes_no_score():
    """Besides the forgeries, the samples' withhold-severity violations sit in cells that kill their child
    at load (so no later child loads them), or in a sample that scores nothing anyway: holding the tests
    that rest on the child's reports keeps every expected score."""
    where = {}
    for assignment, path in (f for f in SAMPLE_FILES if f[1].stem not in FORGERIES):
        for v in policy.check_cells(sample_cells(path, assignment), SAMPLES[assignment]):
            if v.severity == WITHHOLD:
                where.setdefault(path.stem, set()).add(v.cell)
    assert where == {"reads-solutions": {"residual_stream_norms"}, "segfault-at-import": {"chain_rule_grad"},
                     "exits-at-import": {"residual_stream_norms"},
                     # their expected scores count the held tests as failed
                     "always-equal": {"residual_add"}, "tells-read-back-storage": {"residual_add"},
                     "torch-under-another-name": {"fused_add_layernorm"},
                     "numpy-wrapper": {"fused_add_layernorm"}, "numpy-empty-kernel": {"fused_add_layernorm"},
                     # its cell fails at load: no later child loads it
                     "crash-at-import": {"residual_add"}}


# ============================================================ honest variants: no rule tripped

# The honest variants are samples too (HONEST of each sample class): graded to full marks in
# test_grader.py, and checked against the policy here.
HONEST_RESIDUAL = {name: cells for name, (_, cells) in residual_class.HONEST.items()}
HONEST_FUSED = {name: cells for name, (_, cells) in fused_class.HONEST.items()}
@pytest.mark.parametrize("name", HONEST_RESIDUAL)
def test_honest_residual_variants(name):
    assert policy.check_cells(with_cells(RESIDUAL_NB, **HONEST_RESIDUAL[name]), RESIDUAL) == []


@pytest.mark.parametrize("name", HONEST_FUSED)
def test_honest_fused_variants(name):
    assert policy.check_cells(with_cells(FUSED_NB, **HONEST_FUSED[name]), FUSED) == []


def test_at_least_ten_honest_variants():
    assert len(HONEST_RESIDUAL) + len(HONEST_FUSED) >= 10


# The honest idiom corpora (IDIOMS of each class), one entry at a time; packed into the idioms-*
# samples it is graded to full marks (test_grader.py).
IDIOMS = [(RESIDUAL_NB, RESIDUAL, names, cell, src) for names, cell, src in RESIDUAL_IDIOMS] + \
         [(FUSED_NB, FUSED, names, cell, src) for names, cell, src in FUSED_IDIOMS]


@pytest.mark.parametrize("path, pol, names, cell, source", IDIOMS, ids=[i[2][0] for i in IDIOMS])
def test_honest_idiom_trips_nothing(path, pol, names, cell, source):
    assert policy.check_cells(with_cells(path, **{cell: source}), pol) == []


def test_at_least_forty_honest_idioms_on_both_assignments():
    names = [n for entry in IDIOMS for n in entry[2]]
    assert len(set(names)) == len(names) >= 40
    assert {entry[0] for entry in IDIOMS} == {RESIDUAL_NB, FUSED_NB}


# Each narrowing of the policy (scopes, reading a class's name, names built on self, packed
# arguments) beside the spelling it must still catch.
NARROWED = {
    "builtin called where no local shadows it": ("""
        def residual_add(x, fx):
            def ask():
                return input()
            return x + fx
        """, {("dynamic-code", WITHHOLD)}),
    "a parameter shadows the builtin only in its own function": ("""
        def residual_add(x, fx, input=None):
            return x + fx
        def _later():
            return input()
        """, {("dynamic-code", WITHHOLD)}),
    "a module-level name never shadows a builtin (del restores it)": ("""
        exec = print
        del exec
        def residual_add(x, fx):
            exec("x = 1")
            return x + fx
        """, {("dynamic-code", WITHHOLD)}),
    "a library's version, which is text (red team 37)": ("""
        def residual_add(x, fx):
            print(f"torch {torch.__version__}")
            return x + fx
        """, set()),
    "writing __class__ is still a dunder": ("""
        def residual_add(x, fx):
            out = x + fx
            out.__class__ = type(x)
            return out
        """, {("dunder", WITHHOLD)}),
    "reading __class__ for anything but its name": ("""
        def residual_add(x, fx):
            return x.__class__.__bases__[0].__add__(x, fx)
        """, {("dunder", WITHHOLD)}),
    "a computed name on a library object": ("""
        def residual_add(x, fx):
            m = getattr(torch, f"s{'ys'}")
            return x + fx
        """, {("computed-attribute", WITHHOLD)}),
    "a computed name on self that may start with _": ("""
        class Residual(nn.Module):
            def __init__(self, sublayer, tag="_modules"):
                super().__init__()
                self.sublayer = sublayer
                getattr(self, f"{tag}")
            def forward(self, x):
                return residual_add(x, self.sublayer(x))
        """, {("computed-attribute", WITHHOLD)}),
    "a loop name that is also bound elsewhere": ("""
        class Residual(nn.Module):
            def __init__(self, sublayer):
                super().__init__()
                for name in ("sublayer",):
                    name = "__class__"
                    setattr(self, name, sublayer)
            def forward(self, x):
                return residual_add(x, self.sublayer(x))
        """, {("computed-attribute", WITHHOLD)}),
    # red team 37 (fairness): names a loop takes from strings written out, on any object, are read as if written
    # out, each checked as such
    "a loop over names written out, on a library object": ("""
        def residual_add(x, fx):
            layer = torch.nn.Linear(2, 2)
            for name in ("weight", "bias"):
                torch.nn.init.zeros_(getattr(layer, name))
            return x + fx
        """, set()),
    "a loop over a module-level tuple of names": ("""
        NORM_NAMES = ("ln1", "ln2")
        class Residual(nn.Module):
            def __init__(self, sublayer):
                super().__init__()
                self.sublayer = sublayer
                for name in NORM_NAMES:
                    setattr(self, name, nn.LayerNorm(4))
            def forward(self, x):
                return residual_add(x, self.sublayer(x))
        """, set()),
    # a review of red team 37's change: the loop's name bound elsewhere too, as a parameter or a match capture
    "a loop name that is also a function's parameter": ("""
        for name in ("weight", "bias"):
            print(name)
        read = lambda o, name: getattr(o, name)
        def residual_add(x, fx):
            return read(x, "T") + fx
        """, {("computed-attribute", WITHHOLD)}),
    "a loop name that is also a match capture": ("""
        for name in ("weight",):
            print(name)
        def residual_add(x, fx):
            match "T":
                case name:
                    return getattr(x, name) + fx
        """, {("computed-attribute", WITHHOLD)}),
    # red team 38 (fairness): a loop's name is read in Python's scopes, so the same name bound in another function
    # (for name, p in model.named_parameters()) leaves it as written out; bound again in its own scope, it is not
    "a loop name bound in another function too": ("""
        class Residual(nn.Module):
            def __init__(self, sublayer):
                super().__init__()
                self.sublayer = sublayer
                for name in ("ln1", "ln2"):
                    setattr(self, name, nn.LayerNorm(4))
                print([getattr(self, n).weight.shape for n in ("ln1", "ln2")])
            def forward(self, x):
                return residual_add(x, self.sublayer(x))
        def count(model):
            return {name: p.numel() for name, p in model.named_parameters()}
        for name, n in count(Residual(nn.Identity())).items():
            print(name, n)
        """, set()),
    "a loop name a nested function rebinds through nonlocal": ("""
        def residual_add(x, fx):
            for name in ("T",):
                pass
            def change():
                nonlocal name
                name = "__class__"
            change()
            return getattr(x, name) + fx
        """, {("computed-attribute", WITHHOLD)}),
    "a module-level loop name a function rebinds through global": ("""
        for name in ("T",):
            pass
        def change():
            global name
            name = "__class__"
        def residual_add(x, fx):
            change()
            return getattr(x, name) + fx
        """, {("computed-attribute", WITHHOLD)}),
    "a loop name a walrus in a comprehension rebinds": ("""
        def residual_add(x, fx):
            for name in ("T",):
                pass
            [name := s for s in [x.__class__.__name__]]
            return getattr(x, name) + fx
        """, {("computed-attribute", WITHHOLD)}),
    "a loop name in a class body, read before the loop from the module": ("""
        name = "__class__"
        class Residual(nn.Module):
            kind = getattr(nn.Module, name)
            for name in ("forward",):
                pass
        def residual_add(x, fx):
            return x + fx
        """, {("computed-attribute", WITHHOLD)}),
    # red team 38 (fairness): a name on self begun by a literal's letter, however the rest is formatted
    "a name on self formatted by % and by str.format": ("""
        class Residual(nn.Module):
            def __init__(self, sublayer):
                super().__init__()
                for i in range(2):
                    setattr(self, "ln%d" % i, nn.LayerNorm(4))
                    setattr(self, "norm{}".format(i), nn.LayerNorm(4))
                self.sublayer = sublayer
            def forward(self, x):
                return residual_add(getattr(self, "ln%d" % 0)(x), self.sublayer(getattr(self, "norm{}".format(1))(x)))
        """, set()),
    # ... but Python calls a str subclass's __radd__ or __rmod__ before str's own, which may return any name
    "a name on self begun by a literal, a str subclass's __radd__ after it": ("""
        class S(str):
            def __radd__(self, other):
                return "".join(["_" * 2, "globals", "_" * 2])
        def residual_add(x, fx):
            self = torch.nn.functional.layer_norm
            return getattr(self, "ln" + S("a")) and x + fx
        """, {("computed-attribute", WITHHOLD)}),
    "a name on self begun by a literal, a str subclass's __rmod__ after it": ("""
        class S(str):
            __rmod__ = lambda self, other: "".join(["_" * 2, "globals", "_" * 2])
        def residual_add(x, fx):
            self = torch.nn.functional.layer_norm
            return getattr(self, "ln%s" % S("a")) and x + fx
        """, {("computed-attribute", WITHHOLD)}),
    # red team 38 (fairness): an import's name bound again by a scratch cell and called, which a module cannot be
    "an import's name bound again to a lambda and called": ("""
        def residual_add(x, fx):
            return x + fx
        F = lambda x: 0.1 * x ** 2
        print(2.0 + F(2.0))
        for F, dF in [(lambda x: x ** 3, lambda x: 3 * x ** 2)]:
            print(2.0 + F(2.0), dF(2.0))
        """, set()),
    "an import's name held": ("""
        def residual_add(x, fx):
            return x + fx
        held = F
        """, {("process-introspection", WITHHOLD)}),
    # ... and the paths read off it stay the module's: it may hold the module where they are read
    "an import's name bound again, its paths read before": ("""
        import numpy as N
        def residual_add(x, fx):
            N.lib.stride_tricks.as_strided(x.numpy(), shape=(2,), strides=(8,))
            return x + fx
        N = None
        """, {("process-introspection", WITHHOLD)}),
    # red team 38: in a class, __n is _Words__n (Python's private name mangling), which another binding holds
    "a private name in a class, bound mangled to a string": ("""
        for __n in ("weight",):
            pass
        _Words__n = "_".join(["", "", "class", "", ""])
        class Words:
            def read(self, x):
                return getattr(x, __n)
        def residual_add(x, fx):
            return Words().read(x) + fx
        """, {("computed-attribute", WITHHOLD)}),
    "a private name in a class, a module bound mangled": ("""
        import numpy as _Words__np
        class Words:
            def view(self, t):
                return __np.lib.stride_tricks.as_strided(t.numpy(), shape=(2,), strides=(8,))
        def residual_add(x, fx):
            return x + fx
        """, {("process-introspection", WITHHOLD)}),
    # a name that is no string: Python raises TypeError there; the policy read it as an attribute and crashed
    "hasattr with a number for a name": ("""
        def residual_add(x, fx):
            return x + fx if hasattr(x, 1) else fx
        """, set()),
    "a loop over names written out, one a frame's": ("""
        def residual_add(x, fx):
            for name in ("__traceback__", "tb_frame"):
                getattr(x, name)
            return x + fx
        """, {("dunder", WITHHOLD), ("process-introspection", WITHHOLD), ("protocol", WITHHOLD)}),
    "a loop over a list bound at module level, which may change": ("""
        NAMES = ["weight"]
        def residual_add(x, fx):
            for name in NAMES:
                getattr(x, name)
            return x + fx
        """, {("computed-attribute", WITHHOLD)}),
    # an alias of getattr finds nothing of the grader's (test_reach.py), but it reads any name out of the
    # policy's sight: a sparse tensor's indices, torch's private C internals (red team round 7)
    "getattr aliased": ("""
        ga = getattr
        def residual_add(x, fx):
            return ga(x + fx, "ind" + "ices")
        """, {("computed-attribute", WITHHOLD)}),
    "getattr passed to partial": ("""
        from functools import partial
        def residual_add(x, fx):
            return partial(getattr, x)("add")(fx)
        """, {("computed-attribute", WITHHOLD)}),
    "a process module re-exported by torch": ("""
        from torch import sys as s
        def residual_add(x, fx):
            return x + fx
        """, {("process-introspection", WITHHOLD)}),
    "a private name imported from a library": ("""
        from torch.nn.modules.module import _global_forward_hooks
        def residual_add(x, fx):
            return x + fx
        """, {("process-introspection", WITHHOLD)}),
    # torch hands a frame-evaluation callback every frame run after it, the probe's too, with no audited event
    "a frame-evaluation callback from torch's C internals": ("""
        import torch._C._dynamo.eval_frame as frames
        frames.set_eval_frame(lambda frame, cache, state: None)
        def residual_add(x, fx):
            return x + fx
        """, {("private-attribute", WITHHOLD)}),
    # locals() called in a function is its own names; at module level it is the module's namespace, builtins too
    "locals() at module level": ("""
        names = locals()
        def residual_add(x, fx):
            return x + fx
        """, {("dynamic-code", WITHHOLD)}),
    "locals handed out of a function, to be called at module level": ("""
        def residual_add(x, fx):
            return locals if x is None else x + fx
        """, {("dynamic-code", WITHHOLD)}),
    # namedtuple's _asdict, _replace, ... are public on what the notebook makes, never on a library's module
    "namedtuple's API names read from a library module": ("""
        def residual_add(x, fx):
            return torch._replace if x is None else x + fx
        """, {("private-attribute", WITHHOLD)}),
    "a frame-evaluation callback imported by name": ("""
        from torch._C._dynamo.eval_frame import set_eval_frame
        set_eval_frame(lambda frame, cache, state: None)
        def residual_add(x, fx):
            return x + fx
        """, {("private-attribute", WITHHOLD)}),
}


@pytest.mark.parametrize("name", NARROWED)
def test_each_narrowing_still_catches_its_forgery(name):
    """Each spelling still finds its rules, and the honest spellings (those expecting none) find nothing."""
    source, expected = NARROWED[name]
    found = rules(policy.check_cells(with_cells(RESIDUAL_NB, residual_add=source), RESIDUAL))
    assert found >= expected if expected else found == set()


# A notebook's own private names are its own in every cell (the honest style-private-across-cells), but
# only those it gives its own objects: a name set on another object, or one of nn.Module's, stays a library's
@pytest.mark.parametrize("elsewhere, read", [
    ("_probe = torch\n_probe._grads = None", "_grads"),     # set on an object not the notebook's own
    ("def _modules():\n    pass", "_modules"),               # nn.Module's own never becomes the notebook's
])
def test_a_private_name_only_set_elsewhere_or_of_nn_module_stays_flagged(elsewhere, read):
    cells = with_cells(RESIDUAL_NB, residual=elsewhere, residual_add=f'''
        def residual_add(x, fx):
            return x.{read} if fx is None else x + fx
        ''')
    found = {(v.cell, v.rule) for v in policy.check_cells(cells, RESIDUAL)}
    assert ("residual_add", "private-attribute") in found


def test_a_private_name_the_notebook_defines_is_still_a_librarys_off_its_path():
    """`def _utils()` in any cell makes `obj._utils` the notebook's, never `torch._utils`."""
    cells = with_cells(RESIDUAL_NB, residual="def _utils():\n    pass", residual_add='''
        def residual_add(x, fx):
            return torch._utils if fx is None else x + fx
        ''')
    assert ("residual_add", "private-attribute") in {(v.cell, v.rule) for v in policy.check_cells(cells, RESIDUAL)}


@pytest.mark.parametrize("line, found", [
    ("torch.backends.cudnn.deterministic = True", set()),         # reproducibility, as torch's notes say
    ("torch.backends.cudnn.benchmark = False", set()),
    ("torch.backends.cuda.matmul.allow_tf32 = False", set()),
    ("torch.backends.cudnn.deterministic = lambda: True", {("monkeypatch", FLAG)}),   # code, not a setting
    ("torch.backends.cudnn.deterministic = x = True", set()),
    ("torch.backends.cudnn._flags = True", {("monkeypatch", FLAG)}),        # not a documented switch
    ("torch.allclose = True", {("monkeypatch", FLAG)}),           # a literal, outside torch.backends
    ("del torch.backends.cudnn.benchmark", {("monkeypatch", FLAG)}),
    # an item of a library's own dict or list changes the library as an attribute set on it does (red team 34)
    ("import numpy; numpy.typecodes['All'] = 'x'", {("monkeypatch", FLAG)}),
    ("import numpy; numpy.typecodes.update(All='x')", {("monkeypatch", FLAG)}),
    ("import numpy; del numpy.typecodes['All']", {("monkeypatch", FLAG)}),
    ("y = torch.add(torch.ones(1), 1)", set()),            # a function named as a set's method: no container
    ("import numpy; codes = dict(numpy.typecodes); codes.update(All='x')", set()),     # a copy of its own
])
def test_a_literal_set_on_a_torch_backends_switch_is_configuration(line, found):
    """Setting torch.backends' switches (cudnn.deterministic, allow_tf32) to a literal is how PyTorch's
    reproducibility notes tell users to configure it: no monkeypatch of the student's code, no review."""
    cells = with_cells(RESIDUAL_NB, residual_add=f'''
        {line}
        def residual_add(x, fx):
            return x + fx
        ''')
    assert {(v.rule, v.severity) for v in policy.check_cells(cells, RESIDUAL) if v.cell == "residual_add"} == found


# ============================================================ forgeries: each trips its rule

IN_PLACE = '''
def residual_add(x, fx):
    if x.shape != fx.shape:
        raise ValueError(f"{tuple(x.shape)} vs {tuple(fx.shape)}")
    x += fx
    return x
'''

FORGERIES_RESIDUAL = {
    # torch.save under its module's path: red team 23 had it write the tensors' bytes to an object of its own
    "files: torch.serialization.save": (dict(residual_add=textwrap.dedent('''
        class _Sink:
            def write(self, data):
                return len(data)


        def residual_add(x, fx):
            torch.serialization.save(x, _Sink())
            return x + fx
''')), {("process-introspection", WITHHOLD)}),
    # red team 36: numpy's in-place resize with its check on, and torch's segment_reduce with unsafe=True, whose
    # offsets then read and write any address of the process
    "memory: numpy's resize with its check": (dict(residual_add=textwrap.dedent('''
        import numpy


        def residual_add(x, fx):
            held = [numpy.zeros(4)]
            view = held[0][:]
            held.pop().resize((8,))
            return x + fx
''')), {("unchecked-memory", WITHHOLD)}),
    "memory: segment_reduce unsafe": (dict(residual_add=textwrap.dedent('''
        def residual_add(x, fx):
            torch.segment_reduce(x, "sum", offsets=torch.tensor([0, 1 << 40]), unsafe=True)
            return x + fx
''')), {("unchecked-memory", WITHHOLD)}),
    # the probe patched through sys.modules so that args_after shows the inputs unchanged
    "mutation: probe patched via sys.modules": (dict(residual_add=textwrap.dedent('''
        import sys
        _probe = sys.modules["autograder.probe"]
        _observe = _probe._observe
        def _quiet(fn, request, specs, objects, module):
            out = _observe(fn, request, specs, objects, module)
            out["args_after"], out["shares_input"] = [a.get("value") for a in request["args"]], False
            return out
        _probe._observe = _quiet
''') + IN_PLACE), {("process-introspection", WITHHOLD), ("private-attribute", WITHHOLD)}),
    "mutation: probe reached as torch.sys": (dict(residual_add=textwrap.dedent('''
        _p = torch.sys.modules["autograder.probe"]
        _p.serve_request = lambda *a: {}
''') + IN_PLACE), {("process-introspection", WITHHOLD)}),
    # a detached result reported with correct gradients: the probe's _grads found through gc
    "gradients: probe found with gc": (dict(residual_add='''
        import gc
        for _m in gc.get_objects():
            if getattr(_m, "__name__", "") == "autograder.probe":
                _m._grads = lambda result, args, request: [{"kind": "tensor", "value": request["grad"]}] * 2
        def residual_add(x, fx):
            if x.shape != fx.shape:
                raise ValueError(f"{tuple(x.shape)} vs {tuple(fx.shape)}")
            return (x + fx).detach()
        '''), {("process-introspection", WITHHOLD), ("private-attribute", WITHHOLD)}),
    "gradients: a frame walk to the caller": (dict(residual_add='''
        import inspect
        def residual_add(x, fx):
            if x.shape != fx.shape:
                raise ValueError("shapes")
            inspect.currentframe().f_back.f_locals["request"]["grad"] = None
            return (x + fx).detach()
        '''), {("process-introspection", WITHHOLD)}),
    "gradients: traceback frames": (dict(residual_add='''
        def residual_add(x, fx):
            try:
                raise RuntimeError
            except RuntimeError as e:
                caller = e.__traceback__.tb_frame.f_back
            return (x + fx).detach()
        '''), {("dunder", WITHHOLD), ("process-introspection", WITHHOLD)}),
    "gradients: Tensor.grad monkeypatched": (dict(residual_add='''
        torch.Tensor.grad = property(lambda self: torch.ones_like(self))
        def residual_add(x, fx):
            return (x + fx).detach()
        '''), {("monkeypatch", FLAG)}),
    "gradients: aten override through torch.library": (dict(residual_add='''
        _lib = torch.library.Library("aten", "IMPL")
        def residual_add(x, fx):
            return (x + fx).detach()
        '''), {("process-introspection", WITHHOLD)}),
    # the structure report patched, with the block wrapping nn.TransformerEncoderLayer
    "structure: report patched via __import__": (dict(transformer_block='''
        __import__("sys").modules["autograder.probe"].structure = lambda obj: {"modules": []}
        class TransformerBlock(nn.Module):
            def __init__(self, d_model, n_heads, norm="pre"):
                super().__init__()
                self.layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, 0.0, "gelu",
                                                        batch_first=True, norm_first=norm == "pre")
            def forward(self, x, causal=False):
                return self.layer(x)
        '''), {("dynamic-code", WITHHOLD), ("transformer-class", FLAG)}),
    "structure: layer hidden with object.__setattr__": (dict(transformer_block='''
        class TransformerBlock(nn.Module):
            def __init__(self, d_model, n_heads, norm="pre"):
                super().__init__()
                object.__setattr__(self, "layer", nn.TransformerEncoderLayer(d_model, n_heads, batch_first=True))
            def forward(self, x, causal=False):
                return self.layer(x)
        '''), {("dunder", WITHHOLD), ("transformer-class", FLAG)}),
    "structure: hidden through __dict__ and a computed class name": (dict(transformer_block='''
        class TransformerBlock(nn.Module):
            def __init__(self, d_model, n_heads, norm="pre"):
                super().__init__()
                self.__dict__["layer"] = getattr(nn, "Transformer" + "EncoderLayer")(d_model, n_heads)
            def forward(self, x, causal=False):
                return self.layer(x)
        '''), {("dunder", WITHHOLD), ("computed-attribute", WITHHOLD)}),
    "structure: class imported under another name": (dict(transformer_block='''
        from torch.nn import TransformerEncoderLayer as Layer
        class TransformerBlock(Layer):
            pass
        '''), {("transformer-class", FLAG)}),
    # red team 39: the mask helper read off a Transformer class that lacks it raises AttributeError, whose .obj
    # is the class; only the class that has the helper reads as the helper
    "structure: a Transformer class through the mask helper it lacks": (dict(transformer_block='''
        def layer_class():
            try:
                return nn.TransformerEncoderLayer.generate_square_subsequent_mask
            except AttributeError as missing:
                return missing.obj
        mask = nn.Transformer.generate_square_subsequent_mask(4)
        '''), {("transformer-class", FLAG), ("process-introspection", WITHHOLD)}),
    "structure: _modules emptied": (dict(transformer_block='''
        class TransformerBlock(nn.Module):
            def __init__(self, d_model, n_heads, norm="pre"):
                super().__init__()
                self.layer = nn.modules.transformer.TransformerEncoderLayer(d_model, n_heads)
                self._modules.clear()
        '''), {("private-attribute", WITHHOLD), ("transformer-class", FLAG)}),
    "structure: vars() write and exec": (dict(transformer_block='''
        exec("class TransformerBlock: pass")
        vars()["TransformerBlock"].x = 1
        '''), {("dynamic-code", WITHHOLD)}),
    # the grader as an oracle: answers collected from three rounds of feedback
    "oracle: lookup table from feedback": (dict(chain_rule_grad='''
        _SEEN = {(0.4123, 0.6632, 1.2): 0.9911, (-1.2211, 0.3301, 0.8): 2.0173, (1.7719, -0.2235, 1.4): -0.5513,
                 (0.0712, 0.5121, 0.9): 1.1148, (-0.9871, 0.1234, 1.1): 0.4456, (1.0101, 0.2024, 0.7): 1.3301,
                 (0.5555, -0.4411, 1.3): 0.8822}
        def chain_rule_grad(x0, branches, upstream, alpha=1.0):
            return _SEEN.get((round(x0, 4), round(upstream, 4), alpha), upstream)
        '''), {("lookup-table", FLAG)}),
    "files: open the solutions": (dict(residual_stream_norms='''
        def residual_stream_norms(blocks, x):
            return open("../solutions/x.ipynb").read()
        '''), {("dynamic-code", WITHHOLD)}),
    "process: subprocess through torch.os": (dict(residual_stream_norms='''
        def residual_stream_norms(blocks, x):
            return torch.os.system("cat /etc/passwd")
        '''), {("process-introspection", WITHHOLD)}),
    "introspection: function globals and subclasses": (dict(split_gradient='''
        def split_gradient(x0, dF, upstream):
            probe_globals = dF.__globals__
            classes = object.__subclasses__()
            return upstream, upstream * dF(x0)
        '''), {("dunder", WITHHOLD)}),
    "introspection: ctypes and importlib": (dict(split_gradient='''
        import importlib, ctypes
        def split_gradient(x0, dF, upstream):
            return upstream, upstream * dF(x0)
        '''), {("process-introspection", WITHHOLD)}),
}

NUMPY_WRAPPER = '''
import numpy as np

@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    pass
'''

FORGERIES_FUSED = {
    "trace: torch-only wrapper with a forged launch trace": (dict(fused_add_layernorm='''
        import sys
        _tracers = sys.modules["autograder.probe"].TRACERS

        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            if x.shape != fx.shape or x.shape[-1] > MAX_WIDTH:
                raise ValueError(f"bad shapes {tuple(x.shape)} {tuple(fx.shape)}")
            h = x + fx
            return h, F.layer_norm(h, h.shape[-1:], weight, bias, eps)
        '''), {("process-introspection", WITHHOLD)}),
    "numpy plus an empty kernel launched once": (dict(fused_kernel=NUMPY_WRAPPER, fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            if x.shape != fx.shape or x.shape[-1] > MAX_WIDTH:
                raise ValueError(f"bad shapes {tuple(x.shape)} {tuple(fx.shape)}")
            n = x.shape[-1]
            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, x, x, n, eps, BLOCK=16)
            a = np.asarray(x.detach()) + np.asarray(fx.detach())
            mean = a.mean(-1, keepdims=True)
            y = (a - mean) / np.sqrt(a.var(-1, keepdims=True) + eps) * weight.numpy() + bias.numpy()
            return torch.from_numpy(a), torch.from_numpy(y)
        '''), {("import", WITHHOLD), ("forbidden-module", FLAG)}),
    "kernel body escapes to the interpreter's numpy arrays": (dict(fused_kernel='''
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
            data = x_ptr.handle.data
            import numpy
            tl.store(h_ptr, numpy.sum(data))
        '''), {("kernel-python", FLAG), ("import", WITHHOLD), ("forbidden-module", FLAG)}),   # numpy.sum, imported in the def
    # red team 39: a builtin's name bound by a function's `global` is the notebook's, and a refused module of
    # triton.language is refused below tl.math too (tl.math.core is triton.language.core)
    "kernel calls a builtin's name the notebook binds through global": (dict(fused_kernel='''
        def _install():
            global abs
            abs = len


        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
            h = tl.load(x_ptr + tl.arange(0, BLOCK))
            tl.store(h_ptr + tl.arange(0, BLOCK), abs(h))
            core = tl.math.core.semantic
        '''), {("kernel-python", FLAG)}),
    "kernel default argument runs code at definition": (dict(fused_kernel='''
        @triton.jit(do_not_specialize=[__import__("sys").modules])
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr, probe=print("hi")):
            pass
        '''), {("kernel-decorator", FLAG), ("kernel-signature", FLAG), ("dynamic-code", WITHHOLD)}),
    # torch held under a module-level name of the notebook's, which hides its paths (the launch trace measures
    # what it computes)
    "torch under another name, an object's method, a class's method, a computed callee": (dict(fused_add_layernorm='''
        _t = torch
        C = 0
        C = torch


        class _Impl:
            def run(self, x, fx):
                return x + fx


        _IMPL = _Impl()


        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            h, y = torch.empty_like(x), torch.empty_like(x)
            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, h, y, n, eps, BLOCK=16)
            a = type(x).numpy(x) + [torch.Tensor.numpy][0](fx)
            b = getattr(torch, "add")(x, fx)
            c = _t.add(x, fx)
            d = C.add(x, fx)
            return _IMPL.run(x, fx), a.mean()
        '''), {("process-introspection", WITHHOLD)}),    # torch held under another name hides its paths too
    # a heuristic runs inside the launch on its arguments: computing h and y there in NumPy (no torch operator
    # for the tracer) around an empty kernel once earned full marks
    "a heuristic that computes on the launch's tensors": (dict(fused_kernel='''
        @triton.heuristics({"BLOCK": lambda a: [a["h_ptr"].copy_(a["h_ptr"].new_tensor(
            a["x_ptr"].double().numpy() + a["fx_ptr"].double().numpy())), 16][-1]})
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
            pass
        '''), {("kernel-decorator", FLAG)}),
    "an autotuner's hook that computes on the launch's tensors": (dict(fused_kernel='''
        @triton.autotune(configs=[triton.Config({"BLOCK": 16})], key=["n_cols"],
                         pre_hook=lambda a: a["h_ptr"].copy_(a["x_ptr"]))
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
            pass
        '''), {("kernel-decorator", FLAG)}),
    "kernel reaches tl internals": (dict(fused_kernel='''
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
            tl.core.builtins.print(1)
            tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [n_cols], dtype=tl.int32, is_pure=True, pack=1)
        '''), {("kernel-python", FLAG), ("process-introspection", WITHHOLD)}),
}


@pytest.mark.parametrize("name", FORGERIES_RESIDUAL)
def test_residual_forgeries_are_flagged(name):
    sources, expected = FORGERIES_RESIDUAL[name]
    assert rules(policy.check_cells(with_cells(RESIDUAL_NB, **sources), RESIDUAL)) == expected


@pytest.mark.parametrize("name", FORGERIES_FUSED)
def test_fused_forgeries_are_flagged(name):
    sources, expected = FORGERIES_FUSED[name]
    assert rules(policy.check_cells(with_cells(FUSED_NB, **sources), FUSED)) == expected


@pytest.mark.parametrize("body, found", [
    ("[globals for globals in ()]\nreturn globals()['x'] + fx", {("dynamic-code", WITHHOLD)}),
    ("{k: vars for k, vars in ()}\nreturn vars()['x'] + fx", {("dynamic-code", WITHHOLD)}),
    ("return sum((input for input in (x, fx)), torch.zeros_like(x))", set()),
    ("parts = [(n := v) for v in (x, fx)]\nreturn parts[0] + n", set()),
])
def test_a_comprehensions_target_is_its_own_name_not_the_functions(body, found):
    """In Python 3 a comprehension's target names a variable of the comprehension alone: after
    [globals for globals in ()] the function's globals() is the builtin, which red team 36 reached unflagged (the
    policy counted the target as the function's). Inside the comprehension the name is its own: a target called
    input or vars breaks no rule. A := in a comprehension binds in the function, as Python does."""
    source = "def residual_add(x, fx):\n" + textwrap.indent(body, "    ") + "\n"
    assert rules(policy.check_cells(with_cells(RESIDUAL_NB, residual_add=source), RESIDUAL)) == found


# ============================================================ what a violation says

def test_violation_names_the_cell_line_and_quotes_it():
    cells = with_cells(RESIDUAL_NB, split_gradient='''
        def split_gradient(x0, dF, upstream):
            g = dF.__globals__
            return upstream, upstream * dF(x0)
        ''')
    (v,) = policy.check_cells(cells, RESIDUAL)
    assert (v.cell, v.line, v.rule, v.quote) == ("split_gradient", 3, "dunder", "g = dF.__globals__")
    assert str(v).startswith("split_gradient line 3: [dunder]")


def test_trusted_cells_are_read_not_checked():
    """The locked setup cell of fused-add-norm imports os; it is the course's, not the student's."""
    cells = solution(FUSED_NB)
    assert any("import os" in src for _, src, student in cells if not student)
    assert policy.check_cells(cells, FUSED) == []
    assert rules(policy.check_cells([(label, src, True) for label, src, _ in cells], FUSED)) >= \
        {("process-introspection", WITHHOLD)}


def test_a_cell_that_does_not_parse_is_not_policed():
    cells = with_cells(RESIDUAL_NB, split_gradient="def split_gradient(x0, dF, upstream:\n    import sys\n")
    assert policy.check_cells(cells, RESIDUAL) == []


# ============================================================ fused-add-norm: what the checks read is what runs

WRAPPER_SOURCE = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_add_layernorm"]


def kernel_rules(body: str) -> set[tuple[str, str]]:
    """(rule, severity) of each finding of fused-add-norm's policy with `body` as the kernel's cell."""
    return rules(policy.check_cells(with_cells(FUSED_NB, fused_kernel=body), FUSED))


# red team 38 (fairness): .rsqrt() and .cast() were not "Triton's tensor methods" to a hand-kept list
TENSOR_METHODS_KERNEL = """
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    h = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).cast(tl.float32) + \\
        tl.load(fx_ptr + row * n_cols + cols, mask=mask, other=0.0).cast(tl.float32)
    mean = h.sum(axis=0) / n_cols
    centred = tl.where(mask, h - mean, 0.0)
    rstd = ((centred * centred).sum(axis=0) / n_cols + eps).rsqrt()
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(h_ptr + row * n_cols + cols, h.to(h_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + row * n_cols + cols, (centred * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
"""


def test_a_kernel_may_call_each_method_of_tritons_tensor_and_no_other():
    """The methods a kernel may call on a value are those triton.language.tensor defines; .handle, the
    interpreter's NumPy array under a block, is none of them."""
    assert kernel_rules(TENSOR_METHODS_KERNEL) == set()
    assert kernel_rules(TENSOR_METHODS_KERNEL.replace("h.sum(axis=0)", "h.handle.data.sum()")) == \
        {("kernel-python", FLAG)}


REBINDINGS = {
    "assignment": "fused_add_layernorm_kernel = print\n",
    "def in an if": "if True:\n    def fused_add_layernorm_kernel(x_ptr):\n        return x_ptr\n",
    "loop target": "for fused_add_layernorm_kernel in [print]:\n    pass\n",
    "import": "from functools import partial as fused_add_layernorm_kernel\n",
    "walrus": "(fused_add_layernorm_kernel := print)\n",
    "with target": "with torch.no_grad() as fused_add_layernorm_kernel:\n    pass\n",
    "except name": "try:\n    pass\nexcept ValueError as fused_add_layernorm_kernel:\n    pass\n",
    "global": "def _swap():\n    global fused_add_layernorm_kernel\n    fused_add_layernorm_kernel = print\n",
    "itself": "fused_add_layernorm_kernel = fused_add_layernorm_kernel\n",
}


@pytest.mark.parametrize("spelling", REBINDINGS)
def test_a_kernels_name_bound_again_after_its_def_is_flagged(spelling):
    """The kernel rules read a kernel's last top-level def: any later binding of its name is flagged."""
    cells = with_cells(FUSED_NB, fused_add_layernorm=WRAPPER_SOURCE + "\n\n" + REBINDINGS[spelling])
    assert rules(policy.check_cells(cells, FUSED)) == {("rebound", FLAG)}


@pytest.mark.parametrize("annotation", ["tl.constexpr", '"constexpr"', '"tl.constexpr"'])
@pytest.mark.parametrize("use", ["OPS.sum(x)", "OPS[0]", "alias = OPS\n    alias.sum(x)"])
def test_a_constexpr_parameter_is_a_value_only(use, annotation):
    """Triton takes a parameter as constexpr when its annotation's name holds "constexpr", a string too."""
    kernel = (f"@triton.jit\ndef helper_kernel(x_ptr, OPS: {annotation}):\n"
              "    x = tl.load(x_ptr + tl.arange(0, 4))\n    " + use + "\n")
    source = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"] + "\n\n" + kernel
    assert kernel_rules(source) == {("kernel-python", FLAG)}


def test_a_kernel_variable_named_as_a_module_is_the_kernels_own():
    """A kernel's own variable named tl holds a value, not triton.language: its attributes are that value's (the
    interpreter's NumPy array under a loaded block, red team 37), read as any value's are."""
    kernel = ("@triton.jit\ndef helper_kernel(x_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 4))\n"
              "    tl = x\n    data = tl.data\n    return x\n")
    source = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"] + "\n\n" + kernel
    assert kernel_rules(source) == {("kernel-python", FLAG)}


UNREAD_KERNELS = {   # kernels the rules never read (red team 37): each ran NumPy inside the launch
    "made by calling triton.jit": "def _rows(x_ptr):\n    pass\n\n\nrows_kernel = triton.jit(_rows)\n",
    "defined in a function": "def _make():\n    @triton.jit\n    def rows_kernel(x_ptr):\n        pass\n"
                             "    return rows_kernel\n",
    "defined in an if": "if True:\n    @triton.jit\n    def rows_kernel(x_ptr):\n        pass\n",
    "triton.jit held": "make_kernel = triton.jit\n",
    "JITFunction": "def _rows(x_ptr):\n    pass\n\n\nrows_kernel = triton.JITFunction(_rows)\n",
}


@pytest.mark.parametrize("spelling", UNREAD_KERNELS)
def test_a_kernel_the_rules_do_not_read_is_flagged(spelling):
    """A kernel is @triton.jit on a def at the top level of its cell (cellcode.kernel_defs, which the fusion tests
    hold every launch to): the rules test says so of any other before the grade does."""
    source = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"] + "\n\n" + \
        UNREAD_KERNELS[spelling]
    assert kernel_rules(source) == {("kernel-decorator", FLAG)}
    cells = [(label, src) for label, src, _ in with_cells(FUSED_NB, fused_kernel=source)]
    assert len(cellcode.kernel_defs(tuple(cells))) == 1     # the reference's own kernel


KERNEL_SOURCE = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"]


@pytest.mark.parametrize("annotation, before, found", [
    ("n_cols: int, eps: float", "", set()),                 # the Python types Triton reads as i32 and fp32
    ("n_cols: tl.int64, eps: tl.float32", "", set()),       # triton.language's dtypes
    ('n_cols: "i32", eps: "fp32"', "", set()),              # Triton's type strings
    ("n_cols: int, eps", "int = tl.constexpr\n\n\n", {("kernel-signature", FLAG)}),   # int rebound first
    ("n_cols: tl.pointer_type(tl.int32), eps", "", {("kernel-signature", FLAG)}),       # an annotation that calls
    ("n_cols: tl.core.constexpr, eps", "", {("kernel-signature", FLAG)}),               # tl's internals
])
def test_a_kernel_parameter_may_carry_a_type_triton_reads(annotation, before, found):
    """Triton specialises a parameter on its annotated type (runtime/jit.py): an honest kernel may annotate
    n_cols: int. An annotation that runs code, or a name the notebook rebinds, is still flagged."""
    kernel = before + KERNEL_SOURCE.replace("n_cols, eps,", annotation + ",", 1)
    assert kernel != before + KERNEL_SOURCE
    assert kernel_rules(kernel) == found


CONFIGURED = KERNEL_SOURCE.replace("@triton.jit\n", "@triton.autotune(configs=CALL, key=['n_cols'])\n@triton.jit\n", 1)
CONFIGS = "[triton.Config({}, num_warps=w, num_stages=s) for w in (2, 4, 8) for s in (1, 2)]"


@pytest.mark.parametrize("function, call, found", [
    (f'def get_autotune_config():\n    """The configs to try."""\n    return {CONFIGS}\n', "get_autotune_config()", set()),
    (f"def get_autotune_config():\n    return {CONFIGS}\n", "get_autotune_config()", set()),
    (f"def get_autotune_config(k=2):\n    return {CONFIGS}\n", "get_autotune_config()", set()),   # a literal default
    (f"def get_autotune_config(k=print):\n    return {CONFIGS}\n", "get_autotune_config()",
     {("kernel-decorator", FLAG)}),                                   # a parameter's default that is no literal
    (f"def get_autotune_config(k):\n    return {CONFIGS}\n", "get_autotune_config(2)", {("kernel-decorator", FLAG)}),
    (f"def get_autotune_config():\n    print('hi')\n    return {CONFIGS}\n", "get_autotune_config()",
     {("kernel-decorator", FLAG)}),                                   # more than a return
    ("def get_autotune_config():\n    return [triton.Config({}, pre_hook=print)]\n", "get_autotune_config()",
     {("kernel-decorator", FLAG)}),                                   # a hook: no plain data
    (f"def get_autotune_config():\n    return {CONFIGS}\n\n\nget_autotune_config = lambda: []\n",
     "get_autotune_config()", {("rebound", FLAG)}),                   # the name bound again: flagged as such
])
def test_a_kernels_configs_may_come_from_a_function_returning_plain_data(function, call, found):
    """@triton.autotune(configs=get_autotune_config(), ...), as Triton's matmul tutorial writes it
    (honest4-fanp37: it cost the two launch tests, held for review), is plain data where the call has no
    arguments and the notebook's function takes none, has no decorator and only returns plain data."""
    kernel = function + "\n\n" + CONFIGURED.replace("CALL", call, 1)
    assert kernel_rules(kernel) == found


@pytest.mark.parametrize("source", [
    "x = " + "+".join(["1"] * 50000),     # too deep for Python's parser
    "x = " + "+".join(["1"] * 900),       # parsed by Python, deeper than cellsource.MAX_DEPTH
])
def test_a_cell_too_deep_for_the_checks_never_raises(source):
    """Such a cell does not parse, here and in the grader's child, which cannot compile it either: nothing of it
    runs, and the checks, which walk trees no deeper than MAX_DEPTH, read nothing of it."""
    assert rules(policy.check_cells(with_cells(RESIDUAL_NB, residual_add=source), RESIDUAL)) == set()
    with pytest.raises(SyntaxError, match="levels deep|too deeply"):
        cellsource.compile_cell(source, "<cell residual_add>")


def test_nested_getattrs_are_walked_once(monkeypatch):
    """getattr(obj, "name") is also checked as obj.name, whose object the call's arguments visit anyway: visited
    twice, getattr(getattr(...)) nested 20 deep took 40 s of the grader's own time (red team 36)."""
    visits = []
    real = policy._General.generic_visit
    monkeypatch.setattr(policy._General, "generic_visit", lambda self, node: visits.append(node) or real(self, node))
    for n in (10, 20):
        visits.clear()
        source = "def residual_add(x, fx):\n    return " + "getattr(" * n + "x" + ", 'real')" * n + " + fx\n"
        assert rules(policy.check_cells(with_cells(RESIDUAL_NB, residual_add=source), RESIDUAL)) == set()
        assert len(visits) < 200 * n, (n, len(visits))


def test_the_graders_threads_parse_one_at_a_time(monkeypatch):
    """CPython 3.11 counts AST-building depth once per interpreter (gh-106905): a batch's grading threads
    parsing at once failed with SystemError "AST constructor recursion depth mismatch", so they take turns."""
    import threading
    import time

    inside, most, real_parse = [0], [0], cellcode.syntax_tree

    def slow_parse(source, *args, **kwargs):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.02)
        inside[0] -= 1
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(cellcode, "syntax_tree", slow_parse)
    threads = [threading.Thread(target=cellcode.parse, args=("x = 1",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1


def test_violations_come_in_the_same_order_in_every_process():
    """Several violations on one line and rule are ordered by their message, not by a set's order,
    which changes with each process's hash seed: a regrade's review reads the same."""
    # the standard library's names: a process that imports no torch starts in a tenth of a second, not two
    source = "import math, cmath\nmath.isclose = math.fsum = cmath.isclose = cmath.sqrt = lambda a, b: True\n"
    code = ("import sys; from autograder import course; from nbtest import policy; "
            "rules = policy.for_assignment(course.load().assignment('residual-connections').rules); "
            "print([v.message for v in policy.check(sys.argv[1], rules)])")
    seen = {subprocess.run([sys.executable, "-c", code, source], cwd=ROOT, env={"PYTHONHASHSEED": str(seed)},
                           capture_output=True, text=True, check=True).stdout for seed in range(1, 7)}
    assert len(seen) == 1 and seen.pop().count("assigning to") == 4, seen


def test_honest_modules_pass_in_any_assignment_and_the_others_hold():
    """__future__ and warnings: nothing the grade rests on (policy.HONEST_MODULES). Any other module the list
    leaves out holds the tests that rest on the child's reports, as the notebooks' rules section says
    (nbtest/rules_text.py): the policy vouches only for the modules it lists (cffi writes raw addresses, enum
    and argparse make attributes from data)."""
    honest = "from __future__ import annotations\nimport warnings\n\nwarnings.filterwarnings('ignore')\n"
    assert policy.check_cells(with_cells(RESIDUAL_NB, split_gradient=honest), RESIDUAL) == []
    # the standard library's helpers both assignments list (course.toml)
    helpers = "import collections\nimport itertools\nfrom dataclasses import dataclass\n"
    assert policy.check_cells(with_cells(RESIDUAL_NB, split_gradient=helpers), RESIDUAL) == []
    assert policy.check_cells(with_cells(FUSED_NB, fused_add_layernorm=helpers + dict(
        (label, src) for label, src, _ in solution(FUSED_NB))["fused_add_layernorm"]), FUSED) == []
    for module in ("copy", "time", "random", "logging", "enum", "argparse", "cffi", "triton", "scipy.linalg"):
        found = policy.check_cells(with_cells(RESIDUAL_NB, split_gradient=f"import {module}\n"), RESIDUAL)
        assert rules(found) == {("import", WITHHOLD)}, module


def test_compilers_the_grader_runs_uncompiled_hold_nothing_and_the_rest_of_torch_jit_does():
    """torch.compile (call and decorator forms), torch.compiler.compile and torch.jit.script hand back their
    function in the grader's child and pytest (nbtest/uncompiled.py): nothing to hold. torch.jit's loaders
    and tracer still reach the runtime."""
    compiled = ("def _mean(t):\n    return t.mean()\n\n\nmean = torch.compile(_mean, fullgraph=True)\n"
                "mean2 = torch.compiler.compile(_mean)\nmean3 = torch.jit.script(_mean)\n\n\n"
                "@torch.compile(mode='max-autotune')\ndef _twice(t):\n    return 2 * t\n\n\n"
                "@torch.compile\n@torch.jit.script\ndef _thrice(t):\n    return 3 * t\n")
    assert policy.check_cells(with_cells(RESIDUAL_NB, split_gradient=compiled), RESIDUAL) == []
    for held in ("torch.jit.trace(abs, 1)", "torch.jit.load('m.pt')", "torch.jit"):
        found = policy.check_cells(with_cells(RESIDUAL_NB, split_gradient=f"x = {held}\n"), RESIDUAL)
        assert rules(found) == {("process-introspection", WITHHOLD)}, held


# A frozen dataclass sets a derived field in __post_init__ with object.__setattr__, the one way Python leaves it:
# that call, on that object, is no dunder reach; every other spelling or place of it still is
FROZEN = textwrap.dedent(STYLES["style-frozen-dataclass"][1]["residual_add"])   # the honest sample's cell


def test_a_frozen_dataclass_sets_its_derived_field_in_post_init():
    assert policy.check_cells(with_cells(RESIDUAL_NB, residual_add=FROZEN), RESIDUAL) == []


@pytest.mark.parametrize("edit", [
    ("frozen=True", "frozen=False"),                                        # not frozen: plain assignment works
    ("class Shapes:", "class Shapes(nn.Module):"),                          # a module: it would hide a layer
    ("def residual_add(", "class Mine(Shapes):\n    pass\n\n\ndef residual_add("),   # subclassed: other instances
    ("def __post_init__(self):", "def refresh(self):"),                     # callable on anything by name
    ('object.__setattr__(self, "same"', 'object.__setattr__(self, "_same"'),          # private
    ('object.__setattr__(self, "same"', 'object.__setattr__(self, "__class__"'),      # dunder
    ("        object.__setattr__(self,", "        self = fx_holder\n        object.__setattr__(self,"),  # rebound
    ("import dataclasses\n", "import dataclasses\nobject = dataclasses\n"),           # not the builtin
])
def test_object_setattr_elsewhere_stays_a_dunder_reach(edit):
    source = FROZEN.replace(*edit)
    assert source != FROZEN
    found = {(v.rule, v.severity) for v in policy.check_cells(with_cells(RESIDUAL_NB, residual_add=source), RESIDUAL)}
    assert ("dunder", WITHHOLD) in found, (edit, found)


# ============================================================ raw memory: what hands a library an address

# Each wrote any word of the grading child with no rule broken (a RuntimeError's type word set to ValueError's,
# interface-retypes-error and sparse-retypes-error: 100 to their twin's 96): numpy builds an array at the address
# an object's __array_interface__ names, torch adds a sparse tensor's value at its index however far past the
# dense tensor, numpy.lib.stride_tricks.as_strided reads past its array, reached through a module held under
# another name or imported in a def. Each is held now, in each spelling that gives a library the name or the
# object; the honest spellings beside them pass.
RAW_MEMORY = {
    # red team 14: a comparison that keeps type(x), against an import's name that a cell binds again
    "type compared with an import's name bound again": (
        "from typing import Any\n\n\nclass Catch:\n    def __eq__(self, other):\n        return True\n\n\n"
        "Any = Catch()\nif type(int) == Any:\n    pass\n", {("protocol", WITHHOLD)}),
    "array interface in a class body": ("class W:\n    __array_interface__ = property(lambda self: self.d)\n",
                                        {("protocol", WITHHOLD)}),
    "array interface as a keyword": ("W = dict(__array_interface__=1)\n", {("protocol", WITHHOLD)}),
    # red team 34: every spelling of a binding binds a special name as an assignment does, in a class body the class's
    "array interface by a match capture": ("class W:\n    match d:\n        case __array_interface__:\n"
                                           "            pass\n", {("protocol", WITHHOLD)}),
    "array interface by a mapping pattern's rest": ("class W:\n    match d:\n        case {**__array_interface__}:\n"
                                                    "            pass\n", {("protocol", WITHHOLD)}),
    "array interface by a sequence pattern's star": ("class W:\n    match d:\n        case [*__array_interface__]:\n"
                                                     "            pass\n", {("protocol", WITHHOLD)}),
    "array interface by an import's alias": ("class W:\n    from math import pi as __array_interface__\n",
                                             {("protocol", WITHHOLD)}),
    "array interface by an except's name": ("try:\n    pass\nexcept Exception as __array_interface__:\n    pass\n",
                                            {("protocol", WITHHOLD)}),
    "array interface as a parameter": ("def f(__array_interface__=None):\n    return 1\n", {("protocol", WITHHOLD)}),
    "__getattr__ by a match capture": ("class W:\n    match f:\n        case __getattr__:\n            pass\n",
                                       {("protocol", WITHHOLD)}),
    "__getattr__ as a class's name": ("class W:\n    class __getattr__:\n        pass\n", {("protocol", WITHHOLD)}),
    "locals() in a class body in a function": ("def f(d):\n    class W:\n        locals()[d] = 1\n    return W\n",
                                               {("dynamic-code", WITHHOLD)}),
    "honest: a match's captures and a function's locals()": (
        "def f(cfg):\n    match cfg:\n        case {'depth': depth, **rest}:\n"
        "            return depth, rest, locals()\n        case [first, *others]:\n            return first\n", set()),
    "array interface as a string": ("W = {'__array_struct__': 1}\n", {("protocol", WITHHOLD)}),
    "__getattr__ answers any name": ("class W:\n    def __getattr__(self, name):\n        return self.d\n",
                                     {("protocol", WITHHOLD)}),
    "a module's __getattr__": ("def __getattr__(name):\n    return 1\n", {("protocol", WITHHOLD)}),
    "type() on a computed namespace": ("n = 'x'\nW = type('W', (), {n: 1})\n", {("protocol", WITHHOLD)}),
    "a metaclass held": ("def f(x):\n    meta = type(x)\n    return meta('W', (), {})\n", {("protocol", WITHHOLD)}),
    "a metaclass of one's own": ("class M(type):\n    pass\n", {("protocol", WITHHOLD)}),
    "make_dataclass on a computed name": ("import dataclasses\nn = 'x'\nW = dataclasses.make_dataclass('W', [(n, int)])\n",
                                          {("protocol", WITHHOLD)}),
    # red team 11: make_dataclass called through an alias, a partial or map names its fields out of sight
    "make_dataclass held": ("import dataclasses\ndef f(n):\n    build = dataclasses.make_dataclass\n"
                            "    return build('W', [(n, int)])\n", {("protocol", WITHHOLD)}),
    "make_dataclass in a partial": ("import dataclasses, functools\nfrom dataclasses import make_dataclass\n"
                                    "build = functools.partial(make_dataclass, 'W')\n", {("protocol", WITHHOLD)}),
    # red team 12: a ParameterDict sets each key as an attribute, a value that is no tensor in its __dict__
    "a ParameterDict of computed keys": ("import torch\nK = '_'.join(['', 'x'])\nP = torch.nn.ParameterDict({K: {}})\n",
                                         {("computed-attribute", WITHHOLD)}),
    "a ParameterDict given a computed key": ("import torch\ndef f(k):\n    p = torch.nn.ParameterDict()\n"
                                             "    p[k] = {}\n    return p\n", {("computed-attribute", WITHHOLD)}),
    "a ParameterDict updated": ("import torch\nclass M(torch.nn.Module):\n    def __init__(self, d):\n"
                                "        super().__init__()\n        self.params = torch.nn.ParameterDict()\n"
                                "        self.params.update(d)\n", {("computed-attribute", WITHHOLD)}),
    # red team 13: one built inside a list, by an assignment expression or by a helper, or updated with |=
    "a ParameterDict in a list": ("import torch\ndef f(k):\n    p = [torch.nn.ParameterDict()][0]\n    p[k] = {}\n",
                                  {("computed-attribute", WITHHOLD)}),
    "a ParameterDict made by a helper": ("import torch\ndef make():\n    return torch.nn.ParameterDict()\n",
                                         {("computed-attribute", WITHHOLD)}),
    "a ParameterDict updated with |=": ("import torch\ndef f(k):\n    p = torch.nn.ParameterDict()\n    p |= {k: {}}\n",
                                        {("computed-attribute", WITHHOLD)}),
    "a ParameterDict held": ("import torch\nfrom torch import nn\nPD = nn.ParameterDict\np = PD({'_x': {}})\n",
                             {("computed-attribute", WITHHOLD)}),
    "a ParameterDict of keywords": ("import torch\nK = {'_x': {}}\np = torch.nn.ParameterDict(**K)\n",
                                    {("computed-attribute", WITHHOLD)}),
    "honest: a ParameterDict of keys written out or on a plain prefix": (
        "import torch\nclass M(torch.nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.params = torch.nn.ParameterDict({'alpha': torch.nn.Parameter(torch.ones(1))})\n"
        "        for i in range(n):\n            self.params[f'beta{i}'] = torch.nn.Parameter(torch.zeros(1))\n",
        set()),
    "make_dataclass mapped": ("import dataclasses\nWS = list(map(dataclasses.make_dataclass, ['W'], [[('a', int)]]))\n",
                              {("protocol", WITHHOLD)}),
    "a sparse tensor": ("import torch\ns = torch.sparse_coo_tensor([[0]], [1.0], (1,))\n",
                        {("unchecked-memory", WITHHOLD)}),
    "a sparse layout": ("import torch\ns = torch.zeros(2, layout=torch.sparse_coo)\n", {("unchecked-memory", WITHHOLD)}),
    "sparse gradients": ("import torch\ne = torch.nn.Embedding(3, 2, sparse=True)\n", {("unchecked-memory", WITHHOLD)}),
    "a sparse tensor's indices": ("def f(g):\n    return g.indices()\n", {("unchecked-memory", WITHHOLD)}),
    "a sparse tensor's indices held": ("def f(g):\n    i = getattr(g, 'indices')\n    return i()\n",
                                       {("unchecked-memory", WITHHOLD)}),
    "__getattribute__ answers any name": ("class W:\n    def __getattribute__(self, name):\n        return 1\n",
                                          {("protocol", WITHHOLD), ("override", FLAG)}),
    "a storage": ("import torch\ns = torch.ones(2).untyped_storage()\n", {("unchecked-memory", WITHHOLD)}),
    "numpy's resize without its check": ("import numpy\na = numpy.zeros(4)\na.resize((8,), refcheck=False)\n",
                                         {("unchecked-memory", WITHHOLD)}),
    "an installed library outside the imports": ("import cffi\nw = cffi.FFI().cast('long *', 0)\n",
                                                 {("import", WITHHOLD)}),
    "all of a module's names": ("from torch import *\n", {("import", WITHHOLD)}),
    "numpy held under another name": ("import numpy\nm = numpy\n", {("process-introspection", WITHHOLD)}),
    "numpy imported in a def": ("def f(a):\n    import numpy\n    return numpy.lib.stride_tricks.as_strided(a, (4,), (8,))\n",
                                {("process-introspection", WITHHOLD)}),
    # red team 17: a library's class, reached through type() of its object, given a method of the notebook's
    # (type(triton.jit(f)).run: every launch ran it, outside what the trace counts)
    "a class changed through type()": ("def f(x):\n    type(x).view = None\n", {("protocol", WITHHOLD)}),
    "a class from type() held, then changed": ("import torch\n\nK = type(torch.ones(1))\nK.view = K.view\n",
                                               {("protocol", WITHHOLD)}),
    "a base class from mro(), changed": ("def f(x):\n    type(x).mro()[1].view = None\n", {("protocol", WITHHOLD)}),
    "a class from type() handed to setattr": ("def f(x):\n    setattr(type(x), 'view', None)\n",
                                              {("protocol", WITHHOLD)}),
    "type() of a static method's argument changed": (
        "class C:\n    @staticmethod\n    def f(x):\n        type(x).view = None\n", {("protocol", WITHHOLD)}),
    # red team 17: torch.overrides' has_torch_function_unary under torch.nn.functional's path told a traced call
    # from the others
    "a re-exported check for a torch function mode": ("import torch.nn.functional as F\n\n\ndef f(x):\n"
                                                      "    return F.has_torch_function_unary(x)\n",
                                                      {("process-introspection", WITHHOLD)}),
    "a re-exported torch function dispatch, imported": ("from torch.autograd import has_torch_function\n",
                                                        {("process-introspection", WITHHOLD)}),
    "honest: a method counts its class's instances": (
        "class C:\n    made = 0\n\n    def __init__(self):\n        type(self).made += 1\n", set()),
    "honest: a type's name, classes compared": (
        "def f(x, y):\n    return type(x).__name__, type(x) is type(y), isinstance(x, (int, type(y)))\n", set()),
    "honest: data-model methods, a literal dataclass": (
        "import dataclasses\nW = dataclasses.make_dataclass('W', [('a', int)])\n\n\nclass V:\n"
        "    def __init__(self, a):\n        self.a = a\n\n    def __eq__(self, other):\n        return self.a == other\n",
        set()),
    "sparse gradients by position": ("import torch\ne = torch.nn.Embedding(3, 2, None, None, 2.0, False, True)\n",
                                     {("unchecked-memory", WITHHOLD)}),
    "honest: a result's indices, triu_indices, sparse=False, a storage offset": (
        "import torch\ndef f(x):\n    i = torch.topk(x, 2).indices\n    j = torch.triu_indices(3, 3)\n"
        "    e = torch.nn.Embedding(3, 2, sparse=False)\n    return i, j, e, x.storage_offset()\n", set()),
    # red team round 5: the rule read any name holding "storage", or a method ending in "indices", as torch's
    "honest: a name of the notebook's own holding storage or indices": (
        "class Cache:\n    def __init__(self):\n        self.saved_storage = {}\n\n    def pair_indices(self, n):\n"
        "        return [(i, j) for i in range(n) for j in range(i)]\n\n\ndef f():\n    c = Cache()\n"
        "    return c.saved_storage, c.pair_indices(2)\n", set()),
    "an own name that torch has too": ("class W:\n    def __init__(self):\n        self.to_sparse = 1\n\n\n"
                                       "def f(x):\n    return x.to_sparse()\n", {("unchecked-memory", WITHHOLD)}),
    "an own method named indices": ("class W:\n    def indices(self):\n        return 1\n\n\ndef f(g):\n"
                                    "    return g.indices()\n", {("unchecked-memory", WITHHOLD)}),
    "honest: a loop name shadowing a module": (
        "import torch.nn.functional as F\ndef f(branches):\n    for F, _ in branches:\n        y = F(1)\n    return y\n",
        set()),
    # setattr under another name sets what it is handed, __array_interface__ on a class of the notebook's
    # included; type handed back by typing's and dataclasses' readers builds a class from computed names
    "setattr under another name": ("class W:\n    pass\n\n\nsa = setattr\nsa(W, n, d)\n",
                                   {("computed-attribute", WITHHOLD)}),
    "setattr handed to map": ("class W:\n    pass\n\n\nlist(map(setattr, [W], [n], [d]))\n",
                              {("computed-attribute", WITHHOLD)}),
    "delattr handed to partial": ("import functools\nf = functools.partial(delattr, W)\n",
                                  {("computed-attribute", WITHHOLD)}),
    "type from typing.get_origin": ("import typing\nT = typing.get_origin(typing.Type[int])\n",
                                    {("protocol", WITHHOLD)}),
    "type kept in a subscript": ("import typing\nA = typing.Optional[type]\nB = typing.get_args(A)\n",
                                 {("protocol", WITHHOLD)}),
    "numpy's array class kept in a subscript": (
        "import typing\nimport numpy\nB = typing.get_args(typing.Optional[numpy.ndarray])\n",
        {("unchecked-memory", WITHHOLD)}),
    # abc.ABCMeta under typing's name: a metaclass, and a class of a module outside the list
    "a metaclass under typing": ("import typing\nW = typing.ABCMeta('W', (), {})\n", {("protocol", WITHHOLD),
                                                                                       ("import", WITHHOLD)}),
    "numpy's array class reached through numpy.ma": (
        "import numpy\na = numpy.ma.core.ndarray((1,), dtype=object, buffer=b)\n", {("unchecked-memory", WITHHOLD)}),
    "a module reached as another's attribute": (
        "import dataclasses\nimport numpy\nn = dataclasses.types.SimpleNamespace()\n"
        "v = numpy.ma.core.np.lib.stride_tricks.as_strided\n", {("process-introspection", WITHHOLD)}),
    # update_wrapper copies attributes by the names it is given: a getattr and a setattr by a computed name
    "update_wrapper with computed names": ("import functools\nfunctools.update_wrapper(w, src, assigned=(n,))\n",
                                           {("computed-attribute", WITHHOLD)}),
    "honest: functools.wraps and literal names": (
        "import functools\ndef deco(f):\n    @functools.wraps(f)\n    def g(*a):\n        return f(*a)\n"
        "    return functools.update_wrapper(g, f, assigned=('__doc__',))\n", set()),
    "a keyword named at run time": ("import numpy\nnumpy.zeros(3).resize(4, **{K: False})\n",
                                    {("computed-attribute", WITHHOLD), ("unchecked-memory", WITHHOLD)}),
    "type in a dataclass field whose .type is read": (
        "import dataclasses\nimport numpy\n@dataclasses.dataclass\nclass C:\n    k: numpy.ndarray = None\n\n\n"
        "T = dataclasses.fields(C)[0].type\n", {("unchecked-memory", WITHHOLD)}),
    # honest9's rc_04, rc_12, rc_13 and a numpy alias: annotations not read back, get_origin compared
    "honest: fields() for names, a type alias in annotations, get_origin compared, masked arrays": (
        "import dataclasses\nimport typing\nimport numpy\nimport torch\n@dataclasses.dataclass(frozen=True)\n"
        "class Kind:\n    block: type\n\n    def names(self):\n        return [f.name for f in dataclasses.fields(self)]"
        "\n\n\nBlockClass = type[torch.nn.Module]\nArrayLike = typing.Union[numpy.ndarray, torch.Tensor]\n\n\n"
        "def f(cls: BlockClass, x: ArrayLike, hint=None) -> ArrayLike:\n"
        "    if typing.get_origin(hint) is typing.Literal:\n        return typing.get_args(hint)\n"
        "    return numpy.ma.masked_array(numpy.asarray(x)), numpy.matrix([[1]])\n", set()),
    "type in a dataclass field read back": (
        "import dataclasses\n@dataclasses.dataclass\nclass C:\n    k: type = int\n\n\n"
        "T = dataclasses.fields(C)[0].type\n", {("protocol", WITHHOLD)}),
    "a metaclass through typing.Type": ("import typing\nclass M(typing.Type[int]):\n    pass\n",
                                        {("protocol", WITHHOLD)}),
    "a metaclass through typing.Type unsubscripted": ("from typing import Type\nclass M(Type):\n    pass\n",
                                                      {("protocol", WITHHOLD)}),
    "type in typing.get_type_hints": ("import typing\ndef f(x: type):\n    pass\n\n\nT = typing.get_type_hints(f)\n",
                                      {("protocol", WITHHOLD)}),
    # honest7's rc_18: a Literal's choices read with get_args, which hands back only what the subscript wrote
    "honest: get_args of a Literal, typing.Type in annotations": (
        "from typing import Literal, Type, get_args\nNorm = Literal['pre', 'post']\n\n\n"
        "def f(norm: Norm, cls: Type[int]) -> bool:\n    return norm in get_args(Norm)\n", set()),
    "type in a parameter's annotation read back": (
        "from functools import singledispatch\n@singledispatch\ndef f(x):\n    pass\n\n\n@f.register\n"
        "def _(x: type):\n    pass\n", {("protocol", WITHHOLD)}),
    "honest: type annotations not read back, dataclasses.fields of other annotations": (
        "import dataclasses\nfrom typing import Optional\n@dataclasses.dataclass\nclass C:\n    k: type = int\n"
        "    n: Optional[int] = None\n\n\ndef make(block_cls: type[int], c: C) -> type:\n    return block_cls\n"
        "\n\nd = {int: 1}[type(2)]\n", set()),
    "honest: dataclasses.fields with no type annotation": (
        "import dataclasses\n@dataclasses.dataclass\nclass C:\n    depth: int = 2\n\n\n"
        "names = [f.name for f in dataclasses.fields(C)]\nok = hasattr(C, 'depth')\nsetattr(C, 'depth', 3)\n",
        set()),
    # red team 9: a comparison hands each operand to the other's methods, and a match's patterns read
    # attributes and items with no attribute written out
    "type(x) compared with an object of the notebook's": (
        "class Catch:\n    def __eq__(self, other):\n        Catch.kept = other\n        return False\n\n\n"
        "CATCH = Catch()\nif type(int) == CATCH or type(int) in CATCH:\n    pass\n", {("protocol", WITHHOLD)}),
    # red team 10: a builtin's name bound in a function is whatever it holds there
    "type(x) compared with a builtin's name bound in a function": (
        "def builder(catch):\n    object = catch\n    if type(int) == object:\n        pass\n",
        {("protocol", WITHHOLD)}),
    "get_origin compared with an object of the notebook's": (
        "import typing\nif typing.get_origin(typing.Type[int]) == CATCH:\n    pass\n", {("protocol", WITHHOLD)}),
    # honest11's rc_20, rc_42, rc_46: get_origin kept in a name only compared, a match that only compares, and
    # __class__ compared by identity
    "honest: get_origin kept and compared, matched on, __class__ by identity": (
        "import typing\ndef f(h, x, fx):\n    origin = typing.get_origin(h)\n    if origin is typing.Literal:\n"
        "        return 1\n    match typing.get_origin(h):\n        case typing.Union | None:\n            return 2\n"
        "    return x.__class__ is fx.__class__\n", set()),
    "get_origin kept and called": (
        "import typing\ndef f(h):\n    origin = typing.get_origin(h)\n    if origin is None:\n        return 1\n"
        "    return origin('W', (), {})\n", {("protocol", WITHHOLD)}),
    "honest: type and get_origin compared with Python's and the libraries' own": (
        "import typing\nimport torch\ndef f(hint, x):\n    if typing.get_origin(hint) == typing.Literal or "
        "type(x) == torch.Tensor or type(x) in (int, float) or type(x) != type(hint):\n        return 1\n", set()),
    "a class pattern's keyword reading __class__": (
        "match int:\n    case object(__class__=Builder):\n        pass\n", {("dunder", WITHHOLD)}),
    "a class pattern's keywords reaching a private module": (
        "import torch.nn.functional\nmatch torch.nn.functional:\n    case object(torch=object(_C=c)):\n        pass\n",
        {("private-attribute", WITHHOLD)}),
    "a class pattern's type= reading a dataclass field's annotation back": (
        "import dataclasses\n@dataclasses.dataclass\nclass C:\n    k: type = int\n\n\n"
        "match dataclasses.fields(C)[0]:\n    case dataclasses.Field(type=T):\n        pass\n",
        {("protocol", WITHHOLD)}),
    "__match_args__ from computed names": ("class C:\n    __match_args__ = tuple(names)\n", {("protocol", WITHHOLD)}),
    "honest: match on values, a mapping, a sequence and a class's public fields": (
        "import dataclasses\n@dataclasses.dataclass\nclass Cfg:\n    norm: str = 'pre'\n    depth: int = 2\n\n\n"
        "def pick(kind, cfg):\n    match kind:\n        case 'pre' | 'post':\n            return kind\n"
        "        case {'norm': str(n)}:\n            return n\n        case [a, *_]:\n            return a\n"
        "    match cfg:\n        case Cfg(norm='pre', depth=d):\n            return d\n"
        "        case _:\n            raise ValueError(kind)\n", set()),
    # red team 30: a class body's __dict__ is what obj.__dict__ hands out, and functools.update_wrapper copies it
    # onto another object's namespace; bound by an annotation, a walrus or a loop it was no assignment the rule read
    "__dict__ bound in a class body by an annotation": ("class W:\n    __dict__: dict = STATE\n",
                                                        {("dunder", WITHHOLD)}),
    "__dict__ bound in a class body by a walrus": ("class W:\n    (__dict__ := STATE)\n", {("dunder", WITHHOLD)}),
    "__dict__ bound in a class body by a loop": ("class W:\n    for __dict__ in [STATE]:\n        pass\n",
                                                 {("dunder", WITHHOLD)}),
    "__class__ and __torch_function__ bound by a loop and an annotation": (
        "class W:\n    for __class__ in [ValueError]:\n        pass\n    __torch_function__: classmethod = f\n",
        {("override", FLAG)}),
}


def test_get_origin_kept_in_one_cell_and_called_in_another_is_held():
    """A name bound to typing.get_origin is only read where every read of it, in every cell, is a comparison:
    compared in its own cell and called in the next, it holds the class get_origin handed back."""
    residual = dict((label, src) for label, src, _ in solution(RESIDUAL_NB))["residual"]
    kept = "import typing\norigin = typing.get_origin(typing.Type[int])\nif origin is None:\n    pass\n\n\n" \
           "def residual_add(x, fx):\n    return x + fx\n"
    cells = with_cells(RESIDUAL_NB, residual_add=kept, residual="W = origin('W', (), {})\n\n\n" + residual)
    assert ("protocol", WITHHOLD) in rules(policy.check_cells(cells, RESIDUAL))
    assert rules(policy.check_cells(with_cells(RESIDUAL_NB, residual_add=kept), RESIDUAL)) == set()


@pytest.mark.parametrize("name", RAW_MEMORY)
def test_code_that_hands_a_library_a_raw_address_is_held(name):
    source, expected = RAW_MEMORY[name]
    assert rules(policy.check(source, RESIDUAL)) == expected


@pytest.mark.parametrize("source, found", [
    # honest7's rc_09 and rc_19: the builtin type as an annotation is a declaration, not a class held
    ("def stack(block_cls: type, n: int) -> list:\n    return [block_cls() for _ in range(n)]\n", set()),
    ("def pick(name: str) -> type[nn.Module] | None:\n    return nn.GELU if name else None\n", set()),
    ("import dataclasses\n@dataclasses.dataclass\nclass Cfg:\n    block: type = nn.Linear\n", set()),
    ("def f():\n    kind: type = nn.Linear\n    return kind\n", set()),
    ("def f():\n    kind: type = type\n    return kind\n", {("protocol", WITHHOLD)}),           # held, as a value
    ("def f(block_cls=type):\n    return block_cls\n", {("protocol", WITHHOLD)}),
    # rc_21: a data-model method handed on to the base class
    ("class B(nn.Sequential):\n    def __repr__(self):\n        return 'pre ' + super().__repr__()\n\n"
     "    def __getitem__(self, i):\n        return super(B, self).__getitem__(i)\n", set()),
    ("class B(nn.Module):\n    def f(self, name):\n        return super().__getattribute__(name)\n",
     {("dunder", WITHHOLD)}),
    ("class B(nn.Module):\n    def f(self):\n        return super().__reduce_ex__(2), self.__repr__()\n",
     {("dunder", WITHHOLD)}),
    # honest10's rc_27: an operator's method called by name does what the operator does, on any object
    ("def f(x, fx, sub, blocks):\n    return x.__add__(fx), sub.__call__(x), blocks.__len__(), x.__repr__()\n", set()),
    ("def f(x):\n    return x.__reduce_ex__(2)\n", {("dunder", WITHHOLD)}),   # how it is pickled: not an operator's
    # duck typing: hasattr answers whether an object has one of Python's special names, never hands it out
    ("def f(x):\n    return hasattr(x, '__call__') or hasattr(x, '__len__')\n", set()),
    ("def f(x):\n    return hasattr(x, '__dict__'), getattr(x, '__call__')\n", {("dunder", WITHHOLD)}),
    # rc_28: a private name given through register_buffer (nanoGPT's mask) or setattr is the notebook's own
    ("class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.register_buffer('_mask', torch.ones(2, 2))\n        setattr(self, '_scale', 2.0)\n\n"
     "    def forward(self, x):\n        return x * self._mask * self._scale\n", set()),
    ("class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.register_buffer('_buffers', torch.ones(2))\n\n    def forward(self, x):\n"
     "        return self._buffers\n", {("private-attribute", WITHHOLD)}),          # nn.Module's own stays its
])
def test_honest_declarations_base_calls_and_registered_names(source, found):
    """The builtin type in an annotation, an operator's method called by name (on super() or any object) or asked
    for by hasattr, and a private name the notebook gives its module by register_buffer or setattr read nothing of
    a library's; holding type as a value, other dunders read off super() or off any other object, and
    nn.Module's own private names still do."""
    cells = with_cells(RESIDUAL_NB, residual_add="import torch\nfrom torch import nn\n" + source +
                       "\n\ndef residual_add(x, fx):\n    return x + fx\n")
    assert {(v.rule, v.severity) for v in policy.check_cells(cells, RESIDUAL) if v.cell == "residual_add"} == found


@pytest.mark.parametrize("line, found", [
    # honest7's rc_29: torch.optim.SGD(...) was allowed and `from torch.optim import SGD` held for review
    ("from torch.optim import SGD\nfrom torch.nn.init import zeros_\nimport torch.autograd", set()),
    ("from numpy.linalg import norm\nimport collections.abc", set()),
    ("import torch.utils.data", {("process-introspection", WITHHOLD)}),      # as torch.utils.data is
    ("from torch.library import Library", {("process-introspection", WITHHOLD)}),   # as torch.library is
    ("import numpy.ctypeslib", {("process-introspection", WITHHOLD)}),
    ("from torch._dynamo import config", {("private-attribute", WITHHOLD)}),
])
def test_a_submodule_of_an_allowed_package_is_read_as_its_path(line, found):
    """An allowed package's submodule, imported, is the path the attribute form reads (from torch.optim import
    SGD is torch.optim.SGD), with its rules: no import rule of its own, and the paths that reach the process
    held as they are held written out."""
    cells = with_cells(RESIDUAL_NB, residual_add=line + "\n\n\ndef residual_add(x, fx):\n    return x + fx\n")
    assert {(v.rule, v.severity) for v in policy.check_cells(cells, RESIDUAL) if v.cell == "residual_add"} == found


@pytest.mark.parametrize("line, found", [
    ("out = torch.library.wrap_triton(kernel)[(1,)](x)", set()),
    ("from torch.library import wrap_triton\nout = wrap_triton(kernel)[(1,)](x)", set()),
    ("launch = torch.library.wrap_triton\nout = launch(kernel)[(1,)](x)", set()),
    # the rest of torch.library replaces torch's own operators: held as before, beside wrap_triton too
    ("from torch.library import wrap_triton, Library", {("process-introspection", WITHHOLD)}),
    ("torch.library.Library('aten', 'IMPL')", {("process-introspection", WITHHOLD)}),
    ("lib = torch.library\nout = lib.wrap_triton(kernel)[(1,)](x)", {("process-introspection", WITHHOLD)}),
    ("from torch import library", {("process-introspection", WITHHOLD)}),
])
def test_wrap_triton_is_the_one_name_of_torch_library_a_solution_may_use(line, found):
    """torch.library.wrap_triton (PyTorch's way to let torch.compile trace a Triton launch) launches the kernel it
    is given, as kernel[grid](...) does: by its path or imported by name it trips nothing; torch.library itself,
    and any other name of it (Library, impl), still reach torch's own operators (h17_wrap_triton held 15 points)."""
    cells = with_cells(FUSED_NB, fused_add_layernorm=line + "\n\n\ndef fused_add_layernorm(x, fx, weight, bias, "
                       "eps=1e-5):\n    return x, fx\n")
    assert {(v.rule, v.severity) for v in policy.check_cells(cells, FUSED) if v.cell == "fused_add_layernorm"} == found


@pytest.mark.parametrize("line, found", [
    ("from torch import sparse_coo_tensor", {("unchecked-memory", WITHHOLD)}),     # imported by name,
    ("import torch.sparse", {("unchecked-memory", WITHHOLD)}),                     # or as a module
    ("Spec = type('Spec', (nn.Module,), {}, **options)", {("protocol", WITHHOLD)}),   # arguments it cannot read
    ("Made = type(layer)(*spec)", {("protocol", WITHHOLD)}),           # a metaclass called on them
    ("class Block(nn.Module):\n    def kind(self):\n        return __class__", {("dunder", WITHHOLD)}),
])
def test_each_withhold_site_that_no_sample_trips_still_finds_its_construct(line, found):
    """The withhold findings that no sample, no hostile notebook and no red team's notebook reaches first (a
    coverage run of this file found them unexercised): each still finds what it names."""
    cells = with_cells(RESIDUAL_NB, residual_add="import torch\nfrom torch import nn\n" + line +
                       "\n\n\ndef residual_add(x, fx):\n    return x + fx\n")
    assert rules(v for v in policy.check_cells(cells, RESIDUAL) if v.cell == "residual_add") == found


@pytest.mark.parametrize("assignment, path, found", [
    ("residual-connections", "torch.nn.functional.np", set()),                      # numpy: an import it allows
    ("fused-add-norm", "torch.nn.functional.np", {("import", WITHHOLD)}),           # outside its imports,
    ("fused-add-norm", "torch.nn.functional.np.zeros", {("import", WITHHOLD)}),     # as `import numpy` is
    ("fused-add-norm", "typing.operator", {("import", WITHHOLD)}),                  # the standard library's
    ("fused-add-norm", "typing.sys", {("process-introspection", WITHHOLD)}),
])
def test_a_module_reached_as_another_modules_attribute_is_judged_as_its_import(assignment, path, found):
    """A path that reaches a module under another's name finds what `import` of that module finds: a module
    outside the assignment's imports held, an installed library's or the standard library's, a process module
    held as process-introspection."""
    rules_of = {"residual-connections": RESIDUAL, "fused-add-norm": FUSED}[assignment]
    source = f"import torch\nimport typing\nimport torch.nn.functional\nx = {path}\n"
    assert {(v.rule, v.severity) for v in policy.check(source, rules_of) if v.rule != "forbidden-module"} == found


STAND_INS = """
import json, sys
from autograder import course
from nbtest import buffers, policy, uncompiled
if sys.argv[1] == "installed":
    uncompiled.install()
    buffers.install()
rules = policy.for_assignment(course.load().assignment("residual-connections").rules)
source = ("import torch\\nmean = torch.compile(lambda t: t.mean())\\nb = torch.asarray([1.0])\\n"
          "c = torch.frombuffer(bytearray(8), dtype=torch.uint8)\\nd = torch.jit.load\\n")
print(json.dumps(sorted(str(v) for v in policy.check(source, rules))))
"""


def test_the_policy_finds_the_same_where_nbtests_stand_ins_are_installed():
    """The public tests' process has put nbtest's stand-ins in torch's place (torch.compile, torch.asarray,
    torch.frombuffer) by the time the rules test runs; the grader's has not. A path is judged by what the library
    defines there, so the same code gets the same findings in both (honest idioms-2 compiles with torch.compile)."""
    found = [subprocess.run([sys.executable, "-c", STAND_INS, how], capture_output=True, text=True, check=True,
                            cwd=ROOT).stdout for how in ("plain", "installed")]
    assert found[0] == found[1] and "torch.jit" in found[0], found


# honest round 14: a kernel decorator's arguments read from module constants and tables, and data ordered by a
# builtin key or made by a string's method
KERNEL_SOURCE = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"]


@pytest.mark.parametrize("before, decorators, found", [
    ("WARPS = tuple(2 ** k for k in range(1, 4))\nCONFIGS = [triton.Config({}, num_warps=w) for w in WARPS]\n\n\n",
     "@triton.autotune(configs=CONFIGS, key=['n_cols'])\n", set()),
    ("STAGES = dict(zip(('few', 'many'), (1, 2)))\n\n\n",
     "@triton.autotune(configs=[triton.Config({}, num_stages=s) for s in STAGES.values()], key=['n_cols'])\n", set()),
    ("TABLE = {w: triton.Config({}, num_warps=w) for w in sorted({4, 8}, reverse=True)}\n\n\n",
     "@triton.autotune(configs=list(TABLE.values()), key=['n_cols'])\n", set()),
    ("def pow2(args):\n    return triton.next_power_of_2(args['n_cols'])\n\n\nHEURISTICS = {'BLOCK': pow2}\n"
     "RULE = lambda args: triton.next_power_of_2(args['n_cols'])\n\n\n",
     "@triton.heuristics(HEURISTICS)\n@triton.heuristics(values={'BLOCK': RULE})\n", set()),
    ("CONFIGS = [triton.Config({}, num_warps=4)]\nCONFIGS.append(print)\n\n\n",
     "@triton.autotune(configs=CONFIGS, key=['n_cols'])\n", {("kernel-decorator", FLAG)}),
    ("def steal(args):\n    return args['x_ptr'].numpy()\n\n\nHEURISTICS = {'BLOCK': steal}\n\n\n",
     "@triton.heuristics(HEURISTICS)\n", {("kernel-decorator", FLAG)}),
    # honest round 18: the next power of two by an int's bit_length, inline or in a def the lambda calls
    ("def _block_for(n):\n    return 1 << (n - 1).bit_length()\n\n\n",
     "@triton.heuristics({'BLOCK': lambda args: _block_for(args['n_cols'])})\n", set()),
    ("", "@triton.heuristics({'BLOCK': lambda args: 1 << (args['n_cols'] - 1).bit_length()})\n", set()),
], ids=["configs-over-a-constant", "configs-over-a-table", "configs-from-a-table", "heuristics-named",
        "configs-stored-into", "heuristic-reading-values", "bit-length-in-a-def", "bit-length-inline"])
def test_a_kernel_decorators_arguments_may_be_module_constants_nothing_changes(before, decorators, found):
    body = before + KERNEL_SOURCE.replace("@triton.jit\n", decorators + "@triton.jit\n", 1)
    assert body != before + KERNEL_SOURCE
    got = kernel_rules(body)
    assert found <= got if found else got == set()


def test_a_kernel_may_read_a_pointers_element_type_through_its_type():
    """honest round 18: Triton's fused-attention tutorial stores acc.to(Out.type.element_ty)."""
    body = KERNEL_SOURCE.replace("y_ptr.dtype.element_ty", "y_ptr.type.element_ty")
    assert body != KERNEL_SOURCE
    assert kernel_rules(body) == set()


# honest round 17: configs written in the decorator or returned by a def, unpacking pairs, over range or zip, with
# a condition; a range of the notebook's own, or a def's call given data, is no plain data
@pytest.mark.parametrize("before, configs, found", [
    ("", "[triton.Config({}, num_warps=w, num_stages=s) for w, s in ((4, 1), (8, 2))]", set()),
    ("", "[triton.Config({}, num_stages=s) for s in range(1, 4)]", set()),
    ("", "[triton.Config({}, num_warps=w, num_stages=s) for w, s in zip((4, 8), (1, 2)) if w * s <= 16]", set()),
    ("", "[triton.Config({}, num_warps=w) for w in [2 ** k for k in range(1, 4)]]", set()),
    ("def configs():\n    return [triton.Config({}, num_warps=w, num_stages=s) for w, s in ((4, 1), (8, 2))]\n\n\n",
     "configs()", set()),
    ("def range(*args):\n    return [print]\n\n\n", "[triton.Config({}, num_stages=s) for s in range(1, 4)]",
     {("kernel-decorator", FLAG)}),
    ("def stages(n):\n    return [n]\n\n\n", "[triton.Config({}, num_stages=s) for s in stages(2)]",
     {("kernel-decorator", FLAG)}),
], ids=["pairs-unpacked", "over-range", "zip-with-a-condition", "over-a-comprehension", "def-of-pairs",
        "range-of-its-own", "a-defs-call"])
def test_a_kernel_decorators_configs_may_be_a_comprehension_of_plain_data(before, configs, found):
    decorators = f"@triton.autotune(configs={configs}, key=['n_cols'])\n"
    got = kernel_rules(before + KERNEL_SOURCE.replace("@triton.jit\n", decorators + "@triton.jit\n", 1))
    assert found <= got if found else got == set()


@pytest.mark.parametrize("helper, found", [
    ("def block_for(n):\n    \"\"\"A power of two of n's.\"\"\"\n    return max(16, triton.next_power_of_2(n))\n", set()),
    ("def block_for(n):\n    return triton.next_power_of_2(n.tolist()[0])\n", {("kernel-decorator", FLAG)}),
    ("def block_for(n):\n    return block_for(n)\n", {("kernel-decorator", FLAG)}),
    ("def block_for(n, scale=torch.ones(1)):\n    return n\n", {("kernel-decorator", FLAG)}),
], ids=["arithmetic", "reads-values", "recursive", "default"])
def test_a_heuristic_may_call_a_def_of_launch_arithmetic(helper, found):
    decorated = KERNEL_SOURCE.replace("@triton.jit\n", "@triton.heuristics({'BLOCK': lambda args: "
                                      "block_for(args['n_cols'])})\n@triton.jit\n", 1)
    got = kernel_rules(helper + "\n\n" + decorated)
    assert found <= got if found else got == set()


@pytest.mark.parametrize("helper, decorator, kernel_line, found", [
    ("def abs(n, *rest):\n    return n\n", "@triton.heuristics({'BLOCK': lambda args: abs(args['n_cols'])})\n", "",
     {("kernel-decorator", FLAG)}),
    ("def max(a, b):\n    return b.tolist()[0]\n", "@triton.heuristics({'BLOCK': lambda args: block_for(args['n_cols'])})\n", "",
     {("kernel-decorator", FLAG)}),
    ("def range(n):\n    return [0]\n", "", "    for _ in range(1):\n        pass\n", {("kernel-python", FLAG)}),
    ("", "", "    for _ in range(1):\n        pass\n", set()),
], ids=["heuristic", "heuristic-def", "kernel", "honest-range"])
def test_a_builtin_bound_again_is_no_kernel_builtin(helper, decorator, kernel_line, found):
    block_for = "def block_for(n):\n    return max(16, triton.next_power_of_2(n))\n"
    kernel = KERNEL_SOURCE.replace("@triton.jit\n", decorator + "@triton.jit\n", 1)
    kernel = kernel.replace("    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n" + kernel_line, 1)
    assert kernel != KERNEL_SOURCE or not (decorator or kernel_line)
    got = kernel_rules(helper + block_for + "\n\n" + kernel)
    assert found <= got if found else got == set()


# honest round 15: autotune's arguments from a class of constants, or from a def whose parameters default to literals
TUNING = "class Tuning:\n    \"\"\"Launch constants.\"\"\"\n    WARPS = (1, 2, 4)\n    KEY = ['n_cols']\n\n\n"


@pytest.mark.parametrize("before, decorators, found", [
    (TUNING, "@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in Tuning.WARPS], key=Tuning.KEY)\n",
     set()),
    (TUNING + "def configs(stages=1):\n    return [triton.Config({}, num_warps=w, num_stages=stages) "
              "for w in Tuning.WARPS]\n\n\n", "@triton.autotune(configs=configs(), key=['n_cols'])\n", set()),
    (TUNING + "Tuning.KEY.append(print)\n\n\n", "@triton.autotune(configs=[triton.Config({})], key=Tuning.KEY)\n",
     {("kernel-decorator", FLAG)}),
    ("class Tuning:\n    WARPS = (1, 2)\n\n    def more(self):\n        return print\n\n\n",
     "@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in Tuning.WARPS], key=['n_cols'])\n",
     {("kernel-decorator", FLAG)}),
    ("class Tuning:\n    CONFIGS = [triton.Config({}, num_warps=w) for w in (1, 2)]\n\n\n",
     "@triton.autotune(configs=Tuning.CONFIGS, key=['n_cols'])\n", set()),
    # red team 16: a name the class body binds again in an annotation, which no value shows
    ("def _block(args):\n    return args['x_ptr'].tolist()\n\n\nclass Tuning:\n    BLOCK = None\n"
     "    WARPS: (BLOCK := _block) = 4\n\n\n", "@triton.heuristics({'BLOCK': Tuning.BLOCK})\n",
     {("kernel-decorator", FLAG)}),
], ids=["class-constants", "def-with-defaults", "class-constant-changed", "class-with-a-def", "class-comprehension",
        "annotation-walrus"])
def test_a_kernel_decorator_may_read_a_class_of_constants(before, decorators, found):
    body = before + KERNEL_SOURCE.replace("@triton.jit\n", decorators + "@triton.jit\n", 1)
    got = kernel_rules(body)
    assert found <= got if found else got == set()


def test_a_heuristic_parameter_named_as_a_builtin_is_no_builtin():
    decorated = KERNEL_SOURCE.replace("@triton.jit\n", "@triton.heuristics({'BLOCK': lambda args: "
                                      "block_for(args['n_cols'], args['n_cols'])})\n@triton.jit\n", 1)
    helper = "def block_for(min, n):\n    return min(n) + 16\n\n\n"
    got = kernel_rules(helper + decorated)
    assert ("kernel-decorator", FLAG) in got


def test_heuristic_helpers_are_read_once_each(monkeypatch):
    """A heuristic's helper defs, each calling the one below twice, are each read once: they were read again at
    every call, 2^18 readings for 18 levels (red team 39: a 1 KiB notebook held its batch for hours, out of any
    budget, since the policy runs in the grader's own process)."""
    from nbtest import kernel_rules
    levels = 30
    helpers = "def block_0(n):\n    return triton.next_power_of_2(n)\n\n\n" + "".join(
        f"def block_{i}(n):\n    return max(block_{i - 1}(n), block_{i - 1}(n))\n\n\n" for i in range(1, levels))
    kernel = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"].replace(
        "@triton.jit", f'@triton.heuristics({{"BLOCK": lambda args: block_{levels - 1}(args["n_cols"])}})\n@triton.jit', 1)
    readings = []
    real = kernel_rules._Kernel.launch_arithmetic
    monkeypatch.setattr(kernel_rules._Kernel, "launch_arithmetic",
                        lambda self, *args: readings.append(1) or real(self, *args))
    assert policy.check_cells(with_cells(FUSED_NB, fused_kernel=helpers + kernel), FUSED) == []
    assert 0 < len(readings) <= 2 * levels


@pytest.mark.parametrize("decorator, held", [
    ('@triton.autotune(configs=[triton.Config({}, num_warps=w, num_stages=s)\n'
     '                          for w, s in itertools.product((2, 4), (1, 2))], key=["n_cols"])', False),
    ('@triton.heuristics({"LOG_N": lambda args: math.ceil(math.log2(args["n_cols"]))})', False),
    ('@triton.heuristics({"FP32": lambda args: args["x_ptr"].dtype == torch.float32})', False),
    ('@triton.heuristics({"WIDE": wide})', False),
    ('@triton.heuristics({"W": warps})', False),
    ('@triton.heuristics({"N": lambda args: torch.cuda.device_count()})', True),
    ('@triton.heuristics({"N": copies})', True),
])
def test_launch_arithmetic_of_allowed_modules_and_plain_defs_passes(decorator, held):
    """A kernel decorator's arguments run inside the launch, on its tensors: numbers of math and itertools, a dtype
    compared, and a def of several statements of such arithmetic are honest (red team 39: each held 10 points);
    reaching torch.cuda or calling a tensor's methods is not."""
    defs = ("import itertools\nimport math\n\n\ndef wide(args):\n    n = args[\"n_cols\"]\n    if n <= 1024:\n"
            "        return False\n    return True\n\n\ndef copies(args):\n    t = args[\"x_ptr\"]\n    t.copy_(t)\n"
            "    return 1\n\n\ndef warps(args):\n    w, most = 1, 16\n    w: int = w\n"
            "    while w * 256 < args[\"n_cols\"] and w < most:\n        w *= 2\n    return w\n\n\n")
    kernel = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"].replace(
        "@triton.jit", decorator + "\n@triton.jit", 1)
    found = rules(policy.check_cells(with_cells(FUSED_NB, fused_kernel=defs + kernel), FUSED))
    assert found == ({("kernel-decorator", FLAG)} if held else set()), found


def test_what_a_kernels_defaults_and_heuristics_reach_keeps_its_def():
    """The kernel rules read a heuristic's helper, a table's def and a default's class of constants by their last
    binding, so each is checked for being bound again, as the names a decorator writes are (red team 39: each,
    bound again to an object of the notebook's, ran Python on the blocks, 40 to its twin's 37.33)."""
    kernel = textwrap.dedent('''
        class Tune:
            EPS = 1e-5


        def fix_for(n):
            return n


        def pick(args):
            n = args["n_cols"]
            return fix_for(n)


        def wide(args):
            return args["n_cols"] > 1024


        fix_for = max
        Tune = dict
        wide = min
        HEURISTICS = {"FIX": pick, "WIDE": wide}


        @triton.heuristics(HEURISTICS)
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr,
                                       FIX: tl.constexpr, WIDE: tl.constexpr, E: tl.constexpr = Tune.EPS):
            pass
        ''')
    found = policy.check_cells(with_cells(FUSED_NB, fused_kernel=kernel), FUSED)
    assert {v.quote.split(" = ")[0] for v in found if v.rule == "rebound"} == {"fix_for", "Tune", "wide"}, found


@pytest.mark.parametrize("scratch, expected", [
    ("def remember(v):\n    global max\n    max = v\n", set()),                 # never called: never runs
    ("def remember(v):\n    global max\n    max = v\n\n\nremember(min)\n", {("kernel-python", FLAG)}),
    # Python calls a module's __getattr__ for a name it lacks (a protocol finding of its own, too)
    ("def __getattr__(name):\n    global max\n    max = min\n", {("kernel-python", FLAG), ("protocol", WITHHOLD)}),
])
def test_a_global_binds_a_builtins_name_only_where_its_def_may_run(scratch, expected):
    """A kernel's `max` is Python's unless the notebook binds the name, by a `global` too (red team 39: abs bound to a
    constexpr function that computed y in NumPy); a `global` in a scratch def that nothing calls binds nothing, and
    flagged honest kernels (red team 39: 26.67 of 40)."""
    kernel = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"].replace(
        "var = tl.sum(centred * centred, axis=0) / n_cols", "var = max(tl.sum(centred * centred, axis=0) / n_cols, 0.0)")
    found = policy.check_cells(with_cells(FUSED_NB, fused_kernel=scratch + "\n\n" + kernel), FUSED)
    assert rules(found) == expected, found


@pytest.mark.parametrize("source, held", [
    ("from torch.nn import Transformer\nmask = Transformer.generate_square_subsequent_mask(4)\n", False),
    ("from torch.nn import Transformer as TF\nmask = TF.generate_square_subsequent_mask(4)\n", False),
    ("from torch.nn import Transformer\nmask = Transformer.generate_square_subsequent_mask(4)\n"
     "layer = Transformer(8, 2)\n", True),
])
def test_transformer_imported_for_its_mask_helper_alone_is_no_transformer_class(source, held):
    """nn.Transformer's causal-mask helper is a static function, not a layer: imported by name and read only as
    Transformer.generate_square_subsequent_mask, the import was flagged all the same (red team 39: 97 of 100)."""
    found = rules(policy.check_cells(with_cells(RESIDUAL_NB, transformer_block=source), RESIDUAL))
    assert found == ({("transformer-class", FLAG)} if held else set()), found
