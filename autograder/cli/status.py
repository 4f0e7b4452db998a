"""python -m autograder status ASSIGNMENT: where the class stands, a line per fact, and what blocks an export.

The instructor folder is nbgrader_config.py's (COURSE_INSTRUCTOR_DIR); the facts come from the Canvas
roster, the collection record, nbgrader's gradebook and the class's results store; for a Gradescope course,
from its Export Submissions zip (--gradescope-export ZIP). Nothing is written.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..results.result import count, points
from ..results.terminal import shown


def add_parser(commands) -> None:
    p = commands.add_parser("status", help="where the class stands: submitted, late, pending; what blocks an export",
                            description=__doc__.split(": ", 1)[1])
    p.add_argument("assignment", help="an assignment named in course.toml")
    p.add_argument("--gradescope-export", type=Path, metavar="ZIP",
                   help="a Gradescope course: where it stands by its assignment's Export Submissions zip")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.gradescope_export is not None:
        return gradescope_status(args)
    from nbgrader.api import MissingEntry
    from nbgrader.coursedir import CourseDirectory

    from ..lms.canvas.collect import load_collection
    from ..lms.canvas.pending import find_pending
    from ..lms.canvas.roster import CanvasError, load_roster
    from ..nbgrading.apply import class_exceptions
    from ..nbgrading.autograde import store_path
    from ..nbgrading.gradebook import beside_gradebook, open_gradebook
    from ..nbgrading.run import nbgrader_config
    name = args.course.assignment(args.assignment).name
    coursedir = CourseDirectory(config=nbgrader_config())
    try:
        roster = load_roster(coursedir.db_url)
    except CanvasError as e:
        print(shown(f"error: {e}"), file=sys.stderr)
        return 2
    names = {s.id: s.name for s in roster.students}
    extended = class_exceptions(args.course, coursedir.db_url, roster.ids).of(name)

    def who(ids) -> str:
        return ", ".join(f"{names.get(s, '?')} ({s})" for s in ids) or "none"

    with open_gradebook(coursedir.db_url) as gb:
        try:
            max_score = gb.find_assignment(name).max_score
        except MissingEntry:
            max_score = None
        graded = {s.student.id: s.total_seconds_late for s in gb.assignment_submissions(name)}
        pending = find_pending(gb, args.course, name, coursedir)
    collected = load_collection(coursedir.db_url, name)["students"]
    submitted = sorted(roster.ids & (set(collected) | set(graded)), key=list(names).index)
    late = {s: graded.get(s, 0) for s in submitted if graded.get(s) or collected.get(s, {}).get("late")}
    lines = [
        f"{name} in {beside_gradebook(coursedir.db_url)}",
        f"roster: {len(roster.students)} students",
        f"submitted: {len(submitted)}; missing: {len(roster.students) - len(submitted)}: "
        f"{who(s.id for s in roster.students if s.id not in submitted)}",
        f"late: {len(late)}: " + (", ".join(f"{names[s]} ({s}) {lateness(late[s])}" for s in late) or "none")
        + (f"; extended (exceptions.toml, Canvas overrides): {len(extended)}: " + ", ".join(
            f"{names[s]} ({s}) {e.describe()}" for s, e in extended.items()) if extended else ""),
        f"autograded: {len(set(graded) & set(submitted))} of {len(submitted)}; not yet: {who(pending.not_autograded)}",
        f"manual grades pending: {len(pending.manual)} students, {sum(pending.manual.values())} cells: "
        f"{who(pending.manual)}",
        f"held tests waiting for review: {len(pending.held)} submissions, {points(sum(pending.held.values()))} "
        f"points: {who(pending.held)}" + (f" (python -m autograder review {name})" if pending.held else ""),
        possible_line(max_score, roster.points.get(name), roster.column(name)),
        secret_line(store_path(coursedir.db_url, name), name),
    ]
    blocking = pending.lines(names)
    lines.append("export: blocked, `nbgrader export` refuses until these are done (or it is told it is final):\n  "
                 + "\n  ".join(blocking) if blocking else "export: nothing pending; `nbgrader export` writes the Canvas CSV")
    print(shown("\n".join(lines)))
    return 0


def gradescope_status(args) -> int:
    from ..lms.gradescope.export import ExportError, read_export, status_lines
    args.course.assignment(args.assignment)
    try:
        # the submitters' own display names, a folder's name: the students' text
        print(shown("\n".join(status_lines(read_export(args.gradescope_export, args.assignment)))))
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def lateness(seconds: float) -> str:
    """How late, as Canvas would say it: "2 days 3 h late"; "LATE in Canvas" before autograde knows the time."""
    if not seconds:
        return "(LATE in Canvas; how late once autograded)"
    hours = int(-(-seconds // 3600))
    days, hours = divmod(hours, 24)
    return " ".join(part for part in (count(days, "day") * bool(days), f"{hours} h" * bool(hours)) if part) + " late"


def possible_line(max_score: float | None, canvas: float | None, column: str) -> str:
    """The gradebook's points possible against the roster's Canvas column."""
    if max_score is None:
        return "points possible: not in the gradebook yet (autograde registers the assignment)"
    here = f"points possible: {points(max_score)}"
    if canvas is None:
        return f"{here}; the Canvas export gave none for {column!r}"
    if canvas != max_score:
        return f"{here}, but Canvas's column {column!r} says {points(canvas)}: change one before importing the CSV"
    return f"{here}, as Canvas's column {column!r} says"


def secret_line(store: Path, assignment: str) -> str:
    """The course secret's fingerprint (never the secret), where it is read from, and whether the class's
    results were graded with it. No secret is made here: `autograde` makes one on first use."""
    from ..core import seeds
    from ..results.store import Store, StoreError
    path = seeds.secret_path()
    if path is not None and not path.exists():
        return f"course secret: none yet at {path} (autograde makes one; docs/security.md)"
    try:
        fingerprint = seeds.secret_id(seeds.read_secret())
    except seeds.SecretError as e:
        return f"course secret: {e}"
    line = f"course secret: fingerprint {fingerprint} (from {seeds.source()})"
    try:
        if store.is_file():
            Store(store, assignment, secret_id=fingerprint)
    except StoreError:
        return (f"{line}; but {store} was graded with another secret, so autograde and review refuse it: "
                "use that secret (docs/security.md)")
    return line
