"""nbgrader settings: run plain `nbgrader ...` commands from the repository root.

The flow is visible in the folder names: solutions/ (nbgrader's source step)
-> assignments/ (its release step) -> instructor/ (downloaded, submitted, autograded
and feedback, plus gradebook.db; git-ignored) -> grades for Canvas.
COURSE_INSTRUCTOR_DIR moves that working area (`make demo` uses its own).
"""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent
INSTRUCTOR = ROOT / os.environ.get("COURSE_INSTRUCTOR_DIR", "instructor")

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.submitted_directory = str(INSTRUCTOR / "submitted")
c.CourseDirectory.autograded_directory = str(INSTRUCTOR / "autograded")
c.CourseDirectory.feedback_directory = str(INSTRUCTOR / "feedback")
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".pytest_cache", "feedback"]
c.CourseDirectory.db_url = f"sqlite:///{INSTRUCTOR / 'gradebook.db'}"

# The release carries no outputs or execution counts, and each grade cell carries course.toml's points
# (autograder/nbgrading/plugins.py CoursePoints, before nbgrader records them and computes checksums).
c.ClearOutput.enabled = True
from nbgrader.converters import GenerateAssignment  # noqa: E402
c.GenerateAssignment.preprocessors = ["autograder.nbgrading.plugins.CoursePoints",
                                      *GenerateAssignment.class_traits()["preprocessors"].default()]

# Autograde without running the student's notebook in a kernel: HiddenSuiteGrades (in place
# of nbgrader's Execute) scores each part with the hidden suites, out of kernel, and writes
# the scores into the grade cells as partial credit (autograder/nbgrading/autograde.py).
from nbgrader.converters import Autograde  # noqa: E402
c.Autograde.sanitize_preprocessors = ["autograder.nbgrading.plugins.SplitCellsJoined",
                                      *Autograde.class_traits()["sanitize_preprocessors"].default()]
c.Autograde.autograde_preprocessors = [
    "autograder.nbgrading.plugins.HiddenSuiteGrades",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Feedback pages show what students wrote: markdown cells are rendered and cleaned by bleach
# (autograder/nbgrading/sanitize.py: nbgrader's feedback template renders them itself, so
# HTMLExporter.sanitize_html alone misses them), and nbconvert's sanitizer cleans HTML outputs
# and drops JavaScript ones: no student's script reaches a browser.
c.GenerateFeedback.preprocessors = ["autograder.nbgrading.feedback.GradesWithPending",
                                    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
                                    "autograder.nbgrading.sanitize.SanitizeMarkdown",
                                    "nbconvert.preprocessors.sanitize.SanitizeHTML"]
c.SanitizeHTML.enabled = True      # nbgrader registers preprocessors without enabling them
c.SanitizeMarkdown.enabled = True
from autograder.nbgrading.sanitize import ATTRIBUTES, TAGS  # noqa: E402 (the same rules for the cleaned markdown)
c.SanitizeHTML.tags = TAGS
c.SanitizeHTML.attributes = ATTRIBUTES
c.HTMLExporter.sanitize_html = True
# A written answer not graded yet says so, and the total counts its points apart rather than as lost
# (autograder/nbgrading/feedback.py: GradesWithPending above marks them; its template extends nbgrader's).
# Only generate_feedback's exporter: formgrader renders submissions with HTMLExporter's settings.
from autograder.nbgrading import feedback  # noqa: E402
c.GenerateFeedback.exporter_class = feedback.FeedbackExporter
c.FeedbackExporter.template_name = feedback.TEMPLATE
c.FeedbackExporter.template_file = feedback.TEMPLATE_FILE
c.FeedbackExporter.extra_template_basedirs = feedback.TEMPLATE_DIRS

# Late uploads lose course.toml's late_per_day points per started day after the deadline, which
# `python -m autograder autograde` records as the assignment's due date (Canvas upload times
# come from the bulk download, autograder/lms/canvas/collect.py).
c.AssignLatePenalties.plugin_class = "autograder.nbgrading.plugins.CourseLatePenalty"

# Canvas (autograder/lms/canvas/). Put Canvas's "Download
# Submissions" zip in instructor/downloaded/ASSIGNMENT/archive/, then
# `nbgrader zip_collect ASSIGNMENT` fills instructor/submitted/CANVAS_ID/ASSIGNMENT/.
# `nbgrader export` writes instructor/canvas/grades.csv for Canvas's gradebook import.
# Both need the roster first: `python -m autograder roster EXPORT.csv`.
# (zip_collect joins this to the root as text, so it must be relative)
c.ZipCollectApp.downloaded_directory = os.path.relpath(INSTRUCTOR / "downloaded", ROOT)
c.ZipCollectApp.extractor_plugin = "autograder.lms.canvas.plugins.CanvasExtractorPlugin"
c.ZipCollectApp.collector_plugin = "autograder.lms.canvas.plugins.CanvasCollectorPlugin"
# nbgrader's own lines (a "Directory not found. Creating" per student, each file parsed and copied)
# bury the few that matter: the plugins print one line per file not taken and a summary themselves.
c.ZipCollectApp.log_level = "ERROR"
c.ExportApp.plugin_class = "autograder.lms.canvas.plugins.CanvasExportPlugin"
