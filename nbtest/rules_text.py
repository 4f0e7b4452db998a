"""The import rule as the notebooks state it, written from the policy's own lists (policy.py), so the
rules a student reads are the rules the grader applies; tests/test_release.py holds each notebook's
rules section to it.

    imports_rule(rules)   # "- Import only `math`, ... Any other module ... holds the tests ..."
"""
from __future__ import annotations

from .cellcode import PROCESS_PATHS
from .policy import HONEST_MODULES, UNCOMPILED, Rules

# modules a student reaches for that the list leaves out: named so the line says they hold tests too
OFTEN_TRIED = ("copy", "time", "random", "logging")


def imports_rule(rules: Rules) -> str:
    """The rules section's import bullet for an assignment's rules (course.toml's policy table)."""
    allowed = _listed(rules.allowed_imports)
    forbidden = f"; no {_listed(rules.forbidden_modules, 'or')}" if rules.forbidden_modules else ""
    tried = _listed([m for m in OFTEN_TRIED if m not in rules.allowed_imports], "or")
    return (f"- Import only {allowed} (and their submodules, read as the paths they are: `from torch.optim import "
            f"SGD` is `torch.optim.SGD`; by name, not `from math import *`), and in any cell {_listed(sorted(HONEST_MODULES))}{forbidden}. Any other "
            f"module, of Python's standard library ({tried}, say) or another installed library (`cffi`, say), holds "
            f"the tests that rest on what your code's process reports; so do these paths, which reach the grading "
            f"process: {_listed(sorted(PROCESS_PATHS))} (`torch.jit` compiles and loads code at run time). The "
            f"grader and `pytest` run {_listed(UNCOMPILED)} uncompiled, so these hold nothing: each hands back the "
            "function or module it is given, which computes the same values.")


def _listed(names, last: str = "and") -> str:
    names = [f"`{n}`" for n in names]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"
