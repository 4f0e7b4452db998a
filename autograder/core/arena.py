"""Inputs the grader reads back itself: a call's tensor arguments in shared memory.

"Leaves its inputs unchanged" used to rest on the child's report of its arguments after
the call. For the arguments a request names in "readback", the grader instead writes
each tensor into one memfd, sends the child that file descriptor beside the request,
and the child calls the submission on views of its own mapping of it.

The memfd holds two halves of `size` bytes: the inputs, then what the call left of them.
The child copies the first half onto the second the moment the call returns (`keeping`),
with the garbage collector off since before the call, so that no finaliser or weakref
callback of the student's runs between the return and the copy, and nothing the student
can name reaches the second half (each view's storage is its own slice of the first).
The grader never maps the memfd: it writes it with pwrite and reads the second half with
pread, and it is sealed against shrinking and growing before the child gets it, so a read
can neither fault (SIGBUS) nor come up short.

    arena = Arena.of(request)          # None when the request has nothing to read back
    child.send(arena.request, fd=arena.fd)
    ...                                # the child answers
    after = arena.read()               # {argument index: tensor as the call left it}
    arena.written_later()              # later, after other requests: whether the code wrote the inputs since

In the child (probe.serve_request), each such argument arrives as
{"arena": [offset, dtype, shape, stride]}, and `view` makes it a tensor over the mapping.
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
_mmap, _fstat, _close, _move, _len = mmap.mmap, os.fstat, os.close, mmap.mmap.move, len
_gc_disable, _gc_enable, _gc_isenabled = gc.disable, gc.enable, gc.isenabled


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
        self._placed = bytes(inputs)      # the inputs as the grader wrote them, for written_later

    @classmethod
    def of(cls, request: dict) -> "Arena | None":
        """The arena for request["readback"] (indices of tensor arguments); None if there is nothing to
        place: no such key, or the request runs on a device other than the CPU (the child copies there)."""
        wanted, args = request.get("readback") or [], request.get("args", [])
        if not wanted or request.get("device") not in (None, "cpu"):
            return None
        places, size = {}, 0
        for i in wanted:
            tensor = args[i]
            if type(tensor) is not torch.Tensor or str(tensor.dtype) not in _DTYPES or not tensor.numel() \
                    or not _dense(tensor):
                raise ValueError(f"argument {i} cannot be read back: a non-empty dense tensor is needed")
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

    def written_later(self) -> bool:
        """Whether the inputs' half no longer holds what the grader wrote: the child's code kept a view and
        wrote through it after the call returned (at a later call, in a later test). Read with pread, as read."""
        return os.pread(self.fd, self.size, 0) != self._placed

    def close(self) -> None:
        os.close(self.fd)


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


def keeping(fn, buffer):
    """fn, called with the garbage collector off, the inputs' half of `buffer` (the child's mapping) copied
    onto the kept half as soon as it returns: before any code of the student's can run again (a finaliser,
    a weakref callback, a backward pass, the views dying) and put the inputs back."""
    half = _len(buffer) // 2

    def called(*args, **kwargs):
        enabled = _gc_isenabled()
        _gc_disable()
        try:
            result = fn(*args, **kwargs)
            _move(buffer, half, 0, half)
            return result
        finally:
            if enabled:
                _gc_enable()
    return called
