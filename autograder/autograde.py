"""nbgrader autograde, scored by the hidden suites outside the student's kernel.

nbgrader_config.py replaces nbgrader's Execute preprocessor with HiddenSuiteGrades
(nbgrader_plugins.py): the sanitised notebook goes to the out-of-kernel grader, and
each part's score goes into that part's grade cell as nbgrader partial credit, with
the per-test results printed above it for the feedback. The student's code never
runs in a Jupyter kernel on the grading machine.

    nbgrader autograde ASSIGNMENT                 # plain nbgrader: one student at a time
    python -m autograder autograde ASSIGNMENT     # a class: the same, on every core

Results are kept in grading/ASSIGNMENT/ beside the gradebook, keyed by a hash of the
code that was graded, with one seed per assignment drawn at its first grading. A rerun,
or a class interrupted half way, regrades nothing it has and gives identical grades.
"""
from __future__ import annotations

import atexit
import copy
import functools
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import nbformat

from . import canvas, gradebook
from . import course as course_mod
from .course import SOLUTIONS, CourseError
from .extract import NotebookError, Template
from .gradebook import beside_gradebook, open_gradebook

PART_CELL = re.compile(r"part(\d+)-tests")   # grade_id of a part's autograded cell


# --- where results live -----------------------------------------------------------------

class Results:
    """grading/ASSIGNMENT/ beside the gradebook: the assignment's seed and one JSON per graded code."""

    def __init__(self, db_url, assignment: str):
        self.folder = beside_gradebook(db_url) / "grading" / assignment
        self.folder.mkdir(parents=True, exist_ok=True)
        self.template = Template(course_mod.load().assignment(assignment).notebook_path(SOLUTIONS))

    @property
    def seed(self) -> int:
        """Drawn at the assignment's first grading, then the same for every student and rerun."""
        path = self.folder / "seed"
        if not path.exists():
            from .score import new_seed
            _write_atomic(path, f"{new_seed()}\n")
        return int(path.read_text())

    def key(self, notebook: Path) -> str:
        """A hash of exactly what the grader runs: the submission's solution cells in the template."""
        try:
            extracted = self.template.fill(notebook)
            data = json.dumps([extracted.cells, sorted(extracted.problems.items())]).encode()
        except NotebookError:
            data = b"unreadable:" + notebook.read_bytes()
        return hashlib.sha256(data).hexdigest()

    def get(self, key: str) -> dict | None:
        path = self.folder / f"{key}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def put(self, key: str, result: dict) -> None:
        _write_atomic(self.folder / f"{key}.json", json.dumps(result, indent=1) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    """Write a whole file or nothing: an interrupted run never leaves half a result."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- grading ----------------------------------------------------------------------------

_graders: dict[str, object] = {}


def _grader(assignment: str):
    """One Grader per assignment and process (its fork server is started once), closed at exit."""
    if assignment not in _graders:
        from .score import Grader
        _graders[assignment] = grader = Grader(assignment)
        atexit.register(grader.close)
    return _graders[assignment]


@functools.lru_cache
def _results(db_url: str, assignment: str) -> Results:
    return Results(db_url, assignment)


def result_for(nb, assignment: str, db_url) -> dict:
    """The grader's result for a notebook (an nbformat node), from the results kept or graded now."""
    results = _results(str(db_url), assignment)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "submission.ipynb"
        nbformat.write(nb, str(path))
        key = results.key(path)
        result = results.get(key)
        if result is None:
            result = _grader(assignment).grade(path, results.seed)
            results.put(key, result)
    return result


# --- into the notebook ------------------------------------------------------------------

def part_scores(result: dict) -> dict[int, tuple[float, float]]:
    """{part: (score, max_score)} summed over the result's tests."""
    parts: dict[int, tuple[float, float]] = {}
    for t in result["tests"]:
        score, top = parts.get(t["part"], (0, 0))
        parts[t["part"]] = (score + t["score"], top + t["max_score"])
    return parts


def feedback_text(part: int, result: dict) -> str:
    """What the student reads in the part's grade cell: each hidden test, its score and message."""
    lines = [f"Part {part}, graded by hidden tests run outside your notebook (seed {result['seed']}):"]
    for t in result["tests"]:
        if t["part"] == part:
            mark = "passed" if t["score"] == t["max_score"] else "FAILED"
            lines.append(f"  {mark:<6} {t['score']:>2} / {t['max_score']:<2} {t['name']}")
            if t["score"] < t["max_score"]:
                lines += ["           " + line for line in t["output"].splitlines()]
    return "\n".join(lines) + "\n"


@functools.lru_cache
def _part_cells(assignment: str) -> dict:
    """{grade_id: cell} of the source notebook's part grade cells."""
    source = nbformat.read(course_mod.load().assignment(assignment).notebook_path(SOLUTIONS), as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c for c in source.cells
            if PART_CELL.fullmatch(c.metadata.get("nbgrader", {}).get("grade_id", ""))}


def write_grades(nb, result: dict, assignment: str) -> None:
    """Put each part's score into its grade cell (restored from the source if it was deleted).

    A grade cell's points are fixed in the notebook; it gets the same fraction of them as
    the part's hidden tests gave. A part with no hidden tests in this result (a timing part
    graded without CUDA) takes the fraction of the parts that were graded.
    """
    present = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
    for grade_id, cell in _part_cells(assignment).items():
        if grade_id not in present:
            nb.cells.append(copy.deepcopy(cell))
    parts = part_scores(result)
    graded = sum(top for _, top in parts.values())
    overall = sum(score for score, _ in parts.values()) / graded if graded else 0.0
    for cell in nb.cells:
        match = PART_CELL.fullmatch(cell.metadata.get("nbgrader", {}).get("grade_id", ""))
        if not match or cell.cell_type != "code":
            continue
        part = int(match.group(1))
        score, top = parts.get(part, (0, 0))
        fraction = score / top if top else overall
        points = round(float(cell.metadata["nbgrader"]["points"]) * fraction, 2)
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text=feedback_text(part, result)),
            nbformat.v4.new_output("execute_result", data={"text/plain": repr(points)}, execution_count=1),
        ]
        cell.execution_count = 1


# --- the class at once ------------------------------------------------------------------

def submitted(coursedir, assignment: str) -> dict[str, Path]:
    """{student id: notebook} for every student folder under nbgrader's submitted directory."""
    notebook = course_mod.load().assignment(assignment).notebook
    root = Path(coursedir.format_path(coursedir.submitted_directory, "*", assignment)).parent.parent
    found = {}
    for folder in sorted(root.glob(f"*/{assignment}")):
        path = folder / notebook
        if path.exists():
            found[folder.parent.name] = path
    return found


def register(assignment: str, db_url) -> None:
    """Put the assignment's cells in the gradebook (nbgrader generate_assignment), if not there yet.

    nbgrader autograde needs them; the release is written to a scratch folder, so assignments/
    is left alone.
    """
    from nbgrader.api import MissingEntry
    with open_gradebook(db_url) as gb:
        try:
            gb.find_assignment(assignment)
            return
        except MissingEntry:
            pass
    with tempfile.TemporaryDirectory() as tmp:
        code = nbgrader("generate_assignment", assignment, "--force", "--log-level=WARN",
                        f"--CourseDirectory.release_directory={tmp}", f"--CourseDirectory.db_url={db_url}")
    if code != 0:
        raise CourseError(f"nbgrader generate_assignment {assignment} failed (exit {code})")


def nbgrader(*args: str) -> int:
    """Run an nbgrader command from the repository root; its exit status."""
    return gradebook.nbgrader(*args, cwd=course_mod.ROOT).returncode


def add_parser(commands) -> None:
    p = commands.add_parser("autograde", help="nbgrader autograde of a whole class, on all cores",
                            description=__doc__.split("\n\n")[0])
    p.add_argument("assignment", help="an assignment named in course.toml")
    p.add_argument("--workers", type=int, help="parallel workers (default: course.toml grading.workers)")
    p.set_defaults(run=run)


def autograde_class(assignment: str, coursedir, workers: int | None = None) -> int:
    """nbgrader autograde of every collected submission by parallel workers; prints a table.

    Returns 1 if nbgrader failed for a student, else 0: an unreadable notebook is listed, not
    autograded (score 0 unless the gradebook holds an earlier one), and is not a failure.

    Each worker is forked from this process before it has read any submission, solution or
    gradebook, and starts its fork server at once (Grader(fork=True)), so no sandbox child
    inherits anything but code. It then runs nbgrader's Autograde converter in-process for
    one student at a time, as this process hands them out: a slow submission holds up one
    worker, not a fixed share of the class. Each worker records into its own copy of the
    gradebook, merged back when the workers stop (also after Ctrl-C or a worker's death),
    and grading results are kept per student, so an interrupted run loses nothing: run it again.
    """
    found = submitted(coursedir, assignment)
    if not found:
        raise CourseError(f"no submissions of {assignment} under {coursedir.submitted_directory}/: "
                          "collect them first (nbgrader zip_collect or nbgrader collect)")
    count = max(1, min(workers or course_mod.load().grading.workers or os.cpu_count() or 1, len(found)))
    print(f"autograding {len(found)} submissions of {assignment} out of kernel, {count} at a time",
          file=sys.stderr)
    from .workers import Workers   # torch and nbgrader imported here, once, for every worker
    try:
        with Workers(assignment, count) as pool:
            register(assignment, coursedir.db_url)
            unreadable, failed = pool.autograde(found, coursedir.db_url)
    except KeyboardInterrupt:
        print("\ninterrupted: the students graded so far are in the gradebook; run the command again "
              "for the rest", file=sys.stderr)
        return 130
    from nbgrader.api import MissingEntry
    with open_gradebook(coursedir.db_url) as gb:
        for student in found:
            problem = unreadable.get(student) or failed.get(student)
            try:
                s = gb.find_submission(assignment, student)
            except MissingEntry:
                print(f"  {student:<12}     0  NOT in the gradebook: {problem or 'not recorded'}")
                continue
            line = f"  {student:<12} {s.code_score:>5g} / {s.max_code_score:g}"
            print(line + (f"  (earlier; NOT autograded now: {problem})" if problem else ""))
    if failed:
        print(f"{len(failed)} not autograded ({', '.join(failed)}); run the command again for them",
              file=sys.stderr)
    return 1 if failed else 0


def run(args) -> int:
    from nbgrader.coursedir import CourseDirectory

    course_mod.load().assignment(args.assignment)
    return autograde_class(args.assignment, CourseDirectory(config=canvas.nbgrader_config()), args.workers)
