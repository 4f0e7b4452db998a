"""python -m autograder demo: the grading loop on the bundled sample class, in dist/demo-class/."""
from __future__ import annotations

from ..demo import loop
from ..demo.loop import (AREA, ASSIGNMENT, CLASS, LATE, ROOT, ROSTER, class_canvas, class_report, grade_table,
                         push_dry_run, review_line, run_loop, step)
from ..lms.canvas.roster import read_roster


def add_parser(commands) -> None:
    p = commands.add_parser("demo", help="the grading loop on the bundled sample class, in dist/demo-class/",
                            description=loop.__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, help="parallel graders (default: course.toml grading.workers)")
    p.set_defaults(run=run)


def run(args) -> int:
    with class_canvas(args.course) as canvas:   # one local Canvas: pulled from, then pushed to
        _run(canvas, args.workers)
    return 0


def _run(course, workers: int | None) -> None:
    grades = run_loop(course, workers=workers)
    step(f"done: {grades.relative_to(ROOT)} (without API access, upload it in Canvas: Grades > Import)")
    roster = read_roster(ROSTER)
    per_day = course.assignment(ASSIGNMENT).late_per_day
    print(grade_table(grades, {s.id: f"{name}.ipynb" + (f" (LATE: {per_day:g} points off per started day)"
                                                        if s.id in LATE else "")
                               for s, name in zip(roster.students, CLASS)}))
    print(f"\nfeedback to hand back: {(AREA / 'feedback').relative_to(ROOT)}/CANVAS_ID/{ASSIGNMENT}/*.html")
    step("class report (python -m autograder report)")
    report = class_report(course)
    print(f"what to reteach, and pairs of similar submissions to look at: {report.relative_to(ROOT)}")
    step("review queue (python -m autograder review)")
    print(review_line(course))
    step(f"grades and feedback to Canvas through its API: the same local Canvas "
         f"(python -m autograder canvas push {ASSIGNMENT} --final, a dry run)")
    print(push_dry_run(course))
