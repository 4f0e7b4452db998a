"""The hidden suites, one module per assignment, and the objects they share with the sandbox.

For assignment "residual-connections":

    autograder.suites.residual_connections          the hidden tests (grader process only)
    autograder.suites.residual_connections_specs    SPECS: objects built from plain data, the
                                                    same way in the grader and in a sandbox child

and likewise for "fused-add-norm" (fused_add_norm, fused_add_norm_specs), whose specs module
also has a warm_up(): run in the fork server only, it imports Triton there and registers the
child-side tracer of kernel launches with the probe.
"""
from __future__ import annotations

import importlib
import importlib.util

from ..course import CourseError

PREFIX = "autograder.suites."
SPECS_SUFFIX = "_specs"


def hidden_name(assignment: str) -> str:
    return PREFIX + assignment.replace("-", "_")


def specs_name(assignment: str) -> str:
    return hidden_name(assignment) + SPECS_SUFFIX


def is_hidden(module_name: str) -> bool:
    """True for a hidden suite module (never to be loaded where student code runs)."""
    return module_name.startswith(PREFIX) and not module_name.endswith(SPECS_SUFFIX)


def child_modules(assignment: str) -> list[str]:
    """What a sandbox child imports before student code: the specs module, where there is one.

    Raises CourseError when the assignment has no hidden suite (without importing it).
    """
    if importlib.util.find_spec(hidden_name(assignment)) is None:
        raise CourseError(f"no hidden suite for {assignment!r} (expected module {hidden_name(assignment)})")
    return [specs_name(assignment)] if importlib.util.find_spec(specs_name(assignment)) else []


def load(assignment: str):
    """The assignment's Suite (imports its hidden module), with its rules tests."""
    return importlib.import_module(hidden_name(assignment)).SUITE.finish()


def misconceptions(assignment: str) -> dict:
    """{id: kit.Misconception} the assignment's hidden tests name; {} where it declares none."""
    name = hidden_name(assignment) + "_misconceptions"
    if importlib.util.find_spec(name) is None:
        return {}
    return importlib.import_module(name).MISCONCEPTIONS
