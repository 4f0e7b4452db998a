"""nbgrader from this environment: its gradebook, the files kept beside it, its commands.

nbgrader runs `alembic` when it creates a gradebook, so everything here puts this
interpreter's bin folder first on PATH.
"""
from __future__ import annotations

import os
import subprocess
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


def tools_path() -> str:
    """PATH with this interpreter's bin folder (nbgrader, alembic) first."""
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    return path if bindir in path.split(os.pathsep) else bindir + os.pathsep + path


def open_gradebook(db_url, course_id: str = ""):
    """nbgrader's Gradebook, opened (or created) with alembic reachable."""
    from nbgrader.api import Gradebook
    os.environ["PATH"] = tools_path()
    return Gradebook(db_url, course_id)


def nbgrader_command(*args: str) -> tuple[list[str], dict]:
    """The command line and environment of `nbgrader ARGS` from this environment."""
    env = {**os.environ, "PATH": tools_path(),
           "PYTHONWARNINGS": "ignore::Warning:nbgrader.api"}   # SQLAlchemy chatter inside nbgrader
    return [sys.executable, "-m", "nbgrader", *args], env


def nbgrader(*args: str, cwd: Path, capture: bool = False) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` in cwd (where nbgrader_config.py is) and return the finished process."""
    command, env = nbgrader_command(*args)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=capture, text=True)
