"""python -m autograder report ASSIGNMENT: the class report, from kept results, in the instructor folder's
report/ASSIGNMENT/ (COURSE_INSTRUCTOR_DIR moves it, as it moves the gradebook)."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from ..core.extract import Template
from ..course import SOLUTIONS
from ..report.build import write_report
from ..report.classlist import class_report_dir, from_class, from_folder, from_store
from ..results.render import review_summary
from ..results.store import Store, StoreError


def add_parser(commands) -> None:
    p = commands.add_parser("report", help="the class report: what to reteach, and similar submissions",
                            description=__doc__.split(": ", 1)[1] + " Without --results: the class graded by "
                            "`python -m autograder autograde` (its store beside the gradebook, nbgrader's submitted/).")
    p.add_argument("assignment", help="an assignment named in course.toml")
    p.add_argument("--results", type=Path, help="a results store written by `grade --out FILE`")
    p.add_argument("--notebooks", type=Path, help="the folder of graded notebooks, one NAME.ipynb per student "
                                                  "(default: the files the store names)")
    p.add_argument("--out", type=Path, help="where to write (default: the instructor folder's report/ASSIGNMENT/; "
                                           "with --results, report/ASSIGNMENT/ beside FILE)")
    p.set_defaults(run=run)


def run(args) -> int:
    a = args.course.assignment(args.assignment)
    template = Template(a.notebook_path(SOLUTIONS))
    out = args.out or (args.results.parent / "report" / args.assignment if args.results else
                       class_report_dir(args.assignment))
    try:
        if args.results is not None:
            if not args.results.is_file():
                print(f"error: {args.results}: no such results store (write one with `python -m autograder grade "
                      f"{args.assignment} FOLDER --out {args.results}`)", file=sys.stderr)
                return 2
            store = Store(args.results, args.assignment)
            students = from_folder(store, template, args.notebooks) if args.notebooks else from_store(store)
        else:
            students = from_class(args.course, args.assignment)
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # at course.toml's points now, whatever points the kept results were graded at
    students = [dataclasses.replace(s, result=s.result.scaled(a.auto) if s.result else None) for s in students]
    if not any(s.result for s in students):
        print(f"error: no graded submission of {args.assignment} found; grade the class first", file=sys.stderr)
        return 2
    took = write_report(args.course, args.assignment, students, out, results_file=args.results)
    print(f"{len(students)} submissions in {took['total']:.1f} s (similarity {took['similarity']:.1f} s)")
    print(f"report: {out / 'report.html'}")
    print(review_summary([s.result for s in students if s.result], args.assignment, args.results))
    return 0

