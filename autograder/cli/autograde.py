"""python -m autograder autograde ASSIGNMENT: nbgrader autograde of a whole class, on every core."""
from __future__ import annotations

import sys

from ..nbgrading.run import nbgrader_config
from ..results.terminal import shown


def add_parser(commands) -> None:
    p = commands.add_parser("autograde", help="nbgrader autograde of a whole class, on all cores",
                            description=__doc__.split(": ", 1)[1])
    p.add_argument("assignment", help="an assignment named in course.toml")
    p.add_argument("--workers", type=int, help="parallel workers (default: course.toml grading.workers)")
    p.add_argument("--time-limit", type=int, metavar="S",
                   help="stop after S seconds, merging the students graded by then (as SIGTERM does)")
    p.set_defaults(run=run)


def run(args) -> int:
    from nbgrader.coursedir import CourseDirectory

    from ..core.seeds import SecretError
    from ..nbgrading.classrun import autograde_class
    from ..nbgrading.review import ClassQueue
    from ..results.store import StoreError
    args.course.assignment(args.assignment)
    coursedir = CourseDirectory(config=nbgrader_config())
    try:
        code = autograde_class(args.course, args.assignment, coursedir, args.workers, args.time_limit)
    except (StoreError, SecretError) as e:
        print(shown(f"error: {e}"), file=sys.stderr)
        return 1
    try:
        print(shown(ClassQueue(args.course, args.assignment, coursedir).summary()))
    except StoreError:      # nothing was graded (every notebook unreadable, or stopped at once): nothing to review
        pass
    return code
