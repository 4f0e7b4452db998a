"""Canvas in and out: roster import, bulk-download names and collection, gradebook CSV export."""
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.demo import fake_canvas
from autograder.lms.canvas import collect, export
from autograder.lms.canvas.plugins import FINAL
from autograder.lms.canvas import roster as rosters
from autograder.course import ROOT
from autograder.core import seeds
from helpers import COURSE, cli
from autograder.nbgrading.run import tools_path
from autograder.nbgrading.apply import pulled_path

ASSIGNMENT = "residual-connections"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
DEADLINE = COURSE.assignment(ASSIGNMENT).deadline
HEADER = "Student,ID,SIS User ID,SIS Login ID,Section,Residual Connections (73101),Current Score\n"
POINTS = "    Points Possible,,,,,100.00,(read only)\n"
ROWS = ('"Abara, Chidi",51001,S1,cabara,Section A,,\n'
        '"Müller, Tobias",51002,S2,tmuller,Section B,,\n'
        '"Dubois, Amélie",51003,S3,adubois,Section A,,\n'
        '"Eze, Ngozi",51004,S4,neze,Section B,,\n'
        '"Fischer, Jonas",51005,S5,jfischer,Section A,,\n'
        '"Student, Test",51999,,,Section A,,\n')


def write_roster(path: Path, text: str = HEADER + POINTS + ROWS, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def write_notebook(path: Path, marker: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"answer = {marker!r}")])
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def marker_of(path: Path) -> str:
    return nbformat.read(str(path), as_version=4).cells[0].source


@pytest.fixture
def db_url(tmp_path, monkeypatch):
    """A fresh gradebook's URL; nbgrader runs `alembic` when it creates one, so the venv goes on PATH."""
    monkeypatch.setenv("PATH", tools_path())
    return f"sqlite:///{tmp_path / 'instructor' / 'gradebook.db'}"


# --- file names -------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("doejane_51001_700001_residual-connections.ipynb",
     ("doejane", False, "51001", 700001, "residual-connections.ipynb", 0)),
    ("doejane_LATE_51001_700002_residual-connections-2.ipynb",
     ("doejane", True, "51001", 700002, "residual-connections-2.ipynb", 2)),
    ("van_der_berg_anna_51003_700010_my_notebook_v2.ipynb",
     ("van_der_berg_anna", False, "51003", 700010, "my_notebook_v2.ipynb", 0)),
    ("o_neill_LATE_51004_700011_residual-connections (1)-1.ipynb",
     ("o_neill", True, "51004", 700011, "residual-connections (1)-1.ipynb", 1)),
])
def test_parse_filename(name, expected):
    f = collect.parse_filename(f"/x/extracted/{name}")
    assert (f.name, f.late, f.canvas_id, f.attachment_id, f.original, f.resubmission) == expected
    assert f.path == f"/x/extracted/{name}"


@pytest.mark.parametrize("name", ["residual-connections.ipynb", "doejane_51001_residual-connections.ipynb",
                                  "anon_x3Yz9_700001_residual-connections.ipynb", "_51001_700001_a.ipynb"])
def test_parse_filename_rejects_other_names(name):
    assert collect.parse_filename(name) is None


def test_canvas_user_name_matches_canvas_sanitising():
    assert collect.canvas_user_name("O'Brien, Aoife") == "obrienaoife"
    assert collect.canvas_user_name("García López, Sofía") == "garcíalópezsofía"
    assert collect.canvas_user_name("Smith_12_, Bo") == "smith12bo"  # Canvas drops _digits_ from names


# --- the roster -------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-8", "cp1252", "latin-1"])
def test_read_roster_encodings(tmp_path, encoding):
    roster = rosters.read_roster(write_roster(tmp_path / "export.csv", encoding=encoding), (ASSIGNMENT,))
    assert [s.id for s in roster.students] == ["51001", "51002", "51003", "51004", "51005"]
    müller = roster.students[1]
    assert (müller.last_name, müller.first_name, müller.sis_user_id, müller.sis_login_id, müller.section) == \
        ("Müller", "Tobias", "S2", "tmuller", "Section B")
    assert roster.students[2].name == "Dubois, Amélie"
    assert roster.columns == {ASSIGNMENT: "Residual Connections (73101)"}
    assert roster.problems == []


def test_read_roster_semicolons(tmp_path):
    text = HEADER.replace(",", ";") + '"Abara, Chidi";51001;S1;cabara;Section A;;\n'
    roster = rosters.read_roster(write_roster(tmp_path / "export.csv", text))
    assert [(s.name, s.id) for s in roster.students] == [("Abara, Chidi", "51001")]


@pytest.mark.parametrize("data, message", [
    ((HEADER + ROWS).encode("utf-16"), "UTF-16"),
    (HEADER.encode() + b'"Abara, Chidi\x81\x8d",51001,S1,cabara,Section A,,\n', "unknown text encoding"),
    (b"", "empty file"),
])
def test_read_roster_bad_encoding(tmp_path, data, message):
    path = tmp_path / "export.csv"
    path.write_bytes(data)
    with pytest.raises(rosters.CanvasError, match=message) as e:
        rosters.read_roster(path)
    assert str(path) in str(e.value)


def test_read_roster_missing_file(tmp_path):
    with pytest.raises(rosters.CanvasError, match="export.csv: cannot read it"):
        rosters.read_roster(tmp_path / "export.csv")


def test_read_roster_missing_column(tmp_path):
    text = (HEADER + ROWS).replace("SIS Login ID,", "")
    path = write_roster(tmp_path / "export.csv", text)
    with pytest.raises(rosters.CanvasError) as e:
        rosters.read_roster(path)
    assert str(path) in str(e.value) and "missing column 'SIS Login ID'" in str(e.value)


def test_read_roster_malformed_rows_are_named_and_the_rest_imported(tmp_path):
    rows = ('"Abara, Chidi",51001,S1,cabara,Section A,,\n'
            '"Broken, Row",abc,S2,brow,Section A,,\n'
            '"Short, Row",51003\n'
            '"Again, Chidi",51001,S4,cagain,Section B,,\n'
            ',51005,S5,noname,Section B,,\n'
            '"Eze, Ngozi",51004,S4,neze,Section B,,\n')
    path = write_roster(tmp_path / "export.csv", HEADER + POINTS + rows)
    roster = rosters.read_roster(path)
    assert [s.id for s in roster.students] == ["51001", "51004"]
    assert [p.split(": ")[1] for p in roster.problems] == ["row 4", "row 5", "row 6", "row 7"]
    assert all(p.startswith(str(path)) and p.endswith("not imported") for p in roster.problems)
    assert "'abc' is not a Canvas user ID" in roster.problems[0]
    assert "already on row 3" in roster.problems[2]


def test_import_roster_into_gradebook(tmp_path, db_url):
    roster = rosters.import_roster(write_roster(tmp_path / "export.csv", encoding="utf-8-sig"), db_url, (ASSIGNMENT,))
    with Gradebook(db_url) as gb:
        students = {s.id: (s.first_name, s.last_name) for s in gb.students}
    assert students == {"51001": ("Chidi", "Abara"), "51002": ("Tobias", "Müller"), "51003": ("Amélie", "Dubois"),
                        "51004": ("Ngozi", "Eze"), "51005": ("Jonas", "Fischer")}
    stored = rosters.load_roster(db_url)
    assert stored.students == roster.students and stored.column(ASSIGNMENT) == "Residual Connections (73101)"
    assert stored.column("fused-add-norm") == "fused-add-norm" and stored.points == {ASSIGNMENT: 100.0}
    assert (tmp_path / "instructor" / "canvas" / "roster.json").is_file()


def test_load_roster_without_import_says_what_to_do(db_url):
    with pytest.raises(rosters.CanvasError, match="python -m autograder roster"):
        rosters.load_roster(db_url)


def test_sample_roster_is_a_canvas_export():
    roster = rosters.read_roster(ROOT / "submissions" / "roster.csv", (ASSIGNMENT, "fused-add-norm"))
    assert len(roster.students) == 16 and roster.problems == []
    assert roster.columns == {ASSIGNMENT: "Residual Connections (73101)", "fused-add-norm": "Fused Add-Norm (73102)"}


# --- the bulk download ------------------------------------------------------------------

def test_plan_collection_newest_wins_and_every_other_file_is_named(tmp_path):
    files = {
        "abarachidi_51001_700005_residual-connections.ipynb": "old",
        "abarachidi_51001_700009_residual-connections-1.ipynb": "new",
        "abarachidi_51001_700007_Copy of residual-connections.ipynb": "middle",
        "mullertobias_LATE_51002_700003_residual-connections.ipynb": "late",
        "mullertobias_LATE_51002_700004_answers.pdf": None,
        "duboisamelie_51003_700006_residual-connections.ipynb": "{ not json",
        "intruder_59999_700008_residual-connections.ipynb": "stranger",
        "residual-connections.ipynb": "no canvas name",
        "anon_x3Yz9_700010_residual-connections.ipynb": "anonymous",
        # Smith_51001 (51004) names the upload so that the shortest reading is 51001's
        "smith_51001_51004_700099_residual-connections.ipynb": "smith",
        # a name Canvas did not write: two roster IDs fit, none with its name
        "x_51001_51004_700098_residual-connections.ipynb": "ambiguous",
    }
    for name, marker in files.items():
        if marker in (None, "{ not json"):
            (tmp_path / name).write_text(marker or "%PDF-1.4")
        else:
            write_notebook(tmp_path / name, marker)
    roster = {"51001": "Abara, Chidi", "51002": "Müller, Tobias", "51003": "Dubois, Amélie", "51004": "Smith_51001"}
    plan = collect.plan_collection(tmp_path.iterdir(), roster)
    assert {cid: marker_of(Path(f.path)) for cid, f in plan.chosen.items()} == \
        {"51001": "answer = 'new'", "51002": "answer = 'late'", "51004": "answer = 'smith'"}
    assert plan.chosen["51002"].late and not plan.chosen["51001"].late
    problems = {p.split(": ")[0]: p for p in plan.problems}
    assert set(problems) == set(files) - {"abarachidi_51001_700009_residual-connections-1.ipynb",
                                          "mullertobias_LATE_51002_700003_residual-connections.ipynb",
                                          "smith_51001_51004_700099_residual-connections.ipynb"}
    assert "could be Canvas ID 51001 or 51004" in problems["x_51001_51004_700098_residual-connections.ipynb"]
    assert "superseded by abarachidi_51001_700009" in problems["abarachidi_51001_700005_residual-connections.ipynb"]
    assert "not a notebook" in problems["mullertobias_LATE_51002_700004_answers.pdf"]
    assert "not a readable notebook" in problems["duboisamelie_51003_700006_residual-connections.ipynb"]
    assert "59999 (intruder) is not in the roster" in problems["intruder_59999_700008_residual-connections.ipynb"]
    assert "not Canvas's name_[LATE_]canvasid" in problems["residual-connections.ipynb"]
    assert "anonymous grading" in problems["anon_x3Yz9_700010_residual-connections.ipynb"]


def test_extract_archives_reports_corrupt_entries_and_keeps_the_rest(tmp_path):
    archive, extracted = tmp_path / "archive", tmp_path / "extracted"
    archive.mkdir()
    with zipfile.ZipFile(archive / "submissions.zip", "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("a_51001_1_nb.ipynb", b"GOOD-ENTRY")
        zf.writestr("b_51002_2_nb.ipynb", b"BAD-ENTRY-PAYLOAD")
        zf.writestr("../escape.ipynb", b"EVIL")
    data = (archive / "submissions.zip").read_bytes()
    (archive / "submissions.zip").write_bytes(data.replace(b"BAD-ENTRY-PAYLOAD", b"BAD-ENTRY-PAYLOAX"))
    (archive / "other.zip").write_bytes(b"not a zip")
    (archive / "loose_51003_3_nb.ipynb").write_text("{}")
    problems = collect.extract_archives(archive, extracted)
    assert (extracted / "submissions" / "a_51001_1_nb.ipynb").read_bytes() == b"GOOD-ENTRY"
    assert (extracted / "loose_51003_3_nb.ipynb").is_file()
    assert not (extracted / "submissions" / "b_51002_2_nb.ipynb").exists()
    assert not (extracted / "escape.ipynb").exists()
    assert len(problems) == 3
    assert "other.zip: not a readable zip archive" in problems[0]
    assert "submissions.zip: entry b_51002_2_nb.ipynb: corrupt" in problems[1]
    assert "submissions.zip: entry ../escape.ipynb: points outside the archive" in problems[2]


def test_one_student_s_file_names_cannot_stop_the_extraction(tmp_path):
    """A student names the file Canvas puts in the zip: a name 1,500 folders deep made mkdir recurse past
    Python's limit, and one over 255 bytes raised ENAMETOOLONG; either stopped collect for the whole class.
    Each is now that entry's problem, and the entries after it are extracted."""
    archive, extracted = tmp_path / "archive", tmp_path / "extracted"
    archive.mkdir()
    with zipfile.ZipFile(archive / "submissions.zip", "w") as zf:
        zf.writestr("a_51001_1_" + "d/" * 1500 + "nb.ipynb", b"{}")
        zf.writestr("b_51002_2_" + "x" * 300 + ".ipynb", b"{}")
        zf.writestr("c_51003_3_nb", b"{}")
        zf.writestr("c_51003_3_nb/inner.ipynb", b"{}")     # a file where its folder must go
        zf.writestr("d_51004_4_nb.ipynb", b"GOOD")
    problems = collect.extract_archives(archive, extracted)
    assert (extracted / "submissions" / "d_51004_4_nb.ipynb").read_bytes() == b"GOOD"
    assert len(problems) == 3, problems
    assert "1500 folders deep (at most 16); not extracted" in problems[0] and len(problems[0]) < 400
    assert "cannot be written here (File name too long)" in problems[1] and len(problems[1]) < 400
    assert "entry c_51003_3_nb/inner.ipynb: cannot be written here" in problems[2]


def test_build_bulk_download_names_files_as_canvas(tmp_path):
    roster = rosters.read_roster(write_roster(tmp_path / "export.csv"))
    notebooks = [write_notebook(tmp_path / f"nb{i}.ipynb", f"nb{i}") for i in range(3)]
    uploads = fake_canvas.pair_uploads(roster, notebooks, late={"51002"}, resubmitted={"51003"},
                                  earlier=write_notebook(tmp_path / "release.ipynb", "stub"))
    out = fake_canvas.build_bulk_download(tmp_path / "z.zip", uploads, NOTEBOOK, DEADLINE)
    assert zipfile.ZipFile(out).namelist() == [
        "abarachidi_51001_700001_residual-connections.ipynb",
        "müllertobias_LATE_51002_700002_residual-connections.ipynb",
        "duboisamélie_51003_700004_residual-connections-1.ipynb",
        "duboisamélie_51003_700003_residual-connections.ipynb",
    ]


# --- through nbgrader -------------------------------------------------------------------

def nbgrader(root: Path, db_url: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run nbgrader from the repository (so nbgrader_config.py applies) with root/instructor as its working area."""
    env = {**os.environ, "COURSE_INSTRUCTOR_DIR": str(root / "instructor"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.db_url={db_url}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_zip_collect_prints_each_file_not_taken_and_a_summary_only(tmp_path, db_url):
    roster = rosters.import_roster(write_roster(tmp_path / "export.csv"), db_url, (ASSIGNMENT,))
    notebooks = [write_notebook(tmp_path / "nbs" / f"{i}.ipynb", f"student {i}") for i in range(3)]
    idless = json.loads(notebooks[2].read_text())       # nbformat would warn about it: not a problem
    del idless["cells"][0]["id"]
    notebooks[2].write_text(json.dumps(idless))
    archive = tmp_path / "instructor" / "downloaded" / ASSIGNMENT / "archive" / "submissions.zip"
    uploads = fake_canvas.pair_uploads(roster, notebooks, late={"51002"}, resubmitted={"51002"},
                                       earlier=notebooks[0])
    fake_canvas.build_bulk_download(archive, uploads, NOTEBOOK, DEADLINE)
    with zipfile.ZipFile(archive, "a") as zf:
        zf.writestr("abarachidi_51001_700101_notes.pdf", "%PDF-1.4")
        zf.writestr("duboisamélie_51003_700102_answers\x1b[2J.py", "x = 1")     # a name that would clear the screen
        zf.writestr("intruder_59999_700103_residual-connections.ipynb", nbformat.writes(nbformat.v4.new_notebook()))
    proc = nbgrader(tmp_path, db_url, "zip_collect", ASSIGNMENT)
    record = tmp_path / "instructor" / "canvas" / f"collected-{ASSIGNMENT}.json"
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines() == [
        "abarachidi_51001_700101_notes.pdf: not a notebook (.ipynb); not collected",
        "duboisamélie_51003_700102_answers\\x1b[2J.py: not a notebook (.ipynb); not collected",
        "intruder_59999_700103_residual-connections.ipynb: Canvas ID 59999 (intruder) is not in the roster; "
        "not collected (import a fresh Canvas gradebook export, then collect again)",
        "müllertobias_LATE_51002_700002_residual-connections.ipynb: superseded by "
        "müllertobias_LATE_51002_700003_residual-connections-1.ipynb, the newer upload of Canvas ID 51002; "
        "not collected",
        f"{ASSIGNMENT}: 3 notebooks collected for 3 of the roster's 5 students, 4 files not taken, 1 late (51002); "
        f"recorded in {record}",
    ]
    assert "\x1b[2J.py" in json.loads(record.read_text())["problems"][1]    # the record keeps the name as is


@pytest.mark.slow
def test_zip_collect_and_export_through_nbgrader(tmp_path, db_url):
    release = tmp_path / "assignments" / ASSIGNMENT
    release.mkdir(parents=True)
    shutil.copy(ROOT / "assignments" / ASSIGNMENT / NOTEBOOK, release / NOTEBOOK)
    roster = rosters.import_roster(write_roster(tmp_path / "export.csv"), db_url, (ASSIGNMENT,))
    notebooks = [write_notebook(tmp_path / "nbs" / f"{i}.ipynb", f"student {i}") for i in range(3)]
    archive = tmp_path / "instructor" / "downloaded" / ASSIGNMENT / "archive" / "submissions.zip"
    uploads = fake_canvas.pair_uploads(roster, notebooks, late={"51002"}, resubmitted={"51003"},
                                  earlier=release / NOTEBOOK)
    fake_canvas.build_bulk_download(archive, uploads, NOTEBOOK, DEADLINE)
    with zipfile.ZipFile(archive, "a") as zf:  # the bad input a real download can hold
        zf.writestr("ezengozi_51004_700101_residual-connections.ipynb", "{ truncated")
        zf.writestr("ezengozi_51004_700102_notes.pdf", "%PDF-1.4")
        zf.writestr("intruder_59999_700103_residual-connections.ipynb", nbformat.writes(nbformat.v4.new_notebook()))
        zf.writestr("residual-connections (3).ipynb", "{}")

    proc = nbgrader(tmp_path, db_url, "zip_collect", ASSIGNMENT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    submitted = tmp_path / "instructor" / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["51001", "51002", "51003"]
    for i, cid in enumerate(["51001", "51002", "51003"]):
        assert marker_of(submitted / cid / ASSIGNMENT / NOTEBOOK) == f"answer = 'student {i}'"
    log = proc.stdout + proc.stderr
    for name in ["duboisamélie_51003_700003_residual-connections.ipynb",
                 "ezengozi_51004_700101_residual-connections.ipynb", "ezengozi_51004_700102_notes.pdf",
                 "intruder_59999_700103_residual-connections.ipynb", "residual-connections (3).ipynb"]:
        assert f"{name}: " in log
    record = collect.load_collection(db_url, ASSIGNMENT)
    assert {cid: s["late"] for cid, s in record["students"].items()} == \
        {"51001": False, "51002": True, "51003": False}
    assert len(record["problems"]) == 5

    with Gradebook(db_url) as gb:
        gb.add_assignment(ASSIGNMENT)
    out = tmp_path / "canvas.csv"
    proc = nbgrader(tmp_path, db_url, "export", f"--to={out}")
    assert proc.returncode == 1 and not out.exists()
    assert (f"{ASSIGNMENT}: collected but not autograded: Abara, Chidi (51001), Müller, Tobias (51002), "
            f"Dubois, Amélie (51003); run `python -m autograder autograde {ASSIGNMENT}`") in proc.stderr
    proc = nbgrader(tmp_path, db_url, "export", f"--to={out}", FINAL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "Student,ID,SIS User ID,SIS Login ID,Section,Residual Connections (73101)"
    assert [line.rsplit(",", 1)[1] for line in lines[2:]] == [""] * 5
    assert "collected but not autograded" in proc.stdout + proc.stderr


# --- the gradebook CSV ------------------------------------------------------------------

# nbgrader's own add_submission trips SQLAlchemy's autoflush warnings
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
def test_export_grades_exact_csv(tmp_path, db_url):
    rosters.import_roster(write_roster(tmp_path / "export.csv"), db_url, (ASSIGNMENT,))
    late = collect.parse_filename("mullertobias_LATE_51002_700001_residual-connections.ipynb")
    collect.save_collection(db_url, ASSIGNMENT, collect.Collection({"51002": late}, []), [])
    with Gradebook(db_url) as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(ASSIGNMENT, ASSIGNMENT)
        gb.add_grade_cell("auto", ASSIGNMENT, ASSIGNMENT, max_score=75, cell_type="code")
        gb.add_grade_cell("written", ASSIGNMENT, ASSIGNMENT, max_score=25, cell_type="markdown")
        gb.add_student("59999")  # graded, but not in the Canvas roster
        for student, auto, manual in [("51001", 60.0, 20.5), ("51002", 75.0, None), ("51004", 0.0, 0.0),
                                      ("51005", 12.25, 3.0), ("59999", 50.0, 0.0)]:
            gb.add_submission(ASSIGNMENT, student)
            gb.find_grade("auto", ASSIGNMENT, ASSIGNMENT, student).auto_score = auto
            gb.find_grade("written", ASSIGNMENT, ASSIGNMENT, student).manual_score = manual
        gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, "51002").late_submission_penalty = 5.0
        gb.db.commit()
        dest, notes = export.export_grades(gb)
    assert dest == tmp_path / "instructor" / "canvas" / "grades.csv"
    assert dest.read_text(encoding="utf-8") == (
        "Student,ID,SIS User ID,SIS Login ID,Section,Residual Connections (73101)\n"
        "Points Possible,,,,,100\n"
        '"Abara, Chidi",51001,S1,cabara,Section A,80.5\n'
        '"Müller, Tobias",51002,S2,tmuller,Section B,70\n'
        '"Dubois, Amélie",51003,S3,adubois,Section A,\n'
        '"Eze, Ngozi",51004,S4,neze,Section B,0\n'
        '"Fischer, Jonas",51005,S5,jfischer,Section A,15.25\n')
    assert notes == [f"{ASSIGNMENT}: graded in nbgrader but not in the Canvas roster, so not exported: 59999",
                     f"{ASSIGNMENT}: MISSING, exported blank: Dubois, Amélie (51003)",
                     f"{ASSIGNMENT}: LATE in Canvas: Müller, Tobias (51002)",
                     f"{ASSIGNMENT}: late penalty taken off (course.toml late_per_day): Müller, Tobias (51002) -5"]
    with Gradebook(db_url) as gb:
        dest, _ = export.export_grades(gb, tmp_path / "one.csv", students=["51005"])
    assert dest.read_text(encoding="utf-8").splitlines()[2:] == ['"Fischer, Jonas",51005,S5,jfischer,Section A,15.25']
    with Gradebook(db_url) as gb:   # course.toml [lms] missing = "zero"
        dest, notes = export.export_grades(gb, tmp_path / "zero.csv", students=["51003"], missing="zero")
    assert dest.read_text(encoding="utf-8").splitlines()[2:] == ['"Dubois, Amélie",51003,S3,adubois,Section A,0']
    assert f"{ASSIGNMENT}: MISSING, exported as 0: Dubois, Amélie (51003)" in notes
    # canvas pull saw 51003 excused: blank even with missing = "zero", and called excused, not missing
    pulled = {"51003": {"excused": True}, "51001": {"excused": False}}
    rosters.write_json(pulled_path(db_url, ASSIGNMENT), {"assignment": ASSIGNMENT, "students": pulled})
    with Gradebook(db_url) as gb:
        dest, notes = export.export_grades(gb, tmp_path / "zero.csv", students=["51003"], missing="zero")
    assert dest.read_text(encoding="utf-8").splitlines()[2:] == ['"Dubois, Amélie",51003,S3,adubois,Section A,']
    assert f"{ASSIGNMENT}: excused in Canvas, left untouched (blank): Dubois, Amélie (51003)" in notes
    assert not [n for n in notes if "MISSING" in n]


def test_collection_record_is_json_beside_the_gradebook(tmp_path, db_url):
    assert collect.load_collection(db_url, ASSIGNMENT) == {"assignment": ASSIGNMENT, "students": {}, "problems": []}
    path = collect.save_collection(db_url, ASSIGNMENT, collect.Collection({}, []), ["x: not collected"])
    assert json.loads(path.read_text())["problems"] == ["x: not collected"]
    assert path.parent == tmp_path / "instructor" / "canvas"


# --- the export refuses while grading is pending ---------------------------------------------

def graded_class(tmp_path: Path, db_url: str) -> None:
    """Abara (51001) fully graded, Müller (51002) with a written answer not graded; the other three missing."""
    rosters.import_roster(write_roster(tmp_path / "export.csv"), db_url, (ASSIGNMENT,))
    with Gradebook(db_url) as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(ASSIGNMENT, ASSIGNMENT)
        gb.add_grade_cell("auto", ASSIGNMENT, ASSIGNMENT, max_score=75, cell_type="code")
        gb.add_grade_cell("written", ASSIGNMENT, ASSIGNMENT, max_score=25, cell_type="markdown")
        for student, manual in [("51001", 20.0), ("51002", None)]:
            gb.add_submission(ASSIGNMENT, student)
            auto = gb.find_grade("auto", ASSIGNMENT, ASSIGNMENT, student)
            auto.auto_score, auto.needs_manual_grade = 50.0, False
            written = gb.find_grade("written", ASSIGNMENT, ASSIGNMENT, student)
            written.manual_score, written.needs_manual_grade = manual, manual is None
        gb.db.commit()


def hold_tests(tmp_path: Path, db_url: str, student: str) -> None:
    """student's submitted notebook (the release) flagged in the class's results store, waiting for a decision."""
    from autograder.core.extract import Template
    from autograder.course import SOLUTIONS
    from autograder.nbgrading.autograde import store_path
    from autograder.results.result import Result, held_entry
    from autograder.results.store import Store
    notebook = tmp_path / "instructor" / "submitted" / student / ASSIGNMENT / NOTEBOOK
    notebook.parent.mkdir(parents=True)
    shutil.copy(ROOT / "assignments" / ASSIGNMENT / NOTEBOOK, notebook)
    key = Template(COURSE.assignment(ASSIGNMENT).notebook_path(SOLUTIONS)).key(notebook)
    store = Store(store_path(db_url, ASSIGNMENT), ASSIGNMENT)
    store.put(key, Result(ASSIGNMENT, 1, [held_entry("residual_add leaves its inputs unchanged", 1, 6, "held")],
                          code_key=key, review=("import sys",)))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
def test_export_refuses_while_grading_is_pending_unless_final(tmp_path, db_url):
    graded_class(tmp_path, db_url)
    hold_tests(tmp_path, db_url, "51001")
    previous = tmp_path / "instructor" / "canvas" / "grades.csv"
    previous.write_text("the previous export\n", encoding="utf-8")
    proc = nbgrader(tmp_path, db_url, "export")
    assert proc.returncode == 1
    said = proc.stdout + proc.stderr
    assert (f"{ASSIGNMENT}: manual grades pending for 1 students (1 cells): Müller, Tobias (51002); "
            "grade them in formgrader") in said
    assert (f"{ASSIGNMENT}: 1 flagged submissions wait for a review decision (6 points held): Abara, Chidi (51001); "
            f"decide with `python -m autograder review {ASSIGNMENT}`") in said
    assert f"nbgrader export {FINAL}" in said
    assert previous.read_text(encoding="utf-8") == "the previous export\n"

    proc = nbgrader(tmp_path, db_url, "export", FINAL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = previous.read_text(encoding="utf-8").splitlines()[2:]
    assert [row.rsplit(",", 1)[1] for row in rows] == ["70", "50", "", "", ""]
    assert "exported as final" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_export_missing_zero_and_a_bad_value_from_course_toml(tmp_path, db_url):
    graded_class(tmp_path, db_url)
    good = (ROOT / "course.toml").read_text(encoding="utf-8")
    course_file = tmp_path / "course.toml"
    course_file.write_text(good.replace('missing = "blank"', 'missing = "zero"'), encoding="utf-8")
    proc = nbgrader(tmp_path, db_url, "export", FINAL, env={"COURSE_FILE": str(course_file)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = (tmp_path / "instructor" / "canvas" / "grades.csv").read_text(encoding="utf-8").splitlines()[2:]
    assert [row.rsplit(",", 1)[1] for row in rows] == ["70", "50", "0", "0", "0"]
    course_file.write_text(good.replace('missing = "blank"', 'missing = "excused"'), encoding="utf-8")
    proc = nbgrader(tmp_path, db_url, "export", FINAL, env={"COURSE_FILE": str(course_file)})
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if "lms.missing" in line]
    assert len(errors) == 1 and "expected one of blank, zero, got 'excused'" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
def test_status_of_a_small_class(tmp_path, db_url, monkeypatch):
    graded_class(tmp_path, db_url)
    hold_tests(tmp_path, db_url, "51001")
    late = collect.parse_filename("mullertobias_LATE_51002_700001_residual-connections.ipynb")
    on_time = collect.parse_filename("eze_51004_700002_residual-connections.ipynb")
    collect.save_collection(db_url, ASSIGNMENT, collect.Collection({"51002": late, "51004": on_time}, []), [])
    with Gradebook(db_url) as gb:   # 51002 uploaded 26 hours after the deadline
        gb.find_assignment(ASSIGNMENT).duedate = DEADLINE.replace(tzinfo=None)
        gb.find_submission(ASSIGNMENT, "51002").timestamp = DEADLINE.replace(tzinfo=None) + dt.timedelta(hours=26)
        gb.db.commit()
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(tmp_path / "instructor"))
    proc = cli("status", ASSIGNMENT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    fingerprint = seeds.secret_id(seeds.read_secret())
    assert lines[:10] == [
        f"{ASSIGNMENT} in {tmp_path / 'instructor'}",
        "roster: 5 students",
        "submitted: 3; missing: 2: Dubois, Amélie (51003), Fischer, Jonas (51005)",
        "late: 1: Müller, Tobias (51002) 1 day 2 h late",
        "autograded: 2 of 3; not yet: Eze, Ngozi (51004)",
        "manual grades pending: 1 students, 1 cells: Müller, Tobias (51002)",
        f"held tests waiting for review: 1 submissions, 6 points: Abara, Chidi (51001) "
        f"(python -m autograder review {ASSIGNMENT})",
        "points possible: 100, as Canvas's column 'Residual Connections (73101)' says",
        f"course secret: fingerprint {fingerprint} (from the environment variable {seeds.ENV})",
        "export: blocked, `nbgrader export` refuses until these are done (or it is told it is final):"]
    assert len(lines) == 13 and "Eze, Ngozi (51004); run `python -m autograder autograde" in lines[-1]


def test_status_names_points_possible_that_differ_from_canvas():
    from autograder.cli.status import possible_line
    assert possible_line(135.0, 100.0, "Residual Connections (73101)") == (
        "points possible: 135, but Canvas's column 'Residual Connections (73101)' says 100: "
        "change one before importing the CSV")
    assert possible_line(100.0, None, "residual-connections").endswith("the Canvas export gave none for "
                                                                       "'residual-connections'")
