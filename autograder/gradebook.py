"""Where the instructor's files live: beside the SQLite gradebook nbgrader uses."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from sqlalchemy.engine import make_url


class GradebookError(ValueError):
    """The gradebook is not a SQLite file, so there is no folder to keep things beside it."""


def beside_gradebook(db_url) -> Path:
    """The folder of the SQLite gradebook that db_url (str or SQLAlchemy URL) names."""
    url = make_url(db_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        raise GradebookError(f"gradebook {url}: the course keeps its files beside a SQLite gradebook file")
    return Path(url.database).resolve().parent


def open_gradebook(db_url, course_id: str = ""):
    """nbgrader's Gradebook. Creating one runs `alembic`, so this interpreter's tools go on PATH."""
    from nbgrader.api import Gradebook
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    return Gradebook(db_url, course_id)
