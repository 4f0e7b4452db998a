"""python -m autograder roster | canvas-zip: the Canvas roster in, and a Canvas-style download for trying things.

    python -m autograder roster EXPORT.csv [--db URL]
    python -m autograder canvas-zip ASSIGNMENT NOTEBOOKS/ --roster EXPORT.csv [--late ID] [--resubmitted ID]
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..course import ROOT
from ..demo.fake_canvas import build_bulk_download, pair_uploads
from ..lms.canvas.roster import CanvasError, canvas_dir, import_roster, read_roster
from ..nbgrading.run import nbgrader_config


def add_parser(commands) -> None:
    p = commands.add_parser("roster", help="import a Canvas gradebook export (CSV) as the class roster",
                            description="Import a Canvas gradebook export into the nbgrader gradebook.")
    p.add_argument("csv", type=Path, help="the CSV from Canvas: Grades > Export > Export Entire Gradebook")
    p.add_argument("--db", help="gradebook URL (default: the one in nbgrader_config.py)")
    p.set_defaults(run=_reporting(run_roster))

    p = commands.add_parser("canvas-zip", help="build a Canvas-style bulk-download zip (demo, tests)",
                            description="Pair notebooks (sorted by name) with roster students in order "
                                        "and write a zip named as Canvas's 'Download Submissions'.")
    p.add_argument("assignment")
    p.add_argument("notebooks", type=Path, help="folder of .ipynb files")
    p.add_argument("--roster", type=Path, required=True, help="a Canvas gradebook export (CSV)")
    p.add_argument("--out", type=Path,
                   help="default: ASSIGNMENT/archive/submissions.zip under zip_collect's download folder")
    p.add_argument("--late", action="append", default=[], metavar="CANVAS_ID", help="mark this student LATE")
    p.add_argument("--resubmitted", action="append", default=[], metavar="CANVAS_ID",
                   help="also include an older upload (the release notebook), superseded by a -1 copy")
    p.set_defaults(run=_reporting(run_canvas_zip))


def _reporting(run):
    """run(args), with a CanvasError printed as one line and exit status 2."""
    def wrapped(args) -> int:
        try:
            return run(args)
        except CanvasError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    return wrapped


def run_roster(args) -> int:
    db_url = args.db or nbgrader_config().CourseDirectory.db_url
    roster = import_roster(args.csv, db_url, tuple(args.course.assignments))
    for problem in roster.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(f"imported {len(roster.students)} students from {args.csv} into {db_url}; "
          f"SIS data and Canvas columns in {canvas_dir(db_url) / 'roster.json'}")
    return 1 if roster.problems else 0


def run_canvas_zip(args) -> int:
    a = args.course.assignment(args.assignment)
    roster = read_roster(args.roster)
    notebooks = sorted(args.notebooks.glob("*.ipynb"))
    if not notebooks:
        raise CanvasError(f"{args.notebooks}: no .ipynb files")
    uploads = pair_uploads(roster, notebooks, late=set(args.late), resubmitted=set(args.resubmitted),
                           earlier=a.notebook_path(ROOT / "assignments"))
    out = args.out or ROOT / nbgrader_config().ZipCollectApp.downloaded_directory / a.name / "archive" / "submissions.zip"
    build_bulk_download(out, uploads, a.notebook, a.deadline)
    print(f"wrote {out}:")
    for u in uploads:
        extra = " LATE" * u.late + " (+ an older upload)" * (u.earlier is not None)
        print(f"  {u.student.id}  {u.student.name:<28} <- {u.notebook.name}{extra}")
    for s in roster.students[len(uploads):]:
        print(f"  {s.id}  {s.name:<28} <- nothing (no submission)")
    for nb in notebooks[len(uploads):]:
        print(f"  (no roster student left for {nb.name}: not in the zip)")
    return 0
