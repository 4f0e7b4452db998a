"""python -m autograder new NAME: scaffold a new assignment (autograder/scaffold)."""
from __future__ import annotations

from .. import scaffold

NEXT = """
{name} is in course.toml and graded end to end as it stands. Next:
  1. write the assignment: solutions/{name}/{name}.ipynb, its contract.toml and test_public.py, and the
     hidden tests in autograder/suites/{module}/ (one partN.py per part; points per part in course.toml)
  2. make release                                   # assignments/{name}/ for students; commit it
  3. python -m autograder grade {name} solutions/{name}/{name}.ipynb   # the reference: full marks
  4. python submissions/make_samples.py             # submissions/{name}/: samples and their expected scores
  5. make test
docs/architecture.md, "Adding an assignment", says more."""


def add_parser(commands) -> None:
    p = commands.add_parser("new", help="scaffold a new assignment", description=scaffold.__doc__.split("\n\n")[0])
    p.add_argument("name", help="the assignment's name: lowercase letters, digits and hyphens (tiny-residual)")
    p.set_defaults(run=run)


def run(args) -> int:
    for path in scaffold.create(args.course, args.name):
        print(f"wrote {path}")
    print(NEXT.format(name=args.name, module=args.name.replace("-", "_")).lstrip("\n"))
    return 0
