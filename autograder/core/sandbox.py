"""Run a submission's code in child processes the grader can time out, kill and restart.

    zygote = Zygote([PROBE, SPECS_MODULE])                     # torch imported once, here
    with Sandbox(zygote, cells, SPECS_MODULE, limits) as box:
        reply = box.request({"op": "call", ...}, deadline)   # raises Hung or Died

The zygote is a fork server: a process that has imported torch and the child-side
probe code and forks one child per submission (and per restart after a hang or
crash). Each child leaves the zygote's session, drops to one thread, takes the
memory limit, is confined by Landlock (reads only the Python installation, writes
only its scratch folder, signals nothing outside), then runs the submission's
cells one by one and answers requests until the grader hangs up. Frames both ways
are codec frames; the grader never unpickles anything a child wrote.

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

import gc
import glob
import importlib
import linecache
import os
import resource
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

import torch

from ..course import ROOT, SOLUTIONS
from . import codec, landlock

MAX_FRAME = 256 << 20        # bytes; a larger reply is treated as garbage
# environment variables a module reads once, when it is imported: a process that imported
# it already cannot be forked into a zygote that needs another value
READ_AT_IMPORT = {"TRITON_INTERPRET": "triton"}
STATUS_WAIT_S = 2.0          # how long to wait for a dead child's exit status
PROBE = "autograder.core.probe"


class Hung(Exception):
    """The child did not answer before the deadline; it has been killed."""


class Died(Exception):
    """The child ended (or sent garbage) before answering; the message says how."""


class GraderError(RuntimeError):
    """The sandbox machinery itself failed: not the submission's fault."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float     # per request (a hidden test) and for loading the notebook's cells
    memory_mb: int       # address-space limit of each child (data limit with cuda)
    cuda: bool = False   # the child may use the GPU (its device files, the driver's address space)
    user: tuple[int, int] | None = None   # (uid, gid) the child switches to before running student code


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
                    _serve(theirs)
                finally:
                    os._exit(0)
            self._process = None
        else:
            code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                    "from autograder.core.sandbox import zygote_main; zygote_main()")
            self._process = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno()), *self.preload],
                                             pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                             env={**os.environ, **self.env})
            pid = self._process.pid
        theirs.close()
        self.pid, self._control = pid, ours

    def spawn(self) -> "Child":
        """A new child, waiting for its configuration frame."""
        ours, theirs = socket.socketpair()
        status_r, status_w = os.pipe()
        try:
            with self._lock:
                if self.closed:
                    raise GraderError("the grader has been closed")
                try:
                    pid = self._ask(theirs.fileno(), status_w)
                except OSError:               # the zygote died (killed by someone): start a fresh one
                    self._stop()
                    self._start(fork=False)
                    pid = self._ask(theirs.fileno(), status_w)
        finally:
            theirs.close()
            os.close(status_w)
        return Child(Connection(ours.detach()), pid, status_r)

    def _ask(self, data_fd: int, status_fd: int) -> int:
        socket.send_fds(self._control, [b"F"], [data_fd, status_fd])
        reply = self._control.recv(8)
        if len(reply) != 8:
            raise OSError("the zygote hung up")
        return struct.unpack("q", reply)[0]

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
    _serve(socket.socket(fileno=int(fd)))
    sys.stderr.flush()
    os._exit(0)   # no interpreter teardown: after gc.freeze() it only reports "leaks" of frozen objects


def _preload(names: list[str]) -> None:
    """Import the child-side modules, single-threaded, and run their warm_up() if they have one."""
    torch.set_num_threads(1)
    for name in names:
        module = importlib.import_module(name)
        if hasattr(module, "warm_up"):
            module.warm_up()


def _serve(control: socket.socket) -> None:
    """The zygote's loop: fork a child per request, write each child's exit status to its pipe."""
    gc.freeze()   # torch's million objects: out of every child's garbage collections
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the grader's to handle
    status_fds: dict[int, int] = {}
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            _reap(status_fds)
        if control in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(control, 1, 2)
            except OSError:
                return
            if not msg or len(fds) != 2:
                return
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                for sig in (signal.SIGCHLD, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)
                _child(fds[0])
            os.close(fds[0])
            status_fds[pid] = fds[1]
            control.sendall(struct.pack("q", pid))


def _reap(status_fds: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = status_fds.pop(pid, None)
        if fd is not None:
            try:
                os.write(fd, struct.pack("i", status))
            except OSError:
                pass       # the grader stopped listening
            os.close(fd)


# ------------------------------------------------------------------ the child

def _child(data_fd: int) -> None:
    """A sandbox child: limits, isolation, the submission's cells, then requests until EOF."""
    try:
        os.setsid()                          # its own process group: killed as a whole
        os.closerange(3, data_fd)
        os.closerange(data_fd + 1, os.sysconf("SC_OPEN_MAX"))
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):                 # student prints go nowhere
            os.dup2(null, fd)
        conn = Connection(data_fd)
        config = codec.loads(conn.recv_bytes())
        probe = sys.modules[PROBE]
        specs = importlib.import_module(config["specs"]).SPECS if config["specs"] else {}
        _environment(config["scratch"])
        if config.get("user"):
            _become(*config["user"])
        isolation = _isolate(config["scratch"], config["memory_mb"], config.get("cuda", False))
        module = types.ModuleType("submission")
        sys.modules["submission"] = module
        problems = {}
        for label, source in config["cells"]:
            conn.send_bytes(codec.dumps({"cell": label}))
            filename = f"<cell {label}>"
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            try:
                exec(compile(source, filename, "exec"), module.__dict__)
            except BaseException as e:       # SyntaxError, SystemExit, anything
                problems[label] = probe.describe_error(e)
        declared = probe.declared(module, config.get("contract", {}))
        conn.send_bytes(codec.dumps({"ready": problems, "isolation": isolation, "declared": declared}))
        objects: dict = {}
        while True:
            try:
                request = codec.loads(conn.recv_bytes())
            except EOFError:
                break
            conn.send_bytes(codec.dumps(probe.serve_request(module, specs, objects, request)))
    finally:
        os._exit(0)


def _environment(scratch: str) -> None:
    """Where Triton (and anything using tempfile) writes: the scratch folder."""
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = None                  # re-read TMPDIR
    os.environ["TRITON_HOME"] = scratch
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, "triton-cache")


def _become(uid: int, gid: int) -> None:
    """Switch to an unprivileged user for good (the grader runs as root on Gradescope): then
    file permissions, not only Landlock, keep the suites, solutions and results out of reach."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def _isolate(scratch: str, memory_mb: int, cuda: bool = False) -> str:
    """Apply the limits; returns a line saying how the child is confined."""
    torch.set_num_threads(1)
    limit = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_DATA if cuda else resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.chdir(scratch)
    readable = {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/lib", "/lib64", "/etc",
                "/proc/self", "/proc/cpuinfo", "/sys/devices/system/cpu"}
    writable = [scratch, os.devnull]
    if cuda:   # the driver's device files, its /proc and /sys entries; Triton runs ldconfig and a C compiler
        readable |= {"/sys", "/proc/driver/nvidia", "/sbin", "/bin"}
        writable += glob.glob("/dev/nvidia*")
    readable = [p for p in readable if not SOLUTIONS.is_relative_to(p)]
    try:
        abi = landlock.confine(readable, writable)
    except OSError as e:
        return f"no filesystem isolation ({e})"
    return f"landlock ABI {abi}"


class Child:
    """The grader's end of one child: send a frame, receive one before a deadline."""

    def __init__(self, conn: Connection, pid: int, status_fd: int):
        self.conn, self.pid, self._status_fd = conn, pid, status_fd
        self._status: int | None = None

    def send(self, obj) -> None:
        try:
            self.conn.send_bytes(codec.dumps(obj))
        except OSError:
            raise Died(self.exit_reason()) from None

    def receive(self, deadline: float) -> dict:
        if not self.conn.poll(max(0.0, deadline - time.monotonic())):
            self.kill()
            raise Hung()
        try:
            reply = codec.loads(self.conn.recv_bytes(MAX_FRAME))
        except (EOFError, OSError):
            raise Died(self.exit_reason()) from None
        except codec.CodecError as e:
            self.kill()
            raise Died(f"it sent an unreadable reply: {e}") from None
        if not isinstance(reply, dict):
            self.kill()
            raise Died("it sent a reply that is not a dict")
        return reply

    def exit_reason(self) -> str:
        if self._status is None and select.select([self._status_fd], [], [], STATUS_WAIT_S)[0]:
            data = os.read(self._status_fd, 4)
            self._status = struct.unpack("i", data)[0] if len(data) == 4 else None
        self.kill()
        status = self._status
        if status is None:
            return "the process ended"
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            hint = " (a segmentation fault)" if name == "SIGSEGV" else ""
            return f"the process was killed by {name}{hint}"
        return f"the process exited with code {os.WEXITSTATUS(status)} (sys.exit or os._exit?)"

    def kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)   # the child and anything it started
        except (ProcessLookupError, PermissionError):
            pass
        self.conn.close()

    def close(self) -> None:
        self.kill()
        if self._status_fd >= 0:
            os.close(self._status_fd)
            self._status_fd = -1


# ------------------------------------------------------------------ one submission

class Sandbox:
    """One submission's child: started on first use, restarted after a hang or a crash.

    `problems` maps a cell label to why that cell did not load (an exception at
    import, a crash or a hang, in which case the cell is left out of later starts).
    """

    def __init__(self, zygote: Zygote, cells: list[tuple[str, str]], specs: str | None, limits: Limits,
                 contract: dict[str, str] | None = None):
        """contract: {name: kind} to report on once the cells are loaded (`declared`)."""
        self.zygote, self.specs, self.limits = zygote, specs, limits
        self.cells = list(cells)
        self.contract = dict(contract or {})
        self.problems: dict[str, str] = {}
        self.declared: dict = {}       # probe.declared() of the running child
        self.isolation = ""
        self.closed = False
        self._child: Child | None = None
        self._scratch = tempfile.mkdtemp(prefix="autograder-")
        if limits.user:                          # the child's own folder, once it has dropped to that user
            os.chown(self._scratch, *limits.user)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(self, message: dict, deadline: float) -> dict:
        """Send one request, wait until the deadline; raises Hung or Died (the child is then gone)."""
        self.start()
        child = self._child
        try:
            child.send(message)
            return child.receive(deadline)
        except (Hung, Died):
            self._child = None
            child.close()
            raise

    def start(self) -> None:
        """Start a child and load the cells, unless one is running; a cell that hangs or kills it is left out."""
        if self.closed:
            raise GraderError("this sandbox has been closed")
        while self._child is None:
            child = self.zygote.spawn()
            current = None
            try:
                child.send({"cells": self.cells, "specs": self.specs, "scratch": self._scratch,
                            "memory_mb": self.limits.memory_mb, "cuda": self.limits.cuda,
                            "contract": self.contract, "user": self.limits.user})
                deadline = time.monotonic() + self.limits.timeout_s
                while True:
                    frame = child.receive(deadline)
                    if "cell" in frame:
                        current = frame["cell"]
                    else:
                        break
            except (Hung, Died) as e:
                child.close()
                if current is None:
                    raise GraderError(f"a sandbox child failed before running any cell: {e or 'no answer'} "
                                      f"(is course.toml grading.memory_mb = {self.limits.memory_mb} enough? "
                                      "torch alone takes about 1 GiB of address space)") from None
                why = (f"did not finish loading within {self.limits.timeout_s:g} s (an endless loop at the top level?)"
                       if isinstance(e, Hung) else f"stopped the grading process while loading: {e}")
                self.problems[current] = f"cell '{current}' {why}"
                self.cells = [(label, src) for label, src in self.cells if label != current]
                continue
            for label, error in frame.get("ready", {}).items():
                self.problems[label] = f"cell '{label}' raised {error['type']} when loaded: {error['message']}"
            self.isolation = str(frame.get("isolation", ""))
            self.declared = frame.get("declared") if isinstance(frame.get("declared"), dict) else {}
            self._child = child

    def discard(self) -> None:
        """End the running child, if any; the next request starts a fresh one."""
        if self._child is not None:
            self._child.close()
            self._child = None

    def close(self) -> None:
        self.closed = True
        if self._child is not None:
            self._child.close()
            self._child = None
        shutil.rmtree(self._scratch, ignore_errors=True)
