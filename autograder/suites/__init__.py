"""The hidden suites, one package per assignment, and the objects they share with the sandbox.

For assignment "residual-connections", the package autograder.suites.residual_connections:

    __init__.py         a docstring only: a sandbox child imports the package before its specs
    suite.py            SUITE = Suite("residual-connections"), and what the parts share
    part1.py ...        each part's tests and their own helpers (imported in the order of their
                        numbers; the tests run part by part, each part's in the order written)
    specs.py            SPECS: objects built from plain data, the same way in the grader and in a
                        sandbox child (the one module of the package a child imports)
    misconceptions.py   MISCONCEPTIONS, the ids the tests' failures name (where there are any)

Every module but specs.py and the package's docstring is hidden: the grader process alone
imports it (is_hidden). Likewise for "fused-add-norm" (autograder.suites.fused_add_norm),
whose specs module also has a warm_up(): run in the fork server only, it imports Triton there
and registers the child-side tracer of kernel launches with the probe.
"""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re

from ..course import CourseError

PREFIX = "autograder.suites."
SPECS, MISCONCEPTIONS = "specs", "misconceptions"
PART = re.compile(r"part([0-9]+)")


def package(assignment: str) -> str:
    return PREFIX + assignment.replace("-", "_")


def hidden_name(assignment: str) -> str:
    """The module that defines the assignment's SUITE."""
    return package(assignment) + ".suite"


def specs_name(assignment: str) -> str:
    return f"{package(assignment)}.{SPECS}"


def is_hidden(module_name: str) -> bool:
    """True for a hidden suite module (never to be loaded where student code runs): a module of a
    suite package other than its specs (the package itself, a docstring, is not)."""
    if not module_name.startswith(PREFIX):
        return False
    _, dot, module = module_name.removeprefix(PREFIX).partition(".")
    return bool(dot) and module != SPECS


def part_names(assignment: str) -> list[str]:
    """The assignment's part modules, part1 ... partN, by number (without importing them)."""
    where = importlib.util.find_spec(package(assignment)).submodule_search_locations
    parts = {int(m.group(1)): m.group(0) for info in pkgutil.iter_modules(where) if (m := PART.fullmatch(info.name))}
    return [f"{package(assignment)}.{parts[n]}" for n in sorted(parts)]


def _exists(name: str) -> bool:
    """Whether module `name` can be imported (finding it imports its package: a docstring)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:      # its package does not exist
        return False


def child_modules(assignment: str) -> list[str]:
    """What a sandbox child imports before student code: the specs module, where there is one.

    Raises CourseError when the assignment has no hidden suite (without importing it).
    """
    if not _exists(hidden_name(assignment)):
        raise CourseError(f"no hidden suite for {assignment!r} (expected module {hidden_name(assignment)})")
    return [specs_name(assignment)] if _exists(specs_name(assignment)) else []


def load(assignment: str):
    """The assignment's Suite (imports its hidden modules: the suite, then each part), with its rules tests."""
    suite = importlib.import_module(hidden_name(assignment)).SUITE
    for name in part_names(assignment):
        importlib.import_module(name)
    return suite.finish()


def misconceptions(assignment: str) -> dict:
    """{id: kit.Misconception} the assignment's hidden tests name; {} where it declares none."""
    name = f"{package(assignment)}.{MISCONCEPTIONS}"
    return importlib.import_module(name).MISCONCEPTIONS if _exists(name) else {}
