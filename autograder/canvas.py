"""Canvas in and out: the roster, the bulk-download zip, the gradebook CSV.

    python -m autograder roster EXPORT.csv       # Canvas gradebook export -> nbgrader gradebook
    nbgrader zip_collect residual-connections    # bulk download -> instructor/submitted/
    nbgrader export                              # gradebook -> instructor/canvas/grades.csv

Students are keyed by their Canvas user ID (the export's "ID" column, the number in
every bulk-download file name). What nbgrader's gradebook has no field for (SIS User
ID, SIS Login ID, Section, Canvas's assignment columns) and what a collection found
(late files, files not collected) live as JSON in a `canvas/` folder beside the
SQLite gradebook. The nbgrader plugins that call this module are in nbgrader_plugins.py.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import shutil
import sys
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from . import course as course_mod
from .course import ROOT
from .gradebook import GradebookError, beside_gradebook, open_gradebook

# Canvas's student columns, in its order, and the RosterStudent field each fills.
FIELDS = {"Student": "name", "ID": "id", "SIS User ID": "sis_user_id", "SIS Login ID": "sis_login_id",
          "Section": "section"}
ROSTER_COLUMNS = tuple(FIELDS)
TEST_STUDENT = "Student, Test"  # Canvas's "Student View" user, in every export
ENCODINGS = ("utf-8-sig", "cp1252")  # UTF-8 with or without BOM; Windows-1252 (a superset of latin-1's text)

# Canvas's bulk download (canvas-lms lib/content_zipper.rb):
#   "#{sortable name, lowercased, non-word characters removed}_[LATE_]#{user id}_#{attachment id}_#{file name}"
# The name never holds "_<digits>_" (Canvas strips that so the first such run is the user id),
# so the shortest name that fits is the right one. The file name gets "-N" when the student
# uploaded a file of that name before (Attachment.make_unique_filename).
FILE_NAME = re.compile(r"(?P<name>.+?)_(?P<late>LATE_)?(?P<canvas_id>\d+)_(?P<attachment_id>\d+)_(?P<original>.+)\Z")
ANONYMOUS = re.compile(r"(LATE_)?anon_")
RESUBMISSION = re.compile(r"-(\d+)(\.[^.]*)?\Z")
# A header Canvas's gradebook import ties to an existing assignment: "Title (assignment id)".
ASSIGNMENT_HEADER = re.compile(r"\A(?P<title>.*)\s\(\d+\)\Z")


class CanvasError(ValueError):
    """A Canvas file that cannot be used at all; the message names the file."""


# --- the roster -------------------------------------------------------------------------

@dataclass(frozen=True)
class RosterStudent:
    name: str          # Canvas's sortable name, "Last, First"
    id: str            # Canvas user ID, also the nbgrader student id
    sis_user_id: str
    sis_login_id: str
    section: str

    @property
    def last_name(self) -> str:
        return self.name.split(",", 1)[0].strip()

    @property
    def first_name(self) -> str:
        return self.name.split(",", 1)[1].strip() if "," in self.name else ""


@dataclass
class Roster:
    students: list[RosterStudent]
    columns: dict[str, str]            # course assignment -> Canvas's header for it, "Title (id)"
    problems: list[str] = dataclasses.field(default_factory=list)  # rows not imported, one message each

    @property
    def ids(self) -> set[str]:
        return {s.id for s in self.students}

    def column(self, assignment: str) -> str:
        """The CSV header for an assignment: Canvas's own when the export had one, else its name."""
        return self.columns.get(assignment, assignment)


def decode(path: Path) -> str:
    """The file's text: UTF-8 (with or without BOM) or Windows-1252/latin-1, else a CanvasError."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CanvasError(f"{path}: cannot read it ({e.strerror})") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data:
        raise CanvasError(f"{path}: UTF-16 text (Excel's 'Unicode Text'), not a CSV this reads; "
                          "save it as 'CSV UTF-8' or use Canvas's export as downloaded")
    for encoding in ENCODINGS:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise CanvasError(f"{path}: unknown text encoding (neither UTF-8 nor Windows-1252/latin-1); "
                      "save it as 'CSV UTF-8'")


def read_roster(path: str | Path, assignments: tuple[str, ...] = ()) -> Roster:
    """Parse a Canvas gradebook export; `assignments` are the course's, to find their columns."""
    path = Path(path)
    text = decode(path)
    if not text.strip():
        raise CanvasError(f"{path}: empty file, expected a Canvas gradebook export")
    first = text.split("\n", 1)[0]
    delimiter = ";" if first.count(";") > first.count(",") else ","  # Excel in some locales
    rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = [cell.strip() for cell in next(rows)]
    missing = [c for c in ROSTER_COLUMNS if c not in header]
    if missing:
        raise CanvasError(f"{path}: missing column{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))}; "
                          f"a Canvas gradebook export starts with {', '.join(ROSTER_COLUMNS)}")
    at = {c: header.index(c) for c in ROSTER_COLUMNS}
    students, problems, seen = [], [], {}
    for number, row in enumerate(rows, start=2):
        problem = _row_problem(row, at, seen)
        if problem == "skip":
            continue
        if problem:
            problems.append(f"{path}: row {number}: {problem}; not imported")
            continue
        student = RosterStudent(**{field: row[at[c]].strip() for c, field in FIELDS.items()})
        seen[student.id] = number
        students.append(student)
    return Roster(students, _assignment_columns(header, assignments), problems)


def _row_problem(row: list[str], at: dict[str, int], seen: dict[str, int]) -> str | None:
    """Why a data row is not a student ("skip" for Canvas's own non-student rows), or None."""
    cells = [cell.strip() for cell in row]
    if not any(cells) or "Points Possible" in cells[0] or cells[0] == TEST_STUDENT:
        return "skip"
    if all(re.fullmatch(r"(?i)(muted|manual posting.*)?", cell) for cell in cells):
        return "skip"
    if len(cells) <= max(at.values()):
        return f"{len(cells)} cells, the header has at least {max(at.values()) + 1}"
    canvas_id, name = cells[at["ID"]], cells[at["Student"]]
    if not canvas_id.isdigit():
        return f"ID {canvas_id!r} is not a Canvas user ID (a whole number)"
    if not name:
        return f"no name in the Student column for ID {canvas_id}"
    if canvas_id in seen:
        return f"ID {canvas_id} is already on row {seen[canvas_id]}"
    return None


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _assignment_columns(header: list[str], assignments: tuple[str, ...]) -> dict[str, str]:
    """Canvas's "Title (id)" headers whose title is a course assignment's name (any case/spacing)."""
    wanted = {_slug(a): a for a in assignments}
    columns = {}
    for cell in header:
        match = ASSIGNMENT_HEADER.match(cell)
        if match and _slug(match["title"]) in wanted:
            columns[wanted[_slug(match["title"])]] = cell
    return columns


# --- what lives beside the gradebook ----------------------------------------------------

def canvas_dir(db_url) -> Path:
    """The canvas/ folder beside the SQLite gradebook that db_url (str or SQLAlchemy URL) names."""
    try:
        return beside_gradebook(db_url) / "canvas"
    except GradebookError as e:
        raise CanvasError(str(e)) from None


def _write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def import_roster(path: str | Path, db_url: str, course_id: str = "") -> Roster:
    """Put the export's students into the nbgrader gradebook and its SIS data in canvas/roster.json."""
    roster = read_roster(path, tuple(course_mod.load().assignments))
    if not roster.students:
        raise CanvasError(f"{path}: no students found")
    folder = canvas_dir(db_url)
    folder.mkdir(parents=True, exist_ok=True)  # also the gradebook's folder
    with open_gradebook(db_url, course_id) as gb:
        for s in roster.students:
            gb.update_or_create_student(s.id, first_name=s.first_name, last_name=s.last_name)
    _write_json(folder / "roster.json",
                {"source": str(path), "columns": roster.columns,
                 "students": [dataclasses.asdict(s) for s in roster.students]})
    return roster


def load_roster(db_url) -> Roster:
    """The roster last imported beside this gradebook."""
    path = canvas_dir(db_url) / "roster.json"
    if not path.is_file():
        raise CanvasError(f"no Canvas roster at {path}: run `python -m autograder roster EXPORT.csv` "
                          "with the course's Canvas gradebook export first")
    data = json.loads(path.read_text(encoding="utf-8"))
    return Roster([RosterStudent(**s) for s in data["students"]], data["columns"])


# --- the bulk download ------------------------------------------------------------------

@dataclass(frozen=True)
class CanvasFile:
    path: str            # as found on disk
    name: str            # Canvas's sanitised sortable name
    late: bool
    canvas_id: str
    attachment_id: int   # Canvas's file id: a database sequence, so a later upload has a larger one
    original: str        # the file name the student uploaded (with Canvas's "-N")

    @property
    def resubmission(self) -> int:
        """N of Canvas's "-N" suffix (0 without one)."""
        match = RESUBMISSION.search(self.original)
        return int(match[1]) if match else 0

    @property
    def newness(self) -> tuple[int, int]:
        return self.attachment_id, self.resubmission


def parse_filename(path: str | Path) -> CanvasFile | None:
    """The parts of a Canvas bulk-download file name, or None if it is not one."""
    match = FILE_NAME.match(Path(path).name)
    if not match:
        return None
    return CanvasFile(path=str(path), name=match["name"], late=bool(match["late"]),
                      canvas_id=match["canvas_id"], attachment_id=int(match["attachment_id"]),
                      original=match["original"])


def canvas_user_name(sortable_name: str) -> str:
    """The name part Canvas writes into bulk-download file names."""
    name = re.sub(r"_(\d+)_", r"\1", sortable_name)
    return re.sub(r"[^\w]", "", name.lower())


def unreadable(path: str | Path) -> str | None:
    """Why nbformat cannot read this notebook, or None."""
    try:
        nbformat.read(str(path), as_version=4)
    except Exception as e:  # any failure to read it is a reason not to grade it
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'unreadable'}"
    return None


@dataclass
class Collection:
    chosen: dict[str, CanvasFile]   # Canvas ID -> the notebook to grade
    problems: list[str]             # every file not collected, one message each


def plan_collection(paths, roster_ids: set[str]) -> Collection:
    """Pick each roster student's newest readable notebook; say why every other file is left out."""
    candidates: dict[str, list[CanvasFile]] = {}
    problems = []
    for path in sorted(map(str, paths)):
        shown = Path(path).name
        found = parse_filename(path)
        if found is None:
            hint = ("anonymous grading is on in Canvas, so the name has no Canvas ID"
                    if ANONYMOUS.match(shown) else
                    "the name is not Canvas's name_[LATE_]canvasid_attachmentid_file")
            problems.append(f"{shown}: {hint}; not collected")
        elif Path(found.original).suffix.lower() != ".ipynb":
            problems.append(f"{shown}: not a notebook (.ipynb); not collected")
        elif found.canvas_id not in roster_ids:
            problems.append(f"{shown}: Canvas ID {found.canvas_id} ({found.name}) is not in the roster; "
                            "not collected (import a fresh Canvas gradebook export, then collect again)")
        elif reason := unreadable(path):
            problems.append(f"{shown}: not a readable notebook ({reason}); not collected")
        else:
            candidates.setdefault(found.canvas_id, []).append(found)
    chosen = {}
    for canvas_id, files in candidates.items():
        newest, *older = sorted(files, key=lambda f: f.newness, reverse=True)
        chosen[canvas_id] = newest
        problems += [f"{Path(f.path).name}: superseded by {Path(newest.path).name}, the newer upload "
                     f"of Canvas ID {canvas_id}; not collected" for f in older]
    return Collection(chosen, problems)


def save_collection(db_url, assignment: str, collection: Collection, problems: list[str]) -> Path:
    """canvas/collected-ASSIGNMENT.json: per student the file taken and whether Canvas marked it late."""
    students = {cid: {"file": Path(f.path).name, "attachment_id": f.attachment_id, "late": f.late}
                for cid, f in collection.chosen.items()}
    return _write_json(canvas_dir(db_url) / f"collected-{assignment}.json",
                       {"assignment": assignment, "students": students, "problems": problems})


def load_collection(db_url, assignment: str) -> dict:
    """What the last zip_collect of this assignment recorded ({"students": {}, ...} if none)."""
    path = canvas_dir(db_url) / f"collected-{assignment}.json"
    if not path.is_file():
        return {"assignment": assignment, "students": {}, "problems": []}
    return json.loads(path.read_text(encoding="utf-8"))


def extract_archives(archive_dir: Path, extracted_dir: Path) -> list[str]:
    """Unzip each .zip in archive_dir into extracted_dir/ZIPNAME/, copy other files; list what failed."""
    problems = []
    for path in sorted(p for p in Path(archive_dir).rglob("*") if p.is_file()):
        rel = path.relative_to(archive_dir)
        if path.suffix.lower() == ".zip":
            problems += _extract_zip(path, Path(extracted_dir) / rel.parent / path.stem)
        else:
            (Path(extracted_dir) / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(extracted_dir) / rel)
    return problems


def _extract_zip(path: Path, dest: Path) -> list[str]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        return [f"{path.name}: not a readable zip archive ({e}); nothing extracted from it"]
    problems = []
    with archive:
        for entry in archive.infolist():
            if entry.is_dir():
                continue
            target = dest / entry.filename
            if not target.resolve().is_relative_to(dest.resolve()):
                problems.append(f"{path.name}: entry {entry.filename}: points outside the archive; not extracted")
                continue
            try:
                data = archive.read(entry)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
                problems.append(f"{path.name}: entry {entry.filename}: corrupt ({e}); not extracted")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return problems


@dataclass(frozen=True)
class Upload:
    """One student's files in a Canvas-style bulk download (for the demo and the tests)."""
    student: RosterStudent
    notebook: Path
    late: bool = False
    earlier: Path | None = None   # an older upload of the same file name, superseded by `notebook`


def build_bulk_download(out: str | Path, uploads: list[Upload], filename: str) -> Path:
    """Write a zip named and laid out as Canvas's "Download Submissions" (attachment ids 700001, ...)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    next_id = iter(range(700001, 10**9))
    stem, suffix = Path(filename).stem, Path(filename).suffix
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for u in uploads:
            prefix = "_".join([canvas_user_name(u.student.name), *["LATE"] * u.late, u.student.id])
            files = ([(u.earlier, filename), (u.notebook, f"{stem}-1{suffix}")] if u.earlier
                     else [(u.notebook, filename)])
            numbered = [(source, next(next_id), name) for source, name in files]  # older: smaller id
            for source, attachment_id, name in reversed(numbered):  # zip order tells nothing about age
                info = zipfile.ZipInfo(f"{prefix}_{attachment_id}_{name}", date_time=(2027, 2, 16, 0, 0, 0))
                zf.writestr(info, Path(source).read_bytes(), zipfile.ZIP_DEFLATED)
    return out


def pair_uploads(roster: Roster, notebooks: list[Path], late=(), resubmitted=(), earlier: Path | None = None) -> list[Upload]:
    """Give the i-th notebook to the i-th roster student; students after the last notebook submit nothing."""
    return [Upload(student, nb, late=student.id in late,
                   earlier=earlier if student.id in resubmitted else None)
            for student, nb in zip(roster.students, notebooks)]


# --- the gradebook CSV ------------------------------------------------------------------

def score_text(value: float) -> str:
    """A score as Canvas shows it: at most two decimals, no trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def export_grades(gb: Gradebook, dest: str | Path | None = None,
                  assignments=(), students=()) -> tuple[Path, list[str]]:
    """Write the CSV Canvas's gradebook import takes; return it and notes for the instructor.

    One row per roster student (a missing submission scores 0 and is named in the notes, since
    Canvas would take any extra column for a new assignment); one column per assignment, headed
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
    scores = {}
    for a in chosen:
        scores[a.name] = {s.student.id: max(0.0, s.score - (s.late_submission_penalty or 0.0))
                          for s in gb.assignment_submissions(a.name)}
        notes += _assignment_notes(a.name, roster, rows, scores[a.name], load_collection(url, a.name))
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow([*ROSTER_COLUMNS, *(roster.column(a.name) for a in chosen)])
        out.writerow(["Points Possible", *[""] * (len(ROSTER_COLUMNS) - 1),
                      *(score_text(a.max_score or 0.0) for a in chosen)])
        for s in rows:
            out.writerow([*(getattr(s, field) for field in FIELDS.values()),
                          *(score_text(scores[a.name].get(s.id, 0.0)) for a in chosen)])
    return dest, notes


def _assignment_notes(assignment: str, roster: Roster, rows: list[RosterStudent], scores: dict,
                      record: dict) -> list[str]:
    def names(students):
        return ", ".join(f"{s.name} ({s.id})" for s in students)
    collected = record["students"]
    missing = [s for s in rows if s.id not in scores]
    notes = []
    if strangers := sorted(set(scores) - roster.ids):
        notes.append(f"{assignment}: graded in nbgrader but not in the Canvas roster, so not exported: "
                     f"{', '.join(strangers)}")
    unusable = [s for s in missing if any(f"_{s.id}_" in p for p in record.get("problems", []))]
    if unusable:
        notes.append(f"{assignment}: uploaded nothing usable (the collection's problems say why), "
                     f"exported as 0: {names(unusable)}")
    if missing := [s for s in missing if s not in unusable]:
        notes.append(f"{assignment}: MISSING, exported as 0: {names(missing)}")
    if not_graded := [s for s in missing if s.id in collected]:
        notes.append(f"{assignment}: collected but not autograded (run `nbgrader autograde {assignment}`): "
                     f"{names(not_graded)}")
    if late := [s for s in rows if collected.get(s.id, {}).get("late")]:
        notes.append(f"{assignment}: LATE in Canvas (no penalty applied here): {names(late)}")
    return notes


# --- command line -----------------------------------------------------------------------

def nbgrader_config():
    """The settings nbgrader_config.py makes (gradebook URL, download folder)."""
    from traitlets.config.loader import PyFileConfigLoader
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


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
    roster = import_roster(args.csv, db_url)
    for problem in roster.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(f"imported {len(roster.students)} students from {args.csv} into {db_url}; "
          f"SIS data and Canvas columns in {canvas_dir(db_url) / 'roster.json'}")
    return 1 if roster.problems else 0


def run_canvas_zip(args) -> int:
    a = course_mod.load().assignment(args.assignment)
    roster = read_roster(args.roster)
    notebooks = sorted(args.notebooks.glob("*.ipynb"))
    if not notebooks:
        raise CanvasError(f"{args.notebooks}: no .ipynb files")
    uploads = pair_uploads(roster, notebooks, late=set(args.late), resubmitted=set(args.resubmitted),
                           earlier=a.notebook_path(ROOT / "assignments"))
    out = args.out or ROOT / nbgrader_config().ZipCollectApp.downloaded_directory / a.name / "archive" / "submissions.zip"
    build_bulk_download(out, uploads, a.notebook)
    print(f"wrote {out}:")
    for u in uploads:
        extra = " LATE" * u.late + " (+ an older upload)" * (u.earlier is not None)
        print(f"  {u.student.id}  {u.student.name:<28} <- {u.notebook.name}{extra}")
    for s in roster.students[len(uploads):]:
        print(f"  {s.id}  {s.name:<28} <- nothing (no submission)")
    for nb in notebooks[len(uploads):]:
        print(f"  (no roster student left for {nb.name}: not in the zip)")
    return 0
