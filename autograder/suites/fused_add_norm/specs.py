"""What the fused-add-norm tests use in the sandbox child: timing inputs and yardsticks, and a tracer.

Specs, built the same way in the grader and in a child (SPECS[KIND](*params)):

    ["randn", shape, dtype, seed, device, scale, shift]   a random tensor made where it is used, so the
                                                          timing test's large inputs never cross the wire
    ["eager"]              (x, fx, weight, bias, eps=1e-5) -> (h, y): x + fx, then F.layer_norm (PyTorch as
                           written in a model: what the student's kernel is timed against)
    ["copy", n_bytes, device]  a callable copying n_bytes on the device, ignoring its arguments: the
                           measured bandwidth for a device whose peak is not in autograder.bandwidth

The tracer "launches" (probe.TRACERS, registered by warm_up() in the fork server, before any
student code) records, while a traced call runs:

    launches   each launch of a Triton kernel, kernel[grid](...), not counting the launches a
               launch makes itself (an autotuner's trials): {"kernel", "file", "line", "grid", "foreign"}, where
               "file" and "line" are where the kernel's Python function was compiled: "<cell LABEL>" for a
               cell of the submission, and the line of its def (of its first decorator), and "foreign" the type
               names of the arguments that are neither
               a tensor of torch's own type with no attribute of its own (one shadows a method Triton calls
               inside the launch, storage_offset) nor plain data (a number, a bool, a string, None, a dtype).
               A launch is the notebook's at the top, or where its code launched inside another (a grid's
               entry can); its grid is made ints, or its grid function wrapped, by nbtest.tensor_values.grid_of
               before Triton reads it, so that what runs for it is the notebook's.
               In Triton's interpreter a tl.constexpr parameter holds whatever object the launch passed,
               and `if FLAG:`, `N < M` or `range(N)` in the kernel call that object's methods: Python
               running inside the launch, where no operator is recorded. "hooks": the hooks that
               the kernel's layers hold and Triton's own code did not define (a pre-run hook, an
               autotuner's pre_hook, post_hook, early_config_prune or perf_model, a config's
               pre_hook): Python handed the launch's tensors, inside the launch
    ops        the names of the torch operators (aten, as a TorchDispatchMode sees them) that ran
               outside launches, in order of first use
    ops_in_launches  the same for those that ran inside a launch: a Triton kernel computes with tl
               operations, so torch there is Python reached from the kernel (an object handed to it)
    calls      the torch functions and tensor methods the notebook's own code called (as a
               TorchFunctionMode sees them: "torch.Tensor.tolist", "torch.Tensor.shape.__get__"), each with
               what it handed back (nbtest.tensor_values: "tensor", "callable", "list", "Size", ...). A call
               is the notebook's when the nearest frame of a cell or of a launch on its stack is a cell's:
               Triton's interpreter reading the tensors inside kernel[grid](...) is not, a heuristic or a
               grid the launch calls is. Each call runs with the mode entered again (tensor_values.run_seen), so
               what torch calls back inside it (an __index__, a backward, a finaliser) is seen too
    kernels    the submission's module-level names that hold a Triton kernel
    machinery  the names of Triton's launch classes (a kernel's class and its bases, and the interpreter's
               rewriter and executor) whose own attributes were replaced, added or removed since warm_up
               counted their launches: a cell that reached one (type() of a kernel) runs its code around
               every launch, where the counts miss it; and the names of triton.language's modules and classes
               that hold a cell's code (tl.sum replaced: the kernel runs it inside the launch)
    modes      the stacks of torch's modes ("function modes", "dispatch modes") whose top, as the call ended,
               was not the tracer's own mode: code that took it off (a mode's __exit__ pops whatever mode is on
               top) ran unseen from then on, whatever it pushed in its place
    threads    the threads other than the child's own that were alive as the call began or ended, or started
               during it: torch's modes are each thread's own, so what another thread runs goes unseen
    classes    the names of the tensor classes, other than torch's own, that torch handed a call or an
               operator to (a __torch_function__ or __torch_dispatch__ of the notebook's): their Python runs
               where the function mode, or the dispatch mode, is set aside, so what it computes is not counted
    raised     the notebook's kernels whose launch raised: a call that went on from it returns what the
               kernel did not compute, and an error's text (an assert's message) can carry what it loaded; a
               launch with a keyword named by anything but a str raises, before Triton compares the name
    shared     where a tensor whose memory Python shares (nbtest.tensor_values.shares_python_memory: over a
               bytearray, a numpy array, a file) was handed to an operator or a launch, or returned: Python
               reads and writes that memory with no torch call, so values copied there leave the trace, and
               values copied from there are Python's work. The call's arguments are copies in torch's own memory,
               and the operators asked are the notebook's (as for calls), so not the grader's read-back copies
    (each launch) "swapped": what of the launched kernel's layers is no longer what Triton made: a layer
               of a class that is not exactly Triton's, or made without its __init__; a layer whose `fn`
               is not the function it was made with; an interpreted kernel whose rewriter or cached
               rewrite is not the one Triton made from that function. The function that runs is then
               not the kernel the cell decorated (a plain def computing in lists on the loaded values)

Raw observations only: the grader decides what they mean.
"""
from __future__ import annotations

import contextlib
import functools
import sys
import types
import weakref

import torch
import torch.nn.functional as F
from nbtest.tensor_values import (TORCH_TENSORS, classes_handed, grid_of, launch_through, made_by_cell, own_attributes,
                                  run_recorded, run_seen, shares_python_memory)
from torch._ops import HigherOrderOperator

_randn, _empty, _Generator = torch.randn, torch.empty, torch.Generator
_to, _copy, _layer_norm = torch.Tensor.to, torch.Tensor.copy_, F.layer_norm
_float32, _uint8 = torch.float32, torch.uint8
_Tensor, _Storage = torch.Tensor, torch.UntypedStorage
_getattr, _isinstance, _type, _str, _len, _repr, _bool = getattr, isinstance, type, str, len, repr, bool
_tuple, _list, _any, _id = tuple, list, any, id
_getframe, _MISSING = sys._getframe, object()
_class_dict, _class_name = type.__dict__["__dict__"].__get__, type.__dict__["__name__"].__get__
_mro = type.__dict__["__mro__"].__get__
_module_dict = types.ModuleType.__dict__["__dict__"].__get__
_partial, _method, _wrappers = functools.partial, types.MethodType, (staticmethod, classmethod)
CELL = "<cell "     # the file name a cell's code is compiled under (not the monitor's CELL_PREFIX: this module's globals
# are reachable from Triton's classes, through the counted run, and must hold nothing of the grader's)
_function, _code = type(lambda: None), types.CodeType
# what a kernel's arguments may be: tensors of torch's own types (TORCH_TENSORS, with no attribute of their own),
# and plain data (tl.constexpr and tl.dtype are Triton's own wrappers, checked by what they hold); anything else
# brings its own methods into the launch
PLAIN = frozenset({int, float, bool, str, type(None), torch.dtype})
LAUNCH_OPTIONS = frozenset({"grid", "warmup"})    # the launch's own: the grid is the wrapper's (the policy's)
# bound by warm_up; "dir": where Triton's own code lies
_TRITON: dict = {"constexpr": None, "constexpr_value": None, "dtypes": frozenset(), "dir": "\0"}

MAX_RECORDS = 200   # launches, operator names and calls reported per call
UNCOUNTED = f"more than {MAX_RECORDS} kinds, the rest uncounted"    # what stands for those past the cap
HOOK_SLOTS = ("pre_hook", "post_hook", "early_config_prune", "perf_model")   # an autotuner's; a Config's pre_hook


def randn(shape, dtype: str, seed: int, device: str, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    generator = _Generator(device=device).manual_seed(seed)
    values = _randn(_tuple(shape), generator=generator, device=device, dtype=_float32) * scale + shift
    return _to(values, _getattr(torch, dtype))


def _eager_add_norm(x, fx, weight, bias, eps=1e-5):
    h = x + fx
    return h, _layer_norm(h, h.shape[-1:], weight, bias, eps)


def eager():
    return _eager_add_norm


def copy(n_bytes: int, device: str):
    src, dst = _empty(n_bytes, dtype=_uint8, device=device), _empty(n_bytes, dtype=_uint8, device=device)
    return lambda *args, **kwargs: _copy(dst, src)


SPECS = {"randn": randn, "eager": eager, "copy": copy}


# ------------------------------------------------------------------ the "launches" tracer (child only)

_state = {"recorder": None, "depth": 0}
_MACHINERY: list[tuple[type, dict]] = []    # (a launch class, its own attributes as warm_up left them)
_LAYERS: set[type] = set()      # the classes of a kernel's layers: Triton's own, never a subclass
# triton.language's modules and the classes they define, (name, reader of its own dict, it, that dict as warm_up
# left it): what a kernel calls
_LANGUAGE: list[tuple[str, object, object, dict]] = []
# id(a kernel layer) -> (a weak reference to it, its fn, its rewriter) as its __init__ left them; by identity, as a
# JITFunction hashes its source
_BORN: dict[int, tuple] = {}
_REWRITTEN = weakref.WeakKeyDictionary()  # a kernel's function -> the rewrite Triton's interpreter made of it


class _Recorder:
    def __init__(self, module, kernel_types):
        self.launches: list[dict] = []
        self.ops: dict[str, None] = {}
        self.inside: dict[str, None] = {}
        self.calls: dict[tuple[str, str], None] = {}
        self.classes: dict[str, None] = {}
        self.shared: dict[str, None] = {}
        self.raised: dict[str, None] = {}
        self.modes: list[str] = []
        self.threads = 0
        names = _getattr(module, "__dict__", {}) if module is not None else {}
        self.kernels = [_str(name) for name, value in _list(names.items())
                        if _isinstance(value, kernel_types)][:MAX_RECORDS]

    def launch(self, kernel, grid, args: tuple, kwargs: dict) -> None:
        fn = _origin(kernel)
        code = _getattr(fn, "__code__", None)
        values = [*args, *(v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS)]
        foreign = [_foreign(v) for v in values if not _plain(v)]
        record = {"kernel": _str(_getattr(fn, "__name__", "?"))[:200],
                  "file": _str(code.co_filename)[:200] if code is not None else "?",
                  "line": code.co_firstlineno if _type(code) is _code else 0,
                  # made of ints by counted (grid_of) before this reads it: its text runs none of the notebook's code
                  "grid": _repr(grid)[:100] if _type(grid) is _tuple else "callable",
                  "foreign": _list(dict.fromkeys(foreign))[:8], "hooks": _list(dict.fromkeys(_hooks(kernel))),
                  "swapped": _list(dict.fromkeys(_swapped(kernel) + _helpers_swapped(kernel)))[:8]}
        self.touched(f"the launch of {record['kernel'][:60]}", values)
        if _len(self.launches) < MAX_RECORDS:
            self.launches.append(record)
        elif record["foreign"] or record["hooks"] or record["swapped"]:
            self.launches[-1] = record      # past the cap, a launch the checks fail is still reported

    def failed(self, kernel) -> None:
        """A launch of the notebook's that raised, which the call went on from."""
        if _len(self.raised) < 8:
            self.raised[_str(_getattr(_origin(kernel), "__name__", "?"))[:60]] = None

    def op(self, name: str, inside: bool) -> None:
        ops = self.inside if inside else self.ops
        if _len(ops) < MAX_RECORDS or name in ops:
            ops[name] = None
        else:                               # past the cap the names go unseen: reported as one that computes
            ops[UNCOUNTED] = None

    def call(self, name: str, kind: str) -> None:
        if _len(self.calls) < MAX_RECORDS or (name, kind) in self.calls:
            self.calls[(name, kind)] = None
        else:                               # past the cap, as a call handed code: nbtest.tensor_values fails it
            self.calls[(UNCOUNTED, "callable")] = None

    def handed(self, types) -> None:
        """The tensor classes torch handed a call or an operator to (a mode's `types`): any but torch's own."""
        for name in classes_handed(types):
            if _len(self.classes) < 8:
                self.classes[name] = None

    def touched(self, where: str, values) -> None:
        """Note `where` if a tensor or storage among values (and in their tuples and lists) shares Python's memory."""
        todo = _list(values)
        while todo and _len(self.shared) < 8:
            value = todo.pop()
            if _type(value) in (_tuple, _list):
                todo += value[:MAX_RECORDS]
            elif _isinstance(value, (_Tensor, _Storage)) and shares_python_memory(value):
                self.shared[where[:60]] = None
                return

    def report(self, result=None) -> dict:
        """What the call did; `result`, what it returned, is asked whether it shares Python's memory."""
        self.touched("what it returned", (result,))
        return {"launches": self.launches, "ops": _list(self.ops), "ops_in_launches": _list(self.inside),
                "calls": [_list(call) for call in self.calls], "kernels": self.kernels,
                "machinery": _changed() + _language(), "classes": _list(self.classes), "modes": self.modes,
                "shared": _list(self.shared), "raised": _list(self.raised),
                "threads": self.threads}


def _changed() -> list[str]:
    """The launch classes whose own attributes are no longer those warm_up left (compared by identity)."""
    changed = []
    for cls, before in _MACHINERY:
        now = _class_dict(cls)
        if _len(now) != _len(before) or _any(now.get(k, _MISSING) is not v for k, v in before.items()):
            changed.append(_str(_class_name(cls))[:60])
    return changed


def _language() -> list[str]:
    """The names of triton.language's modules and classes that hold code of a cell's: a kernel calling tl.sum runs
    whatever tl.sum holds, inside the launch. Triton's interpreter patches these names with its own code while it
    runs a kernel (and a jit helper's call leaves its patches), so what is checked is whose code they hold."""
    found = []
    for name, read, owner, before in _LANGUAGE:
        found += [f"{name}.{key}"[:60] for key, value in _list(read(owner).items())
                  if before.get(key, _MISSING) is not value and _runs_a_cell(value)]
    return found[:8]


def _runs_a_cell(value, depth: int = 0) -> bool:
    """Whether value is a def or lambda compiled from a cell, or runs one when called or read (a partial, a bound
    method, a property, a callable object of a cell's class, a class with a method of a cell's)."""
    for _ in range(8):
        kind = _type(value)
        if kind is _function:
            return _cell(_str(value.__code__.co_filename))
        if kind is property:
            return _any(_runs_a_cell(f) for f in (value.fget, value.fset, value.fdel) if f is not None)
        if type in _mro(kind):      # a class: called, it runs its own methods (a class nested in it is not read)
            return depth == 0 and _any(_runs_a_cell(v, 1) for c in _mro(value) for v in _list(_class_dict(c).values()))
        if kind is _partial:
            value = value.func
        elif kind is _method or kind in _wrappers:
            value = value.__func__
        else:
            value = _class_dict(kind).get("__call__")
    return False


def _plain(value) -> bool:
    """A tensor of torch's own type with no attribute of its own (one shadows a method Triton calls on it,
    storage_offset), or plain data (each type itself, never a subclass: a subclass brings methods of its own); a
    tl.constexpr by what it holds."""
    kind = _type(value)
    if kind is _TRITON["constexpr"]:
        return _plain(_TRITON["constexpr_value"](value))
    if kind in TORCH_TENSORS:
        return not own_attributes(value)
    return kind in PLAIN or kind in _TRITON["dtypes"]


def _foreign(value) -> str:
    """What a launch argument that is not plain is, for the report."""
    name = _str(_class_name(_type(value)))[:60]
    if _type(value) in TORCH_TENSORS:
        names = ", ".join(_str(k)[:30] for k in _list(own_attributes(value))[:4])
        return f"{name} with attributes of its own ({names})"
    return name


def _origin(kernel):
    """The Python function under a kernel (a JITFunction's .fn, an autotuner's .fn.fn, ...), followed through
    Triton's own layer classes alone: a .fn set on that function names nothing (red team 38 pointed the launch's
    line at a checked def that way)."""
    fn = kernel
    for _ in range(8):
        if _type(fn) not in _LAYERS:
            break
        fn = own_attributes(fn).get("fn")
    return fn


def _hooks(kernel) -> list[str]:
    """The hook slots of the kernel's layers (an autotuner over a JITFunction, ...) that hold what Triton's own
    code did not define: each runs inside the launch, handed its tensors, as Python the trace does not see."""
    found, layer = [], kernel
    for _ in range(8):
        slots = own_attributes(layer)
        hooks = slots.get("pre_run_hooks")
        found += ["pre_run_hooks"] * (_len(hooks) if _type(hooks) is _list else hooks is not None)
        configs = slots.get("configs")
        configs = configs if _type(configs) is _list else []
        held = [(slot, slots.get(slot)) for slot in HOOK_SLOTS] + \
            [("a Config's pre_hook", own_attributes(c).get("pre_hook")) for c in configs]
        found += [slot for slot, hook in held if hook is not None and not (
            _type(hook) is _function and _str(hook.__code__.co_filename).startswith(_TRITON["dir"]))]
        layer = slots.get("fn")
        if layer is None or _type(layer) is _function:
            break
    return found[:8]


def _swapped(kernel) -> list[str]:
    """What of the kernel's layers (an autotuner over heuristics over a kernel, ...) is not what Triton made
    (the module's docstring); [] for a kernel as @triton.jit and its decorators left it."""
    found, layer = [], kernel
    for _ in range(8):
        kind = _type(layer)
        name = _str(_class_name(kind))[:60]
        if kind not in _LAYERS:
            return [f"a {name} in place of Triton's kernel"]
        slots, born = own_attributes(layer), _BORN.get(_id(layer))
        if born is None or born[0]() is not layer:
            return [f"a {name} made without Triton's __init__"]
        _, fn, rewriter = born
        if slots.get("fn") is not fn:
            found.append(f"{name}.fn")
        if rewriter is not None:
            cached = _class_dict(kind).get("rewritten_fn", {})
            done = cached.get(fn, _MISSING) if _type(cached) is dict else _MISSING
            if slots.get("rewriter") is not rewriter or own_attributes(rewriter).get("fn") is not fn:
                found.append(f"{name}.rewriter")
            if "rewritten_fn" in slots or (done is not _MISSING and done is not _REWRITTEN.get(fn)):
                found.append(f"{name}.rewritten_fn")
        layer = slots.get("fn")
        if layer is None or _type(layer) is _function:
            return found
    return found


def _helpers_swapped(kernel) -> list[str]:
    """_swapped for every other kernel Triton made of a cell's def: the launched kernel may call any of them (a
    jit helper), whose fn or rewriter set to a plain def would run that inside the launch (red team 38). Triton's
    own kernels (gluon's) are not the notebook's to change."""
    born = [ref for ref, fn, _ in _list(_BORN.values()) if _type(fn) is _function and
            _cell(_str(fn.__code__.co_filename))]
    if _len(born) > MAX_RECORDS:
        return [f"more than {MAX_RECORDS} kernels, which the grader does not read each"]
    found = []
    for ref in born:
        layer = ref()
        if layer is not None and layer is not kernel:
            found += [f"a helper kernel's {what}" for what in _swapped(layer)]
    return found


def _born(init):
    """A kernel layer class's __init__, noting the fn (and the interpreter's rewriter) it made the layer with."""
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        slots, key = own_attributes(self), _id(self)
        _BORN[key] = (weakref.ref(self, lambda _: _BORN.pop(key, None)), slots.get("fn"), slots.get("rewriter"))
    return __init__


def _rewriting(rewrite):
    """The interpreter's rewriter, noting which rewrite it made of which function (a rewriter of its own class
    only: the class is Triton's, checked with the launch classes)."""
    def rewrite_ast(self):
        done = rewrite(self)
        fn = own_attributes(self).get("fn")
        if _type(fn) is _function:
            _REWRITTEN[fn] = done
        return done
    return rewrite_ast


def _counting(run):
    """A kernel class's run (what kernel[grid](...) calls), recording top-level launches while tracing."""
    def counted(self, *args, **kwargs):
        recorder = _state["recorder"]
        if recorder is not None and _any(_type(name) is not _str for name in kwargs):
            # a keyword named by an object of another class (a str subclass): Triton compares it with its own names
            # inside the launch, where its __eq__ would run unseen; looked at before any lookup compares it
            recorder.failed(self)
            raise TypeError("a launch's keywords are named by strings; one is named by an object of another class")
        if "warmup" in kwargs:
            # read once, made a plain bool: Triton then reads what this read (an object's __bool__ said True here and
            # False in Triton's run, which ran a launch this left unrecorded)
            kwargs["warmup"] = _bool(kwargs["warmup"])
        if recorder is None or kwargs.get("warmup"):
            return run(self, *args, **kwargs)
        # a launch of the notebook's: the first, or one its code made inside another (a grid's __index__ can launch)
        # where an autotuner's trials are Triton's
        top = _state["depth"] == 0 or made_by_cell(_getframe(1), _cell, _LAUNCH)
        grid = kwargs.get("grid")
        if top and grid is not None:       # the notebook's grid: what runs for it is the notebook's (grid_of)
            kwargs["grid"] = _partial(grid_of, grid) if callable(grid) else grid_of(grid, None)
        if top:
            recorder.launch(self, kwargs.get("grid"), args, kwargs)
        _state["depth"] += 1
        try:
            return run(self, *args, **kwargs)
        except BaseException:
            if top:       # values can leave in what it raised (an assert's message): the call may not go on
                recorder.failed(self)
            raise
        finally:
            _state["depth"] -= 1
    # an error of a launch (a keyword given twice) names Triton's run, as it would without the tracer
    counted.__name__, counted.__qualname__ = "run", _str(_getattr(run, "__qualname__", "run"))
    return counted


_LAUNCH = _counting(None).__code__     # the frame of a launch, where Triton's own calls start


def _cell(filename: str) -> bool:
    return filename.startswith(CELL)


def warm_up() -> None:
    """In the fork server: import Triton once, count kernel launches, register the tracer."""
    import os

    import nbtest
    import triton
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from triton.runtime import autotuner, interpreter, jit

    from ...core import probe

    nbtest.interpreter_as_on_gpu()   # as in the student's notebook: autotune and tl.reduce as on a GPU
    import triton.language as tl
    # Triton's interpreter prints a kernel's tl.device_print with Python's print, to whatever sys.stdout is then: a
    # wrapper that redirected it read the values the kernel loaded, with no torch call. The child's own stdout, as
    # a GPU prints to the process's
    out = sys.stdout
    interpreter.print = functools.partial(print, file=out)
    # a kernel's argument types: the exact ones (a tl.constexpr keeps what it holds in its own __dict__)
    _TRITON.update(constexpr=tl.constexpr, constexpr_value=lambda c: object.__getattribute__(c, "__dict__").get("value"),
                   dtypes=frozenset({tl.dtype, tl.pointer_type}), dir=os.path.dirname(triton.__file__) + os.sep)

    kernel_types = (jit.KernelInterface,)
    launching = (jit.JITFunction, interpreter.InterpretedFunction, autotuner.Autotuner, autotuner.Heuristics)
    for cls in launching:
        if "run" in cls.__dict__:
            cls.run = _counting(cls.__dict__["run"])
        if "__init__" in cls.__dict__:
            cls.__init__ = _born(cls.__dict__["__init__"])
    # what makes and runs an interpreted kernel's code: a cell that changes them changes every kernel's
    running = [getattr(interpreter, name, None) for name in ("FunctionRewriter", "ASTTransformer", "GridExecutor")]
    rewriter = running[0]
    if rewriter is not None and "rewrite_ast" in rewriter.__dict__:
        rewriter.rewrite_ast = _rewriting(rewriter.__dict__["rewrite_ast"])
    _LAYERS.update(launching)
    languages = [(name, module) for name, module in _list(sys.modules.items())
                 if name == "triton.language" or name.startswith("triton.language.")]
    classes = {id(c): (f"{name}.{c.__name__}", c) for name, module in languages for c in vars(module).values()
               if isinstance(c, type) and c.__module__.startswith("triton.language")}
    _LANGUAGE[:] = [(name, read, owner, dict(read(owner))) for name, read, owner in
                    [(name, _module_dict, module) for name, module in languages] +
                    [(name, _class_dict, c) for name, c in classes.values()]]
    _MACHINERY[:] = [(cls, dict(cls.__dict__)) for cls in dict.fromkeys(
        c for cls in (*launching, *filter(None, running)) for c in cls.__mro__ if c.__module__.startswith("triton."))]

    class Operators(TorchDispatchMode):
        supports_higher_order_operators = True      # wrap_triton's launch on CUDA (launch_through)

        def __init__(self, recorder):
            super().__init__()
            self.recorder = recorder

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if _isinstance(func, HigherOrderOperator):
                return launch_through(self, func, kwargs)
            name = _str(func.overloadpacket.__name__)
            self.recorder.op(name, _state["depth"] > 0)
            if made_by_cell(_getframe(1), _cell, _LAUNCH):    # not the read-back's copy onto the arena (core/arena.py)
                self.recorder.touched(name, (args, _list((kwargs or {}).values())))
            if types:
                self.recorder.handed(types)
            return func(*args, **(kwargs or {}))

    class Calls(TorchFunctionMode):
        def __init__(self, recorder):
            super().__init__()
            self.recorder = recorder

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if types:
                self.recorder.handed(types)
            if not made_by_cell(_getframe(1), _cell, _LAUNCH):
                return run_seen(self, func, types, args, kwargs)
            return run_recorded(self, func, types, args, kwargs, self.recorder.call)

    # torch's own stacks of modes, read as the call ends: a mode's __exit__ pops whatever mode is on top, so code
    # that pushes a stand-in where it popped the tracer's leaves both stacks as long as they were
    stacks = ((torch._C._len_torch_function_stack, torch._C._get_function_stack_at, "function modes"),
              (torch._C._len_torch_dispatch_stack, torch._C._get_dispatch_stack_at, "dispatch modes"))

    # torch's modes are each thread's own: a thread started during the call, or alive beside it (the child has no
    # other thread of its own), runs what it is handed unseen
    import _thread
    import threading
    start, alive = _thread.start_new_thread, _thread._count

    def start_new_thread(function, args, *kwargs):
        if _state["recorder"] is not None:
            _state["recorder"].threads += 1
        return start(function, args, *kwargs)
    _thread.start_new_thread = threading._start_new_thread = start_new_thread

    @contextlib.contextmanager
    def launches(module):
        recorder = _Recorder(module, kernel_types)
        _state["recorder"], _state["depth"] = recorder, 0
        try:
            modes = Calls(recorder), Operators(recorder)
            recorder.threads = alive()
            with modes[0], modes[1]:
                yield recorder
                recorder.modes = [name for (count, at, name), mode in zip(stacks, modes)
                                  if count() == 0 or at(count() - 1) is not mode]
            recorder.threads += alive()
        finally:
            _state["recorder"], _state["depth"] = None, 0

    probe.TRACERS["launches"] = launches
    with launches(None):             # the dispatch mode's first use, here rather than in every child
        torch.ones(2) + 1
