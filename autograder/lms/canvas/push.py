"""`canvas push ASSIGNMENT`: final grades and feedback to Canvas's API; a dry run unless told to apply.

    plan = plan_push(course, "residual-connections", coursedir, final=False)   # PushError while grading is pending
    print(plan.table())                      # Canvas's grade -> the new one, and the comment, per student
    done = apply(plan, course)               # uploads the files, then one PUT per student that changes

Each roster student with a final grade (export.final_scores: nbgrader's total less the late penalty)
gets it as the submission's posted grade, and one submission comment holding their feedback page
and, where they answered a written question, a PDF of their answers (lms/gradescope/pdf.py). The
comment ends with a mark, "[autograder ASSIGNMENT DIGEST]", the digest being of the feedback page
and the notebook: a rerun finds it and posts nothing again; new feedback (a regrade) gets a comment
of its own. A student's grade and comment go in one request, after the files are uploaded, so a
push cut short (network, Ctrl-C) is finished by running it again. An excused submission is never
touched; a student who submitted nothing is left as Canvas has it, or given 0 with [lms] missing = "zero".
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from canvasapi.upload import Uploader

from ...course import SOLUTIONS, Course
from ...nbgrading.gradebook import open_gradebook
from .api import CanvasApiError, canvas_errors, connect
from .export import final_scores, score_text
from .pending import find_pending
from .roster import canvas_dir, load_roster


class PushError(RuntimeError):
    """Nothing can be pushed yet (grading pending); the message says what and how to finish."""


@dataclass
class Row:
    student: str                 # "Last, First"
    id: str                      # Canvas user id
    current: float | None        # Canvas's score now
    new: float | None            # the final grade; None: leave Canvas's grade alone
    excused: bool = False
    files: list[Path] = field(default_factory=list)   # the feedback page(s) the comment attaches
    answers: list = field(default_factory=list)       # the written answers, for the comment's PDF; [] for none
    mark: str = ""               # the comment's mark, when one is to be posted
    note: str = ""

    @property
    def grade_changes(self) -> bool:
        return not self.excused and self.new is not None and (self.current is None or abs(self.current - self.new) > 0.005)

    @property
    def changes(self) -> bool:
        return not self.excused and (self.grade_changes or bool(self.mark))


@dataclass
class Plan:
    assignment: str
    rows: list[Row]
    submissions: dict            # Canvas user id -> canvasapi Submission
    notes: list[str]

    def table(self) -> str:
        lines = [f"{'Student':<26} {'Canvas ID':<10} {'Canvas grade -> new':<22} comment"]
        for r in self.rows:
            shown = lambda v: "-" if v is None else score_text(v)   # noqa: E731
            grade = ("excused" if r.excused else f"{shown(r.current)} -> {shown(r.new)}" if r.new is not None
                     else f"{shown(r.current)} (left as is)")
            lines.append(f"{r.student[:26]:<26} {r.id:<10} {grade:<22} {r.note}")
        return "\n".join(lines)

    def counts(self) -> str:
        grades = sum(r.grade_changes for r in self.rows)
        comments = sum(bool(r.mark) and not r.excused for r in self.rows)
        return f"{grades} grades and {comments} comments to change, of {len(self.rows)} students"


def plan_push(course: Course, assignment: str, coursedir, final: bool = False) -> Plan:
    """What a push would change, from the gradebook, the feedback pages and Canvas as it is now."""
    a = course.assignment(assignment)
    remote, canvas_assignment = connect(course, assignment)   # a token Canvas refuses is said first
    roster = load_roster(coursedir.db_url)
    with open_gradebook(coursedir.db_url) as gb:
        pending = find_pending(gb, course, a.name, coursedir)
        if not final and (lines := pending.lines({s.id: s.name for s in roster.students})):
            raise PushError("nothing pushed: grading is pending\n  " + "\n  ".join(lines)
                            + f"\nfinish it, or push it as it stands: python -m autograder canvas push {a.name} --final")
        scores = final_scores(gb, a.name)
    with canvas_errors(course.canvas.base_url):
        submissions = {str(s.user_id): s for s in canvas_assignment.get_submissions(include=["submission_comments"])}
    notes = [f"{a.name}: graded here but not a student in Canvas, not pushed: {sid}"
             for sid in sorted(set(scores) - set(submissions))]
    rows = []
    for s in roster.students:
        sub = submissions.get(s.id)
        if sub is None:
            notes.append(f"{a.name}: {s.name} ({s.id}) is on the roster but not in Canvas's assignment; not pushed")
            continue
        row = Row(s.name, s.id, getattr(sub, "score", None), scores.get(s.id), excused=bool(getattr(sub, "excused", False)))
        if row.excused:
            row.new, row.note = None, "excused in Canvas: untouched"
        elif s.id not in scores:
            row.new = 0.0 if course.lms.missing == "zero" else None
            row.note = "no graded submission" + (": 0 ([lms] missing)" if row.new is not None else "")
        else:
            _comment(row, a, coursedir, sub, course.grading.max_cell_kb)
        rows.append(row)
    return Plan(a.name, rows, submissions, notes)


def _comment(row: Row, a, coursedir, sub, max_cell_kb: int) -> None:
    """Fill in the row's comment: its files and mark, or why none is posted."""
    feedback = sorted(Path(coursedir.format_path(coursedir.feedback_directory, row.id, a.name)).glob("*.html"))
    notebook = Path(coursedir.format_path(coursedir.submitted_directory, row.id, a.name)) / a.notebook
    if not feedback:
        row.note = f"no feedback page yet (nbgrader generate_feedback {a.name}): grade only"
        return
    digest = hashlib.sha256()
    for path in [*feedback, notebook]:
        digest.update(path.read_bytes() if path.is_file() else b"")
    mark = f"[autograder {a.name} {digest.hexdigest()[:12]}]"
    posted = [c.get("comment", "") for c in getattr(sub, "submission_comments", None) or []]
    if any(mark in text for text in posted):
        row.note = "feedback already posted"
        return
    row.mark, row.files, row.answers = mark, feedback, _answers(a, notebook, max_cell_kb)
    row.note = ("new feedback (regraded): " if any(f"[autograder {a.name} " in t for t in posted) else "") + \
        "feedback page" + " + written answers PDF" * bool(row.answers)


def _answers(a, notebook: Path, max_cell_kb: int) -> list:
    """The student's written answers, when the assignment has written questions and one was answered."""
    if not a.manual or not notebook.is_file():
        return []
    from ...nbgrading.answers import Questions
    answers = Questions(a.notebook_path(SOLUTIONS), max_cell_kb).answers(notebook)
    return answers if any(x.text is not None for x in answers) else []


def apply(plan: Plan, course: Course, coursedir, progress=print) -> int:
    """Make the plan's changes in Canvas, one student at a time; returns how many students were changed."""
    folder = canvas_dir(coursedir.db_url) / f"push-{plan.assignment}"
    done = 0
    for row in plan.rows:
        if not row.changes:
            continue
        sub = plan.submissions[row.id]
        with canvas_errors(course.canvas.base_url, f" (after {done} students; {row.student} ({row.id}) not done)"):
            file_ids = [_upload(sub, path) for path in _attachments(row, folder)]
            change = {}
            if row.grade_changes:
                change["submission"] = {"posted_grade": score_text(row.new)}
            if row.mark:
                change["comment"] = {"text_comment": _text(plan.assignment, row), "file_ids": file_ids}
            sub.edit(**change)
        done += 1
        progress(f"  {row.student} ({row.id}): {row.note if row.mark else 'grade'} done")
    return done


def _attachments(row: Row, folder: Path) -> list[Path]:
    """The comment's files: the feedback page(s), and the written answers' PDF written now; [] for no comment."""
    if not row.mark or not row.answers:
        return row.files if row.mark else []
    from ..gradescope.pdf import write_pdf   # fpdf2 and its fonts only when there is a PDF to write
    pdf = folder / row.id / "written-answers.pdf"
    pdf.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_pdf(row.answers, pdf, f"{row.student}: written answers")
    except Exception as e:   # noqa: BLE001 - as `answers` does: the feedback page goes without it
        print(f"warning: {row.student} ({row.id}): no written answers PDF ({e}); the comment has the feedback page")
        return row.files
    return [*row.files, pdf]


def _upload(sub, path: Path) -> int:
    """Canvas's file upload for a submission comment (step 1 asks where, step 2 sends it); the file's id."""
    url = f"courses/{sub.course_id}/assignments/{sub.assignment_id}/submissions/{sub.user_id}/comments/files"
    ok, answer = Uploader(sub._requester, url, str(path)).start()
    if not ok:
        raise CanvasApiError(f"Canvas did not take the upload of {path.name}; run the same command again")
    return answer["id"]


def _text(assignment: str, row: Row) -> str:
    return (f"Feedback on {assignment}: the attached page lists each hidden test, its points and what went wrong"
            + (", and a PDF of your written answers as submitted" if row.answers else "")
            + f".\n\n{row.mark}")
