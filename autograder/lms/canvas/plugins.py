"""nbgrader plugins for Canvas, named in nbgrader_config.py; the work is done in roster, collect and export.

    nbgrader zip_collect ASSIGNMENT   CanvasExtractorPlugin, CanvasCollectorPlugin
    nbgrader export                   CanvasExportPlugin

zip_collect prints, on stdout, one line per file not taken (why) and a summary line, with file
names made terminal-safe (results/terminal.py: shown); nbgrader_config.py quiets nbgrader's own log.
"""
from __future__ import annotations

import datetime as dt
import functools
import os
from pathlib import Path

from nbgrader.plugins import ExportPlugin, ExtractorPlugin, FileNameCollectorPlugin
from traitlets import Bool

from ... import course as course_mod
from ...course import CourseError
from ...nbgrading.classrun import apply_class
from ...results.terminal import shown
from .collect import extract_archives, plan_collection, save_collection
from .export import export_grades
from .pending import find_pending
from .roster import CanvasError, load_roster

FINAL = "--CanvasExportPlugin.final=True"   # nbgrader export's option that exports with grading pending


@functools.lru_cache(maxsize=1)
def _course():
    """course.toml, read once per nbgrader process (each plugin is an entry point)."""
    return course_mod.load()


class CanvasExtractorPlugin(ExtractorPlugin):
    """Unzip the bulk download entry by entry: a corrupt entry is reported, the rest extracted."""

    problems: tuple[str, ...] = ()  # set by extract(), read by CanvasCollectorPlugin

    def extract(self, archive_path: str, extracted_path: str) -> None:
        self.problems = tuple(extract_archives(Path(archive_path), Path(extracted_path)))
        for problem in self.problems:    # here: when nothing was extracted, the collector never runs
            print(shown(problem, keep=""))


class CanvasCollectorPlugin(FileNameCollectorPlugin):
    """Collect each roster student's newest readable notebook under the course.toml notebook name.

    On its first call it looks at every extracted file at once (the newest upload can only be
    chosen that way), prints why each other file is left out and a summary line, and writes
    canvas/collected-ASSIGNMENT.json (late flags, problems) beside the gradebook. Each file
    collected carries its upload time (collect.upload_time), from which nbgrader counts lateness.
    """

    _chosen: dict[str, dict] | None = None

    def collect(self, submitted_file: str) -> dict | None:
        if self._chosen is None:
            try:
                self._chosen = self._plan()
            except (CanvasError, CourseError) as e:
                self.parent.fail(str(e))
        return self._chosen.get(submitted_file)

    def _plan(self) -> dict[str, dict]:
        app = self.parent
        assignment = app.coursedir.assignment_id
        a = _course().assignment(assignment)
        roster = load_roster(app.coursedir.db_url)
        extracted = app._format_collect_path(app.extracted_directory)  # nbgrader's own layout
        files = [os.path.join(root, name) for root, _, names in os.walk(extracted) for name in names]
        collection = plan_collection(files, {s.id: s.name for s in roster.students})
        for problem in collection.problems:
            print(shown(problem, keep=""))
        extractor = list(getattr(app.extractor_plugin_inst, "problems", ()))
        record = save_collection(app.coursedir.db_url, assignment, collection, extractor + collection.problems)
        late = sorted(cid for cid, f in collection.chosen.items() if f.late)
        which = f" ({', '.join(late)})" if late else ""
        left = len(extractor) + len(collection.problems)
        print(f"{assignment}: {len(collection.chosen)} notebooks collected for {len(collection.chosen)} of the "
              f"roster's {len(roster.students)} students, {left} file{'s' * (left != 1)} not "
              f"taken, {len(late)} late{which}; recorded in {record}")
        return {f.path: {"student_id": cid, "file_id": a.notebook,
                         "timestamp": f.upload_time(a.deadline).astimezone(dt.timezone.utc).isoformat()}
                for cid, f in collection.chosen.items()}


class CanvasExportPlugin(ExportPlugin):
    """Write the CSV Canvas's gradebook import takes (default: canvas/grades.csv beside the gradebook).

    It refuses, writing nothing (the previous CSV stays), while an exported assignment has manual
    grades pending, flagged submissions waiting for a review decision or collected submissions not
    autograded; `final` exports anyway.
    """

    final = Bool(False, help="Export even while grading is pending (manual grades, review decisions, "
                             "submissions not autograded)").tag(config=True)

    def export(self, gradebook) -> None:
        try:
            self._apply(gradebook)
            if not self.final and (pending := self._pending(gradebook)):
                self.parent.fail("Canvas CSV not exported (the previous one, if any, stays): grading is pending\n  "
                                 + "\n  ".join(pending) + f"\nfinish it, or export anyway: nbgrader export {FINAL}")
            dest, notes = export_grades(gradebook, self.to or None, self.assignment, self.student,
                                        missing=_course().lms.missing)
        except (CanvasError, CourseError) as e:
            self.parent.fail(str(e))
        for note in notes:
            self.log.warning(note)
        if self.final:
            self.log.warning("exported as final (%s): pending grading exported as it stands", FINAL)
        self.log.info("Canvas gradebook CSV: %s (Canvas: Grades > Import)", dest)

    def _apply(self, gradebook) -> None:
        """course.toml's points and late policy and exceptions.toml, applied to the gradebook from the results
        store (nbgrading/apply.py) before anything is read from it: no regrading."""
        ids = load_roster(self.parent.coursedir.db_url).ids
        for a in gradebook.assignments:
            if a.name in _course().assignments and (not self.assignment or a.name in self.assignment):
                apply_class(_course(), a.name, self.parent.coursedir, ids)
        gradebook.db.expire_all()     # apply_class wrote through a gradebook of its own

    def _pending(self, gradebook) -> list[str]:
        """What is pending in the assignments exported, a line each kind (pending.Pending.lines)."""
        names = {s.id: s.name for s in load_roster(self.parent.coursedir.db_url).students}
        chosen = [a.name for a in gradebook.assignments if not self.assignment or a.name in self.assignment]
        return [line for name in chosen if name in _course().assignments
                for line in find_pending(gradebook, _course(), name, self.parent.coursedir).lines(names)]
