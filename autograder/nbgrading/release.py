"""The student release: solutions/ -> assignments/ (nbgrader) -> dist/student/.

assignments/ is nbgrader's release folder, committed. Besides one folder per assignment (with its
rules.toml, written here) it holds the files every student needs (pytest.ini, requirements.txt,
README.md). dist/student/ is a clean copy of it with the student-side package nbtest/ vendored
beside them: the one package the grader imports too, so the release carries no copy of its own.
"""
from __future__ import annotations

import dataclasses
import filecmp
import json
import shutil
import tempfile
from pathlib import Path

import nbtest

from .. import suites
from ..course import ROOT, Course, Rules
from .run import nbgrader

RELEASE = ROOT / "assignments"
STUDENT_DIST = ROOT / "dist" / "student"
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".ipynb_checkpoints")
STUDENT_PACKAGE = Path(nbtest.__file__).parent
RULES = "rules.toml"
RULES_HEADER = ("# This assignment's rules, from the course's course.toml: nbtest's rules test checks your\n"
                "# notebook against them with nbtest/policy.py, the grader's own rules (written by the release; do not edit).")


def generate(course: Course, release_dir: Path = RELEASE) -> list[str]:
    """nbgrader generate_assignment for every assignment in course.toml, into release_dir, with each
    assignment's policy (rules.toml) for the public tests' rules test."""
    release_dir = Path(release_dir).resolve()
    with tempfile.TemporaryDirectory() as tmp:  # the release needs no gradebook entries
        for name in course.assignments:
            nbgrader("generate_assignment", name, "--force", "--log-level=WARN",
                     f"--CourseDirectory.release_directory={release_dir}",
                     f"--CourseDirectory.db_url=sqlite:///{tmp}/gradebook.db", capture=True)
            holding = sorted({rule for test in suites.load(name).tests for rule in test.held_by})
            (release_dir / name / RULES).write_text(rules_toml(course.assignment(name).rules,
                                                               course.grading.max_cell_kb, holding))
    return list(course.assignments)


def rules_toml(rules: Rules, max_cell_kb: int, holding: list[str] = ()) -> str:
    """course.toml's [assignments.X.policy] table and its grading.max_cell_kb (nbtest's Limits), as the student
    release carries them, and the flag rules that hold tests of the hidden suite's (its held_by), so that the rules
    test says which broken rules hold tests."""
    lines = [RULES_HEADER]
    for f in dataclasses.fields(rules):
        value = getattr(rules, f.name)
        text = ("[" + ", ".join(json.dumps(v) for v in value) + "]" if isinstance(value, tuple)
                else "true" if value is True else "false" if value is False else json.dumps(value))
        lines.append(f"{f.name} = {text}")
    lines.append(f"max_cell_kb = {max_cell_kb}   # a larger solution cell is not run; README.md, \"Submit\"")
    lines.append(f"holding = {json.dumps(list(holding))}   # broken, these hold tests too")
    return "\n".join(lines) + "\n"


def drift(course: Course, release_dir: Path = RELEASE) -> list[str]:
    """Files that differ between a fresh nbgrader release and release_dir (empty: no drift)."""
    with tempfile.TemporaryDirectory() as tmp:
        names = generate(course, Path(tmp))
        problems = []
        for name in names:
            fresh, kept = Path(tmp) / name, Path(release_dir) / name
            problems += _compare(fresh, kept, name)
        return problems


def _compare(fresh: Path, kept: Path, prefix: str) -> list[str]:
    if not kept.is_dir():
        return [f"{prefix}/ is missing"]
    cmp = filecmp.dircmp(fresh, kept, ignore=["__pycache__", ".pytest_cache", ".ipynb_checkpoints"])
    out = [f"{prefix}/{f}: differs from solutions/" for f in cmp.diff_files]
    out += [f"{prefix}/{f}: missing" for f in cmp.left_only]
    out += [f"{prefix}/{f}: not produced by the release" for f in cmp.right_only]
    for sub in cmp.common_dirs:
        out += _compare(fresh / sub, kept / sub, f"{prefix}/{sub}")
    return out


def build_student(out: Path = STUDENT_DIST) -> Path:
    """assignments/ and the nbtest package in out: everything a student needs, nothing from solutions/ or
    autograder/."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(RELEASE, out, ignore=SKIP)
    shutil.copytree(STUDENT_PACKAGE, out / STUDENT_PACKAGE.name, ignore=SKIP)
    return out
