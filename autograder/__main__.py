"""python -m autograder COMMAND: the instructor's command line.

    release   regenerate assignments/ from solutions/ and write dist/student/
    grade     grade submitted notebooks against the hidden suites
"""
import argparse
import sys

from . import canvas, demo, grade, release
from .course import CourseError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (release, grade, demo, canvas):
        module.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except CourseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
