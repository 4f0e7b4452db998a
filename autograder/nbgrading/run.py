"""nbgrader from this environment: the one way this package runs an nbgrader command.

    nbgrader("zip_collect", "residual-connections", "--force")   # raises NbgraderError on failure
    proc = nbgrader("export", check=False)                        # the finished process, to look at

nbgrader runs `alembic` when it creates a gradebook, so the command gets this interpreter's
bin folder first on PATH, and it runs from the repository root, where nbgrader_config.py is.
"""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import nbtest

from ..course import ROOT


class NbgraderError(RuntimeError):
    """An nbgrader command failed; the message holds the command and what it printed."""


def tools_path() -> str:
    """PATH with this interpreter's bin folder (nbgrader, alembic) first."""
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    return path if bindir in path.split(os.pathsep) else bindir + os.pathsep + path


def nbgrader_command(*args: str) -> tuple[list[str], dict]:
    """The command line and environment of `nbgrader ARGS` from this environment."""
    env = {**os.environ, "PATH": tools_path(),
           "PYTHONWARNINGS": "ignore::Warning:nbgrader.api"}   # SQLAlchemy chatter inside nbgrader
    return [sys.executable, "-m", "nbgrader", *args], env


def nbgrader(*args: str, capture: bool = False, check: bool = True) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` from the repository root. With check, a failure raises NbgraderError
    (with its output, when captured); without, the caller reads returncode."""
    command, env = nbgrader_command(*args)
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=capture, text=True)
    if check and proc.returncode != 0:
        said = f":\n{proc.stdout or ''}{proc.stderr or ''}" if capture else " (its messages are above)"
        raise NbgraderError(f"nbgrader {' '.join(args)} failed with exit code {proc.returncode}{said}")
    return proc


def unreadable(path: str | Path) -> str | None:
    """Why nbgrader cannot read this notebook, as a sentence naming the file, or None. The grader's own
    reader speaks first (nbtest.read_notebook), so a file gets the same reason here as from `grade`."""
    try:
        nbtest.read_notebook(path)
        with warnings.catch_warnings():   # nbformat's validation warnings (a cell without an id) are not reasons
            warnings.simplefilter("ignore")
            nbformat.read(str(path), as_version=4)
    except nbtest.NotebookError as e:
        return str(e)
    except Exception as e:  # any failure to read it is a reason not to grade it (RecursionError included)
        return f"{Path(path).name} is not a notebook nbgrader can read ({type(e).__name__}: " \
               f"{str(e).splitlines()[0] if str(e) else 'unreadable'})"
    return None


def nbgrader_config():
    """The settings nbgrader_config.py makes (gradebook URL, folders), as nbgrader reads them."""
    from traitlets.config.loader import PyFileConfigLoader
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
