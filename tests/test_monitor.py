"""The runtime monitor (nbtest/monitor.py): which events a student cell is charged with, and which not.

An audit hook cannot be removed, so each test runs its cells in a fresh interpreter that installs the
monitor, runs them compiled under "<cell LABEL>" as the sandbox child does, and prints what the grader's
end of the pipe reads."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from autograder.course import ROOT

RUNNER = '''
import json, os, sys, tempfile, types
from nbtest import monitor
from autograder.core.probe import describe_error
from autograder.core.sandbox import GRADER_CODE, GRADING_PACKAGES
scratch = tempfile.tempdir = tempfile.mkdtemp()      # the child's TMPDIR is its scratch folder
r, w = os.pipe()
os.set_blocking(w, False)
os.set_blocking(r, False)
module = types.ModuleType("submission")
sys.modules["submission"] = module
monitor.install(w, scratch, GRADER_CODE, GRADING_PACKAGES)
cells = json.loads(sys.argv[1])
for label, source in cells:
    try:
        exec(compile(source, f"<cell {label}>", "exec"), module.__dict__)
    except Exception as e:
        print("raised", type(e).__name__, e, file=sys.stderr)
    monitor.check_state(w, f"cell {label}", label)
compile("1 + 1", "<grader>", "eval")      # the grader's own compiling never counts
for value in list(module.__dict__.values()):   # the probe reads an error a cell left, as it reads a raised one
    if isinstance(value, BaseException):
        describe_error(value)
try:
    data = os.read(r, 1 << 20)
except BlockingIOError:
    data = b""
print(json.dumps([[e.cell, e.line, e.event] for e in monitor.parse(data)]))
'''


def events(**cells: str) -> list[tuple[str, int, str]]:
    """The (cell, line, event) the monitor reports for these cells, run in order."""
    run = subprocess.run([sys.executable, "-c", RUNNER, json.dumps([[k, textwrap.dedent(v)] for k, v in cells.items()])],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    return [tuple(e) for e in json.loads(run.stdout.splitlines()[-1])]


HONEST = '''
import math, typing, collections, dataclasses, functools, enum
import torch
from torch import nn
import torch.nn.functional as F

T = typing.TypeVar("T")
Pair = collections.namedtuple("Pair", "a b")

class Split(typing.NamedTuple):     # string fields, as under `from __future__ import annotations`
    identity: "float"
    branch: "float"

@dataclasses.dataclass
class Config:
    width: int = 4
    scale: float = 1.0

class Norm(enum.Enum):
    PRE = "pre"
    POST = "post"

class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.ln = nn.LayerNorm(d)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        h = self.ln(input)
        return input + self.attn(h, h, h, need_weights=False)[0]

def hints(x: "torch.Tensor") -> int:
    return 1

def seeded(seed: int) -> torch.Tensor:
    torch.manual_seed(seed)         # torch formats the stack for its CUDA seed log: torch's doing, not the cell's
    return torch.randn(2)

block = Block(8)
x = torch.randn(2, 3, 8, requires_grad=True)
with torch.no_grad():
    block(x)
block(x).sum().backward()
torch.einsum("bti,bti->bt", x, x)
F.gelu(x)
functools.partial(F.layer_norm, normalized_shape=(8,))(x)
Pair(1, 2), Split(1.0, 2.0), Config(), Norm("pre"), math.sqrt(2.0), seeded(0)
torch.manual_seed(1)
import tempfile
with tempfile.TemporaryFile() as scratch:      # a descriptor a library made itself, then opened by number
    scratch.write(b"x")
try:
    raise ValueError(f"{type(block).__name__}: {tuple(x.shape)}")
except ValueError:
    pass
'''


def test_honest_code_and_torch_internals_raise_no_event():
    assert events(honest=HONEST) == []


# (cell source, the event it reaches, its line). All run in one interpreter, each as a cell of its own (an
# interpreter per case cost torch's import, 3 s, each time): each event must be charged to its own cell.
REACHING = [
    ("x = 1\nexec('y = 2')\n", "exec", 2),
    ("x = eval('1 + 1')\n", "compile", 1),
    ("import typing\ndef f(a: 'int'):\n    pass\ntyping.get_type_hints(f)\n", "exec", 4),
    ("import numpy as np\nnp.testing.measure('z = 1')\n", "compile", 2),
    ("import sys\nf = sys._getframe(0)\n", "sys._getframe", 2),
    ("import inspect\nf = inspect.currentframe()\n", "sys._getframe", 2),
    ("import inspect\nf = inspect.stack()[0].frame\n", "sys._getframe", 2),
    ("import traceback\nf = next(traceback.walk_stack(None))[0]\n", "sys._getframe", 2),
    ("import logging\nf = logging.currentframe()\n", "sys._getframe", 2),
    ("import gc\nn = len(gc.get_objects())\n", "gc.get_objects", 2),
    ("def g():\n    yield 1\nframe = g().gi_frame\n", "object.__getattr__", 3),
    ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame\n", "object.__getattr__", 4),
    ("import torch\ntorch.nn.Linear.__qualname__ = 'Lin'\n", "object.__setattr__", 2),
    ("def f():\n    pass\nf.__code__ = (lambda: 1).__code__\n", "object.__setattr__", 3),
    ("import ctypes\nctypes.string_at(id(1), 8)\n", "ctypes.string_at", 2),
    ("import os\nos.system('true')\n", "os.system", 2),
    ("open('/etc/hostname').read()\n", "open", 1),
    # the process's own memory and descriptors, opened by a library that opens what it is handed
    ("import gzip\nmemory = gzip.GzipFile('/proc/self/mem', 'rb')\n", "open", 2),
    ("import codecs\ninfo = codecs.open('/proc/self/fdinfo/1', 'rb')\n", "open", 2),
    ("import os\nfor fd in range(3, 64):\n    try:\n        os.fdopen(fd, 'rb', closefd=False)\n"
     "    except OSError:\n        pass\n", "open", 4),
    # a path whose own methods would answer the monitor's checks: a str subclass that lies to realpath, a number
    # by __index__ that equals no descriptor held (opened through a library's wrapper, so not directly)
    ("import codecs\nclass Liar(str):\n    def startswith(self, *args):\n        return False\n"
     "    def partition(self, sep):\n        return '', '', ''\nmemory = codecs.open(Liar('/proc/self/mem'), 'rb')\n",
     "open", 7),
    ("import functools, io\nclass Number(int):\n    def __hash__(self):\n        return 7\n"
     "    def __eq__(self, other):\n        return False\nopener = functools.singledispatch(io.open)\n"
     "for fd in range(3, 64):\n    try:\n        opener(Number(fd), 'rb', closefd=False)\n    except OSError:\n"
     "        pass\n", "open", 10),
    # a string routed into the code a generator compiles is judged by what it does, not by dataclasses' file
    ("import dataclasses\nf = dataclasses._create_fn('f', [], [\"return __import__('sys')._getframe(0)\"])\n"
     "frame = f()\n", "sys._getframe", 3),
]


@pytest.fixture(scope="module")
def reached() -> list[tuple[str, int, str]]:
    return events(**{f"case{i}": source for i, (source, _, _) in enumerate(REACHING)})


@pytest.mark.parametrize("source, event, line", REACHING)
def test_a_reaching_event_is_charged_to_its_cell_and_line(reached, source, event, line):
    assert (f"case{REACHING.index((source, event, line))}", line, event) in reached


@pytest.mark.parametrize("runner", [
    "functools.partial(typing.get_type_hints, noted)",
    "functools.partial(numpy.testing.measure, 'import sys; sys._getframe(0)', 1)",
])
def test_a_string_a_library_runs_for_the_grader_is_judged_as_the_students(runner):
    """A special method that is a functools.partial of a library that runs a string (typing's forward references,
    numpy.testing.measure) puts no cell's frame between the grader's call (the probe's str() of an error) and the
    string's code: the frames read there were once the grader's own doing, and red team 37 retyped an error with
    ctypes so. Code run from a string is judged as the student's whoever calls it, charged to no cell."""
    cell = f"""
        import functools, typing, numpy

        def noted(frame: "__import__('sys')._getframe(0)"):
            pass

        class ShapeError(RuntimeError):
            __str__ = {runner}

        error = ShapeError("x (2, 3) and fx (2, 4)")
        """
    assert events(error=cell) == [("", 0, "sys._getframe")]


def test_torch_anomaly_mode_recording_each_ops_stack_is_torchs_doing():
    """Anomaly mode's C++ calls traceback.format_stack() for every autograd op, right below the cell that ran
    the op (no torch frame between): torch's reading, not the cell's, whether left on or scoped. The frames a
    cell reads itself while it is on still count."""
    found = events(left_on='''
        import torch
        torch.autograd.set_detect_anomaly(True)        # left on while debugging NaNs
        x = torch.randn(3, requires_grad=True)
        y = x + x
        (2.0 * y).sum().backward()
        ''', scoped='''
        import torch
        x = torch.randn(3, requires_grad=True)
        with torch.autograd.detect_anomaly(check_nan=True):
            y = torch.add(x, x) * 3
            y.sum().backward()
        ''', reads='''
        import inspect, torch
        with torch.autograd.detect_anomaly():
            f = inspect.currentframe()
        ''')
    assert found == [("reads", 4, "sys._getframe")], found


def test_a_library_building_its_own_code_at_its_first_import_is_not_the_cell():
    """mpmath compiles its number methods from strings when imported (sympy, under torch's first optimizer
    step, imports it): the import system runs that code, so it is the library's."""
    assert events(cell1="import mpmath\n") == []


def test_code_written_to_the_scratch_folder_and_imported_is_the_cells():
    found = events(writes='''
        import os, sys, tempfile
        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "helper_mod.py"), "w") as f:
            f.write("import sys\\nframe = sys._getframe(0)\\ndef later():\\n    return eval('1')\\n")
        sys.path.insert(0, folder)
        import helper_mod
        helper_mod.later()
        ''')
    assert ("writes", 7, "sys._getframe") in found and ("writes", 8, "compile") in found, found
    assert not [e for e in found if e[2] == "open"], found            # writing in the scratch folder is allowed


def test_a_torch_mode_kept_alive_by_a_suspended_generator_is_seen():
    found = events(modes='''
        from torch.overrides import TorchFunctionMode

        class Liar(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        def keep():
            with Liar():
                yield

        held = keep()
        next(held)
        ''')
    assert ("modes", 0, "torch.function_mode") in found


def test_a_dispatch_mode_entered_and_never_left_is_seen():
    found = events(modes='''
        from torch.utils._python_dispatch import TorchDispatchMode

        class Liar(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        Liar().__enter__()
        ''')
    assert ("modes", 0, "torch.dispatch_mode") in found


def test_a_line_written_to_the_pipe_by_the_code_itself_is_an_event_too():
    from nbtest import monitor
    assert monitor.parse(b"cell\t3\texec\tx\nforged nonsense\n") == [
        monitor.Event("cell", 3, "exec", "x"),
        monitor.Event("", 0, "monitor", "an unreadable line on the monitor's pipe: 'forged nonsense'")]


def test_an_event_repeated_in_a_loop_is_sent_once():
    """The same event from the same line, thousands of times: one line in the pipe. Repeats would fill the
    pipe (64 KiB) before the grader reads it, and which later events got through would depend on when it read."""
    seen = events(loop="import sys\nfor _ in range(5000):\n    sys._getframe()\nsys._getframe()\n")
    assert seen.count(("loop", 3, "sys._getframe")) == 1
    assert ("loop", 4, "sys._getframe") in seen               # another line is another event


def test_the_default_device_mode_is_torchs_own_and_no_other_class_is():
    """torch.set_default_device leaves torch's DeviceContext active (device-agnostic notebooks call it): it only
    fills in the device of a tensor a factory makes, so it is no event; a subclass of it, whose
    __torch_function__ is the student's, still is."""
    found = events(device='''
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        torch.set_default_device(device)
        ''')
    assert not [e for e in found if e[2].startswith("torch.")], found
    found = events(device='''
        import torch
        from torch.utils._device import DeviceContext

        class Mine(DeviceContext):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        Mine("cpu").__enter__()
        ''')
    assert ("device", 0, "torch.function_mode") in found, found


def test_a_machine_without_proc_installs_the_monitor_with_no_process_files(monkeypatch):
    """The public tests install the monitor on a student's machine, which may have no /proc (macOS, Windows):
    there the process's own files and descriptors go unnamed, and installing it raises nothing."""
    import os

    from nbtest import monitor

    def no_proc(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(os, "listdir", no_proc)
    assert monitor._this_process() == monitor.Process()
