"""python -m autograder gradescope | gradescope-run: Gradescope's autograder zips, and the run inside them.

    python -m autograder gradescope [ASSIGNMENT ...] [--out dist/gradescope]
    python -m autograder gradescope-run [--student-user student] [ROOT ...]   # inside Gradescope's container

gradescope writes OUT/ASSIGNMENT/autograder.zip for each assignment (all of course.toml's by
default), with the instructor folder's exceptions.toml and roster to apply it by. gradescope-run is what the zip's run_autograder calls: it grades each ROOT
(default $AUTOGRADER_ROOT, else /autograder) into ROOT/results/results.json. docs/gradescope.md.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..course import ROOT


def add_parser(commands) -> None:
    p = commands.add_parser("gradescope", help="write a Gradescope autograder zip per assignment",
                            description="Write OUT/ASSIGNMENT/autograder.zip for Gradescope's "
                                        "'Configure Autograder' page.")
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: every course.toml assignment")
    p.add_argument("--out", type=Path, default=ROOT / "dist" / "gradescope")
    p.set_defaults(run=run_build)

    p = commands.add_parser("gradescope-run", help="grade Gradescope submissions (run_autograder calls this)",
                            description="Grade each Gradescope root's submission into its results.json, "
                                        "student code running as --student-user.")
    p.add_argument("roots", nargs="*", type=Path, metavar="ROOT",
                   default=[Path(os.environ.get("AUTOGRADER_ROOT") or "/autograder")],
                   help="laid out as Gradescope's /autograder (default: $AUTOGRADER_ROOT or /autograder)")
    p.add_argument("--student-user", default="student", help="the unprivileged user student code runs as")
    p.add_argument("--assignment", help="default: the only assignment in course.toml (as in a zip)")
    p.set_defaults(run=run_grade)


def run_build(args) -> int:
    from ..lms.gradescope.build import build
    names = args.assignments or list(args.course.assignments)
    for name in names:
        args.course.assignment(name)              # an unknown name stops here, listing the valid ones
    granted = exceptions_json(args.course, names)
    for name in names:
        print(f"wrote {build(args.course, name, args.out, granted[name])}")
    return 0


def exceptions_json(course, names) -> dict[str, str]:
    """{assignment: the exceptions.json its zip carries}, from the instructor folder's exceptions.toml and
    roster (CourseError naming the line of a broken file)."""
    from ..exceptions import load as load_exceptions
    from ..lms.canvas.roster import CanvasError, load_roster
    from ..lms.gradescope.allowances import bundle
    from ..nbgrading.apply import exceptions_path
    from ..nbgrading.run import nbgrader_config
    db_url = nbgrader_config().CourseDirectory.db_url
    try:
        roster = load_roster(db_url)
    except CanvasError:          # none imported: exceptions.toml, if any, cannot be applied (bundle says so)
        roster = None
    exceptions = load_exceptions(exceptions_path(db_url), course, roster.ids if roster else None)
    return {name: bundle(name, exceptions.of(name), roster.students if roster else None) for name in names}


def run_grade(args) -> int:
    from ..lms.gradescope.run import grade_roots   # torch only when grading
    grade_roots(args.course, args.roots, args.student_user, args.assignment)
    return 0
