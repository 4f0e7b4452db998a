"""A child's replies, checked field by field before the grader uses any of them.

    replies.loading(frame, expected_label)   # a frame sent while the cells load
    replies.answer(request, reply)           # the reply to one request (core/probe.py's ops)

Both raise ReplyError naming the first field that is not what core/probe.py sends: a missing
or extra key, a wrong type, an index or a length that does not fit the request, a tensor
that is not a plain strided one of at most probe.MAX_ELEMENTS elements, a list or a string
longer than the probe ever sends. The probe shares its process with the student's code,
which can write any frame to the grader; whatever passes here is plain data of bounded
size, so a test that reads it can fail but cannot allocate what a child chose.
"""
from __future__ import annotations

import torch

from .probe import MAX_ELEMENTS, MAX_ITEMS, MAX_TEXT

TEXT = MAX_TEXT + 4          # probe._text adds " ..."
MAX_HANDLE = 1 << 20         # objects one child may have made ("new")
MAX_COUNT = 1 << 62          # a parameter count or a length reported as a number
MAX_DEPTH = 3                # nesting of a returned list, as probe.encode stops
TRACE_DEPTH = 4              # nesting of a tracer's report
VALUE_KINDS = {"tensor", "object", "bool", "none", "number", "list", "tuple", "str"}
ERROR_KEYS = {"type", "message", "is"}
MODULE_ATTRIBUTES = ("in_features", "out_features", "embed_dim", "num_heads", "batch_first", "normalized_shape",
                     "elementwise_affine")


class ReplyError(ValueError):
    """A child's frame is not what the probe sends; the message names the field."""


def loading(frame, expected: str | None, labels: set[str]) -> str | None:
    """A frame sent while the cells load: {"cell": LABEL} announcing the next cell (which must be
    `expected`), or the final {"ready", "isolation", "declared"}, whose "ready" names only cells of
    `labels`. Returns the label, or None for the ready frame."""
    _dict(frame, "the frame")
    if "cell" in frame:
        _keys(frame, {"cell"}, "the cell frame")
        if expected is None or type(frame["cell"]) is not str or frame["cell"] != expected:
            raise ReplyError(f"it announced cell {_short(frame['cell'])} where the next cell is {expected!r}")
        return expected
    _keys(frame, {"ready", "isolation", "declared"}, "the ready frame", required={"ready", "isolation", "declared"})
    _dict(frame["ready"], "ready", MAX_ITEMS)
    for label, error in frame["ready"].items():
        if type(label) is not str or label not in labels:
            raise ReplyError(f"ready names {_short(label)}, which is no cell that was sent")
        _error(error, f"ready[{_short(label)}]")
    _text(frame["isolation"], "isolation", limit=4096)
    _dict(frame["declared"], "declared", MAX_ITEMS)
    for name, entry in frame["declared"].items():
        _text(name, "a name in declared")
        where = f"declared[{_short(name)}]"
        _dict(entry, where)
        if entry.get("defined") is False:
            _keys(entry, {"defined"}, where, required={"defined"})
            continue
        _keys(entry, {"defined", "kind", "params"}, where, required={"defined", "kind", "params"})
        if entry["defined"] is not True or type(entry["kind"]) is not str or \
                entry["kind"] not in ("class", "function", "value"):
            raise ReplyError(f"{where} is not a definition the probe reports")
        if entry["params"] is not None:
            _list(entry["params"], f"{where}['params']")
            for p in entry["params"]:
                _text(p, f"a parameter in {where}")
    return None


def answer(request: dict, reply) -> None:
    """The reply to `request`, as the probe answers it (an error, a missing name, or the op's fields)."""
    _dict(reply, "the reply")
    if "missing" in reply:
        _keys(reply, {"missing", "error"}, "the reply", required={"missing", "error"})
        _text(reply["missing"], "missing")
        if not reply["missing"]:
            raise ReplyError("missing is empty")
        _error(reply["error"], "error")
        return
    if "error" in reply:
        _keys(reply, {"error"}, "the reply")
        _error(reply["error"], "error")
        return
    op = request.get("op")
    if op in ("call", "invoke"):
        _observation(request, reply)
    elif op == "new":
        _keys(reply, {"handle", "structure"}, "the reply", required={"handle", "structure"})
        _int(reply["handle"], "handle", 0, MAX_HANDLE)
        _structure(reply["structure"])
    elif op == "load":
        _keys(reply, set(), "the reply")
    elif op == "time":
        _timing(reply)
    else:
        raise ReplyError(f"no reply is expected to a request of op {op!r}")


def _observation(request: dict, reply: dict) -> None:
    wanted = {"result", "args_after", "shares_input"}
    wanted |= {"grads"} if request.get("grad") is not None else set()
    wanted |= {"trace"} if request.get("trace") else set()
    _keys(reply, wanted, "the reply", required=wanted)
    value(reply["result"], "result")
    _list(reply["args_after"], "args_after")
    if len(reply["args_after"]) != len(request.get("args", [])):
        raise ReplyError(f"args_after has {len(reply['args_after'])} entries for {len(request.get('args', []))} arguments")
    for i, after in enumerate(reply["args_after"]):
        if after is not None:
            value(after, f"args_after[{i}]")
    _bool(reply["shares_input"], "shares_input")
    if "grads" in reply:
        grads = reply["grads"]
        if isinstance(grads, dict):
            _keys(grads, {"error"}, "grads", required={"error"})
            _error(grads["error"], "grads['error']")
        else:
            _list(grads, "grads")
            if len(grads) != len(request.get("grad_args", [])):
                raise ReplyError(f"grads has {len(grads)} entries for {len(request.get('grad_args', []))} arguments")
            for i, grad in enumerate(grads):
                value(grad, f"grads[{i}]")
    if "trace" in reply and reply["trace"] is not None:
        _plain(reply["trace"], "trace", TRACE_DEPTH)


def _timing(reply: dict) -> None:
    """{"ms": {LABEL: [float, ...]}, "device": str, "checked": [{"args": [VALUE, ...], "result": VALUE}, ...]};
    the timing test checks the numbers it reads."""
    _keys(reply, {"ms", "device", "checked"}, "the reply", required={"ms", "device", "checked"})
    _plain(reply["ms"], "ms", 2)
    _text(reply["device"], "device")
    _list(reply["checked"], "checked")
    for i, call in enumerate(reply["checked"]):
        where = f"checked[{i}]"
        _dict(call, where)
        _keys(call, {"args", "result"}, where, required={"args", "result"})
        _list(call["args"], f"{where}['args']")
        for j, arg in enumerate(call["args"]):
            value(arg, f"{where}['args'][{j}]")
        value(call["result"], f"{where}['result']")


def value(v, where: str, depth: int = 0) -> None:
    """A value as probe.encode writes it: {"kind": ..., ...}."""
    _dict(v, where)
    kind = v.get("kind")
    if type(kind) is not str or kind not in VALUE_KINDS:
        raise ReplyError(f"{where} has kind {_short(kind)}")
    if kind == "tensor":
        _keys(v, {"kind", "value", "requires_grad"}, where, required={"kind", "value", "requires_grad"})
        tensor(v["value"], f"{where}['value']")
        _bool(v["requires_grad"], f"{where}['requires_grad']")
    elif kind == "object":
        _keys(v, {"kind", "type"}, where, required={"kind", "type"})
        _text(v["type"], f"{where}['type']")
    elif kind in ("bool", "none"):
        _keys(v, {"kind", "value"}, where, required={"kind", "value"})
        if (kind == "bool" and type(v["value"]) is not bool) or (kind == "none" and v["value"] is not None):
            raise ReplyError(f"{where}['value'] is not a {kind}")
    elif kind == "number":
        _keys(v, {"kind", "value", "type"}, where, required={"kind", "value", "type"})
        if type(v["value"]) is not float:
            raise ReplyError(f"{where}['value'] is a {type(v['value']).__name__}, not a float")
        _text(v["type"], f"{where}['type']")
    elif kind == "str":
        _keys(v, {"kind", "value"}, where, required={"kind", "value"})
        _text(v["value"], f"{where}['value']")
    else:
        _keys(v, {"kind", "length", "items"}, where, required={"kind", "length", "items"})
        if depth >= MAX_DEPTH:
            raise ReplyError(f"{where} nests deeper than the probe reports")
        _int(v["length"], f"{where}['length']", 0, MAX_COUNT)
        _list(v["items"], f"{where}['items']")
        if len(v["items"]) != min(v["length"], MAX_ITEMS):
            raise ReplyError(f"{where} has {len(v['items'])} items for a length of {v['length']}")
        for i, item in enumerate(v["items"]):
            value(item, f"{where}[{i}]", depth + 1)


def tensor(t, where: str) -> None:
    """A plain, strided CPU tensor of at most probe.MAX_ELEMENTS elements, its storage all there."""
    if type(t) is not torch.Tensor:
        raise ReplyError(f"{where} is a {type(t).__name__}, not a tensor")
    if t.layout is not torch.strided or t.device.type != "cpu" or t.is_quantized or t.requires_grad:
        raise ReplyError(f"{where} is not a plain CPU tensor")
    if t.numel() > MAX_ELEMENTS:
        raise ReplyError(f"{where} has {t.numel()} elements; at most {MAX_ELEMENTS} are accepted")
    if t.numel() and (min(t.stride(), default=0) < 0 or
                      t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1
                      > t.untyped_storage().nbytes() // t.element_size()):
        raise ReplyError(f"{where} reaches past its storage")


def _structure(s) -> None:
    """probe.structure: {"type", "module": False} or {"type", "module": True, "modules", "parameters"}."""
    _dict(s, "structure")
    if s.get("module") is False:
        _keys(s, {"type", "module"}, "structure", required={"type", "module"})
        _text(s["type"], "structure['type']")
        return
    _keys(s, {"type", "module", "modules", "parameters"}, "structure", required={"type", "module", "modules", "parameters"})
    if s["module"] is not True:
        raise ReplyError("structure['module'] is not a bool")
    _text(s["type"], "structure['type']")
    _int(s["parameters"], "structure['parameters']", 0, MAX_COUNT)
    _list(s["modules"], "structure['modules']")
    for i, m in enumerate(s["modules"]):
        where = f"structure['modules'][{i}]"
        _dict(m, where)
        _keys(m, {"path", "type", "base", "mro", "parameters", "has_bias", *MODULE_ATTRIBUTES}, where,
              required={"path", "type", "base", "mro", "parameters"})
        _text(m["path"], f"{where}['path']")
        _text(m["type"], f"{where}['type']")
        if m["base"] is not None:
            _text(m["base"], f"{where}['base']")
        _list(m["mro"], f"{where}['mro']", 20)
        for k in m["mro"]:
            _text(k, f"{where}['mro']")
        _int(m["parameters"], f"{where}['parameters']", 0, MAX_COUNT)
        if "has_bias" in m:
            _bool(m["has_bias"], f"{where}['has_bias']")
        for attr in MODULE_ATTRIBUTES:     # an int or a bool, or a tuple of ints as a list: whatever the module set
            if attr in m and type(m[attr]) is not bool:
                if type(m[attr]) is list:
                    _list(m[attr], f"{where}[{attr!r}]", MAX_ITEMS)
                for n in m[attr] if type(m[attr]) is list else [m[attr]]:
                    _int(n, f"{where}[{attr!r}]", -MAX_COUNT, MAX_COUNT)


def _plain(v, where: str, depth: int) -> None:
    """Strings, numbers, booleans, None, and lists and str-keyed dicts of them, bounded in size and depth."""
    if v is None or type(v) in (bool, int, float):
        if type(v) is int:
            _int(v, where, -MAX_COUNT, MAX_COUNT)
        return
    if type(v) is str:
        _text(v, where, limit=MAX_TEXT)
        return
    if depth <= 0:
        raise ReplyError(f"{where} nests too deep")
    if type(v) is list:
        _list(v, where)
        for i, item in enumerate(v):
            _plain(item, f"{where}[{i}]", depth - 1)
        return
    _dict(v, where, MAX_ITEMS)
    for k, item in v.items():
        _text(k, f"a key in {where}")
        _plain(item, f"{where}[{k!r}]", depth - 1)


def _error(e, where: str) -> None:
    """probe.describe_error: {"type": str, "message": str, "is": [str, ...]}."""
    _dict(e, where)
    _keys(e, ERROR_KEYS, where, required=ERROR_KEYS)
    _text(e["type"], f"{where}['type']")
    _text(e["message"], f"{where}['message']")
    _list(e["is"], f"{where}['is']", 16)
    for name in e["is"]:
        _text(name, f"{where}['is']")


def _keys(d: dict, allowed: set, where: str, required: set = frozenset()) -> None:
    extra, lacking = set(d) - allowed, required - set(d)
    if extra:
        raise ReplyError(f"{where} has unexpected keys {sorted(map(_short, extra))[:5]}")
    if lacking:
        raise ReplyError(f"{where} lacks {sorted(lacking)}")


def _dict(d, where: str, limit: int = 64) -> None:
    if type(d) is not dict:
        raise ReplyError(f"{where} is a {type(d).__name__}, not a dict")
    if len(d) > limit:
        raise ReplyError(f"{where} has {len(d)} entries; at most {limit}")


def _list(v, where: str, limit: int = MAX_ITEMS) -> None:
    if type(v) is not list:
        raise ReplyError(f"{where} is a {type(v).__name__}, not a list")
    if len(v) > limit:
        raise ReplyError(f"{where} has {len(v)} entries; at most {limit}")


def _text(s, where: str, limit: int = TEXT) -> None:
    if type(s) is not str:
        raise ReplyError(f"{where} is a {type(s).__name__}, not a str")
    if len(s) > limit:
        raise ReplyError(f"{where} is {len(s)} characters long; at most {limit}")


def _int(n, where: str, lo: int, hi: int) -> None:
    if type(n) is not int or not lo <= n <= hi:
        raise ReplyError(f"{where} is {_short(n)}, not an int in [{lo}, {hi}]")


def _bool(b, where: str) -> None:
    if type(b) is not bool:
        raise ReplyError(f"{where} is a {type(b).__name__}, not a bool")


def _short(v) -> str:
    """A value from a child, in a message: its repr, cut."""
    text = repr(v) if type(v) in (str, int, float, bool, type(None)) else type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."
