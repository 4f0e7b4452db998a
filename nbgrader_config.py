"""nbgrader settings: run plain `nbgrader ...` commands from the repository root.

The flow is visible in the folder names: solutions/ (nbgrader's source step)
-> assignments/ (its release step) -> instructor/ (submitted, autograded and
feedback, git-ignored) -> grades.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.submitted_directory = "instructor/submitted"
c.CourseDirectory.autograded_directory = "instructor/autograded"
c.CourseDirectory.feedback_directory = "instructor/feedback"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".pytest_cache", "feedback"]
c.CourseDirectory.db_url = f"sqlite:///{ROOT / 'instructor' / 'gradebook.db'}"

# The release carries no outputs or execution counts.
c.ClearOutput.enabled = True

# Canvas (autograder/canvas.py, autograder/nbgrader_plugins.py). Put Canvas's "Download
# Submissions" zip in instructor/downloaded/ASSIGNMENT/archive/, then
# `nbgrader zip_collect ASSIGNMENT` fills instructor/submitted/CANVAS_ID/ASSIGNMENT/.
# `nbgrader export` writes instructor/canvas/grades.csv for Canvas's gradebook import.
# Both need the roster first: `python -m autograder roster EXPORT.csv`.
c.ZipCollectApp.downloaded_directory = "instructor/downloaded"
c.ZipCollectApp.extractor_plugin = "autograder.nbgrader_plugins.CanvasExtractorPlugin"
c.ZipCollectApp.collector_plugin = "autograder.nbgrader_plugins.CanvasCollectorPlugin"
c.ExportApp.plugin_class = "autograder.nbgrader_plugins.CanvasExportPlugin"
