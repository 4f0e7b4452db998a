"""Run a submission's code in child processes the grader can time out, kill and restart.

    zygote = Zygote([PROBE, SPECS_MODULE])                     # torch imported once, here
    with Sandbox(zygote, cells, SPECS_MODULE, limits) as box:
        reply = box.request({"op": "call", ...}, Deadline.after(10))   # raises Hung or Died

The zygote is a fork server: a process that has imported torch and the child-side
probe code and forks one child per submission (and per restart after a hang or
crash). Each child is put in a box (core/box.py: as root, its own PID, network, IPC
and mount namespaces, a memory cgroup, rlimits, a clean environment, Landlock, a
seccomp filter, uid 65534 without capabilities; less where the machine lacks a
feature, said in Sandbox.isolation), then runs the submission's cells one by one and
answers requests until the grader hangs up. Frames both ways are codec frames, read
with a deadline for the whole frame; the grader never unpickles anything a child wrote,
and takes only frames the child's loop signed with the key it was sent before its first
cell (core/frames.py): bytes a cell writes on the connection are no reply. Before each frame
the loop writes a mark signed alike on the monitor's pipe: a frame whose mark the grader does
not find there is an event of the monitor's (the code redirected the pipe, or filled it).

A deadline is counted in the child's own CPU time (its cgroup's: every process it
started), so a busy machine or a neighbour's load does not make a submission late. Its idle
time, the wall clock less its CPU time and the time its main thread spent runnable but
waiting for a CPU (/proc/PID/schedstat), has the same limit: a child that waits without
computing (a sleep, a blocking read, select) is cut as early as one that burns. A wall-clock
backstop BACKSTOP times longer ends whatever is left (a child the machine starves; no schedstat).

The zygote's environment (Zygote(env=...)) holds before its imports: Triton reads
TRITON_INTERPRET once, when imported, and a grader without CUDA sets it to 1 so that
kernels run on CPU tensors in Triton's interpreter. Each cell's source is kept in
linecache under its file name, "<cell LABEL>", as IPython does, so inspect finds it
(@triton.jit needs a kernel's source); Triton's cache and temporary files go to the
scratch folder. A child with Limits.cuda may also use the NVIDIA device files, and its
memory limit is on data (RLIMIT_DATA) rather than address space: the CUDA driver
reserves far more address space than it uses.
"""
from __future__ import annotations

import builtins
import gc
import glob
import importlib
import linecache
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable

import nbtest
import torch
from nbtest import buffers, cellcode, generators, monitor, uncompiled
from nbtest.cellsource import compile_cell, compile_statements, python_lines
from nbtest.sealed import seal

from ..course import ROOT, SOLUTIONS
from . import arena as shared
from . import box as boxing
from . import codec, replies
from .frames import FrameError, is_mark, mark, read_frame, signed, unsigned

MAX_FRAME = 256 << 20        # bytes; a larger reply is treated as garbage
MAX_EVENT_BYTES = 1 << 20    # the monitor's events read at once; the first ones are what counts
MAX_EVENTS = 50              # kept per submission
# environment variables a module reads once, when it is imported: a process that imported
# it already cannot be forked into a zygote that needs another value
READ_AT_IMPORT = {"TRITON_INTERPRET": "triton"}
STATUS_WAIT_S = 5.0          # how long to wait for a dead child's exit status (a fork bomb's namespace takes ~3 s to die)
PROBE = "autograder.core.probe"
# The monitor's view of the child: the grader's code, whose events are never the student's, and the packages
# a cell may not import (the grading machinery; nbtest's own code is a library there, judged like any other).
GRADER_CODE = (str(Path(__file__).resolve().parent.parent) + os.sep,)
GRADING_PACKAGES = ("autograder", "nbtest")
BACKSTOP = 5                 # a deadline's wall clock, in times its CPU time
# how long one write of a request may wait for the child to read: a child waits in its loop for the next request,
# so one that reads nothing for this long is stuck (a thread holding the GIL in a C call that does not compute)
SEND_WAIT_S = 30
CPUS = os.cpu_count() or 1   # read once: each os.cpu_count() reads /sys, 17 us, on every wait for a reply
_RECV_FDS = socket.recv_fds  # a child's, bound before any student code runs there


class Hung(Exception):
    """The child did not answer before the deadline; it has been killed. idle: it spent its time waiting
    without computing (not for a CPU); backstop: the wall clock ran out before either clock did (the
    machine starved it)."""

    def __init__(self, backstop: bool = False, idle: bool = False):
        super().__init__()
        self.backstop, self.idle = backstop, idle


class Died(Exception):
    """The child ended (or sent garbage) before answering; the message says how."""


class GraderError(RuntimeError):
    """The sandbox machinery itself failed: not the submission's fault."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float     # per request (a hidden test) and for loading the notebook's cells
    memory_mb: int       # address-space limit of each child (data limit with cuda)
    cuda: bool = False   # the child may use the GPU (its device files, the driver's address space)
    user: tuple[int, int] | None = None   # (uid, gid) the child runs as, when the grader is root (default 65534)
    budget_s: float | None = None   # one submission: loading and all its tests (None: no budget)

    @property
    def resident_mb(self) -> int:
        """The memory cgroup's limit: what a child may really use, memfd and shared memory included.
        Half the address space: torch reserves about 1 GiB it never touches."""
        return self.memory_mb // 2


@dataclass
class Deadline:
    """cpu_s seconds of the child's CPU time over the requests it is given to, cpu_s seconds of its idle
    time (the wall clock while it answered, less its CPU time and its waits for a CPU), or the wall
    clock (time.monotonic()) reaching `wall`, whichever comes first."""
    cpu_s: float
    wall: float
    used: float = 0.0          # CPU seconds the child spent on its earlier requests
    idle: float = 0.0          # idle seconds of its earlier requests

    @classmethod
    def after(cls, seconds: float, cap: float = float("inf")) -> "Deadline":
        """`seconds` of CPU time, with a backstop BACKSTOP times as long (or at `cap`, if sooner)."""
        return cls(seconds, min(time.monotonic() + BACKSTOP * seconds, cap))


# ------------------------------------------------------------------ the zygote

class Zygote:
    """A fork server with torch and the child-side modules already imported.

    By default a fresh interpreter. With fork=True it is forked from this process,
    which saves a second torch import (~1.5 s), but children inherit this process's
    memory: ask for it only where that holds nothing a student may not see (the CLI
    grading one notebook does). It is refused once solutions or hidden suites are loaded.
    """

    def __init__(self, preload: list[str], fork: bool = False, env: dict[str, str] | None = None,
                 secret: Callable[[str], bool] = lambda name: False):
        """env: variables set in the zygote (and so in every child) before it imports `preload`.
        secret(module name): True for a module no child may inherit (a hidden suite)."""
        if sys.platform != "linux":
            raise GraderError(f"grading needs Linux (this is {sys.platform}): without namespaces, Landlock and "
                              "seccomp a submission could read the hidden tests and outlive the grading. "
                              "Grade in a Linux container or VM (docs/security.md).")
        self.preload = list(preload)
        self.env = dict(env or {})
        self._lock = threading.Lock()
        self.closed = False
        self._start(fork=fork and process_is_clean(secret) and not self._env_too_late())

    def _env_too_late(self) -> bool:
        return any(module in sys.modules and os.environ.get(var) != self.env[var]
                   for var, module in READ_AT_IMPORT.items() if var in self.env)

    def _start(self, fork: bool) -> None:
        ours, theirs = socket.socketpair()
        if fork:
            os.environ.update(self.env)       # this process becomes the zygote's parent image
            _preload(self.preload)
            pid = os.fork()
            if pid == 0:
                try:
                    ours.close()
                    boxing.own_user_namespace()     # a fork has one thread, which the kernel requires
                    _serve(theirs)
                finally:
                    os._exit(0)
            self._process = None
        else:
            # a user namespace first, before torch starts a thread (box.own_user_namespace)
            code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                    "from autograder.core import box; box.own_user_namespace(); "
                    "from autograder.core.sandbox import zygote_main; zygote_main()")
            self._process = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno()), *self.preload],
                                             pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                             env={**os.environ, **self.env})
            pid = self._process.pid
        theirs.close()
        self.pid, self._control = pid, ours

    def spawn(self, memory_mb: int, optimizer: bool = False) -> "Child":
        """A new child, waiting for its configuration frame; memory_mb: its memory cgroup's limit; optimizer:
        the child's code steps a torch optimizer, so the zygote takes torch's first step first (once)."""
        ours, theirs = socket.socketpair()
        status_r, status_w = os.pipe()
        events_r, events_w = os.pipe()       # the monitor's events (nbtest/monitor.py), read here only
        os.set_blocking(events_r, False)
        try:
            with self._lock:
                if self.closed:
                    raise GraderError("the grader has been closed")
                try:
                    pid, pidfd, namespaced, clock, waits = self._ask(theirs.fileno(), status_w, events_w,
                                                                      memory_mb, optimizer)
                except OSError:               # the zygote died (killed by someone): start a fresh one
                    self._stop()
                    self._start(fork=False)
                    pid, pidfd, namespaced, clock, waits = self._ask(theirs.fileno(), status_w, events_w,
                                                                      memory_mb, optimizer)
        finally:
            theirs.close()
            os.close(status_w)
            os.close(events_w)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", SEND_WAIT_S, 0))
        return Child(Connection(ours.detach()), pid, status_r, memory_mb, pidfd, namespaced, clock, events_r, waits)

    def _ask(self, data_fd: int, status_fd: int, events_fd: int, memory_mb: int,
             optimizer: bool) -> tuple[int, int, bool, int, int]:
        """(pid, pidfd or -1, whether the child is its own PID namespace's init, the fd of its CPU clock or -1,
        the fd of its main thread's /proc/PID/schedstat or -1)."""
        socket.send_fds(self._control, [(b"W" if optimizer else b"F") + struct.pack("i", memory_mb)],
                        [data_fd, status_fd, events_fd])
        reply, fds, _, _ = socket.recv_fds(self._control, 10, 2)
        if len(reply) != 10:
            for fd in fds:
                os.close(fd)
            raise OSError("the zygote hung up")
        pid, namespaced, has_pidfd = struct.unpack("q??", reply)
        pidfd = fds.pop(0) if has_pidfd else -1
        if pidfd >= 0:          # the zygote's number is not ours when it lives in a PID namespace of its own
            pid = _pid_in_this_namespace(pidfd)
        # the cgroup's CPU accounting; without a cgroup, the child's own (in this PID namespace's /proc)
        clock = fds[0] if fds else _open_or(f"/proc/{pid}/stat")
        return pid, pidfd, namespaced, clock, _open_or(f"/proc/{pid}/schedstat") if pid > 0 else -1

    def close(self) -> None:
        with self._lock:
            if not self.closed:
                self.closed = True
                self._stop()

    def _stop(self) -> None:
        self._control.close()      # the zygote exits when its control socket closes
        if self._process is not None:
            self._process.wait()
        else:
            os.waitpid(self.pid, 0)


def _open_or(path: str) -> int:
    """path open for reading, or -1."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def _pid_in_this_namespace(pidfd: int) -> int:
    """The PID of a pidfd's process as this process sees it; -1 once the process has been reaped."""
    with open(f"/proc/self/fdinfo/{pidfd}") as f:
        for line in f:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    return -1


def process_is_clean(secret: Callable[[str], bool]) -> bool:
    """True when forking this process hands children nothing secret and no other thread."""
    if threading.active_count() != 1:
        return False
    for name, module in list(sys.modules.items()):
        if secret(name):
            return False
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and Path(file).resolve().is_relative_to(SOLUTIONS):
            return False
    return True


def zygote_main() -> None:
    """Entry point of a zygote started as a fresh interpreter: argv = [fd, module, ...]."""
    fd, *preload = sys.argv[1:]
    _preload(preload)
    # its memory is its own; a forked zygote's is shared with the grader, which moving it would copy
    boxing.collapse_to_huge_pages()
    _serve(socket.socket(fileno=int(fd)))
    sys.stderr.flush()
    os._exit(0)   # no interpreter teardown: after gc.freeze() it only reports "leaks" of frozen objects


def _preload(names: list[str]) -> None:
    """Import the child-side modules, single-threaded, and run their warm_up() if they have one."""
    torch.set_num_threads(1)
    generators.install()    # a generator's state set from a tensor is a torch call that modes see, in every child
    for name in names:
        module = importlib.import_module(name)
        if hasattr(module, "warm_up"):
            module.warm_up()
    if os.environ.get("TRITON_INTERPRET") == "1":
        # Triton's interpreter reads and writes the raw addresses a kernel computes: imported here, with its
        # memory operations checked against the launch's tensors, so that no notebook (residual-connections'
        # too, where importing triton is only a flag) imports an interpreter that reaches any object of the child
        importlib.import_module("triton")    # 0.2 s, once per zygote
        nbtest.interpreter_as_on_gpu()


def _serve(control: socket.socket) -> None:
    """The zygote's loop: fork a child per request (in a new PID namespace and cgroup where it can),
    write each child's exit status and whether it was killed for memory to its pipe. When the
    grader hangs up (or dies), kill the children still running and remove their groups."""
    gc.freeze()   # torch's million objects: out of every child's garbage collections
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the grader's to handle
    namespaces = boxing.pid_namespaces_work()
    status_fds: dict[int, tuple[int, boxing.Cgroup | None]] = {}
    boxing.Cgroup.sweep()
    owner = boxing.group_owner()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    try:
        _fork_on_request(control, wake_r, namespaces, owner, status_fds)
    finally:
        for pid in status_fds:           # ours and not yet reaped: the number is still theirs
            os.kill(pid, signal.SIGKILL)
        _reap(status_fds, block=True)


def _fork_on_request(control: socket.socket, wake_r: int, namespaces: bool, owner: str,
                     status_fds: dict[int, tuple[int, "boxing.Cgroup | None"]]) -> None:
    made, stepped = 0, False
    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            _reap(status_fds)
        if control in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(control, 5, 3)
            except OSError:
                return
            if len(msg) != 5 or len(fds) != 3:
                return
            made += 1
            (memory_mb,) = struct.unpack("i", msg[1:])
            if msg[:1] == b"W" and not stepped:
                # torch's first optimizer step imports torch._dynamo (1.5 s), which every child of a submission
                # that trains with torch.optim would otherwise pay, and whose first call compiles strings
                # (typing's forward references) the monitor would charge to the student's line
                nbtest.first_calls(optimizer=True)
                stepped = True
            cgroup = boxing.Cgroup.create(boxing.group_name(owner, made), memory_mb, boxing.Box.nproc,
                                          boxing.Box.cpus)
            pid = boxing.fork_in_pid_namespace() if namespaces else os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                for sig in (signal.SIGCHLD, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)
                _child(fds[0], fds[2], cgroup)
            os.close(fds[0])
            os.close(fds[2])
            status_fds[pid] = (fds[1], cgroup)
            # a pidfd, opened before the child can be reaped, lets the grader kill this child and
            # never a process that got its PID number later (another student's child, say)
            try:
                pidfd = [os.pidfd_open(pid)]
            except OSError:
                pidfd = []
            usage = cgroup.cpu_usage_file() if cgroup is not None else None
            clock = [fd for fd in [_open_or(usage)] if fd >= 0] if usage else []
            socket.send_fds(control, [struct.pack("q??", pid, namespaces, bool(pidfd))], pidfd + clock)
            for fd in pidfd + clock:
                os.close(fd)


def _reap(status_fds: dict[int, tuple[int, "boxing.Cgroup | None"]], block: bool = False) -> None:
    """Reap the children that have exited (block: every child, waiting for each)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd, cgroup = status_fds.pop(pid, (None, None))
        oom = False
        if cgroup is not None:     # the child was its PID namespace's init: every process of it is gone
            try:
                oom = cgroup.oom_killed()
            except OSError:
                pass
            cgroup.remove()
        if fd is not None:
            try:
                os.write(fd, struct.pack("ii", status, oom))
            except OSError:
                pass       # the grader stopped listening
            os.close(fd)


# ------------------------------------------------------------------ the child

def _child(data_fd: int, events_fd: int, cgroup: "boxing.Cgroup | None") -> None:
    """A sandbox child: the box, the monitor, the submission's cells, then requests until EOF."""
    try:
        os.setsid()                          # its own process group: killed as a whole
        low, high = sorted((data_fd, events_fd))
        os.closerange(3, low)
        os.closerange(low + 1, high)
        os.closerange(high + 1, os.sysconf("SC_OPEN_MAX"))
        os.set_blocking(events_fd, False)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):                 # student prints go nowhere
            os.dup2(null, fd)
        conn = Connection(data_fd)
        sock = socket.socket(fileno=os.dup(data_fd))   # for the arenas' descriptors (core/arena.py)
        config = codec.loads(conn.recv_bytes())
        key = bytes.fromhex(config.pop("key"))   # a local of this frame and the loop's alone (core/frames.py)
        probe = sys.modules[PROBE]
        specs = importlib.import_module(config["specs"]).SPECS if config["specs"] else {}
        isolation = _isolate(config, cgroup)
        module = types.ModuleType("submission")
        # the process's builtins, as every library's: exec from the sealed loop would hand the cells its private copy
        module.__dict__["__builtins__"] = builtins
        sys.modules["submission"] = module
        # what runs beside the student's code, each reading private copies of its modules' dicts (nbtest.sealed)
        run, serve, describe, declared, check_state, specs = (seal(f, GRADING_PACKAGES) for f in (
            _run, probe.serve_request, probe.describe_error, probe.declared, monitor.check_state, specs))
        uncompiled.install()     # torch.compile and torch.jit.script hand back their function: no dynamo hook here
        buffers.install()        # torch.frombuffer and torch.asarray hold the buffer they share while the tensor lives
        monitor.install(events_fd, config["scratch"], GRADER_CODE, GRADING_PACKAGES)   # before any student code runs
        _out_of_reach(module)
        run(conn, sock, events_fd, key, config, module, specs, isolation, serve, describe, declared, check_state)
    finally:
        os._exit(0)


# the functions the child's loop calls, bound here: its sealed copy reads these, never a module's attribute
_dumps, _loads, _child_map, _cells, _lines = codec.dumps, codec.loads, shared.child_map, linecache.cache, python_lines
_signed, _mark, _write = signed, mark, os.write
_compile_cell, _compile_statements = compile_cell, compile_statements


def _run(conn: Connection, sock: socket.socket, events_fd: int, key: bytes, config: dict, module: types.ModuleType,
         specs: dict, isolation: str, serve, describe, declared, check_state) -> None:
    """The child's loop: the submission's cells, then requests until EOF (run sealed, by _child); each frame it
    sends signed with `key`, numbered from 0."""
    problems, modes, sent = {}, (0, 0), 0
    own = frozenset(config.get("own") or ())    # the student's own cells: run one statement at a time
    for label, source in config["cells"]:
        sent = _send(conn, events_fd, key, sent, {"cell": label})
        filename = f"<cell {label}>"
        _cells[filename] = (len(source), None, _lines(source, True), filename)   # lines as Python numbers them
        try:
            codes = _compile_statements(source, filename) if label in own else [_compile_cell(source, filename)]
        except BaseException as e:       # SyntaxError
            problems[label], codes = describe(e), []
        for code in codes:
            try:
                exec(code, module.__dict__)
            except BaseException as e:   # SystemExit, anything; an own cell's later statements still run
                problems.setdefault(label, describe(e))
                if label not in own:
                    break
        modes = check_state(events_fd, f"cell '{label}' ran", label, modes)
    ready = declared(module, config.get("contract", {}))
    sent = _send(conn, events_fd, key, sent, {"ready": problems, "isolation": isolation, "declared": ready})
    objects: dict = {}
    while True:
        try:
            request = _loads(conn.recv_bytes())
            buffer = _child_map(_RECV_FDS(sock, 1, 1)[1][0]) if request.get("arena") else None
        except (EOFError, IndexError):
            break
        reply = serve(module, specs, objects, request, buffer)
        modes = check_state(events_fd, f"the request {request.get('op')!r} {request.get('fn') or request.get('cls') or ''}",
                            reported=modes)
        sent = _send(conn, events_fd, key, sent, reply)


def _send(conn: Connection, events_fd: int, key: bytes, n: int, obj) -> int:
    """The loop's nth frame: its mark on the monitor's pipe (a full pipe drops it: its events are there), then the
    frame, both signed with `key`; returns n + 1, the next frame's number."""
    try:
        _write(events_fd, _mark(key, n))
    except OSError:
        pass
    conn.send_bytes(_signed(key, n, _dumps(obj)))
    return n + 1


def _out_of_reach(module: types.ModuleType) -> None:
    """Take the grading machinery out of what a cell can name, before the first cell runs: every module of
    GRADING_PACKAGES leaves sys.modules (the loop runs sealed, on what _child bound), and `__main__`, where a
    fresh zygote's command line imported the box, is the submission's module (under each name it has), as a
    notebook's is. A signal handler a forked zygote inherited from the grader's process (a class-run worker's
    SIGTERM) is reset: signal.getsignal hands it to any caller, and its globals are a grader module's. What is
    left reaches the loop's state only through frames or gc, which the monitor sees (tests/test_reach.py walks
    the rest)."""
    main = sys.modules.get("__main__")
    for name, value in list(sys.modules.items()):
        if name.partition(".")[0] in GRADING_PACKAGES:
            del sys.modules[name]
        elif value is main:              # torch's multiprocessing names it __mp_main__ too
            sys.modules[name] = module
    for sig in signal.valid_signals():
        if callable(signal.getsignal(sig)):
            signal.signal(sig, signal.SIG_DFL)


def _isolate(config: dict, cgroup: "boxing.Cgroup | None") -> str:
    """Put this child in its box; returns a line saying how it is confined, and what it lacks."""
    torch.set_num_threads(1)
    scratch, cuda = config["scratch"], config.get("cuda", False)
    readable = {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/lib", "/lib64", "/etc",
                "/proc/self", "/proc/cpuinfo", "/sys/devices/system/cpu"}
    writable = [scratch, os.devnull]
    if cuda:   # the driver's device files, its /proc and /sys entries; Triton runs ldconfig and a C compiler
        readable |= {"/sys", "/proc/driver/nvidia", "/sbin", "/bin"}
        writable += glob.glob("/dev/nvidia*")
    readable = [p for p in readable if not SOLUTIONS.is_relative_to(p)]
    # Triton (and anything using tempfile) writes to the scratch folder; the rest of the
    # grader's environment (tokens, paths) is not the child's to see
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": scratch, "TMPDIR": scratch,
           "TRITON_HOME": scratch, "TRITON_CACHE_DIR": os.path.join(scratch, "triton-cache"),
           **{var: os.environ[var] for var in READ_AT_IMPORT if var in os.environ}}
    budget = config.get("budget_s") or 600
    # as root the child becomes uid 65534 (or Limits.user); otherwise it keeps the grader's uid
    uid, gid = config.get("user") or ((boxing.Box.uid, boxing.Box.gid) if os.geteuid() == 0
                                      else (os.getuid(), os.getgid()))
    got, lacking = boxing.enter(boxing.Box(memory_mb=config["resident_mb"], address_mb=config["memory_mb"],
                                           cpu_s=int(budget) + 10, cuda=cuda, uid=uid, gid=gid),
                                scratch, readable, sorted(writable), cgroup, env)
    tempfile.tempdir = None                  # re-read TMPDIR
    return "boxed: " + ", ".join(got) + ("; degraded: " + "; ".join(lacking) if lacking else "")


class Child:
    """The grader's end of one child: send a frame, receive one before a deadline."""

    def __init__(self, conn: Connection, pid: int, status_fd: int, memory_mb: int, pidfd: int = -1,
                 namespaced: bool = False, clock: int = -1, events_fd: int = -1, waits: int = -1):
        """pidfd: the child's, or -1 (a kernel before 5.3); namespaced: it is its PID namespace's init;
        clock: a file counting its CPU time (box.cpu_seconds), or -1: then the wall clock stands in;
        events_fd: the reading end of the monitor's pipe (non-blocking); waits: its /proc/PID/schedstat,
        or -1: then waiting without computing is ended by the backstop alone."""
        self.conn, self.pid, self._status_fd, self.memory_mb = conn, pid, status_fd, memory_mb
        self._pidfd, self._namespaced, self._clock, self._events_fd = pidfd, namespaced, clock, events_fd
        self._waits = waits
        self.key = os.urandom(32)      # sent in its configuration; each frame it sends is signed with it
        self._received = 0             # frames read so far: the number the next one is signed with
        self._marked: set[int] = set()   # the frames whose mark the monitor's pipe carried
        self._vouched = 0              # frames 0 .. _vouched - 1 all had theirs
        self._status: int | None = None
        self._oom = False
        self._cpu_s = 0.0
        self._waited_s = 0.0

    def cpu_s(self) -> float:
        """The CPU seconds the child has used so far (the last reading, once it can no longer be read)."""
        try:
            self._cpu_s = boxing.cpu_seconds(self._clock) if self._clock >= 0 else time.monotonic()
        except (OSError, ValueError):
            pass
        return self._cpu_s

    def waited_s(self) -> float | None:
        """The seconds its main thread has spent runnable but waiting for a CPU (the last reading once it can
        no longer be read); None without schedstat."""
        if self._waits < 0:
            return None
        try:
            self._waited_s = int(os.pread(self._waits, 128, 0).split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            pass
        return self._waited_s

    def events(self) -> list[monitor.Event]:
        """The monitor's events written since the last call (a child that is gone wrote its last ones)."""
        data = b""
        while self._events_fd >= 0 and len(data) < MAX_EVENT_BYTES:
            try:
                part = os.read(self._events_fd, 65536)
            except (BlockingIOError, OSError):
                break
            if not part:
                break
            data += part
        events = []
        for e in monitor.parse(data):
            if e.event == "mark" and not e.cell and is_mark(self.key, e.line, e.detail):
                self._marked.add(e.line)
            else:
                events.append(e)
        return events

    def unmarked(self) -> int | None:
        """The first frame read whose mark the monitor's pipe did not carry before it, or None (and always None
        for a child without the pipe)."""
        if self._events_fd < 0:
            return None
        while self._vouched < self._received and self._vouched in self._marked:   # each frame looked at once
            self._vouched += 1
        return self._vouched if self._vouched < self._received else None

    def send(self, obj, fd: int = -1) -> None:
        """One frame; with fd, that descriptor after it (SCM_RIGHTS on one byte, which the child reads
        right after the frame)."""
        try:
            self.conn.send_bytes(codec.dumps(obj))
            if fd >= 0:
                with socket.socket(fileno=os.dup(self.conn.fileno())) as sock:
                    socket.send_fds(sock, [b"A"], [fd])
        except OSError:
            raise Died(self.exit_reason()) from None

    def receive(self, deadline: Deadline, cap: float = float("inf")) -> dict:
        """The child's next reply, begun within the deadline's CPU time, idle time and wall clock (capped
        at `cap`) and then whole within deadline.cpu_s of wall time (a frame begun is written at once: one
        that stalls is not waiting for CPU); raises Hung or Died (the child is then killed). The CPU time
        and the idle time it took are added to deadline.used and deadline.idle."""
        start, began, waited, wall = self.cpu_s(), time.monotonic(), self.waited_s(), min(deadline.wall, cap)
        while True:
            spent, now = self.cpu_s() - start, time.monotonic()
            left = deadline.cpu_s - deadline.used - spent
            idle = (deadline.cpu_s - deadline.idle - self._idle(began, now, waited, spent)
                    if waited is not None else float("inf"))
            if left <= 0 or idle <= 0 or now >= wall:
                self.kill()
                raise Hung(backstop=left > 0 and idle > 0, idle=left > 0 and idle <= 0)
            # its CPU time grows at most CPUS seconds a second, its idle time one: look again when
            # either could be spent
            if select.select([self.conn.fileno()], [], [], min(wall - now, idle, max(left / CPUS, 0.05)))[0]:
                break
        try:
            data = read_frame(self.conn.fileno(), min(wall, time.monotonic() + deadline.cpu_s), MAX_FRAME)
            reply = codec.loads(unsigned(self.key, self._received, data))
            self._received += 1
        except TimeoutError:
            self.kill()
            raise Hung() from None
        except (EOFError, OSError):
            raise Died(self.exit_reason()) from None
        except (FrameError, codec.CodecError) as e:
            self.kill()
            raise Died(f"it sent an unreadable reply: {e}") from None
        spent = self.cpu_s() - start
        deadline.used += spent
        if waited is not None:
            deadline.idle += self._idle(began, time.monotonic(), waited, spent)
        if not isinstance(reply, dict):
            self.kill()
            raise Died("it sent a reply that is not a dict")
        return reply

    def _idle(self, began: float, now: float, waited: float, spent: float) -> float:
        """The wall clock since `began`, less the CPU time `spent` since then and what the child's main thread
        spent waiting for a CPU since then (`waited` its reading at `began`)."""
        return max(0.0, now - began - spent - (self.waited_s() - waited))

    def exit_reason(self) -> str:
        if self._status is None and select.select([self._status_fd], [], [], STATUS_WAIT_S)[0]:
            data = os.read(self._status_fd, 8)
            if len(data) == 8:
                self._status, self._oom = struct.unpack("ii", data)
        self.kill()
        status = self._status
        if self._oom:
            return f"the process was killed for using more than the memory limit of {self.memory_mb} MiB"
        if status is None:
            return "the process ended"
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            hint = " (a segmentation fault)" if name == "SIGSEGV" else ""
            return f"the process was killed by {name}{hint}"
        return f"the process exited with code {os.WEXITSTATUS(status)} (sys.exit or os._exit?)"

    @property
    def ended_itself(self) -> bool:
        """Once exit_reason() has read its status: its end was its code's doing (an exit, a signal other than
        SIGKILL, or its memory cgroup's kill), not the grader's or the machine's (SIGKILL)."""
        status = self._status
        return self._oom or (status is not None and not (os.WIFSIGNALED(status)
                                                         and os.WTERMSIG(status) == signal.SIGKILL))

    def kill(self) -> None:
        """SIGKILL the child through its pidfd: with a PID namespace the kernel then kills everything
        in it. Without one, its process group is all that can be reached, and only while the child
        has not been reaped (until then no other process can get its number as a group id)."""
        alive = self._pidfd >= 0 or self.pid > 0        # never os.kill(-1): every process we may signal
        try:
            if self._pidfd >= 0:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            elif alive:
                os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            alive = False
        if alive and self.pid > 0 and not self._namespaced:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.conn.close()

    def close(self) -> None:
        self.kill()
        for fd in (self._status_fd, self._events_fd):
            if fd >= 0:
                os.close(fd)
        self._status_fd = self._events_fd = -1
        for fd in (self._pidfd, self._clock, self._waits):
            if fd >= 0:
                os.close(fd)
        self._pidfd = self._clock = self._waits = -1


# ------------------------------------------------------------------ one submission

class Budget:
    """A submission's time in all (Limits.budget_s; 0: none), shared by its sandboxes. It starts with the
    first child of any of them (not before: the fork server may still be importing torch).

    left_out: {the cells a child loaded, up to and including the one it hung in or died of: why}, for an end that
    was the code's doing (CPU or idle time spent, not the backstop; Child.ended_itself): another sandbox loading
    that cell after the same cells leaves it out at once, as its own restart would after running it again."""

    def __init__(self, seconds: float):
        self.seconds, self.end = seconds, float("inf")
        self.left_out: dict[tuple[tuple[str, str], ...], str] = {}

    def start(self) -> None:
        if self.seconds and self.end == float("inf"):
            self.end = time.monotonic() + self.seconds

    @property
    def over(self) -> bool:
        return time.monotonic() >= self.end


class Sandbox:
    """One submission's child: started on first use, restarted after a hang or a crash.

    `problems` maps a cell label to why that cell did not load (an exception at
    import, a crash or a hang, in which case the cell is left out of later starts).
    """

    def __init__(self, zygote: Zygote, cells: list[tuple[str, str]], specs: str | None, limits: Limits,
                 contract: dict[str, str] | None = None, budget: "Budget | None" = None,
                 own: frozenset[str] = frozenset()):
        """contract: {name: kind} to report on once the cells are loaded (`declared`); budget: the
        submission's, shared with its other sandboxes (default: one of this sandbox's own); own: the labels
        of the student's own cells (helpers), run one statement at a time (cellsource.compile_statements)."""
        self.zygote, self.specs, self.limits = zygote, specs, limits
        self.own = frozenset(own)
        self.cells = list(cells)
        self.all_cells = list(cells)   # as sent, also those later left out (the monitor's events quote them)
        self.contract = dict(contract or {})
        self.optimizer = nbtest.names_optim((source for _, source in cells), cellcode.parse)   # Zygote.spawn
        self.problems: dict[str, str] = {}
        self.declared: dict = {}       # probe.declared() of the running child
        self.events: list[monitor.Event] = []   # what the monitor saw, in every child so far, in order
        self.kept: list[shared.Arena] = []      # read-back arenas, kept until close (written_later)
        self.traced: list[tuple[str, dict]] = []   # (label, report) of each traced call that returned (kit.Trial)
        self.isolation = ""
        self.closed = False
        self._child: Child | None = None
        self._scratch = tempfile.mkdtemp(prefix="autograder-")
        # every deadline, loading included, is cut to the submission's budget
        self.budget = budget or Budget(limits.budget_s)

    @property
    def over_budget(self) -> bool:
        """Has this submission used up its time budget (Limits.budget_s)?"""
        return self.budget.over

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(self, message: dict, deadline: Deadline) -> dict:
        """Send one request, wait until the deadline; raises Hung or Died (the child is then gone)."""
        self.start()
        child = self._child
        arena = shared.Arena.of(message)
        try:
            child.send(arena.request if arena else message, arena.fd if arena else -1)
            reply = child.receive(deadline, self.budget.end)
            self._take_events(child)
            try:
                replies.answer(message, reply)
            except replies.ReplyError as e:
                raise Died(f"it sent a reply the grader cannot use ({e}); the code may have written to the "
                           "grader's connection") from None
            if arena and "args_after" in reply:      # what the call left, as the child kept it when it returned
                try:
                    after = arena.read()
                except shared.ArenaError as e:
                    raise Died(str(e)) from None
                for i, tensor in after.items():
                    reply["args_after"][i] = {"kind": "tensor", "value": tensor, "requires_grad": False}
                self.kept.append(arena)      # read again once the part's tests are done (written_later)
                arena = None
            return reply
        except (Hung, Died):
            self._child = None
            self._take_events(child)
            child.close()
            raise
        finally:
            if arena:
                arena.close()

    def _take_events(self, child: Child) -> None:
        """Keep the child's new events (a restarted child repeats its cells' ones), the first MAX_EVENTS; a frame
        read without its mark on the monitor's pipe is one."""
        events = child.events()
        n = child.unmarked()
        if n is not None:
            events.append(monitor.Event("", 0, "monitor", f"the monitor's pipe did not carry the mark of the child's "
                                        f"frame {n}: the code redirected the pipe or filled it"))
        for e in events:
            if e not in self.events and len(self.events) < MAX_EVENTS:
                self.events.append(e)

    def start(self) -> None:
        """Start a child and load the cells, unless one is running; a cell that hangs or kills it is left out."""
        if self.closed:
            raise GraderError("this sandbox has been closed")
        if self._child is None and self.budget.left_out:
            self._leave_out_known_failures()
        while self._child is None:
            if self.over_budget:
                raise Hung()
            child = self.zygote.spawn(self.limits.resident_mb, self.optimizer)
            self.budget.start()
            current, loading = None, iter(label for label, _ in self.cells)
            expected = next(loading, None)
            labels = {label for label, _ in self.cells}     # once per start, not per frame: cells can be many
            try:
                child.send({"key": child.key.hex(), "cells": self.cells, "own": sorted(self.own), "specs": self.specs,
                            "scratch": self._scratch,
                            "memory_mb": self.limits.memory_mb, "resident_mb": self.limits.resident_mb,
                            "cuda": self.limits.cuda, "user": self.limits.user,
                            "budget_s": self.limits.budget_s, "contract": self.contract})
                deadline = Deadline.after(self.limits.timeout_s, self.budget.end)
                while True:
                    frame = child.receive(deadline)
                    self._take_events(child)      # as they come: the pipe holds 64 KiB, marks included
                    try:
                        label = replies.loading(frame, expected, labels)
                    except replies.ReplyError as e:
                        child.kill()
                        raise Died(f"it sent a frame the grader cannot use ({e})") from None
                    if label is None:
                        break
                    current, expected = label, next(loading, None)
            except (Hung, Died) as e:
                self._take_events(child)
                child.close()
                if self.over_budget:
                    raise Hung() from None
                if current is None:
                    raise GraderError(f"a sandbox child failed before running any cell: {e or 'no answer'} "
                                      f"(is course.toml grading.memory_mb = {self.limits.memory_mb} enough? "
                                      "torch alone takes about 1 GiB of address space)") from None
                why = (f"did not finish loading within {self.limits.timeout_s:g} s of CPU time (or as long "
                       "waiting without computing; an endless loop or a sleep at the top level?)"
                       if isinstance(e, Hung) else f"stopped the grading process while loading: {e}")
                self.problems[current] = f"cell '{current}' {why}"
                codes_doing = child.ended_itself if isinstance(e, Died) else not e.backstop
                if codes_doing:          # the same cells would end the same way in the submission's other children
                    upto = next(i for i, (label, _) in enumerate(self.cells) if label == current)
                    self.budget.left_out[tuple(self.cells[:upto + 1])] = self.problems[current]
                self.cells = [(label, src) for label, src in self.cells if label != current]
                continue
            for label, error in frame["ready"].items():
                self.problems[label] = f"cell '{label}' raised {error['type']} when loaded: {error['message']}"
            self.isolation = frame["isolation"]
            self.declared = frame["declared"]
            self._child = child

    def _leave_out_known_failures(self) -> None:
        """Leave out each cell that hung or ended its child in another child of this submission after the same
        cells (Budget.left_out), with that child's reason, before a child runs it again."""
        kept: list[tuple[str, str]] = []
        for cell in self.cells:
            why = self.budget.left_out.get((*kept, cell))
            if why is None:
                kept.append(cell)
            else:
                self.problems[cell[0]] = why
        self.cells = kept

    def discard(self) -> None:
        """End the running child, if any; the next request starts a fresh one."""
        if self._child is not None:
            self._child.close()
            self._child = None

    def stop(self) -> None:
        """Kill the running child and start no other; from any thread. A request waiting on the child ends
        (Died) and the thread that made it closes the sandbox."""
        self.closed = True
        child = self._child
        if child is not None:
            child.kill()

    def close(self) -> None:
        self.closed = True
        if self._child is not None:
            self._child.close()
            self._child = None
        for arena in self.kept:
            arena.close()
        self.kept = []
        shutil.rmtree(self._scratch, ignore_errors=True)
