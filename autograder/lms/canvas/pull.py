"""`canvas pull ASSIGNMENT`: the roster and each student's latest submission from Canvas's API, collected.

    pulled = pull(course, "residual-connections", coursedir)   # -> Pulled: .roster, .record, .archive

The roster (student enrollments; Canvas's Student View user is a StudentViewEnrollment and is left
out) goes where `roster EXPORT.csv` puts it. The latest attempt's attachments are written as one
zip into zip_collect's archive folder, each entry named and timed as in Canvas's bulk download
(collect.py: name_[LATE_]userid_attachmentid_file, the entry's time its submitted_at), and
nbgrader zip_collect files them: the same choice of notebook, lateness and problems list (not a
notebook, unreadable, unknown) as the bulk-download path. A file that is not a notebook is listed
without being downloaded. Canvas's own states (submitted_at, late, missing, excused, seconds_late)
and each student's assignment override (an extension: their own due date) are kept in
canvas/pulled-ASSIGNMENT.json. An excused student's files are not collected.
"""
from __future__ import annotations

import datetime as dt
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ...course import ROOT, Course
from ...nbgrading.apply import pulled_path
from ...nbgrading.run import nbgrader, nbgrader_config
from .api import CanvasApiError, canvas_errors, connect
from .collect import canvas_user_name
from .roster import Roster, RosterStudent, save_roster, write_json

ARCHIVE = "canvas-api.zip"   # pull's zip in zip_collect's archive folder, replaced by each pull


@dataclass
class Pulled:
    roster: Roster
    record: dict        # what canvas/pulled-ASSIGNMENT.json holds
    archive: Path


def pull(course: Course, assignment: str, coursedir) -> Pulled:
    """Pull the roster and the submissions, then run nbgrader zip_collect on them (its lines printed)."""
    a = course.assignment(assignment)
    base_url = course.canvas.base_url
    remote, canvas_assignment = connect(course, assignment)
    with canvas_errors(base_url):
        roster = _roster(remote, assignment, canvas_assignment)
        extensions = {uid: o.due_at for o in canvas_assignment.get_overrides()
                      for uid in getattr(o, "student_ids", None) or []}
        submissions = {str(s.user_id): s for s in canvas_assignment.get_submissions()}
        save_roster(roster, coursedir.db_url, f"{base_url}/courses/{remote.id}", course.id)
        archive = ROOT / nbgrader_config().ZipCollectApp.downloaded_directory / a.name / "archive" / ARCHIVE
        students = _write_archive(archive, roster, submissions, extensions)
    record = {"assignment": a.name, "canvas": f"{base_url}/courses/{remote.id}/assignments/{canvas_assignment.id}",
              "due_at": canvas_assignment.due_at, "students": students}
    write_json(pulled_path(coursedir.db_url, a.name), record)   # its due dates: nbgrading/apply.py reads them
    if any(s["attachments"] for s in students.values()):
        nbgrader("zip_collect", a.name, "--force", "--log-level=ERROR")   # prints what it did not take
    return Pulled(roster, record, archive)


def _roster(remote, assignment: str, canvas_assignment) -> Roster:
    sections = {s.id: s.name for s in remote.get_sections()}
    students: dict[str, RosterStudent] = {}
    for e in remote.get_enrollments(type=["StudentEnrollment"]):
        if e.type != "StudentEnrollment" or str(e.user_id) in students:   # one row per student, first section
            continue
        user = e.user
        students[str(e.user_id)] = RosterStudent(name=user["sortable_name"], id=str(e.user_id),
                                                 sis_user_id=user.get("sis_user_id") or "",
                                                 sis_login_id=user.get("login_id") or "",
                                                 section=sections.get(e.course_section_id, ""))
    if not students:
        raise CanvasApiError("Canvas lists no students in the course (StudentEnrollment); nothing pulled")
    column = f"{canvas_assignment.name} ({canvas_assignment.id})"
    points = {assignment: float(canvas_assignment.points_possible)} if canvas_assignment.points_possible else {}
    return Roster(sorted(students.values(), key=lambda s: s.name), {assignment: column}, points=points)


def _write_archive(archive: Path, roster: Roster, submissions: dict, extensions: dict) -> dict:
    """Write the latest attempts' files as Canvas's bulk download names them; return each student's states."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.parent.parent / f"{ARCHIVE}.partial"   # outside archive/, which zip_collect reads whole
    students = {}
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
        for s in roster.students:
            sub = submissions.get(s.id)
            state = {key: getattr(sub, key, None) for key in ("submitted_at", "late", "missing", "excused",
                                                               "seconds_late", "workflow_state")}
            state["due_at"] = extensions.get(int(s.id))
            files = [] if sub is None or state["excused"] else getattr(sub, "attachments", [])
            state["attachments"] = [f.display_name for f in files]
            students[s.id] = state
            when = dt.datetime.fromisoformat(state["submitted_at"].replace("Z", "+00:00")) if files else None
            for f in files:
                name = "_".join([canvas_user_name(s.name), *["LATE"] * bool(state["late"]), s.id, str(f.id),
                                 f.display_name])
                # only a notebook's bytes matter: collect tells other files by their name alone
                data = f.get_contents(binary=True) if f.display_name.lower().endswith(".ipynb") else b""
                info = zipfile.ZipInfo(name, date_time=when.astimezone(dt.timezone.utc).timetuple()[:6])
                zf.writestr(info, data, zipfile.ZIP_DEFLATED)
    partial.replace(archive)   # a pull cut short leaves the previous zip
    return students


def summary(pulled: Pulled) -> list[str]:
    """What the pull found, a line each: roster, submitted, late, missing, excused, extensions."""
    students = pulled.record["students"]
    names = {s.id: s.name for s in pulled.roster.students}

    def who(ids):
        return ", ".join(f"{names[i]} ({i})" for i in ids) or "none"
    sections = sorted({s.section for s in pulled.roster.students if s.section})
    submitted = [i for i, s in students.items() if s["attachments"]]
    return [
        f"roster: {len(students)} students ({', '.join(sections) or 'no sections'}); Canvas's test student left out",
        f"submitted: {len(submitted)}; late in Canvas: {who(i for i in submitted if students[i]['late'])}",
        f"missing: {who(i for i, s in students.items() if not s['attachments'] and not s['excused'])}",
        f"excused (not collected, never graded here): {who(i for i, s in students.items() if s['excused'])}",
        "extensions: " + (", ".join(f"{names[i]} ({i}) due {s['due_at']}" for i, s in students.items()
                                    if s["due_at"]) or "none"),
    ]
