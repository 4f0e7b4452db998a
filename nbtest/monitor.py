"""The runtime monitor: what a submission's code did in its sandbox child, seen as events, not spellings.

    monitor.install(fd, scratch, own, guarded)      # child, before any student code: a PEP 578 audit hook
    monitor.install(fd, tmp, own, guarded, cell_of=..., modules=...)   # the public tests (rules.py): their cells
    modes = monitor.check_state(fd, "cell 'x'", "x", modes)   # child, after each cell and request: torch modes
    events = monitor.parse(data)          # grader: the lines read from the pipe's other end

The hook watches the audit events (docs/security.md lists them) that reach the process: strings compiled or
executed, frames and gc walks, ctypes, code objects built, writes to library types, imports of the grading
packages (`guarded`), opens outside the scratch folder, processes, sockets, tracing and other audit hooks. The
process's own memory and descriptors (/proc/self/mem, /proc/self/fd/N, a descriptor it held before the first
cell, opened by number) count whoever opens them: a library that opens what it is handed (gzip.GzipFile,
codecs.open) stands between the cell and its own process, not its own data. So does an open of a path that is
not a plain str, bytes or int: its own methods would answer the checks. An event counts when student code caused
it: it was raised while a student cell's frame ran (a cell is compiled under the file name "<cell LABEL>"), with
only library frames between it and the hook. Library code that builds code for a decorator the student applied
(dataclasses, namedtuple, Triton's jit) is not the student's doing, but any code run from a string (but a
module's own code at its import, and what the grader runs) is judged as the student's when it runs, whoever calls
it (a string the student routed into it runs there); a library that evaluates a string the student handed it
(typing's forward references) is the student's doing. Events the grader's own code causes (the
probe calling torch) never count: the nearest non-library frame is then the grader's (`own`, which each caller
names: the sandbox its package, the public tests their own files and this package).

Each event is one line, `LABEL<TAB>LINE<TAB>EVENT<TAB>DETAIL`, written with os.write the moment it
happens, on a pipe whose reading end only the grader holds: once written the code cannot take it
back, so the first reaching event is on record before the code can tamper with anything. The pipe
is non-blocking; when it is full, later events are dropped (the first ones are already there).
Python code cannot remove an audit hook (PEP 578), nor turn it off short of the events it raises.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Container
from dataclasses import dataclass
from types import CodeType

import torch
import torch.utils._device  # torch.set_default_device's mode class (_DEFAULT_DEVICE)

from .sealed import seal

CELL_PREFIX = "<cell "
# (event, what it means); prefixes end with "."
WATCHED = {
    "compile": "compiles a string into code", "exec": "executes a code object", "code.__new__": "builds a code object",
    "sys._getframe": "reads a frame of the call stack", "sys._current_frames": "reads every thread's frames",
    "gc.get_objects": "walks the garbage collector's objects", "gc.get_referrers": "walks the garbage collector's "
    "referrers", "gc.get_referents": "walks the garbage collector's referents", "marshal.loads": "loads marshalled code",
    "object.__setattr__": "writes an attribute of a type or a function's code",
    "object.__delattr__": "deletes an attribute of a type", "sys.settrace": "installs a tracer",
    "sys.setprofile": "installs a profiler", "sys.addaudithook": "adds an audit hook",
    "builtins.input": "reads input", "builtins.breakpoint": "enters the debugger", "import": "imports a module",
    "open": "opens a file", "object.__getattr__": "reads a frame through a traceback or generator",
    "pickle.find_class": "unpickles a class", "sys.unraisablehook": "replaces the unraisable hook",
}
PREFIXES = ("ctypes.", "os.", "subprocess.", "socket.", "shutil.", "pty.", "signal.", "resource.", "_posixsubprocess.",
            "mmap.", "syslog.", "fcntl.")
# library files that compile code they generate themselves, for a decorator the student applied, or only
# parse source into a tree (ast.parse: Triton's interpreter rewrites a kernel's tree, then compiles it itself)
GENERATORS = ("/dataclasses.py", "/collections/__init__.py", "/triton/runtime/jit.py", "/triton/runtime/interpreter.py",
              "/enum.py", "/ast.py")
TYPING = "/typing.py"     # a NamedTuple's fields under `from __future__ import annotations` are strings
IMPORTER = "<frozen importlib"      # the import system: it reads, compiles and runs a module's own code
# what a library may do on the student's behalf without it counting: read directories, load its own
# shared libraries (torch and Triton do so lazily); starting processes and signalling them it may not
PROCESS_EVENTS = ("os.system", "os.exec", "os.spawn", "os.fork", "os.posix_spawn", "os.kill", "os.killpg",
                  "os.forkpty", "ctypes.call_function", "ctypes.addressof", "ctypes.string_at", "ctypes.wstring_at",
                  "ctypes.cdata")
# on a GPU, Triton compiles a kernel at its first launch: it runs ptxas, loads the driver, writes its cache;
# what it does on the way from a launch is not the student's doing
TRITON = "/triton/"
COMPILER_EVENTS = ("subprocess.", "os.", "ctypes.", "open", "import", "_posixsubprocess.", "shutil.")
# libraries whose functions hand frames back to their caller (logging.currentframe() is sys._getframe(1))
FRAME_LIBRARIES = ("/inspect.py", "/traceback.py", "/logging/__init__.py")
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
FRAME_EVENTS = ("sys._getframe", "sys._current_frames", "object.__getattr__")
# torch's anomaly mode (torch.autograd.detect_anomaly, set_detect_anomaly) records the stack of every autograd
# op as text for its own error messages: its C++ calls traceback.format_stack(), so no torch frame stands
# between the cell and the frames read, yet the reading is torch's, as torch.manual_seed's is
ANOMALY_RECORDER = ("/traceback.py", "format_stack")
MAX_DISTINCT = 10_000      # events remembered as sent (the grader keeps its first 50)
# a process's /proc entries that are its memory or its descriptors, at any depth below /proc/PID (task/TID/mem)
PROCESS_FILES = frozenset({"mem", "fd", "fdinfo", "map_files"})
_getframe, _write, _str, _isinstance, _type, _id, _sum = sys._getframe, os.write, str, isinstance, type, id, sum
_function_modes, _dispatch_modes = torch._C._len_torch_function_stack, torch._C._len_torch_dispatch_stack
_function_mode_at, _range = torch._C._get_function_stack_at, range
# torch.set_default_device's mode (device-agnostic notebooks call it): torch's own class, which only fills in the
# device of a tensor a factory function makes, so it answers no read of the probe's; one of the student's own
# class, or this class changed (an audited write to a class), still counts
_DEFAULT_DEVICE = torch.utils._device.DeviceContext
_anomaly = torch.is_anomaly_enabled


@dataclass(frozen=True)
class Event:
    cell: str       # the cell's label, or "" when no cell can be named (a mode left active by a request)
    line: int
    event: str
    detail: str


@dataclass(frozen=True)
class Process:
    """What of the process is its own: its /proc directory ("/proc/PID/") and the descriptors it held when the
    monitor was installed."""
    proc: str = "/proc/self/"
    fds: frozenset[int] = frozenset()


def _this_process() -> Process:
    """This process's /proc directory and the descriptors it holds now, before any student code (the grader's
    connection, the monitor's pipe; 0-2 are the standard streams, which a library may reopen). A student's
    machine without /proc (macOS, Windows: the public tests) has no such files, and its descriptors go unnamed."""
    try:
        return Process(os.path.realpath("/proc/self") + os.sep,
                       frozenset(int(n) for n in os.listdir("/proc/self/fd")) - {0, 1, 2})
    except OSError:
        return Process()


def sandbox_cell(filename: str) -> str | None:
    """The label of the sandbox child's cell compiled under this file name ("<cell LABEL>"), or None."""
    return filename[len(CELL_PREFIX):-1] if filename.startswith(CELL_PREFIX) else None


def install(fd: int, scratch: str, own: tuple[str, ...], guarded: tuple[str, ...],
            cell_of: Callable[[str], str | None] = sandbox_cell, modules: Container[str] = frozenset({"submission"})) -> None:
    """Add the audit hook, writing each counted event to fd (the write end of the grader's pipe).
    own: file name prefixes of the code that runs the student's (whose events are never the student's);
    guarded: the packages a cell may not import (the grading machinery); cell_of: a code object's file name ->
    the student cell's label, None for any other code; modules: the names of the modules the cells run in (the
    student's own types may be changed)."""
    busy = [False]
    sent: set[tuple] = set()      # each event once: a loop repeating one fills no pipe, whatever the grader reads
    prefixes = (os.path.realpath(scratch), os.devnull)
    process = _this_process()
    generated: dict[int, CodeType] = {}   # id -> code run from a string (held, so that no id is reused)

    def hook(event: str, args: tuple) -> None:
        if busy[0] or (event not in WATCHED and not event.startswith(PREFIXES)) or \
                (event == "object.__getattr__" and args[1] not in FRAME_ATTRIBUTES):
            return
        busy[0] = True          # sys._getframe below raises an event of its own
        try:
            if event == "exec" and _type(args[0]) is CodeType and \
                    not _getframe(1).f_code.co_filename.startswith((IMPORTER, *own)):
                _remember(args[0], generated)
            where = _attribute(event, args, prefixes, cell_of, own, guarded, modules, generated, process)
            if where is not None and (key := (*where, event, _detail(event, args))) not in sent:
                if len(sent) < MAX_DISTINCT:
                    sent.add(key)
                _send(fd, Event(*key))
        except Exception:       # never let the monitor break the code it watches; the event is lost
            pass
        finally:
            busy[0] = False

    # the hook and what it calls read a private copy of this module's dict: writing monitor._attribute changes
    # nothing here (reaching the module needs no audited event: a class of it is among object's subclasses)
    sys.addaudithook(seal(hook, (__name__,)))


def check_state(fd: int, where: str, cell: str = "", reported: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """Events for state no audit hook sees: a torch function or dispatch mode still active (a mode
    answers the probe's own tensor reads), checked when the code under test has returned. reported: the
    (function, dispatch) mode counts already reported, returned updated, so that a mode left active is
    one event, not one after every later cell and request."""
    counts = (_sum(1 for i in _range(_function_modes()) if _type(_function_mode_at(i)) is not _DEFAULT_DEVICE),
              _dispatch_modes())
    for count, before, kind in zip(counts, reported, ("function", "dispatch")):
        if count > before:
            _send(fd, Event(cell, 0, f"torch.{kind}_mode", f"a torch {kind} mode is still active after {where}"))
    return max(counts[0], reported[0]), max(counts[1], reported[1])


def _send(fd: int, event: Event) -> None:
    line = "\t".join([event.cell, _str(event.line), event.event, event.detail.replace("\t", " ").replace("\n", " ")])
    try:
        _write(fd, (line[:1000] + "\n").encode("utf-8", "replace"))
    except OSError:       # the pipe is full (the first events are in it) or the grader is gone
        pass


def _remember(code: CodeType, generated: dict[int, CodeType]) -> None:
    """Keep a code object a generator compiled, and the functions' code it holds."""
    generated[_id(code)] = code
    for const in code.co_consts:
        if _type(const) is CodeType:
            _remember(const, generated)


def _attribute(event: str, args: tuple, inside: tuple, cell_of: Callable[[str], str | None], own: tuple[str, ...],
               guarded: tuple[str, ...], modules: Container[str],
               generated: Container[int] = frozenset(), process: Process = Process()) -> tuple[str, int] | None:
    """(cell, line) of the student frame this event is to be charged to, or None. Code the student wrote to a
    file it may write (the scratch folder) and ran is the student's too, and so is code run from a string
    (`generated`: the ids of what exec and eval ran, but for the import system's module code and the grader's
    own: what dataclasses, namedtuple or Triton's jit built, what typing or numpy.testing evaluated), judged by
    what it does, not by which library file compiled it: a string the cell routed into it runs there, whoever
    calls it. The event is judged at such a frame, as if a cell had called what lies below, and charged to the
    cell above it ("" where none is: a thread, a finaliser, the grader calling it: a special method that is a
    functools.partial of such a library puts no cell's frame between the probe and the string's code)."""
    frame = _getframe(2)            # the frame that raised the event (0: _attribute, 1: the hook)
    site, direct, compiler, framing, library, loading = frame.f_code.co_filename, True, False, True, False, False
    judged, outer = False, None     # outer: the outermost library frame below the cell so far
    while frame is not None:
        name = frame.f_code.co_filename
        cell = cell_of(name)
        if cell is not None or not judged and (name.startswith(inside) or _id(frame.f_code) in generated):
            if not judged and (compiler and event.startswith(COMPILER_EVENTS) or loading and event != "import"
                               or event in FRAME_EVENTS and framing and _recorded_by_anomaly_mode(outer)
                               or not _counts(event, args, site, direct, framing, inside, guarded, modules,
                                              process)):
                return None
            if cell is not None:
                return cell, frame.f_lineno
            judged = True
        elif name.startswith(own):
            # the grader's own doing (the probe, the child's loading of cells), unless it called the student's code
            return ("", 0) if judged else None
        elif not judged:
            # a library's code run by the import system below the cell is the library's own module code at its
            # first import (mpmath builds its methods from strings), not the student's doing
            loading = loading or library and name.startswith(IMPORTER)
            library = library or not name.startswith(IMPORTER)
            direct, compiler = False, compiler or TRITON in name
            framing = framing and name.endswith(FRAME_LIBRARIES)
            outer = frame
        frame = frame.f_back
    return ("", 0) if judged else None


def _recorded_by_anomaly_mode(outer) -> bool:
    """Whether the frames are read by torch's anomaly mode recording an op's stack: it is on, and the
    frame library was entered at traceback.format_stack(), right below the cell (torch's C++ calls it there;
    a cell calling it itself must reach traceback, which the static policy flags)."""
    return outer is not None and _anomaly() and outer.f_code.co_filename.endswith(ANOMALY_RECORDER[0]) \
        and outer.f_code.co_name == ANOMALY_RECORDER[1]


def _counts(event: str, args: tuple, site: str, direct: bool, framing: bool, inside: tuple, guarded: tuple[str, ...],
            modules: Container[str], process: Process = Process()) -> bool:
    """Whether an event a student cell caused (directly, or through the library file `site`) reaches the process.
    framing: only frame libraries (inspect, traceback) stand between the cell and the event, so the frames they
    read go back to the cell (torch.manual_seed formats the stack into text for its own log: not the cell's doing)."""
    if event == "compile" and site.endswith(TYPING):
        return direct           # typing checks a string annotation's syntax; evaluating it would be an exec
    if event in ("compile", "exec", "code.__new__", "marshal.loads"):
        return direct or not (site.endswith(GENERATORS) or site.startswith(IMPORTER))
    if event in FRAME_EVENTS:
        return framing
    if event in ("object.__setattr__", "object.__delattr__"):
        target = args[0]
        own = _isinstance(target, type) and target.__module__ in modules
        return not own and not site.endswith(GENERATORS)
    if event == "import":
        return _str(args[0]).split(".")[0] in guarded
    if event == "open":
        path = args[0]
        if _type(path) is int:          # a descriptor by number
            return direct or path in process.fds
        if _type(path) not in (str, bytes):
            # a str subclass or an object with __index__: its own methods would answer the checks below, while
            # the open reads what lies under them (the io module hands a plain str to the event for a PathLike)
            return True
        path = os.path.realpath(os.fsdecode(path))
        if path.startswith(process.proc) and PROCESS_FILES.intersection(path[len(process.proc):].split(os.sep)):
            return True
        return not path.startswith(inside) and (direct or _writes(args[1]))
    if event.startswith(("os.", "ctypes.")) and not direct:
        return event.startswith(PROCESS_EVENTS)
    return True


def _writes(mode) -> bool:
    return _isinstance(mode, str) and any(c in mode for c in "wax+")


def _detail(event: str, args: tuple) -> str:
    what = WATCHED.get(event) or f"calls {event}"
    if event == "compile" and args and _isinstance(args[0], (str, bytes)):
        source = args[0].decode("utf-8", "replace") if _isinstance(args[0], bytes) else args[0]
        return f"{what}: {source[:80]!r}"
    if event in ("import", "open", "object.__getattr__", "object.__setattr__", "object.__delattr__") and args:
        return f"{what}: {_str(args[0] if event in ('import', 'open') else args[1])[:80]}"
    return what


def parse(data: bytes) -> list[Event]:
    """The events in what the grader read from the pipe; a line that is not one (the code wrote to the
    pipe itself) is an event too, charged to no cell."""
    out = []
    for raw in data.decode("utf-8", "replace").splitlines():
        parts = raw.split("\t")
        if len(parts) == 4 and parts[1].isdigit():
            out.append(Event(parts[0], int(parts[1]), parts[2], parts[3]))
        else:
            out.append(Event("", 0, "monitor", f"an unreadable line on the monitor's pipe: {raw[:80]!r}"))
    return out
