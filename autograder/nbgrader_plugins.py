"""nbgrader plugins, named in nbgrader_config.py; the work is done in canvas.py and autograde.py.

    nbgrader zip_collect ASSIGNMENT   CanvasExtractorPlugin, CanvasCollectorPlugin
    nbgrader autograde ASSIGNMENT     HiddenSuiteGrades
    nbgrader export                   CanvasExportPlugin
"""
from __future__ import annotations

import os
from pathlib import Path

from nbgrader.plugins import ExportPlugin, ExtractorPlugin, FileNameCollectorPlugin
from nbgrader.preprocessors import NbGraderPreprocessor

from . import autograde, canvas
from . import course as course_mod
from .course import CourseError


class CanvasExtractorPlugin(ExtractorPlugin):
    """Unzip the bulk download entry by entry: a corrupt entry is reported, the rest extracted."""

    problems: tuple[str, ...] = ()  # set by extract(), read by CanvasCollectorPlugin

    def extract(self, archive_path: str, extracted_path: str) -> None:
        self.problems = tuple(canvas.extract_archives(Path(archive_path), Path(extracted_path)))
        for problem in self.problems:
            self.log.warning(problem)


class CanvasCollectorPlugin(FileNameCollectorPlugin):
    """Collect each roster student's newest readable notebook under the course.toml notebook name.

    On its first call it looks at every extracted file at once (the newest upload can only be
    chosen that way), logs why each other file is left out, and writes
    canvas/collected-ASSIGNMENT.json (late flags, problems) beside the gradebook.
    """

    _chosen: dict[str, dict] | None = None

    def collect(self, submitted_file: str) -> dict | None:
        if self._chosen is None:
            try:
                self._chosen = self._plan()
            except (canvas.CanvasError, CourseError) as e:
                self.parent.fail(str(e))
        return self._chosen.get(submitted_file)

    def _plan(self) -> dict[str, dict]:
        app = self.parent
        assignment = app.coursedir.assignment_id
        notebook = course_mod.load().assignment(assignment).notebook
        roster = canvas.load_roster(app.coursedir.db_url)
        extracted = app._format_collect_path(app.extracted_directory)  # nbgrader's own layout
        files = [os.path.join(root, name) for root, _, names in os.walk(extracted) for name in names]
        collection = canvas.plan_collection(files, roster.ids)
        for problem in collection.problems:
            self.log.warning(problem)
        extractor = list(getattr(app.extractor_plugin_inst, "problems", ()))
        record = canvas.save_collection(app.coursedir.db_url, assignment, collection,
                                        extractor + collection.problems)
        late = sorted(cid for cid, f in collection.chosen.items() if f.late)
        self.log.info("Canvas: %d students collected, %d files not collected, late: %s; recorded in %s",
                      len(collection.chosen), len(extractor) + len(collection.problems),
                      ", ".join(late) or "none", record)
        return {f.path: {"student_id": cid, "file_id": notebook} for cid, f in collection.chosen.items()}


class CanvasExportPlugin(ExportPlugin):
    """Write the CSV Canvas's gradebook import takes (default: canvas/grades.csv beside the gradebook)."""

    def export(self, gradebook) -> None:
        try:
            dest, notes = canvas.export_grades(gradebook, self.to or None, self.assignment, self.student)
        except canvas.CanvasError as e:
            self.parent.fail(str(e))
        for note in notes:
            self.log.warning(note)
        self.log.info("Canvas gradebook CSV: %s (Canvas: Grades > Import)", dest)


class HiddenSuiteGrades(NbGraderPreprocessor):
    """In place of nbgrader's Execute: score each part with the hidden suites, out of kernel."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        result = autograde.result_for(nb, info["assignment"], info["db_url"])
        autograde.write_grades(nb, result, info["assignment"])
        self.log.info("%s: %s / %s automatic points from the hidden suite",
                      info["student"], result["score"], result["max_score"])
        return nb, resources
