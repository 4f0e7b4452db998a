"""python -m autograder COMMAND: the instructor's command line.

    new          scaffold a new assignment, graded end to end as it stands
    release      regenerate assignments/ from solutions/ and write dist/student/
    grade        grade notebooks against the hidden suites, out of kernel
    autograde    grade a collected class in parallel and record it with nbgrader
    review       flagged submissions and the points they hold; release or confirm them
    status       where the class stands: submitted, late, pending; what blocks an export
    canvas       Canvas's API: pull the roster and submissions, push grades and feedback
    roster       import a Canvas gradebook export as the class roster
    canvas-zip   build a Canvas-style bulk-download zip (to try the zip path; tests)
    demo         the whole grading loop on the bundled sample class
    gradescope   write a Gradescope autograder zip per assignment
    gradescope-run   grade Gradescope submissions (run_autograder calls this)
    report       the class report: what to reteach, and similar submissions
    answers      one PDF of written answers per submission (Gradescope PDF upload)
    secret       where the course secret lives and its fingerprint; --create makes it
    check        course.toml against the notebooks, suites, release and Gradescope zips

Only the chosen command's module is imported, so a command pays for nothing else.
course.toml is read once, here, and handed to the command as args.course.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .. import course as course_mod
from ..course import CourseError

COMMANDS = {   # command: the module of this package that defines it (add_parser, run)
    "new": "new", "release": "release", "grade": "grade", "autograde": "autograde", "review": "review",
    "status": "status", "canvas": "canvas", "roster": "canvas", "canvas-zip": "canvas", "demo": "demo", "report": "report",
    "gradescope": "gradescope", "gradescope-run": "gradescope", "answers": "answers",
    "secret": "secret", "check": "check",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    lines = dict(line.split(None, 1) for line in __doc__.split("\n\n")[1].strip().splitlines())
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if argv and argv[0] in COMMANDS:
        importlib.import_module(f".{COMMANDS[argv[0]]}", __package__).add_parser(commands)
    for name in COMMANDS:
        if name not in commands.choices:
            commands.add_parser(name, help=lines[name].strip())
    args = parser.parse_args(argv)
    try:
        args.course = course_mod.load()
        return args.run(args)
    except CourseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
