"""python -m autograder review ASSIGNMENT: flagged submissions, the points they hold, and the instructor's decisions."""
from __future__ import annotations

import sys
from pathlib import Path

from ..lms.canvas.roster import CanvasError, load_roster
from ..nbgrading.run import NbgraderError, nbgrader, nbgrader_config
from ..results.render import held_line
from ..results.result import count
from ..results.terminal import shown

NOTE = ("--release gives a held test the points its check earned; --confirm keeps them at 0. Either is recorded "
        "in the class's results store, for the code the student submitted (a new submission waits for a new "
        "decision), then nbgrader autograde and feedback are run again for that student from the kept results "
        "(nothing is regraded), the Canvas CSV is exported again unless grading is still pending (nbgrader "
        "export says what), and the class report is written again where one is (the instructor folder's "
        "report/ASSIGNMENT/).")

FILE_NOTE = ("With --results FILE (a store written by `grade --out FILE`) the queue is that store's: submissions are "
             "named by their file, the decision is a line of FILE, and `grade` and `report --results FILE` read "
             "it; no gradebook is touched. With --gradescope-export ZIP (Gradescope's Export Submissions) the "
             "queue is listed, and decided by a manual regrade on Gradescope (docs/gradescope.md).")

DONE = {"release": "released", "confirm": "confirmed"}


def add_parser(commands) -> None:
    p = commands.add_parser("review", help="flagged submissions, the points they hold; release or confirm them",
                            description=__doc__.split(": ", 1)[1], epilog=f"{NOTE} {FILE_NOTE}")
    p.add_argument("assignment", help="an assignment named in course.toml")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--results", type=Path, metavar="FILE",
                   help="the queue of a results store written by `grade --out FILE` (default: the class's)")
    source.add_argument("--gradescope-export", type=Path, metavar="ZIP",
                   help="list the queue of a Gradescope course from its Export Submissions zip")
    p.add_argument("--release", action="append", default=[], metavar="STUDENT",
                   help="give STUDENT's held tests their points (the nbgrader student id: Canvas ID; with --results, "
                        "the file's name as listed); repeatable")
    p.add_argument("--confirm", action="append", default=[], metavar="STUDENT",
                   help="keep STUDENT's held tests at 0; repeatable")
    p.add_argument("--note", default="", help="why, recorded with the decision and listed here")
    p.set_defaults(run=run)


def run(args) -> int:
    from nbgrader.coursedir import CourseDirectory

    from ..core.seeds import SecretError
    from ..nbgrading.review import ClassQueue
    from ..results.review import ReviewError, file_queue
    from ..results.store import Store, StoreError
    args.course.assignment(args.assignment)
    if args.gradescope_export is not None:
        return gradescope_queue(args)
    both = set(args.release) & set(args.confirm)
    if both:
        print(f"error: {', '.join(sorted(both))}: both --release and --confirm; choose one", file=sys.stderr)
        return 2
    try:
        if args.results is None:
            queue = ClassQueue(args.course, args.assignment, CourseDirectory(config=nbgrader_config()))
        elif not args.results.is_file():
            raise StoreError(f"{args.results}: no such results store (write one with `python -m autograder grade "
                             f"{args.assignment} FOLDER --out {args.results}`)")
        else:
            queue = file_queue(Store(args.results, args.assignment))
        decided = [(s, queue.decide(s, verdict, args.note)) for verdict, students in
                   (("release", args.release), ("confirm", args.confirm)) for s in students]
    except (StoreError, ReviewError, SecretError) as e:
        print(shown(f"error: {e}"), file=sys.stderr)
        return 2
    if not decided:
        print(shown(listing(queue, roster_names(queue.coursedir.db_url) if args.results is None else {})))
        print(shown(queue.summary()))
        return 0
    for student, result in decided:
        print(shown(f"{student}: {decision_line(result)}"))
    if args.results is not None:
        print(shown(f"recorded in {args.results}: `python -m autograder report {args.assignment} --results "
                    f"{args.results}` and every later `grade ... --out {args.results}` read the decided scores"))
        print(shown(queue.summary()))
        return 0
    try:
        queue.apply([s for s, _ in decided])
        print(shown(f"gradebook and feedback updated for {', '.join(s for s, _ in decided)}"))
        proc = nbgrader("export", "--log-level=WARN", capture=True, check=False)
        print(shown("Canvas CSV exported again (nbgrader export)" if proc.returncode == 0 else
                    f"Canvas CSV not exported again (nbgrader export):\n{proc.stdout}{proc.stderr}".rstrip()))
        refresh_report(args.course, args.assignment)
    except NbgraderError as e:
        print(shown(f"error: the decision is recorded, but {e}; run `nbgrader autograde {args.assignment} --force`"),
              file=sys.stderr)
        return 1
    print(shown(queue.summary()))
    return 0


def gradescope_queue(args) -> int:
    """The review list of a Gradescope export; decisions are made on Gradescope, so none is taken here."""
    from ..lms.gradescope.export import MANUAL, ExportError, ExportQueue, read_export
    if args.release or args.confirm:
        print(f"error: {MANUAL}; --gradescope-export lists them", file=sys.stderr)
        return 2
    try:
        queue = ExportQueue(read_export(args.gradescope_export, args.assignment))
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(shown(listing(queue, {})))          # a quoted line, a folder's name: the students' text
    print(shown(queue.export.left_out()))
    print(shown(queue.summary()))
    print(f"{MANUAL[0].upper()}{MANUAL[1:]}.")
    return 0


def refresh_report(course, assignment: str) -> None:
    """The class report written again with the decisions, where one was written (report/ASSIGNMENT/ in the
    instructor folder; one written elsewhere with --out is the instructor's to write again)."""
    from ..report.build import write_report
    from ..report.classlist import class_report_dir, from_class
    out = class_report_dir(assignment)
    if (out / "report.html").is_file():
        write_report(course, assignment, from_class(course, assignment), out)
        print(f"class report written again: {out / 'report.html'}")


def listing(queue, names: dict[str, str]) -> str:
    """Each flagged submission (named by names where it can): its decision or WAITING, the policy's quoted lines,
    each held test's points."""
    flagged = queue.flagged()
    lines = [f"{count(len(flagged), 'flagged submission')} of {queue.assignment} (results: {queue.source})"]
    for student, result in flagged.items():
        line = queue.decision(student)
        state = "WAITING for a decision" if result.waiting else \
            f"{DONE[line['decision']]} {line['at']}" + (f" ({line['note']})" if line["note"] else "")
        # one line, whatever the name holds: a file name with a newline cannot forge a line of the listing
        who = shown(f"{student} ({names[student]})" if student in names else student, keep="")
        lines += ["", f"{who}  {result.score:g} / {result.max_score}  {state}", f"  {decision_line(result)}"]
        lines += [f"  found: {finding}" for finding in result.review]
        lines += [f"  held:  part {t.part}, {count(t.held, 'point')}: {t.name}" for t in result.tests if t.held]
    return "\n".join(lines)


def roster_names(db_url: str) -> dict[str, str]:
    """{nbgrader student id: name} from the class's Canvas roster; {} for a class without one."""
    try:
        return {s.id: s.name for s in load_roster(db_url).students}
    except CanvasError:
        return {}


def decision_line(result) -> str:
    """What happened to the result's held points, or that it holds none."""
    return held_line(result) or "holds no points (flagged by the policy for a look; its tests are scored as run)"
