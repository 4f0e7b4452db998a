"""Inputs the grader reads back itself: a call's tensor arguments in shared memory.

"Leaves its inputs unchanged" used to rest on the child's report of its arguments after
the call. For the arguments a request names in "readback", the grader instead writes
each tensor into one memfd, sends the child that file descriptor beside the request,
and the child calls the submission on views of its own mapping of it.

The memfd holds two halves of `size` bytes: the inputs, then what the call left of them.
The function is handed no view of either: each argument is an ordinary copy of the inputs'
values in torch's own memory (`hand`), like any other tensor it is handed, so no property of
the storage (a buffer that cannot be resized, a page-aligned address) tells a call whose inputs
are read back from one whose are not. The child copies what the call left in each copy onto its
place in the second half the moment the call returns (`keeping`), with the garbage collector off
since before the call, so that no finaliser or weakref callback of the student's runs between
the return and the copy, and nothing the student can name reaches the memfd. After every later
request the child copies them onto the first half again (`refresh`), where the grader sees a
write made through a reference the code kept (`written_later`).

Every `call` request places every top-level tensor argument it can here, not only those its
test reads back (`watched`, kit/trial.py): every call then runs alike (the collector off, the
arguments copies), and a change to the inputs of any call of a function is seen, so a function
that counts its calls cannot change its inputs at every call but the one a test reads back (the
grader charges such a change to the tests that read that function's inputs back: grading/grader.py).
The grader never maps the memfd: it writes it with pwrite and reads the second half with
pread, and it is sealed against shrinking and growing before the child gets it, so a read
can neither fault (SIGBUS) nor come up short.

    arena = Arena.of(request)          # None when the request has nothing to read back
    child.send(arena.request, fd=arena.fd)
    ...                                # the child answers
    after = arena.read()               # {argument index: tensor as the call left it}
    arena.changed()                    # whether the call left any of them changed
    arena.written_later()              # later, after other requests: whether the code wrote the inputs since

In the child (probe.serve_request), each such argument arrives as
{"arena": [offset, dtype, shape, stride]}, and `hand` makes the copy the function is handed.
"""
from __future__ import annotations

import fcntl
import gc
import mmap
import os

import torch

ALIGN = 64                   # bytes; every tensor starts on a cache line
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL   # writes stay allowed: the call may make them
_DTYPES = {str(d): d for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
                               torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)}
# the child's side, bound before any student code runs there
_frombuffer, _as_strided = torch.frombuffer, torch.Tensor.as_strided
_mmap, _fstat, _close, _len, _type = mmap.mmap, os.fstat, os.close, len, type
_gc_disable, _gc_enable, _gc_isenabled = gc.disable, gc.enable, gc.isenabled
_Tensor, _clone, _copy, _zero, _no_grad = torch.Tensor, torch.Tensor.clone, torch.Tensor.copy_, torch.Tensor.zero_, torch.no_grad
_shape_of, _dtype_of, _stride = torch._C.TensorBase.shape.__get__, torch._C.TensorBase.dtype.__get__, torch.Tensor.stride
_detach, _storage, _offset = torch.Tensor.detach, torch.Tensor.untyped_storage, torch.Tensor.storage_offset
_storage_ptr = torch.UntypedStorage.data_ptr


class ArenaError(Exception):
    """The memfd no longer holds what the grader placed (it cannot shrink once sealed: a kernel without seals)."""


class Arena:
    """The memfd that carries one request's read-back arguments; the grader writes and reads it, never maps it."""

    def __init__(self, request: dict, places: dict[int, tuple[int, torch.Tensor]], size: int):
        self.size = size
        # {argument index: [offset, dtype, shape, stride]}, as the child is told and the grader reads back
        self._specs = {i: [offset, str(t.dtype), list(t.shape), list(t.stride())] for i, (offset, t) in places.items()}
        inputs = bytearray(size)
        args = list(request["args"])
        for i, spec in self._specs.items():
            view(inputs, spec).copy_(places[i][1])
            args[i] = {"arena": spec}
        self.fd = os.memfd_create("autograder-inputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, 2 * size)       # the second half, zeros until the child keeps the call's
            if os.pwrite(self.fd, inputs, 0) != size:
                raise OSError("short write to the arena")
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, SEALS)
        except BaseException:
            os.close(self.fd)
            raise
        self.request = {**request, "args": args, "arena": True}
        self._placed = bytes(inputs)      # the inputs as the grader wrote them, for changed and written_later
        self.fn = request.get("fn")      # the function called, and whether its test reads these inputs back
        self.claimed = bool(request.get("readback"))

    @classmethod
    def of(cls, request: dict) -> "Arena | None":
        """The arena for request["readback"] (indices of tensor arguments, each one that can be read back)
        and request["watched"] (indices of the others, those that can be); None if there is nothing to
        place, or the request runs on a device other than the CPU (the child copies there)."""
        wanted, args = request.get("readback") or [], request.get("args", [])
        if request.get("device") not in (None, "cpu"):
            return None
        for i in wanted:
            if not readable(args[i]):
                raise ValueError(f"argument {i} cannot be read back: a non-empty dense tensor is needed")
        wanted = [*wanted, *(i for i in request.get("watched") or () if i not in wanted and readable(args[i]))]
        if not wanted:
            return None
        places, size = {}, 0
        for i in wanted:
            tensor = args[i]
            places[i] = (size, tensor)
            size += -(-tensor.numel() * tensor.element_size() // ALIGN) * ALIGN
        return cls(request, places, size)

    def read(self) -> dict[int, torch.Tensor]:
        """{argument index: what the call left in its place}, from the half the child kept when the call
        returned (zeros where it kept nothing). Read with pread: a copy, never a live mapping."""
        kept = bytearray(os.pread(self.fd, self.size, self.size))
        if len(kept) != self.size:
            raise ArenaError(f"the shared inputs shrank to {os.fstat(self.fd).st_size} bytes")
        return {i: view(kept, spec).clone() for i, spec in self._specs.items()}

    def changed(self) -> bool:
        """Whether what the call left of the inputs differs from what the grader wrote (zeros where the child
        kept nothing): the call changed one. Read with pread, as read."""
        return os.pread(self.fd, self.size, self.size) != self._placed

    def written_later(self) -> bool:
        """Whether the inputs' half no longer holds what the grader wrote: the child's code kept a view and
        wrote through it after the call returned (at a later call, in a later test). Read with pread, as read."""
        return os.pread(self.fd, self.size, 0) != self._placed

    def close(self) -> None:
        os.close(self.fd)


def readable(value) -> bool:
    """Whether an argument can be placed here: a non-empty dense plain tensor of a dtype the arena knows."""
    return type(value) is torch.Tensor and str(value.dtype) in _DTYPES and bool(value.numel()) and _dense(value)


def _dense(tensor: torch.Tensor) -> bool:
    """Its elements fill numel places with no gap or overlap (its strides a permutation of contiguous ones)."""
    span = 1
    for d in sorted(range(tensor.dim()), key=tensor.stride):
        if tensor.shape[d] != 1 and tensor.stride(d) != span:
            return False
        span *= tensor.shape[d]
    return True


def view(buffer, spec: list) -> torch.Tensor:
    """The tensor [offset, dtype, shape, stride] over `buffer` (an mmap, a bytearray): the same bytes on both
    sides. A dense layout (a permutation of contiguous strides) spans exactly numel elements from offset,
    and the tensor's storage is that slice of the buffer alone."""
    offset, dtype, shape, stride = spec
    dtype = _DTYPES[dtype]
    count = 1
    for n in shape:
        count *= n
    return _as_strided(_frombuffer(buffer, dtype=dtype, count=count, offset=offset), shape, stride)


def child_map(fd: int):
    """The child's mapping of the arena it was sent (the descriptor is closed: the mapping keeps it)."""
    try:
        return _mmap(fd, _fstat(fd).st_size)
    finally:
        _close(fd)


class Handed:
    """One read-back argument in the child: `given`, the ordinary tensor the function is handed (a copy of the
    inputs' values in torch's own memory); `memory`, the probe's own view of that memory, which keeps it alive; and
    the views of its place in the inputs' half and the kept half."""
    __slots__ = ("given", "memory", "inputs", "kept")

    def __init__(self, given, inputs, kept):
        self.given, self.memory, self.inputs, self.kept = given, _detach(given), inputs, kept


def hand(buffer, spec: list) -> Handed:
    """The argument at `spec` of the child's mapping `buffer`: a copy to hand the function (its strides kept),
    and the views it is copied onto."""
    inputs = view(buffer, spec)
    return Handed(_clone(inputs), inputs, view(buffer, [spec[0] + _len(buffer) // 2, *spec[1:]]))


def _put(handed: Handed, target) -> None:
    """target := the handed tensor, or zeros where it is no longer a plain tensor of target's shape, dtype and
    strides over the memory it was handed (resized, retyped, given another storage by .data or set_: changed, and
    zeros are not the grader's inputs). A tensor moved onto a clean copy would leave what the call wrote in its own
    memory, which the caller's other views of it see, out of the read-back."""
    given = handed.given
    with _no_grad():
        try:
            if _type(given) is _Tensor and _shape_of(given) == _shape_of(target) and \
                    _dtype_of(given) == _dtype_of(target) and _stride(given) == _stride(target) and \
                    _storage_ptr(_storage(given)) == _storage_ptr(_storage(handed.memory)) and \
                    _offset(given) == _offset(handed.memory):
                _copy(target, given)
                return
        except BaseException:
            pass
        _zero(target)


def keeping(fn, handed: list):
    """fn, called with the garbage collector off, what it left of each handed argument copied onto the kept
    half as soon as it returns: before any code of the student's can run again (a finaliser, a weakref
    callback, a backward pass, the arguments dying) and put the inputs back."""
    def called(*args, **kwargs):
        enabled = _gc_isenabled()
        _gc_disable()
        try:
            result = fn(*args, **kwargs)
            for h in handed:
                _put(h, h.kept)
            return result
        finally:
            if enabled:
                _gc_enable()
    return called


def refresh(handed: list) -> None:
    """Each handed argument copied onto the inputs' half, as it is now: after every request, so that a write
    made later through a reference the code kept is where the grader reads the inputs again (written_later)."""
    for h in handed:
        _put(h, h.inputs)
