"""python -m autograder report ASSIGNMENT: the class report, from kept results, in the instructor folder's
report/ASSIGNMENT/ (COURSE_INSTRUCTOR_DIR moves it, as it moves the gradebook)."""
from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

from ..core.extract import Template
from ..course import SOLUTIONS
from ..report.build import write_report
from ..report.classlist import class_report_dir, from_class, from_folder, from_gradescope, from_store
from ..results.render import review_summary
from ..results.store import Store, StoreError
from ..results.terminal import shown


def add_parser(commands) -> None:
    p = commands.add_parser("report", help="the class report: what to reteach, and similar submissions",
                            description=__doc__.split(": ", 1)[1] + " Without --results: the class graded by "
                            "`python -m autograder autograde` (its store beside the gradebook, nbgrader's submitted/).")
    p.add_argument("assignment", help="an assignment named in course.toml")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--results", type=Path, help="a results store written by `grade --out FILE`")
    source.add_argument("--gradescope-export", type=Path, metavar="ZIP",
                        help="a Gradescope course: its assignment's Export Submissions zip")
    p.add_argument("--notebooks", type=Path, help="the folder of graded notebooks, one NAME.ipynb per student "
                                                  "(default: the files the store names)")
    p.add_argument("--out", type=Path, help="where to write (default: the instructor folder's report/ASSIGNMENT/; "
                                           "with --results FILE or --gradescope-export FILE, report/ASSIGNMENT/ "
                                           "beside FILE)")
    p.set_defaults(run=run)


def run(args) -> int:
    with tempfile.TemporaryDirectory() as unpacked:    # an export's notebooks, while the report reads them
        return _run(args, Path(unpacked))


def _run(args, unpacked: Path) -> int:
    from ..lms.gradescope.export import ExportError, read_export
    a = args.course.assignment(args.assignment)
    template = Template(a.notebook_path(SOLUTIONS))
    source = args.results or args.gradescope_export
    out = args.out or (source.parent / "report" / args.assignment if source else class_report_dir(args.assignment))
    try:
        if args.gradescope_export is not None:
            export = read_export(args.gradescope_export, args.assignment)
            print(shown(export.left_out()))     # the file names students uploaded: no terminal controls
            students = from_gradescope(export, unpacked)
        elif args.results is not None:
            if not args.results.is_file():
                print(f"error: {args.results}: no such results store (write one with `python -m autograder grade "
                      f"{args.assignment} FOLDER --out {args.results}`)", file=sys.stderr)
                return 2
            store = Store(args.results, args.assignment)
            students = from_folder(store, template, args.notebooks) if args.notebooks else from_store(store)
        else:
            students = from_class(args.course, args.assignment)
    except (StoreError, ExportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # under course.toml now (points, without_cuda), whatever the kept results were graded under
    students = [dataclasses.replace(s, result=s.result.under(a) if s.result else None) for s in students]
    if not any(s.result for s in students):
        print(f"error: no graded submission of {args.assignment} found; grade the class first", file=sys.stderr)
        return 2
    option = "--gradescope-export" if args.gradescope_export else "--results"
    took = write_report(args.course, args.assignment, students, out, results_file=source, results_option=option)
    print(f"{len(students)} submissions in {took['total']:.1f} s (similarity {took['similarity']:.1f} s)")
    print(f"report: {out / 'report.html'}")
    print(review_summary([s.result for s in students if s.result], args.assignment, source, option))
    return 0

