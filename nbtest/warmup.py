"""What runs once per process before a notebook's code: Triton's interpreter made to autotune, reduce and fault as a
GPU does, and torch's first-call work done before the monitor watches (so none of it is charged to a cell)."""
from __future__ import annotations

import ast
import functools
import inspect
import os
import sys
import textwrap
import weakref


def _run_once(kernel_call, quantiles) -> list[float]:
    kernel_call()
    return [0.0] * len(quantiles)   # all equal: the autotuner keeps the first config


def _benchmarker_or_run_once(autotuner):
    return autotuner._do_bench or _run_once


_INSTALLED = "interpreter_as_on_gpu.<locals>.__call__"   # GridExecutor.__call__ once installed


def interpreter_as_on_gpu() -> None:
    """Make Triton's interpreter (TRITON_INTERPRET=1, Triton imported) run four things as a GPU would, and keep
    its own globals out of a kernel's module; on a GPU, or before Triton is imported, it does nothing. Calling it
    again changes nothing.

    @triton.autotune: Triton's own benchmarker needs a GPU driver and fails with "0 active drivers". Each
    config then runs once (one that cannot run fails there) and the first is kept, so a grade never
    depends on the machine's load.

    tl.reduce with a combine function of the kernel's own (tl.sum, tl.max and the like have NumPy's): the
    interpreter folds the elements one after another, left to right, in the element's dtype, where a GPU
    combines them as a tree. In fp32 a sum folded so over 4096 values near 1000 is off by about 0.005,
    which a row's mean cannot afford; a tree's is not. The combine function runs here on halves of the
    block, neighbouring elements paired in order, as a GPU's tree pairs them (and log2(n) calls of it
    instead of n keep it fast).

    A load, store or atomic outside the launch's tensors (a kernel without masks): the interpreter reads and
    writes the raw addresses, past the tensors into whatever the process holds there, so what happens next depends
    on the heap (a crash now, a wrong value or an unrelated error later). On a GPU it is an illegal memory
    access or silent corruption. Each lane's address is checked against the storage of the launch's tensor
    arguments, and the first lane outside them raises an IndexError, before anything is written.

    A kernel's globals: a GPU's compiler lets a kernel read only constexpr globals, modules, other kernels and
    triton.language's names, where the interpreter ran whatever a global held. At each launch the kernel, and each
    @triton.jit function it reads, is checked so (plain numbers and strings pass, as they always did here), and
    Triton's NameError is raised for any other global (_globals_as_on_gpu).

    A kernel's source: the interpreter runs the def that starts at the last line of the kernel's source beginning
    "def ", which a string in it (a docstring, a static_assert's message) may hold, so the text in that string ran
    in place of the kernel's body. It now runs the def itself, as a GPU's compiler does (_find_def).

    An autotuner's trials: each config's trial run writes the launch's tensors, and what it wrote stayed where a
    GPU's later run would overwrite it, so configs that each computed a part of the outputs (one h, another y) added
    up to a kernel that computes both. Each trial's writes are undone as it ends (what Triton's restore_value does
    for the tensors it names): what a call leaves is what the config kept computes alone."""
    if os.environ.get("TRITON_INTERPRET") != "1" or "triton" not in sys.modules:
        return
    from triton.runtime import interpreter
    from triton.runtime.autotuner import Autotuner

    from .tensor_values import grid_of     # torch's too: imported here, where Triton is, never by nbtest's own import

    if getattr(interpreter.GridExecutor.__dict__.get("__call__"), "__qualname__", "") == _INSTALLED:
        # once: the grader's child runs this again with the notebook, and counts a changed Triton class
        return
    global _TRITON_KINDS
    _TRITON_KINDS = _triton_kinds()
    Autotuner.do_bench = property(_benchmarker_or_run_once)
    bench = _ORIGINALS.setdefault("bench", Autotuner._bench)

    def _bench(self, *args, config, **meta):
        outer, _TRIAL[0] = _TRIAL[0], True
        try:
            return bench(self, *args, config=config, **meta)
        finally:
            _TRIAL[0] = outer

    Autotuner._bench = _bench
    interpreter.ReduceOps.generic_reduce = _tree_reduce
    builder, executor = interpreter.InterpreterBuilder, interpreter.GridExecutor
    originals = _ORIGINALS.setdefault("interpreter", {name: getattr(builder, name) for name, *_ in _MEMORY_OPS})
    for name, what, ptr, mask in _MEMORY_OPS:
        setattr(builder, name, _checked(originals[name], what, ptr, mask))
    init_args = _ORIGINALS.setdefault("init_args", executor._init_args_hst)
    launch = _ORIGINALS.setdefault("launch", executor.__call__)

    def _init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        _LAUNCH[0] = _storage_ranges([*args_hst, *kwargs_hst.values()])
        return args_hst, kwargs_hst

    def __call__(self, *args, **kwargs):
        # the launch's ranges hold while it runs, and the caller's come back when it ends: a launch nested in
        # another's grid or hook, or a kernel called as a plain function after a launch, reaches no storage
        # of a launch that is not its own (one since freed, whose memory now holds other objects)
        outer = _LAUNCH[0]
        # a trial's tensors as they were before it, put back as it ends (on a CPU the interpreter writes them in place)
        storages = {s.data_ptr(): s for s in _storages([*args, *kwargs.values()])} if _TRIAL[0] else {}
        saved = [(storage, storage.clone()) for storage in storages.values()]
        try:
            _globals_as_on_gpu(_ORIGINAL_OF.get(self.fn, self.fn), set())   # the def itself when not rewritten
            # a grid function called as a GPU's launch calls it (_meta), and the grid's entries made ints
            self.grid = grid_of(self.grid, _meta(self.fn, args, kwargs) if callable(self.grid) else None)
            return launch(self, *args, **kwargs)
        finally:
            _LAUNCH[0] = outer
            for storage, before in saved:
                storage.copy_(before)

    executor._init_args_hst = _init_args_hst
    executor.__call__ = __call__

    # A kernel's first launch rewrites it (FunctionRewriter) and copies every global of the interpreter's module
    # that the kernel's module lacks into it: into the notebook's namespace, where a cell then finds
    # _interpreter, whose load and store take raw addresses and pass no check, and np. Only the names the
    # rewrite itself writes into the kernel's code (_InterpreterComparison, interpreter_semantic) stay, and
    # triton.language under its names there (tl), which the interpreter then looks for in a kernel's globals.
    rewriter = interpreter.FunctionRewriter
    transform = _ORIGINALS.setdefault("transform", rewriter._transform_ast)
    compile_and_exec = _ORIGINALS.setdefault("compile_and_exec", rewriter._compile_and_exec)

    def _transform_ast(self, src):
        self.nbtest_written = _names(ast.parse(src))
        return transform(self, src)

    def _compile_and_exec(self, transformed_ast):
        namespace = self.fn.__globals__
        before = set(namespace)
        try:
            done = compile_and_exec(self, transformed_ast)
            _ORIGINAL_OF[done] = self.fn
            return done
        finally:
            generated = _names(transformed_ast) - getattr(self, "nbtest_written", set())
            for name in set(namespace) - before - generated:
                if not getattr(namespace[name], "__name__", "").startswith("triton.language") or \
                        type(namespace[name]) is not type(sys):
                    del namespace[name]

    rewriter._transform_ast = _transform_ast
    rewriter._compile_and_exec = _compile_and_exec
    rewriter._find_def = _find_def


def _find_def(self, lines: list[str]) -> int:
    """FunctionRewriter._find_def: the line of the kernel's def in its source lines (decorators first), counted from 1,
    read from the syntax tree, where a line in a string is the string's."""
    return ast.parse(textwrap.dedent("".join(lines))).body[0].lineno


_ORIGINAL_OF = weakref.WeakKeyDictionary()     # a kernel's rewrite -> the function it was made from
_PLAIN = frozenset({int, float, bool, str, type(None)})


def _globals_as_on_gpu(fn, seen: set) -> None:
    """Raise NameError for a global that kernel fn, or a @triton.jit function it calls, reads and a GPU's compiler
    refuses. Triton's compiler lets a kernel read constexpr globals, modules, other kernels and triton.language's
    names (CodeGenerator's global_lookup); the interpreter runs whatever a global holds, so an object of the
    notebook's read there (a list holding an object whose __add__ reads the loaded blocks) runs Python inside the
    launch. Plain numbers and strings, which run no code, are let through as the interpreter always did."""
    code = getattr(fn, "__code__", None)
    if code is None or code in seen:
        return
    seen.add(code)
    namespace = fn.__globals__
    for name in _globals_read(code):
        if name not in namespace:
            continue       # a builtin
        value = namespace[name]
        if not _readable_on_gpu(value):
            raise NameError(f"Cannot access global variable {name} from within @jit'ed function {fn.__name__}: on a "
                            "GPU, Triton's compiler lets a kernel read only constexpr globals (x = "
                            "triton.language.constexpr(42)), modules, other @triton.jit functions and "
                            "triton.language's names, and the interpreter does the same here")
        inner = value
        for _ in range(8):     # a kernel it calls: an autotuner's .fn, a JITFunction's .fn, down to the def
            if not issubclass(type(inner), _kernel_classes()):
                break
            inner = inspect.getattr_static(inner, "fn", None)
        if type(inner) is type(_run_once) and inner is not value:
            _globals_as_on_gpu(inner, seen)


@functools.lru_cache(maxsize=512)
def _globals_read(code) -> tuple[str, ...]:
    """The global names that code, and the code nested in it, loads, in order: read once per kernel, not per launch."""
    import dis

    codes, names = [code], []
    while codes:
        current = codes.pop()
        names += [i.argval for i in dis.get_instructions(current) if i.opname == "LOAD_GLOBAL"]
        codes += [c for c in current.co_consts if isinstance(c, type(code))]
    return tuple(dict.fromkeys(names))


def _readable_on_gpu(value) -> bool:
    """Whether a kernel may read a global holding value: plain data, a module imported under its name, or an object
    of Triton's own (a kernel, a constexpr of plain data, a dtype, a name of triton.language)."""
    import triton.language as tl

    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is tuple:
        return all(_readable_on_gpu(v) for v in value)
    if kind is type(sys):
        return sys.modules.get(inspect.getattr_static(value, "__name__", None)) is value
    if kind is tl.constexpr:
        return _readable_on_gpu(object.__getattribute__(value, "__dict__").get("value"))
    if issubclass(kind, (*_kernel_classes(), tl.dtype)):
        return kind in _TRITON_KINDS
    return _language_values().get(id(value)) is value


def _kernel_classes() -> tuple[type, ...]:
    """What @triton.jit and its decorators make: a JITFunction (an InterpretedFunction here), an autotuner."""
    from triton.runtime.jit import JITCallable, KernelInterface
    return KernelInterface, JITCallable


def _triton_kinds() -> frozenset[type]:
    """Triton's own kernel and dtype classes, read before any notebook code runs: a class of the notebook's that
    derives from one and names a triton module as its own (red team 39) is not among them. Less the constexpr
    functions, which run their Python on a kernel's blocks here, and on a GPU only on constexprs as it compiles
    (red team 39: triton.constexpr_function of a def that computed the row in NumPy)."""
    import triton.language as tl
    from triton.runtime import jit

    found, todo = set(), [*_kernel_classes(), tl.dtype]
    while todo:
        kind = todo.pop()
        if kind not in found:
            found.add(kind)
            todo += kind.__subclasses__()
    return frozenset(found - {getattr(jit, name, None) for name in ("ConstexprFunction", "BoundConstexprFunction")})


_TRITON_KINDS: frozenset[type] = frozenset()      # _triton_kinds(), once Triton is imported (interpreter_as_on_gpu)


def _language_values() -> dict:
    """id -> value of triton.language's modules' names (tl.program_id, tl.float32, ...), read once."""
    if not _LANGUAGE_VALUES:
        _LANGUAGE_VALUES.update((id(v), v) for name, module in list(sys.modules.items())
                                if name == "triton.language" or name.startswith("triton.language.")
                                for v in list(vars(module).values()))
    return _LANGUAGE_VALUES


_LANGUAGE_VALUES: dict = {}


def _meta(fn, args: tuple, kwargs: dict) -> dict:
    """What a GPU's launch hands a grid function: the kernel's arguments by name, as the launch was given them
    (tensors as torch's). The interpreter calls the grid inside the launch, handed its own pointers, with
    triton.language patched to run on them: there a grid's tl.load and tl.store read and write the tensors by
    address, Python running the kernel's work where no kernel runs. Called before the launch, with this, it runs as
    on a GPU."""
    params = inspect.signature(fn).parameters
    return inspect.getcallargs(fn, *args, **{k: v for k, v in kwargs.items() if k in params})


def _names(tree) -> set[str]:
    """The names a parsed module reads or binds."""
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


# The interpreter's methods that read or write memory at raw addresses (tl.load and tl.store, tensor
# descriptors' and atomic loads and stores among them): (name, what it does, its pointer and mask arguments).
_MEMORY_OPS = (("create_masked_load", "tl.load reads", "ptrs", "mask"),
               ("create_masked_store", "tl.store writes", "ptrs", "mask"),
               ("create_atomic_rmw", "an atomic writes", "ptr", "mask"),
               ("create_atomic_cas", "tl.atomic_cas writes", "ptr", None))


def _checked(method, what: str, ptr: str, mask: str | None):
    """method, with its active lanes' addresses checked first."""
    import inspect
    signature = inspect.signature(method)

    def check_then_run(*args, **kwargs):
        bound = signature.bind(*args, **kwargs).arguments
        _in_bounds(bound[ptr], bound[mask] if mask else None, what)
        return method(*args, **kwargs)
    return check_then_run


# how the out-of-bounds fault begins (the hidden suite names the missing mask from it)
OUT_OF_BOUNDS = "out of bounds (no mask?)"
# the interpreter's own methods, kept once however often interpreter_as_on_gpu runs
_ORIGINALS: dict = {}
# the current launch's [(first byte, end)] of each storage it was handed; outside a launch none: a kernel called
# as a plain Python function (a device function's call, which the interpreter runs with no launch) reaches nothing
_LAUNCH: list = [[]]
_TRIAL = [False]     # whether an autotuner's trial of a config is running


def _storage_ranges(args) -> list:
    """The byte ranges of the tensors among a launch's arguments as the interpreter hands them to the kernel
    (its host copies), each storage's (_storages)."""
    return [(storage.data_ptr(), storage.data_ptr() + storage.nbytes()) for storage in _storages(args)]


def _storages(args) -> list:
    """The storages of the tensors among a launch's arguments (in tuples, a TensorDescriptor's base). An argument
    with a pointer and no tensor's storage (an object of the notebook's with its own data_ptr, which the interpreter
    hands the kernel as a pointer to whatever address it returns) has none: what its pointer reaches is unknown, and
    the bounds that _storage_ranges sets refuse it."""
    import torch
    from triton.runtime.jit import TensorWrapper
    from triton.tools.tensor_descriptor import TensorDescriptor

    storages = []
    for arg in args:
        storages += (_storages(arg) if isinstance(arg, tuple) else
                     _storages([arg.base]) if isinstance(arg, (TensorWrapper, TensorDescriptor)) else [])
        if type(arg) in (torch.Tensor, torch.nn.Parameter):    # a subclass's own untyped_storage could answer
            storages.append(arg.untyped_storage())              # with any storage, one freed the moment after
    return storages


def _in_bounds(ptrs, mask, what: str) -> None:
    """Raise IndexError if an active lane's element (all lanes', with no mask) lies outside every storage of
    the current launch."""
    import numpy as np
    from triton.runtime.interpreter import _get_np_dtype

    ranges = _LAUNCH[0]
    addresses = np.asarray(ptrs.data, dtype=np.uint64)
    active = np.ones(addresses.shape, dtype=bool) if mask is None else np.asarray(mask.data, dtype=bool)
    addresses, active = np.broadcast_arrays(addresses, active)
    size = _get_np_dtype(ptrs.get_element_ty()).itemsize
    inside = np.zeros(addresses.shape, dtype=bool)
    for first, end in ranges:
        if end - first >= size:     # compared as written, never summed: an address near 2**64 would wrap
            inside |= (addresses >= np.uint64(first)) & (addresses <= np.uint64(end - size))
    outside = active & ~inside
    if outside.any():
        lanes = np.flatnonzero(outside.ravel())
        raise IndexError(f"{OUT_OF_BOUNDS}: {what} {lanes.size} of its {outside.size} lanes outside every "
                         f"tensor passed to the kernel, the first at lane {lanes[0]}; a GPU faults there or corrupts "
                         "memory. Mask the lanes past the end of the data (mask=offsets < n).")


def _tree_reduce(self, input):
    """ReduceOps.generic_reduce (Triton 3.9's interpreter), pairing neighbours level by level."""
    import numpy as np
    import triton.language as tl

    original_axis = self.axis
    input, axis = self.unravel(input, self.axis)
    dtypes = [t.dtype for t in input]
    data = [t.handle.data for t in input]
    input_shape = data[0].shape
    while data[0].shape[axis] > 1:
        n = data[0].shape[axis]
        pairs = n - n % 2
        left = [self.to_tensor(np.take(d, range(0, pairs, 2), axis=axis), t) for d, t in zip(data, dtypes)]
        right = [self.to_tensor(np.take(d, range(1, pairs, 2), axis=axis), t) for d, t in zip(data, dtypes)]
        out = self.combine_fn.fn(*left, *right)
        out = out if isinstance(out, tuple) else (out,)
        shape = left[0].handle.data.shape
        merged = [np.broadcast_to(o.handle.data if isinstance(o, tl.core.tensor) else np.asarray(o), shape)
                  .astype(d.dtype) for o, d in zip(out, data)]
        if n % 2:   # the odd one out goes up a level unpaired, after the others
            merged = [np.concatenate([m, np.take(d, [n - 1], axis=axis)], axis=axis) for m, d in zip(merged, data)]
        data = merged
    ret = []
    for d, t in zip(data, dtypes):
        if not self.keep_dims:
            d = np.squeeze(d, axis=axis)
            if original_axis is None:
                d = d.item()
        elif original_axis is None:
            d = d.reshape((1,) * len(input_shape) if input_shape else ())
        ret.append(self.to_tensor(d, t))
    return ret


def first_calls(optimizer: bool = True) -> None:
    """What torch does once per process, done before student code is watched or graded: the first attention
    call and backward set up their kernels; the first optimizer step imports torch._dynamo (1.5 s), whose
    libraries build code from strings (mpmath, typing's forward references). The grader's fork server and
    the public tests' watch (rules.py) take the optimizer step only for code that names torch.optim (names_optim): code that
    never steps one would pay 1.5 s for nothing."""
    import torch
    x = torch.ones(1, 2, 2, requires_grad=True)
    attention = torch.nn.MultiheadAttention(2, 1, batch_first=True)
    torch.autograd.backward(torch.sum(attention(x, x, x, need_weights=False)[0]))
    if optimizer:
        # The step imports Triton (through torch._dynamo), which reads TRITON_INTERPRET once: without a GPU,
        # set it first, as fused-add-norm's setup cell does, or that notebook's kernels, loaded later in
        # this process (pytest over both assignments), would not run in the interpreter.
        if "TRITON_INTERPRET" not in os.environ and "triton" not in sys.modules and not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
        p = torch.nn.Parameter(torch.ones(1))
        torch.sum(p).backward()
        torch.optim.SGD([p], lr=0.1, momentum=0.9).step()
        interpreter_as_on_gpu()     # the step may have imported Triton: its interpreter checked as a notebook's


def names_optim(sources, parse=None) -> bool:
    """Whether these cells name torch.optim in code (words in a docstring do not count). parse: ast.parse by
    default; the grader's threads pass their shared one (cellcode.parse, one thread at a time)."""
    import ast
    for source in sources:
        if "optim" in source:
            try:
                tree = (parse or ast.parse)(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if any(isinstance(n, ast.Attribute) and n.attr == "optim" or isinstance(n, ast.Name) and n.id == "optim"
                   or isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torch.optim")
                   or isinstance(n, ast.Import) and any(a.name.startswith("torch.optim") for a in n.names)
                   or isinstance(n, ast.alias) and n.name == "optim" for n in ast.walk(tree)):
                return True
    return False
