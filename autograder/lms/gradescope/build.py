"""Build Gradescope's autograder zip for an assignment.

    build(course, "residual-connections", Path("dist/gradescope"))   # -> dist/gradescope/A/autograder.zip
    build(course, name, out, exceptions=bundle(name, granted, roster.students))   # with exceptions.toml's

The zip, unpacked as Gradescope's /autograder/source:
    setup.sh, run_autograder        templates/ here, mode 0755
    requirements.txt                pyproject.toml's own lines for what grading imports
    course.toml                     the course file with only this assignment's tables
    exceptions.json                 exceptions.toml's for this assignment, with the roster (allowances.py)
    autograder/                     this package, with only this assignment's hidden suite
    nbtest/                         the student-side package: notebook reader, policy, monitor
    solutions/A/                    the source notebook and its contract.toml
"""
from __future__ import annotations

import re
import tomllib
import zipfile
from pathlib import Path

import nbtest

from ... import suites
from ...course import COURSE_FILE, ROOT, SOLUTIONS, Course, CourseError
from .allowances import FILE, bundle

TEMPLATES = Path(__file__).parent / "templates"
# what a Gradescope run imports: grading, and the written answers it shows
GRADING_NEEDS = ("torch", "numpy", "triton", "nbconvert", "bleach", "pylatexenc")
EXECUTABLE, PLAIN = 0o755, 0o644


def requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The project's dependency lines for GRADING_NEEDS, exactly as pyproject.toml writes them."""
    lines = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    found = {re.match(r"[A-Za-z0-9_.-]+", line).group(0).lower(): line for line in lines}
    missing = [name for name in GRADING_NEEDS if name not in found]
    if missing:
        raise CourseError(f"{pyproject}: no dependency line for {', '.join(missing)} (grading imports them)")
    return [found[name] for name in GRADING_NEEDS]


def course_toml(text: str, assignment: str) -> str:
    """course.toml without the other assignments' tables (the zip holds only this one's notebook) and without
    [canvas], whose assignment ids name them too (and which a Gradescope run does not use)."""
    keep, out = True, []
    for line in text.splitlines(keepends=True):
        header = re.match(r"\s*\[\s*assignments\.([A-Za-z0-9_-]+)", line)
        if header:
            keep = header.group(1) == assignment
        elif re.match(r"\s*\[", line):
            keep = not re.match(r"\s*\[\s*canvas\s*[].]", line)
        if keep:
            out.append(line)
    trimmed = "".join(out)
    cut = tomllib.loads(trimmed)
    if list(cut["assignments"]) != [assignment] or "canvas" in cut:   # e.g. an inline or dotted-key table
        raise CourseError(f"{COURSE_FILE}: could not cut it down to [assignments.{assignment}] without [canvas]; "
                          "write each assignment as its own [assignments.NAME] table, and [canvas] as a table")
    return trimmed


def files(course: Course, assignment: str, exceptions: str | None = None) -> dict[str, tuple[bytes, int]]:
    """{path in the zip: (contents, mode)}. exceptions: exceptions.json's text (allowances.bundle); none given:
    no exceptions."""
    a = course.assignment(assignment)
    # another assignment's suite package, every module of it
    others = tuple(suites.package(n) + "." for n in course.assignments if n != assignment)
    theirs = lambda module: module.startswith(others)
    out = {name: ((TEMPLATES / name).read_bytes(), EXECUTABLE) for name in ("setup.sh", "run_autograder")}
    out["requirements.txt"] = ("\n".join(requirements()) + "\n").encode(), PLAIN
    out["course.toml"] = course_toml(COURSE_FILE.read_text(encoding="utf-8"), assignment).encode(), PLAIN
    out[FILE] = (exceptions or bundle(assignment, {}, None)).encode(), PLAIN
    for package in (ROOT / "autograder", Path(nbtest.__file__).parent):
        for path in sorted(package.rglob("*")):
            rel = path.relative_to(package.parent)
            module = ".".join(rel.with_suffix("").parts)
            if path.is_file() and "__pycache__" not in rel.parts and not theirs(module):
                out[rel.as_posix()] = path.read_bytes(), PLAIN
    source = a.notebook_path(SOLUTIONS)
    for path in (source, source.parent / "contract.toml"):
        out[path.relative_to(ROOT).as_posix()] = path.read_bytes(), PLAIN
    return out


def build(course: Course, assignment: str, out: Path, exceptions: str | None = None) -> Path:
    """Write out/ASSIGNMENT/autograder.zip (setup.sh and run_autograder at its root, executable); exceptions:
    as files() takes it."""
    path = Path(out) / assignment / "autograder.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, (data, mode) in files(course, assignment, exceptions).items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))   # the same bytes on every build
            info.external_attr = (0o100000 | mode) << 16                      # a regular file and its mode
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    tmp.replace(path)
    return path
