"""python -m autograder release [--check]: regenerate assignments/ and write dist/student/."""
from __future__ import annotations

from pathlib import Path

from ..nbgrading import release
from ..nbgrading.release import RELEASE, ROOT, STUDENT_DIST, build_student, drift, generate


def add_parser(commands) -> None:
    p = commands.add_parser("release", help="regenerate assignments/ and write dist/student/",
                            description=release.__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true",
                   help="only check that assignments/ matches a fresh release of solutions/")
    p.add_argument("--out", type=Path, default=STUDENT_DIST, help="where to write the student release")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.check:
        problems = drift(args.course)
        for line in problems:
            print(line)
        print("assignments/ is up to date" if not problems
              else "assignments/ has drifted: run `make release` and commit the result")
        return 1 if problems else 0
    names = generate(args.course)
    out = build_student(args.out)
    print(f"released {', '.join(names)} to {RELEASE.relative_to(ROOT)}/ and wrote {out}")
    return 0
