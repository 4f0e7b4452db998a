"""Gradescope's Export Submissions zip read back (lms/gradescope/export.py): results.json as the Result it was
written from, and report, review and status reading an export, with what cannot be read listed apart.
tests/test_gradescope.py reads back an export of the sample class's simulated Gradescope runs."""
import csv
import zipfile

import pytest

from autograder.lms.gradescope.export import MANUAL, ExportError, read_export, to_result
from autograder.lms.gradescope.late import Late
from autograder.lms.gradescope.results import not_graded, to_gradescope
from autograder.results.result import Result, entry, held_entry, not_run
from helpers import ASSIGNMENT, ROOT, cli, write_export

SAMPLES = ROOT / "submissions" / ASSIGNMENT


def result(failed: bool = False, held: bool = False) -> Result:
    """A result with each kind the report counts: passed, a wrong answer naming a misconception, one listed
    apart, held, not run."""
    graded = [entry("residual_add adds", 1, 0 if failed else 2, 2, "wrong: x was changed" if failed else "passed",
                    "in-place-add" if failed else None, "failed" if failed else "passed"),
              entry("Residual block", 1, 3, 3, "passed", kind="passed"),
              held_entry("gradient flows", 2, 4, "cell line 3: [import] sys") if held else
              entry("gradient flows", 2, 4, 4, "passed", kind="passed"),
              entry("deep stack", 3, 0, 5, "raised ValueError", kind="error")]
    return Result(ASSIGNMENT, 7, [*graded, not_run("on CUDA", 3, 2, "redistribute", graded)],
                  review=("cell line 3: [import] sys",) if held else ())


def doc(r: Result, late_days: int = 0) -> dict:
    out = to_gradescope(r, visibility="visible", late=Late(late_days, late_days, 1, "2027-02-15T23:59:00+00:00", 0))
    out["tests"].append({"name": "Part 2 written answer", "score": 0, "max_score": 0, "output": "<p>x</p>",
                         "tags": ["part 2", "written answer", "2 manual points"], "extra_data": {"part": 2}})
    return out


def test_results_json_reads_back_as_the_result_it_was_written_from():
    for r in (result(), result(failed=True), result(held=True)):
        back = to_result(doc(r), ASSIGNMENT)
        assert back.to_store() == r.to_store()          # kinds, misconception ids, held points, findings
    with pytest.raises(ExportError, match="is of 'residual-connections', not fused-add-norm"):
        to_result(doc(result()), "fused-add-norm")
    with pytest.raises(ExportError, match="not graded: no notebook"):
        to_result(not_graded(ASSIGNMENT, "no notebook"), ASSIGNMENT)
    with pytest.raises(ExportError, match="not written by this course's autograder"):
        to_result({"score": 3, "tests": []}, ASSIGNMENT)


@pytest.fixture
def export(tmp_path):
    full, honest = (SAMPLES / "full-marks.ipynb").read_bytes(), (SAMPLES / "honest-a.ipynb").read_bytes()
    path = write_export(tmp_path / "assignment_1_export.zip", {
        "submission_1": ([("Ada Lovelace", "51001")], doc(result()), {"mine.ipynb": full}),
        "submission_2": ([("Bob Byron", "51002")], doc(result(failed=True), late_days=2), {"copy.ipynb": full}),
        "submission_3": ([("Cy Clark", "51003"), ("Di Dunn", "51004")], doc(result(held=True)),
                         {"nb/x.ipynb": honest, "nb/.ipynb_checkpoints/x-checkpoint.ipynb": honest}),
        "submission_4": ([("Ed Eames", "51005")], None, {"mine.ipynb": full}),
        # the upload's name, quoted in results.json, is the student's: a newline in it made a line of its own
        "submission_5": ([("Flo Fox", "51006")], not_graded(ASSIGNMENT, "no notebook (.ipynb) was uploaded, only: "
                                                           "a.txt\nflagged for review: 0 submissions"),
                         {"mine.py": b"x = 1"}),
    })
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("assignment_1_export/submission_9/mine.ipynb", full)
    return path


def test_an_export_is_read_and_what_cannot_be_is_listed(export):
    got = read_export(export, ASSIGNMENT)
    assert [s.name for s in got.submissions] == ["Ada Lovelace (51001)", "Bob Byron (51002)",
                                                 "Cy Clark (51003); Di Dunn (51004)"]
    assert [s.late_days for s in got.submissions] == [0, 2, 0]
    assert got.submissions[2].notebook == (SAMPLES / "honest-a.ipynb").read_bytes()   # checkpoints ignored
    assert [p.split(":")[0] for p in got.problems] == ["submission_4", "submission_5", "submission_9"]
    assert "no results/results.json" in got.problems[0] and "not graded: no notebook" in got.problems[1]
    assert "not in submission_metadata.yml" in got.problems[2]


def test_report_review_and_status_read_an_export(export, tmp_path):
    done = cli("report", ASSIGNMENT, "--gradescope-export", export)
    assert done.returncode == 0, done.stderr
    assert "left out: submission_4: no results/results.json" in done.stdout
    assert f"--gradescope-export {export}" in done.stdout
    out = tmp_path / "report" / ASSIGNMENT
    tests = {row["test"]: row for row in csv.DictReader((out / "tests.csv").open())}
    assert {t: (r["graded"], r["passed"]) for t, r in tests.items()} == {
        "residual_add adds": ("3", "2"), "Residual block": ("3", "3"), "gradient flows": ("3", "2"),
        "deep stack": ("3", "0"), "on CUDA": ("0", "0")}
    students = {row["student"]: row for row in csv.DictReader((out / "students.csv").open())}
    assert students["Bob Byron (51002)"]["late"] == "yes" and students["Ada Lovelace (51001)"]["late"] == "no"
    assert students["Bob Byron (51002)"]["misconceptions"] == "in-place-add"
    pairs = list(csv.DictReader((out / "pairs.csv").open()))
    assert {(p["a"], p["b"]) for p in pairs} >= {("Ada Lovelace (51001)", "Bob Byron (51002)")}
    assert "in-place-add" in (out / "report.html").read_text()

    done = cli("review", ASSIGNMENT, "--gradescope-export", export)
    assert done.returncode == 0, done.stderr
    assert f"1 flagged submission of {ASSIGNMENT} (results: {export})" in done.stdout
    assert "Cy Clark (51003); Di Dunn (51004)  5.71 / 16  WAITING for a decision" in done.stdout
    assert "held:  part 2, 4 points: gradient flows" in done.stdout
    assert f"review {ASSIGNMENT} --gradescope-export {export}" in done.stdout.splitlines()[-2]
    assert done.stdout.endswith(f"{MANUAL[0].upper()}{MANUAL[1:]}.\n")
    refused = cli("review", ASSIGNMENT, "--gradescope-export", export, "--release", "Cy Clark (51003)")
    assert refused.returncode == 2 and refused.stderr == f"error: {MANUAL}; --gradescope-export lists them\n"

    done = cli("status", ASSIGNMENT, "--gradescope-export", export)
    assert done.returncode == 0, done.stderr
    assert "read: 3 submissions, 4 students" in done.stdout and done.stdout.count("left out: submission_") == 3
    assert "late: 1: Bob Byron (51002) 2 days" in done.stdout
    assert "flagged for review: 1 submission, 4 points held: Cy Clark (51003); Di Dunn (51004)" in done.stdout
    for command in ("report", "review", "status"):
        lines = cli(command, ASSIGNMENT, "--gradescope-export", export).stdout.splitlines()
        assert not [line for line in lines if line.startswith("flagged for review: 0")], (command, lines)


@pytest.mark.parametrize("spoil, says", [
    ("text", "not a zip archive"),
    ("no-metadata", "no submission_metadata.yml"),
    ("bad-yaml", "does not parse as YAML at line 2"),
    ("list-yaml", "is not a mapping of submission folders"),
])
def test_a_bad_export_is_one_line(tmp_path, spoil, says):
    path = tmp_path / "export.zip"
    if spoil == "text":
        path.write_text("not a zip")
    else:
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("assignment_1_export/submission_1/mine.ipynb", "{}")
            yml = {"no-metadata": None, "bad-yaml": "submission_1: {}\n:x: y: z\n", "list-yaml": "- a\n- b\n"}
            if yml[spoil] is not None:
                zf.writestr("assignment_1_export/submission_metadata.yml", yml[spoil])
    for command in ("report", "review", "status"):
        done = cli(command, ASSIGNMENT, "--gradescope-export", path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, (command, done.stderr)
        assert not (tmp_path / "report").exists()


def test_a_results_json_of_another_shape_is_a_problem_not_a_crash():
    good = doc(result())
    for spoil in ({"tests": "none"}, {"tests": [1]}, {"tests": [{**good["tests"][0], "score": "2"}]},
                  {"extra_data": {**good["extra_data"], "seed": None}}):
        with pytest.raises(ExportError, match="not one this course's autograder writes"):
            to_result({**good, **spoil}, ASSIGNMENT)
