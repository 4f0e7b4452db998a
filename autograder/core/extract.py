"""A submission's code as the grader runs it.

    template = Template(solutions / "residual-connections" / "residual-connections.ipynb", max_cell_kb=512)
    extracted = template.fill(Path("alice.ipynb"))   # raises NotebookError for an unreadable file
    extracted.cells, extracted.problems, extracted.key

The module cells of the *source* notebook (solutions/) decide what runs and in
what order. Solution cells (nbgrader grade_id) are taken from the submission;
every other module cell (the locked "setup" imports) is taken from the source,
so a student who deletes or edits a locked cell changes nothing. The notebook
readers and cell helpers are the student-side package's (nbtest), so the grader and
the public tests read notebooks the same way, within the same bounds (nbtest's Limits: a solution cell
over max_cell_kb is not run, its problem says why; a file far larger is not read).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import nbtest
from nbtest.notebook import (bound_names, contract_names, needed_by, own_cells_needed, top_level_names,
                             used_names)

NotebookError = nbtest.NotebookError


@dataclass(frozen=True)
class Extracted:
    cells: list[tuple[str, str]]   # (label, Python source), in the source notebook's order
    problems: dict[str, str]       # label -> why that solution cell is not the student's

    @property
    def key(self) -> str:
        """A hash of exactly what the grader runs: equal code, equal key."""
        return hashlib.sha256(json.dumps([self.cells, sorted(self.problems.items())]).encode()).hexdigest()


class Template:
    """The module cells of an assignment's source notebook."""

    def __init__(self, source: Path, max_cell_kb: int = 512):
        self.limits = nbtest.Limits(max_cell_kb)
        nb = nbtest.read_notebook(source)
        self.cells: list[tuple[str, str, bool]] = []   # (label, source, is the student's)
        for index, cell in enumerate(nb["cells"]):
            if nbtest.is_module_cell(cell):
                self.cells.append((nbtest.cell_label(cell, index), nbtest.source_of(cell), nbtest.is_solution(cell)))
        self.owner = {name: label for label, src, solution in self.cells if solution
                      for name in top_level_names(src)}
        self.locked = {label: bound_names(src) for label, src, solution in self.cells if not solution}
        self.contract = contract_names(Path(source).parent)

    def fill(self, submission: Path) -> Extracted:
        """The source's module cells with the submission's solution cells in place.

        Raises NotebookError when the file is not a readable notebook.
        """
        nb = self.limits.read(submission)
        found = _code_cells_by_grade_id(nb)
        for label, stripped in self._stripped(nb).items():
            found.setdefault(label, stripped)
        cells, problems = [], {}
        for label, src, solution in self.cells:
            if not solution:
                cells.append((label, src))
            elif label not in found:
                problems[label] = f"solution cell '{label}' is missing from the notebook"
            else:     # a cell split in two (JupyterLab copies its metadata to both halves): all of it
                self._take(label, "".join(nbtest.source_of(cell) for cell in found[label]), cells, problems)
        # each own cell goes right after the cell above it (the start where that one is not there), kept as
        # links: a notebook of many own cells costs time in proportion to their number, not to its square
        after_of = {i - 1: i for i in range(len(cells))}          # -1: the start
        at_label: dict[str, int] = {}
        for i, (label, _) in enumerate(cells):
            at_label.setdefault(label, i)
        for label, after, src in self._own(nb):
            own: list[tuple[str, str]] = []
            self._take(label, src, own, problems)
            for item in own:
                at, i = at_label.get(after, -1) if after is not None else -1, len(cells)
                cells.append(item)
                after_of[i], after_of[at] = after_of.get(at), i
                at_label.setdefault(label, i)
        placed, i = [], after_of.get(-1)
        while i is not None:
            placed.append(cells[i])
            i = after_of.get(i)
        return Extracted(placed, problems)

    def _stripped(self, nb: dict) -> dict[str, list[dict]]:
        """label -> the module cells with no grade_id (their nbgrader metadata a tool dropped, the module tag kept)
        that define a name of that solution cell's: the public tests run such a cell as the module cell it is, and
        so does the grader, in that solution cell's place where none carries its label (red team 38: every
        metadata stripped, each public test passed and the grade was 0)."""
        out: dict[str, list[dict]] = {}
        for cell in nb["cells"]:
            label = self._stands_for(cell)
            if label is not None and label not in self.locked:
                out.setdefault(label, []).append(cell)
        return out

    def _stands_for(self, cell: dict) -> str | None:
        """The source's module cell that a module cell with no grade_id stands for: the solution cell whose names it
        defines, else the locked cell it binds most names of (the setup cell's imports), else None."""
        if not nbtest.is_module_cell(cell) or nbtest.grade_id(cell) is not None:
            return None
        src = nbtest.source_of(cell)
        names = top_level_names(src)
        label = next((label for name, label in self.owner.items() if name in names), None)
        if label is None:
            bound = bound_names(src)
            shared = {label: len(there & bound) for label, there in self.locked.items() if there & bound}
            label = max(shared, key=shared.get, default=None)
        return label

    def _take(self, label: str, src: str, cells: list, problems: dict) -> None:
        """The cell into `cells`, or into `problems` where it is over max_cell_kb."""
        if problem := self.limits.cell_problem(label, src):
            problems[label] = problem
        else:
            cells.append((label, src))

    def _own(self, nb: dict) -> list[tuple[str, str | None, str]]:
        """The student's own cells the module cells and the contract need (nbtest.own_cells_needed), as (label,
        the label of the module cell above it or None, source): Run All runs them in their place, so does the
        grader."""
        order = {label: i for i, (label, _, _) in enumerate(self.cells)}
        out, above, reached = [], None, -1      # reached: the furthest module cell of the source's seen so far
        needed = set(own_cells_needed(nb["cells"], self.contract))
        for index, cell in enumerate(nb["cells"]):
            label = nbtest.cell_label(cell, index)
            if index in needed:
                out.append((label, above, nbtest.source_of(cell)))
                above = label
                continue
            # its nbgrader metadata dropped, the module tag kept, a module cell stands for the source's (red team 39:
            # without it, the solution cells, own cells then, went ahead of the imports and most of the notebook failed)
            stands_for = label if label in order and cell.get("cell_type") == "code" else self._stands_for(cell)
            # a copy of an earlier module cell (the setup cell pasted lower down) moves nothing back: the own cells
            # below it run after everything above them, as in Run All (red team 39: a stub then ran after the def)
            if stands_for is not None and order[stands_for] > reached:
                above, reached = stands_for, order[stands_for]
        return out

    def marked(self, extracted: Extracted) -> list[tuple[str, str, bool]]:
        """extracted's cells as (label, source, is the student's), for the static policy: every cell but
        the source notebook's locked ones (solution cells and the student's own)."""
        locked = {label for label, _, student in self.cells if not student}
        return [(label, src, label not in locked) for label, src in extracted.cells]

    def needed(self, extracted: Extracted, names: set[str], contract: set[str]) -> list[tuple[str, str]]:
        """The cells a child that uses `names` (of the assignment's `contract` names) loads, in order:
        every locked cell; the solution cells that define those names, and those that define no contract
        name at all in the source notebook (a kernel, a helper: they serve every part); and every cell of
        the student's (a solution cell or one of their own) that defines a name one of those uses, and so
        on. A construct in any other cell then never runs in that child."""
        locked = {label for label, _, student in self.cells if not student}
        sources = dict(extracted.cells)
        defines = {label: bound_names(src) for label, src in extracted.cells}
        roots = {self.owner[n] for n in names if n in self.owner}      # a root that no longer parses
        roots |= {label for label, src, student in self.cells if student and not top_level_names(src) & contract}
        roots &= set(sources)
        uses = set().union(*(used_names(sources[label]) for label in roots))
        wanted = roots | needed_by(names | uses, defines, lambda label: used_names(sources[label]))
        return [(label, src) for label, src in extracted.cells if label in locked or label in wanted]

    def key(self, submission: Path) -> str:
        """Extracted.key of a submission; for an unreadable file, unreadable_key."""
        try:
            return self.fill(submission).key
        except NotebookError:
            return unreadable_key(Path(submission))


def unreadable_key(path: Path) -> str:
    """The key of a file that is no readable notebook: a hash of its bytes, or of its name when it
    cannot be read at all (a missing file, or one nbtest.read_file refuses)."""
    try:
        return hashlib.sha256(b"unreadable:" + nbtest.read_file(path, nbtest.MAX_NOTEBOOK_BYTES)).hexdigest()
    except nbtest.NotebookError:    # missing, or refused (a link, a FIFO, a device, too large)
        # os.fsencode: a name of bytes that are no UTF-8 (b"\xe9ve.ipynb") is a str with surrogates here
        return hashlib.sha256(b"missing:" + os.fsencode(path)).hexdigest()


def _code_cells_by_grade_id(nb: dict) -> dict[str, list[dict]]:
    """grade_id -> the code cells carrying it, in notebook order: one, unless the student split the cell
    (JupyterLab's Split Cell, or a copy, gives each piece the cell's nbgrader metadata), whose pieces Run All
    and the public tests (nbtest.load runs every solution cell) both run in turn."""
    out: dict[str, list[dict]] = {}
    for cell in nb["cells"]:
        grade_id = nbtest.grade_id(cell)
        if grade_id is not None and cell.get("cell_type") == "code":
            out.setdefault(grade_id, []).append(cell)
    return out
