"""Which torch calls hand Python a tensor's values. fused-add-norm's wrapper asks a tensor only what describes it
(its shape, strides, dtype, device), so that nothing but the kernel computes on the data; the grader's launch
trace and the public tests judge the notebook's calls by this one module.

    def __torch_function__(self, func, types, args=(), kwargs=None):     # a TorchFunctionMode's
        if not made_by_cell(sys._getframe(1), is_cell, launch):           # not the notebook's own call
            return run_seen(self, func, types, args, kwargs)
        return run_recorded(self, func, types, args, kwargs, record)      # record(name, kind)
    values_read([(name, kind), ...])          # the names of the calls that gave Python the values

torch sets a mode aside while its handler runs, so both run the call with the mode back on for what it calls back:
an object's __index__, an autograd Function's backward, a finaliser that a setter's release runs.

Python computing h and y in lists runs no torch operator, but it must take the values out of a tensor first:
tolist, numpy, item, a tensor's truth value or text, its storage, a function handed to apply_, or an object whose
methods torch calls (its __float__, __index__) while the mode is set aside. Or it shares the tensor's memory:

    shares_python_memory(t)     # t's memory is also a bytearray's, a numpy array's, a file's: Python reads it

A call is the notebook's by the frames on the stack, and code made of builtins alone (a partial of next over maps)
has none of its own: what runs in the frame of the notebook's call or of its launch's grid is the notebook's.

    as_notebooks(fn, *args)     # the grader's child calls the wrapper so: its locals' finalisers are the notebook's
    grid_of(grid, meta)         # a launch's grid, its function called and its entries made ints, as the notebook's
    launch_through(mode, func, kwargs)   # a dispatch mode's answer to a higher-order operator: Triton's launches
    class Seen(DispatchMode): ...        # a TorchDispatchMode whose first call does not import torch._dynamo
"""
from __future__ import annotations

from operator import index as _index

import torch
from torch.overrides import redispatch_function, resolve_name
from torch.utils._python_dispatch import TorchDispatchMode

from .generators import SETS_STATE

# what the notebook may ask a tensor and get back as Python data (torch's name for the call, last part)
DESCRIBES = frozenset({
    "shape", "dtype", "device", "layout", "ndim", "is_cuda", "is_cpu", "is_meta", "is_sparse", "is_quantized",
    "is_leaf", "requires_grad", "itemsize", "nbytes", "size", "stride", "dim", "ndimension", "numel", "nelement",
    "element_size", "storage_offset", "data_ptr", "get_device", "is_contiguous", "is_floating_point", "is_complex",
    "is_signed", "is_inference", "is_conj", "is_neg", "is_pinned", "is_same_size", "is_nested", "is_sparse_csr",
    "is_mkldnn", "is_mps", "is_xpu", "is_xla", "is_ipu", "is_mtia", "is_maia", "is_vulkan", "type", "__len__",
    "__hash__"})
# what a torch call may hand back without the values: tensors (what computes on them is the operators' to say),
# shapes, dtypes, devices, layouts, nothing
HANDS_NO_VALUES = frozenset({"tensor", "Size", "dtype", "device", "layout", "memory_format", "NoneType"})
_isinstance, _type, _all, _str, _getattr = isinstance, type, all, str, getattr
_list, _tuple, _object_getattribute = list, tuple, object.__getattribute__
_Tensor, _sequences = torch.Tensor, (tuple, list)
# what a torch call may be handed as plain data (each type itself, never a subclass, whose methods are code): numbers,
# text, slices, and torch's own descriptions of a tensor; containers of them, and a slice's parts, are looked into
PLAIN = frozenset({int, float, bool, complex, str, bytes, type(None), type(Ellipsis), slice, range, torch.dtype,
                   torch.device, torch.layout, torch.memory_format, torch.Size, torch.Generator})
_CONTAINERS = frozenset({tuple, list, dict})
PLAIN_CLASSES = PLAIN | {torch.Tensor}     # a class handed as data: dtype=float
_mro = type.__dict__["__mro__"].__get__    # a type's own, which no __class__ of an object's can answer for
_class_name = type.__dict__["__name__"].__get__
TORCH_TENSORS = frozenset({torch.Tensor, torch.nn.Parameter})    # torch's own tensor classes
MAX_CHECKED = 100_000     # arguments and items looked at per call; a call handed more is handed code
_Storage, _storage_of = torch.UntypedStorage, torch.Tensor.untyped_storage
_resizable, _is_shared, _no_function_modes = torch.UntypedStorage.resizable, torch.UntypedStorage.is_shared, \
    torch._C.DisableTorchFunction


def made_by_cell(frame, is_cell, launch) -> bool:
    """Whether the nearest frame on the stack that is a cell's (is_cell(its file name)), a launch's (its code
    is launch: kernel[grid](...), where Triton's interpreter reads the tensors) or one of the notebook's calls
    (as_notebooks, grid_of) is a cell's or such a call. A heuristic that the launch calls is a cell's again, and
    what the notebook's call or grid runs is the notebook's, though it be a partial of builtins with no frame."""
    while frame is not None:
        code = frame.f_code
        if code is launch:
            return False
        if code in _NOTEBOOKS or is_cell(code.co_filename):
            return True
        frame = frame.f_back
    return False


def as_notebooks(fn, /, *args, **kwargs):
    """fn(*args, **kwargs), a call of the notebook's function: what runs in this frame is the notebook's
    (made_by_cell), a finaliser of fn's locals as fn's frame ends among them."""
    return fn(*args, **kwargs)


def grid_of(grid, meta: dict | None) -> tuple:
    """A launch's grid, the notebook's: its function called on a copy of the launch's arguments by name
    (nbtest.warmup), so that what it leaves there dies in this frame, and its entries made ints here, so that what
    runs for them (an object's __index__, its __iter__) is the notebook's (made_by_cell) and Triton is handed plain
    numbers, as a GPU's launcher reads them. A grid that gives one of the kernel's tensors an attribute of its own
    raises: Triton calls a tensor's methods inside the launch, where such an attribute would run unseen."""
    if callable(grid):
        before = _attributes(meta)
        found = grid(dict(meta) if _type(meta) is dict else meta)
        if _attributes(meta) != before:
            raise TypeError("the launch's grid gave the kernel's tensors attributes of their own: a grid computes "
                            "the launch's size from the kernel's arguments and changes none of them")
    else:
        found = grid
    return tuple(_index(v) for v in found)


def _attributes(meta) -> list:
    """The names of the attributes of their own that the tensors among a launch's arguments by name hold."""
    values = _list(meta.values()) if _type(meta) is dict else []
    return [_tuple(own_attributes(v)) for v in values if _type(v) in TORCH_TENSORS]


def own_attributes(value) -> dict:
    """An object's own __dict__, read past any __getattribute__ of its class ({} without one)."""
    try:
        found = _object_getattribute(value, "__dict__")
    except AttributeError:
        return {}
    return found if _type(found) is dict else {}


_NOTEBOOKS = frozenset({as_notebooks.__code__, grid_of.__code__})


def hands_code(args: tuple, kwargs: dict) -> bool:
    """Whether a torch call is handed what it may call back: a function (x.apply_(f)), a class of the code's, or an
    object that is not plain data, at any depth of the tuples, lists and dicts it is handed (torch.full(s, obj)
    runs obj.__float__). Such code runs inside the call, where a TorchFunctionMode is set aside, so what it reads
    goes unrecorded."""
    todo, budget = [*args, *kwargs.values()], MAX_CHECKED
    while todo:
        a = todo.pop()
        budget -= 1
        if budget < 0:
            return True
        kind = _type(a)
        if kind in _CONTAINERS:
            todo += a.values() if kind is dict else a
        elif kind is slice:        # x[slice(obj, None)]: torch calls obj.__index__
            todo += (a.start, a.stop, a.step)
        elif not (kind in PLAIN or _Tensor in _mro(kind) or (kind is _type and a in PLAIN_CLASSES)):
            return True
    return False


def result_kind(value) -> str:
    """What a torch call handed back: "tensor" for a tensor or a non-empty tuple or list of them, else the name
    of its type ("list", "ndarray", "float", "Size")."""
    if _isinstance(value, _Tensor) or (_type(value) in _sequences and value and
                                       _all(_isinstance(v, _Tensor) for v in value)):
        return "tensor"
    return _str(_type(value).__name__)[:60]


def run_seen(mode, func, types, args: tuple, kwargs: dict | None):
    """func(*args, **kwargs), run from mode's __torch_function__ with the mode back on for the torch calls that
    func's callbacks make (torch set it aside for this call alone)."""
    pending = _REDISPATCHED[-1] if _REDISPATCHED else None
    if pending is not None and pending[0] is func and pending[1] == _ids(args):
        # handed back at once: a function that skips no hop (torch._C._set_grad_enabled, Tensor.unflatten) runs as
        # before, with the mode aside
        _REDISPATCHED[-1] = (None, ())
        return func(*args, **(kwargs or {}))
    if pending is not None:
        _REDISPATCHED[-1] = (None, ())     # a call inside func: func skipped the hop
    _REDISPATCHED.append((func, _ids(args)))
    try:
        with mode:
            return redispatch_function(func, types, args, kwargs or {})
    finally:
        _REDISPATCHED.pop()


def launch_through(mode, func, kwargs: dict | None):
    """What a torch dispatch mode that declares supports_higher_order_operators hands back for a higher-order
    operator func (torch calls it with keywords only). Triton's launch operator, through which
    torch.library.wrap_triton launches on CUDA, launches its kernel with the mode back on, as kernel[grid](...)
    would: the launch and what it runs are seen as any launch's. Any other is refused (NotImplemented, which
    torch raises as a TypeError in the call): its Python, torch.cond's branches, would run with the mode aside."""
    if _type(func).__module__ != _LAUNCH_OPERATOR[0] or func.name() != _LAUNCH_OPERATOR[1]:
        return NotImplemented
    from torch._higher_order_ops.triton_kernel_wrap import triton_kernel_wrapper_mutation_dense as launch
    with mode:
        return launch(**(kwargs or {}))


_LAUNCH_OPERATOR = ("torch._higher_order_ops.triton_kernel_wrap", "triton_kernel_wrapper_mutation")


class DispatchMode(TorchDispatchMode):
    """A TorchDispatchMode that torch leaves unwrapped. torch wraps each subclass's __torch_dispatch__ in
    torch._disable_dynamo, whose first call imports torch._dynamo: 2 s of CPU, most of a fused-add-norm public test
    run. The wrapper only keeps torch.compile from tracing the handler, and the calls a mode watches here run
    uncompiled (nbtest.uncompiled)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


def _ids(args: tuple) -> tuple:
    return tuple(_id(a) for a in args)


_REDISPATCHED: list[tuple] = []     # (func, ids of its arguments) that run_seen handed torch and no call yet followed
_id = id


def run_recorded(mode, func, types, args: tuple, kwargs: dict | None, record):
    """run_seen(...), with record(name, kind) for what func was handed ("callable", before it runs) and for what
    it handed back; name is torch's ("torch.Tensor.tolist")."""
    name = _str(resolve_name(func) or _getattr(func, "__name__", "?"))[:100]
    if hands_code(args, kwargs or {}):
        record(name, "callable")
    result = run_seen(mode, func, types, args, kwargs)
    record(name, result_kind(result))
    return result


def values_read(calls) -> list[str]:
    """The calls, (name, kind) pairs with torch's names ("torch.Tensor.tolist", "torch.Tensor.shape.__get__"),
    that gave Python the values: handed a function, handing back what is neither a tensor nor a description, or
    copying a tensor's bytes into a generator's state, which hands them back as numbers (nbtest.generators)."""
    read = []
    for call in calls:
        name, kind = (_str(part) for part in call) if _type(call) in _sequences and len(call) == 2 else (_str(call), "?")
        name = name.removesuffix(".__get__")
        if kind == "callable" or name in SETS_STATE or (kind not in HANDS_NO_VALUES and
                                                        name.rsplit(".", 1)[-1] not in DESCRIBES):
            read.append(name)
    return list(dict.fromkeys(read))


def classes_handed(types) -> list[str]:
    """The names of the tensor classes other than torch's own among a torch mode's `types`: torch handed the call or
    the operator to their __torch_function__ or __torch_dispatch__, which runs where the mode is set aside."""
    return [_str(_class_name(kind) if _isinstance(kind, type) else "?")[:60] for kind in types
            if kind not in TORCH_TENSORS]


def shares_python_memory(value) -> bool:
    """Whether a tensor's memory (or a storage's) is also an object's that Python reads and writes without torch: a
    bytearray or mmap (torch.frombuffer), a numpy array (torch.from_numpy, torch.asarray, .numpy()), a DLPack export,
    a mapped file, shared memory. torch marks each such storage unresizable, or shared; its own allocations are
    neither. A copy into such a tensor hands Python the values, and one out of it takes back what Python computed."""
    with _no_function_modes():     # asked from inside a mode: torch's own methods, not calls of the notebook's
        try:
            storage = value if _isinstance(value, _Storage) else _storage_of(value)
        except (RuntimeError, NotImplementedError):
            return False           # no storage of its own (a sparse tensor): its parts are tensors, asked in turn
        return not _resizable(storage) or _is_shared(storage)
