"""The public tests' verdicts: run in the notebook (check), one line per test, and the helpers test_public.py
uses (value_error, names_shape)."""
from __future__ import annotations

import re
import sys
import types
from pathlib import Path


def value_error(call, what: str) -> str:
    """For the public tests: the message of the ValueError that call() raises, or a failure that
    says in words what was expected (instead of pytest's bare "DID NOT RAISE")."""
    import pytest      # here, not above: the grader reads notebooks with this package and needs no pytest
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
    """Does an error message name this shape, as (2, 3, 1), [2, 3, 1], torch.Size([2, 3, 1]) or 2x3x1 (a 1-D
    shape as (5,), (5) or [5]), spaces anywhere?"""
    text = "".join(message.split())
    inner = ",".join(map(str, shape))
    if f"({inner},)" in text or f"({inner})" in text or f"[{inner}]" in text:
        return True
    # 2x3x1 or 2×3×1, not part of a longer shape or number (2x3x11)
    crossed = "[x×]".join(map(str, shape))
    return len(shape) > 1 and re.search(rf"(?<![\dx×]){crossed}(?![\dx×])", text) is not None


STILL_STUB = "still the stub (NotImplementedError)"


def is_stub_error(e: BaseException) -> bool:
    """A NotImplementedError from a stub still to write, not the one torch's nn.Module.forward raises for
    a module that defines no forward (an nn.ModuleList called as a layer): that one is the code's error."""
    if not isinstance(e, NotImplementedError):
        return False
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is None or tb.tb_frame.f_code.co_name != "_forward_unimplemented"
SKIPPED = "skipped: "


def run_public(part: int, namespace: dict, tests_file: str | Path = "test_public.py") -> dict:
    """Run the public tests of one part against ``namespace``: {test name: None or the failure}."""
    import pytest
    path = Path(tests_file).resolve()
    tests = types.ModuleType("public_tests")
    tests.__file__ = str(path)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True), tests.__dict__)
    live = types.SimpleNamespace(**namespace)
    results = {}
    for name in sorted(n for n in vars(tests) if n.startswith(f"test_part{part}_")):
        try:
            getattr(tests, name)(live)
        except NotImplementedError as e:
            results[name] = STILL_STUB if is_stub_error(e) else str(e)
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
            print(f"  {failure_line(name, problem)}")
    count = {kind: sum(1 for p in results.values() if _kind(p) == kind)
             for kind in ("passed", "not done", "failed", "skipped")}
    tail = ", ".join(f"{n} {kind}" for kind, n in count.items() if n and kind != "passed")
    print(f"Part {part}: {count['passed']} of {len(results)} public tests passed"
          + (f" ({tail})." if tail else "."))


def failure_line(name: str, problem: str) -> str:
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
    calling a stub): one line naming the stub instead of a traceback; torch's own (a module without
    forward) keeps its traceback."""
    if not is_stub_error(value):    # IPython's own display (showtraceback would call this handler again)
        shell._showtraceback(etype, value, shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset))
        return
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


def report_stubs_in_one_line() -> None:
    """In a notebook's kernel: report stubs reached by a cell in one line (_part_not_done)."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if shell is not None:
        shell.set_custom_exc((NotImplementedError,), _part_not_done)


