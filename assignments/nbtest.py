"""Run an assignment's public tests against the code in its notebook.

The public tests (``test_public.py`` beside each notebook) never import the
notebook itself: they take a fixture ``nb``, a module built from the notebook's
*module cells* only. Those are

* the code cells nbgrader marks as solution cells (where your code goes), and
* the code cells tagged ``module`` (the notebook's imports).

Cells that plot, demonstrate or run checks are not executed, so importing is
fast and has no side effects. Two ways in:

* ``pytest`` in an assignment's folder (this file is loaded as a pytest plugin
  by ``pytest.ini``), or
* ``check(part, globals())`` in the notebook, which runs the same tests for one
  part against the kernel's live objects.
"""
from __future__ import annotations

import errno
import json
import linecache
import os
import stat
import sys
import traceback
import types
from pathlib import Path

import pytest

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


def source_of(cell: dict) -> str:
    """Cell source as Python: IPython magics and shell escapes are commented out."""
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(src)
    lines = src.splitlines()
    return "\n".join("# " + l if l.lstrip().startswith(("%", "!")) else l for l in lines) + "\n"


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
        raise NotebookError(f"{name} is more than the {max_bytes >> 20} MiB a file may have here; clear "
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
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
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


def load(path: str | Path, name: str | None = None) -> types.ModuleType:
    """Execute the module cells of the notebook at ``path``; return them as a module."""
    path = Path(path)
    nb = read_notebook(path)
    module = types.ModuleType(name or f"notebook_{path.stem.replace('-', '_')}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # dataclasses and pickling look modules up here
    for index, cell in enumerate(nb["cells"]):
        if not is_module_cell(cell):
            continue
        label = cell_label(cell, index)
        source, filename = source_of(cell), f"{path.resolve()}[{label}]"
        # Keep the cell's source where inspect finds it, as IPython does for its cells:
        # @triton.jit reads a kernel's source and refuses code it cannot find. The full
        # path keeps two notebooks with the same name (reference, submission) apart.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            exec(compile(source, filename, "exec"), module.__dict__)
        except Exception as e:
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            raise NotebookError(f"{path.name}: cell '{label}' fails when run on its own: "
                                f"{detail}") from e
    autotune_in_interpreter()   # the setup cell may have just imported Triton for its interpreter
    return module


def autotune_in_interpreter() -> None:
    """Let @triton.autotune pick a config under Triton's interpreter (TRITON_INTERPRET=1 and
    Triton imported), where Triton's own benchmarker needs a GPU driver and fails with
    "0 active drivers": each config then runs once (one that cannot run fails there) and the
    first is kept, so a grade never depends on the machine's load. On a GPU, or before Triton
    is imported, it does nothing."""
    if os.environ.get("TRITON_INTERPRET") != "1" or "triton" not in sys.modules:
        return
    from triton.runtime.autotuner import Autotuner

    def run_once(kernel_call, quantiles) -> list[float]:
        kernel_call()
        return [0.0] * len(quantiles)   # all equal: the autotuner keeps the first config

    Autotuner.do_bench = property(lambda self: self._do_bench or run_once)


def first_calls(optimizer: bool = True) -> None:
    """What torch does once per process, done before student code is watched or graded: the first attention
    call and backward set up their kernels; the first optimizer step imports torch._dynamo (1.5 s), whose
    libraries build code from strings (mpmath, typing's forward references). The grader's fork server and
    nbtest's monitor take the optimizer step only for code that names torch.optim (names_optim): code that
    never steps one would pay 1.5 s for nothing."""
    import torch
    x = torch.ones(1, 2, 2, requires_grad=True)
    attention = torch.nn.MultiheadAttention(2, 1, batch_first=True)
    torch.autograd.backward(torch.sum(attention(x, x, x, need_weights=False)[0]))
    if optimizer:
        # The step imports Triton (through torch._dynamo), which reads TRITON_INTERPRET once: without a GPU,
        # set it first, as fused-add-norm's setup cell does, or that notebook's kernels, loaded later in
        # this process (pytest over both assignments), would not run in the interpreter.
        if "TRITON_INTERPRET" not in os.environ and "triton" not in sys.modules and not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
        p = torch.nn.Parameter(torch.ones(1))
        torch.sum(p).backward()
        torch.optim.SGD([p], lr=0.1, momentum=0.9).step()


def names_optim(sources, parse=None) -> bool:
    """Whether these cells name torch.optim in code (words in a docstring do not count). parse: ast.parse by
    default; the grader's threads pass their shared one (core/policy.py: parse, one thread at a time)."""
    import ast
    for source in sources:
        if "optim" in source:
            try:
                tree = (parse or ast.parse)(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if any(isinstance(n, ast.Attribute) and n.attr == "optim" or isinstance(n, ast.Name) and n.id == "optim"
                   or isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torch.optim")
                   or isinstance(n, ast.Import) and any(a.name.startswith("torch.optim") for a in n.names)
                   or isinstance(n, ast.alias) and n.name == "optim" for n in ast.walk(tree)):
                return True
    return False


def notebook_beside(test_file: str | Path) -> Path:
    """The single .ipynb in the test file's folder."""
    folder = Path(test_file).resolve().parent
    found = sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))
    if len(found) != 1:
        raise NotebookError(f"expected exactly one notebook in {folder}, found "
                            f"{[p.name for p in found] or 'none'}")
    return found[0]


@pytest.fixture(scope="module")
def nb(request) -> types.ModuleType:
    """The module cells of the notebook beside the test file, watched by the grader's monitor."""
    try:
        path = notebook_beside(request.path)
        _Watch.start(request.path, path).add(path, f"notebook_{path.stem.replace('-', '_')}")
        return load(path)
    except NotebookError as e:
        pytest.fail(str(e), pytrace=False)


class _Watch:
    """The grader's runtime monitor (monitor.py, the grader's own) in a `pytest` run: what the notebook's
    cells do while the tests call them, seen as events (a string compiled, a frame read, a file written
    outside the temporary folder, ...), which the rules tests report as the grader would. Python cannot
    remove an audit hook, so it is added only here, in pytest's own process, never in a notebook's kernel:
    check() there applies the static rules alone."""
    current: "_Watch | None" = None

    @classmethod
    def start(cls, tests_file: Path, notebook: Path) -> "_Watch":
        """The process's watch, added before the notebook's cells run, with torch's first-call work done
        (no cell is on the stack while it runs, so none of its events is charged to one)."""
        if cls.current is None:
            cls.current = cls(tests_file)
        first_calls(optimizer=names_optim(source_of(c) for c in read_notebook(notebook)["cells"] if is_module_cell(c)))
        return cls.current

    def __init__(self, tests_file: Path):
        import tempfile

        import monitor
        here = Path(__file__).resolve().parent
        tests = {str(tests_file), str(Path(tests_file).resolve()), *map(str, here.glob("*/test_public.py"))}
        self.monitor, self.notebooks, self.modules, self.events = monitor, {}, set(), []
        self.read, self.write = os.pipe()
        for fd in (self.read, self.write):
            os.set_blocking(fd, False)
        self.modes = (0, 0)
        # the temporary folder the code may write to, as the grader's scratch folder (its TMPDIR) is
        tempfile.tempdir = tempfile.mkdtemp(prefix="nbtest-")
        monitor.install(self.write, tempfile.tempdir, self.cell_of,
                        tuple(sorted(tests | {str(here / name) for name in ("nbtest.py", "monitor.py", "policy.py")})),
                        self.modules)

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
        import policy
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
                lines.append(str(policy.Violation(label or "the submission", e.line, "monitor", policy.WITHHOLD,
                                                  f"{e.event}: {e.detail}", policy.quote(sources.get(label, ""),
                                                                                        e.line))))
        return list(dict.fromkeys(lines))


def rule_breaks(part: int, notebook: str | Path) -> list[str]:
    """The lines of the notebook's solution cells in this part that break the assignment's rules, as the
    grader reads them: policy.py (the grader's own policy, shipped with the release) against rules.toml
    beside the notebook. A cell's part is that of the first name it defines in contract.toml. Raises
    NotImplementedError when nothing is broken and a function of the part is still the stub."""
    import ast
    import tomllib
    import types as _types

    import policy
    path = Path(notebook)
    rules_file = path.parent / "rules.toml"
    if rules_file.is_file():      # the release; in the course's repository, its course.toml
        table = tomllib.loads(rules_file.read_text(encoding="utf-8"))
    else:
        course = tomllib.loads((path.parent.parent.parent / "course.toml").read_text(encoding="utf-8"))
        table = course["assignments"][path.parent.name].get("policy", {})
    rules = _types.SimpleNamespace(**{"allowed_imports": (), "forbidden_modules": (), "no_transformer_classes": False,
                                      "kernel_wrapper": "", **table})
    contract = tomllib.loads((path.parent / "contract.toml").read_text(encoding="utf-8"))
    cells, parts, stubs = [], {}, []
    for index, cell in enumerate(read_notebook(path)["cells"]):
        if is_module_cell(cell):
            label, source = cell_label(cell, index), source_of(cell)
            cells.append((label, source, is_solution(cell)))
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError):
                continue
            defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            parts[label] = min((e["part"] for name, e in contract.items() if name in defined),
                               default=min(e["part"] for e in contract.values()))
            if parts[label] == part and is_solution(cell):
                stubs += [_is_stub(f) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
    found = [str(v) for v in policy.check_cells(cells, policy.for_assignment(rules)) if parts.get(v.cell) == part]
    if _Watch.current is not None and path.resolve() in _Watch.current.notebooks.values():
        found += _Watch.current.found(path, {label for label, p in parts.items() if p == part},
                                      {label: source for label, source, _ in cells})
    if not found and any(stubs):
        raise NotImplementedError(f"part {part} still has a stub: no rule broken so far, checked again when it is done")
    return found


def _is_stub(fn) -> bool:
    """A function whose body (after its docstring) is `raise NotImplementedError...`."""
    import ast
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Raise) and "NotImplementedError" in ast.unparse(body[0])


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
    cells break a rule the grader checks (README.md, "Rules")."""
    broken = rule_breaks(part, _running_notebook(tests_file) or notebook_beside(tests_file))
    assert not broken, ("your code breaks the assignment's rules (README.md, \"Rules\"); the grader flags it for "
                        "an instructor's review and holds the tests that rest on your code's process until then:\n"
                        + "\n".join(f"  {line}" for line in broken))


def value_error(call, what: str) -> str:
    """For the public tests: the message of the ValueError that call() raises, or a failure that
    says in words what was expected (instead of pytest's bare "DID NOT RAISE")."""
    try:
        call()
    except ValueError as e:
        return str(e)
    except NotImplementedError:
        raise
    except Exception as e:
        pytest.fail(f"{what} must raise ValueError; it raised {type(e).__name__}: {e}", pytrace=False)
    pytest.fail(f"{what} must raise ValueError; it returned without one, so the bad input went through "
                "silently", pytrace=False)


def names_shape(message: str, shape: tuple) -> bool:
    """Does an error message name this shape, as (2, 3, 1), [2, 3, 1] or torch.Size([2, 3, 1])?"""
    text = "".join(message.split())
    inner = ",".join(map(str, shape))
    return f"({inner}{',' if len(shape) == 1 else ''})" in text or f"[{inner}]" in text


STUB_HINT = ("not implemented yet: a function this test calls still raises "
             "NotImplementedError. Replace `raise NotImplementedError()` with your code.")
PUBLIC_TESTS = "test_public.py"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Report an untouched stub in one line instead of a traceback, and keep each public test's
    failure as one line for the summary (pytest_terminal_summary)."""
    report = yield
    if call.when == "call" and _Watch.current is not None:
        _Watch.current.after(item.name)
    if call.excinfo is None or item.path.name != PUBLIC_TESTS:
        return report
    if call.excinfo.errisinstance(NotImplementedError):
        report.longrepr = STUB_HINT
        report.user_properties.append(("public_line", STILL_STUB))
    else:
        text = str(call.excinfo.value).strip() or call.excinfo.typename
        report.user_properties.append(("public_line", " ".join(text.splitlines()[0].split())))
    return report


def pytest_terminal_summary(terminalreporter) -> None:
    """One whole line per failing public test, in place of pytest's short summary, which cuts each
    line at the terminal's width (pytest.ini turns that summary off with -rN)."""
    lines = [(report.head_line, dict(report.user_properties).get("public_line"))
             for report in terminalreporter.stats.get("failed", [])]
    lines = [(name, line) for name, line in lines if line]
    if lines:
        terminalreporter.section("failed public tests", sep="-")
        for name, line in lines:
            terminalreporter.line(_failure_line(name, line))


STILL_STUB = "still the stub (NotImplementedError)"
SKIPPED = "skipped: "


def run_public(part: int, namespace: dict, tests_file: str | Path = "test_public.py") -> dict:
    """Run the public tests of one part against ``namespace``: {test name: None or the failure}."""
    path = Path(tests_file).resolve()
    tests = types.ModuleType("public_tests")
    tests.__file__ = str(path)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), tests.__dict__)
    live = types.SimpleNamespace(**namespace)
    results = {}
    for name in sorted(n for n in vars(tests) if n.startswith(f"test_part{part}_")):
        try:
            getattr(tests, name)(live)
        except NotImplementedError:
            results[name] = STILL_STUB
        except pytest.skip.Exception as e:
            results[name] = SKIPPED + str(e)
        except (Exception, pytest.fail.Exception) as e:
            results[name] = str(e).strip() or type(e).__name__
        else:
            results[name] = None
    return results


def check(part: int, namespace: dict, tests_file: str | Path = "test_public.py") -> None:
    """In the notebook: run one part's public tests on the live objects, one line per test,
    then a summary line. It never raises: Run All goes on to the next part, and the cell
    shows no traceback."""
    results = run_public(part, namespace, tests_file)
    for name, problem in results.items():
        if problem is None:
            print(f"  passed    {name}")
        elif problem.startswith(SKIPPED):
            print(f"  skipped   {name}: {problem[len(SKIPPED):]}")
        else:
            print(f"  {_failure_line(name, problem)}")
    count = {kind: sum(1 for p in results.values() if _kind(p) == kind)
             for kind in ("passed", "not done", "failed", "skipped")}
    tail = ", ".join(f"{n} {kind}" for kind, n in count.items() if n and kind != "passed")
    print(f"Part {part}: {count['passed']} of {len(results)} public tests passed"
          + (f" ({tail})." if tail else "."))


def _failure_line(name: str, problem: str) -> str:
    """A failing public test as check() and pytest's summary both show it."""
    return f"{'not done' if problem == STILL_STUB else 'FAILED  '}  {name}: {problem}"


def _kind(problem: str | None) -> str:
    if problem is None:
        return "passed"
    if problem == STILL_STUB:
        return "not done"
    return "skipped" if problem.startswith(SKIPPED) else "failed"


def _part_not_done(shell, etype, value, tb, tb_offset=None) -> None:
    """IPython's handler for a NotImplementedError that reaches a cell (a demo or plot cell
    calling a stub): one line naming the stub instead of a traceback."""
    while tb.tb_next is not None:   # the innermost frame is the stub that raised
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    where = getattr(code, "co_qualname", code.co_name)   # ResidualFFN.__init__ (Python 3.11+)
    if "matplotlib.pyplot" in sys.modules:   # a plot cell: no empty axes under the line
        sys.modules["matplotlib.pyplot"].close("all")
    # IPython ignores what this handler returns, so it prints. Flushed: JupyterLab drops
    # output that arrives after the cell's reply. Said once per stub: a part's other demo
    # cells reach the same stub, and Run All would repeat the line for each.
    if where not in _REPORTED_STUBS:
        _REPORTED_STUBS.add(where)
        print(f"Not done yet: {where}() is still the stub (raise NotImplementedError). "
              "Write it, then run this part's cells again.", flush=True)


_REPORTED_STUBS: set[str] = set()


def _in_ipython() -> None:
    """Imported in a notebook: report stubs reached by a cell in one line (_part_not_done)."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if shell is not None:
        shell.set_custom_exc((NotImplementedError,), _part_not_done)


_in_ipython()
autotune_in_interpreter()   # in a notebook, its setup cell has imported Triton before this import
