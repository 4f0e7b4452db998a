"""The box around a sandbox child and the grader's side of its frames (the hostile corpus is test_hostile.py)."""
import io
import os
import socket
import struct
import sys
import threading
import time
import zipfile

import pytest
import torch

from autograder.core import codec
from autograder.core.frames import FrameError, read_frame
from autograder.core.sandbox import PROBE, GraderError, Hung, Limits, Sandbox, Zygote
from autograder.results.result import MAX_OUTPUT, entry, tidy


@pytest.fixture(scope="module")
def zygote():
    z = Zygote([PROBE])
    yield z
    z.close()


def pair():
    ours, theirs = socket.socketpair()
    return ours, theirs


def test_a_stalled_frame_times_out_at_its_deadline():
    ours, theirs = pair()
    theirs.sendall(struct.pack("!i", 4096) + b"x" * 100)     # a header, part of the body, then nothing
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        read_frame(ours.fileno(), start + 0.5, 1 << 20)
    assert time.monotonic() - start < 2


def test_a_trickled_frame_times_out_at_its_deadline():
    ours, theirs = pair()
    theirs.sendall(struct.pack("!i", 4096))
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            theirs.send(b"x")
            time.sleep(0.05)

    sender = threading.Thread(target=trickle)
    sender.start()
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        read_frame(ours.fileno(), start + 0.5, 1 << 20)
    stop.set()
    sender.join()
    assert time.monotonic() - start < 2


def test_an_oversized_header_is_refused_before_reading():
    ours, theirs = pair()
    theirs.sendall(struct.pack("!i", -1) + struct.pack("!Q", 1 << 40))
    with pytest.raises(FrameError, match="at most"):
        read_frame(ours.fileno(), time.monotonic() + 5, 1 << 20)


def test_a_whole_frame_is_read():
    ours, theirs = pair()
    data = codec.dumps({"a": torch.arange(3)})
    theirs.sendall(struct.pack("!i", len(data)) + data)
    assert codec.loads(read_frame(ours.fileno(), time.monotonic() + 5, 1 << 20))["a"].tolist() == [0, 1, 2]


def test_a_zip_bomb_is_refused_before_torch_load():
    honest = zipfile.ZipFile(io.BytesIO(codec.dumps({"x": torch.zeros(4)})))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for info in honest.infolist():
            z.writestr(info.filename, honest.read(info.filename))
        z.writestr("archive/data/1", bytes(16 << 20))            # 16 MiB of zeros in a few KiB
    assert len(buf.getvalue()) < 1 << 20
    with pytest.raises(codec.CodecError, match="compressed"):
        codec.loads(buf.getvalue())


def test_text_from_a_child_is_cut_before_it_is_tidied():
    spaces = " " * 400_000 + "x"
    start = time.perf_counter()
    out = entry("t", 1, 0, 1, spaces).output
    assert time.perf_counter() - start < 1            # the old regex took minutes on this
    assert len(out) <= MAX_OUTPUT and out == ""
    assert tidy("a  \nb\t\n", 100) == "a\nb"
    assert tidy("bad \ud800 text", 100) == "bad ? text"      # a lone surrogate cannot reach a table or JSON


@pytest.mark.skipif(os.geteuid() != 0, reason="the whole box needs root: see docs/security.md")
def test_a_child_is_boxed(zygote):
    # wave: a standard module the fork server has not imported, read from the disk as uid 65534
    cells = [("a", "import os, wave\nraise RuntimeError(repr((os.getpid(), os.getuid(), sorted(os.environ))))\n")]
    with Sandbox(zygote, cells, None, Limits(10, 4096)) as box:
        box.start()
        assert box.isolation.startswith("boxed: ") and "degraded" not in box.isolation, box.isolation
        for part in ("PID namespace", "no network", "landlock", "no unix sockets", "uid 65534"):
            assert part in box.isolation
        assert "(1, 65534, ['HOME', 'LANG', 'PATH', 'TMPDIR', 'TRITON_CACHE_DIR', 'TRITON_HOME'])" \
            in box.problems["a"]


def test_the_budget_covers_loading_and_every_request(zygote):
    cells = [("a", "import time\ntime.sleep(1.5)\ndef f():\n    time.sleep(60)\n")]
    with Sandbox(zygote, cells, None, Limits(10, 4096, budget_s=4)) as box:
        start = time.monotonic()
        with pytest.raises(Hung):
            box.request({"op": "call", "fn": "f", "args": [], "kwargs": {}, "grad": None, "grad_args": []},
                         time.monotonic() + 10)
        assert box.over_budget and time.monotonic() - start < 6
        with pytest.raises(Hung):     # and nothing more runs
            box.start()


def test_grading_is_refused_outside_linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(GraderError, match="grading needs Linux"):
        Zygote([PROBE])
