"""The instructor's loop with nbgrader and Canvas, end to end on the sample class (make demo)."""
import csv
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory

from autograder.course import ROOT
from autograder.demo import loop as demo
from autograder.results.render import FEEDBACK_WIDTH
from autograder.lms.canvas.plugins import FINAL
from autograder.lms.canvas.roster import read_roster
from autograder.core.extract import Template
from autograder.nbgrading.classrun import autograde_class
from autograder.nbgrading.plugins import SplitCellsJoined
from autograder.nbgrading.review import ClassQueue
from autograder.nbgrading.run import nbgrader, nbgrader_config
from helpers import ASSIGNMENTS, COURSE, cli, solution_lines

pytestmark = pytest.mark.slow

EXPECTED = json.loads((demo.SAMPLES / "expected.json").read_text())["samples"]
SUITE_FILES = sorted((ROOT / "autograder" / "suites").glob("*.py"))


@pytest.fixture
def area(demo_class):
    """(instructor folder, Canvas CSV) of the demo's loop (conftest.py), shared: tests here only read it."""
    return demo_class


def db_url(area):
    return f"sqlite:///{area / 'gradebook.db'}"


def gradebook_scores(area) -> dict[str, dict[str, float]]:
    """{student: {autograded cell: auto score}} from the nbgrader gradebook (written answers, graded by
    hand, are left out: an answered one has no auto score)."""
    with Gradebook(db_url(area)) as gb:
        return {s.student.id: {g.name: g.auto_score for g in s.notebooks[0].grades if g.name.endswith("-tests")}
                for s in gb.assignment_submissions(demo.ASSIGNMENT)}


def test_canvas_csv_has_the_expected_score_for_every_roster_student(area):
    _, grades = area
    rows = list(csv.reader(grades.open(encoding="utf-8")))
    header, body = rows[0], {r[1]: r for r in rows[1:] if r[0] != "Points Possible"}
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    roster = [s.id for s in read_roster(demo.ROSTER).students]
    assert sorted(body) == sorted(roster)                                     # every student has a row
    late = COURSE.assignment(demo.ASSIGNMENT).late_per_day * 2      # the demo's LATE upload: 26 hours late
    for canvas_id, sample in zip(roster, demo.CLASS):
        if sample == "invalid-json":   # never collected: exported blank, as a non-submitter, and named
            assert body[canvas_id][5] == ""
            continue
        want = max(0, EXPECTED[f"{sample}.ipynb"]["score"] - late * (canvas_id in demo.LATE))
        assert float(body[canvas_id][5]) == want, (canvas_id, sample)
    no_submission = roster[len(demo.CLASS):]
    assert no_submission and all(body[cid][5] == "" for cid in no_submission)   # blank: Canvas keeps "excused"


def test_status_of_the_demo_class_says_what_blocks_its_export(area, monkeypatch):
    instructor, _ = area
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(instructor))
    proc = cli("status", demo.ASSIGNMENT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == f"roster: {len(read_roster(demo.ROSTER).students)} students"
    assert lines[3].startswith("late: 1: ") and lines[3].endswith("1 day 2 h late")   # 26 hours late
    assert lines[5].startswith("manual grades pending: ") and not lines[5].startswith("manual grades pending: 0")
    assert lines[6].startswith("held tests waiting for review: ") and "python -m autograder review" in lines[6]
    # course.toml's 100 automatic and 35 written points, as the sample roster's Canvas column says
    assert lines[7] == "points possible: 135, as Canvas's column 'Residual Connections (73101)' says"
    assert lines[9].startswith("export: blocked")


def test_cheating_in_the_kernel_gains_nothing(area):
    """checker-cheat patches every comparison helper on top of wrong-answers: no more than its score (the
    libraries it patches are outside the assignment's list, so the tests on the child's reports are held)."""
    assert EXPECTED["checker-cheat.ipynb"]["score"] <= EXPECTED["wrong-answers.ipynb"]["score"]
    cheat = demo.CLASS.index("checker-cheat")
    _, grades = area
    body = [r for r in csv.reader(grades.open(encoding="utf-8"))][2:]
    assert float(body[cheat][5]) == EXPECTED["checker-cheat.ipynb"]["score"]


def test_part_scores_in_grade_cells_match_the_grader(area, monkeypatch):
    """Each part's grade cell holds that part's score in the grader's result, read where the class run kept it
    (its results store: graded once, at the seed derived from the code, as `grade` would derive it)."""
    instructor, _ = area
    scores = gradebook_scores(instructor)
    sample = demo.CLASS.index("pre-post-swapped")
    student = sorted(scores)[sample]
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(instructor))
    result = ClassQueue(COURSE, demo.ASSIGNMENT, CourseDirectory(config=nbgrader_config())).results()[student]
    assert result.seed_from == "code" and result.decision == ""
    for part, (score, _) in result.parts().items():
        assert scores[student][f"part{part}-tests"] == score


def visible_text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_feedback_shows_results_but_no_hidden_tests_or_solutions(area):
    instructor, _ = area
    pages = sorted((instructor / "feedback").glob(f"*/{demo.ASSIGNMENT}/*.html"))
    assert len(pages) == len(demo.CLASS) - 1        # the unreadable upload is never collected
    hidden = {l.strip() for f in SUITE_FILES for l in f.read_text().splitlines() if len(l.strip()) > 30}
    answers = solution_lines(ASSIGNMENTS[0])
    for page in pages:
        text = visible_text(page.read_text(encoding="utf-8"))
        nb = nbformat.read(instructor / "submitted" / page.parent.parent.name / demo.ASSIGNMENT /
                           f"{demo.ASSIGNMENT}.ipynb", as_version=4)
        submitted = "\n".join(cell.source for cell in nb.cells)
        assert "graded by hidden tests run outside your notebook" in text
        assert [l for l in hidden if l in text and l not in submitted] == [], page
        assert [l for l in answers if l in text and l not in submitted] == [], page


def test_feedback_says_a_written_answer_is_not_graded_yet_until_a_grader_scores_it(area, tmp_path, monkeypatch):
    """On a copy of the demo class: before hand grading, feedback names a written answer "not graded yet" with
    its points and the total counts them apart ("N of M so far"); once a grade is given through nbgrader's
    Gradebook, the page shows that score and the plain total."""
    instructor, _ = area
    copy = tmp_path / "instructor"
    shutil.copytree(instructor, copy)
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(copy))
    with Gradebook(db_url(copy)) as gb:
        ungraded = {s.student.id: {g.name: g.max_score for g in s.notebooks[0].grades
                                   if g.auto_score is None and g.manual_score is None}
                    for s in gb.assignment_submissions(demo.ASSIGNMENT)}
    student, cells = next((s, cells) for s, cells in sorted(ungraded.items()) if cells)
    points = sum(cells.values())

    def page() -> str:
        nbgrader("generate_feedback", demo.ASSIGNMENT, "--student", student, "--force", "--log-level=WARN")
        found, = (copy / "feedback" / student / demo.ASSIGNMENT).glob("*.html")
        return " ".join(visible_text(found.read_text(encoding="utf-8")).split())

    pending = page()
    assert all(f"Written response: not graded yet ({p:g} points)" in pending for p in cells.values())
    assert f"{points:g} points of written answers not graded yet" in pending and " so far;" in pending
    assert pending.count("Written response: not graded yet") == len(cells)   # an unanswered one is 0, as scored
    with Gradebook(db_url(copy)) as gb:
        for cell, p in cells.items():
            gb.find_grade(cell, demo.ASSIGNMENT, demo.ASSIGNMENT, student).manual_score = p - 1
        gb.db.commit()
    graded = page()
    assert all(f"Written response (Score: {p - 1:.1f} / {p:.1f})" in graded for p in cells.values())
    assert "not graded yet" not in graded and "(Score: " in graded


def test_review_releases_and_confirms_held_points_through_gradebook_feedback_and_canvas(area, tmp_path, monkeypatch):
    """On a copy of the graded demo class: `review` lists the forged samples with their quoted lines and held
    points; --release gives the points back in the gradebook, the feedback and the Canvas CSV, --confirm keeps
    0 and says so, and both are lines of the results store, kept for that code."""
    instructor, _ = area
    copy = tmp_path / "instructor"
    shutil.copytree(instructor, copy)
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(copy))

    def review(*args: str) -> str:
        proc = cli("review", demo.ASSIGNMENT, *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    ids = dict(zip(demo.CLASS, (s.id for s in read_roster(demo.ROSTER).students)))
    released, confirmed = ids["forged-mutation-report"], ids["forged-gradients-report"]
    queue = ClassQueue(COURSE, demo.ASSIGNMENT, CourseDirectory(config=nbgrader_config()))
    before = queue.results()
    held = {s: before[s].held_points for s in (released, confirmed)}
    assert all(held.values()), held
    waiting = sum(r.waiting for r in before.values())
    listed = review()
    names = {s.id: s.name for s in read_roster(demo.ROSTER).students}
    for student in (released, confirmed):
        assert f"{student} ({names[student]})  {before[student].score:g} / 100  WAITING" in listed
        assert all(f"found: {finding}" in listed for finding in before[student].review)
        assert f"0 of their {held[student]:g} points now" in listed
    assert listed.splitlines()[-1].startswith(f"review: {waiting} submissions of {demo.ASSIGNMENT} wait")

    report = demo.class_report(COURSE, copy)                       # the class report, refreshed by a decision
    done = review("--release", released, "--confirm", confirmed, "--note", "looked at the notebook")
    assert f"{released}: released after an instructor's review: the {held[released]:g} points" in done
    # the demo's written answers are not graded yet: the CSV is not exported again until told it is final
    assert "Canvas CSV not exported again" in done and "manual grades pending" in done
    assert done.splitlines()[-1].startswith(f"review: {waiting - 2} submission")
    nbgrader("export", FINAL, "--log-level=WARN")
    want = {released: EXPECTED["forged-mutation-report.ipynb"]["score"] + held[released],
            confirmed: EXPECTED["forged-gradients-report.ipynb"]["score"]}
    assert {s: sum(gradebook_scores(copy)[s].values()) for s in want} == want
    rows = {r[1]: r for r in csv.reader((copy / "canvas" / "grades.csv").open(encoding="utf-8"))}
    assert {s: float(rows[s][5]) for s in want} == want
    for student, line in ((released, "released after an instructor's review"),
                          (confirmed, "confirmed after an instructor's review")):
        page, = (copy / "feedback" / student / demo.ASSIGNMENT).glob("*.html")
        assert line in visible_text(page.read_text(encoding="utf-8"))
    assert f"class report written again: {report}" in done
    scores = {r["student"]: r for r in csv.DictReader((report.parent / "students.csv").open(encoding="utf-8"))}
    reported = {s: next(row for name, row in scores.items() if name.endswith(f"({s})")) for s in want}
    assert {s: float(row["score"]) for s, row in reported.items()} == want
    assert "confirmed" in reported[confirmed]["listed_apart"] and "held" not in reported[released]["listed_apart"]
    kept = [json.loads(line) for line in (copy / "grading" / f"{demo.ASSIGNMENT}.jsonl").read_text().splitlines()]
    assert {(d["student"], d["decision"]) for d in kept if "decision" in d} == {(released, "release"),
                                                                                (confirmed, "confirm")}
    again = review()
    assert f"({names[released]})  {want[released]:g} / 100  released" in again
    assert f"({names[confirmed]})  {want[confirmed]:g} / 100  confirmed" in again


def test_autograde_twice_gives_identical_grades(area, monkeypatch, tmp_path):
    before = gradebook_scores(area[0])
    instructor = tmp_path / "instructor"       # regraded: a copy, as other workers read the shared class
    shutil.copytree(area[0], instructor)
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(instructor))
    assert nbgrader("autograde", demo.ASSIGNMENT, "--force", "--log-level=ERROR").returncode == 0
    assert gradebook_scores(instructor) == before


def test_a_warning_on_stderr_costs_nothing(area, tmp_path):
    instructor = tmp_path / "instructor"       # a student added: to a copy of the shared class
    shutil.copytree(area[0], instructor)
    nb = nbformat.read(demo.SAMPLES / "full-marks.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "residual_add")
    cell.source = "import warnings\nwarnings.warn('a UserWarning on stderr')\n" + cell.source
    folder = instructor / "submitted" / "noisy" / demo.ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / f"{demo.ASSIGNMENT}.ipynb"))
    env = {**os.environ, "COURSE_INSTRUCTOR_DIR": str(instructor)}
    proc = subprocess.run([sys.executable, "-m", "autograder", "autograde", demo.ASSIGNMENT], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert sum(gradebook_scores(instructor)["noisy"].values()) == 100


# Two quick students (their training tests stop at a stub), then two that train: the command is stopped
# after two results, in the middle of a class that is still worth interrupting.
INTERRUPTED = ["untouched-release", "partly-right", "full-marks", "wrong-answers"]
# students whose training tests stop at a stub
QUICK = ["untouched-release", "partly-right", "reads-solutions"]


def small_class(instructor, samples: list[str]) -> dict[str, float]:
    """submitted/sI/ for each sample; {student: the sample's expected total}."""
    for i, name in enumerate(samples):
        folder = instructor / "submitted" / f"s{i}" / demo.ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{demo.ASSIGNMENT}.ipynb").write_bytes((demo.SAMPLES / f"{name}.ipynb").read_bytes())
    return {f"s{i}": EXPECTED[f"{name}.ipynb"]["score"] for i, name in enumerate(samples)}


def kept_results(store: Path) -> int:
    """How many results a results store holds (0 before it exists)."""
    return store.read_text().count('"key"') if store.exists() else 0


def in_session(sid: int) -> list[int]:
    """The processes of session `sid` that are still running (zombies are gone already)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _, _, session = stat.read_text().rsplit(")", 1)[1].split()[:4]
        except (OSError, IndexError):
            continue
        if int(session) == sid and state != "Z":
            pids.append(int(stat.parent.name))
    return pids


def _ctrl_c_as_at_a_terminal() -> None:
    """SIGINT's default action in the command: a suite started in the background of a shell without
    job control inherits SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("how", ["crash", "ctrl-c", "command killed"])
def test_interrupted_class_loses_nothing(tmp_path, how):
    """Stop `python -m autograder autograde` mid-class; the rerun finishes with the same grades.

    crash: SIGKILL to the command and its workers. ctrl-c: SIGINT to all of them; the command
    says so and exits 130. command killed: SIGKILL to the command alone; its workers stop too."""
    instructor = tmp_path / "instructor"
    # a killed command cannot remove its sandboxes' scratch folders: they go to this test's own folder
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "COURSE_INSTRUCTOR_DIR": str(instructor), "TMPDIR": str(tmp_path / "tmp")}
    expected = small_class(instructor, INTERRUPTED)
    command = [sys.executable, "-m", "autograder", "autograde", demo.ASSIGNMENT, "--workers", "1"]
    with (tmp_path / "stderr.txt").open("w+") as stderr:
        first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                                 start_new_session=True, preexec_fn=_ctrl_c_as_at_a_terminal)
        kept = instructor / "grading" / f"{demo.ASSIGNMENT}.jsonl"
        deadline = time.monotonic() + 120
        while kept_results(kept) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        if how == "crash":
            os.killpg(first.pid, signal.SIGKILL)
        elif how == "ctrl-c":
            os.killpg(first.pid, signal.SIGINT)
        else:
            os.kill(first.pid, signal.SIGKILL)
        code = first.wait(timeout=120)
        deadline = time.monotonic() + 60
        while in_session(first.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert in_session(first.pid) == []          # no worker or fork server left behind
        stderr.seek(0)
        said = stderr.read()
    if how == "ctrl-c":   # it stops after the student being graded, whose grades are merged in
        assert code == 130 and "interrupted" in said, said
        graded = {s: sum(v.values()) for s, v in gradebook_scores(instructor).items()}
        assert graded and graded.items() <= expected.items()
        assert list(instructor.glob("gradebook.*.worker-*")) == []
    assert 2 <= kept_results(kept) < len(INTERRUPTED)
    second = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert {s: sum(v.values()) for s, v in gradebook_scores(instructor).items()} == expected
    assert list(instructor.glob("gradebook.*.worker-*")) == []   # the workers' copies are merged and gone


def test_a_worker_that_dies_costs_only_its_student(tmp_path, monkeypatch, capsys):
    """A worker killed mid-student: the other grades the rest, the command names the student and
    exits 1; the rerun grades it. A class that trains nowhere (QUICK): what a worker's death costs does not
    depend on what its students' code does, and no fork server takes torch's first optimizer step."""
    from nbgrader.coursedir import CourseDirectory

    from autograder.nbgrading import workers

    instructor = tmp_path / "instructor"
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(instructor))
    expected = small_class(instructor, QUICK)
    real = workers._autograde_one

    def dies_on_s1(app, student, path):
        if student == "s1":
            os._exit(3)
        return real(app, student, path)

    monkeypatch.setattr(workers, "_autograde_one", dies_on_s1)
    coursedir = CourseDirectory(config=nbgrader_config())
    assert autograde_class(COURSE, demo.ASSIGNMENT, coursedir, workers=2) == 1
    out, err = capsys.readouterr()
    assert re.search(r"s1 +0  NOT in the gradebook: its worker stopped \(exit code 3\)", out), out
    assert "1 not autograded (s1); run the command again" in err
    totals = {s: sum(v.values()) for s, v in gradebook_scores(instructor).items()}
    assert totals == {s: score for s, score in expected.items() if s != "s1"}
    monkeypatch.setattr(workers, "_autograde_one", real)
    assert autograde_class(COURSE, demo.ASSIGNMENT, coursedir, workers=2) == 0
    assert {s: sum(v.values()) for s, v in gradebook_scores(instructor).items()} == expected


def test_a_solution_cell_split_in_two_is_autograded_as_the_grader_reads_it(tmp_path, monkeypatch):
    """JupyterLab's Split Cell gives both halves the cell's grade id. nbgrader refused such a notebook (its
    DeduplicateIds, then its metadata check: "an old version of the nbgrader metadata format") and the student
    was left out of the gradebook; the halves are joined first, and the notebook gets the grader's score."""
    instructor = tmp_path / "instructor"
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(instructor))
    expected = small_class(instructor, ["split-cells"])
    path = instructor / "submitted" / "s0" / demo.ASSIGNMENT / f"{demo.ASSIGNMENT}.ipynb"
    nb = nbformat.read(path, as_version=4)          # a written answer split in two as well
    at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "part2-written")
    nb.cells.insert(at + 1, nbformat.from_dict({**nb.cells[at], "id": "written-half", "source": "A second thought."}))
    nbformat.write(nb, path)
    assert autograde_class(COURSE, demo.ASSIGNMENT, CourseDirectory(config=nbgrader_config()), workers=1) == 0
    assert {s: sum(v.values()) for s, v in gradebook_scores(instructor).items()} == expected
    # the joined cell is the code the grader reads, key for key, a first half without its last newline too
    nb = nbformat.read(demo.SAMPLES / "split-cells.ipynb", as_version=4)
    half = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "plain_mlp")
    half.source = half.source.rstrip("\n")
    nbformat.write(nb, tmp_path / "split.ipynb")
    SplitCellsJoined().preprocess(nb, {})
    nbformat.write(nb, tmp_path / "joined.ipynb")
    template = Template(COURSE.assignment(demo.ASSIGNMENT).notebook_path(ROOT / "solutions"))
    assert template.key(tmp_path / "split.ipynb") == template.key(tmp_path / "joined.ipynb")


def test_workers_told_to_stop_before_they_begin_exit_cleanly():
    """As when registering the assignment fails: ready workers get no gradebook and stop, exit code 0."""
    import multiprocessing.connection

    from autograder.nbgrading.workers import Workers

    with Workers(demo.ASSIGNMENT, 2, COURSE) as pool:
        ready = set()
        while len(ready) < 2:
            ready.update(multiprocessing.connection.wait(pool._pipes, timeout=120))
    assert [p.exitcode for p in pool._processes] == [0, 0]


def test_a_late_upload_loses_the_course_late_penalty(area):
    """The demo's LATE upload is 26 hours late: two started days of course.toml's late_per_day."""
    instructor, _ = area
    per_day = COURSE.assignment(demo.ASSIGNMENT).late_per_day
    assert per_day > 0
    with Gradebook(db_url(instructor)) as gb:
        assert gb.find_assignment(demo.ASSIGNMENT).duedate == COURSE.assignment(demo.ASSIGNMENT).deadline_utc
        penalties = {s.student.id: s.late_submission_penalty or 0 for s in gb.assignment_submissions(demo.ASSIGNMENT)}
    assert {s for s, p in penalties.items() if p} == demo.LATE
    assert all(penalties[s] == min(2 * per_day, EXPECTED[f"{demo.CLASS[int(s) - 51001]}.ipynb"]["score"])
               for s in demo.LATE)


def test_feedback_lines_fit_the_page(area):
    """Each hidden test's message is wrapped: no output line of a feedback page scrolls sideways."""
    instructor, _ = area
    for page in sorted((instructor / "feedback").glob(f"*/{demo.ASSIGNMENT}/*.html")):
        outputs = re.findall(r'<div class="output_subarea [^"]*output_text[^"]*">\s*<pre>(.*?)</pre>',
                             page.read_text(encoding="utf-8"), re.S)
        assert outputs, page
        wide = [line for out in outputs for line in visible_text(out).splitlines() if len(line) > FEEDBACK_WIDTH]
        assert wide == [], page
