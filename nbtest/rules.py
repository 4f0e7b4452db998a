"""The rules test of the public tests: the grader's static policy (policy.py) and, in a pytest run, its
runtime monitor (monitor.py) applied to a part's cells, each broken rule as one line."""
from __future__ import annotations

import ast
import os
import shutil
import tempfile
import tomllib
import types
from pathlib import Path

from . import cellcode, policy
from .notebook import Limits, cell_label, cell_parts, cells_run, is_module_cell, is_solution, notebook_beside, \
    read_notebook, source_of
from .warmup import first_calls, names_optim

PACKAGE = str(Path(__file__).resolve().parent) + os.sep   # this package's files: what runs the notebook's code


class Watch:
    """The grader's runtime monitor (monitor.py, the grader's own) in a `pytest` run: what the notebook's
    cells do while the tests call them, seen as events (a string compiled, a frame read, a file written
    outside the temporary folder, ...), which the rules tests report as the grader would. Python cannot
    remove an audit hook, so it is added only here, in pytest's own process, never in a notebook's kernel:
    check() there applies the static rules alone."""
    current: "Watch | None" = None

    @classmethod
    def start(cls, tests_file: Path, notebook: Path) -> "Watch":
        """The process's watch, added before the notebook's cells run, with torch's first-call work done
        (no cell is on the stack while it runs, so none of its events is charged to one)."""
        if cls.current is None:
            cls.current = cls(tests_file)
        first_calls(optimizer=names_optim(source_of(c) for c in read_notebook(notebook)["cells"] if is_module_cell(c)))
        return cls.current

    def __init__(self, tests_file: Path):
        # every assignment's public tests (pytest may run them all) and this package run the cells: their doing
        # is never the student's
        release = Path(tests_file).resolve().parent.parent
        tests = {str(tests_file), str(Path(tests_file).resolve()), *map(str, release.glob("*/test_public.py"))}
        from . import monitor     # it imports torch: only where a pytest run watches a notebook
        self.monitor, self.notebooks, self.modules, self.events = monitor, {}, set(), []
        self.read, self.write = os.pipe()
        for fd in (self.read, self.write):
            os.set_blocking(fd, False)
        self.modes = (0, 0)
        # the temporary folder the code may write to, as the grader's scratch folder (its TMPDIR) is; and the
        # folder it runs in, as the grader's child runs in its scratch folder: a file the code writes by a relative
        # name (numpy.savetxt("losses.csv")) lands there, no event in the grade, none here, and none left beside
        # the notebook (red team 38: the rules test failed it and said the grader would hold it)
        self.scratch = tempfile.tempdir = tempfile.mkdtemp(prefix="nbtest-")
        self.home = os.getcwd()
        os.chdir(self.scratch)
        self.monitor.install(self.write, self.scratch, own=tuple(sorted(tests | {PACKAGE})), guarded=(__package__,),
                        cell_of=self.cell_of, modules=self.modules)

    @classmethod
    def stop(cls) -> None:
        """At the end of the pytest run: the temporary folder removed, with what the code wrote there (torch's
        compiler cache, a student's files), so that each run leaves nothing behind."""
        if cls.current is not None:
            os.chdir(cls.current.home)
            shutil.rmtree(cls.current.scratch, ignore_errors=True)

    def add(self, notebook: Path, module: str) -> None:
        self.notebooks[f"{notebook.resolve()}["] = notebook.resolve()
        self.modules.add(module)

    def cell_of(self, filename: str) -> str | None:
        """load() compiles a cell under "NOTEBOOK[LABEL]": that name, for a watched notebook's cell."""
        return filename if filename.endswith("]") and any(map(filename.startswith, self.notebooks)) else None

    def after(self, test: str) -> None:
        """A torch mode the test's call left active is an event no audit hook raises (monitor.check_state)."""
        self.modes = self.monitor.check_state(self.write, f"the test {test}", "", self.modes)

    def found(self, notebook: Path, labels: set[str], sources: dict[str, str]) -> list[str]:
        """The events so far in these cells of the notebook (and those no cell is named for), as rule lines."""
        while True:
            try:
                data = os.read(self.read, 1 << 16)
            except BlockingIOError:
                break
            self.events += self.monitor.parse(data)
        prefix = f"{notebook.resolve()}["
        lines = []
        for e in self.events:
            if not e.cell:
                label = ""            # a torch mode left on after a test: no cell to name, so every part's
            elif e.cell.startswith(prefix):
                label = e.cell[len(prefix):-1]
            else:
                continue              # another notebook's
            if not label or label in labels:
                lines.append(shown(policy.Violation(label or "the submission", e.line, "monitor", policy.WITHHOLD,
                                                    f"{e.event}: {e.detail}", policy.quote(sources.get(label, ""),
                                                                                          e.line))))
        return list(dict.fromkeys(lines))


HOLDS = "(holds) "


def shown(violation: policy.Violation, holding: frozenset[str] = frozenset()) -> str:
    """A broken rule as the rules test lists it: a withhold rule's line starts with HOLDS, since the grader holds
    the tests that rest on the code's process for it, and so does a rule of `holding` (rules.toml's: the flag rules
    some hidden test is held by); any other flag rule's only flags the notebook."""
    holds = violation.severity == policy.WITHHOLD or violation.rule in holding
    return (HOLDS if holds else "") + str(violation)


def rule_breaks(part: int, notebook: str | Path) -> list[str]:
    """The lines of the notebook's solution cells in this part that break the assignment's rules, as the
    grader reads them: policy.py (the grader's own policy) against rules.toml beside the notebook. A cell's
    part is that of the first name it defines in contract.toml, a helper's that of the cell below it that
    does (cell_parts, as the grader's). Raises
    NotImplementedError when nothing is broken and a function of the part is still the stub."""
    path = Path(notebook)
    rules_file = path.parent / "rules.toml"
    if rules_file.is_file():      # the release; in the course's repository, its course.toml
        table = tomllib.loads(rules_file.read_text(encoding="utf-8"))
    else:
        course = tomllib.loads((path.parent.parent.parent / "course.toml").read_text(encoding="utf-8"))
        table = {**course["assignments"][path.parent.name].get("policy", {}),
                 "max_cell_kb": course["grading"]["max_cell_kb"]}
    limits = Limits(table.pop("max_cell_kb", Limits.max_cell_kb))
    holding = frozenset(table.pop("holding", ()))
    rules = types.SimpleNamespace(**{"allowed_imports": (), "forbidden_modules": (), "no_transformer_classes": False,
                                      **table})
    contract = tomllib.loads((path.parent / "contract.toml").read_text(encoding="utf-8"))
    contract_parts = {name: entry["part"] for name, entry in contract.items()}
    notebook = limits.read(path)["cells"]
    run = [(cell_label(notebook[index], index), notebook[index]) for index in cells_run(notebook, frozenset(contract))]
    # a solution cell, or one of the student's own
    cells = [(label, source_of(cell), is_solution(cell) or not is_module_cell(cell)) for label, cell in run]
    parts = cell_parts([(label, source) for label, source, _ in cells], contract_parts)
    stubs, asked = {}, set()
    for (label, cell), (_, source, _) in zip(run, cells):
        try:
            tree = cellcode.parse(source)
        except (SyntaxError, ValueError):
            continue
        # each top-level def or class the contract names: still the stub? the last one run is what the grader
        # calls (a base class of the student's own may leave a method to its subclasses, raising
        # NotImplementedError as abstract methods do)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in contract_parts:
                stubs[node.name] = any(cellcode.is_stub(f) for f in ast.walk(node) if isinstance(f, ast.FunctionDef))
                if parts[label] == part and is_solution(cell):
                    asked.add(node.name)
    joined: dict[str, str] = {}     # a cell split in two is one cell to the grader, its pieces joined
    for label, source, student in cells:
        if student:
            joined[label] = joined.get(label, "") + source
    found = [problem for label, source in joined.items()
             if parts.get(label) == part and (problem := limits.cell_problem(label, source))]
    found += [shown(v, holding) for v in policy.check_cells(cells, policy.for_assignment(rules))
              if parts.get(v.cell) == part]
    if Watch.current is not None and path.resolve() in Watch.current.notebooks.values():
        found += Watch.current.found(path, {label for label, p in parts.items() if p == part},
                                      {label: source for label, source, _ in cells})
    if not found and any(stubs[name] for name in asked):
        raise NotImplementedError(f"part {part} still has a stub: no rule broken so far, checked again when it is done")
    return found


def _running_notebook(tests_file: str | Path) -> Path | None:
    """In JupyterLab, the notebook whose kernel this is (Jupyter Server names it in JPY_SESSION_NAME),
    when it sits beside the test file: a folder may hold a copy of the notebook too."""
    name = os.environ.get("JPY_SESSION_NAME")
    if not name:
        return None
    folder = Path(tests_file).resolve().parent
    path = (folder / Path(name).name).resolve()
    return path if path.suffix == ".ipynb" and path.parent == folder and path.is_file() else None


def follows_rules(part: int, tests_file: str | Path) -> None:
    """For the public tests: fail, with each line, the rule and what to do instead, when this part's
    cells break a rule the grader checks (the notebook's "Rules the grader checks")."""
    broken = rule_breaks(part, _running_notebook(tests_file) or notebook_beside(tests_file))
    holds = any(line.startswith(HOLDS) for line in broken)
    assert not broken, ("your code breaks the assignment's rules (the notebook's \"Rules the grader checks\"); the "
                        "grader flags it for an instructor's review" +
                        (f", and each line marked {HOLDS.strip()} also holds tests (those that rest on your code's "
                         "process, or on what the rule guards) until then" if holds else "") + ":\n"
                        + "\n".join(f"  {line}" for line in broken))


