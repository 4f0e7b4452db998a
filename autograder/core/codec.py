"""Bytes <-> plain data, safe to read from an untrusted process.

Frames between the grader and a sandbox child hold dicts, lists, tuples,
strings, numbers, booleans, None and plain CPU tensors only. They are written
with torch.save and read with torch.load(weights_only=True), which builds those
types and nothing else: reading a child's frame can never run the child's code
(plain pickle could).
"""
from __future__ import annotations

import io

import torch

_save, _load = torch.save, torch.load  # bound before any student code runs in a child


class CodecError(ValueError):
    """A frame is not valid plain data."""


def dumps(obj) -> bytes:
    buf = io.BytesIO()
    _save(obj, buf)
    return buf.getvalue()


def loads(data: bytes):
    try:
        return _load(io.BytesIO(data), weights_only=True)
    except Exception as e:  # malformed zip, forbidden global, truncated frame...
        raise CodecError(f"unreadable frame ({type(e).__name__}: {str(e)[:200]})") from None
