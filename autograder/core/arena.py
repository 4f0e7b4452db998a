"""Inputs the grader reads back itself: a call's tensor arguments in shared memory it maps.

"Leaves its inputs unchanged" used to rest on the child's report of its arguments after
the call. For the arguments a request names in "readback", the grader instead writes
each tensor into one memfd, sends the child that file descriptor beside the request,
and the child calls the submission on views of its own mapping of it. After the reply
the grader reads the tensors from its mapping: what the call left there, whatever the
child says.

    arena = Arena.of(request)          # None when the request has nothing to read back
    child.send(arena.request, fd=arena.fd)
    ...                                # the child answers
    after = arena.read()               # {argument index: tensor as the call left it}

In the child (probe.serve_request), each such argument arrives as
{"arena": [offset, dtype, shape, stride]}, and `view` makes it a tensor over the mapping.
"""
from __future__ import annotations

import mmap
import os

import torch

ALIGN = 64                   # bytes; every tensor starts on a cache line
_DTYPES = {str(d): d for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
                               torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)}
# the child's side, bound before any student code runs there
_frombuffer, _as_strided = torch.frombuffer, torch.Tensor.as_strided
_mmap, _fstat, _close = mmap.mmap, os.fstat, os.close


class Arena:
    """The memfd that carries one request's read-back arguments, and the grader's mapping of it."""

    def __init__(self, request: dict, places: dict[int, tuple[int, torch.Tensor]], size: int):
        self.fd = os.memfd_create("autograder-inputs", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, size)
        self._map = mmap.mmap(self.fd, size)
        # {argument index: [offset, dtype, shape, stride]}, as the child is told and the grader reads back
        self._specs = {i: [offset, str(t.dtype), list(t.shape), list(t.stride())] for i, (offset, t) in places.items()}
        args = list(request["args"])
        for i, spec in self._specs.items():
            view(self._map, spec).copy_(places[i][1])
            args[i] = {"arena": spec}
        self.request = {**request, "args": args, "arena": True}

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
        """{argument index: a copy of what the call left in its place}."""
        return {i: view(self._map, spec).clone() for i, spec in self._specs.items()}

    def close(self) -> None:
        os.close(self.fd)
        try:
            self._map.close()
        except BufferError:      # a view read() made is still alive somewhere: the GC unmaps it
            pass


def _dense(tensor: torch.Tensor) -> bool:
    """Its elements fill numel places with no gap or overlap (its strides a permutation of contiguous ones)."""
    span = 1
    for d in sorted(range(tensor.dim()), key=tensor.stride):
        if tensor.shape[d] != 1 and tensor.stride(d) != span:
            return False
        span *= tensor.shape[d]
    return True


def view(buffer, spec: list) -> torch.Tensor:
    """The tensor [offset, dtype, shape, stride] over `buffer` (an mmap): the same bytes on both sides.
    A dense layout (a permutation of contiguous strides) spans exactly numel elements from offset."""
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
