"""The box around a sandbox child and the grader's side of its frames (the hostile corpus is test_hostile.py)."""
import contextlib
import ctypes
import mmap
import os
import re
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
import torch

from autograder.core import box as boxing
from autograder.core import codec, sandbox
from autograder.core.frames import FrameError, read_frame
from autograder.core.sandbox import BACKSTOP, PROBE, Deadline, GraderError, Hung, Limits, Sandbox, Zygote
from autograder.results.result import MAX_OUTPUT, entry, tidy
from hostile.corpus import SEND_FRAME
from nbtest import cellcode


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


def test_frames_carry_plain_data_and_tensors_as_they_were():
    """Types, dtypes, strides, storage offsets and requires_grad come back as sent."""
    base = torch.arange(24, dtype=torch.float64).view(4, 6)
    tensors = [base.t(), base[1:, ::2], torch.tensor([True, False]), torch.zeros(0, 3),
               torch.randn(3, requires_grad=True), torch.ones(2, dtype=torch.bfloat16), torch.arange(5)[::2],
               torch.randn(2, dtype=torch.complex64).conj(), torch.randn(2, dtype=torch.float16), torch.tensor(7)]
    frame = {"s": "text \udcff", None: 1.5, 3: [None, True, False, -(2 ** 70), 2.5, float("inf")], "t": (1, ("x",)),
             "tensors": tensors}
    back = codec.loads(codec.dumps(frame))
    plain = lambda d: repr({k: v for k, v in d.items() if k != "tensors"})
    assert plain(back) == plain(frame)
    for sent, got in zip(tensors, back["tensors"], strict=True):
        assert type(got) is torch.Tensor and got.dtype == sent.dtype and got.shape == sent.shape
        assert got.stride() == sent.stride() and got.requires_grad == sent.requires_grad
        assert torch.equal(got.detach(), sent.detach().resolve_conj())
    with pytest.raises(TypeError, match="plain data"):
        codec.dumps({"x": {1, 2}})
    with pytest.raises(TypeError, match="dense CPU tensors"):
        codec.dumps(torch.zeros(2).to_sparse())


def _tensor_frame(shape, stride, offset, storage: bytes, dtype: bytes = b"float32",
                  claimed: int | None = None) -> bytes:
    """A codec frame of one tensor, written by hand; `claimed`: the storage length it states instead."""
    return (codec.MAGIC + b"X" + struct.pack("<I", len(dtype)) + dtype + bytes((len(shape),))
            + struct.pack(f"<{2 * len(shape) + 1}Q", *shape, *stride, offset) + b"\x00"
            + struct.pack("<Q", len(storage) if claimed is None else claimed) + storage)


@pytest.mark.parametrize("frame, why", [
    (b"\x80\x02}q\x00.", "codec's mark"),                                          # a pickle
    (codec.MAGIC + b"s" + struct.pack("<I", 2 ** 32 - 1) + b"x", "claims 4294967295 bytes"),
    (codec.MAGIC + b"l" + struct.pack("<I", 2 ** 32 - 1) + b"N", "claims 4294967295 items"),
    (_tensor_frame([4], [1], 0, b"", claimed=16), "claims 16 bytes"),
    (_tensor_frame([4], [1], 0, b"", claimed=1 << 62), f"claims {1 << 62} bytes"),
    (_tensor_frame([1000], [1], 0, bytes(16)), "reaching past its storage"),
    (_tensor_frame([2, 2], [2, 1], 3, bytes(16)), "reaching past its storage"),
    (_tensor_frame([2], [1], 0, b"\x01\x02", b"bool"), "bool tensor"),
    (_tensor_frame([2], [1], 0, bytes(8), b"Tensor"), "dtype"),
    (codec.MAGIC + b"l\x01\x00\x00\x00" * 100 + b"N", "nested deeper"),
    (codec.MAGIC + b"d\x01\x00\x00\x00" + b"l\x00\x00\x00\x00" + b"N", "dict key of type list"),
    (codec.MAGIC + b"NN", "after its value"),
    (codec.MAGIC + b"Q", "unknown tag"),
])
def test_a_frame_is_refused_before_it_sizes_an_allocation(frame, why):
    """Every length, count and view is checked against the bytes the frame has: nothing it claims is
    allocated, and no view reaches past the storage sent with it."""
    tracemalloc.start()
    try:
        with pytest.raises(codec.CodecError, match=re.escape(why)):
            codec.loads(frame)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


def test_text_from_a_child_is_cut_before_it_is_tidied():
    spaces = " " * 400_000 + "x"
    start = time.perf_counter()
    out = entry("t", 1, 0, 1, spaces).output
    assert time.perf_counter() - start < 1            # the old regex took minutes on this
    assert len(out) <= MAX_OUTPUT and out == ""
    assert tidy("a  \nb\t\n", 100) == "a\nb"
    assert tidy("bad \ud800 text", 100) == "bad ? text"      # a lone surrogate cannot reach a table or JSON


# a cell's function that writes, on every socket it holds (the hostile corpus's way), a reply to the call as the
# probe would word it (42.0) and then returns 1.0: the frame the grader reads first is the forged one
FORGER = ("import os, stat, struct\ndef answer():\n    frame = FORGED\n" + textwrap.indent(SEND_FRAME, "    ")
          + "    return 1.0\ndef plain():\n    return 2.0\n")


@pytest.mark.parametrize("signature", [b"", bytes(32)])
def test_a_frame_a_cell_writes_on_the_connection_is_no_reply(zygote, signature):
    """The child holds the grader's connection: its code can find the socket and write a well-formed frame on it,
    with no signature or a made-up one, before the probe's reply. The grader takes only frames the child's loop
    signed (core/frames.py): the call is refused as not the probe's, never answered 42.0."""
    forged = signature + codec.dumps({"result": {"kind": "number", "value": 42.0, "type": "float"},
                                      "shares_input": False, "args_after": []})
    with Sandbox(zygote, [("a", f"FORGED = {forged!r}\n" + FORGER)], None, Limits(10, 4096)) as box:
        with pytest.raises(sandbox.Died, match="not a frame the child's loop signed"):
            box.request({"op": "call", "fn": "answer", "args": []}, Deadline.after(10))
        box.start()           # a fresh child; the probe's own replies are read as ever
        assert box.request({"op": "call", "fn": "plain", "args": []}, Deadline.after(10))["result"]["value"] == 2.0


GROWER = """import array
def grow(kind):
    owner = bytearray(64) if kind == "bytearray" else array.array("b", bytes(64))
    view = torch.frombuffer(owner, dtype=torch.uint8) if kind == "bytearray" else torch.asarray(owner)
    try:
        owner.extend(bytes(4096))     # the memory under view would move, and view read what is freed
    except BufferError:
        return "held"
    return "moved"
"""


@pytest.mark.parametrize("kind", ["bytearray", "array"])
def test_a_tensor_over_a_buffer_holds_it_in_the_child(zygote, kind):
    """torch.frombuffer and torch.asarray release the buffer they share at once, so the object could grow
    and the tensor then read and write freed memory (a retyped exception, with nothing audited). In the child
    a tensor holds its buffer while it lives (nbtest/buffers.py): growing the object raises BufferError."""
    with Sandbox(zygote, [("a", "import torch\n" + GROWER)], None, Limits(10, 4096)) as box:
        reply = box.request({"op": "call", "fn": "grow", "args": [kind]}, Deadline.after(10))
        assert reply["result"]["value"] == "held"


SPARSE_PAST = """def past(far):
    table = torch.nn.Embedding(4, 1, sparse=True)
    table(torch.tensor([1])).sum().backward()
    try:      # the legacy constructor on a sparse gradient: a sparse tensor with no word of 'sparse' written
        step = table.weight.grad.new(torch.tensor([[far], [0]]), torch.tensor([1.0]), (4, 1))
    except RuntimeError:
        return "checked"
    return "built"
"""


def test_a_sparse_tensor_past_its_size_is_refused_in_the_child(zygote):
    """Adding a sparse tensor to a dense one writes at its indices: one whose index lies past its size would
    write into any object of the child. There torch checks every sparse tensor it builds (nbtest/buffers.py)."""
    with Sandbox(zygote, [("a", "import torch\n" + SPARSE_PAST)], None, Limits(10, 4096)) as box:
        reply = box.request({"op": "call", "fn": "past", "args": [1 << 20]}, Deadline.after(10))
        assert reply["result"]["value"] == "checked"


DLPACK_FREED = """import numpy
def free_under(how, change):
    block = torch.zeros(1000, dtype=torch.int64)
    stale = numpy.from_dlpack(block) if how == "numpy" else torch.from_dlpack(block)
    try:
        block.resize_(1 << 16) if change == "resize_" else block.set_()
    except RuntimeError:
        return "refused"
    items = [1.5] * 1000      # would land in the freed block
    return "held" if not (numpy.asarray(stale) == id(1.5)).any() else "freed"
"""


@pytest.mark.parametrize("how", ["numpy", "torch"])
@pytest.mark.parametrize("change", ["resize_", "set_"])
def test_a_dlpack_import_keeps_its_memory_in_the_child(zygote, how, change):
    """numpy.from_dlpack and torch.from_dlpack map a tensor's memory; resize_() or set_() on the tensor once
    freed it under them (red team round 8: a list's items placed there, a made-up object read back). In the
    child the export is an alias whose storage cannot be resized (nbtest/buffers.py)."""
    with Sandbox(zygote, [("a", "import torch\n" + DLPACK_FREED)], None, Limits(10, 4096)) as box:
        reply = box.request({"op": "call", "fn": "free_under", "args": [how, change]}, Deadline.after(10))
        assert reply["result"]["value"] == ("refused" if change == "resize_" else "held")


REGISTERED_INTERFACE = """import numpy
class Words(torch.nn.Module, dict):
    def __init__(self):
        torch.nn.Module.__init__(self)
        dict.__init__(self, shape=(1,), typestr="<i8", data=(id(self), True), version=3)
def interface(how):
    key = "_".join(["", "", "array", "interface", "", ""])
    holder = torch.nn.Module()
    if how == "add_module":
        holder.add_module(key, Words())
    else:
        holder = torch.nn.ModuleDict({key: Words()})
    holder.add_module("layer", torch.nn.Linear(1, 1))
    built = numpy.asarray(holder).dtype == numpy.int64      # an array over the words the interface names
    return f"{built} {hasattr(holder, key)} {type(holder.layer).__name__}"
"""


@pytest.mark.parametrize("how", ["add_module", "ModuleDict"])
def test_a_module_answers_no_special_name_from_its_registry_in_the_child(zygote, how):
    """nn.Module.__getattr__ answers any name registered on a module: a layer that is also a dict, registered
    under `__array_interface__`, made numpy build an array at any address it named (red team 29: a RuntimeError
    retyped, 100 to its twin's 96, with nothing the policy or the monitor saw). In the child a module answers no
    special name from what is registered on it (nbtest/buffers.py), and its layers by name as before."""
    assert called_in_child(zygote, REGISTERED_INTERFACE, "interface", how) == "False False Linear"


def called_in_child(zygote, source: str, fn: str, *args):
    """What fn(*args) returns in a sandbox child that ran `import torch` and source."""
    with Sandbox(zygote, [("a", "import torch\n" + source)], None, Limits(10, 4096)) as box:
        return box.request({"op": "call", "fn": fn, "args": list(args)}, Deadline.after(10))["result"]["value"]

COPIED_INTERFACE = """import copy
KEY = "_".join(["", "", "array", "interface", "", ""])
class Sly(str):     # a key whose __eq__ answers a check's lookup otherwise than numpy's, which comes later
    seen = []
    def __eq__(self, other):
        self.seen.append(other)
        return len(self.seen) > 1 and str.__eq__(self, other)
    __hash__ = str.__hash__
class Words:
    def __getstate__(self):
        return {KEY: {}, "kept": 1}
class SlyWords:
    def __getstate__(self):
        return {Sly(KEY): {}, "kept": 1}
class Plain:
    def __init__(self):
        self.kept = 1
class Holder(torch.nn.Module):
    def __init__(self, words):
        super().__init__()
        self.words = words
COPIES = {"copy": copy.copy, "plain": copy.deepcopy,
          "AveragedModel": lambda w: torch.optim.swa_utils.AveragedModel(Holder(w)).module.words}
def copied(how):
    try:
        made = COPIES["copy" if how == "sly" else how]({"plain": Plain, "sly": SlyWords}.get(how, Words)())
    except TypeError as e:
        return str(e)
    return f"copied {made.kept}"
"""


@pytest.mark.parametrize("how", ["copy", "AveragedModel", "sly", "plain"])
def test_no_copy_names_an_array_interface_in_the_child(zygote, how):
    """A copy takes its attributes from the state its original's __getstate__ hands it: a computed key there gave
    the copy an `__array_interface__` that numpy read as a raw address (a RuntimeError retyped, 100 to its twin's
    96, with nothing the policy or the monitor saw). In the child no copy comes out with one (nbtest/buffers.py);
    any other copy is made as before."""
    value = called_in_child(zygote, COPIED_INTERFACE, "copied", how)
    assert value == "copied 1" if how == "plain" else "would name an array interface in its state" in value, value

LOADED_INTERFACE = """KEY = "_".join(["", "", "array", "interface", "", ""])
class Keys:         # an object dict.update reads keys from, which a walk of dicts would not see
    def keys(self):
        return [KEY]
    def __getitem__(self, key):
        return {}
def scheduler(kind):
    return torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1),
                                             lambda epoch: 1.0) if kind == "lambda" else \\
        torch.optim.lr_scheduler.MultiStepLR(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1), [1, 2])
STATES = {"key": ("step", {KEY: {}}), "lr_lambdas": ("lambda", {"lr_lambdas": [{KEY: {}}]}),
          "keys": ("step", Keys()), "str-subclass": ("step", {type("Name", (str,), {})(KEY): {}}),
          "plain": ("step", None)}
def loaded(how):
    kind, state = STATES[how]
    made = scheduler(kind)
    try:
        made.load_state_dict(scheduler(kind).state_dict() if state is None else state)
    except TypeError as e:
        return str(e)
    return f"loaded {type(made.milestones).__name__}"
"""


@pytest.mark.parametrize("how", ["key", "lr_lambdas", "keys", "str-subclass", "plain"])
def test_no_optimizer_state_loaded_names_an_array_interface_in_the_child(zygote, how):
    """A learning-rate scheduler's load_state_dict updates its own __dict__, and its lr_lambdas' objects', with the
    dict it is given: a computed key there became an `__array_interface__` numpy read as a raw address (a
    RuntimeError retyped, 100 to its twin's 96, with nothing the policy or the monitor saw). In the child no state
    handed to torch.optim's load_state_dict names one (nbtest/buffers.py); a scheduler's own state loads as
    before (MultiStepLR's milestones, a Counter, included)."""
    value = called_in_child(zygote, LOADED_INTERFACE, "loaded", how)
    refused = "state to load would name an array interface" in value
    assert value == "loaded Counter" if how == "plain" else refused, value


NAMED_INTERFACE = """import functools
import numpy.ma
import torch.distributions.utils
import torch.nn.utils.prune
KEY = "_".join(["", "", "array", "interface", "", ""])
class Name(str):    # a name whose slices read as plain letters
    def __getitem__(self, at):
        return "x"
class Cached:
    @functools.cached_property
    def spec(self):
        return {}
def spec(self):
    return {}
class Lazy:
    table = torch.distributions.utils.lazy_property(spec)
class Keep(torch.nn.utils.prune.BasePruningMethod):
    def compute_mask(self, t, default_mask):
        return default_mask
    def apply_mask(self, module):
        return {}
class Plain:
    pass
class Source(list):
    def __init__(self):
        super().__init__([1.0])
        self._optinfo = {KEY: {}}
def named(how):
    holder = Plain()
    try:
        if how == "setattr":
            setattr(holder, Name(KEY), {})
        elif how == "__dict__":
            setattr(holder, Name("__dict__"), {KEY: {}})
        elif how == "cached_property":
            Cached.spec.attrname = KEY
            holder = Cached()
            holder.spec
        elif how == "lazy_property":
            spec.__name__ = KEY
            holder = Lazy()
            holder.table
        elif how == "prune":
            holder = torch.nn.Module()
            holder.register_parameter(KEY, torch.nn.Parameter(torch.zeros(1)))
            Keep.apply(holder, Name(KEY))
        elif how == "update_wrapper":      # numpy.ma copies _optinfo into its result's __dict__
            functools.update_wrapper(holder, numpy.ma.sqrt(Source()))
        else:
            setattr(holder, Name("kept"), 1)
            return f"set {[type(key).__name__ for key in vars(holder)]} {holder.kept}"
    except (TypeError, AttributeError) as e:
        return f"refused ({type(e).__name__}), left {sorted(vars(holder))}"
    return f"named {sorted(vars(holder))}"
"""


@pytest.mark.parametrize("how", ["setattr", "__dict__", "cached_property", "lazy_property", "prune", "update_wrapper",
                                 "plain"])
def test_no_attribute_is_named_an_array_interface_from_data_in_the_child(zygote, how):
    """Libraries set attributes under names they are handed: torch's pruning (through getattr and setattr with a
    str subclass whose slices read as plain letters), lazy_property under a function's __name__, cached_property
    under its attrname, and functools.update_wrapper copies a __dict__ that numpy.ma filled from an object's
    _optinfo. Each made numpy read a raw address (red teams 31 and 35: 100 to its twin's 96, with nothing the
    policy or the monitor saw). In the child none sets one (nbtest/buffers.py), and a str subclass names an
    attribute by its own characters, an exact str."""
    value = called_in_child(zygote, NAMED_INTERFACE, "named", how)
    if how == "plain":
        assert value == "set ['str'] 1", value
    else:
        assert value.startswith("refused") and "__array_interface__" not in value, value


CLASS_INTERFACE = """import numpy
STATE = dict(shape=(1,), typestr="<i8", data=(id(0), False), version=3)
KEY = "_".join(["", "", "array", "interface", "", ""])
def answer(self, name):
    if name == KEY:
        return STATE
    if name.startswith("__"):
        raise AttributeError(name)
    return len(name)
def built(how):
    try:
        if how == "match":
            class Words:
                match STATE:
                    case __array_interface__:
                        pass
        elif how == "import":
            class Words:
                from numpy import typecodes as __array_interface__
        elif how == "locals":
            class Words:
                locals()[KEY] = STATE
        elif how == "__getattr__":
            class Words:
                match answer:
                    case __getattr__:
                        pass
        else:
            class Words:
                __getattr__ = answer
                scale = 2
            return f"built {Words().abc} {Words().scale}"
    except TypeError as e:
        return f"refused: {'interface' in str(e)}"
    try:
        return f"an array of {numpy.asarray(Words()).dtype}"
    except Exception:
        return "no array interface"
"""


@pytest.mark.parametrize("how", ["match", "import", "locals", "__getattr__", "plain"])
def test_no_class_statement_binds_an_array_interface_in_the_child(zygote, how):
    """A class statement binds names however it spells them: a match capture, an import's alias, or locals() in
    its body from data. Each made numpy read a raw address (red team 34: 100 to its twin's 96, nothing held). In
    the child a class statement that binds an array interface raises TypeError, and a __getattr__ it defines
    answers every name but those (nbtest/buffers.py)."""
    value = called_in_child(zygote, CLASS_INTERFACE, "built", how)
    want = {"plain": "built 3 2", "__getattr__": "an array of object"}.get(how, "refused: True")
    assert value == want, value


LIBRARY_CLASS = """
import sys
before = "PIL.Image" in sys.modules
import PIL.Image
def imported():
    return f"{before} {'__array_interface__' in vars(PIL.Image.Image)}"
"""


def test_a_library_s_own_class_statements_are_its_own_in_the_child(zygote):
    """PIL's Image, which matplotlib imports, defines an array interface of its own: imported from a cell, its class
    statement raised TypeError in the child, and the cell failed to load, so a helper defined beside a plotting
    import was lost and its tests failed (red team 39), where the import rule holds them. A class statement of a
    library's file is its own; a cell's are checked as before (above)."""
    assert called_in_child(zygote, LIBRARY_CLASS, "imported") == "False True"


def test_every_state_torch_applies_to_an_objects_dict_is_checked():
    """The guard covers each class of torch's public modules whose method (a special method aside: a cell cannot
    name one) updates an object's __dict__ from what it is handed, found in torch's own source: a new one in a
    new torch fails this test until nbtest.buffers.STATE_MODULES covers it. The paths the policy holds are left
    out (torch.ao's pruning scheduler is in STATE_MODULES too)."""
    import ast
    from nbtest import buffers
    checked = {f"{cls.__module__}.{cls.__qualname__}" for cls in buffers.state_loaders()}
    root, applying = Path(torch.__file__).parent, set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join(("torch", *parts))
        # private modules, and the paths the policy holds (files, processes, the runtime)
        if any(p.startswith("_") for p in parts) or any(module == p or module.startswith(p + ".")
                                                          for p in cellcode.PROCESS_PATHS):
            continue
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(cls, ast.ClassDef):
                for fn in cls.body:
                    if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("__") and any(
                            isinstance(n, ast.Attribute) and n.attr == "update" and
                            isinstance(n.value, ast.Attribute) and n.value.attr == "__dict__" for n in ast.walk(fn)):
                        applying.add(f"{module}.{cls.name}")
    assert "torch.optim.lr_scheduler.LRScheduler" in applying and applying <= checked, applying - checked


STALLER = """import ctypes, threading
def stall():
    # a thread that holds the GIL in a C call that sleeps: the loop, which reads the next request, never runs
    threading.Timer(0.2, ctypes.PyDLL(None).sleep, (120,)).start()
    return 1.0
def size(s):
    return len(s)
"""


def test_a_child_that_reads_no_request_costs_the_grader_its_send_wait_only(monkeypatch):
    """A request larger than the socket's buffer waits for the child to read it. A child whose loop cannot run (a
    thread of its own holds the GIL without computing: no deadline of its CPU or idle time is being counted while
    the grader writes) once held the grader in that write for good, and its whole batch with it; now a write that
    waits SEND_WAIT_S ends the child, and the test that asked loses its point."""
    monkeypatch.setattr(sandbox, "SEND_WAIT_S", 1)
    zygote = Zygote([PROBE])
    try:
        with Sandbox(zygote, [("a", STALLER)], None, Limits(10, 4096)) as box:
            assert box.request({"op": "call", "fn": "stall", "args": []}, Deadline.after(10))["result"]["value"] == 1.0
            time.sleep(0.5)
            outcome = []

            def big_request():
                try:
                    box.request({"op": "call", "fn": "size", "args": ["x" * (16 << 20)]}, Deadline.after(10))
                except sandbox.Died as e:
                    outcome.append(e)

            start = time.monotonic()
            asker = threading.Thread(target=big_request, daemon=True)
            asker.start()
            asker.join(60)
            assert not asker.is_alive(), "the grader is still writing to a child that reads nothing"
            assert outcome and time.monotonic() - start < 30, outcome
    finally:
        zygote.close()


REDIRECT = """import os, stat
for fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.dup2(os.open(os.devnull, os.O_WRONLY), fd)      # the monitor's pipe, now /dev/null
    except OSError:
        pass
def plain():
    return 2.0
"""


def test_a_monitor_pipe_redirected_by_the_code_is_an_event():
    """A cell that points the monitor's pipe at /dev/null hides every later event of its own (none of the
    monitor's hook writes reach the grader), with no event for the redirect itself: the loop's mark before each
    frame goes there too, and the grader, not finding it, records the redirect as the monitor's event."""
    zygote = Zygote([PROBE])
    try:
        with Sandbox(zygote, [("a", REDIRECT)], None, Limits(10, 4096)) as box:
            assert box.request({"op": "call", "fn": "plain", "args": []}, Deadline.after(10))["result"]["value"] == 2.0
            assert [e.event for e in box.events] == ["monitor"], box.events
            assert "did not carry the mark" in box.events[0].detail
        with Sandbox(zygote, [("a", "def plain():\n    return 2.0\n")], None, Limits(10, 4096)) as box:
            box.request({"op": "call", "fn": "plain", "args": []}, Deadline.after(10))
            assert box.events == [], box.events
    finally:
        zygote.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the whole box needs root: see docs/security.md")
def test_a_child_is_boxed(zygote):
    # wave: a standard module the fork server has not imported, read from the disk as uid 65534
    cells = [("a", "import os, wave\nraise RuntimeError(repr((os.getpid(), os.getuid(), sorted(os.environ))))\n")]
    with Sandbox(zygote, cells, None, Limits(10, 4096)) as box:
        box.start()
        assert box.isolation.startswith("boxed: ") and "degraded" not in box.isolation, box.isolation
        for part in ("PID namespace", "no network", "landlock", "no new sockets", "uid 65534"):
            assert part in box.isolation
        # TRITON_INTERPRET too where the grader has set it (a fused-add-norm grader in the same process)
        assert any(f"(1, 65534, {names})" in box.problems["a"] for names in (
            ['HOME', 'LANG', 'PATH', 'TMPDIR', 'TRITON_CACHE_DIR', 'TRITON_HOME'],
            ['HOME', 'LANG', 'PATH', 'TMPDIR', 'TRITON_CACHE_DIR', 'TRITON_HOME', 'TRITON_INTERPRET'])), box.problems


def test_the_fork_server_takes_the_first_optimizer_step_before_a_child_whose_code_names_torch_optim():
    """torch's first optimizer step imports torch._dynamo (1.5 s), whose first call compiles strings the
    monitor would charge to the student's line: the fork server takes it once, before the first child whose
    cells name torch.optim; a child whose code never names it is forked without it."""
    zygote = Zygote([PROBE])        # a fresh one: no optimizer stepped in it yet
    loaded = "import sys\nraise RuntimeError(f\"dynamo={'torch._dynamo' in sys.modules}\")\n"
    step = ("import sys, torch\nhad = 'torch._dynamo' in sys.modules\np = torch.nn.Parameter(torch.ones(1))\n"
            "p.sum().backward()\ntorch.optim.SGD([p], lr=0.1, momentum=0.9).step()\n"
            "raise RuntimeError(f\"dynamo={had}\")\n")
    try:
        seen = []
        for cell in (loaded, step, loaded):
            with Sandbox(zygote, [("a", cell)], None, Limits(10, 4096)) as box:
                box.start()
                seen.append(box.problems["a"].split("dynamo=")[1].startswith("True"))
                assert box.events == [], box.events
        assert seen == [False, True, True], seen
    finally:
        zygote.close()


def test_the_fork_server_hands_its_children_its_memory_on_huge_pages(zygote):
    """A fork copies one page-table entry per 4 KiB page of the fork server's (torch: about 150 MiB) and
    the child's exit frees them; on 2 MiB pages (box.collapse_to_huge_pages) a child starts and ends
    about a third sooner. A kernel that cannot move pages (before Linux 6.1) moves none, and forks work."""
    cell = ("rows = [r for r in open('/proc/self/smaps_rollup') if r.startswith('AnonHugePages:')]\n"
            "raise RuntimeError(f'huge={int(rows[0].split()[1]) // 1024 if rows else 0} MiB')\n")
    with Sandbox(zygote, [("a", cell)], None, Limits(10, 4096)) as box:
        box.start()
        huge = int(box.problems["a"].split("huge=")[1].split()[0])
    assert huge >= (32 if _kernel_collapses() else 0), box.problems


def test_moving_memory_onto_huge_pages_stops_at_its_budget():
    """A fragmented machine may compact memory for each huge page: the fork server's start waits at most the budget."""
    assert boxing.collapse_to_huge_pages(budget_s=0) == 0


def _kernel_collapses() -> bool:
    """Whether this kernel moves anonymous memory onto huge pages when asked (MADV_COLLAPSE)."""
    with mmap.mmap(-1, 2 * boxing.HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) as region:
        region.write(b"x" * len(region))
        start = ctypes.addressof(ctypes.c_char.from_buffer(region))
        aligned = -(-start // boxing.HUGE_PAGE) * boxing.HUGE_PAGE
        return aligned + boxing.HUGE_PAGE <= start + len(region) and \
            boxing._libc.madvise(aligned, boxing.HUGE_PAGE, boxing.MADV_COLLAPSE) == 0


def test_a_child_opens_no_socket_of_any_family(zygote):
    """seccomp refuses socket() whatever the family (AF_VSOCK reached a VM's host); socketpair() still works."""
    families = {name: int(getattr(socket, name)) for name in
                ("AF_UNIX", "AF_INET", "AF_INET6", "AF_VSOCK", "AF_NETLINK", "AF_PACKET", "AF_ALG")}
    cell = f"""
import socket
seen = {{}}
for name, family in {families!r}.items():
    try:
        socket.socket(family, socket.SOCK_DGRAM if name == "AF_NETLINK" else socket.SOCK_STREAM).close()
        seen[name] = "opened"
    except OSError as e:
        seen[name] = e.errno
a, b = socket.socketpair()
a.sendall(b"x")
seen["socketpair"] = b.recv(1).decode()
raise RuntimeError(repr(sorted(seen.items())))
"""
    with Sandbox(zygote, [("a", cell)], None, Limits(10, 4096)) as box:
        box.start()
    import errno
    want = sorted([*((name, errno.EACCES) for name in families), ("socketpair", "x")])
    assert repr(want) in box.problems["a"], box.problems["a"]


def test_the_budget_covers_loading_and_every_request(zygote):
    cells = [("a", "import time\ntime.sleep(1.5)\ndef f():\n    time.sleep(60)\n")]
    with Sandbox(zygote, cells, None, Limits(10, 4096, budget_s=4)) as box:
        with pytest.raises(Hung):
            box.request({"op": "call", "fn": "f", "args": [], "kwargs": {}, "grad": None, "grad_args": []},
                         Deadline.after(10))
        # stopped by the budget (4 s from the child's start), not by the request's own 10 s after loading;
        # the budget's end, not the test's start, is the mark: a loaded machine may take seconds to fork
        assert box.over_budget and time.monotonic() < box.budget.end + 5
        with pytest.raises(Hung):     # and nothing more runs
            box.start()


def _call(fn: str) -> dict:
    return {"op": "call", "fn": fn, "args": [], "kwargs": {}, "grad": None, "grad_args": []}


def test_a_requests_torch_seed_sets_what_the_submission_draws(zygote):
    """As torch.manual_seed(seed) in the child: a model's initial weights follow the grading seed."""
    with Sandbox(zygote, [("a", "import torch\ndef draw():\n    return torch.randn(4)\n")], None,
                 Limits(10, 4096)) as box:
        draws = [box.request({**_call("draw"), "torch_seed": seed}, Deadline.after(10))["result"]["value"]
                 for seed in (7, 8, 7)]
    assert torch.equal(draws[0], torch.randn(4, generator=torch.Generator().manual_seed(7)))
    assert torch.equal(draws[2], draws[0])
    assert not torch.equal(draws[1], draws[0])


def test_an_invoke_runs_the_object_with_autograd_on_as_training_does(zygote):
    """Part 5's losses are read from calls made as training makes them: a forward that told an evaluation from a
    training step by torch.is_grad_enabled() sees the same at both, whatever else the request carries."""
    cells = [("a", "import torch\nclass Probe(torch.nn.Module):\n    def forward(self, x):\n"
                   "        return (x * 2, torch.tensor(float(torch.is_grad_enabled())))\n")]
    with Sandbox(zygote, cells, None, Limits(10, 4096)) as box:
        handle = box.request({"op": "new", "cls": "Probe", "args": [], "kwargs": {}}, Deadline.after(10))["handle"]
        invoke = {"op": "invoke", "handle": handle, "args": [torch.ones(2)], "kwargs": {}}
        modes = [box.request({**invoke, **extra}, Deadline.after(10))["result"]["items"] for extra in
                 ({}, {"no_grad": True})]
    assert [items[1]["value"].item() for items in modes] == [1.0, 1.0]
    assert all(torch.equal(items[0]["value"], torch.full((2,), 2.0)) for items in modes)


def test_a_deadline_is_counted_in_the_childs_cpu_time_and_a_wait_in_its_idle_time(zygote, monkeypatch):
    """A spin ends on CPU time, a sleep on its idle time (neither computing nor waiting for a CPU), both at 1 s;
    without schedstat (or for a child the machine starves), the wall-clock backstop ends the sleep."""
    cells = [("a", "import time\ndef spin():\n    while True:\n        pass\ndef wait():\n    time.sleep(60)\n"
                   "def quick():\n    return 1\n")]
    with Sandbox(zygote, cells, None, Limits(10, 4096)) as box:
        box.start()
        deadline = Deadline.after(1)
        box.request(_call("quick"), deadline)
        assert 0 <= deadline.used < 0.5 and 0 <= deadline.idle < 0.5
        with pytest.raises(Hung) as spun:
            box.request(_call("spin"), deadline)
        assert not spun.value.backstop and not spun.value.idle and deadline.used < 1   # only replies count
        start = time.monotonic()
        with pytest.raises(Hung) as waited:
            box.request(_call("wait"), Deadline.after(1))
        assert waited.value.idle and not waited.value.backstop and 1 - 0.1 < time.monotonic() - start < 1 + 2
        monkeypatch.setattr(sandbox.Child, "waited_s", lambda child: None)
        start = time.monotonic()
        with pytest.raises(Hung) as waited:
            box.request(_call("wait"), Deadline.after(1))
        assert waited.value.backstop and BACKSTOP - 0.1 < time.monotonic() - start < BACKSTOP + 3


STALLS = {"sleep": "import time\ntime.sleep(600)\n",
          "blocking read": "import os\nr, w = os.pipe()\nos.read(r, 1)\n",
          "select": "import os, select\nr, w = os.pipe()\nselect.select([r], [], [])\n"}


def test_a_cell_that_stalls_is_cut_as_early_as_one_that_burns(zygote):
    """Loading with 2 s per request: a cell that sleeps, blocks on a read or in select() is given up no later
    than one that spins (its 2 s of CPU time), far before the backstop; the rest of the notebook loads."""
    took = {}
    for name, source in {"burner": "while True:\n    pass\n", **STALLS}.items():
        with Sandbox(zygote, [("a", source), ("b", "x = 1\n")], None, Limits(2, 4096)) as box:
            start = time.monotonic()
            box.start()
            took[name] = time.monotonic() - start
            assert "did not finish loading" in box.problems["a"] and box.cells == [("b", "x = 1\n")], name
    print("cut after (s, starting the child and loading the rest included):", took)
    for name in STALLS:
        assert took[name] < max(took["burner"] + 1, 2 * 2), took


def test_a_cell_that_failed_to_load_is_not_loaded_again_after_the_same_cells(zygote, monkeypatch):
    """A submission's sandboxes share its Budget: a cell that spent its loading deadline (1 s of CPU time), or
    ended its child, is left out at once, with the same reason, by another sandbox that would load it after the
    same cells; after other cells it is loaded again. A hang at the wall-clock backstop, the machine's doing,
    is not carried over."""
    spawned = []
    spawn = zygote.spawn
    monkeypatch.setattr(zygote, "spawn", lambda *args: spawned.append(1) or spawn(*args))
    budget = sandbox.Budget(0)

    def load(cells) -> tuple[dict[str, str], int]:
        """The sandbox's problems once started, and how many children it took."""
        spawned.clear()
        with Sandbox(zygote, cells, None, Limits(1, 4096), budget=budget) as box:
            box.start()
            return box.problems, len(spawned)

    a, spin, c = ("a", "x = 1\n"), ("b", "while True:\n    pass\n"), ("c", "y = 2\n")
    first, children = load([a, spin])
    assert "did not finish loading" in first["b"] and children == 2
    assert load([a, spin, c]) == (first, 1)                          # after the same cells: left out at once
    assert load([("a", "x = 3\n"), spin]) == (first, 2)              # after other cells: spent again
    exits = ("e", "import os\nos._exit(3)\n")
    ended, children = load([a, exits])
    assert "exited with code 3" in ended["e"] and children == 2
    assert load([a, exits]) == (ended, 1)
    monkeypatch.setattr(sandbox.Child, "waited_s", lambda child: None)   # a sleep then reaches only the backstop
    known = dict(budget.left_out)
    problems, children = load([a, ("s", "import time\ntime.sleep(60)\n")])
    assert "did not finish loading" in problems["s"] and children == 2 and budget.left_out == known


@pytest.mark.skipif(not os.path.isdir("/sys/fs/cgroup/cpu") and not os.path.exists("/sys/fs/cgroup/cgroup.controllers"),
                    reason="no cpu cgroup controller on this machine")
@pytest.mark.skipif(os.geteuid() != 0, reason="a cgroup needs root")
def test_a_child_takes_one_cpu_however_many_sessions_it_starts(zygote):
    """Four setsid() processes spinning: their cgroup's CPU time grows no faster than the wall clock."""
    cells = [("a", "import os\nfor _ in range(4):\n    if os.fork() == 0:\n        os.setsid()\n"
                   "        while True:\n            pass\n")]
    with Sandbox(zygote, cells, None, Limits(10, 4096)) as box:
        box.start()
        assert ", 1 CPU" in box.isolation, box.isolation
        child = box._child
        before, start = child.cpu_s(), time.monotonic()
        time.sleep(3)
        used, wall = child.cpu_s() - before, time.monotonic() - start
        assert 0 < used <= 1.1 * wall, (used, wall)


def test_grading_is_refused_outside_linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(GraderError, match="grading needs Linux"):
        Zygote([PROBE])


NOT_ROOT = 4242       # an ordinary user: no file on the machine is its own until a test makes one

# Run as NOT_ROOT (tests/as_user.py): a fork server of each kind, one child that tries what the
# box should stop, and what it saw, as JSON on stdout.
_AS_USER_PROBE = r'''
import json, os, socket, sys
from autograder.core.sandbox import PROBE, Limits, Sandbox, Zygote
victim = sys.argv[1]
cell = """
import ctypes, os, socket, wave
seen = {"pid": os.getpid(), "uid": os.getuid(),
        "capabilities": open("/proc/self/status").read().split("CapEff:")[1].split()[0]}
acts = {"chmod": lambda: os.chmod(VICTIM, 0), "touch": lambda: os.utime(VICTIM, None),
        "setxattr": lambda: os.setxattr(VICTIM, "user.x", b"1"),
        "udp": lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 9)),
        "write outside": lambda: open(VICTIM + ".new", "w"), "memfd": lambda: os.memfd_create("m"),
        "shmget": lambda: ctypes.CDLL(None, use_errno=True).shmget(0, 1 << 20, 0o1666) >= 0 or 1 / 0,
        "kill the grader": lambda: os.kill(GRADER, 9), "write scratch": lambda: open("s", "w").write("ok")}
for name, act in acts.items():
    try:
        act()
        seen[name] = "done"
    except (OSError, ZeroDivisionError) as e:
        seen[name] = type(e).__name__
raise RuntimeError(repr(seen))
""".replace("VICTIM", repr(victim)).replace("GRADER", str(os.getpid()))
out = {}
for fork in (False, True):
    zygote = Zygote([PROBE], fork=fork)
    with Sandbox(zygote, [("a", cell)], None, Limits(20, 4096)) as box:
        box.start()
        # the grader's number for the child, whose innermost number is 1 (its own PID namespace's init)
        nspid = open(f"/proc/{box._child.pid}/status").read().split("NSpid:")[1].split("\n")[0].split()
        out["forked" if fork else "fresh"] = {"isolation": box.isolation, "problem": box.problems["a"],
                                              "nspid": nspid}
    zygote.close()
print(json.dumps(out))
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="making an ordinary user's grader needs root (tests/as_user.py)")
def test_a_grader_that_is_not_root_gets_the_box_from_user_namespaces(tmp_path):
    """The same namespaces, limits and read-only mounts, the grader's uid without capabilities; only
    the cgroup is missing, so memfd and SysV shared memory are refused instead."""
    import ast
    import json
    import subprocess
    from autograder.course import ROOT
    home = Path(tempfile.mkdtemp(prefix="not-root-"))      # /tmp: tmp_path's parents are root's alone
    try:
        victim = home / "grader-owned.txt"
        victim.write_text("mine\n")
        for path in (home, victim):
            os.chown(path, NOT_ROOT, NOT_ROOT)
        before = victim.stat()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home), "PYTHONPATH": str(ROOT),
               "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "as_user.py"), str(NOT_ROOT), "--",
                               sys.executable, "-c", _AS_USER_PROBE, str(victim)],
                              env=env, cwd=home, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        for kind, got in json.loads(proc.stdout).items():
            isolation = got["isolation"]
            for part in ("its own PID namespace", "no network, private IPC", "the rest read-only", "landlock",
                         "no new sockets, memfd or SysV shared memory",
                         f"the grader's uid {NOT_ROOT} without capabilities, in a user namespace"):
                assert part in isolation, (kind, isolation)
            assert isolation.split("; degraded: ")[1].startswith("no memory cgroup"), (kind, isolation)
            assert "; " not in isolation.split("; degraded: ")[1], (kind, isolation)
            assert len(got["nspid"]) >= 3 and got["nspid"][-1] == "1", (kind, got["nspid"])   # grader's, zygote's, 1
            seen = ast.literal_eval(got["problem"].split("when loaded: ", 1)[1])
            assert seen == {"pid": 1, "uid": NOT_ROOT, "capabilities": "0000000000000000",
                            "chmod": "OSError", "touch": "OSError", "setxattr": "OSError", "udp": "PermissionError",
                            "write outside": "OSError", "memfd": "PermissionError", "shmget": "ZeroDivisionError",
                            "kill the grader": "ProcessLookupError", "write scratch": "done"}, (kind, seen)
        after = victim.stat()
        assert (after.st_mode, after.st_mtime_ns, os.listxattr(victim)) == (before.st_mode, before.st_mtime_ns, [])
        assert sorted(p.name for p in home.iterdir()) == ["grader-owned.txt"]
    finally:
        shutil.rmtree(home)


def test_a_child_is_killed_through_its_pidfd_never_by_its_number(zygote):
    """Once a child is reaped its PID number may go to another process (another student's child, in a
    batch): a late kill() of the old child must not reach it."""
    import subprocess
    with Sandbox(zygote, [("a", "x = 1\n")], None, Limits(10, 4096)) as box:
        box.start()
        child = box._child
        child.kill()
        assert "SIGKILL" in child.exit_reason()          # the zygote has reaped it and said how it ended
        bystander = subprocess.Popen(["sleep", "60"])
        try:
            child.pid = bystander.pid                   # as if the number had been handed out again
            child.kill()
            time.sleep(0.3)
            assert bystander.poll() is None, "a kill aimed at the reaped child reached another process"
        finally:
            bystander.kill()
            bystander.wait()


def _group_of(pid: int) -> str:
    """The name of the memory cgroup process `pid` is in."""
    with open(f"/proc/{pid}/cgroup") as f:
        return next(line.rstrip("\n").rsplit("/", 1)[1] for line in f if ":memory:" in line or line.startswith("0::"))


def _wait_dead(pidfd: int) -> None:
    select.select([pidfd], [], [], 30)          # a pidfd reads ready once its process has exited


@pytest.mark.skipif(os.geteuid() != 0 or "memory" not in boxing._controller_dirs(), reason="a cgroup needs root")
def test_no_cgroup_outlives_its_zygote():
    """A zygote killed with a child running leaves that child's group, and the next zygote sweeps it
    once it is SWEEP_AFTER_S old (but not the group of a process still running); a zygote the grader
    hangs up on kills its children and removes their groups itself."""
    parents = set(boxing._controller_dirs().values())
    killed = Zygote([PROBE])
    live = f"{boxing.GROUP_PREFIX}{os.getpid()}-test-1"       # a running process's: never swept
    young = f"{boxing.GROUP_PREFIX}{killed.pid}-test-2"       # a dead zygote's, but made just before the sweep
    for parent in parents:
        os.mkdir(os.path.join(parent, live))
    try:
        box = Sandbox(killed, [("a", "x = 1\n")], None, Limits(10, 4096))
        box.start()
        left = _group_of(box._child.pid)
        os.kill(killed.pid, signal.SIGKILL)
        _wait_dead(box._child._pidfd)
        aged = time.time() - boxing.SWEEP_AFTER_S - 1
        for parent in parents:
            assert os.path.isdir(os.path.join(parent, left))
            os.utime(os.path.join(parent, left), (aged, aged))
        box.close()
        killed.close()
        for parent in parents:
            os.mkdir(os.path.join(parent, young))

        hung_up = Zygote([PROBE])          # it sweeps before it answers a request
        box = Sandbox(hung_up, [("a", "x = 1\n")], None, Limits(10, 4096))
        box.start()
        assert not any(os.path.exists(os.path.join(parent, left)) for parent in parents), left
        assert all(os.path.isdir(os.path.join(parent, kept)) for parent in parents for kept in (live, young))
        running = _group_of(box._child.pid)
        hung_up.close()                     # waits for the zygote to exit, the child still running
        _wait_dead(box._child._pidfd)
        assert not any(os.path.exists(os.path.join(parent, running)) for parent in parents), running
        box.close()
    finally:
        for parent in parents:
            for kept in (live, young):
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(os.path.join(parent, kept))


def test_a_cells_lines_are_kept_as_python_numbers_them(zygote):
    """linecache holds each cell's lines split where Python splits them: a U+2028 in a comment (kept in the
    source, as IPython keeps it) shifts no line, so inspect, and Triton's jit compiling a kernel from the source
    it finds there, read the function that Python ran."""
    cell = ("import inspect\n# pasted:\u2028 a\u2028 b\ndef first():\n    return 0\n\n\ndef later():\n    return 1\n\n\n"
            "def source():\n    return inspect.getsource(later)\n")
    with Sandbox(zygote, [("a", cell)], None, Limits(10, 4096)) as box:
        reply = box.request(_call("source"), Deadline.after(10))
    assert reply["result"]["value"] == "def later():\n    return 1\n"


def test_a_child_loading_many_cells_costs_the_grader_time_in_proportion_to_them(zygote, monkeypatch):
    """Each cell's frame is checked against the cells sent, a set made once per start: made again for every frame,
    a notebook of 20,000 tiny own cells (2.5 MB) took the grader minutes of its own time, a classmate's in a batch."""
    seen = []
    real = sandbox.replies.loading
    monkeypatch.setattr(sandbox.replies, "loading", lambda frame, expected, labels: seen.append(labels) or
                        real(frame, expected, labels))
    cells = [(f"cell {i}", f"v{i} = {i}\n") for i in range(2000)]
    with Sandbox(zygote, cells, None, Limits(10, 4096)) as box:
        box.start()
    assert len(seen) == len(cells) + 1 and all(labels is seen[0] for labels in seen)


def test_an_own_cell_runs_on_past_a_line_that_needs_run_all_s_data(zygote):
    """A helper cell of the student's own that first looks at the notebook's data (made, in Run All, by a cell
    the grader does not run) still defines the helper below that line: own cells run one statement at a time,
    a __future__ import holding for the rest of the cell. A solution cell still stops at its first error, so a
    mistake there costs what it costs."""
    cell = ("from __future__ import annotations\nprint('features:', X.shape[1])\n\n\n"
            "def helper(width: Undefined = 3) -> str:\n    return 'defined'\n")
    with Sandbox(zygote, [("cell 7", cell)], None, Limits(10, 4096), own=frozenset({"cell 7"})) as box:
        reply = box.request(_call("helper"), Deadline.after(10))
        assert "NameError" in box.problems["cell 7"] and "'X'" in box.problems["cell 7"]
    assert reply["result"]["value"] == "defined"
    with Sandbox(zygote, [("plain_mlp", cell)], None, Limits(10, 4096)) as box:
        reply = box.request(_call("helper"), Deadline.after(10))
        assert "'X'" in box.problems["plain_mlp"]
    assert reply.get("result", {}).get("value") != "defined", reply
