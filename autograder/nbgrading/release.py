"""The student release: solutions/ -> assignments/ (nbgrader) -> dist/student/.

assignments/ is nbgrader's release folder, committed. Besides one folder per
assignment it holds the files every student needs (nbtest.py, pytest.ini,
requirements.txt, README.md), so dist/student/ is a clean copy of it.
"""
from __future__ import annotations

import filecmp
import shutil
import tempfile
from pathlib import Path

from ..course import ROOT, Course
from .run import nbgrader

RELEASE = ROOT / "assignments"
STUDENT_DIST = ROOT / "dist" / "student"
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".ipynb_checkpoints")


def generate(course: Course, release_dir: Path = RELEASE) -> list[str]:
    """nbgrader generate_assignment for every assignment in course.toml, into release_dir."""
    release_dir = Path(release_dir).resolve()
    with tempfile.TemporaryDirectory() as tmp:  # the release needs no gradebook entries
        for name in course.assignments:
            nbgrader("generate_assignment", name, "--force", "--log-level=WARN",
                     f"--CourseDirectory.release_directory={release_dir}",
                     f"--CourseDirectory.db_url=sqlite:///{tmp}/gradebook.db", capture=True)
    return list(course.assignments)


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
    """Copy assignments/ to out: everything a student needs, nothing from solutions/ or autograder/."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(RELEASE, out, ignore=SKIP)
    return out
