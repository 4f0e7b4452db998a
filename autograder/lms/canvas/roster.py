"""The class roster from a Canvas gradebook export, and the canvas/ folder beside the gradebook.

    roster = import_roster("export.csv", db_url, ("residual-connections",))   # into nbgrader too
    roster = load_roster(db_url)                                               # as last imported

Students are keyed by their Canvas user ID (the export's "ID" column, the number in
every bulk-download file name). What nbgrader's gradebook has no field for (SIS User
ID, SIS Login ID, Section, Canvas's assignment columns and their Points Possible) and
what a collection found (late files, files not collected) live as JSON in a `canvas/`
folder beside the SQLite gradebook.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...nbgrading.gradebook import GradebookError, beside_gradebook, open_gradebook

# Canvas's student columns, in its order, and the RosterStudent field each fills.
FIELDS = {"Student": "name", "ID": "id", "SIS User ID": "sis_user_id", "SIS Login ID": "sis_login_id",
          "Section": "section"}
ROSTER_COLUMNS = tuple(FIELDS)
TEST_STUDENT = "Student, Test"  # Canvas's "Student View" user, in every export
ENCODINGS = ("utf-8-sig", "cp1252")  # UTF-8 with or without BOM; Windows-1252 (a superset of latin-1's text)
# A header Canvas's gradebook import ties to an existing assignment: "Title (assignment id)".
ASSIGNMENT_HEADER = re.compile(r"\A(?P<title>.*)\s\(\d+\)\Z")



class CanvasError(ValueError):
    """A Canvas file that cannot be used at all; the message names the file."""




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
    points: dict[str, float] = dataclasses.field(default_factory=dict)  # course assignment -> its Points Possible

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
    columns = _assignment_columns(header, assignments)
    students, problems, seen, points = [], [], {}, {}
    for number, row in enumerate(rows, start=2):
        if row and "Points Possible" in row[0]:
            points = _points_possible(header, row, columns)
        problem = _row_problem(row, at, seen)
        if problem == "skip":
            continue
        if problem:
            problems.append(f"{path}: row {number}: {problem}; not imported")
            continue
        student = RosterStudent(**{field: row[at[c]].strip() for c, field in FIELDS.items()})
        seen[student.id] = number
        students.append(student)
    return Roster(students, columns, problems, points)


def _points_possible(header: list[str], row: list[str], columns: dict[str, str]) -> dict[str, float]:
    """{course assignment: points} from Canvas's "Points Possible" row, for the columns that give a number."""
    cells = dict(zip(header, (cell.strip() for cell in row)))
    points = {}
    for assignment, column in columns.items():
        try:
            points[assignment] = float(cells.get(column, ""))
        except ValueError:
            continue
    return points


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


def canvas_dir(db_url) -> Path:
    """The canvas/ folder beside the SQLite gradebook that db_url (str or SQLAlchemy URL) names."""
    try:
        return beside_gradebook(db_url) / "canvas"
    except GradebookError as e:
        raise CanvasError(str(e)) from None


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def import_roster(path: str | Path, db_url: str, assignments: tuple[str, ...], course_id: str = "") -> Roster:
    """Put the export's students into the nbgrader gradebook and its SIS data in canvas/roster.json;
    `assignments` are the course's, to find their Canvas columns."""
    roster = read_roster(path, assignments)
    if not roster.students:
        raise CanvasError(f"{path}: no students found")
    return save_roster(roster, db_url, str(path), course_id)


def save_roster(roster: Roster, db_url: str, source: str, course_id: str = "") -> Roster:
    """Put the roster's students into the nbgrader gradebook and its SIS data in canvas/roster.json."""
    folder = canvas_dir(db_url)
    folder.mkdir(parents=True, exist_ok=True)  # also the gradebook's folder
    with open_gradebook(db_url, course_id) as gb:
        for s in roster.students:
            gb.update_or_create_student(s.id, first_name=s.first_name, last_name=s.last_name)
    write_json(folder / "roster.json",
                {"source": source, "columns": roster.columns, "points_possible": roster.points,
                 "students": [dataclasses.asdict(s) for s in roster.students]})
    return roster


def load_roster(db_url) -> Roster:
    """The roster last imported beside this gradebook."""
    path = canvas_dir(db_url) / "roster.json"
    if not path.is_file():
        raise CanvasError(f"no Canvas roster at {path}: run `python -m autograder roster EXPORT.csv` "
                          "with the course's Canvas gradebook export first")
    data = json.loads(path.read_text(encoding="utf-8"))
    # a roster imported before Points Possible was kept has none: status then says the export gave none
    return Roster([RosterStudent(**s) for s in data["students"]], data["columns"],
                  points=data.get("points_possible", {}))
