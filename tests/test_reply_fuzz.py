"""Random and mutated frames from a child: the decoder refuses them cleanly, and a batch whose
children send them still gives every student a result with every test.

The children here are threads that play a sandbox child's side of the socket (a fake fork
server hands them to the real Grader): they answer the grader's requests with replies shaped as
core/probe.py sends them, signed as the child's loop signs them (core/frames.py), then mutate them
(fields dropped, added, retyped, resized; bytes flipped, frames cut, lengths lied about, frames left
unsigned, as a cell writing on the connection would). Seeded, so a failure reproduces.
"""
import os
import random
import socket
import struct
import textwrap
import threading
import time
import types
from multiprocessing.connection import Connection
from unittest import mock

import torch

from autograder import course, suites
from autograder.core import codec, probe, replies
from autograder.core.frames import FrameError, read_frame, signed
from autograder.core.sandbox import Child
from autograder.grading import grader as grader_module
from autograder.grading.grader import Grader
from helpers import SOURCE_NB

ASSIGNMENT = "residual-connections"
FRAMES = 1000            # at least this many, through each of the decoder and the Sandbox
STUDENTS = 4
REFUSED = (FrameError, codec.CodecError, replies.ReplyError, EOFError, TimeoutError)


def _value(rng: random.Random, depth: int = 0) -> dict:
    """A value as probe.encode writes it."""
    kind = rng.choice(["tensor", "tensor", "number", "list", "none", "bool", "str", "object"] if depth < 2 else
                      ["tensor", "number"])
    if kind == "tensor":
        shape = [rng.randint(1, 5) for _ in range(rng.randint(0, 3))]
        return {"kind": "tensor", "value": torch.randn(shape, dtype=rng.choice([torch.float32, torch.float64])),
                "requires_grad": rng.random() < 0.5}
    if kind == "number":
        return {"kind": "number", "value": rng.uniform(-3, 3), "type": "float"}
    if kind == "list":
        items = [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
        return {"kind": rng.choice(["list", "tuple"]), "length": len(items), "items": items}
    if kind in ("none", "bool"):
        return {"kind": kind, "value": None if kind == "none" else rng.random() < 0.5}
    if kind == "str":
        return {"kind": "str", "value": "hello"}
    return {"kind": "object", "type": "Thing"}


def _structure(rng: random.Random) -> dict:
    modules = [{"path": path, "type": base or "Block", "base": base, "mro": [base or "Block", "Module", "object"],
                "parameters": rng.randint(0, 500), **extra}
               for path, base, extra in [("", None, {}), ("ln", "LayerNorm", {"normalized_shape": [rng.randint(1, 16)],
                                                                               "elementwise_affine": True}),
                                         ("ffn.0", "Linear", {"in_features": rng.randint(1, 16),
                                                              "out_features": rng.randint(1, 16), "has_bias": True})]]
    return {"type": "Block", "module": True, "modules": modules, "parameters": rng.randint(0, 500)}


def reply_to(request: dict, rng: random.Random) -> dict:
    """A well-formed reply to `request`, as the probe could send it."""
    if rng.random() < 0.1:
        return {"error": {"type": "ValueError", "message": "no", "is": ["ValueError"]}}
    op = request["op"]
    if op == "new":
        return {"handle": rng.randint(0, 3), "structure": _structure(rng)}
    if op == "load":
        return {}
    out = {"result": _value(rng), "shares_input": False,
           "args_after": [_value(rng) if type(a) is torch.Tensor else None for a in request.get("args", [])]}
    if request.get("grad") is not None:
        out["grads"] = [_value(rng) for _ in request.get("grad_args", [])]
    if request.get("trace"):
        out["trace"] = {"launches": [], "ops": ["add"], "kernels": []}
    return out


EVIL = [None, -1, 0, 2 ** 70, -(2 ** 70), 1e308, float("nan"), "x" * 5000, "", [], {}, [[[[[[]]]]]], True,
        list(range(5000)), {"kind": "tensor"}, torch.zeros(0), torch.zeros(3, dtype=torch.int64), (1, 2),
        {str(i): i for i in range(200)}, {"kind": "list", "length": 10 ** 9, "items": []}]


def mutate(obj, rng: random.Random):
    """obj with one field dropped, added or replaced somewhere inside it (a copy)."""
    if isinstance(obj, dict) and obj and rng.random() < 0.7:
        key = rng.choice(list(obj))
        out = dict(obj)
        roll = rng.random()
        if roll < 0.25:
            del out[key]
        elif roll < 0.4:
            out[rng.choice(["extra", 7, None, "kind", "cell"])] = rng.choice(EVIL)
        elif roll < 0.7:
            out[key] = rng.choice(EVIL)
        else:
            out[key] = mutate(obj[key], rng)
        return out
    if isinstance(obj, list) and obj and rng.random() < 0.7:
        out = list(obj)
        i = rng.randrange(len(out))
        out[i] = mutate(out[i], rng) if rng.random() < 0.5 else rng.choice(EVIL)
        if rng.random() < 0.3:
            out.append(rng.choice(EVIL))
        return out
    return rng.choice(EVIL)


def wire(obj, rng: random.Random, broken: bool, sign=lambda data: data) -> tuple[bytes, bool]:
    """(bytes to send, whether the frame is cut or lies about its length, so the sender hangs up after it);
    sign: what makes the payload a frame (the child's signature)."""
    data = sign(codec.dumps(obj))
    if not broken:
        return struct.pack("!i", len(data)) + data, False
    roll = rng.random()
    if roll < 0.3:
        data = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return struct.pack("!i", len(data)) + bytes(data), False
    if roll < 0.5:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))), True
    if roll < 0.7:
        return struct.pack("!i", rng.choice([-5, -1, 1 << 30, 2 ** 31 - 1])) + data[:100], True
    if roll < 0.85:
        return struct.pack("!i", len(data)) + data[:rng.randrange(len(data))], True
    return struct.pack("!i", len(data) + 1000) + data, True


class FakeChild(threading.Thread):
    """A sandbox child's side of the socket: the cells' frames and the replies, some of them mutated."""

    def __init__(self, end: socket.socket, status_w: int, rng: random.Random, counter: list):
        super().__init__(daemon=True)
        self.end, self.status_w, self.rng, self.counter = end, status_w, rng, counter
        self.key, self.sent = b"", 0

    def send(self, obj, p_mutate: float) -> bool:
        """False when the frame was one the grader must hang up on (the child then stops)."""
        self.counter[0] += 1
        rng = self.rng
        n, self.sent = self.sent, self.sent + 1
        sign = lambda data: signed(self.key, n, data)
        if rng.random() < p_mutate:
            roll = rng.random()
            if roll < 0.6:
                obj = mutate(obj, rng)
            elif roll < 0.75:         # well formed, but not signed by the loop: the grader hangs up
                self.end.sendall(wire(obj, rng, broken=False)[0])
                return False
            else:
                data, last = wire(obj, rng, broken=True, sign=sign)
                self.end.sendall(data)
                return not last
        self.end.sendall(wire(obj, rng, broken=False, sign=sign)[0])
        return True

    def run(self):
        conn = Connection(os.dup(self.end.fileno()))
        try:
            config = codec.loads(conn.recv_bytes())
            self.key = bytes.fromhex(config["key"])
            # the first frame comes before any of the student's code runs: the probe's own, never mutated
            for i, (label, _) in enumerate(config["cells"]):
                if not self.send({"cell": label}, 0.02 if i else 0.0):
                    return
            ready = {"ready": {}, "isolation": "fake", "declared": {}}
            if not self.send(ready, 0.1):
                return
            while True:
                request = codec.loads(conn.recv_bytes())
                if not self.send(reply_to(request, self.rng), 0.5):
                    return
        except (EOFError, OSError):
            pass
        finally:
            try:
                os.write(self.status_w, struct.pack("ii", 0, 0))   # "exited with code 0"
            except BrokenPipeError:      # the grader closed the child already
                pass
            os.close(self.status_w)
            conn.close()
            self.end.close()


class FakeZygote:
    """Spawns FakeChild threads in place of processes."""

    def __init__(self, seed: int):
        self.rng, self.frames, self.children = random.Random(seed), [0], []

    def spawn(self, memory_mb: int, optimizer: bool = False) -> Child:
        ours, theirs = socket.socketpair()
        status_r, status_w = os.pipe()
        child = FakeChild(theirs, status_w, random.Random(self.rng.getrandbits(64)), self.frames)
        child.start()
        self.children.append(child)
        return Child(Connection(ours.detach()), 0, status_r, memory_mb)

    def close(self) -> None:
        pass


SUBMISSION = """
import torch
from torch import nn
def add(x, y):
    return x + y
def several(x):
    return [x, 1.5, [torch.zeros(2), ("a", None, True)], float("nan"), object(), x.to_sparse()]
def refuse(x):
    raise ValueError("no " * 400)
class Odd(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.normalized_shape, self.batch_first = d, 1       # not what nn.LayerNorm stores: reported anyway
        self.lin, self.ln = nn.Linear(d, 2 * d, bias=False), nn.LayerNorm([d])
        self.attn = nn.MultiheadAttention(d, 1, batch_first=True)
    def forward(self, x):
        return self.lin(self.ln(x))
"""


def test_every_reply_the_probe_makes_passes_the_check():
    """What the probe answers, plain or odd, errors included, is a reply the grader accepts (no honest reply
    is refused)."""
    module = types.ModuleType("submission")
    exec(SUBMISSION, module.__dict__)
    objects, x = {}, torch.randn(3, 4)
    requests = [{"op": "call", "fn": "add", "args": [x, x], "grad": torch.ones(3, 4), "grad_args": [0, 1]},
                {"op": "call", "fn": "add", "args": [x, 2.0], "grad": torch.ones(3, 4), "grad_args": [1]},
                {"op": "call", "fn": "several", "args": [x]}, {"op": "call", "fn": "refuse", "args": [x]},
                {"op": "call", "fn": "absent", "args": []}, {"op": "new", "cls": "Odd", "args": [4]},
                {"op": "new", "cls": "add", "args": [], "double": True},
                {"op": "load", "handle": 0, "weights": {"lin.weight": torch.zeros(8, 4)}},
                {"op": "load", "handle": 0, "weights": {"lin.weight": torch.zeros(2, 2)}},
                {"op": "invoke", "handle": 0, "args": [x], "trace": "none registered"}]
    for request in requests:
        replies.answer(request, probe.serve_request(module, {}, objects, request))


def test_the_decoder_refuses_every_mutated_frame_cleanly():
    """Each frame read by read_frame, codec.loads and replies.answer/loading ends in a reply or a
    refusal the Sandbox turns into Died, never in another exception."""
    rng = random.Random(20)
    requests = [{"op": "call", "fn": "f", "args": [torch.zeros(2), 3], "grad": torch.ones(2), "grad_args": [0]},
                {"op": "invoke", "handle": 0, "args": [torch.zeros(2)], "trace": "launches"},
                {"op": "new", "cls": "C", "args": [4]}, {"op": "load", "handle": 0, "weights": {}},
                {"op": "time", "fn": "f", "against": {"eager": {"spec": ["eager"]}}, "reps": 2}]
    accepted = refused = 0
    for i in range(FRAMES):
        request = rng.choice(requests)
        frame = reply_to(request, rng) if i % 5 else {"cell": rng.choice(["a", "b", None, 3])}
        data, _ = wire(mutate(frame, rng) if rng.random() < 0.5 else frame, rng, broken=rng.random() < 0.4)
        r, w = os.pipe()
        try:
            os.set_blocking(w, False)
            try:
                os.write(w, data)
            except BlockingIOError:
                pass
            os.close(w)
            w = -1
            reply = codec.loads(read_frame(r, time.monotonic() + 5, 1 << 20))
            if "cell" in frame:
                replies.loading(reply, "a", {"a"})
            else:
                replies.answer(request, reply)
            accepted += 1
        except REFUSED:
            refused += 1
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
    assert accepted + refused == FRAMES and accepted > 100 and refused > 100


def test_a_batch_of_children_sending_mutated_frames_gives_every_student_every_result():
    """The solution's cells, so that every test gets as far as its requests; no reply here is
    the one the test wants, so no test earns a point."""
    zygote = FakeZygote(seed=20)
    with mock.patch.object(grader_module, "Zygote", lambda *args, **kwargs: zygote):
        grader = Grader(ASSIGNMENT, course.load(), timeout_s=2)   # a reply that never comes costs this
    tests = [t.name for t in suites.load(ASSIGNMENT).tests]
    for student in range(STUDENTS):
        result = grader.grade(SOURCE_NB, seed=student)
        assert [t.name for t in result.tests] == tests
        assert result.score == 0, [t.name for t in result.tests if t.score]
    assert zygote.frames[0] >= FRAMES
    grader.close()
    for child in zygote.children:
        child.join(5)
        assert not child.is_alive()


def test_a_tuple_subclass_result_is_the_tuple_the_docstring_asks_for():
    """namedtuple and typing.NamedTuple results are read as plain tuples, through tuple's own slicing
    (a subclass may redefine __iter__ and __getitem__ to lie)."""
    module = types.ModuleType("submission")
    exec(textwrap.dedent("""
        import collections, typing
        Split = collections.namedtuple("Split", "identity branch")
        class Lying(tuple):
            def __getitem__(self, i):
                return 99.0
            def __iter__(self):
                return iter((99.0, 99.0))
        def split(a):
            return Split(a, 2 * a)
        def lying(a):
            return Lying((a, 2 * a))
    """), module.__dict__)
    for fn in ("split", "lying"):
        reply = probe.serve_request(module, {}, {}, {"op": "call", "fn": fn, "args": [1.5]})
        assert reply["result"]["kind"] == "tuple"
        assert [item["value"] for item in reply["result"]["items"]] == [1.5, 3.0]


def test_torch_s_missing_forward_is_no_stub():
    """An nn.ModuleList called as a layer raises NotImplementedError from torch's Module.forward: the
    reply names it as the code's error, not as a stub still to write."""
    module = types.ModuleType("submission")
    exec("import torch\nfrom torch import nn\ndef stub(x):\n    raise NotImplementedError()\n"
         "def ffn(x):\n    return nn.ModuleList([nn.Linear(2, 2)])(x)\n", module.__dict__)
    stub, ffn = (probe.serve_request(module, {}, {}, {"op": "call", "fn": fn, "args": [torch.zeros(2)]})["error"]
                 for fn in ("stub", "ffn"))
    assert "NotImplementedError" in stub["is"] and "NotImplementedError" not in ffn["is"]
    assert ffn["type"] == "NotImplementedError" and 'missing the required "forward" function' in ffn["message"]
