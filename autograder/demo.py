"""`make demo`: the course's main job on the bundled notebooks, no setup or network needed.

For now: the public tests of each assignment against its reference solution and its
untouched release, part by part.
"""
from __future__ import annotations

import contextlib
import io

import nbtest

from . import course as course_mod
from .course import ROOT


def public_results(notebook, tests_file, parts) -> dict[int, tuple[int, int]]:
    """{part: (passed, total)} for the public tests run on the notebook's module cells."""
    module = nbtest.load(notebook)
    with contextlib.redirect_stdout(io.StringIO()):  # the notebook's own prints
        results = {part: nbtest.run_public(part, vars(module), tests_file) for part in parts}
    return {part: (sum(r is None for r in res.values()), len(res)) for part, res in results.items()}


def add_parser(commands) -> None:
    p = commands.add_parser("demo", help="run the course's main job on the bundled notebooks",
                            description=__doc__.split("\n\n")[0])
    p.set_defaults(run=run)


def run(args) -> int:
    course = course_mod.load()
    print(f"{course.name} ({course.id}): public tests, passed / total per part\n")
    for a in course.assignments.values():
        tests_file = ROOT / "solutions" / a.name / "test_public.py"
        header = "".join(f"  part {p:<3}" for p in a.parts)
        print(f"{a.name:<40}{header}")
        for label, folder in (("reference (solutions/)", "solutions"), ("release (assignments/)", "assignments")):
            scores = public_results(a.notebook_path(ROOT / folder), tests_file, a.parts)
            print(f"  {label:<38}" + "".join(f"  {f'{s[0]}/{s[1]}':<8}" for s in scores.values()))
    return 0
