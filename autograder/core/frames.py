"""Read one frame from a child with a deadline for all of it, and check that the child's loop signed it.

    data = read_frame(fd, deadline, MAX_FRAME)   # raises TimeoutError, EOFError or FrameError
    payload = unsigned(key, n, data)             # the child's nth frame; FrameError if it is not signed

Frames are those multiprocessing.Connection.send_bytes writes (the child keeps using it):
a 4-byte big-endian signed length, or -1 and then an 8-byte length, then the bytes.
Connection.poll() + recv_bytes() wait only for the first byte: a child that sends a
header and stalls would hold the grader forever.

Each frame a child sends begins with an HMAC-SHA256 of its number and payload under a key the
grader sends each child before its first cell runs (`signed`): the key lives only in the running
loop's locals, which a cell reaches through frames or gc alone (audited events), so a cell that
finds the connection can write bytes on it but no frame the grader takes for the probe's.
"""
from __future__ import annotations

import hmac
import os
import select
import struct
import time

# OpenSSL's HMAC, a C function: the child calls it bound here, so no module a cell can write to stands between
# the loop's key and the digest
from _hashlib import hmac_digest

CHUNK = 1 << 20
SIGNATURE = 32      # bytes of HMAC-SHA256 before each frame's payload
MARK = b"mark"      # what the loop's mark on the monitor's pipe signs (no codec frame begins so: codec.MAGIC)


class FrameError(ValueError):
    """The child sent something that is not a valid frame; the message says what."""


def read_frame(fd: int, deadline: float, max_bytes: int) -> bytes:
    """One frame, all of it before `deadline` (time.monotonic()); memory grows only as bytes arrive."""
    (size,) = struct.unpack("!i", _read(fd, 4, deadline))
    if size == -1:
        (size,) = struct.unpack("!Q", _read(fd, 8, deadline))
    if not 0 <= size <= max_bytes:
        raise FrameError(f"it announced a reply of {size} bytes; at most {max_bytes} are accepted")
    return _read(fd, size, deadline)


def _read(fd: int, n: int, deadline: float) -> bytes:
    parts, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("the whole frame did not arrive before the deadline")
        part = os.read(fd, min(n - got, CHUNK))
        if not part:
            raise EOFError("the child closed its end mid-frame" if got else "the child closed its end")
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def signed(key: bytes, n: int, payload: bytes) -> bytes:
    """The child's nth frame (from 0): HMAC-SHA256 of n and the payload under the child's key, then the payload."""
    return _digest(key, n, payload) + payload


def unsigned(key: bytes, n: int, data: bytes) -> bytes:
    """The payload of the child's nth frame; FrameError when `signed` did not write it with this key and n."""
    payload = data[SIGNATURE:]
    if len(data) < SIGNATURE or not hmac.compare_digest(data[:SIGNATURE], _digest(key, n, payload)):
        raise FrameError("it is not a frame the child's loop signed (the code may have written to the grader's "
                         "connection)")
    return payload


def mark(key: bytes, n: int) -> bytes:
    """The line the child's loop writes on the monitor's pipe before its nth frame, which monitor.parse reads as
    the event ("", n, "mark", signature): the grader finds it there before the frame, unless the code redirected
    the pipe (and the monitor's events with it) or filled it with events of its own."""
    return f"\t{n}\tmark\t{_digest(key, n, MARK).hex()}\n".encode()


def is_mark(key: bytes, n: int, signature: str) -> bool:
    return hmac.compare_digest(signature.encode(), _digest(key, n, MARK).hex().encode())


def _digest(key: bytes, n: int, payload: bytes) -> bytes:
    return hmac_digest(key, n.to_bytes(8, "big") + payload, "sha256")
