"""python -m autograder canvas | roster | canvas-zip: Canvas's API both ways; the roster and a download by hand.

    python -m autograder canvas pull ASSIGNMENT                  # roster + submissions, collected
    python -m autograder canvas push ASSIGNMENT [--final] [--yes]  # grades + feedback (a dry run without --yes)
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
from ..results.terminal import shown


def add_parser(commands) -> None:
    p = commands.add_parser("canvas", help="Canvas's API: pull the roster and submissions, push grades and feedback",
                            description="Canvas through its REST API (course.toml [canvas]; the token in "
                                        "CANVAS_TOKEN or [canvas] token_file).")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    pull = actions.add_parser("pull", help="the roster and each student's latest submission, filed by zip_collect")
    pull.add_argument("assignment")
    pull.set_defaults(run=_reporting(run_pull))
    push = actions.add_parser("push", help="final grades and feedback comments; prints what would change "
                                           "unless --yes")
    push.add_argument("assignment")
    push.add_argument("--yes", action="store_true", help="make the changes (without it: a dry run)")
    push.add_argument("--final", action="store_true",
                      help="push even while grading is pending, as it stands (as nbgrader export's final)")
    push.set_defaults(run=_reporting(run_push))

    p = commands.add_parser("roster", help="import a Canvas gradebook export (CSV) as the class roster",
                            description="Import a Canvas gradebook export into the nbgrader gradebook.")
    p.add_argument("csv", type=Path, help="the CSV from Canvas: Grades > Export > Export Entire Gradebook")
    p.add_argument("--db", help="gradebook URL (default: the one in nbgrader_config.py)")
    p.set_defaults(run=_reporting(run_roster))

    p = commands.add_parser("canvas-zip", help="build a Canvas-style bulk-download zip (to try the zip path; tests)",
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
    """run(args), with a CanvasError printed as one line and exit status 2; Canvas's API refusing or not
    answering (api.CanvasApiError), or a push blocked by pending grading, and exit status 1."""
    from ..lms.canvas.api import CanvasApiError
    from ..lms.canvas.push import PushError

    def wrapped(args) -> int:
        try:
            return run(args)
        except CanvasError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except (CanvasApiError, PushError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
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
        print(shown(f"  {u.student.id}  {u.student.name:<28} <- {u.notebook.name}{extra}", keep=""))
    for s in roster.students[len(uploads):]:
        print(shown(f"  {s.id}  {s.name:<28} <- nothing (no submission)", keep=""))
    for nb in notebooks[len(uploads):]:
        print(shown(f"  (no roster student left for {nb.name}: not in the zip)", keep=""))
    return 0


def run_pull(args) -> int:
    from nbgrader.coursedir import CourseDirectory

    from ..lms.canvas.pull import pull, summary
    coursedir = CourseDirectory(config=nbgrader_config())
    pulled = pull(args.course, args.assignment, coursedir)
    print("\n".join(summary(pulled)))
    return 0


def run_push(args) -> int:
    from nbgrader.coursedir import CourseDirectory

    from ..lms.canvas.push import apply, plan_push
    coursedir = CourseDirectory(config=nbgrader_config())
    plan = plan_push(args.course, args.assignment, coursedir, final=args.final)
    print(plan.table())
    for note in plan.notes:
        print(f"note: {note}")
    if not args.yes:
        print(f"dry run: {plan.counts()}; `python -m autograder canvas push {args.assignment}"
              f"{' --final' * args.final} --yes` makes them")
        return 0
    done = apply(plan, args.course, coursedir)
    print(f"pushed: {done} students changed in Canvas; a rerun changes nothing more")
    return 0
