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
from nbtest import cellcode, policy
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
    ("residual-connections", "reads-solutions"): {("import", FLAG), ("process-introspection", WITHHOLD),
                                                  ("dynamic-code", WITHHOLD)},
    ("residual-connections", "segfault-at-import"): {("process-introspection", WITHHOLD)},
    ("residual-connections", "crash-at-import"): {("import", WITHHOLD)},     # a module outside course.toml's list
    ("residual-connections", "exits-at-import"): {("process-introspection", WITHHOLD)},
    ("fused-add-norm", "torch-only-wrapper"): {("wrapper-no-launch", FLAG), ("wrapper-arithmetic", FLAG),
                                               ("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "launch-per-row"): {("wrapper-launch-loop", FLAG)},
    ("fused-add-norm", "torch-side-add"): {("wrapper-arithmetic", FLAG)},
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
    ("residual-connections", "reach-attrgetter"): {("import", FLAG), ("private-attribute", WITHHOLD),
                                                   ("process-introspection", WITHHOLD)},
    # getattr under another name handed the module torch: a module held or passed hides its paths
    # the reply frame written through gzip, reached as torch.profiler.profiler.gzip: a module outside the
    # assignment's imports, flagged as its import would be
    ("residual-connections", "forged-reply-frame"): {("import", FLAG)},
    ("residual-connections", "reach-alias-getattr"): {("process-introspection", WITHHOLD),
                                                      ("computed-attribute", WITHHOLD)},
    ("residual-connections", "reach-alias-partial"): {("process-introspection", WITHHOLD),
                                                      ("computed-attribute", WITHHOLD)},
    ("residual-connections", "reach-own-private-name"): {("process-introspection", WITHHOLD),
                                                         ("private-attribute", WITHHOLD)},
    # the gradients' reads answered by a torch function mode (MODES): the monitor alone sees them (a mode
    # still active after the cell, test_grader.py); here only their imports (contextlib, and torch.overrides,
    # read as its path) and a class statement's override are flagged
    ("residual-connections", "reach-dynamic-class-call"): {("import", FLAG), ("process-introspection", WITHHOLD)},
    ("residual-connections", "reach-dynamic-class-metaclass"): {("import", FLAG), ("process-introspection", WITHHOLD)},
    ("residual-connections", "reach-torch-mode-generator"): {("import", FLAG), ("process-introspection", WITHHOLD),
                                                             ("override", FLAG)},
    ("residual-connections", "reach-torch-mode-entered"): {("import", FLAG), ("process-introspection", WITHHOLD),
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
    ("residual-connections", "abcmeta-retypes-error"): {("protocol", WITHHOLD)},
    ("residual-connections", "methodcaller-refcheck-retypes-error"): {("computed-attribute", WITHHOLD),
                                                                      ("import", FLAG)},
    # red team round 9: type kept by an object's __eq__ it is compared with, read by a match's class pattern
    ("residual-connections", "compare-type-retypes-error"): {("protocol", WITHHOLD)},
    ("residual-connections", "match-class-retypes-error"): {("dunder", WITHHOLD)},
    # and by torch alone, adding a sparse tensor whose index lies at the address
    ("residual-connections", "sparse-retypes-error"): {("unchecked-memory", WITHHOLD)},
    # a storage read to tell the read-back call apart: storages shrink under their views
    ("residual-connections", "tells-read-back-storage"): {("unchecked-memory", WITHHOLD)},
    ("residual-connections", "hides-encoder-layer"): {("dunder", WITHHOLD), ("transformer-class", FLAG)},
    ("residual-connections", "forged-structure-report"): {("dynamic-code", WITHHOLD), ("transformer-class", FLAG)},
    ("fused-add-norm", "forged-launch-trace"): {("process-introspection", WITHHOLD), ("wrapper-no-launch", FLAG),
                                                ("wrapper-arithmetic", FLAG), ("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "numpy-wrapper"): {("import", WITHHOLD), ("forbidden-module", FLAG), ("numpy", FLAG),
                                          ("wrapper-no-launch", FLAG), ("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "numpy-empty-kernel"): {("import", WITHHOLD), ("forbidden-module", FLAG), ("numpy", FLAG),
                                               ("wrapper-torch-op", FLAG)},
    # fusion shown to the tracer but not done by the kernel: the graded name rebound, a constexpr object
    ("fused-add-norm", "by-hand-wrapper"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "rebound-by-assignment"): {("wrapper-rebound", FLAG)},
    ("fused-add-norm", "rebound-by-decorator"): {("wrapper-rebound", FLAG)},
    # the object handed to the kernel is a module-level object of the notebook's own, read in the wrapper
    ("fused-add-norm", "constexpr-method"): {("kernel-python", FLAG), ("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "constexpr-item-method"): {("kernel-python", FLAG), ("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "constexpr-operator"): {("wrapper-torch-op", FLAG), ("wrapper-arithmetic", FLAG)},
    ("fused-add-norm", "object-method"): {("wrapper-torch-op", FLAG)},
    # an empty kernel, and h and y computed where the policy cannot name the callee, or in a heuristic
    ("fused-add-norm", "torch-under-another-name"): {("wrapper-torch-op", FLAG), ("process-introspection", WITHHOLD)},
    ("fused-add-norm", "numpy-through-the-class"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "heuristic-computes"): {("kernel-decorator", FLAG)},
    ("fused-add-norm", "library-method-reassigned"): {("monkeypatch", FLAG)},
    # red team 18: a kernel's fn set by setattr; a decorated method given a def by register
    ("fused-add-norm", "kernel-fn-set-computes"): {("kernel-attribute", FLAG)},
    ("fused-add-norm", "method-registered-on-odd-widths"): {("wrapper-no-launch", FLAG), ("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "lists-redo-odd-widths"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "language-function-replaced"): {("monkeypatch", FLAG)},
    # red team 17: Triton's kernel class given a run of the cell's, reached through type() of a kernel
    ("fused-add-norm", "run-replaced-on-odd-widths"): {("protocol", WITHHOLD)},
    ("fused-add-norm", "run-replaced-when-untraced"): {("protocol", WITHHOLD), ("process-introspection", WITHHOLD)},
    # red team round 9: torch reached through a plain method's name, or an item, of an object of the notebook's
    ("fused-add-norm", "settings-get-computes"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "item-of-an-object-computes"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "finaliser-computes-later"): {("wrapper-torch-op", FLAG)},     # __del__ of a class it builds
    ("fused-add-norm", "tensor-class-computes"): {("wrapper-torch-op", FLAG), ("override", FLAG)},
    # red team 20: where the tracer's modes do not reach (each measured now; the wrapper rules hold them too)
    ("fused-add-norm", "tracer-modes-swapped"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "listener-thread-computes"): {("wrapper-torch-op", FLAG), ("import", FLAG)},
    ("fused-add-norm", "kernel-prints-values"): {("wrapper-torch-op", FLAG), ("import", FLAG)},
    # red team 21: the values shared with Python through a buffer a tensor views (measured now, the rules hold it too)
    ("fused-add-norm", "buffer-shared-computes"): {("wrapper-torch-op", FLAG)},
    # red team 22: the kernel's work done by the launch's grid function (measured: it runs as on a GPU now)
    ("fused-add-norm", "grid-computes"): {("wrapper-statement", FLAG)},
    # red team 23: a grid of builtins alone that reads the values (measured: what a grid runs is the notebook's)
    ("fused-add-norm", "grid-of-builtins-reads"): {("wrapper-torch-op", FLAG)},
    # red team 24: Python Triton runs for the notebook, made of builtins, and values carried out in an error (measured)
    ("fused-add-norm", "grid-entry-reads"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "tensor-attribute-reads"): {("wrapper-arithmetic", FLAG), ("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "finaliser-of-builtins-reads"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "assert-carries-values"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "generator-state-reads"): {("wrapper-launches", FLAG), ("wrapper-torch-op", FLAG)},
    # red team 25: Python torch called back inside a call of the notebook's (measured: the mode is back on there)
    ("fused-add-norm", "slice-index-reads"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "backward-reads"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "grad-release-reads"): {("wrapper-arithmetic", FLAG), ("wrapper-statement", FLAG),
                                               ("wrapper-torch-op", FLAG)},
    # red team 26: what a launch's grid leaves in, or sets on, its arguments (measured: grid_of)
    ("fused-add-norm", "grid-meta-finaliser-reads"): {("wrapper-torch-op", FLAG)},
    ("fused-add-norm", "grid-attribute-reads"): {("wrapper-torch-op", FLAG)},
    # red team round 11: code the wrapper runs unwritten, walked as called; a kernel's attribute (the launch hook
    # is MEASURED too)
    ("fused-add-norm", "launch-hook-computes"): {("kernel-attribute", FLAG)},
    ("fused-add-norm", "special-method-computes"): {("wrapper-torch-op", FLAG), ("wrapper-arithmetic", FLAG)},
    ("fused-add-norm", "handed-on-computes"): {("wrapper-torch-op", FLAG), ("wrapper-arithmetic", FLAG)},
    ("residual-connections", "held-maker-retypes-error"): {("protocol", WITHHOLD)},
    # red team round 12: an nn.Module's forward run by its __call__, a heuristic set after decoration, ParameterDict
    ("fused-add-norm", "module-forward-computes"): {("wrapper-torch-op", FLAG), ("wrapper-arithmetic", FLAG)},
    ("fused-add-norm", "heuristic-set-later-computes"): {("kernel-attribute", FLAG)},
    ("residual-connections", "parameterdict-retypes-error"): {("computed-attribute", WITHHOLD)},
    # red team round 13: a helper read before its checked def; a ParameterDict out of the holders' sight
    ("fused-add-norm", "redefined-helper-computes"): {("wrapper-rebound", FLAG)},
    ("residual-connections", "parameterdict-in-a-list-retypes-error"): {("computed-attribute", WITHHOLD)},
    # red team round 14: an import's name bound again by a def, or by an object compared with type(int)
    ("fused-add-norm", "import-rebound-computes"): {("wrapper-torch-op", FLAG), ("wrapper-arithmetic", FLAG)},
    ("residual-connections", "import-rebound-retypes-error"): {("protocol", WITHHOLD)},
    # red team round 16: a class's method set through another name
    ("fused-add-norm", "method-set-elsewhere-computes"): {("wrapper-torch-op", FLAG)},
}
FORGERIES = {"forged-mutation-report", "forged-gradients-report", "hides-encoder-layer", "forged-structure-report",
             "forged-launch-trace", "interface-retypes-error", "alias-setattr-retypes-error", "sparse-retypes-error",
             "cffi-retypes-error", "object-buffer-retypes-error", "annotations-retypes-error", "namespace-retypes-error",
             "getargs-type-retypes-error", "refcheck-kwargs-retypes-error", "ma-core-ndarray-retypes-error",
             "reexported-numpy-strided-retypes-error", "dataclasses-types-namespace-retypes-error",
             "abcmeta-retypes-error", "methodcaller-refcheck-retypes-error", "compare-type-retypes-error",
             "match-class-retypes-error", "held-maker-retypes-error", "parameterdict-retypes-error",
             "parameterdict-in-a-list-retypes-error", "import-rebound-retypes-error",
             "kernel-retypes-error", "injected-retypes-error", "run-replaced-on-odd-widths", "run-replaced-when-untraced",
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
    source, expected = NARROWED[name]
    assert rules(policy.check_cells(with_cells(RESIDUAL_NB, residual_add=source), RESIDUAL)) >= expected


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
        '''), {("process-introspection", WITHHOLD), ("wrapper-no-launch", FLAG), ("wrapper-arithmetic", FLAG),
               ("wrapper-torch-op", FLAG)}),
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
        '''), {("import", WITHHOLD), ("forbidden-module", FLAG), ("numpy", FLAG), ("wrapper-torch-op", FLAG)}),
    "values copied out element by element in Python": (dict(fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            h = torch.empty_like(x)
            for i in range(n):
                h[..., i] = float(x[..., i]) + float(fx[..., i])
            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, h, h, n, eps, BLOCK=16)
            return h, h
        '''), {("wrapper-arithmetic", FLAG)}),
    "a builtin and a local lambda compute on the tensors": (dict(fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            add = lambda a, b: a + b
            h = add(x, fx)
            total = sum(h)
            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, h, h, n, eps, BLOCK=16)
            return h, h
        '''), {("wrapper-arithmetic", FLAG)}),     # the lambda's a + b where add(x, fx) calls it, and sum(h)
    "a result class whose construction computes: not a plain NamedTuple": (dict(fused_add_layernorm='''
        from typing import NamedTuple

        class AddNorm(NamedTuple):
            h: Tensor
            y: Tensor
            scale = torch.ones(1)

        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            h, y = torch.empty_like(x), torch.empty_like(x)
            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, h, y, n, eps, BLOCK=16)
            return AddNorm(h, y)
        '''), {("wrapper-torch-op", FLAG)}),
    "two kernels: separate add and norm launches": (dict(fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            a, b = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(a), torch.empty_like(a)
            fused_add_layernorm_kernel[(a.shape[0],)](a, b, weight, bias, h, y, n, eps, BLOCK=triton.next_power_of_2(n))
            fused_add_layernorm_kernel[(a.shape[0],)](a, b, weight, bias, h, y, n, eps, BLOCK=triton.next_power_of_2(n))
            return h.view(x.shape), y.view(x.shape)
        '''), {("wrapper-launches", FLAG)}),
    "launches from a comprehension": (dict(fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            a, b = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(a), torch.empty_like(a)
            [fused_add_layernorm_kernel[(1,)](a[r], b[r], weight, bias, h[r], y[r], n, eps, BLOCK=1024)
             for r in range(a.shape[0])]
            return h.view(x.shape), y.view(x.shape)
        '''), {("wrapper-launch-loop", FLAG)}),
    "kernel body escapes to the interpreter's numpy arrays": (dict(fused_kernel='''
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
            data = x_ptr.handle.data
            import numpy
            tl.store(h_ptr, numpy.sum(data))
        '''), {("kernel-python", FLAG), ("import", WITHHOLD), ("forbidden-module", FLAG)}),   # numpy.sum, imported in the def
    "kernel default argument runs code at definition": (dict(fused_kernel='''
        @triton.jit(do_not_specialize=[__import__("sys").modules])
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr, probe=print("hi")):
            pass
        '''), {("kernel-decorator", FLAG), ("kernel-signature", FLAG), ("dynamic-code", WITHHOLD)}),
    # the wrapper computing through what the policy cannot name: torch under a module-level name, an object of the
    # notebook's own, a method a tensor's class has (type(x).numpy: NumPy arithmetic, no torch operator runs), a
    # computed callee, a constant bound again to a module (each earned both fused tests with an empty kernel)
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
        '''), {("wrapper-torch-op", FLAG), ("wrapper-arithmetic", FLAG),    # _IMPL.run followed: its x + fx
               ("process-introspection", WITHHOLD)}),    # torch held under another name hides its paths too
    "a module-level name bound to a torch function, called with unpacked tensors": (dict(fused_add_layernorm='''
        _F = torch.add


        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            h, y = torch.empty_like(x), torch.empty_like(x)
            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, h, y, n, eps, BLOCK=16)
            return _F(*(x, fx)), y
        '''), {("wrapper-torch-op", FLAG)}),
    # tensors put in a list or dict, then computed on as its items: the walk once lost them there (launches_kernel
    # paid around an empty kernel)
    "tensors laundered through lists: a module-level one, a local one, a helper's": (dict(fused_add_layernorm='''
        _S = []


        def _stash(t):
            _S.append(t)


        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            h, y = torch.empty_like(x), torch.empty_like(x)
            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, h, y, n, eps, BLOCK=16)
            _stash(x)
            kept = []
            kept.append(fx)
            return _S[-1] + kept[0], y
        '''), {("wrapper-arithmetic", FLAG)}),
    "a local holding a bound method": (dict(fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            h, y = torch.empty_like(x), torch.empty_like(x)
            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, h, y, n, eps, BLOCK=16)
            get = x.numpy
            return get(), y
        '''), {("wrapper-torch-op", FLAG)}),
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


def wrapper_with(line: str) -> str:
    """The reference wrapper with `line` (indented here) right after its `n = x.shape[-1]`."""
    body = WRAPPER_SOURCE.replace("    n = x.shape[-1]\n", f"    n = x.shape[-1]\n    {line}\n", 1)
    assert body != WRAPPER_SOURCE
    return body


def wrapper_rules(body: str) -> set[tuple[str, str]]:
    """(rule, severity) of each finding of fused-add-norm's policy with `body` as the wrapper's cell."""
    return rules(policy.check_cells(with_cells(FUSED_NB, fused_add_layernorm=body), FUSED))


def kernel_rules(body: str) -> set[tuple[str, str]]:
    """(rule, severity) of each finding of fused-add-norm's policy with `body` as the kernel's cell."""
    return rules(policy.check_cells(with_cells(FUSED_NB, fused_kernel=body), FUSED))


REBINDINGS = {
    "assignment": "fused_add_layernorm = print\n",
    "def in an if": "if True:\n    def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):\n        return x, fx\n",
    "loop target": "for fused_add_layernorm in [print]:\n    pass\n",
    "import": "from functools import partial as fused_add_layernorm\n",
    "walrus": "(fused_add_layernorm := print)\n",
    "with target": "with torch.no_grad() as fused_add_layernorm:\n    pass\n",
    "except name": "try:\n    pass\nexcept ValueError as fused_add_layernorm:\n    pass\n",
    "global": "def _swap():\n    global fused_add_layernorm\n    fused_add_layernorm = print\n",
    "kernel rebound": "fused_add_layernorm_kernel = fused_add_layernorm_kernel\n",
}


@pytest.mark.parametrize("spelling", REBINDINGS)
def test_a_checked_name_bound_again_after_its_def_is_flagged(spelling):
    """A kernel is the kernel rules' (rebound), the wrapper the wrapper rules' (wrapper-rebound)."""
    cells = with_cells(FUSED_NB, fused_add_layernorm=WRAPPER_SOURCE + "\n\n" + REBINDINGS[spelling])
    rule = "rebound" if spelling.startswith("kernel") else "wrapper-rebound"
    assert rules(policy.check_cells(cells, FUSED)) == {(rule, FLAG)}


def decorated_wrapper(decorator: str, after: str = "") -> list[tuple[str, str, bool]]:
    """The reference wrapper under a decorator, in a cell that imports functools first and ends with after."""
    source = WRAPPER_SOURCE.replace("def fused_add_layernorm(", f"{decorator}\ndef fused_add_layernorm(")
    return with_cells(FUSED_NB, fused_add_layernorm="import functools\n\n\n" + source + after)


@pytest.mark.parametrize("decorator, after", [
    ("def _replaced_by(other):\n    return lambda fn: other\n\n\n@_replaced_by(print)", ""),   # the notebook's own
    ("@functools.wraps(print)", ""),                       # a library's, handed something of the notebook's
    ("@functools.singledispatch", "\n\nfused_add_layernorm.register(list, print)\n"),   # reached into
    ("@functools.lru_cache", "\n\nsame = fused_add_layernorm\n"),                       # aliased
])
def test_a_decorator_that_could_replace_the_checked_def_is_flagged(decorator, after):
    assert rules(policy.check_cells(decorated_wrapper(decorator, after), FUSED)) == {("wrapper-rebound", FLAG)}


@pytest.mark.parametrize("decorator", ["@torch.no_grad()", "@functools.lru_cache", "@functools.lru_cache(maxsize=None)",
                                       "@torch.inference_mode()\n@functools.cache"])
def test_a_library_decorator_given_plain_data_keeps_the_def_and_a_name_bound_before_it_is_fine(decorator):
    """What such a decorator returns runs the def the grader checked: an honest wrapper under
    @torch.no_grad(), or a helper whose launch parameters are cached, trips nothing while only called."""
    assert policy.check_cells(decorated_wrapper(decorator), FUSED) == []
    assert policy.check_cells(with_cells(FUSED_NB, fused_add_layernorm="fused_add_layernorm = None\n\n"
                                         + WRAPPER_SOURCE), FUSED) == []


@pytest.mark.parametrize("annotation", ["tl.constexpr", '"constexpr"', '"tl.constexpr"'])
@pytest.mark.parametrize("use", ["OPS.sum(x)", "OPS[0]", "alias = OPS\n    alias.sum(x)"])
def test_a_constexpr_parameter_is_a_value_only(use, annotation):
    """Triton takes a parameter as constexpr when its annotation's name holds "constexpr", a string too."""
    kernel = (f"@triton.jit\ndef helper_kernel(x_ptr, OPS: {annotation}):\n"
              "    x = tl.load(x_ptr + tl.arange(0, 4))\n    " + use + "\n")
    source = dict((label, src) for label, src, _ in solution(FUSED_NB))["fused_kernel"] + "\n\n" + kernel
    assert kernel_rules(source) == {("kernel-python", FLAG)}


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


def test_warnings_in_the_wrapper_report_as_print_does():
    """warnings, allowed in every cell, computes nothing: a wrapper may warn as it may print."""
    body = WRAPPER_SOURCE.replace("    n = x.shape[-1]\n", "    n = x.shape[-1]\n    if weight.dtype != x.dtype:\n"
                                  "        warnings.warn(f'weight is {weight.dtype}, x {x.dtype}', stacklevel=2)\n", 1)
    assert body != WRAPPER_SOURCE
    cells = with_cells(FUSED_NB, fused_add_layernorm="import warnings\n\n\n" + body)
    assert policy.check_cells(cells, FUSED) == []


@pytest.mark.parametrize("line", ["block = 1 << max(n - 1, 0).bit_length()", "name = str(x.dtype).rsplit('.', 1)[-1].upper()",
                                  "ok = float(eps).is_integer() or '{}'.format(n).isdigit()"])
def test_a_plain_values_methods_in_the_wrapper_compute_nothing(line):
    """Any public method of Python's plain types that no tensor and no torch module has reads no tensor
    (int.bit_length, str.upper): a wrapper's checks may call them on what is not a tensor."""
    body = wrapper_with(line)
    assert policy.check_cells(with_cells(FUSED_NB, fused_add_layernorm=body), FUSED) == []


OUT_PARAMETER = WRAPPER_SOURCE.replace("eps: float = 1e-5)", "eps: float = 1e-5, out=None)").replace(
    "    h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)\n",
    "    if out is None:\n        h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)\n    else:\n"
    "        h, y = out\n")


@pytest.mark.parametrize("source, found", [
    (OUT_PARAMETER, set()),       # h and y are tensors after the if, whichever branch ran
    (WRAPPER_SOURCE.replace("    n = x.shape[-1]\n", "    n = x.shape[-1]\n    t = x\n    if eps > 1:\n"
                            "        t = 0\n    t2 = t * t\n"), {("wrapper-arithmetic", FLAG)}),
    (WRAPPER_SOURCE.replace("    n = x.shape[-1]\n", "    n = x.shape[-1]\n    a = 0\n    for _ in range(2):\n"
                            "        b = a * 2\n        a = x\n"), {("wrapper-arithmetic", FLAG)}),
    (WRAPPER_SOURCE.replace("    n = x.shape[-1]\n", "    n = x.shape[-1]\n    a = x\n    try:\n        a = 0\n"
                            "        n = int(n)\n    except ValueError:\n        b = a * 2\n"), {("wrapper-arithmetic", FLAG)}),
])
def test_a_name_holds_a_tensor_after_any_branch_that_left_one(source, found):
    """Each branch of an if is walked from what held tensors before it, and a name holds one after the if
    where any branch left one; a loop's body again with what its last run left, until nothing changes; a
    handler from what the try's body held before or after it."""
    assert source != WRAPPER_SOURCE
    assert wrapper_rules(source) == found


NAMED_DEFAULT = WRAPPER_SOURCE.replace("eps: float = 1e-5)", "eps=DEFAULT_EPS, saved=_SAVED)").replace(
    "h, y, n, eps,", "h, y, n, float(eps),")


@pytest.mark.parametrize("before, source, found", [
    ("DEFAULT_EPS = 1e-5\n_SAVED = {}\n\n\n", NAMED_DEFAULT, set()),      # a name holding a number
    ("DEFAULT_EPS = 1e-5\n_SAVED = {}\n\n\n", NAMED_DEFAULT.replace("    n = x.shape[-1]\n", "    n = x.shape[-1]\n"
     "    saved['x'] = x\n    t = saved['x'] * 2\n"), {("wrapper-arithmetic", FLAG)}),   # one holding a dict
    ("DEFAULT_EPS = 1e-5\n_SAVED = {}\n\n\ndef _keep(t):\n    global DEFAULT_EPS\n    DEFAULT_EPS = t\n\n\n",
     NAMED_DEFAULT, {("wrapper-arithmetic", FLAG), ("wrapper-torch-op", FLAG)}),   # one a function may rebind
])
def test_a_default_naming_a_module_constant_holds_no_tensor(before, source, found):
    """A wrapper's parameter whose default is a module-level name bound only to a number (eps=DEFAULT_EPS)
    holds a number, as eps=1e-5 does: float(eps) reads no tensor. A name holding a dict, or one a `global`
    lets a function rebind, may hold anything."""
    cells = with_cells(FUSED_NB, fused_add_layernorm=before + source)
    assert rules(policy.check_cells(cells, FUSED)) == found


@pytest.mark.parametrize("line, found", [
    ("rows_x, rows_fx = torch.reshape(x, (-1, n)).contiguous(), torch.flatten(fx, 0, -2).contiguous()", set()),
    ("rows_x, rows_fx = torch.reshape(x, (torch.numel(x) // n, n)), torch.reshape(fx, (-1, n))", set()),
    ("ok = all(torch.is_floating_point(t) for t in (x, fx))", set()),
    ("z = torch.reshape(x, (-1,)).exp()", {("wrapper-torch-op", FLAG)}),    # what it returns is still a tensor
    ("z = torch.clone(x) * 2", {("wrapper-arithmetic", FLAG)}),
    ("z = torch.exp(x)", {("wrapper-torch-op", FLAG)}),                     # no method of the wrapper's
])
def test_torchs_function_form_of_an_allowed_method_is_that_method(line, found):
    """torch.reshape(x, s) is x.reshape(s) and torch.numel(x) is x.numel(): a method the wrapper may call is
    allowed in torch's function form too, and a view it returns is still a tensor."""
    body = WRAPPER_SOURCE.replace("    h, y = torch.empty_like(rows_x)", f"    {line}\n    h, y = torch.empty_like(rows_x)", 1)
    assert body != WRAPPER_SOURCE
    assert wrapper_rules(body) == found


@pytest.mark.parametrize("line, found", [
    ("h2, y2 = torch.empty((2, 4, n), device=x.device, dtype=x.dtype).unbind(0)", set()),
    ("h2, y2 = torch.empty((4, 2 * n), device=x.device, dtype=x.dtype).split(n, dim=1)", set()),
    ("h2, y2 = torch.chunk(torch.empty((8, n), device=x.device, dtype=x.dtype), 2)", set()),
    ("h2 = torch.empty((2, 4, n), device=x.device, dtype=x.dtype).select(0, 1).narrow(0, 0, 2)", set()),
    ("h2, y2 = torch.empty((2, 4, n)).unbind(0)\n    z = h2 * 2", {("wrapper-arithmetic", FLAG)}),   # still tensors
    ("z = x.unbind(0)[0].exp()", {("wrapper-torch-op", FLAG)}),
    ("z = sum(x.split(1))", {("wrapper-arithmetic", FLAG)}),
])
def test_views_of_parts_of_a_tensor_are_views(line, found):
    """unbind, split, chunk, narrow and select read no values: a wrapper may allocate one buffer for h and y
    and take its halves (honest4-fanp14: out.unbind(0) cost the two launch tests, held for review); what
    they return are tensors, so computing on them is still seen."""
    body = wrapper_with(line)
    assert wrapper_rules(body) == found


GRID_DEF = WRAPPER_SOURCE.replace("    fused_add_layernorm_kernel[(rows_x.shape[0],)](",
                                  "    DEF\n    fused_add_layernorm_kernel[grid](")


@pytest.mark.parametrize("definition, found", [
    ("def grid(meta):\n        return (rows_x.shape[0],)\n", set()),
    ('def grid(META: dict) -> tuple:\n        """One program per row."""\n'
     '        return (triton.cdiv(rows_x.shape[0], META["num_warps"] // META["num_warps"]),)\n', set()),
    ("def grid(meta):\n        return (torch.add(x, fx).shape[0],)\n", {("wrapper-torch-op", FLAG)}),
    ("def grid(meta, z=x * 2):\n        return (rows_x.shape[0],)\n", {("wrapper-arithmetic", FLAG)}),
    ("def grid(meta: x.exp()):\n        return (rows_x.shape[0],)\n", {("wrapper-torch-op", FLAG)}),
    ("def grid(meta):\n        h.copy_(x)\n        return (rows_x.shape[0],)\n", {("wrapper-statement", FLAG)}),
    ("def grid(meta):\n        return (rows_x.shape[0],)\n    grid({})\n", {("wrapper-torch-op", FLAG)}),  # called
])
def test_a_nested_def_that_a_lambda_could_be_is_walked_as_one(definition, found):
    """A def in the wrapper whose body is one return (a grid function of meta) is a lambda under a name: its
    return value, defaults and annotations are walked as a lambda's body is; any other nested def stays a
    statement the wrapper may not hold, and calling it is calling a local that holds a function."""
    body = GRID_DEF.replace("DEF\n", definition, 1)
    assert body != WRAPPER_SOURCE
    assert wrapper_rules(body) == found


@pytest.mark.parametrize("line, found", [
    ("weight = torch.ones(n, dtype=x.dtype, device=x.device) if weight is None else weight", set()),
    ("weight = torch.ones_like(bias) if weight is None else weight", set()),
    ("bias = x.new_zeros(n) if bias is None else bias", set()),
    ("weight = x.new_ones((n,)) if weight is None else weight", set()),
    # a literal fill (outputs poisoned with NaN until the kernel writes them: honest7's fan_11) carries none either
    ("h0, y0 = torch.full_like(x, float('nan')), torch.full((n,), -torch.inf, device=x.device)", set()),
    ("h0 = x.new_full(x.shape, fill_value=torch.nan).view(-1, n)", set()),
    ("weight = torch.full_like(bias, 2.0) if weight is None else weight", set()),
    ("weight = torch.full_like(bias, eps)", {("wrapper-torch-op", FLAG)}),    # a value the caller handed it
    ("h0 = x.new_full(x.shape, float(x.sum()))", {("wrapper-torch-op", FLAG)}),
    ("z = torch.full_like(x, 0.0) + x", {("wrapper-arithmetic", FLAG)}),       # what it allocates is a tensor
    ("z = torch.ones_like(x) * x", {("wrapper-arithmetic", FLAG)}),
])
def test_an_allocation_of_ones_carries_no_value_of_the_callers(line, found):
    """torch.ones and ones_like (a weight of ones when weight is None), and x.new_zeros and new_ones, allocate
    as torch.zeros and x.new_empty do, and so do torch.full, full_like and x.new_full with a literal fill; a fill
    the wrapper computes or was handed stays a torch op."""
    body = wrapper_with(line)
    assert wrapper_rules(body) == found


@pytest.mark.parametrize("line, found", [
    ("programs = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4", set()),
    ("major, minor = torch.cuda.get_device_capability() if torch.cuda.is_available() else (0, 0)", set()),
    ("with torch.cuda.device_of(x), torch.inference_mode():\n        pass", set()),
    ("with torch.cuda.device_of(x + fx):\n        pass", {("wrapper-arithmetic", FLAG)}),
    ("props = torch.cuda.get_device_properties(x)", {("wrapper-arithmetic", FLAG)}),   # a tensor handed to it
    ("torch.cuda.make_graphed_callables(print, ())", {("wrapper-torch-op", FLAG)}),     # not a device query
    ("if x.is_cuda:\n        torch.cuda.synchronize(x.device)", set()),
    ("torch.cuda.synchronize()", set()),
    ("torch.cuda.synchronize(x)", {("wrapper-arithmetic", FLAG)}),                       # a tensor handed to it
])
def test_the_wrapper_may_ask_which_device_it_launches_on(line, found):
    """A persistent kernel's grid counts the device's multiprocessors; the launch may run under the tensor's
    device (torch.cuda.device_of(x) reads only x's device) and torch.inference_mode(), and the wrapper may wait
    for it with torch.cuda.synchronize (honest4-fanp40: it cost the two launch tests, held for review). Handed
    a tensor, a device query is still reading it, and the rest of torch.cuda stays a torch op."""
    body = wrapper_with(line)
    assert wrapper_rules(body) == found


LAUNCHER = WRAPPER_SOURCE.replace("    fused_add_layernorm_kernel[(rows_x.shape[0],)](",
                                  "    launch = fused_add_layernorm_kernel[(rows_x.shape[0],)]\n    BEFORE\n    launch(")


@pytest.mark.parametrize("before, found", [
    ("pass", set()),
    ("launch = torch.add", {("wrapper-torch-op", FLAG), ("wrapper-no-launch", FLAG)}),    # bound twice: anything
    ("launch(rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)", {("wrapper-launches", FLAG)}),
    ("for _ in range(2):\n        launch(rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)",
     {("wrapper-launch-loop", FLAG), ("wrapper-launches", FLAG)}),
])
def test_a_name_bound_once_to_kernel_grid_launches_it(before, found):
    """launch = kernel[grid]; launch(...) is the launch kernel[grid](...), counted as one: in a loop, or with a
    second launch, it is flagged as that launch would be. A name bound to anything else as well may hold any
    function."""
    body = LAUNCHER.replace("BEFORE", before, 1)
    assert body != WRAPPER_SOURCE
    assert wrapper_rules(body) == found


ALIASED = WRAPPER_SOURCE.replace("    fused_add_layernorm_kernel[(rows_x.shape[0],)](",
                                 "    kernel = fused_add_layernorm_kernel\n    BEFORE\n    kernel[(rows_x.shape[0],)](")


@pytest.mark.parametrize("before, found", [
    ("pass", set()),
    ("launch = kernel[(rows_x.shape[0],)]", set()),           # a launcher of the alias, never called
    ("kernel = torch.add", {("wrapper-no-launch", FLAG)}),    # bound twice: it may hold anything
    ("kernel[(1,)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)", {("wrapper-launches", FLAG)}),
    ("for _ in range(2):\n        kernel[(1,)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)",
     {("wrapper-launch-loop", FLAG), ("wrapper-launches", FLAG)}),
    ("kernel[(1,)](x + fx, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)",
     {("wrapper-arithmetic", FLAG), ("wrapper-launches", FLAG)}),
])
def test_a_name_bound_once_to_the_kernel_is_the_kernel(before, found):
    """kernel = fused_add_layernorm_kernel; kernel[grid](...) launches the notebook's kernel, as its own name
    does (honest4-fan10: the alias alone cost the two launch tests, held for review): a launch through it is
    counted, in a loop or twice, and its arguments walked, as the kernel's own. A name bound to anything else
    as well is no kernel."""
    body = ALIASED.replace("BEFORE", before, 1)
    assert body != WRAPPER_SOURCE
    assert wrapper_rules(body) == found


def test_a_local_that_shadows_the_kernels_name_is_no_alias():
    """An alias of a local that the wrapper itself binds under the kernel's name is that local, not the kernel."""
    body = ALIASED.replace("BEFORE", "pass", 1).replace(
        "    kernel = fused_add_layernorm_kernel\n",
        "    fused_add_layernorm_kernel = print\n    kernel = fused_add_layernorm_kernel\n", 1)
    assert ("wrapper-no-launch", FLAG) in wrapper_rules(body)


@pytest.mark.parametrize("statement", [
    "match x:\n        case torch.Tensor(dtype=torch.float64):\n            raise ValueError(f'float64: {x.dtype}')\n"
    "        case _:\n            pass",
    "del n",
])
def test_a_statement_the_wrapper_may_not_hold_is_flagged_not_a_crash(statement):
    """A statement the wrapper's walk does not know (a match with a class pattern, del), with or without a
    body, is flagged as one."""
    body = WRAPPER_SOURCE.replace("    n = x.shape[-1]\n", f"    n = x.shape[-1]\n    {statement}\n    n = x.shape[-1]\n", 1)
    assert body != WRAPPER_SOURCE
    assert wrapper_rules(body) == {("wrapper-statement", FLAG)}


MATCHED = WRAPPER_SOURCE.replace("    n = x.shape[-1]\n", "    n = x.shape[-1]\n    MATCH\n", 1)


@pytest.mark.parametrize("statement, found", [
    ("match x.dtype:\n        case torch.float16 | torch.bfloat16:\n            warps = 4\n        case torch.float64:\n"
     "            raise ValueError(f'float64 {x.dtype}')\n        case other if other in DTYPES:\n            warps = 8\n"
     "        case _:\n            raise ValueError(f'dtype {x.dtype}')", set()),
    ("match n:\n        case 0:\n            pass\n        case None | True:\n            pass", set()),
    ("match x.dtype:\n        case torch.float16:\n            z = x * 2", {("wrapper-arithmetic", FLAG)}),
    ("match x:\n        case z:\n            z = z.exp()", {("wrapper-torch-op", FLAG)}),    # a capture of a tensor
    ("match x.dtype:\n        case torch.float16:\n            fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, "
     "x, x, n, eps, BLOCK=16)\n        case _:\n            pass", {("wrapper-launches", FLAG)}),  # two on one path
    ("match n, MAX_WIDTH:\n        case (a, b) if a > b:\n            pass", set()),   # a tuple, item by item
    ("match x, fx:\n        case (a, b):\n            h0 = a + b", {("wrapper-arithmetic", FLAG)}),   # its items hold
    ("match (x, n):\n        case [*rest]:\n            pass", {("wrapper-statement", FLAG)}),   # a star
    ("match x.shape:\n        case {'a': 1}:\n            pass", {("wrapper-statement", FLAG)}),  # a mapping pattern
    # a sequence pattern of a shape (honest5-nb05): its length and items are the tuple's own, its captures ints
    ("match tuple(weight.shape):\n        case (m,) if m == n:\n            pass\n        case bad:\n"
     "            raise ValueError(f'weight {bad!r}')", set()),
    ("match x.shape:\n        case (*lead, m):\n            z = m * 2", set()),
    ("match x.size():\n        case (m, k):\n            z = x * k", {("wrapper-arithmetic", FLAG)}),
    ("match tuple(x):\n        case (a, b):\n            pass", {("wrapper-statement", FLAG)}),    # a tensor's items
])
def test_a_match_of_values_is_an_if_chain(statement, found):
    """match x.dtype: case torch.float16 | torch.bfloat16: ... in the wrapper (honest4-fanp17: it cost the two
    launch tests, held for review) is walked as the if/elif chain it is: each case is `subject == value`,
    its body a branch of its own, a capture holds what the subject holds; so is a sequence pattern of a
    shape (match tuple(weight.shape): case (m,) if m == n:). Class and mapping patterns, and sequence
    patterns of anything else, which read an object's attributes, length or items, stay a statement the
    wrapper may not hold."""
    body = MATCHED.replace("MATCH", statement, 1)
    assert wrapper_rules(body) == found


NESTED = "def require(ok, message):\n        if not ok:\n            raise ValueError(message)\n\n    "


@pytest.mark.parametrize("lines, found", [
    (NESTED + "require(x.shape == fx.shape, f'x {tuple(x.shape)} and fx {tuple(fx.shape)} differ')\n    "
     "require(all(t.dtype in DTYPES for t in (x, fx)), 'dtype')", set()),
    ("def rows(t):\n        return t.reshape(-1, n).contiguous()\n\n    z = rows(x)", set()),
    ("def rows(t):\n        return t.reshape(-1, n).contiguous()\n\n    z = rows(x) * 2", {("wrapper-arithmetic", FLAG)}),
    ("def bad(t):\n        return t.exp()\n\n    bad(fx)", {("wrapper-torch-op", FLAG)}),          # a tensor passed
    ("def bad():\n        z = x * 2\n        return n\n\n    bad()", {("wrapper-arithmetic", FLAG)}),  # one it reads
    ("op = x.exp\n    def go():\n        return op()\n\n    go()", {("wrapper-torch-op", FLAG)}),  # the caller's local
    ("def go():\n        fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, x, x, n, eps, BLOCK=16)\n"
     "        return n\n\n    go()", {("wrapper-launches", FLAG)}),
    (NESTED + "checks = [require]", {("wrapper-statement", FLAG)}),              # not only called
    (NESTED + "require = print\n    require(1, 2)", {("wrapper-statement", FLAG), ("wrapper-torch-op", FLAG)}),
    ("def gen():\n        yield x\n\n    gen()", {("wrapper-statement", FLAG), ("wrapper-torch-op", FLAG)}),
])
def test_a_def_in_the_wrapper_that_is_only_called_is_a_helper(lines, found):
    """def require(ok, message): ... in the wrapper, called for each argument check (honest4-fanp23: it
    cost the two launch tests, held for review), is walked where it is called, as a module-level helper
    is: with the tensors passed to it and those of the wrapper it reads, its launches counted with the
    wrapper's, and what it returns a tensor where it reads one. A def used other than called, bound again,
    or a generator stays a statement the wrapper may not hold."""
    body = wrapper_with(lines)
    assert wrapper_rules(body) == found


@pytest.mark.parametrize("lines, found", [
    ("as_rows = lambda t: t.reshape(-1, n).contiguous()\n    z = as_rows(x)", set()),
    ("as_rows = lambda t, m=n: t.reshape(-1, m)\n    z = as_rows(x)", set()),
    ("as_rows = lambda t: t.reshape(-1, n)\n    z = as_rows(x) + 1", {("wrapper-arithmetic", FLAG)}),  # a tensor back
    ("ex = lambda t: t.exp()\n    z = ex(x)", {("wrapper-torch-op", FLAG)}),
    ("double = lambda t: t * 2\n    z = double(fx)", {("wrapper-arithmetic", FLAG)}),
    ("double = lambda: x * 2\n    z = double()", {("wrapper-arithmetic", FLAG)}),       # a tensor of the wrapper's
    ("f = lambda t: t\n    f = torch.exp\n    z = f(x)", {("wrapper-torch-op", FLAG)}),  # bound twice
    ("f = lambda t: t\n    g = f\n    z = g(x)", {("wrapper-torch-op", FLAG)}),          # read other than called
])
def test_a_lambda_bound_to_a_name_and_only_called_is_a_helper(lines, found):
    """as_rows = lambda t: t.reshape(-1, n).contiguous(); x2 = as_rows(x) (honest4-fanp35: each call cost the
    two launch tests, held for review) is the def `return` of its body, walked where it is called as a def
    in the wrapper is. A name bound to anything else too, or read other than called, may hold anything."""
    assert wrapper_rules(wrapper_with(lines)) == found


@pytest.mark.parametrize("lines, found", [
    ("x2, fx2 = map(lambda t: t.reshape(-1, n).contiguous(), (x, fx))", set()),
    ("x2, fx2 = map(lambda t, m: t.reshape(-1, m), (x, fx), (n, n))", set()),       # zipped
    ("ok = all(map(lambda t: t.is_contiguous(), (x, fx)))", set()),
    ("x2, fx2 = map(lambda t: t.reshape(-1, n), (x, fx))\n    z = x2 + fx2", {("wrapper-arithmetic", FLAG)}),
    ("x2, fx2 = map(lambda t: t.exp(), (x, fx))", {("wrapper-torch-op", FLAG)}),
    ("x2, fx2 = map(lambda t, u: t * u, (x, fx), (x, fx))", {("wrapper-arithmetic", FLAG)}),
    ("x2 = list(map(lambda t: t.reshape(-1, n), (x, fx)))\n    z = x2[0] * 2", {("wrapper-arithmetic", FLAG)}),
    ("list(map(lambda t: fused_add_layernorm_kernel[(1,)](t, fx, weight, bias, x, x, n, eps, BLOCK=16), (x,)))",
     {("wrapper-launch-loop", FLAG), ("wrapper-launches", FLAG)}),
    ("map = lambda f, xs: [f(v) for v in xs]\n    x2, fx2 = map(lambda t: t.exp(), (x, fx))",   # not Python's map
     {("wrapper-torch-op", FLAG)}),
    # a named function is called on each item: a def of the wrapper's, a builtin, a torch function
    ("def rows(t):\n        return t.reshape(-1, n).contiguous()\n\n    x2, fx2 = map(rows, (x, fx))", set()),
    ("def rows(t):\n        return t.exp()\n\n    x2, fx2 = map(rows, (x, fx))", {("wrapper-torch-op", FLAG)}),
    ("message = ', '.join(map(str, x.shape))", set()),
    ("x2, fx2 = map(torch.exp, (x, fx))", {("wrapper-torch-op", FLAG)}),
    # a tensor method as a function of the tensor: torch.Tensor.contiguous(t) is t.contiguous()
    ("x2, fx2 = map(torch.Tensor.contiguous, (x, fx))", set()),
    ("x2, fx2 = map(Tensor.reshape, (x, fx), ((-1, n), (-1, n)))", set()),
    ("x2, fx2 = map(torch.Tensor.contiguous, (x, fx))\n    z = x2 + fx2", {("wrapper-arithmetic", FLAG)}),
    ("x2, fx2 = map(torch.Tensor.exp, (x, fx))", {("wrapper-torch-op", FLAG)}),
    ("z = torch.Tensor.add(x, fx)", {("wrapper-torch-op", FLAG)}),
    ("x2, fx2 = map(fused_add_layernorm_kernel[(1,)], (x, fx))", {("wrapper-launch-loop", FLAG), ("wrapper-launches", FLAG)}),
    # what a comprehension returns holds a tensor where its items do
    ("x2, fx2 = (t.reshape(-1, n) for t in (x, fx))\n    z = x2 + fx2", {("wrapper-arithmetic", FLAG)}),
    ("x2, fx2 = [t for t in (x, fx)]\n    z = x2 * 2", {("wrapper-arithmetic", FLAG)}),
    ("sizes = [t.shape[-1] for t in (x, fx)]\n    m = sizes[0] * 2", set()),
])
def test_a_map_is_the_generator_expression_it_is(lines, found):
    """x2, fx2 = map(lambda t: t.reshape(-1, n).contiguous(), (x, fx)) (honest4-fanp33: it cost the two launch
    tests, held for review, where the generator expression of the same kept them) is walked as (BODY for t in
    items): its lambda's parameter takes the items, a launch in it is one in a loop; map(f, items) as
    (f(t) for t in items), the call checked as written out. And what a comprehension or such a map returns
    holds a tensor where its items do: x2 + fx2 after either is arithmetic on tensors."""
    assert wrapper_rules(wrapper_with(lines)) == found


@pytest.mark.parametrize("helper, found", [
    ("def _rows(t):\n    return t.reshape(-1, t.shape[-1]).contiguous()\n", set()),
    ("def _rows(t):\n    return t * 2\n", {("wrapper-arithmetic", FLAG)}),
])
def test_a_module_level_def_handed_to_map_is_walked_with_its_items(helper, found):
    """x2, fx2 = map(_rows, (x, fx)) with a def of the notebook's own: its body is walked as for _rows(x)."""
    body = helper + "\n\n" + wrapper_with("x2, fx2 = map(_rows, (x, fx))")
    assert wrapper_rules(body) == found


ROWS_HELPERS = """def rows_view(t):
    return t.reshape(-1, t.shape[-1])


def row_count(t):
    return t.numel() // t.shape[-1]


class Rows:
    @staticmethod
    def of(t):
        return t.reshape(-1, t.shape[-1])
"""


@pytest.mark.parametrize("lines, found", [
    ("x2 = rows_view(x).contiguous()", set()),
    ("x2 = rows_view(x)\n    x2 = x2.contiguous()", set()),
    ("x2 = Rows.of(x).contiguous()", set()),
    ("m = triton.cdiv(row_count(x), 4)", set()),              # a count stays a count
    ("z = rows_view(x) + 1", {("wrapper-arithmetic", FLAG)}),
    ("z = Rows.of(x) * 2", {("wrapper-arithmetic", FLAG)}),
    ("z = rows_view(x).exp()", {("wrapper-torch-op", FLAG)}),
])
def test_what_a_def_or_method_of_the_notebook_returns_holds_a_tensor_where_its_return_does(lines, found):
    """x2 = rows_view(x).contiguous() with a def of the notebook's own (honest6-fan_23: it cost the two launch
    tests, held for review, as a callee the policy cannot name), and h, y = Fn.apply(...) of an autograd
    Function whose forward launches the kernel (honest6-fan_22): what the call returns holds a tensor where a
    `return` of the def does, walked with the tensors the call hands it, so a view of it is a view and
    arithmetic on it is arithmetic (it was not seen before: rows_view(x) + 1 passed)."""
    body = ROWS_HELPERS + "\n\n" + wrapper_with(lines)
    assert wrapper_rules(body) == found


@pytest.mark.parametrize("lines, found", [
    ("x2 = torch.atleast_2d(x).flatten(0, -2).contiguous()", set()),
    ("x2 = torch.atleast_2d(x)\n    z = x2 * 2", {("wrapper-arithmetic", FLAG)}),
    ("z = torch.atleast_2d(x).exp()", {("wrapper-torch-op", FLAG)}),
    ("with torch.device(x.device):\n        pass", set()),
    ("d = torch.device('cpu') if x.device.type == 'cpu' else x.device", set()),
    ("t = torch.promote_types(x.dtype, fx.dtype)\n    ok = torch.can_cast(t, torch.float32)", set()),
    ("m = f'{torch.get_default_dtype()} {torch.is_grad_enabled()}'", set()),
])
def test_devices_dtypes_and_atleast_2d_read_no_values(lines, found):
    """with torch.device(x.device): (honest6-fan_11) and torch.atleast_2d(x).flatten(0, -2) (honest6-fan_17)
    each cost the two launch tests, held for review: a device, dtypes compared and a view read no tensor's
    values; the view still holds the tensor."""
    assert wrapper_rules(wrapper_with(lines)) == found


@pytest.mark.parametrize("lines, found", [
    ("same = torch.broadcast_shapes(x.shape, fx.shape) == x.shape == fx.shape", set()),
    ("same = torch.broadcast_shapes(x, fx)", {("wrapper-arithmetic", FLAG)}),     # a tensor's values as sizes
])
def test_broadcast_shapes_of_shapes_is_a_shape_check(lines, found):
    """torch.broadcast_shapes(x.shape, fx.shape) (honest5-nb12: it cost the two launch tests, held for review)
    computes on sizes only, as torch.Size does."""
    assert wrapper_rules(wrapper_with(lines)) == found


TUPLE_RESULT = '''
class AddNorm(tuple):
    """(h, y), also as .h and .y."""
    __slots__ = ()

    @property
    def h(self):
        return self[0]

    @property
    def y(self) -> Tensor:
        """y = LayerNorm(h)."""
        return self[1]


'''


@pytest.mark.parametrize("change, found", [
    (("", ""), set()),
    (("return self[1]", "return self[1] * 2"), {("wrapper-torch-op", FLAG)}),         # a property that computes
    (("__slots__ = ()", "scale = torch.ones(1)"), {("wrapper-torch-op", FLAG)}),      # a class attribute
    (("class AddNorm(tuple):", "tuple = list\n\n\nclass AddNorm(tuple):"), {("wrapper-torch-op", FLAG)}),
])
def test_a_tuple_subclass_of_item_properties_is_a_result_type(change, found):
    """return AddNorm((h, y)) with class AddNorm(tuple) whose properties only return an item (honest5-nb10: it
    cost the two launch tests, held for review, where a NamedTuple kept them) is built by tuple's own __new__
    and computes nothing: a result type as a NamedTuple is. A property that computes, a class attribute, or a
    `tuple` that is not Python's, and the class is an object of the notebook's the wrapper cannot follow."""
    cls = TUPLE_RESULT.replace(*change) if change[0] else TUPLE_RESULT
    body = cls + WRAPPER_SOURCE.replace("return h.view(x.shape), y.view(x.shape)", "return AddNorm((h, y))")
    assert body != cls + WRAPPER_SOURCE
    assert {r for r in wrapper_rules(body)
            if r[0].startswith("wrapper")} == found


PARTIAL = WRAPPER_SOURCE.replace(
    "    fused_add_layernorm_kernel[(rows_x.shape[0],)](\n        rows_x, rows_fx, weight.contiguous(), bias.contiguous(), "
    "h, y, n, eps,\n        BLOCK=block, num_warps=min(max(block // 256, 1), 16))\n",
    "    launch = functools.partial(fused_add_layernorm_kernel[(rows_x.shape[0],)], BLOCK=block,\n"
    "                               num_warps=min(max(block // 256, 1), 16))\n"
    "    LAUNCH\n")


@pytest.mark.parametrize("launch, found", [
    ("launch(rows_x, rows_fx, weight.contiguous(), bias.contiguous(), h, y, n, eps)", set()),
    ("launch(rows_x, rows_fx, weight, bias, h, y, n, eps)\n    launch(rows_x, rows_fx, weight, bias, h, y, n, eps)",
     {("wrapper-launches", FLAG)}),
    ("for _ in range(2):\n        launch(rows_x, rows_fx, weight, bias, h, y, n, eps)", {("wrapper-launch-loop", FLAG)}),
    ("launch(rows_x + 1, rows_fx, weight, bias, h, y, n, eps)", {("wrapper-arithmetic", FLAG)}),
])
def test_a_partial_of_the_launch_is_the_launch(launch, found):
    """launch = functools.partial(kernel[grid], BLOCK=block, num_warps=...); launch(x, ...) (honest5-nb02: it
    cost the two launch tests, held for review, as a launch of nothing) is that launch, with the partial's
    arguments: counted once per call, in a loop or not, its arguments checked as a launch's are."""
    body = "import functools\n\n\n" + PARTIAL.replace("LAUNCH", launch)
    assert "functools.partial" in body
    assert wrapper_rules(body) == found


def test_a_partial_of_anything_else_is_still_a_call_the_wrapper_cannot_name():
    body = "import functools\n\n\n" + wrapper_with("add = functools.partial(torch.add, x)\n    z = add(fx)")
    assert ("wrapper-torch-op", FLAG) in wrapper_rules(body)


FACTORY = """
class Cfg:
    def __init__(self, block, warps):
        self.block = INIT
        self.warps = warps

    @classmethod
    def make(cls, n):
        BODY


"""


@pytest.mark.parametrize("init, body, call, found", [
    ("block", "return cls(triton.next_power_of_2(n), 4)", "cfg = Cfg.make(n)", set()),
    ("block", "return cls(triton.next_power_of_2(n), 4)", "cfg = Cfg(16, 4).make(n)", set()),   # on an instance
    ("block", "return cls(n * 2, 4)", "cfg = Cfg.make(x)", {("wrapper-arithmetic", FLAG)}),      # a tensor passed
    ("block * 2", "return cls(n, 4)", "cfg = Cfg.make(x)", {("wrapper-arithmetic", FLAG)}),      # cls(...) runs __init__
    ("block", "cls = torch.add\n        return cls(n, n)", "cfg = Cfg.make(x)", {("wrapper-torch-op", FLAG)}),
    ("block", "for cls in [torch.exp]:\n            return cls(n)", "cfg = Cfg.make(x)", {("wrapper-torch-op", FLAG)}),
])
def test_a_classmethods_first_parameter_names_its_class(init, body, call, found):
    """In a classmethod the wrapper calls (LaunchConfig.for_width(n), honest4-fanp28: its `cls(...)` cost the
    two launch tests, held for review), `cls` names the class it is called on: cls(...) builds one, its
    __init__ walked with what the call passes. A cls the method binds again may hold anything."""
    cells = with_cells(FUSED_NB, fused_add_layernorm=FACTORY.replace("INIT", init).replace("BODY", body) +
                       wrapper_with(call))
    assert rules(policy.check_cells(cells, FUSED)) == found


HELPER = "def _helper(shape, t, scale=1.0, *rest, **named):\n    {}\n    return shape\n\n\n"


@pytest.mark.parametrize("use, call, found", [
    ("s = list(reversed(shape))", "_helper(x.shape, x)", set()),       # a shape passed: its sizes are Python's
    ("s = sum(shape)", "_helper(x.shape, x)", set()),
    ("s = t.shape[::-1]", "_helper(x.shape, x)", set()),
    ("s = list(reversed(shape))", "_helper(x, x)", {("wrapper-arithmetic", FLAG)}),   # a tensor passed
    ("s = scale * 2", "_helper(n, x, fx)", {("wrapper-arithmetic", FLAG)}),        # a constant default, given x
    ("s = sum(rest)", "_helper(n, x, 1.0, fx)", {("wrapper-arithmetic", FLAG)}),   # *rest holds fx
    ("s = named['a'] + 1", "_helper(n, x, a=fx)", {("wrapper-arithmetic", FLAG)}),  # **named holds fx
    ("s = sum(shape)", "_helper(*(x, fx))", {("wrapper-arithmetic", FLAG)}),       # unpacked: any may
])
def test_a_helper_holds_tensors_where_its_call_passes_them(use, call, found):
    """A helper the wrapper calls is checked as if its body stood at the call: a parameter given a shape
    holds ints, one given a tensor holds a tensor, whatever its annotation or default."""
    body = wrapper_with(call)
    cells = with_cells(FUSED_NB, fused_add_layernorm=HELPER.format(use) + body)
    assert rules(policy.check_cells(cells, FUSED)) == found


FUNCTION_APPLY = """
class Fn(torch.autograd.Function):
    @staticmethod
    def forward(x, fx, weight, bias, eps):
        n = x.shape[-1]
        rows, fx_rows = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
        h, y = torch.empty_like(rows), torch.empty_like(rows)
        fused_add_layernorm_kernel[(rows.shape[0],)](rows, fx_rows, weight, bias, h, y, n, eps,
                                                     BLOCK=triton.next_power_of_2(n))
        PREPARE
        return h.view(x.shape), y.view(x.shape)

    @staticmethod
    def setup_context(ctx, inputs, output):
        CONTEXT


def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
    return Fn.apply(x, fx, weight, bias, eps)
""".replace("PREPARE", "pass").replace("CONTEXT", "ctx.eps = inputs[-1]")

CLASS_LAUNCH = """
class Norm(BASE):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def METHOD(self, x, fx, weight, bias):
        n = self._width(x, fx)
        PREPARE
        rows, fx_rows = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
        h, y = torch.empty_like(rows), torch.empty_like(rows)
        fused_add_layernorm_kernel[(rows.shape[0],)](rows, fx_rows, weight, bias, h, y, n, self.eps,
                                                     BLOCK=triton.next_power_of_2(n))
        return h.view(x.shape), y.view(x.shape)

    @staticmethod
    def _width(x, fx):
        if x.shape != fx.shape:
            raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} differ")
        return x.shape[-1]


def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
    CALL
"""


def class_wrapper(base="torch.nn.Module", method="forward", prepare="pass", call="return Norm(eps)(x, fx, weight, bias)"):
    return CLASS_LAUNCH.replace("BASE", base).replace("METHOD", method).replace("PREPARE", prepare) \
        .replace("CALL", call)


@pytest.mark.parametrize("source", [
    class_wrapper(),                                                             # an nn.Module, called
    class_wrapper(call="norm = Norm(eps)\n    return norm(x, fx, weight, bias)"),
    class_wrapper(call="return Norm(eps).forward(x, fx, weight, bias)"),
    class_wrapper(base="object", method="__call__"),                             # a plain callable class
    class_wrapper(base="object", method="run", call="return Norm(eps=eps).run(x, fx, weight, bias)"),
    class_wrapper(prepare="self.shape = x.shape"),                               # sizes kept on self
    class_wrapper() + "\n\nNORM = Norm()\n",                                       # an object built once
    class_wrapper(call="NORM.eps = eps\n    return NORM(x, fx, weight, bias)") + "\n\nNORM = Norm()\n",
    FUNCTION_APPLY,                                                              # a torch.autograd.Function
    # honest round 17: a library's decorator given plain data on a method, typing.final on the class
    class_wrapper().replace("    def forward(", "    @torch.no_grad()\n    def forward("),
    class_wrapper(base="object", method="__call__").replace("    def __call__(", "    @torch.inference_mode()\n"
                                                                                "    def __call__("),
    "import typing\n\n\n@typing.final" + class_wrapper(),
])
def test_a_class_the_wrapper_delegates_to_is_checked_as_a_helper_is(source):
    """The wrapper may build one of the notebook's classes and call it (an nn.Module's forward, __call__, a
    method): what that runs is walked as a helper's body is, with self's attributes that hold tensors seen."""
    assert policy.check_cells(with_cells(FUSED_NB, fused_add_layernorm=source), FUSED) == []


@pytest.mark.parametrize("source, found", [
    (class_wrapper(prepare="x = x + fx"), {("wrapper-arithmetic", FLAG)}),        # computing in forward
    (class_wrapper(prepare="self.x = x\n        z = self.x * 2"), {("wrapper-arithmetic", FLAG)}),
    (class_wrapper(prepare="self.h = torch.empty_like(x)\n        z = self.h.exp()"),
     {("wrapper-torch-op", FLAG)}),                                             # a tensor kept on self
    (class_wrapper(prepare="z = self._width(x + 1, fx)"), {("wrapper-arithmetic", FLAG)}),
    (class_wrapper(call="return Norm(eps).other(x, fx, weight, bias)").replace(
        "    @staticmethod", "    def other(self, x, fx, weight, bias):\n        return x + fx, x\n\n    @staticmethod"),
     {("wrapper-arithmetic", FLAG), ("wrapper-no-launch", FLAG)}),             # the method called launches nothing
    (class_wrapper(base="object"), {("wrapper-no-launch", FLAG)}),              # no nn.Module: forward is not run
    (class_wrapper().replace("class Norm", "@functools.total_ordering\nclass Norm"),
     {("wrapper-no-launch", FLAG)}),                                            # a decorated class is not followed
    (class_wrapper().replace("    def forward(", "    @functools.wraps(print)\n    def forward("),
     {("wrapper-no-launch", FLAG)}),                 # a library decorator handed something other than plain data
    (class_wrapper().replace("    def forward(", "    @triton.jit\n    def forward("),
     {("wrapper-no-launch", FLAG)}),                                            # Triton's makes it a kernel
    ("def mine(f):\n    return print\n\n\n" + class_wrapper().replace("    def forward(", "    @mine\n    def forward("),
     {("wrapper-no-launch", FLAG)}),                                            # the notebook's own decorator
    (class_wrapper().replace("        self.eps = eps\n", "        self.eps = eps\n\n    __call__ = print\n"),
     {("wrapper-no-launch", FLAG)}),                                            # a class body binding a dunder
    (class_wrapper().replace("        self.eps = eps\n", "        self.eps = eps\n        self.forward = print\n"),
     {("wrapper-no-launch", FLAG)}),                                            # an attribute hiding forward
    (class_wrapper() + "\n\nNorm.forward = print\n", {("wrapper-no-launch", FLAG)}),  # a method replaced
    (class_wrapper() + "\n\nsetattr(Norm, 'forward', print)\n", {("wrapper-no-launch", FLAG)}),
    (class_wrapper() + "\n\nNorm = dict\n", {("wrapper-rebound", FLAG)}),      # the class rebound
    (FUNCTION_APPLY.replace("        pass\n", "        h = x + fx\n"), {("wrapper-arithmetic", FLAG)}),
    (FUNCTION_APPLY.replace("ctx.eps = inputs[-1]", "inputs[0].add_(1)"), {("wrapper-torch-op", FLAG)}),
    (FUNCTION_APPLY.replace("torch.autograd.Function", "object"), {("wrapper-no-launch", FLAG)}),
    (FUNCTION_APPLY.replace("        pass\n", "        x.add_(1)\n"), {("wrapper-torch-op", FLAG)}),  # forward's x
    (FUNCTION_APPLY.replace("forward(x,", "forward(ctx, x,").replace("        pass\n", "        x.add_(1)\n").replace(
        "    @staticmethod\n    def setup_context(ctx, inputs, output):\n        ctx.eps = inputs[-1]\n", ""),
     {("wrapper-torch-op", FLAG)}),                                             # forward(ctx, x, ...): x
    (class_wrapper(call="return NORM(x, fx, weight, bias)") + "\n\nNORM = Norm()\nNORM.forward = print\n",
     {("wrapper-no-launch", FLAG)}),                                            # the object's forward hidden
    (class_wrapper(call="return NORM(x, fx, weight, bias)") + "\n\nNORM = Norm()\nNORM = Norm()\n",
     {("wrapper-no-launch", FLAG)}),                                            # an object bound twice
    (class_wrapper(call="NORM = print\n    return NORM(x, fx, weight, bias)") + "\n\nNORM = Norm()\n",
     {("wrapper-no-launch", FLAG)}),                                            # a local name hides it
    (class_wrapper(prepare="self.keep.add_(1)", call="return NORM(x, fx, weight, bias)").replace(
        "        self.eps = eps\n", "        self.eps = eps\n        self.keep = torch.zeros(3)\n")
     + "\n\nNORM = Norm()\n", {("wrapper-torch-op", FLAG)}),                 # a tensor its __init__ kept
])
def test_a_class_the_wrapper_delegates_to_computes_no_more_than_a_helper(source, found):
    cells = with_cells(FUSED_NB, fused_add_layernorm=source)
    assert rules(policy.check_cells(cells, FUSED)) >= found


@pytest.mark.parametrize("source, found", [
    ("x = " + "+".join(["1"] * 50000), set()),               # too deep to parse: the child cannot compile it either
    ("x = " + "+".join(["1"] * 900), {("too-deep", WITHHOLD)}),   # parsed, too deep to walk: held, not read
])
def test_a_cell_too_deep_for_the_checks_never_raises(source, found):
    assert rules(policy.check_cells(with_cells(RESIDUAL_NB, residual_add=source), RESIDUAL)) == found


@pytest.mark.parametrize("compute", [
    "    for name, t in dict(x=x, fx=fx).items():\n        t.add_(1)\n",
    "    for name, t in zip(('x', 'fx'), (x, fx)):\n        h0 = t + 1\n",
    "    rows = [t * 2 for t in (x, fx)]\n",
    "    for i, t in enumerate((x, fx)):\n        t.mul_(2)\n",
])
def test_tensors_packed_for_checks_are_still_tensors(compute):
    """dict/zip/enumerate/tuples may carry tensors through argument checks; computing on what they
    carry is still the wrapper computing."""
    body = WRAPPER_SOURCE.replace("    n = x.shape[-1]\n", "    n = x.shape[-1]\n" + compute, 1)
    assert body != WRAPPER_SOURCE
    found = policy.check_cells(with_cells(FUSED_NB, fused_add_layernorm=body), FUSED)
    assert ("wrapper-arithmetic", FLAG) in rules(found) or ("wrapper-torch-op", FLAG) in rules(found)


def test_the_graders_threads_parse_one_at_a_time(monkeypatch):
    """CPython 3.11 counts AST-building depth once per interpreter (gh-106905): a batch's grading threads
    parsing at once failed with SystemError "AST constructor recursion depth mismatch", so they take turns."""
    import threading
    import time

    inside, most, real_parse = [0], [0], ast.parse

    def slow_parse(source, *args, **kwargs):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.02)
        inside[0] -= 1
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", slow_parse)
    threads = [threading.Thread(target=cellcode.parse, args=("x = 1",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1


def test_violations_come_in_the_same_order_in_every_process():
    """Several violations on one line and rule are ordered by their message, not by a set's order,
    which changes with each process's hash seed: a regrade's review reads the same."""
    source = "import torch, math\ntorch.allclose = torch.equal = math.isclose = torch.isclose = lambda a, b: True\n"
    code = ("import sys; from autograder import course; from nbtest import policy; "
            "rules = policy.for_assignment(course.load().assignment('residual-connections').rules); "
            "print([v.message for v in policy.check(sys.argv[1], rules)])")
    seen = {subprocess.run([sys.executable, "-c", code, source], cwd=ROOT, env={"PYTHONHASHSEED": str(seed)},
                           capture_output=True, text=True, check=True).stdout for seed in range(1, 7)}
    assert len(seen) == 1 and seen.pop().count("assigning to") == 4, seen


def test_honest_modules_pass_in_any_assignment_and_the_others_stay_flagged():
    """__future__ and warnings: nothing the grade rests on (policy.HONEST_MODULES); copy, time, random and
    logging are flagged, as the notebooks' rules section says (nbtest/rules_text.py); an installed library the
    list leaves out also holds the tests that rest on the child's reports: the policy vouches only for the
    modules it lists and the standard library's (cffi writes raw addresses)."""
    honest = "from __future__ import annotations\nimport warnings\n\nwarnings.filterwarnings('ignore')\n"
    assert policy.check_cells(with_cells(RESIDUAL_NB, split_gradient=honest), RESIDUAL) == []
    for module, severity in (("copy", FLAG), ("time", FLAG), ("random", FLAG), ("logging", FLAG),
                             ("cffi", WITHHOLD), ("triton", WITHHOLD), ("scipy.linalg", WITHHOLD)):
        found = policy.check_cells(with_cells(RESIDUAL_NB, split_gradient=f"import {module}\n"), RESIDUAL)
        assert rules(found) == {("import", severity)}, module


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
    "a metaclass under typing": ("import typing\nW = typing.ABCMeta('W', (), {})\n", {("protocol", WITHHOLD)}),
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


@pytest.mark.parametrize("line, found", [
    # honest7's fan_12 and fan_13: a tensor's kind read off its dtype, the first tensor that fails a check
    ("if x.is_complex() or torch.is_complex(fx) or not x.is_signed():\n        raise TypeError('real floats only')",
     set()),
    ("bad = next((t for t in (x, fx) if t.dtype == torch.float64), None)\n    if bad is not None:\n"
     "        raise TypeError(f'float64 is not supported: {bad.dtype}')", set()),
    ("first = next(iter((x, fx)))\n    z = first * 2", {("wrapper-arithmetic", FLAG)}),   # next hands on a tensor
    ("if x.is_nonzero():\n        pass", {("wrapper-torch-op", FLAG)}),                   # reads the value
])
def test_a_wrappers_dtype_predicates_and_next_read_no_values(line, found):
    """is_complex, is_signed and their kin read a tensor's dtype and flags, as is_floating_point does; next()
    and iter() hand on what they are given, as zip and tuple do, so computing on it is still seen."""
    body = wrapper_with(line)
    assert wrapper_rules(body) == found


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


@pytest.mark.parametrize("assignment, path, found", [
    ("residual-connections", "torch.nn.functional.np", set()),                      # numpy: an import it allows
    ("fused-add-norm", "torch.nn.functional.np", {("import", WITHHOLD)}),           # outside its imports,
    ("fused-add-norm", "torch.nn.functional.np.zeros", {("import", WITHHOLD)}),     # as `import numpy` is
    ("fused-add-norm", "typing.operator", {("import", FLAG)}),                      # the standard library's
    ("fused-add-norm", "typing.sys", {("process-introspection", WITHHOLD)}),
])
def test_a_module_reached_as_another_modules_attribute_is_judged_as_its_import(assignment, path, found):
    """A path that reaches a module under another's name finds what `import` of that module finds: an installed
    library outside the assignment's imports held, a standard-library one flagged, a process module held."""
    rules_of = {"residual-connections": RESIDUAL, "fused-add-norm": FUSED}[assignment]
    source = f"import torch\nimport typing\nimport torch.nn.functional\nx = {path}\n"
    assert {(v.rule, v.severity) for v in policy.check(source, rules_of) if v.rule != "forbidden-module"} == found


# red team 9: a notebook object reached in the wrapper through a name the checks took for plain data, a plain
# method's name, or an item; each beside the honest shape it imitates
NORM = "class Norm:\n    def get(self, a, b):\n        return torch.add(a, b)\n\n    def __getitem__(self, k):\n" \
       "        return torch.add(*k)\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    # an assignment expression inside data computed once binds its own value, not the string around it
    (NORM + 'TAG = f"{(ADDER := Norm())}"\n\n\n', "h0 = ADDER.get(x, fx)", {("wrapper-torch-op", FLAG)}),
    (NORM + 'TAG = f"{(ADDER := Norm())}"\n\n\n', "h0 = ADDER[x, fx]", {("wrapper-torch-op", FLAG)}),
    # a name some function binds with `global` holds what that function gives it
    (NORM + "ADDER = 0\n\n\ndef arm():\n    global ADDER\n    ADDER = Norm()\n\n\n", "h0 = ADDER.get(x, fx)",
     {("wrapper-torch-op", FLAG)}),
    # a plain method's name on an object of the notebook's, an exception caught, an item of a tuple
    ("class Launch:\n    def __init__(self):\n        self.get = torch.add\n\n\nLAUNCH = Launch()\n\n\n",
     "h0 = LAUNCH.get(x, fx)", {("wrapper-torch-op", FLAG)}),
    ("class WidthError(ValueError):\n    def get(self, a, b):\n        return torch.add(a, b)\n\n\n",
     "try:\n        raise WidthError('x')\n    except WidthError as err:\n        h0 = err.get(x, fx)",
     {("wrapper-torch-op", FLAG)}),
    (NORM, "rows = (Norm(),)[0]\n    h0 = rows.get(x, fx)", {("wrapper-torch-op", FLAG)}),
    (NORM, "h0 = Norm()[x, fx]", {("wrapper-torch-op", FLAG)}),
    (NORM + "def pick(table):\n    return table.get(1, 2)\n\n\n", "pick(Norm())", {("wrapper-torch-op", FLAG)}),
    ("TABLE = {}\n\n\ndef keep(v):\n    TABLE['k'] = v\n\n\n", "h0 = TABLE['k'].get(x, fx)",
     {("wrapper-torch-op", FLAG)}),
    # the honest shapes: a local list and dict, a message's parts, a table of data, a helper's plain result
    ("", "problems = []\n    problems.append(f'{n}')\n    sizes = {'n': n}\n    for k, v in sizes.items():\n"
         "        problems.append(str(v).split('.')[0].rstrip())\n    if problems and not problems[0]:\n"
         "        raise ValueError(', '.join(problems))", set()),
    ('WARPS = {"small": 4, "big": 8}\n\n\ndef rows_of(t):\n    return t.reshape(-1, t.shape[-1])\n\n\n',
     "w = WARPS['small'] + (n - 1).bit_length()\n    r = rows_of(x).shape[0]", set()),
    # red team 10: a parameter left at an object's default, an attribute set on a local, a raise's cause, a
    # parameter handed an exception class and then bound to a function
    (NORM, "rows = torch.no_grad()\n    rows.get = torch.add\n    h0 = rows.get(x, fx)", {("wrapper-torch-op", FLAG)}),
    ("", "try:\n        raise ValueError('x') from torch.add(x, fx)\n    except ValueError:\n        pass",
     {("wrapper-torch-op", FLAG)}),
    ("def refuse(error, *args):\n    if args:\n        error = torch.add\n    raise error(*args)\n\n\n",
     "try:\n        refuse(ValueError, x, fx)\n    except ValueError:\n        pass", {("wrapper-torch-op", FLAG)}),
    # an attribute of the notebook's object read in its own method: as the class assigns it
    ("class Launch:\n    def __init__(self):\n        self.get = torch.add\n        self.notes = []\n\n"
     "    def run(self, a, b):\n        self.notes.append('run')\n        return self.get(a, b)\n\n\n"
     "LAUNCH = Launch()\n\n\n", "h0 = LAUNCH.run(x, fx)", {("wrapper-torch-op", FLAG)}),
], ids=["walrus-in-data", "walrus-item", "global-rebinds", "settings-attribute-get", "exception-caught-get",
        "item-of-a-tuple", "item-of-an-object", "object-handed-to-a-helper", "item-of-a-module-table",
        "honest-local-containers", "honest-table-and-helper", "attribute-set-on-a-local",
        "raise-cause", "raiser-rebound", "self-attribute-get"])
def test_a_plain_methods_name_is_vouched_only_on_plain_data(before, line, found):
    """A plain method's name (get, append, items) or an item is Python's own only on what is plain data for
    certain: a literal, a data name, what a builtin or a helper returning such makes (red team 9: ten fused
    notebooks returned torch's h and y through get, [] and an assignment expression)."""
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


@pytest.mark.parametrize("default, found", [("ROWS", {("wrapper-torch-op", FLAG)}), ("TABLE", set())])
def test_a_wrapper_parameter_left_at_its_default_holds_that_default(default, found):
    """The grader hands the wrapper x, fx, weight, bias and eps; a parameter it leaves at its default holds that
    default (red team 10: rows=ROWS, an object of the notebook's whose get computed y)."""
    body = NORM + "ROWS = Norm()\nTABLE = {'warps': 4}\n\n\n" + wrapper_with(
        "h0 = rows.get('warps', 4)").replace("eps: float = 1e-5", f"eps: float = 1e-5, rows={default}", 1)
    got = wrapper_rules(body)
    assert found <= got if found else got == set()


# red team 11: code of the notebook's that the wrapper runs without calling it by name. A class it builds has its
# special methods called by Python (with, for, ==, f"{obj}", len(), del); a def, a method or a class handed on as a
# value (key=, filter, iter) is called by what it is handed to. HELD hands the tensors over through a module list.
ROWS = "class Rows:\n    def __init__(self, *args):\n        self.args = args\n\n    def __SPECIAL__(self, *more):\n" \
       "        h0 = torch.add(*self.args)\n        return 0\n\n\n"
HELD = "HELD = []\n\n\ndef norm_key(item):\n    h0 = torch.add(*HELD.pop())\n    return item\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    *[(ROWS.replace("SPECIAL", special), line, {("wrapper-torch-op", FLAG)}) for special, line in [
        ("enter", "with Rows(x, fx):\n        pass"), ("exit", "with Rows(x, fx):\n        pass"),
        ("iter", "for _ in Rows(x, fx):\n        pass"), ("format", "note = f'{Rows(x, fx)}'"),
        ("eq", "same = Rows(x, fx) == 1"), ("len", "count = len(Rows(x, fx))"), ("bool", "assert Rows(x, fx)"),
        ("del", "Rows(x, fx)"), ("hash", "seen = {Rows(x, fx)}"), ("index", "span = range(Rows(x, fx))")]],
    # a special method inherited from a base class of the notebook's
    (ROWS.replace("SPECIAL", "iter").replace("class Rows:", "class Base:").replace("    def __init__", "    def _i")
     + "class Rows(Base):\n    def __init__(self, *args):\n        self.args = args\n\n\n",
     "for _ in Rows(x, fx):\n        pass", {("wrapper-torch-op", FLAG)}),
    (HELD, "HELD.append((x, fx))\n    order = min([0], key=norm_key)", {("wrapper-torch-op", FLAG)}),
    (HELD, "HELD.append((x, fx))\n    order = list(filter(norm_key, [0]))", {("wrapper-torch-op", FLAG)}),
    (ROWS.replace("__SPECIAL__", "key") + "ROWS = Rows(1, 2)\n\n\n",
     "ROWS.args = (x, fx)\n    order = min([0], key=ROWS.key)", {("wrapper-torch-op", FLAG)}),
    # honest: a class with special methods that compute nothing, a def handed on that only reads sizes
    ("class Shape:\n    def __init__(self, t):\n        self.dims = tuple(t.shape)\n\n    def __len__(self):\n"
     "        return len(self.dims)\n\n    def __repr__(self):\n        return f'Shape{self.dims}'\n\n\n",
     "rank = len(Shape(x))\n    note = repr(Shape(fx))", set()),
    ("import functools\n\n\ndef times(a, b):\n    return a * b\n\n\ndef neg(d):\n    return -d\n\n\n",
     "rows = functools.reduce(times, x.shape[:-1], 1)\n    by = sorted(x.shape, key=neg)\n"
     "    x3 = x.reshape(rows, n)\n    k = x3.shape[0]", set()),
], ids=["enter", "exit", "iter", "format", "eq", "len", "bool", "del", "hash", "index", "inherited", "key", "filter",
        "bound-method", "honest-special-methods", "honest-def-handed-on"])
def test_what_the_wrapper_hands_on_or_builds_is_walked_as_called(before, line, found):
    """A def, method or class of the notebook's handed on as a value, and the special methods of a class the wrapper
    builds, are walked as if called with anything (red team 11: 15 fused notebooks scored 40 against 26.67 and
    37.33 by computing y there)."""
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


# red team 12: code the wrapper runs unwritten through a library's base class (nn.Module's __call__ runs forward), a
# module-level object reached through its own field, the kernel's name bound in the wrapper, a kernel's attributes
MODULE_ROWS = "class Rows(torch.nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n" \
              "        self.args = args\n\n    def forward(self, item):\n        h0 = torch.add(*self.args)\n" \
              "        return item\n\n\n"
ERRORS = "class Errors:\n    def __init__(self):\n        self.problems = []\n\n    def __enter__(self):\n" \
         "        return self\n\n    def add(self, m):\n        BODY\n\n    def __exit__(self, kind, error, trace):\n" \
         "        if kind is None and self.problems:\n            raise ValueError('; '.join(self.problems))\n\n\n"
SELF_ROWS = "class Rows:\n    def __init__(self):\n        self.args = ()\n        self.me = self\n\n" \
            "    def __iter__(self):\n        h0 = torch.add(*self.args)\n        return iter(())\n\n\n" \
            "ROWS = Rows()\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    (MODULE_ROWS, "order = min([0], key=Rows(x, fx))", {("wrapper-torch-op", FLAG)}),
    (MODULE_ROWS.replace("forward", "extra_repr"), "note = repr(Rows(x, fx))", {("wrapper-torch-op", FLAG)}),
    (SELF_ROWS, "ROWS.args = (x, fx)\n    for _ in ROWS.me:\n        pass", {("wrapper-torch-op", FLAG)}),
    (SELF_ROWS, "fused_add_layernorm_kernel = ROWS.me", {("wrapper-no-launch", FLAG)}),
    ("fused_add_layernorm_kernel.values.update(BLOCK=print)\n\n\n", "pass", {("kernel-attribute", FLAG)}),
    ("K = fused_add_layernorm_kernel\nK.add_pre_run_hook(print)\n\n\n", "pass", {("kernel-attribute", FLAG)}),
    # red team 18: the interpreter runs a kernel's fn, set by setattr with a literal name
    ("setattr(fused_add_layernorm_kernel, 'fn', print)\n\n\n", "pass", {("kernel-attribute", FLAG)}),
    # red team 18: what a library's decorator on a method returned, reached: singledispatchmethod's register,
    # cached_property's func set off the class
    ("import functools\n\n\nclass Go:\n    @functools.singledispatchmethod\n    def go(self, a):\n"
     "        return a\n\n\nGo.go.register(bool, print)\n\n\n", "z = Go().go(x)", {("wrapper-torch-op", FLAG)}),
    ("import functools\n\n\nclass Go:\n    @functools.cached_property\n    def n(self):\n        return 4\n\n\n"
     "setattr(Go.n, 'func', print)\n\n\n", "z = Go().n", {("wrapper-torch-op", FLAG)}),
    # honest: a cached getter's value asked for its own attribute, a method cached by lru_cache and called
    ("import functools\n\n\nclass Go:\n    @functools.cached_property\n    def n(self):\n        return 4\n\n"
     "    @functools.lru_cache(maxsize=None)\n    def block(self, k):\n        return triton.next_power_of_2(k)\n\n\n",
     "z = Go().n.bit_length() + Go().block(n)", set()),
    # honest: a property, a module-level object asked `in`, constants built from the course's, sorted and max keyed
    ("class Cfg:\n    def __init__(self, n):\n        self.n = n\n\n    @property\n    def block(self):\n"
     "        return triton.next_power_of_2(self.n)\n\n\n", "block = Cfg(n).block", set()),
    ("class DtypeSet:\n    def __init__(self, *d):\n        self.dtypes = d\n\n    def __contains__(self, dt):\n"
     "        return dt in self.dtypes\n\n\nSUPPORTED = DtypeSet(torch.float16, torch.float32)\n"
     "OK = frozenset(DTYPES)\n\n\n", "ok = x.dtype in SUPPORTED and x.dtype in OK", set()),
    ("def _rank(t):\n    return t.dim()\n\n\n",
     "for t in sorted((x, fx), key=_rank):\n        assert t.dim() >= 1\n"
     "    widest = max((('weight', weight), ('bias', bias)), key=len)", set()),
    ("def _rank(t):\n    return t.sum()\n\n\n", "first = sorted((x, fx), key=_rank)", {("wrapper-torch-op", FLAG)}),
    ("", "first = sorted((x, fx), key=lambda t: t)", {("wrapper-arithmetic", FLAG)}),
    # a class of constants, one of them read from the course's (honest round 13's e01), or naming a function
    ("class Limits:\n    MAX = MAX_WIDTH\n    LANES = 256\n\n\n",
     "if n > Limits.MAX:\n        raise ValueError('wide')\n    w = max(n // Limits.LANES, 1)", set()),
    ("ADD = torch.add\n\n\nclass Limits:\n    GET = ADD\n\n\n", "h0 = Limits.GET(x, fx)", {("wrapper-torch-op", FLAG)}),
    # a context manager of the notebook's whose __enter__ returns itself (honest round 14's fan_03): the `as`
    # target is that object, its methods walked as called
    (ERRORS.replace("BODY", "self.problems.append(m)"),
     "with Errors() as errors:\n        if x.shape != fx.shape:\n            errors.add('shapes differ')", set()),
    (ERRORS.replace("BODY", "self.problems.append(torch.add(m, m))"),
     "with Errors() as errors:\n        errors.add(x)", {("wrapper-torch-op", FLAG)}),
], ids=["module-forward", "module-extra-repr", "object-through-its-field", "kernel-name-bound",
        "kernel-values-updated", "kernel-alias-hooked", "kernel-fn-by-setattr", "method-registered",
        "getter-func-set", "honest-cached-getter-and-method", "honest-property", "honest-contains-and-frozenset",
        "honest-sorted-and-max-keyed", "sorted-by-values", "sorted-by-tensors", "honest-class-of-constants",
        "class-constant-naming-a-function", "honest-errors-collected-in-a-with", "with-target-computes"])
def test_what_a_library_base_or_a_module_object_runs_is_walked(before, line, found):
    """nn.Module's own code calls its methods by name, a module-level object's special methods run wherever it is
    reached, and a kernel's attributes are Triton's (red team 12: 13 fused notebooks scored 40 against 26.67 and
    37.33 by computing y there or in a heuristic set after the kernel was decorated)."""
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


# honest round 12: an exception class of Python's two, a width bound by a match, module constants a builtin or a
# comprehension builds, a fold of sizes, kernels in a table. Beside each, the same shape holding what computes
LAUNCH = "fused_add_layernorm_kernel[(rows_x.shape[0],)]("


@pytest.mark.parametrize("before, edits, found", [
    ("class DtypeError(ValueError, TypeError):\n    pass\n\n\n",
     [("raise ValueError(f\"x and fx must share", "raise DtypeError(f\"x and fx must share")], set()),
    ("class ShapeError(ValueError):\n    pass\n\n\nclass DtypeError(ShapeError, TypeError):\n    pass\n\n\n",
     [("raise ValueError(f\"x and fx must share", "raise DtypeError(f\"x and fx must share")], set()),
    ("class ShapeError(ValueError):\n    pass\n\n\nclass Other(ValueError):\n    pass\n\n\n"
     "class DtypeError(ShapeError, Other):\n    pass\n\n\n",         # two of the notebook's: not followed
     [("raise ValueError(f\"x and fx must share", "raise DtypeError(f\"x and fx must share")],
     {("wrapper-torch-op", FLAG)}),
    ("", [("n = x.shape[-1]\n", "match tuple(x.shape):\n        case (*_, n):\n            pass\n"),
          ("rows_x.shape[0]", "rows_x.shape[0] + 0")], set()),
    ("ACCEPTED = frozenset({torch.float16, torch.bfloat16, torch.float32})\nBLOCKS = (256, 512)\n"
     "WARPS = dict(zip(BLOCKS, (1, 2)))\nBY_BLOCK = {2 ** k: max(2 ** k // 256, 1) for k in range(14) if k > 1}\n\n\n",
     [("if not dtypes <= DTYPES", "if not dtypes <= ACCEPTED"),
      ("num_warps=min(max(block // 256, 1), 16)", "num_warps=WARPS.get(block, BY_BLOCK[block])")], set()),
    ("WARPS = dict(small=torch.add)\n\n\n",
     [("n = x.shape[-1]\n", "n = x.shape[-1]\n    h0 = WARPS['small'](x, fx)\n")],
     {("wrapper-torch-op", FLAG)}),
    ("def _warps(k):\n    return k\n\n\nBY_BLOCK = {k: _warps(k) for k in range(4)}\n\n\n",
     [("num_warps=min(max(block // 256, 1), 16)", "num_warps=BY_BLOCK[block]")], {("wrapper-torch-op", FLAG)}),
    ("BY_BLOCK = dict(zip((1, 2), (1, 2)))\nBY_BLOCK['add'] = torch.add\n\n\n",     # stored into: not data
     [("n = x.shape[-1]\n", "n = x.shape[-1]\n    h0 = BY_BLOCK.get('add')(x, fx)\n")], {("wrapper-torch-op", FLAG)}),
    ("import functools\n\n\n", [("n = x.shape[-1]\n", "n = x.shape[-1]\n    rows = functools.reduce("
                                  "lambda a, b: a * b, x.shape[:-1], 1)\n"),
                                 ("rows_x.shape[0]", "rows")], set()),
    ("import functools\n\n\n",
     [("n = x.shape[-1]\n", "n = x.shape[-1]\n    h0 = functools.reduce(torch.add, [x, fx])\n")],
     {("wrapper-arithmetic", FLAG)}),
    ("import functools\n\n\n", [("rows_x, rows_fx = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()",
                                  "as_rows = functools.partial(torch.reshape, shape=(-1, n))\n"
                                  "    rows_x, rows_fx = as_rows(x).contiguous(), as_rows(fx).contiguous()"),
                                 ("rows_x.shape[0]", "rows_x.shape[0] + 0")], set()),
    ("import functools\n\n\n",
     [("n = x.shape[-1]\n", "n = x.shape[-1]\n    adder = functools.partial(torch.add, x)\n    h0 = adder(fx)\n")],
     {("wrapper-torch-op", FLAG)}),
    ("KERNELS = {'row': fused_add_layernorm_kernel}\n\n\n",
     [(LAUNCH, "kernel = KERNELS['row']\n    kernel[(rows_x.shape[0],)](")], set()),
    ("KERNELS = (fused_add_layernorm_kernel,)\n\n\n", [(LAUNCH, "KERNELS[0][(rows_x.shape[0],)](")], set()),
    ("KERNELS = {'row': fused_add_layernorm_kernel}\nKERNELS['row'] = print\n\n\n",
     [(LAUNCH, "KERNELS['row'][(rows_x.shape[0],)](")], {("wrapper-no-launch", FLAG)}),
    # red team 13: a def read (here by a partial) before a second def of its name, the one checked, binds it again
    ("import functools\n\n\ndef helper(a, b):\n    return torch.add(a, b)\n\n\nRUN = functools.partial(helper)\n\n\n"
     "def helper(a, b):\n    return None\n\n\n", [("n = x.shape[-1]\n", "n = x.shape[-1]\n    RUN(x, fx)\n")],
     {("wrapper-rebound", FLAG)}),
    ("def helper(a):\n    return a\n\n\ndef helper(a):\n    return a.shape\n\n\n",
     [("n = x.shape[-1]\n", "n = helper(x)[-1]\n")], set()),
], ids=["two-exception-bases", "notebook-and-python-bases", "two-notebook-bases", "match-capture",
        "constants-built", "built-with-keywords", "comprehension-calls-a-def", "built-then-stored",
        "reduce-of-sizes", "reduce-of-tensors", "partial-of-reshape", "partial-of-add", "kernel-table-alias",
        "kernel-table-item", "kernel-table-stored", "def-read-before-it-is-defined-again", "def-defined-twice"])
def test_a_wrappers_tables_errors_and_captures_read_as_what_they_hold(before, edits, found):
    body = WRAPPER_SOURCE
    for old, new in edits:
        assert old in body, old
        body = body.replace(old, new, 1)
    got = wrapper_rules(before + body)
    assert found <= got if found else got == set()


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


def test_data_may_be_ordered_by_a_builtin_key_or_made_by_a_strings_method():
    before = "NAMES = {d: str(d).removeprefix('torch.') for d in sorted(DTYPES, key=str)}\n\n\n"
    line = "bad = sorted((k for k in ('x', 'fx') if x.dtype not in DTYPES), key=len)\n    first = bad[0] if bad " \
           "else NAMES[x.dtype]"
    assert wrapper_rules(before + wrapper_with(line)) == set()


# honest round 10: an exception class handed on, aliased or listed; typing.cast; a kernel chosen by a conditional.
# Beside each, the same shape holding what computes
SILENT = "class ShapeError(ValueError):\n    pass\n\n\n"
LOUD = "class ShapeError(ValueError):\n    def __init__(self, a, b):\n        super().__init__('no')\n        " \
       "self.h = torch.add(a, b)\n\n\n"
RAISE_WITH = "def require(ok, error, message):\n    if not ok:\n        raise error(message)\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    (SILENT + RAISE_WITH, "require(n > 0, ShapeError, 'n')\n    require(n < 9, ValueError, f'{n}')", set()),
    (LOUD + RAISE_WITH, "require(n > 0, ShapeError, x)", {("wrapper-torch-op", FLAG)}),
    (RAISE_WITH, "try:\n        require(False, torch.Tensor.add_, x)\n    except TypeError:\n        pass",
     {("wrapper-torch-op", FLAG)}),
    (SILENT, "for failed, error, message in [(n < 1, ShapeError, 'n'), (n > 9, TypeError, f'{n}')]:\n"
             "        if failed:\n            raise error(message)", set()),
    ("", "for failed, error in [(n < 1, torch.add)]:\n        if failed:\n            raise error(x, fx)",
     {("wrapper-torch-op", FLAG)}),
    ("Mismatch = ValueError\n\n\n", "if n < 1:\n        raise Mismatch('n')\n    Local = TypeError\n"
                                     "    if n > 9:\n        raise Local('n')", set()),
    ("Mismatch = torch.add\n\n\n", "if n < 1:\n        raise Mismatch(x, fx)", {("wrapper-torch-op", FLAG)}),
    ("import typing\n\n\n", "x2 = typing.cast(torch.Tensor, x.reshape(-1, n))", set()),
    ("import typing\n\n\n", "x2 = typing.cast(torch.Tensor, x.reshape(-1, n))\n    h0 = x2 * 2",
     {("wrapper-arithmetic", FLAG)}),
], ids=["exception-handed-on", "exception-that-computes", "torch-op-handed-as-exception", "exception-table",
        "torch-op-in-a-table", "exception-aliases", "torch-op-aliased", "typing-cast", "typing-cast-computes"])
def test_an_exception_class_handed_on_and_a_cast_compute_nothing(before, line, found):
    """raise error(message) where error holds, by every binding or argument, an exception class that computes
    nothing when built (Python's own, the notebook's without __init__), and typing.cast, which hands back what
    it is given, are checks (honest10's fan_08, fan_17, fan_34, fan_35, fan_18); holding anything else, the
    call is what it calls."""
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


@pytest.mark.parametrize("before, line, found", [
    # honest11's fan_22, fan_48, fan_49: a predicate of the wrapper's own returns what its body returns
    ("", "ok = lambda u: u.dtype in DTYPES\n    if not ok(x):\n        raise ValueError('dtype')", set()),
    ("", "shape_of = lambda t: tuple(t.shape)\n    if shape_of(x) != shape_of(fx):\n        raise ValueError('s')",
     set()),
    ("", "twice = lambda t: t * 2\n    if not twice(x):\n        pass", {("wrapper-arithmetic", FLAG)}),
    # honest11's fan_16, fan_43: the course's own names (DTYPES) are its data
    ("", "checks = [(x.dtype in DTYPES, f'{x.dtype}')]\n    for check in checks:\n        if not check[0]:\n"
         "            raise ValueError(check[1])", set()),
    # honest11's fan_15, fan_29, fan_41, fan_83: a module-level table only read, copied or unpacked
    ('DEFAULTS = {"num_warps": 4}\nMSG = {"shape": "bad shape"}\n\n\n',
     "opts = dict(DEFAULTS)\n    opts['num_warps'] = min(8, DEFAULTS.get('num_warps', 4))\n    more = {**DEFAULTS}\n"
     "    if n < 0:\n        raise ValueError(MSG.get('shape', '') + f' {n}')", set()),
    ('DEFAULTS = {"num_warps": 4}\n\n\ndef keep(t):\n    DEFAULTS.update(t=t)\n\n\n',
     "h0 = DEFAULTS.get('t') + 1", {("wrapper-arithmetic", FLAG)}),
    # honest11's fan_23, fan_45, fan_50, fan_63: an exception class taken from a table, raised
    ("ERRORS = {'shape': ValueError}\nEXC = (TypeError,)\n\n\n", "errors = {'width': ValueError}\n"
     "    if n < 0:\n        raise ERRORS['shape']('n')\n    if n > 9:\n        raise EXC[0]('n')\n"
     "    error = ERRORS['shape']\n    if n == 5:\n        raise error('n')\n    if n == 6:\n"
     "        raise errors['width']('n')", set()),
    ("ERRORS = {'shape': torch.add}\n\n\n", "try:\n        raise ERRORS['shape'](x, fx)\n    except TypeError:\n"
     "        pass", {("wrapper-no-launch", FLAG)}),     # an item called reads as a launch: no kernel
    # honest11's fan_42: an item of a NamedTuple of constants
    ("from typing import NamedTuple\n\n\nclass Cfg(NamedTuple):\n    max_warps: int = 16\n\n\nCFG = Cfg()\n\n\n",
     "w = min(CFG[0], 8)", set()),
], ids=["lambda-predicate", "lambda-shape", "lambda-computes", "course-data-in-a-table", "table-only-read",
        "table-stored-into", "exception-tables", "torch-op-in-a-table", "namedtuple-item"])
def test_a_wrappers_helpers_and_tables_read_as_they_are(before, line, found):
    """A helper of the wrapper's own holds a tensor where its `return` does, the course's cells' names are
    its data, and a module-level table every use of which only reads it holds no tensor; a table some
    function stores into still may."""
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


def test_a_kernel_chosen_by_a_conditional_is_launched_as_a_kernel():
    """kernel = small_kernel if n <= 256 else fused_add_layernorm_kernel; kernel[grid](...) (honest10's fan_40)
    launches the notebook's kernel; a choice with anything else is no kernel."""
    second = "@triton.jit\ndef small_kernel(x_ptr):\n    pass\n\n\n"
    chosen = ALIASED.replace("    kernel = fused_add_layernorm_kernel\n",
                             "    kernel = small_kernel if n <= 256 else fused_add_layernorm_kernel\n")
    assert wrapper_rules(second + chosen.replace("BEFORE", "pass")) == set()
    mixed = chosen.replace("small_kernel if", "torch.add if")
    assert ("wrapper-no-launch", FLAG) in wrapper_rules(second + mixed.replace("BEFORE", "pass"))


REQUIRE = ("import functools\n\n\ndef _require(name, t, allowed):\n    if t.dtype not in allowed:\n"
           "        raise TypeError(f'{name}: {t.dtype}')\n\n\n")
SETTINGS = ("class Launch:\n    def __init__(self, per_warp: int = 256):\n        self.per_warp = per_warp\n\n"
            "    def warps(self, block):\n        return block // self.per_warp\n\n\n")


@pytest.mark.parametrize("before, line, found", [
    # honest8's fan_06, fan_29, fan_30: an exception class of the notebook's, a device's SM count, a message
    ('class WidthError(ValueError):\n    """Too wide."""\n\n\n', "if n > 1 << 16:\n        raise WidthError('too wide')",
     set()),
    ("NUM_SMS = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 4\n"
     "MAX_WIDTH = 1 << 16\nMAX_BLOCK = triton.next_power_of_2(MAX_WIDTH)\n\n\n",
     "grid = (max(1, min(n, 4 * NUM_SMS, MAX_BLOCK)),)", set()),
    # what an object's own operators return may be anything: abs(obj) is data only when obj is
    ("class K:\n    def __abs__(self):\n        return torch.add\n\n\nADD = abs(K())\n\n\n", "h0 = ADD(x, fx)",
     {("wrapper-torch-op", FLAG)}),
    ('ACCEPTED = ", ".join(sorted(str(d) for d in (torch.float16, torch.float32)))\nWHAT = f"dtypes {ACCEPTED}"\n\n\n',
     "if x.dtype not in (torch.float16, torch.float32):\n        raise TypeError(WHAT)", set()),
    # an exception class whose __init__ computes is followed as the notebook's own code
    ("class Out(ValueError):\n    def __init__(self, a, b):\n        super().__init__('out')\n        self.h = a + b\n\n\n",
     "h0 = Out(x, fx).h", {("wrapper-arithmetic", FLAG)}),
    # a module-level name bound to a call's result stays opaque unless the call returns plain data
    ("ADD = functools.partial(torch.add)\n\n\n", "h0 = ADD(x, fx)", {("wrapper-torch-op", FLAG)}),
    ("ValueError = lambda *a: torch.add(*a)\nclass E(ValueError):\n    pass\n\n\n", "h0 = E(x, fx)",
     {("wrapper-torch-op", FLAG)}),
    # honest8's fan_27: a settings object built with plain data; built with a tensor, what it holds is one
    (SETTINGS + "LAUNCH = Launch()\n\n\n", "w = min(max(LAUNCH.warps(n), 1), 16)", set()),
    (SETTINGS + "LAUNCH = Launch(per_warp=torch.ones(1))\n\n\n", "w = min(max(LAUNCH.warps(n), 1), 16)",
     {("wrapper-arithmetic", FLAG)}),
    # honest9's fan_07 and fan_12: a Literal's choices, a dict of ints only ever read by key
    ('import typing\nName = typing.Literal["float16", "float32"]\nNAMES = typing.get_args(Name)\n\n\n',
     "if str(x.dtype).removeprefix('torch.') not in NAMES:\n        raise TypeError('dtype')", set()),
    ('LAUNCH = {"elems": 8, "max_warps": 8}\n\n\n', "w = min(max(n // (32 * LAUNCH['elems']), 1), LAUNCH['max_warps'])",
     set()),
    ('CACHE = {"elems": 8}\n\n\ndef keep(t):\n    CACHE["t"] = t\n\n\n', "w = n // CACHE['elems']",
     {("wrapper-arithmetic", FLAG)}),
    # honest9's fan_06 and fan_14: functools.partial of a check of the notebook's, at module level or local
    (REQUIRE + "_require_float = functools.partial(_require, allowed=(torch.float16, torch.float32))\n\n\n",
     "_require_float('x', x)", set()),
    (REQUIRE, "check = functools.partial(_require, allowed=(torch.float32,))\n    check('x', x)", set()),
    # a partial is the call of what it binds: that def's arithmetic is seen, a torch function's stays a torch op
    ("import functools\n\n\ndef _add(a, b):\n    return a + b\n\n\n",
     "add = functools.partial(_add, x)\n    h0 = add(fx)",
     {("wrapper-arithmetic", FLAG)}),
    ("import functools\nADD = functools.partial(torch.add, alpha=1)\n\n\n", "h0 = ADD(x, fx)",
     {("wrapper-torch-op", FLAG)}),
], ids=["exception-class", "device-data", "operator-result", "message", "exception-init-computes", "partial-held", "exception-rebound",
        "settings-object", "settings-object-with-a-tensor", "literal-choices", "config-dict", "dict-stored-into",
        "partial-module", "partial-local", "partial-computes", "partial-of-torch"])
def test_module_data_and_exception_classes_of_the_notebook_in_a_wrapper(before, line, found):
    """A number, string or bool computed once at module level (a device's SM count, a message) is plain data,
    and an exception class of the notebook's computes nothing when built; what could compute stays seen."""
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


# honest round 15: a class of functools.total_ordering, a sort of a dict's items by key, a heuristic calling a
# def of the notebook's. Beside each, the same shape computing on the data
ORDERED = "import functools\n\n\n@functools.total_ordering\nclass Width:\n    def __init__(self, n):\n        " \
          "self.n = n\n\n    def __eq__(self, other):\n        return self.n == other.n\n\n    " \
          "def __lt__(self, other):\n        return {}\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    (ORDERED.format("self.n < other.n"), "if Width(n) > Width(MAX_WIDTH):\n        raise ValueError('too wide')",
     set()),
    (ORDERED.format("bool(self.n.sum() < 0)"), "if Width(x) >= Width(fx):\n        pass",
     {("wrapper-torch-op", FLAG)}),
    ("", "for name, t in sorted({'weight': weight, 'bias': bias}.items(), key=lambda kv: kv[0]):\n"
         "        if t.shape != (n,):\n            raise ValueError(name)", set()),
    ("", "for name, t in sorted({'weight': weight, 'bias': bias}.items(), key=lambda kv: kv[1].sum().item()):\n"
         "        pass", {("wrapper-torch-op", FLAG)}),
    ("", "for name, t in sorted({'weight': weight, 'bias': bias}.items(), key=lambda kv: (kv[0], kv)):\n"
         "        pass", {("wrapper-arithmetic", FLAG)}),
], ids=["total-ordering", "total-ordering-computes", "items-by-key", "items-by-value", "items-by-the-pair"])
def test_an_ordered_class_and_a_sort_by_key_read_what_they_compare(before, line, found):
    got = wrapper_rules(before + wrapper_with(line))
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


# honest rounds 14 and 15: a class of the notebook's whose __init__ keeps plain data, read back through a @property
# or as a field; a property whose getter returns a tensor is one
ROWS = "class Rows:\n    def __init__(self, shape):\n        self.shape = shape\n{}\n    @property\n" \
       "    def width(self):\n        return self.shape[-1]\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    (ROWS.format(""), "rows = Rows(tuple(x.shape))\n    if rows.width > MAX_WIDTH:\n        raise ValueError('wide')",
     set()),
    (ROWS.format(""), "rows = Rows(x)\n    h0 = rows.shape * 2", {("wrapper-arithmetic", FLAG)}),
    (ROWS.format("\n    def reset(self, t):\n        self.shape = t\n"),
     "rows = Rows(tuple(x.shape))\n    if rows.width > MAX_WIDTH:\n        raise ValueError('wide')",
     {("wrapper-torch-op", FLAG)}),
    (ROWS.format(""), "rows = Rows(tuple(x.shape))\n    rows.shape = fx\n    h0 = rows.width * 2",
     {("wrapper-arithmetic", FLAG)}),
    # honest round 15: the width such a field holds, read before the walk reaches the object's binding
    (ROWS.format(""), "rows = Rows(tuple(x.shape))\n    x2 = x.reshape(-1, rows.width)\n    m = x2.shape[0]", set()),
], ids=["plain-field", "tensor-field", "set-elsewhere", "property-of-a-tensor", "shape-of-a-view"])
def test_a_field_its_init_sets_to_plain_data_reads_as_plain_data(before, line, found):
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


# red team 14: an import's name bound again by a def, a class or an assignment holds that object, not the library's;
# a builtin bound again is no longer Python's, in a heuristic or a kernel
FILL = "def _fill(t):\n    t.copy_(torch.tensor(t.tolist()))\n    return t\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    ("from torch import empty_like\n\n\n" + FILL.replace("_fill(t)", "empty_like(t)"),
     "h0 = empty_like(x)", {("wrapper-torch-op", FLAG)}),
    ("from torch import empty_like\n\n\nclass empty_like:\n    def __init__(self, t):\n        t.add_(1)\n\n\n",
     "h0 = empty_like(x)", {("wrapper-torch-op", FLAG)}),
    ("from functools import total_ordering\n\n\ndef total_ordering(cls):\n    return cls\n\n\n"
     + ORDERED.replace("import functools\n\n\n@functools.total_ordering", "@total_ordering").format("True"),
     "if Width(n) > Width(MAX_WIDTH):\n        raise ValueError('too wide')", {("wrapper-torch-op", FLAG)}),
    ("from torch import empty_like\n\n\n", "h0 = empty_like(x)", set()),
], ids=["def", "class", "class-decorator", "honest-import"])
def test_an_imports_name_bound_again_is_the_notebooks_own(before, line, found):
    got = wrapper_rules(before + wrapper_with(line))
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


# honest round 15: a fold whose function reads only what is plain of each tensor (its dtype)
@pytest.mark.parametrize("line, found", [
    ("ok = functools.reduce(lambda acc, t: acc and t.dtype in DTYPES, (x, fx, weight, bias), True)", set()),
    ("m = functools.reduce(lambda a, b: a * b, x.shape[:-1], 1)", set()),
    ("h0 = functools.reduce(lambda acc, t: acc + t, (x, fx))", {("wrapper-arithmetic", FLAG)}),
    ("s = functools.reduce(lambda acc, t: acc + t.tolist()[0], (x, fx), 0)", {("wrapper-torch-op", FLAG)}),
], ids=["dtypes", "sizes", "sum", "values"])
def test_a_fold_reads_what_its_function_makes_of_each_item(line, found):
    got = wrapper_rules("import functools\n\n\n" + wrapper_with(line))
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


# honest round 15: launch options as a NamedTuple of the notebook's, handed to the launch by its _asdict()
LAUNCH_NT = "from typing import NamedTuple\n\n\nclass Launch(NamedTuple):\n    BLOCK: int\n    num_warps: int = 4\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    (LAUNCH_NT, "opts = Launch(triton.next_power_of_2(n))._replace(num_warps=8)._asdict()", set()),
    (LAUNCH_NT, "opts = Launch(x)._asdict()\n    h0 = opts['BLOCK'] * 2", {("wrapper-arithmetic", FLAG)}),
    (LAUNCH_NT, "opts = Launch(x)\n    h0 = opts.BLOCK * 2", {("wrapper-arithmetic", FLAG)}),
    (LAUNCH_NT.replace("num_warps: int = 4\n", "num_warps: int = 4\n\n    def _asdict(self):\n"
                                              "        return self[0].tolist()\n"), "opts = Launch(x)._asdict()",
     {("wrapper-torch-op", FLAG)}),
], ids=["plain-fields", "a-tensor-field", "a-tensor-attribute", "its-own-asdict"])
def test_a_named_tuple_of_plain_fields_is_plain_data(before, line, found):
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


# red team 15: a name bound at module level where _bindings did not look (a match's capture or case body, an
# assignment expression in a def's default), an instance's class chosen on one branch, a field set by a setattr of
# a built name, a dict's tensor keys, a heuristic's parameter named as a builtin
COMPUTE = "def _compute(*args):\n    return args[0].tolist()\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    (COMPUTE + "match _compute:\n    case print:\n        pass\n\n\n", "print(x)", {("wrapper-torch-op", FLAG)}),
    ("from torch import empty_like\n\n\n" + COMPUTE + "match _compute:\n    case empty_like:\n        pass\n\n\n",
     "h0 = empty_like(x)", {("wrapper-torch-op", FLAG)}),
    (COMPUTE + "match 1:\n    case _:\n        def print(*a):\n            _compute(*a)\n\n\n", "print(x)",
     {("wrapper-torch-op", FLAG)}),
    (COMPUTE + "def _rows(t, held=(print := _compute)):\n    return t\n\n\n", "print(x)", {("wrapper-torch-op", FLAG)}),
], ids=["match-capture", "match-capture-of-an-import", "def-in-a-case", "walrus-in-a-default"])
def test_every_module_level_binding_is_seen(before, line, found):
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


TWO = "class _Rows:\n    def join(self, *a):\n        return a[0].tolist()\n\n\nclass _Plain:\n" \
      "    def join(self, *a):\n        return 0\n\n\n"
WIDTH = "class _Width:\n    def __init__(self, n):\n        self.n = n\n\n    def attach(self, held, i):\n" \
        "        setattr(self, f'n{i}', held)\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    (TWO, "rows = _Rows()\n    if n < 0:\n        rows = _Plain()\n    rows.join(x)", {("wrapper-torch-op", FLAG)}),
    (TWO, "rows = _Plain()\n    if n < 0:\n        rows = _Plain()\n    rows.join(x)", set()),
    (WIDTH, "w = _Width(n)\n    w.attach(x, '')\n    s = w.n.join(['a'])", {("wrapper-torch-op", FLAG)}),
    ("", "for t, _ in {x: 0}.items():\n        h0 = t * 2", {("wrapper-arithmetic", FLAG)}),
    ("", "for name, t in {'x': x}.items():\n        if t.shape[-1] != n:\n            raise ValueError(name)", set()),
    ("", "d = dict(x=x)\n    for name, t in d.items():\n        if t.ndim == 0:\n            raise ValueError(name)",
     set()),
    ("", "d = {'weight': weight, 'bias': bias}\n    for name, t in sorted(d.items(), key=lambda kv: kv[0]):\n"
         "        if t.shape != (n,):\n            raise ValueError(name)", set()),
    ("", "d = {'weight': weight}\n    d.update({x: 0})\n    for t, _ in d.items():\n        h0 = t * 2",
     {("wrapper-arithmetic", FLAG)}),
], ids=["class-of-one-branch", "class-of-every-branch", "field-set-by-built-name", "tensor-keys", "string-keys",
        "keyword-keys", "named-dict-sorted-by-key", "named-dict-updated"])
def test_what_an_object_or_a_dict_holds_is_what_every_path_gives_it(before, line, found):
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


def test_a_heuristic_parameter_named_as_a_builtin_is_no_builtin():
    decorated = KERNEL_SOURCE.replace("@triton.jit\n", "@triton.heuristics({'BLOCK': lambda args: "
                                      "block_for(args['n_cols'], args['n_cols'])})\n@triton.jit\n", 1)
    helper = "def block_for(min, n):\n    return min(n) + 16\n\n\n"
    got = kernel_rules(helper + decorated)
    assert ("kernel-decorator", FLAG) in got


# honest round 16: a functools.cached_property, a class of dtype constants, typing.cast of a size
@pytest.mark.parametrize("before, line, found", [
    ("import functools\n\n\nclass Problem:\n    def __init__(self, shape):\n        self.shape = tuple(shape)\n\n"
     "    @functools.cached_property\n    def width(self):\n        return self.shape[-1]\n\n\n",
     "x2 = x.reshape(-1, Problem(x.shape).width)\n    m = x2.shape[0]", set()),
    ("import functools\n\n\nclass Problem:\n    def __init__(self, t):\n        self.t = t\n\n"
     "    @functools.cached_property\n    def width(self):\n        return self.t.tolist()\n\n\n",
     "w = Problem(x).width", {("wrapper-torch-op", FLAG)}),
    ("class Allowed:\n    HALF = torch.float16\n    ALL = (HALF, torch.float32, torch.bfloat16)\n"
     "    WIDE = MAX_WIDTH\n\n\n",
     "if x.dtype not in Allowed.ALL:\n        raise ValueError('dtype')", set()),
    ("class Allowed:\n    ALL = (torch.float16, print)\n\n\n", "Allowed.ALL[1](x)", {("wrapper-torch-op", FLAG)}),
    ("import typing\n\n\n", "m = typing.cast(int, x.shape[-1])\n    x2 = x.reshape(-1, m)\n    k = x2.shape[0]",
     set()),
    ("import typing\n\n\n", "m = typing.cast(int, x)\n    k = m * 2", {("wrapper-arithmetic", FLAG)}),
], ids=["cached-property", "cached-property-computes", "class-of-dtypes", "class-holding-a-callable", "cast-of-a-size",
        "cast-of-a-tensor"])
def test_a_cached_getter_a_class_of_dtypes_and_a_cast_read_as_what_they_hold(before, line, found):
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()


# red team 16: a class's method set through another name, a NamedTuple field named as a method the wrapper may call
# on plain data
@pytest.mark.parametrize("before, line, found", [
    (COMPUTE + "class Rows:\n    def __init__(self, n):\n        self.n = n\n\n    def done(self, t):\n"
               "        return None\n\n\nfor _cls in (Rows,):\n    _cls.done = staticmethod(_compute)\n\n\n",
     "Rows(n).done(x)", {("wrapper-torch-op", FLAG)}),
    (COMPUTE + "class Launch(typing.NamedTuple):\n    BLOCK: int\n\n\n_same = Launch\n_same._replace = _compute\n\n\n",
     "Launch(n)._replace(x)", {("wrapper-torch-op", FLAG)}),
    ("class Launch(typing.NamedTuple):\n    BLOCK: int\n    copy: object = None\n\n\n",
     "Launch(n, torch.Tensor.tolist).copy(x)", {("wrapper-torch-op", FLAG)}),
    ("class Launch(typing.NamedTuple):\n    BLOCK: int\n    warps: int = 4\n\n\n",
     "opts = Launch(n)._asdict()", set()),
], ids=["method-set-through-a-loop", "method-set-through-an-alias", "field-named-copy", "honest-named-tuple"])
def test_a_class_is_followed_only_where_nothing_else_can_run_in_its_name(before, line, found):
    got = wrapper_rules("import typing\n\n\n" + before + wrapper_with(line))
    assert found <= got if found else got == set()


# honest rounds 13, 15 and 16: a table of checks (lambdas or defs, with their messages) looped over and called
CHECK_DEFS = "def _shape_ok(x, fx):\n    return x.shape == fx.shape\n\n\ndef _sum_ok(x, fx):\n" \
             "    return bool(x.sum().tolist())\n\n\n"


@pytest.mark.parametrize("before, line, found", [
    ("", "checks = {'width': lambda: n <= MAX_WIDTH, 'same': lambda: x.shape == fx.shape}\n"
         "    for key, ok in checks.items():\n        if not ok():\n            raise ValueError(key)", set()),
    ("CHECKS = {'shape': (lambda a, b: a.shape == b.shape, 'x {} and fx {} differ'),\n"
     "          'width': (lambda a, b: a.shape[-1] <= MAX_WIDTH, 'width {} over')}\n\n\n",
     "for key, (ok, msg) in CHECKS.items():\n        if not ok(x, fx):\n"
     "            raise ValueError(msg.format(tuple(x.shape), tuple(fx.shape)))", set()),
    (CHECK_DEFS.split("def _sum_ok")[0] + "CHECKS = (_shape_ok,)\n\n\n",
     "for check in CHECKS:\n        if not check(x, fx):\n            raise ValueError('shape')", set()),
    ("", "checks = {'values': lambda: x.sum().item() > 0}\n    for key, ok in checks.items():\n"
         "        if not ok():\n            raise ValueError(key)", {("wrapper-torch-op", FLAG)}),
    (CHECK_DEFS + "CHECKS = (_shape_ok, _sum_ok)\n\n\n",
     "for check in CHECKS:\n        if not check(x, fx):\n            raise ValueError('bad')",
     {("wrapper-torch-op", FLAG)}),
    (CHECK_DEFS + "CHECKS = {'shape': _shape_ok}\nCHECKS['shape'] = print\n\n\n",
     "for key, check in CHECKS.items():\n        check(x, fx)", {("wrapper-torch-op", FLAG)}),
    ("def _width_ok(x, fx):\n    return x.shape[-1] <= MAX_WIDTH\n\n\n",
     "for check in (_width_ok,):\n        if not check(x, fx):\n            raise ValueError('wide')", set()),
], ids=["local-lambdas", "module-lambdas-and-messages", "module-defs", "lambda-computes", "def-computes",
        "table-stored-into", "inline-defs"])
def test_a_table_of_checks_is_walked_as_each_check_it_holds(before, line, found):
    got = wrapper_rules(before + wrapper_with(line))
    assert found <= got if found else got == set()
