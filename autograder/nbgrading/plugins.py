"""nbgrader plugins for grading, named in nbgrader_config.py (the Canvas ones are in lms/canvas/plugins.py).

    nbgrader generate_assignment      CoursePoints (course.toml's points in the grade cells)
    nbgrader autograde ASSIGNMENT     SplitCellsJoined (first), HiddenSuiteGrades (in place of Execute),
                                      CourseLatePenalty

Each plugin is an entry point into this package from an nbgrader process: it reads
course.toml once per process and hands it down.
"""
from __future__ import annotations

import atexit
import functools
import shutil

import nbtest
from nbgrader.plugins import LateSubmissionPlugin
from nbgrader.preprocessors import NbGraderPreprocessor

from .. import course as course_mod
from ..core.seeds import SecretError
from ..results.store import StoreError
from .apply import class_exceptions
from .autograde import NotebookGrading, write_grades


@functools.lru_cache(maxsize=1)
def course():
    """course.toml, read once per nbgrader process."""
    return course_mod.load()


_gradings: dict[tuple[str, str], NotebookGrading] = {}


def grading_for(assignment: str, db_url, grader=None) -> NotebookGrading:
    """This process's NotebookGrading of an assignment and gradebook (made once, closed at exit).
    A worker hands in the Grader it started before reading anything (workers.py)."""
    key = (assignment, str(db_url))
    if key not in _gradings:
        _gradings[key] = grading = NotebookGrading(course(), assignment, db_url, grader)
        atexit.register(grading.close)
    return _gradings[key]


class CoursePoints(NbGraderPreprocessor):
    """generate_assignment: each grade cell gets course.toml's points (Assignment.cell_points), whatever the
    source notebook's metadata says, before nbgrader records the cells and their checksums."""

    def preprocess(self, nb, resources):
        points = course().assignment(resources["nbgrader"]["assignment"]).cell_points
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and meta.get("grade_id") in points:
                meta["points"] = points[meta["grade_id"]]
        return nb, resources


class SplitCellsJoined(NbGraderPreprocessor):
    """autograde, before nbgrader's own checks: the cells that share a solution's grade id (JupyterLab's Split
    Cell copies the cell's nbgrader metadata to both halves) joined into the first, in order, as the grader and
    the written answers read them (core/extract.py, answers.py). nbgrader refused such a notebook: its
    DeduplicateIds leaves the earlier half metadata that its CheckCellMetadata then calls an old format, and
    the student got no grade."""

    def preprocess(self, nb, resources):
        first, cells = {}, []
        for cell in nb.cells:
            grade_id = nbtest.grade_id(cell) if cell.cell_type in ("code", "markdown") else None
            if (grade_id, cell.cell_type) in first:
                head = first[grade_id, cell.cell_type]
                gap = "\n\n" if cell.cell_type == "markdown" else "" if head.source.endswith("\n") else "\n"
                head.source += gap + cell.source
                continue
            if grade_id is not None:
                first[grade_id, cell.cell_type] = cell
            cells.append(cell)
        nb.cells = cells
        return nb, resources


class HiddenSuiteGrades(NbGraderPreprocessor):
    """In place of nbgrader's Execute: score each part with the hidden suites, out of kernel."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        try:
            grading = grading_for(info["assignment"], info["db_url"])
        except (StoreError, SecretError) as e:
            # nbgrader would print a traceback for every student and keep this one's new folder, which a
            # run without --force then skips: remove it and stop the run with the one line that says what to do
            converter = self.parent.parent                # the exporter's: nbgrader's Autograde
            shutil.rmtree(converter._format_dest(info["assignment"], info["student"]), ignore_errors=True)
            self.log.error("%s", e)
            raise SystemExit(1) from None
        result = grading.result_for(nb).under(grading.course_assignment)   # kept results under course.toml now
        write_grades(nb, result, grading.part_cells)
        self.log.info("%s: %s / %s automatic points from the hidden suite",
                      info["student"], result.score, result.max_score)
        return nb, resources


class CourseLatePenalty(LateSubmissionPlugin):
    """course.toml's late policy: late_per_day points off for each started day after the student's due date
    (the deadline, moved by an extension in exceptions.toml, which it records in the gradebook), with the
    student's grace period, waiver and cap (autograder/exceptions.py)."""

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        assignment = self.parent.assignment_id
        a = course().assignment(assignment)
        allowance = class_exceptions(course(), self.parent.db_url).get(assignment, student_id)
        submission = self.parent.gradebook.find_submission(assignment, student_id)
        submission.extension = allowance.extension(a) or None
        days, penalty = allowance.penalty(a, submission.total_seconds_late)
        if not penalty:
            return None
        self.log.warning("%s: %d day(s) late, %g points off (course.toml late_per_day = %g%s)",
                         student_id, days, penalty, a.late_per_day,
                         f"; exceptions.toml: {allowance.describe()}" if allowance.describe() else "")
        return penalty
