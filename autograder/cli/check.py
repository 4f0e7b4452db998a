"""python -m autograder check: course.toml against the source notebooks, the hidden suites, the committed
release and the built Gradescope zips, each problem as FILE:LINE and what to change. Grades nothing, writes nothing.

course.toml is the one place points are edited: per part, `auto` (shared out over the part's hidden tests
by their @test weights) and `manual` (the written answer's grade cell). The release writes them into the
grade cells (`make release`), the gradebook and everything exported take them from course.toml, and a
Gradescope zip carries the course.toml and the exceptions.toml entries it was built with (`make gradescope`).
"""
from __future__ import annotations

import json
import re
import sys
import tomllib
import zipfile
from pathlib import Path

from ..course import COURSE_FILE, ROOT, SOLUTIONS, Assignment, CourseError, where
from ..nbgrading.release import RELEASE

GRADESCOPE = ROOT / "dist" / "gradescope"
LABEL = re.compile(r"\*\*Written \(([0-9.]+) points?\)\.\*\*")   # a written answer's prompt, as students read it


def add_parser(commands) -> None:
    p = commands.add_parser("check", help="course.toml against the notebooks, suites, release and Gradescope zips",
                            description=__doc__.split(": ", 1)[1])
    p.set_defaults(run=run)


def run(args) -> int:
    text = COURSE_FILE.read_text(encoding="utf-8")
    problems = []
    for a in args.course.assignments.values():
        problems += check_assignment(a, text)
    problems += _zip_exceptions(args.course)
    for line in problems:
        print(line)
    names = ", ".join(args.course.assignments)
    if problems:
        print(f"{len(problems)} problems; course.toml is the source of points: fix the lines named, then run "
              "`python -m autograder check` again", file=sys.stderr)
        return 1
    print(f"course.toml agrees with the source notebooks, hidden suites, release and Gradescope zips of {names}")
    for a in args.course.assignments.values():
        print(outline(a))
    return 0


def outline(a: Assignment) -> str:
    """The Gradescope outline course.toml gives: the autograder's question and one per written answer."""
    written = "; ".join(f"Part {p} written, {v}" for p, v in sorted(a.manual.items()) if v)
    return f"{a.name}: autograder {a.max_auto} points" + (f"; {written}" if written else "")


def check_assignment(a: Assignment, text: str) -> list[str]:
    def toml(kind: str, part: int | None = None) -> str:
        return where(COURSE_FILE, text, ["assignments", a.name, kind] + ([str(part)] if part else []))
    out = []
    source = a.notebook_path(SOLUTIONS)
    cells = grade_cells(source)
    for grade_id, points in a.cell_points.items():
        kind, part = ("auto" if grade_id.endswith("-tests") else "manual"), int(re.search(r"\d+", grade_id).group())
        if points and grade_id not in cells:
            out.append(f"{toml(kind, part)}: part {part} has {kind} points ({points}) but {source.relative_to(ROOT)} "
                       f"has no grade cell {grade_id!r}: add one, or remove the entry")
        elif grade_id in cells and (label := cells[grade_id]["label"]) and float(label[0]) != points:
            out.append(f"{source.relative_to(ROOT)}:{label[1]}: the prompt says {label[0]} points, "
                       f"{toml(kind, part)} gives {points}: change the prompt")
    for grade_id, cell in cells.items():
        if grade_id not in a.cell_points and cell["points"]:
            part = re.search(r"\d+", grade_id)
            out.append(f"{source.relative_to(ROOT)}:{cell['line']}: grade cell {grade_id!r} has no points in "
                       f"course.toml ({toml('manual' if 'written' in grade_id else 'auto')}): add part "
                       f"{part.group() if part else '?'} there")
    out += _suite(a, toml("auto"))
    release = a.notebook_path(RELEASE)
    shipped = grade_cells(release) if release.is_file() else {}
    for grade_id, points in a.cell_points.items():
        if grade_id in shipped and float(shipped[grade_id]["points"]) != points:
            kind, part = ("auto" if grade_id.endswith("-tests") else "manual"), int(re.search(r"\d+", grade_id).group())
            out.append(f"{release.relative_to(ROOT)}:{shipped[grade_id]['line']}: {grade_id} carries "
                       f"{shipped[grade_id]['points']:g} points, {toml(kind, part)} gives {points}: run `make release` "
                       "and commit assignments/")
    out += _gradescope(a, toml("auto"))
    return out


def _suite(a: Assignment, line: str) -> list[str]:
    from .. import suites
    try:
        suites.load(a.name).scaled(a.auto)
    except CourseError as e:
        return [f"{line}: {e}"]
    return []


def _gradescope(a: Assignment, line: str) -> list[str]:
    """A built zip's course.toml against this one's points (the zip grades with its own)."""
    path = GRADESCOPE / a.name / "autograder.zip"
    if not path.is_file():
        return []
    with zipfile.ZipFile(path) as zf:
        built = tomllib.loads(zf.read("course.toml").decode())["assignments"].get(a.name, {})
    have = ({int(k): v for k, v in built.get("auto", {}).items()}, {int(k): v for k, v in built.get("manual", {}).items()})
    if have != (a.auto, a.manual):
        return [f"{path.relative_to(ROOT)}: built with auto = {have[0]}, manual = {have[1]}; {line} gives "
                f"auto = {a.auto}, manual = {a.manual}: run `make gradescope` and upload the zip again"]
    return []


def _zip_exceptions(course) -> list[str]:
    """Each built zip's exceptions.json against the one exceptions.toml and the roster give now."""
    from ..lms.gradescope.allowances import FILE
    from .gradescope import exceptions_json
    built = {n: p for n in course.assignments if (p := GRADESCOPE / n / "autograder.zip").is_file()}
    if not built:
        return []
    try:
        now = exceptions_json(course, list(built))
    except CourseError as e:
        return [str(e)]
    out = []
    for name, path in built.items():
        with zipfile.ZipFile(path) as zf:
            carried = json.loads(zf.read(FILE))["students"] if FILE in zf.namelist() else []
        if carried != json.loads(now[name])["students"]:
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            out.append(f"{shown}: built with other exceptions than instructor/exceptions.toml "
                       "and the roster give now: run `make gradescope`, upload the zip again and regrade")
    return out


def grade_cells(notebook: Path) -> dict[str, dict]:
    """{grade_id: {"points", "line" (of its points in the file), "label": (a prompt's points, line) or None}}."""
    raw = notebook.read_text(encoding="utf-8")
    lines = raw.splitlines()
    out = {}
    for cell in json.loads(raw)["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade"):
            continue
        grade_id = meta["grade_id"]
        at = next((i for i, l in enumerate(lines) if f'"grade_id": "{grade_id}"' in l), 0)
        near = [i for i in range(max(0, at - 8), min(len(lines), at + 8)) if '"points":' in lines[i]]
        line = min(near, key=lambda i: abs(i - at), default=at) + 1
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        label = LABEL.search(source)
        label_line = next((i + 1 for i, l in enumerate(lines) if label and label.group(0).replace('"', '\\"') in l), line)
        out[grade_id] = {"points": float(meta.get("points", 0)), "line": line,
                         "label": (label.group(1), label_line) if label else None}
    return out
