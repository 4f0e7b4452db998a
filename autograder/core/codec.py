"""Bytes <-> plain data, safe to read from an untrusted process.

Frames between the grader and a sandbox child hold dicts (keyed by any of the scalars), lists,
tuples, strings, ints, floats, booleans, None and plain CPU tensors only, in a small
tagged format of our own: reading builds those types and nothing else, so a child's
frame can never run code in the grader. (torch.load(weights_only=True) reads the same
types through a zip archive and a restricted unpickler per frame: three to four times
the CPU of this format on the frames grading sends.) Every length and count is
checked against the bytes that are left, every tensor view against its storage, before
anything is built.

    tag  value
    N T F        None, True, False
    i            int: 1-byte length, then that many bytes, signed little-endian
    f            float: 8 bytes, IEEE double little-endian
    s            str: 4-byte length, then UTF-8 (surrogates passed through)
    l t d        list, tuple, dict: 4-byte count, then the items (a dict's key before its value)
    X            tensor: dtype name (as a str, untagged), 1-byte ndim, shape and stride (8 bytes
                 each), storage offset (8), requires_grad (1), storage bytes (8-byte length, data)
"""
from __future__ import annotations

import struct

import torch

MAGIC = b"RC\x01"
MAX_DEPTH = 64          # frames grading sends nest 6 deep at most
MAX_NDIM = 64

_TAG, _U4, _U8, _F8 = struct.Struct("<B"), struct.Struct("<I"), struct.Struct("<Q"), struct.Struct("<d")
_S, _D, _L, _T, _F, _I, _X = b"sdltfiX"
_CONSTANTS = {ord("N"): None, ord("T"): True, ord("F"): False}
_KEYS = (str, int, float, bool, type(None))
# Bound before any student code runs in a child: what a cell patches later does not reach the encoder.
_Tensor, _Parameter, _uint8 = torch.Tensor, torch.nn.Parameter, torch.uint8
_storage, _as_numpy = torch.Tensor.untyped_storage, torch.Tensor.numpy
_empty, _frombuffer = torch.empty, torch.frombuffer
_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
    torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128)}


class CodecError(ValueError):
    """A frame is not valid plain data."""


def dumps(obj) -> bytes:
    out = [MAGIC]
    _encode(obj, out, 0)
    return b"".join(out)


def loads(data: bytes):
    if not isinstance(data, (bytes, bytearray)) or data[:len(MAGIC)] != MAGIC:
        raise CodecError("unreadable frame (not a codec frame: it does not start with the codec's mark)")
    reader = _Reader(memoryview(data), len(MAGIC))
    try:
        obj = reader.value(0)
    except CodecError:
        raise
    except (ValueError, TypeError, UnicodeDecodeError, RuntimeError, OverflowError, struct.error) as e:
        raise CodecError(f"unreadable frame ({type(e).__name__}: {str(e)[:200]})") from None
    if reader.at != len(data):
        raise CodecError(f"unreadable frame ({len(data) - reader.at} bytes after its value)")
    return obj


def _encode(obj, out: list, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"codec frames nest at most {MAX_DEPTH} deep")
    kind = type(obj)
    if obj is None:
        out.append(b"N")
    elif kind is bool:
        out.append(b"T" if obj else b"F")
    elif kind is int:
        size = (obj.bit_length() + 8) // 8
        if size > 255:
            raise ValueError("codec frames carry ints of at most 255 bytes")
        out += (b"i", bytes((size,)), obj.to_bytes(size, "little", signed=True))
    elif kind is float:
        out += (b"f", _F8.pack(obj))
    elif kind is str:
        _text(obj, out, b"s")
    elif kind is list or kind is tuple:
        out += (b"l" if kind is list else b"t", _U4.pack(len(obj)))
        for item in obj:
            _encode(item, out, depth + 1)
    elif kind is dict:
        out += (b"d", _U4.pack(len(obj)))
        for key, value in obj.items():
            if type(key) not in _KEYS:
                raise TypeError(f"codec frames carry dict keys of a scalar type, not {type(key).__name__}")
            _encode(key, out, depth + 1)
            _encode(value, out, depth + 1)
    elif kind is _Tensor or kind is _Parameter:
        _tensor(obj, out)
    else:
        raise TypeError(f"codec frames carry plain data only, not {kind.__name__}")


def _text(s: str, out: list, tag: bytes = b"") -> None:
    data = s.encode("utf-8", "surrogatepass")
    out += (tag, _U4.pack(len(data)), data)


def _tensor(t: torch.Tensor, out: list) -> None:
    name = str(t.dtype).removeprefix("torch.")
    if name not in _DTYPES or t.device.type != "cpu" or t.layout is not torch.strided:
        raise TypeError(f"codec frames carry dense CPU tensors of {', '.join(_DTYPES)}, not {t.dtype} on {t.device}")
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    data = _as_numpy(_empty(0, dtype=_uint8).set_(_storage(t))).tobytes()
    out.append(b"X")
    _text(name, out)
    out.append(bytes((t.dim(),)))
    out += [_U8.pack(n) for n in (*t.shape, *t.stride(), t.storage_offset())]
    out += (b"\x01" if t.requires_grad else b"\x00", _U8.pack(len(data)), data)


class _Reader:
    """A cursor over one frame; every read checks that the bytes it takes are there (struct's reads
    raise struct.error past the end; take checks slices itself)."""

    def __init__(self, data: memoryview, at: int):
        self.data, self.at = data, at

    def take(self, n: int) -> memoryview:
        at = self.at
        if at + n > len(self.data):
            raise CodecError(f"unreadable frame (it claims {n} bytes at {at}, past its end at {len(self.data)})")
        self.at = at + n
        return self.data[at:at + n]

    def number(self, form: struct.Struct):
        value = form.unpack_from(self.data, self.at)[0]
        self.at += form.size
        return value

    def count(self) -> int:
        n = self.number(_U4)
        if n > len(self.data) - self.at:      # every item takes at least one byte
            raise CodecError(f"unreadable frame (it claims {n} items with {len(self.data) - self.at} bytes left)")
        return n

    def text(self) -> str:
        return str(self.take(self.number(_U4)), "utf-8", "surrogatepass")

    def value(self, depth: int):
        if depth > MAX_DEPTH:
            raise CodecError(f"unreadable frame (nested deeper than {MAX_DEPTH})")
        tag = self.number(_TAG)
        if tag == _S:
            return self.text()
        if tag == _D:
            out = {}
            for _ in range(self.count()):
                key = self.value(depth + 1)
                if type(key) not in _KEYS:
                    raise CodecError(f"unreadable frame (a dict key of type {type(key).__name__})")
                out[key] = self.value(depth + 1)
            return out
        if tag == _L or tag == _T:
            items = [self.value(depth + 1) for _ in range(self.count())]
            return items if tag == _L else tuple(items)
        if tag == _F:
            return self.number(_F8)
        if tag == _I:
            return int.from_bytes(self.take(self.number(_TAG)), "little", signed=True)
        if tag == _X:
            return self.tensor()
        if tag in _CONSTANTS:
            return _CONSTANTS[tag]
        raise CodecError(f"unreadable frame (unknown tag {bytes((tag,))!r} at {self.at - 1})")

    def tensor(self) -> torch.Tensor:
        name = self.text()
        if name not in _DTYPES:
            raise CodecError(f"unreadable frame (a tensor of dtype {name[:40]!r})")
        dtype, ndim = _DTYPES[name], self.number(_TAG)
        if ndim > MAX_NDIM:
            raise CodecError(f"unreadable frame (a tensor of {ndim} dimensions)")
        numbers = struct.unpack(f"<{2 * ndim + 1}Q", self.take(8 * (2 * ndim + 1)))
        shape, stride, offset = numbers[:ndim], numbers[ndim:2 * ndim], numbers[-1]
        requires_grad = self.number(_TAG)
        data = self.take(self.number(_U8))
        size = dtype.itemsize
        if len(data) % size:
            raise CodecError(f"unreadable frame (a {name} storage of {len(data)} bytes)")
        # the last element the view reaches must lie within the storage it was sent with
        if 0 not in shape and offset + sum((n - 1) * s for n, s in zip(shape, stride)) >= len(data) // size:
            raise CodecError(f"unreadable frame (a tensor view {list(shape)} reaching past its storage)")
        if dtype is torch.bool and data.tobytes().translate(None, b"\x00\x01"):
            raise CodecError("unreadable frame (a bool tensor holding bytes other than 0 and 1)")
        storage = _frombuffer(bytearray(data), dtype=_uint8) if len(data) else _empty(0, dtype=_uint8)
        tensor = storage.view(dtype).as_strided(shape, stride, offset)
        return tensor.requires_grad_() if requires_grad and (dtype.is_floating_point or dtype.is_complex) else tensor
