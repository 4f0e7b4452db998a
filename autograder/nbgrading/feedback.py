"""Feedback honest about what is pending, named in nbgrader_config.py: nbgrader's GetGrades, plus a mark on
each grade cell nobody has scored yet (a written answer before hand grading), which the course's feedback
template (templates/course_feedback/) shows as "not graded yet (N points)" and counts apart from the total.

    cell.metadata.nbgrader["pending"]      True when neither the autograder nor a grader gave it a score
    resources["nbgrader"]["pending_points"] the points of those cells: the total says "N of M so far"
"""
from __future__ import annotations

import functools
from pathlib import Path

import nbgrader
from nbconvert.exporters import HTMLExporter
from nbgrader.preprocessors import GetGrades

from ..course import CourseError
from . import plugins
from .autograde import write_grades
from .apply import class_exceptions
from .classrun import apply_class

TEMPLATE = "course_feedback"        # a folder of templates/, after nbgrader's "feedback" (its conf.json)
TEMPLATE_FILE = "pending.html.j2"   # not index.html.j2, so that it extends nbgrader's own
# where nbconvert finds it, and nbgrader's own feedback template it extends
TEMPLATE_DIRS = [str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
                 str(Path(__file__).with_name("templates"))]


@functools.lru_cache(maxsize=None)
def _applied(assignment: str, coursedir) -> None:
    """course.toml and exceptions.toml applied to the gradebook (apply_class), once per process and assignment."""
    apply_class(plugins.course(), assignment, coursedir)


def _or_exit(log, step, *args):
    """step(*args); a CourseError (a broken course.toml or exceptions.toml) is one line and exit 1, not a
    traceback per student."""
    try:
        return step(*args)
    except CourseError as e:
        log.error("%s", e)
        raise SystemExit(1) from None


class GradesWithPending(GetGrades):
    """GetGrades, marking the grade cells not scored yet and summing their points; first, the gradebook and
    each part's test listing brought to course.toml's points (nbgrading/apply.py), from the kept result."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        _or_exit(self.log, _applied, info["assignment"], self.parent.parent.coursedir)
        grading = plugins.grading_for(info["assignment"], info["db_url"])
        if (result := grading.kept(nb)) is not None:
            write_grades(nb, result.under(grading.course_assignment), grading.part_cells)
        resources["nbgrader"]["pending_points"] = 0.0
        return super().preprocess(nb, resources)

    def _get_score(self, cell, resources) -> None:
        super()._get_score(cell, resources)
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        pending = grade.auto_score is None and grade.manual_score is None
        cell.metadata.nbgrader["pending"] = pending
        if pending:
            resources["nbgrader"]["pending_points"] += grade.max_score


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter as generate_feedback's alone (nbgrader_config.py: GenerateFeedback.exporter_class),
    so that the course's feedback template (FeedbackExporter's settings there) leaves formgrader's views, which
    render with HTMLExporter's, as nbgrader made them. Made before the first student's feedback folder is
    touched, it checks course.toml and exceptions.toml first: nbgrader's --force removes each old folder before
    the preprocessors run, and a broken file must change nothing."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if (coursedir := getattr(self.parent, "coursedir", None)) is not None:
            _or_exit(self.log, lambda: class_exceptions(plugins.course(), coursedir.db_url))
