"""nbgrader autograde, scored by the hidden suites outside the student's kernel.

nbgrader_config.py replaces nbgrader's Execute preprocessor with HiddenSuiteGrades
(plugins.py): the sanitised notebook goes to the out-of-kernel grader, and each
part's score goes into that part's grade cell as nbgrader partial credit, with the
per-test results printed above it for the feedback. The student's code never runs
in a Jupyter kernel on the grading machine.

    grading = NotebookGrading(course, "residual-connections", db_url)   # once per process
    result = grading.result_for(nb)        # kept, or graded now
    write_grades(nb, result, grading.part_cells)

Results are kept in a results store, grading/ASSIGNMENT.jsonl beside the gradebook,
keyed by a hash of the code that was graded, each with the seed derived from that code and
the course secret (core/seeds.py): a rerun, or a class interrupted half way, regrades
nothing it has and gives identical grades.
"""
from __future__ import annotations

import copy
import re
import tempfile
from pathlib import Path

import nbformat
import nbtest
from nbgrader.utils import compute_checksum

from ..course import SOLUTIONS, Course, CourseError
from ..core import seeds
from ..core.extract import Template
from ..grading.cuda import parts_left_out
from ..results.render import feedback_text
from ..results.result import Result
from ..results.store import Store
from .gradebook import beside_gradebook, set_assignment

PART_CELL = re.compile(r"part(\d+)-tests")   # grade_id of a part's autograded cell


def store_path(db_url, assignment: str) -> Path:
    """Where the class's results of an assignment are kept: beside the gradebook."""
    return beside_gradebook(db_url) / "grading" / f"{assignment}.jsonl"


def class_store(db_url, assignment: str) -> Store:
    """The class's results store, opened with this machine's course secret: StoreError when another graded it."""
    return Store(store_path(db_url, assignment), assignment, secret_id=seeds.secret_id(seeds.read_secret()))


def part_cells(source: Path, points: dict[str, float] | None = None) -> dict[str, dict]:
    """{grade_id: cell} of a source notebook's part grade cells, with `points` ({grade_id: points},
    Assignment.cell_points) in place of the notebook's own where given."""
    nb = nbformat.read(str(source), as_version=4)
    cells = {nbtest.grade_id(c): c for c in nb.cells if PART_CELL.fullmatch(nbtest.grade_id(c) or "")}
    for grade_id, cell in cells.items():
        if points and grade_id in points:
            cell.metadata["nbgrader"]["points"] = points[grade_id]
    return cells


class NotebookGrading:
    """What grading one assignment's notebooks in an nbgrader process needs: the grader
    (started on first use, or handed in by a worker), the results store and the source's part
    cells; on creation it
    brings the gradebook in line with course.toml (sync_gradebook)."""

    def __init__(self, course: Course, assignment: str, db_url, grader=None):
        self.course, self.assignment = course, assignment
        source = course.assignment(assignment).notebook_path(SOLUTIONS)
        self.template = Template(source)
        self.part_cells = part_cells(source, course.assignment(assignment).cell_points)  # for a deleted cell
        self.course_assignment = course.assignment(assignment)   # course.toml's now, whatever the kept results say
        self.store = class_store(db_url, assignment)
        self._grader = grader
        sync_gradebook(course, assignment, db_url, self.part_cells)

    @property
    def grader(self):
        if self._grader is None:
            from ..grading.grader import Grader   # torch and the fork server only when grading
            self._grader = Grader(self.assignment, self.course)
        return self._grader

    def result_for(self, nb) -> Result:
        """The grader's result for a notebook (an nbformat node), from the store or graded now, with an
        instructor's decision on its held tests applied."""
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "submission.ipynb"
            nbformat.write(nb, str(path))
            key = self.template.key(path)
            if self.store.graded(key) is None:
                self.store.put(key, self.grader.grade(path, self.store.seed))
        return self.store.get(key)   # with the instructor's decision on held tests, if any (cli/review.py)

    def kept(self, nb) -> Result | None:
        """The kept result for a notebook's code (decision applied), or None: never grades."""
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "submission.ipynb"
            nbformat.write(nb, str(path))
            return self.store.get(self.template.key(path))

    def close(self) -> None:
        if self._grader is not None:
            self._grader.close()


def write_grades(nb, result: Result, cells: dict[str, dict]) -> None:
    """Put each part's score into its grade cell, appending a copy of the source's part cell
    (`cells`, from part_cells) where the student deleted it. (nbgrader's own
    OverwriteCells.add_missing_cells would put it back in place, but raises KeyError when the
    cell before it was deleted too, as in the locked-cells-deleted sample.)

    A grade cell gets the part's score in its own points: the fraction the part's hidden
    tests gave, times the cell's points. A part whose tests carry no points here (a timing
    part left out by without_cuda = "skip") gets a cell of 0 points, as the gradebook's
    grade cell has (sync_gradebook), so every path gives the same total.
    """
    present = {nbtest.grade_id(c) for c in nb.cells}
    nb.cells += [copy.deepcopy(cell) for grade_id, cell in cells.items() if grade_id not in present]
    parts = result.parts()
    for cell in nb.cells:
        match = PART_CELL.fullmatch(nbtest.grade_id(cell) or "")
        if not match or cell.cell_type != "code":
            continue
        part = int(match.group(1))
        score, top = parts.get(part, (0, 0))
        if top == 0:
            cell.metadata["nbgrader"]["points"] = 0
        points = round(float(cell.metadata["nbgrader"]["points"]) * score / top, 2) if top else 0
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text=feedback_text(result, part)),
            nbformat.v4.new_output("execute_result", data={"text/plain": repr(points)}, execution_count=1),
        ]
        cell.execution_count = 1


def sync_gradebook(course: Course, assignment: str, db_url, cells: dict[str, dict]) -> None:
    """Give the gradebook what course.toml and the kept results say: the assignment's due date (its
    deadline, from which nbgrader counts lateness) and its grade cells' points (Assignment.cell_points;
    0 for a part left out by without_cuda = "skip", see grading.cuda.parts_left_out), with the checksums
    of the part cells (`cells`: part_cells) at those points."""
    a = course.assignment(assignment)
    kept = class_store(db_url, assignment).results() if store_path(db_url, assignment).is_file() else []
    left_out = parts_left_out(a, kept)
    source = a.notebook_path(SOLUTIONS)
    graded = {nbtest.grade_id(c) for c in nbformat.read(str(source), as_version=4).cells
              if c.metadata.get("nbgrader", {}).get("grade")}
    if missing := [g for g, v in a.cell_points.items() if v and g not in graded]:
        raise CourseError(f"course.toml gives {assignment} points for {', '.join(missing)}, which {source} has no "
                          "grade cell for: `python -m autograder check` says which line to fix")
    points = {}
    for grade_id, value in a.cell_points.items():
        if grade_id not in graded:
            continue
        tests = PART_CELL.fullmatch(grade_id)
        value = 0 if tests and int(tests.group(1)) in left_out else value
        cell = copy.deepcopy(cells[grade_id]) if grade_id in cells else None
        if cell is not None:
            cell.metadata["nbgrader"]["points"] = value
        # nbgrader checks a locked cell against a checksum that includes its points
        points[grade_id] = (float(value), compute_checksum(cell) if cell is not None else None)
    set_assignment(db_url, assignment, Path(a.notebook).stem, a.deadline_utc, points)
