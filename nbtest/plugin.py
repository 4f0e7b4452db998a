"""nbtest as a pytest plugin (pytest.ini: -p nbtest.plugin): the `nb` fixture, the notebook's module cells
watched by the grader's monitor, and one whole line per failing public test."""
from __future__ import annotations

import types

import pytest

from .checks import STILL_STUB, failure_line, is_stub_error
from .notebook import NotebookError, load, notebook_beside
from .rules import Watch
from .buffers import install as hold_buffers
from .generators import install as watch_generators
from .uncompiled import install as run_uncompiled


@pytest.fixture(scope="module")
def nb(request) -> types.ModuleType:
    """The module cells of the notebook beside the test file, watched by the grader's monitor, with
    torch.compile and torch.jit.script passing their function through (nbtest.uncompiled), torch.frombuffer
    and torch.asarray holding their buffer (nbtest.buffers) and a generator's state set from a tensor handed to
    torch's modes (nbtest.generators); a cell that fails costs the tests that use its
    names (load's partial), as in the grade."""
    try:
        path = notebook_beside(request.path)
        run_uncompiled()     # as in the grader's child: compiled functions run uncompiled,
        hold_buffers()       # a tensor over a buffer holds it,
        watch_generators()   # and a generator's state set from a tensor is a call that modes see
        Watch.start(request.path, path).add(path, f"notebook_{path.stem.replace('-', '_')}")
        return load(path, partial=True)
    except NotebookError as e:
        pytest.fail(str(e), pytrace=False)


STUB_HINT = ("not implemented yet: a function this test calls still raises "
             "NotImplementedError. Replace `raise NotImplementedError()` with your code.")
PUBLIC_TESTS = "test_public.py"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Report an untouched stub in one line instead of a traceback, and keep each public test's
    failure as one line for the summary (pytest_terminal_summary)."""
    report = yield
    if call.when == "call" and Watch.current is not None:
        Watch.current.after(item.name)
    if call.excinfo is None or item.path.name != PUBLIC_TESTS:
        return report
    if is_stub_error(call.excinfo.value):
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
            terminalreporter.line(failure_line(name, line))


def pytest_unconfigure(config) -> None:
    Watch.stop()
