"""Child side: call the submission on the grader's inputs and report what happened.

Runs inside a sandbox child and is imported before any student code, so every
function it relies on is bound here, at import. It never judges: it sends back
raw observations (returned values as plain tensors and numbers, the inputs
after the call, gradients, exceptions, module structure) and the grader, in
another process, decides.

Requests (dicts) and what they return:

    {"op": "call", "fn": NAME, "args": [...], "kwargs": {...},
     "grad": UPSTREAM or None, "grad_args": [i, ...]}
        -> {"result", "args_after", "shares_input", "grads"}
        (with "spec_fn": [KIND, ...] in place of "fn": the callable the assignment's SPECS table builds,
        the grader's own code run on the submission's objects: Part 5's trainer and its checks)
    {"op": "new", "cls": NAME, "args", "kwargs", "double": bool}    (or "spec": [KIND, ...], the grader's own)
        -> {"handle", "structure"}
    {"op": "load", "handle": H, "weights": {"ffn.0.weight": TENSOR, ...}}  -> {}
    {"op": "invoke", "handle": H, "at": PATH or "", "args", "kwargs"}  -> like "call"
        (the object, or its submodule at PATH as "load" reaches it: "0.ffn", "attn", an nn.ModuleList run
        as nbtest.layers.as_layer runs it; with autograd on, as training runs a model: a forward that told
        an evaluation under torch.no_grad from training would have nothing to tell)
    {"op": "time", "fn": NAME, "args", "kwargs", "against": {LABEL: SPEC, ...},
     "reps": R, "inner": K, "budget_ms": B, "fresh": [i, ...], "rows": [r, ...], "seed": S}
        -> {"ms": {"fn": [...], LABEL: [...]}, "device": NAME,
            "checked": [{"args": [ROWS, ...], "result": VALUE}, ...]}   (on the request's device's clock)

Any of them may instead return {"error": {"type", "message", "is": [...]}}, and
{"missing": NAME} when the submission does not define NAME. Arguments are
tensors (cloned before the call, and moved to the request's "device" when it names
one), plain data, {"handle": H} for an object made by "new", {"spec": [KIND, ...]}
for an object built by the assignment's SPECS table (branches, sublayers), or
{"arena": [OFFSET, DTYPE, SHAPE, STRIDE]}: a tensor in shared memory the grader reads back after
the call (core/arena.py), handed to the function as an ordinary copy and left out of "args_after".

A "call" with "trace": NAME also returns {"trace": REPORT}: what the tracer
TRACERS[NAME] (registered by the assignment's child-side module, e.g. kernel
launches) recorded while the call ran.
"""
from __future__ import annotations

import builtins
import functools
import gc
import inspect
import numbers
import platform
import time

import torch
from torch import nn

from nbtest.layers import as_layer as _as_layer
from nbtest.tensor_values import as_notebooks as _as_notebooks

from .arena import Handed as _Handed
from .arena import hand as _hand
from .arena import keeping as _keeping
from .arena import refresh as _refresh

_isinstance, _issubclass, _type = builtins.isinstance, builtins.issubclass, builtins.type
_len, _str = builtins.len, builtins.str
_float, _int, _bool, _list, _tuple, _dict = float, int, bool, list, tuple, dict
_tuple_slice, _slice = tuple.__getitem__, slice
_getattr, _enumerate, _sum, _next, _any = getattr, enumerate, sum, next, any
_range, _min, _max, _partial = range, min, max, functools.partial
_Tensor, _Module = torch.Tensor, nn.Module
_detach, _clone, _to = torch.Tensor.detach, torch.Tensor.clone, torch.Tensor.to
_numel, _requires_grad_, _copy = torch.Tensor.numel, torch.Tensor.requires_grad_, torch.Tensor.copy_
# Tensor attributes read through torch._C.TensorBase's descriptors: TensorBase is a C type that
# student code cannot change, while `torch.Tensor.requires_grad = property(...)` would change what
# x.requires_grad says.
_requires_grad_of = torch._C.TensorBase.requires_grad.__get__
_layout_of, _shape_of = torch._C.TensorBase.layout.__get__, torch._C.TensorBase.shape.__get__
_storage = torch.Tensor.untyped_storage
_storage_ptr = torch.UntypedStorage.data_ptr
_double, _eval = nn.Module.double, nn.Module.eval
# the structure report reads each module's own _modules and _parameters dicts: nn.Module.named_modules
# and .parameters call the submodules' methods, which a class may override to leave a layer out; the count
# adds what .parameters() yields besides, which an optimizer trains (an override may add a layer, too)
_attribute, _id, _dict_items, _dict_get = object.__getattribute__, id, dict.items, dict.get
_parameters_of = nn.Module.parameters
_Indexed = (nn.Sequential, nn.ModuleList)   # their children are reached by position: model[l]
_autograd_grad, _tsum, _mul = torch.autograd.grad, torch.sum, torch.mul
_no_grad, _set_grad_enabled, _set_default_dtype = torch.no_grad, torch.set_grad_enabled, torch.set_default_dtype
_seed_cpu, _seed_cuda, _cuda_initialized = (torch.default_generator.manual_seed, torch.cuda.manual_seed_all,
                                            torch.cuda.is_initialized)
_float32, _cpu, _strided = torch.float32, torch.device("cpu"), torch.strided
_cuda_available, _cuda_name = torch.cuda.is_available, torch.cuda.get_device_name
_Event, _synchronize = torch.cuda.Event, torch.cuda.synchronize
_record, _elapsed_time = torch.cuda.Event.record, torch.cuda.Event.elapsed_time
_perf_counter, _machine = time.perf_counter, platform.machine
_Generator, _normal, _index_select, _as_tensor = torch.Generator, torch.Tensor.normal_, torch.index_select, torch.tensor
_device_of, _int64 = torch._C.TensorBase.device.__get__, torch.int64
_Real = numbers.Real
_gc_disable, _gc_enable, _gc_isenabled = gc.disable, gc.enable, gc.isenabled
_traceback_of = BaseException.__traceback__.__get__
_FORWARD_MISSING = nn.modules.module._forward_unimplemented.__code__   # an nn.Module with no forward, called
_signature, _isclass, _callable = inspect.signature, inspect.isclass, callable
_NOTED_ERRORS = (ValueError, TypeError, RuntimeError, NotImplementedError, NameError, AttributeError,
                 MemoryError, RecursionError)
# torch.nn classes a module may be built on, named in structure reports
_KNOWN = (nn.TransformerEncoderLayer, nn.TransformerEncoder, nn.TransformerDecoderLayer, nn.Transformer,
          nn.MultiheadAttention, nn.LayerNorm, nn.Linear, nn.GELU, nn.ReLU, nn.Sequential,
          nn.ModuleList, nn.Identity)

MAX_ELEMENTS = 1 << 24   # larger tensors are reported by type only
MAX_ITEMS = 1000         # list / module entries reported
MAX_TEXT = 500           # characters of any string reported

# name -> tracer(module): a context manager whose value has .report(result) -> plain data.
# Filled by an assignment's child-side module in its warm_up(), before any student code.
TRACERS: dict = {}


# every read-back argument handed so far in this child, copied onto its arena's inputs' half after each request
# (arena.refresh): a write through a reference the code kept shows there (Arena.written_later)
_HANDED: list = []


class Missing(Exception):
    """The submission does not define a name the grader asked for."""


def declared(module, wanted: dict) -> dict:
    """What the submission defines of the contract's names ({name: kind}): for each,
    {"defined", "kind", "params"} (parameter names, self left out; None where unknown)."""
    out = {}
    for name in _list(wanted)[:MAX_ITEMS]:
        if name not in module.__dict__:
            out[_text(_str(name))] = {"defined": False}
            continue
        obj = module.__dict__[name]
        kind = "class" if _isclass(obj) else "function" if _callable(obj) else "value"
        try:
            params = [_text(p) for p in _signature(obj).parameters][:MAX_ITEMS]
        except BaseException:
            params = None
        out[_text(_str(name))] = {"defined": True, "kind": kind, "params": params}
    return out


def serve_request(module, specs: dict, objects: dict, request: dict, arena=None) -> dict:
    """Run one request against the submission's module; never raises. arena: the child's mapping of the
    shared memory that holds the request's read-back arguments (core/arena.py), or None."""
    _set_grad_enabled(True)          # undo global switches left by earlier calls or cells
    _set_default_dtype(_float32)
    if _type(request.get("torch_seed")) is _int:
        _seed(request["torch_seed"], request.get("device"))
    try:
        if arena is not None:       # each {"arena": [offset, dtype, shape, stride]} a copy of the mapping's
            request = {**request, "args": [_hand(arena, a["arena"]) if _type(a) is _dict and "arena" in a
                                           else a for a in request.get("args", [])]}
            _HANDED.extend(a for a in request["args"] if _type(a) is _Handed)
        return _OPS[request["op"]](module, specs, objects, request)
    except Missing as e:
        name = e.args[0]
        return {"missing": name, "error": {"type": "NameError", "message": f"{name} is not defined",
                                           "is": ["NameError"]}}
    except BaseException as e:       # SystemExit, KeyboardInterrupt and the like from student code too
        return {"error": describe_error(e)}
    finally:
        _refresh(_HANDED)


def _seed(seed: int, device: str | None) -> None:
    """What torch.manual_seed(seed) does for the devices a request can reach: the CPU's generator, and
    CUDA's where the request runs there or CUDA is up. torch.manual_seed formats the stack once for
    each device not yet initialised (CUDA, XPU, MTIA): most of a small request's cost on a CPU."""
    _seed_cpu(seed)
    if device is not None or _cuda_initialized():
        _seed_cuda(seed)


def describe_error(e: BaseException) -> dict:
    """{"type", "message", "is"}: "is" from the exception's own type, which `except` matches, not from what
    its __class__ claims (isinstance believes a property there: a RuntimeError that says it is a ValueError).
    torch's nn.Module.forward of a module that defines none (an nn.ModuleList called) raises a
    NotImplementedError that is no stub of the release: "is" leaves NotImplementedError out for it."""
    try:
        message = _str(e)
    except BaseException:
        message = "<the exception's message could not be read>"
    noted = [c.__name__ for c in _NOTED_ERRORS if _issubclass(_type(e), c)]
    if "NotImplementedError" in noted and _innermost_code(_traceback_of(e)) is _FORWARD_MISSING:
        noted.remove("NotImplementedError")
    return {"type": _text(_getattr(_type(e), "__name__", "?")), "message": _text(message), "is": noted}


def _innermost_code(tb):
    """The code object of a traceback's last frame (where the exception was raised), or None."""
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return None if tb is None else tb.tb_frame.f_code


def _lookup(module, name: str):
    if name not in module.__dict__:
        raise Missing(name)
    return module.__dict__[name]


def _decode(value, specs: dict, objects: dict, device=None):
    """Request value -> argument: tensors cloned (onto `device`), specs and handles resolved; a tensor
    over the arena is passed as it is (the grader reads it back)."""
    if _type(value) is _Handed:
        return value.given
    if _type(value) is _Tensor:
        return _clone(value) if device is None else _to(value, device, copy=True)
    if _type(value) is _dict and "spec" in value:
        return build(specs, value["spec"])
    if _type(value) is _dict and "handle" in value:
        return objects[value["handle"]]
    if _type(value) in (_list, _tuple):
        return _type(value)(_decode(v, specs, objects, device) for v in value)
    return value


def _arguments(request, specs, objects):
    device = request.get("device")
    args = [_decode(a, specs, objects, device) for a in request.get("args", [])]
    kwargs = {k: _decode(v, specs, objects, device) for k, v in request.get("kwargs", {}).items()}
    return args, kwargs


def build(specs: dict, spec: list):
    """The object a spec [KIND, *params] describes: specs[KIND](*params)."""
    kind, *params = spec
    return specs[kind](*params)


def _call(module, specs, objects, request):
    """fn of the submission, or with "spec_fn": [KIND, ...] the callable that spec builds (the grader's own)."""
    fn = build(specs, request["spec_fn"]) if "spec_fn" in request else _lookup(module, request["fn"])
    return _observe(fn, request, specs, objects, module)


def _invoke(module, specs, objects, request):
    path = request.get("at") or ""
    target, missing = _reach(objects[request["handle"]], path)
    if missing is not None:
        return {"error": {"type": "AttributeError", "is": ["AttributeError"],
                          "message": f"nothing at '{_text(path)}' (no '{_text(missing)}')"}}
    return _observe(_as_layer(target), request, specs, objects, module)   # an ffn held in a ModuleList runs in order


def _observe(fn, request, specs, objects, module) -> dict:
    args, kwargs = _arguments(request, specs, objects)
    for i in request.get("grad_args", []):
        _requires_grad_(args[i], True)
    handed = [a for a in request.get("args", []) if _type(a) is _Handed]
    # the submission's call, in a frame a tracer counts as the submission's: a finaliser of its locals runs there
    fn = _partial(_as_notebooks, fn)
    if handed:                  # what the call leaves of the inputs is kept the moment it returns
        fn = _keeping(fn, handed)
    tracer = TRACERS.get(request.get("trace"))
    memory = [_storage_ptr(_storage(a)) for a in args if _type(a) is _Tensor]    # the inputs' own, as handed
    if tracer is None:
        result = fn(*args, **kwargs)
        out = _observed(result, args, request, memory)
        if request.get("trace"):
            out["trace"] = None      # a tracer the child has not registered: no report, as the reply says
        return out
    # the trace is of all the code that made the result: with the collector off from the call until the result is
    # encoded, no finaliser or weakref callback of the code's runs after the tracer stops and changes what it returned
    enabled = _gc_isenabled()
    _gc_disable()
    try:
        with tracer(module) as recorder:
            result = fn(*args, **kwargs)
        out = _observed(result, args, request, memory)
        out["trace"] = recorder.report(result)
        return out
    finally:
        if enabled:
            _gc_enable()


def _observed(result, args: list, request: dict, memory: list[int]) -> dict:
    """The reply's view of a call: what it returned, its arguments after it, gradients if asked. memory: the
    addresses of the tensor arguments' storages as they were handed (a call can give a tensor another storage)."""
    result = _plain_tuple(result)
    shared = [_type(a) is _Handed for a in request.get("args", [])]
    out = {"result": encode(result),
           "args_after": [encode(a) if _type(a) is _Tensor and not shared[i] else None for i, a in _enumerate(args)],
           "shares_input": _shares_storage(result, memory)}
    if request.get("grad") is not None:
        out["grads"] = _grads(result, args, request)
    return out


def _plain_tuple(value):
    """A tuple subclass's items as a plain tuple (a namedtuple or typing.NamedTuple result is the tuple the
    docstring asks for), read by tuple's own slicing: the class may redefine __iter__ or __getitem__."""
    if _type(value) is not _tuple and _issubclass(_type(value), _tuple):   # type(): __class__ can lie
        return _tuple_slice(value, _slice(None))
    return value


def _shares_storage(result, memory: list[int]) -> bool:
    """Does the result, or a tensor in a returned tuple or list, share memory with an input (memory: the
    addresses of the inputs' storages)?"""
    if _type(result) in (_tuple, _list):
        return _any(_shares_storage(r, memory) for r in result[:MAX_ITEMS] if _type(r) is _Tensor)
    return _type(result) is _Tensor and _storage_ptr(_storage(result)) in memory


def _grads(result, args, request):
    """Gradients of sum(result * upstream) with respect to the chosen arguments, as autograd computes them along
    the result's graph and returns them (torch.autograd.grad): never read off x.grad, which a hook of the code
    could write for a result that no graph joins to x."""
    if _type(result) is not _Tensor or not _requires_grad_of(result):
        return {"error": {"type": "Detached", "message": "the result does not require grad", "is": []}}
    try:
        grads = _autograd_grad(_tsum(_mul(result, request["grad"])), [args[i] for i in request["grad_args"]],
                               allow_unused=True)
    except BaseException as e:
        return {"error": describe_error(e)}
    return [encode(g) for g in grads]


def _new(module, specs, objects, request):
    """cls(*args, **kwargs) of the submission, or with "spec": [KIND, ...] the grader's own object that spec
    builds (Part 5's residual_mlp, for train), kept under a new handle."""
    if "spec" in request:
        obj = build(specs, request["spec"])
    else:
        cls = _lookup(module, request["cls"])
        args = [_decode(a, specs, objects) for a in request.get("args", [])]
        kwargs = {k: _decode(v, specs, objects) for k, v in request.get("kwargs", {}).items()}
        obj = cls(*args, **kwargs)
    if request.get("double") and not _isinstance(obj, _Module):
        return {"error": {"type": "TypeError", "is": [],
                          "message": f"{request['cls']}(...) is a {_type(obj).__name__}, not an nn.Module"}}
    # read as made, in training mode, as an optimizer is handed its parameters, before the grader's double and eval
    yielded = _yielded(obj)
    if _isinstance(obj, _Module) and (_len(_modules_of(obj)) > MAX_ITEMS or yielded is None):
        # the report would list part of the tree, and a layer past the cut would go unseen
        return {"error": {"type": "RuntimeError", "is": [],
                          "message": f"the object holds more than {MAX_ITEMS} modules or {10 * MAX_ITEMS} parameters, "
                                     "more than the grader reads"}}
    report = structure(obj, yielded)
    if request.get("double"):
        _eval(_double(obj))
    handle = _len(objects)
    objects[handle] = obj
    return {"handle": handle, "structure": report}


def _yielded(obj) -> list | None:
    """What obj.parameters() yields, through nn.Module's own method and through the class's (an override of
    parameters, named_parameters or named_modules may add a layer no registry holds); None past 10 * MAX_ITEMS."""
    if not _isinstance(obj, _Module):
        return []
    out = []
    for found in (_parameters_of(obj), _type(obj).parameters(obj)):
        for p in found:
            if _len(out) >= 10 * MAX_ITEMS:
                return None
            out.append(p)
    return out


def _load(module, specs, objects, request):
    """Copy the grader's tensors into the object's parameters, by the paths `structure` reports."""
    obj = objects[request["handle"]]
    with _no_grad():
        for path, value in request["weights"].items():
            target, missing = _reach(obj, path)
            if missing is not None:
                return {"error": {"type": "AttributeError", "is": [],
                                  "message": f"{_text(path)}: nothing at '{_text(missing)}'"}}
            if not _isinstance(target, _Tensor):
                return {"error": {"type": "AttributeError", "is": [],
                                  "message": f"{_text(path)} is a {_type(target).__name__}, not a tensor"}}
            if _tuple(_shape_of(target)) != _tuple(_shape_of(value)):
                return {"error": {"type": "ShapeMismatch", "is": [],
                                  "message": f"{_text(path)} has shape {_tuple(_shape_of(target))}, "
                                             f"expected {_tuple(_shape_of(value))}"}}
            _copy(target, value)
    return {}


def _reach(obj, path: str):
    """(what is at the dotted `path` of obj, None), or (None, the first part with nothing there); "" is obj."""
    for part in path.split(".") if path else ():
        obj = _child(obj, part)
        if obj is None:
            return None, part
    return obj, None


def _child(obj, part: str):
    """obj's part as `structure` names it: a submodule (by position in an nn.Sequential or
    nn.ModuleList), else the attribute (a parameter); None where there is none."""
    if _isinstance(obj, _Module):
        found = _dict(_children(obj)).get(part)
        if found is not None or _isinstance(obj, _Indexed):
            return found
    return _getattr(obj, part, None)


def _time(module, specs, objects, request):
    """Milliseconds per call of the submission's fn and of each `against` callable, on the same
    arguments, on the clock of the request's device (_clock): one warm-up call each (compilation),
    then `reps` rounds, interleaved, of `inner` calls between two marks (fewer when one call would
    overrun `budget_ms`). Each of a round's calls has its own copy of the arguments, and before
    every round the arguments at `fresh` of every copy are redrawn in place (a generator of the
    probe's own, seeded with `seed`): no timed call sees values another call saw, so a cache
    cannot answer. For every timed call of fn, `rows` of its fresh arguments as drawn and of what
    it returned are reported, for the grader to check."""
    fn = _lookup(module, request["fn"])
    device = request.get("device") or "cpu"
    mark, elapsed, synchronize = _clock(device)
    args, kwargs = _arguments(request, specs, objects)
    runs = {"fn": fn, **{label: _decode(spec, specs, objects) for label, spec in request["against"].items()}}
    reps, inner = _max(_int(request["reps"]), 1), _max(_int(request["inner"]), 1)
    once = {}
    for label, run in runs.items():
        run(*args, **kwargs)                               # compiles, allocates
        synchronize()
        start = mark()
        run(*args, **kwargs)
        end = mark()
        synchronize()
        once[label] = elapsed(start, end)
    slowest = _max(_max(once.values()), 1e-3)
    inner = _max(1, _min(inner, _int(request["budget_ms"] / (slowest * reps * _len(runs)))))
    copies = [(args, kwargs), *(_arguments(request, specs, objects) for _ in _range(inner - 1))]
    generator = _Generator(device=device).manual_seed(_int(request["seed"]))
    top = _max(_int(r) for r in request["rows"])
    rows = _as_tensor([_int(r) for r in request["rows"]], dtype=_int64, device=device)
    marks, checked = {label: [] for label in runs}, []
    for _ in _range(reps):
        for label, run in runs.items():
            drawn = [[_index_select(_normal(a[i], generator=generator), 0, rows) for i in request["fresh"]]
                     for a, _ in copies]
            start = mark()
            results = [run(*a, **k) for a, k in copies]
            marks[label].append((start, mark()))
            if label == "fn":
                checked += [(d, _rows_of(r, rows, top)) for d, r in zip(drawn, results)]
            del results
    synchronize()
    return {"ms": {label: [_float(elapsed(*pair)) / inner for pair in pairs] for label, pairs in marks.items()},
            "device": _text(_str(_cuda_name())) if device == "cuda" else f"{_text(_machine())} CPU",
            "checked": [{"args": [encode(d) for d in drawn], "result": encode(r)} for drawn, r in checked]}


def _clock(device: str):
    """(mark, milliseconds between two marks, synchronize) on `device`: CUDA events, which the GPU
    records as its stream reaches them, on CUDA; elsewhere the CPU's monotonic clock, with nothing
    to wait for (a call on CPU tensors has finished when it returns)."""
    if device == "cuda":
        return _cuda_mark, _elapsed_time, _synchronize
    return _perf_counter, lambda start, end: (end - start) * 1e3, lambda: None


def _cuda_mark():
    event = _Event(enable_timing=True)
    _record(event)
    return event


def _rows_of(value, rows, top: int):
    """What a call returned, each plain tensor in it cut to `rows` of its first dimension where it has
    more than `top`, the largest of them."""
    if _type(value) in (_list, _tuple):
        return _type(value)(_rows_of(v, rows, top) for v in value[:MAX_ITEMS])
    if _type(value) is _Tensor and _len(_shape_of(value)) and _shape_of(value)[0] > top:
        return _index_select(value, 0, _to(rows, _device_of(value)))
    return value


_OPS = {"call": _call, "invoke": _invoke, "new": _new, "load": _load, "time": _time}


def encode(value, depth: int = 0):
    """A returned value as plain data: {"kind": ..., ...}."""
    if _type(value) is _Tensor:
        if _layout_of(value) is not _strided or _numel(value) > MAX_ELEMENTS:
            return {"kind": "object", "type": f"Tensor ({_layout_of(value)}, {_numel(value)} elements)"}
        return {"kind": "tensor", "value": _clone(_to(_detach(value), _cpu)),
                "requires_grad": _bool(_requires_grad_of(value))}
    if _isinstance(value, _Tensor):
        return {"kind": "object", "type": f"{_type(value).__name__} (it passes isinstance(x, Tensor) but is no "
                                          "plain torch.Tensor)"}
    if _type(value) is _bool or value is None:
        return {"kind": "bool" if value is not None else "none", "value": value}
    if _type(value) in (_int, _float) or _isinstance(value, _Real):
        try:
            number = _float(value)
        except BaseException:
            return {"kind": "object", "type": _text(_type(value).__name__)}
        return {"kind": "number", "value": number, "type": _text(_type(value).__name__)}
    if _type(value) in (_list, _tuple) and depth < 3:
        return {"kind": _type(value).__name__, "length": _len(value),
                "items": [encode(v, depth + 1) for v in value[:MAX_ITEMS]]}
    if _type(value) is _str:
        return {"kind": "str", "value": _text(value)}
    return {"kind": "object", "type": _text(_getattr(_type(value), "__qualname__", "?"))}


def structure(obj, yielded: list = ()) -> dict:
    """What an object is built from: its modules, their torch.nn base classes and sizes; its parameters counted with
    the tensors among `yielded` (_yielded)."""
    if not _isinstance(obj, _Module):
        return {"type": _text(_type(obj).__qualname__), "module": False}
    tree = _modules_of(obj)
    return {"type": _text(_type(obj).__qualname__), "module": True,
            "modules": [_describe_module(path, m) for path, m in tree[:MAX_ITEMS]],
            "parameters": _count(tree, yielded)}


def _own(m, name: str) -> dict:
    """A module's own dict `name` (_modules, _parameters), every entry read by dict's own methods, whatever its
    class (a subclass's could leave a layer or a parameter out, as a copy through __getstate__ makes one); {}
    where there is none. Raises TypeError for a table that is no dict: nn.Module keeps a dict there."""
    table = _dict_get(_attribute(m, "__dict__"), name)
    if table is None:
        return {}
    if not _issubclass(_type(table), _dict):
        raise TypeError(f"{_text(_type(m).__qualname__)}.{name} is a {_text(_type(table).__qualname__)}, not the "
                        "dict nn.Module keeps its layers and parameters in")
    return _dict(_dict_items(table))


def _children(m) -> list:
    """(name, submodule) from m's own _modules; an nn.Sequential's or nn.ModuleList's named by position
    ("0", "1", ...), as model[l] reaches them, whatever the student called them."""
    children = [(_str(name), c) for name, c in _dict_items(_own(m, "_modules")) if _isinstance(c, _Module)]
    if _isinstance(m, _Indexed):
        children = [(_str(i), c) for i, (_, c) in _enumerate(children)]
    return children


def _modules_of(obj) -> list:
    """(path, module) for obj and every submodule, in nn.Module.named_modules' order, each module once;
    paths as _children names them ("0.ffn.2"), the paths "load" takes."""
    out, seen, stack = [], set(), [("", obj)]
    while stack and _len(out) < 10 * MAX_ITEMS:
        path, m = stack.pop()
        if _id(m) in seen:
            continue
        seen.add(_id(m))
        out.append((path, m))
        stack.extend((f"{path}.{name}" if path else name, child) for name, child in reversed(_children(m)))
    return out


def _count(tree: list, yielded: list = ()) -> int:
    """Elements of the distinct parameters of these modules, and of the tensors among `yielded`."""
    params = {_id(p): p for _, m in tree for p in _own(m, "_parameters").values() if _isinstance(p, _Tensor)}
    params.update((_id(p), p) for p in yielded if _isinstance(p, _Tensor))
    return _int(_sum(_numel(p) for p in params.values()))


def _describe_module(path: str, m) -> dict:
    mro = _type(m).__mro__
    base = _next((k.__name__ for k in mro if k in _KNOWN), None)
    entry = {"path": _text(path), "type": _text(_type(m).__qualname__), "base": base,
             "mro": [_text(k.__qualname__) for k in mro[:20]], "parameters": _count(_modules_of(m))}
    attributes = _attribute(m, "__dict__")
    for attr in ("in_features", "out_features", "embed_dim", "num_heads", "batch_first",
                 "normalized_shape", "elementwise_affine"):
        value = attributes.get(attr)
        if _type(value) in (_int, _bool):
            entry[attr] = value
        elif _type(value) is _tuple and all(_type(v) is _int for v in value):
            entry[attr] = _list(value)
    own = _own(m, "_parameters")
    if "bias" in own:   # nn.Linear(bias=False) registers bias as None
        entry["has_bias"] = own["bias"] is not None
    return entry


def _text(s: str) -> str:
    return s if _len(s) <= MAX_TEXT else s[:MAX_TEXT] + " ..."
