"""Bytes <-> plain data, safe to read from an untrusted process.

Frames between the grader and a sandbox child hold dicts, lists, tuples,
strings, numbers, booleans, None and plain CPU tensors only. They are written
with torch.save and read with torch.load(weights_only=True), which builds those
types and nothing else: reading a child's frame can never run the child's code
(plain pickle could). Before torch.load, check_torch_zip refuses an archive whose
records would unpack to more than the frame itself (a zip bomb).
"""
from __future__ import annotations

import io
import zipfile

import torch

_save, _load = torch.save, torch.load  # bound before any student code runs in a child


class CodecError(ValueError):
    """A frame is not valid plain data."""


def dumps(obj) -> bytes:
    buf = io.BytesIO()
    _save(obj, buf)
    return buf.getvalue()


def loads(data: bytes):
    check_torch_zip(data)
    try:
        return _load(io.BytesIO(data), weights_only=True)
    except Exception as e:  # malformed zip, forbidden global, truncated frame...
        raise CodecError(f"unreadable frame ({type(e).__name__}: {str(e)[:200]})") from None


def check_torch_zip(data: bytes) -> None:
    """Refuse a torch.save archive whose records would unpack to more than the frame's own size.

    torch.save stores records uncompressed, but torch.load's zip reader also inflates
    deflated ones: a 1 MB frame can hold a record that inflates to gigabytes, allocated
    in full before anything is checked. Only stored records, within the frame, pass.
    Python's zipfile and torch's reader find the central directory the same way (from the end).
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except Exception as e:     # BadZipFile, and NotImplementedError for a made-up zip version, among others
        raise CodecError(f"unreadable frame (not a torch archive: {type(e).__name__}: {str(e)[:200]})") from None
    total = 0
    for info in archive.infolist():
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise CodecError(f"unreadable frame (its record {info.filename[:80]!r} is compressed)")
        total += info.file_size
    if total > len(data):
        raise CodecError(f"unreadable frame (its records claim {total} bytes in a frame of {len(data)})")
