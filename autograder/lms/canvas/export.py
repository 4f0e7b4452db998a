"""The CSV Canvas's gradebook import takes, from nbgrader's gradebook.

    dest, notes = export_grades(gb)        # canvas/grades.csv beside the gradebook; notes for the instructor
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from nbgrader.api import Gradebook

from ...nbgrading.apply import pulled_path
from .collect import load_collection
from .roster import FIELDS, ROSTER_COLUMNS, Roster, RosterStudent, canvas_dir, load_roster


MISSING = {"blank": "blank", "zero": "as 0"}   # course.toml [lms] missing: how the notes say it


def score_text(value: float) -> str:
    """A score as Canvas shows it: at most two decimals, no trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def export_grades(gb: Gradebook, dest: str | Path | None = None,
                  assignments=(), students=(), missing: str = "blank") -> tuple[Path, list[str]]:
    """Write the CSV Canvas's gradebook import takes; return it and notes for the instructor.

    One row per roster student (a missing submission is left blank, so that Canvas keeps an
    "excused", or 0 when missing is "zero" (course.toml [lms] missing), and is named in the notes; a
    student Canvas marked excused at the last `canvas pull` is always left blank, named as excused,
    since Canvas would take any extra column for a new assignment); one column per assignment, headed
    "Title (canvas id)" when the imported export had that assignment, else its name (Canvas then
    matches an assignment of that exact title or creates one); a "Points Possible" row.
    Score = nbgrader's total (auto + manual) less any late penalty nbgrader computed.
    """
    url = gb.engine.url
    roster = load_roster(url)
    dest = Path(dest) if dest else canvas_dir(url) / "grades.csv"
    students, assignments = set(map(str, students)), set(map(str, assignments))
    rows = [s for s in roster.students if not students or s.id in students]
    chosen = [a for a in gb.assignments if not assignments or a.name in assignments]
    notes = [] if chosen else ["no assignments in the gradebook yet (`nbgrader autograde` adds them): "
                               "the CSV has no grade columns"]
    scores, excused = {}, {}
    for a in chosen:
        excused[a.name] = excused_in_canvas(url, a.name)
        submissions = gb.assignment_submissions(a.name)
        scores[a.name] = final_scores(gb, a.name)
        penalties = {s.student.id: s.late_submission_penalty for s in submissions if s.late_submission_penalty}
        notes += _assignment_notes(a.name, roster, rows, scores[a.name], penalties, load_collection(url, a.name),
                                   MISSING[missing], excused[a.name])
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow([*ROSTER_COLUMNS, *(roster.column(a.name) for a in chosen)])
        out.writerow(["Points Possible", *[""] * (len(ROSTER_COLUMNS) - 1),
                      *(score_text(a.max_score or 0.0) for a in chosen)])
        for s in rows:
            out.writerow([*(getattr(s, field) for field in FIELDS.values()),
                          *(score_text(scores[a.name][s.id]) if s.id in scores[a.name] else
                            "0" * (missing == "zero" and s.id not in excused[a.name]) for a in chosen)])
    return dest, notes


def final_scores(gb: Gradebook, assignment: str) -> dict[str, float]:
    """{student: the grade Canvas gets}: nbgrader's total (auto + manual) less any late penalty."""
    return {s.student.id: max(0.0, s.score - (s.late_submission_penalty or 0.0))
            for s in gb.assignment_submissions(assignment)}


def excused_in_canvas(db_url, assignment: str) -> set[str]:
    """The students Canvas marked excused at the last `canvas pull` (its record, pull.py); none without one."""
    path = pulled_path(db_url, assignment)
    if not path.is_file():
        return set()
    return {s for s, state in json.loads(path.read_text(encoding="utf-8"))["students"].items() if state.get("excused")}


def _assignment_notes(assignment: str, roster: Roster, rows: list[RosterStudent], scores: dict,
                      penalties: dict[str, float], record: dict, exported: str, excused: set[str]) -> list[str]:
    def names(students):
        return ", ".join(f"{s.name} ({s.id})" for s in students)
    collected = record["students"]
    missing = [s for s in rows if s.id not in scores and s.id not in excused]
    notes = []
    if strangers := sorted(set(scores) - roster.ids):
        notes.append(f"{assignment}: graded in nbgrader but not in the Canvas roster, so not exported: "
                     f"{', '.join(strangers)}")
    unusable = [s for s in missing if any(f"_{s.id}_" in p for p in record.get("problems", []))]
    if unusable:
        notes.append(f"{assignment}: uploaded nothing usable (the collection's problems say why), "
                     f"exported {exported}: {names(unusable)}")
    if missing := [s for s in missing if s not in unusable]:
        notes.append(f"{assignment}: MISSING, exported {exported}: {names(missing)}")
    if untouched := [s for s in rows if s.id in excused and s.id not in scores]:
        notes.append(f"{assignment}: excused in Canvas, left untouched (blank): {names(untouched)}")
    if not_graded := [s for s in missing if s.id in collected]:
        notes.append(f"{assignment}: collected but not autograded (run `nbgrader autograde {assignment}`): "
                     f"{names(not_graded)}")
    if late := [s for s in rows if collected.get(s.id, {}).get("late")]:
        notes.append(f"{assignment}: LATE in Canvas: {names(late)}")
    if penalties:
        notes.append(f"{assignment}: late penalty taken off (course.toml late_per_day): " + ", ".join(
            f"{s.name} ({s.id}) -{score_text(penalties[s.id])}" for s in rows if s.id in penalties))
    return notes
