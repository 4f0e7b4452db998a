"""python -m autograder new NAME: a new assignment, complete and graded end to end as it stands.

    create(course, "tiny-residual")    # -> the files written, relative to the repository

template/ mirrors the repository. In a template's path, NAME and MODULE become the assignment's name
and its module name (hyphens as underscores); in its text, __NAME__, __MODULE__, __TITLE__ and
__DEADLINE__ do too. Every template file ends in .tmpl, so that no tool takes it for code.
course.toml.tmpl is appended to course.toml; no other existing file is touched, and nothing is
written when any target already exists or the new course.toml would not load.
"""
from __future__ import annotations

import datetime as dt
import importlib.util
import os
import re
from pathlib import Path

from ..course import COURSE_FILE, ROOT, Course, CourseError, load

TEMPLATE = Path(__file__).with_name("template")
SUFFIX = ".tmpl"
COURSE_ENTRY = "course.toml" + SUFFIX
NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
WEEKS_TO_DEADLINE = 4


def create(course: Course, name: str, root: Path = ROOT, course_file: Path = COURSE_FILE) -> list[str]:
    """Write the assignment `name` from template/ under root and add it to course_file; the paths written."""
    if not NAME.fullmatch(name):
        raise CourseError(f"{name!r} is not an assignment name: use lowercase letters, digits and single hyphens, "
                          "starting with a letter (tiny-residual)")
    if name in course.assignments:
        raise CourseError(f"{course_file}: [assignments.{name}] exists already; choose another name")
    words = _words(name)
    if importlib.util.find_spec(words["__MODULE__"]) is not None:    # submissions/MODULE.py would shadow it
        raise CourseError(f"{name!r} would be the module {words['__MODULE__']!r}, which Python already has "
                          "(a library's or the standard library's); choose another name")
    files = {_target(path, words): _fill(path.read_text(encoding="utf-8"), words)
             for path in sorted(TEMPLATE.rglob("*" + SUFFIX)) if path.name != COURSE_ENTRY}
    folders = {Path(rel).parent.as_posix() for rel in files if Path(rel).parent.name in (name, words["__MODULE__"])}
    taken = sorted(rel for rel in set(files) | folders if (root / rel).exists())
    if taken:
        raise CourseError(f"{', '.join(taken)} exists already: remove it, or choose another name")
    text = course_file.read_text(encoding="utf-8")
    entry = _fill((TEMPLATE / COURSE_ENTRY).read_text(encoding="utf-8"), words)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    tmp = course_file.with_name(course_file.name + ".new")
    tmp.write_text(_with_entry(text, entry), encoding="utf-8")
    try:
        load(tmp, root / "solutions")        # the course still loads with the new entry, or nothing is kept
    except CourseError:
        tmp.unlink()
        for rel in files:
            (root / rel).unlink()
        raise
    os.replace(tmp, course_file)
    return sorted(files) + [course_file.name]


def _with_entry(text: str, entry: str) -> str:
    """course.toml's text with entry after its last [assignments...] table (before the comments that open
    the table after it), or at the end."""
    lines = text.splitlines(keepends=True)
    headers = [i for i, line in enumerate(lines) if re.match(r"\s*\[", line)]
    last = max((i for i in headers if re.match(r"\s*\[\s*assignments\.", lines[i])), default=None)
    after = next((i for i in headers if last is not None and i > last and
                  not re.match(r"\s*\[\s*assignments\.", lines[i])), len(lines))
    while after < len(lines) and after > 0 and (lines[after - 1].startswith("#") or not lines[after - 1].strip()):
        after -= 1
    return "".join(lines[:after]).rstrip("\n") + "\n" + entry + ("\n" + "".join(lines[after:]).lstrip("\n")
                                                              if after < len(lines) else "")


def _words(name: str) -> dict[str, str]:
    deadline = dt.datetime.combine(dt.date.today() + dt.timedelta(weeks=WEEKS_TO_DEADLINE), dt.time(23, 59))
    return {"__NAME__": name, "__MODULE__": name.replace("-", "_"), "__TITLE__": name.replace("-", " ").capitalize(),
            "__DEADLINE__": deadline.strftime("%Y-%m-%dT%H:%M:00Z")}


def _target(path: Path, words: dict[str, str]) -> str:
    """A template's path in the repository: NAME and MODULE replaced in each part, .tmpl dropped."""
    parts = path.relative_to(TEMPLATE).with_suffix("").parts      # .with_suffix(""): drops .tmpl only
    swap = {"NAME": words["__NAME__"], "MODULE": words["__MODULE__"]}
    return "/".join(re.sub(r"NAME|MODULE", lambda m: swap[m.group(0)], part) for part in parts)


def _fill(text: str, words: dict[str, str]) -> str:
    return re.sub("|".join(words), lambda m: words[m.group(0)], text)
