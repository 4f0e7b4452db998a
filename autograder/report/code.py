"""What a student wrote: the notebook's solution cells, as the release names them.

    ids = solution_ids(template)            # grade ids of the solution cells, from solutions/
    solution_code(notebook, template) -> str   # the student's cells, joined; None for an unreadable file
    release_code(release) -> str            # every code cell as handed out: the boilerplate

The source notebook decides which cells are the student's, so clearing a cell's nbgrader
metadata hides nothing, and the locked cells everyone has are never compared.
"""
from __future__ import annotations

from pathlib import Path

import nbtest

from ..core.extract import NotebookError, Template


def solution_ids(template: Template) -> list[str]:
    return [label for label, _, solution in template.cells if solution]


def solution_code(notebook: Path, template: Template) -> str | None:
    """The notebook's solution cells (every piece of a split one, as the grader takes), in its own order; None for a
    notebook the grader does not read (its bounds: a file or code over course.toml's, which the report would
    otherwise read and compare at any size)."""
    try:
        cells = template.limits.read(notebook)["cells"]
    except (NotebookError, OSError):
        return None
    wanted, parts = set(solution_ids(template)), []
    for cell in cells:
        label = nbtest.grade_id(cell)
        if cell.get("cell_type") == "code" and label in wanted:
            try:
                parts.append(nbtest.source_of(cell))
            except (TypeError, AttributeError):
                continue            # a malformed cell: the grader says so; nothing to compare
    return "\n\n".join(parts)


def release_code(release: Path) -> str:
    """The release's code cells, joined: the stubs, the setup and the checks everyone has."""
    cells = nbtest.read_notebook(release)["cells"]
    return "\n\n".join(nbtest.source_of(cell) for cell in cells if cell.get("cell_type") == "code")
