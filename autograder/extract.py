"""A submission's code as the grader runs it.

The module cells of the *source* notebook (solutions/) decide what runs and in
what order. Solution cells (nbgrader grade_id) are taken from the submission;
every other module cell (the locked "setup" imports) is taken from the source,
so a student who deletes or edits a locked cell changes nothing.
"""
from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .course import ROOT


def _load_nbtest():
    """assignments/nbtest.py, the student-side loader, whose notebook readers we reuse."""
    spec = importlib.util.spec_from_file_location("nbtest", ROOT / "assignments" / "nbtest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nbtest = _load_nbtest()
NotebookError = nbtest.NotebookError


@dataclass(frozen=True)
class Extracted:
    cells: list[tuple[str, str]]   # (label, Python source), in the source notebook's order
    problems: dict[str, str]       # label -> why that solution cell is not the student's


class Template:
    """The module cells of an assignment's source notebook."""

    def __init__(self, source: Path):
        nb = nbtest.read_notebook(source)
        self.cells: list[tuple[str, str, bool]] = []   # (label, source, is the student's)
        for index, cell in enumerate(nb["cells"]):
            if nbtest.is_module_cell(cell):
                solution = bool(cell["metadata"].get("nbgrader", {}).get("solution"))
                self.cells.append((nbtest.cell_label(cell, index), nbtest.source_of(cell), solution))
        self.owner = {name: label for label, src, solution in self.cells if solution
                      for name in top_level_names(src)}

    def fill(self, submission: Path) -> Extracted:
        """The source's module cells with the submission's solution cells in place.

        Raises NotebookError when the file is not a readable notebook.
        """
        found = _code_cells_by_grade_id(nbtest.read_notebook(submission))
        cells, problems = [], {}
        for label, src, solution in self.cells:
            if not solution:
                cells.append((label, src))
            elif label not in found:
                problems[label] = f"solution cell '{label}' is missing from the notebook"
            else:
                try:
                    cells.append((label, nbtest.source_of(found[label])))
                except (TypeError, AttributeError):
                    problems[label] = f"solution cell '{label}' is malformed (its source is not text)"
        return Extracted(cells, problems)


def _code_cells_by_grade_id(nb: dict) -> dict[str, dict]:
    """grade_id -> the first code cell carrying it."""
    out = {}
    for cell in nb["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata")
        grade_id = meta.get("nbgrader", {}).get("grade_id") if isinstance(meta, dict) else None
        if isinstance(grade_id, str):
            out.setdefault(grade_id, cell)
    return out


def top_level_names(source: str) -> set[str]:
    """Names a cell defines at module level (functions, classes, assignments)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names
