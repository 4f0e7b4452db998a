"""A notebook as the course reads it: the file (bounded, never a link or a FIFO), its cells and their
nbgrader metadata, and its module cells run as a module (load).

Every student file the grader and the public tests read comes through here, so both read a notebook
the same way.
"""
from __future__ import annotations

import ast
import errno
import functools
import json
import linecache
import os
import stat
import sys
import tomllib
import traceback
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .cellsource import compile_cell, compile_statements, python_lines, python_source
from .cellcode import COMPREHENSIONS, is_stub, parse
from .warmup import interpreter_as_on_gpu

MODULE_TAG = "module"


class NotebookError(Exception):
    """The notebook cannot be read or one of its module cells fails to run."""


def nbgrader_meta(cell) -> dict:
    """The cell's nbgrader metadata; {} where it has none or it is not a table."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    found = meta.get("nbgrader") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def grade_id(cell) -> str | None:
    """The cell's nbgrader grade_id, or None."""
    found = nbgrader_meta(cell).get("grade_id")
    return found if isinstance(found, str) else None


def is_solution(cell) -> bool:
    """True for the cells where the student's answer goes."""
    return nbgrader_meta(cell).get("solution") is True


def is_module_cell(cell: dict) -> bool:
    """True for code cells that define the assignment's importable names."""
    if not isinstance(cell, dict) or cell.get("cell_type") != "code":
        return False
    meta = cell.get("metadata")
    tags = meta.get("tags", []) if isinstance(meta, dict) else []
    return is_solution(cell) or (isinstance(tags, list) and MODULE_TAG in tags)


def cell_label(cell: dict, index: int) -> str:
    """The cell's nbgrader grade_id where it has one, else its position."""
    return grade_id(cell) or f"cell {index}"


def cell_text(cell: dict) -> str:
    """The cell's text as written (nbformat keeps it as one string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def source_of(cell: dict) -> str:
    """Cell source as the Python IPython runs: magics, shell escapes and help requests at the start
    of a logical line are commented out (cellsource.python_source), line numbers kept."""
    return python_source(cell_text(cell))


MAX_NOTEBOOK_BYTES = 256 << 20   # read_notebook's bound where the caller gives none


def open_file(path: str | Path):
    """A submitted file, open for reading in binary, or a NotebookError that says why it is refused:
    not followed where it is a symbolic link (to the course's solution, say), refused where it is
    not a regular file (a FIFO would block, /dev/zero never ends). Read it with read_bounded."""
    path = Path(path)
    try:   # O_NONBLOCK: opening a FIFO does not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NotebookError(f"{path}: no such file") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotebookError(f"{path.name} is a symbolic link, which the grader does not follow; "
                                "upload the notebook file itself") from None
        raise NotebookError(f"{path.name} cannot be read ({e.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket")
        raise NotebookError(f"{path.name} is {kind}, not a regular file; upload the notebook file itself")
    return os.fdopen(fd, "rb")


def read_bounded(f, max_bytes: int, name: str) -> bytes:
    """At most max_bytes of an open file (or a zip member), whatever its size claims (a /proc file
    says 0, a zip entry anything); NotebookError naming `name` when there is more."""
    try:
        data = f.read(max_bytes + 1)
    except OSError as e:
        raise NotebookError(f"{name} cannot be read ({e.strerror})") from None
    if len(data) > max_bytes:
        limit = f"{max_bytes >> 20} MiB" if max_bytes >= 1 << 20 else f"{max_bytes >> 10} KiB"
        raise NotebookError(f"{name} is more than the {limit} a file may have here; clear "
                            "a notebook's outputs (Edit > Clear Outputs) and save it again")
    return data


def read_file(path: str | Path, max_bytes: int) -> bytes:
    """A submitted file's bytes (open_file, read_bounded). Every student file the grader reads
    comes through here, or through open_file where it is an archive."""
    with open_file(path) as f:
        return read_bounded(f, max_bytes, Path(path).name)


def read_notebook(path: str | Path, max_bytes: int = MAX_NOTEBOOK_BYTES) -> dict:
    """The notebook's JSON, or a NotebookError that says what is wrong with the file (read_file's
    refusals included). max_bytes: the grader passes course.toml's limit."""
    path = Path(path)
    try:
        nb = json.loads(read_file(path, max_bytes).decode("utf-8"))
    except ValueError as e:      # not UTF-8, not JSON, or a number of more digits than Python converts
        raise NotebookError(f"{path.name} is not a readable notebook (not JSON: {e}); "
                            "download it again from JupyterLab with File > Save") from None
    except RecursionError:
        raise NotebookError(f"{path.name} is not a notebook: its JSON is nested too deeply to read") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{path.name} is JSON but not a Jupyter notebook (no 'cells' list)")
    for index, cell in enumerate(nb["cells"]):
        problem = _malformed(cell)
        if problem:
            raise NotebookError(f"{path.name} is not a valid notebook: cell {index} {problem}; undo the edit to "
                                "the file (or take the cell from a fresh copy of the assignment) and save it again")
    try:   # a lone surrogate (\\ud800) is valid JSON but not text: it would break every later step
        json.dumps(nb, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise NotebookError(f"{path.name} holds text that is not valid Unicode (a lone surrogate escape); "
                            "remove it and save the notebook again") from None
    return nb


@dataclass(frozen=True)
class Limits:
    """How much of a notebook the grader reads, from course.toml's grading.max_cell_kb (the release writes it
    into each rules.toml, and the public tests' rules test applies it, so a student meets it before uploading).
    The grader reads every code cell in its own process before any child runs, so the reading is bounded:
    a solution cell over max_cell_kb is not run; a file of more than FILE_CELLS such cells (outputs and
    images count) is not read, nor one whose code cells hold more than CODE_CELLS such cells in all, nor one of
    more than MAX_CODE_CELLS code cells (each reader passes over every cell; 70,000 one-line cells, each needed by
    the next, held the grader's own process for a minute: red team 38)."""
    max_cell_kb: int = 512
    FILE_CELLS = 64
    CODE_CELLS = 2
    MAX_CODE_CELLS = 2000

    @property
    def file_bytes(self) -> int:
        return self.FILE_CELLS * self.max_cell_kb << 10

    def read(self, path: str | Path) -> dict:
        """read_notebook within these bounds; NotebookError saying which one the file is over."""
        nb = read_notebook(path, self.file_bytes)
        if (count := sum(c.get("cell_type") == "code" for c in nb["cells"])) > self.MAX_CODE_CELLS:
            raise NotebookError(f"{Path(path).name} has {count} code cells, more than the {self.MAX_CODE_CELLS} a "
                                "notebook may have here; merge or delete the cells you do not need and save it again")
        code = sum(len(source_of(c).encode("utf-8")) for c in nb["cells"] if c.get("cell_type") == "code")
        if code > self.CODE_CELLS * self.max_cell_kb << 10:
            raise NotebookError(f"{Path(path).name} holds {code >> 10} KiB of code, more than the "
                                f"{self.CODE_CELLS * self.max_cell_kb} KiB a notebook's code cells may hold in all "
                                "here; delete the cells you do not need and save it again")
        return nb

    def cell_problem(self, label: str, source: str) -> str | None:
        """Why the grader does not run this solution cell, or None."""
        size = len(source.encode("utf-8"))
        if size <= self.max_cell_kb << 10:
            return None
        return (f"solution cell '{label}' is {size >> 10} KiB, more than the {self.max_cell_kb} KiB a cell may "
                "have here (course.toml's grading.max_cell_kb); the grader does not run it: make it smaller")


def _malformed(cell) -> str | None:
    """What makes a cell unusable by Jupyter and nbgrader (nbformat's schema), or None."""
    if not isinstance(cell, dict):
        return "is not a JSON object"
    meta = cell.get("metadata", {})
    if not isinstance(meta, dict) or not isinstance(meta.get("nbgrader", {}), dict):
        return "has metadata (or metadata.nbgrader) that is not a JSON object"
    source = cell.get("source", "")
    if not (isinstance(source, str) or isinstance(source, list) and all(isinstance(s, str) for s in source)):
        return "has a source that is not text"
    return None


def load(path: str | Path, name: str | None = None, partial: bool = False) -> types.ModuleType:
    """Execute the module cells of the notebook at ``path``, and the student's own cells they need
    (cells_run); return them as a module.

    A cell that fails raises NotebookError, or with ``partial`` (the public tests) is skipped as the
    grader skips it: the other cells still run, and reading a name the module lacks raises an
    AttributeError naming each failed cell and its line, so one broken cell costs only its own tests.
    """
    path = Path(path)
    nb = read_notebook(path)
    module = types.ModuleType(name or f"notebook_{path.stem.replace('-', '_')}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # dataclasses and pickling look modules up here
    problems = []
    for index in cells_run(nb["cells"], contract_names(path.parent)):
        cell = nb["cells"][index]
        label = cell_label(cell, index)
        source, filename = source_of(cell), f"{path.resolve()}[{label}]"
        # Keep the cell's source where inspect finds it, as IPython does for its cells:
        # @triton.jit reads a kernel's source and refuses code it cannot find. The full
        # path keeps two notebooks with the same name (reference, submission) apart.
        linecache.cache[filename] = (len(source), None, python_lines(source, keepends=True), filename)
        own, failed = is_own_cell(cell), None
        try:    # an own cell (a helper) one statement at a time, as the grader runs it: compile_statements
            codes = compile_statements(source, filename) if own else [compile_cell(source, filename)]
        except SyntaxError as e:
            codes, failed = [], e
        for code in codes:
            try:
                exec(code, module.__dict__)
            except Exception as e:
                failed = failed or e
                if not (own and partial):
                    break
        if failed is not None:
            if not partial:
                detail = "".join(traceback.format_exception_only(type(failed), failed)).strip()
                raise NotebookError(f"{path.name}: cell '{label}' fails when run on its own: "
                                    f"{detail}") from failed
            problems.append(_cell_failure(label, failed, filename))
    if problems:
        module.__getattr__ = functools.partial(_not_defined, "; ".join(problems))
    interpreter_as_on_gpu()   # the setup cell may have just imported Triton for its interpreter
    return module


def _cell_failure(label: str, e: BaseException, filename: str) -> str:
    """What the grader says of a cell that fails when loaded, with the cell's line: "cell 'x' raised
    SyntaxError when loaded: '(' was never closed (line 2)"."""
    if isinstance(e, SyntaxError):
        message, line = e.msg, e.lineno
    else:
        message = str(e)
        line = next((f.lineno for f in reversed(traceback.extract_tb(e.__traceback__)) if f.filename == filename), None)
    return f"cell '{label}' raised {type(e).__name__} when loaded: {message}" + (f" (line {line})" if line else "")


def _not_defined(problems: str, name: str):
    if name.startswith("__"):       # copy, pickle and pytest probe a module for dunders
        raise AttributeError(name)
    raise AttributeError(f"the notebook does not define '{name}': {problems}")


def notebook_beside(test_file: str | Path) -> Path:
    """The single .ipynb in the test file's folder."""
    folder = Path(test_file).resolve().parent
    found = sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))
    if len(found) != 1:
        raise NotebookError(f"expected exactly one notebook in {folder}, found "
                            f"{[p.name for p in found] or 'none'}: keep the assignment's notebook alone in its "
                            "folder, and move copies (a -Copy1.ipynb) elsewhere")
    return found[0]



# Cached by source: a grade asks for each cell's names once per part, and a class repeats its cells.
@functools.lru_cache(maxsize=256)
def top_level_names(source: str) -> frozenset[str]:
    """Names a cell defines at module level (functions, classes, assignments); none where it does not parse."""
    names = set()
    for node in _parsed(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return frozenset(names)


def cell_parts(cells: Sequence[tuple[str, str]], parts: Mapping[str, int]) -> dict[str, int]:
    """label -> the part each cell belongs to, for cells as (label, source) in the order Run All runs them
    (parts: contract name -> part): the first part of the contract names it defines (top_level_names). A cell
    that defines none (a helper, a kernel) belongs to the part of the next cell that does, the code it serves
    being below it; after the last such cell, to the last part."""
    out, below = {}, max(parts.values())
    for label, source in reversed(cells):
        defined = top_level_names(source)
        below = min((part for name, part in parts.items() if name in defined), default=below)
        out[label] = below
    return out


# Cached by source: a grade asks for each cell's names once per part, and a class repeats its cells.
@functools.lru_cache(maxsize=256)
def bound_names(source: str) -> frozenset[str]:
    """Every name a cell binds at module level: defs, classes, imports, assignment, loop and `with`
    targets, at any depth of module-level statements (an `if`, a `try`), not inside a def or class."""
    tree = _parsed(source)
    # a `global` in a def binds a module name when the def runs
    names = {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif not isinstance(node, (ast.Lambda, *COMPREHENSIONS)):
            todo.extend(ast.iter_child_nodes(node))
    return frozenset(names)


@functools.lru_cache(maxsize=256)
def used_names(source: str) -> frozenset[str]:
    """Every name a cell reads anywhere, function bodies included (they read module names when called)."""
    names = set()
    for node in ast.walk(_parsed(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return frozenset(names)


@functools.lru_cache(maxsize=4)
def _parsed(source: str) -> ast.Module:
    """The cell's tree; an empty one where it does not parse (its problem is reported when it runs). Read, never
    changed, by the functions above, which ask for one cell's tree in turn: kept for the last few cells."""
    try:
        return parse(source)
    except (SyntaxError, ValueError):     # ValueError: a null byte, on a Python before 3.11.4
        return ast.Module(body=[], type_ignores=[])


def contract_names(folder: str | Path) -> frozenset[str]:
    """The names the assignment's contract.toml in folder asks the notebook to define (none where there is
    no contract: a notebook outside an assignment's folder)."""
    path = Path(folder) / "contract.toml"
    return frozenset(tomllib.loads(path.read_text(encoding="utf-8"))) if path.is_file() else frozenset()


def cells_run(cells: list, wanted: frozenset[str] = frozenset()) -> list[int]:
    """Indexes of the cells the grader and the public tests run, in notebook order: the module cells and
    the student's own cells they need (own_cells_needed; wanted: the contract's names)."""
    own = set(own_cells_needed(cells, wanted))
    return [i for i, cell in enumerate(cells) if is_module_cell(cell) or i in own]


def is_own_cell(cell) -> bool:
    """A code cell the student added (no nbgrader grade_id): a helper, a scratch cell, a plot."""
    return isinstance(cell, dict) and cell.get("cell_type") == "code" and grade_id(cell) is None \
        and not is_module_cell(cell)


def own_cells_needed(cells: list, wanted: frozenset[str] = frozenset()) -> list[int]:
    """Indexes of the student's own cells that the module cells need, as Jupyter's Run All runs them: each
    binds a name that a module cell, or another such cell, reads without defining it (a helper
    check_same_shape in a cell of its own), or one of `wanted` (the names the notebook must define) that no
    module cell binds (a solution typed again into a new cell, or a cell whose nbgrader metadata a round
    trip dropped). The grader and the public tests run these cells too, in their place; no other own cell
    (a plot, a scratch computation, a check) runs there."""
    own = {i: source_of(c) for i, c in enumerate(cells) if is_own_cell(c)}
    module = [source_of(c) for c in cells if is_module_cell(c)]
    reads = set().union(*map(free_names, module)) | (set(wanted) - set().union(*map(bound_names, module)))
    # a contract name its solution cell still leaves as the stub, written in a cell of the student's own: Run All
    # runs the later def (red team 39: the grader and pytest graded the stub, the notebook's check the def)
    reads |= set(wanted) & still_stubs(module)
    return sorted(needed_by(reads, {i: bound_names(src) for i, src in own.items()}, lambda i: free_names(own[i])))


def still_stubs(sources: Sequence[str]) -> set[str]:
    """The names whose last top-level def or class in these cells is still the release's stub (a class: one of its
    methods is)."""
    last: dict[str, bool] = {}
    for source in sources:
        for node in _parsed(source).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                last[node.name] = any(is_stub(f) for f in ast.walk(node) if isinstance(f, ast.FunctionDef))
    return {name for name, stub in last.items() if stub}


def needed_by(names: set, binds: Mapping, reads: Callable) -> set:
    """The keys of `binds` (a cell -> the names it binds) that bind one of `names`, or a name that `reads`
    (a cell -> the names it reads) gives for a cell found so, and so on. Each cell and each name is looked at
    once: a notebook of many cells, each needing the next, takes time in proportion to its size, not to its
    square (a chain of 4,000 tiny cells held a whole batch before its first student)."""
    binders: dict[str, list] = {}
    for key, bound in binds.items():
        for name in bound:
            binders.setdefault(name, []).append(key)
    seen, todo, found = set(names), list(names), set()
    while todo:
        for key in binders.get(todo.pop(), ()):
            if key not in found:
                found.add(key)
                fresh = set(reads(key)) - seen
                seen |= fresh
                todo += fresh
    return found


@functools.lru_cache(maxsize=256)
def free_names(source: str) -> frozenset[str]:
    """The names a cell reads and binds nowhere itself (not at module level, nor as a parameter or a local
    of one of its functions): what it takes from other cells."""
    tree = _parsed(source)
    bound = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    bound |= {a.arg for node in ast.walk(tree) if isinstance(node, ast.arguments)
              for a in node.posonlyargs + node.args + node.kwonlyargs + [node.vararg, node.kwarg] if a}
    return frozenset(used_names(source) - bound - bound_names(source))
