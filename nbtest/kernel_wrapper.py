"""fused-add-norm's kernel wrapper rules: the wrapper only checks its arguments, allocates, reshapes and
launches one notebook kernel once; it computes nothing with torch; each kernel is Triton operations only;
and each name they check is bound by its checked def alone.

    out = check_fused(Notebook(cells), "fused_add_layernorm")    # [Violation, ...], severity flag

policy.check_cells runs it when the assignment names a kernel wrapper (course.toml's kernel_wrapper).
The wrapper's calls are followed into the notebook's own functions and plain classes, and each callee
must be one the policy can name (docs/security.md lists what it allows).
"""
from __future__ import annotations

import ast
import collections
import copy
import functools

from .cellcode import (EXCEPTIONS, FLAG, HONEST_MODULES, Notebook, Violation, _arguments,
                       _constant_default, _is_literal, _only_read, _parameters, after_docstring,
                       holds_no_tensor, is_getter, is_stub, library_decorator, quote)

# allocations that carry no value of the caller's: empty, zeros and ones (a weight of ones for weight=None), never
# full or tensor, whose values the wrapper would give
WRAPPER_ALLOC = {"torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
                 "torch.ones", "torch.ones_like"}
# allocations filled with a value the call names (torch.full_like(x, float("nan")): outputs poisoned until the kernel
# writes them): allowed where that value is a literal, which carries no value of the caller's either
WRAPPER_FILLS = {"torch.full", "torch.full_like"}
FILL_METHODS = {"new_full"}
FILL_CONSTANTS = {"math.nan", "math.inf", "torch.nan", "torch.inf"}
WRAPPER_SCALAR_FUNCS = {
    "len", "min", "max", "int", "float", "bool", "abs", "round", "tuple", "list", "next", "iter", "range",
    "isinstance", "str", "repr", "print", "all", "any", "zip", "enumerate", "dict", "divmod", "type", "ValueError",
    "TypeError", "RuntimeError", "NotImplementedError", "AssertionError", "torch.Size", "torch.broadcast_shapes",
    "torch.is_tensor", "torch.cuda.is_available", "torch.cuda.device", "torch.no_grad", "torch.finfo", "torch.iinfo",
    # a device and dtypes, named or compared, and whether autograd is on: no tensor's values
    "torch.device", "torch.get_default_dtype", "torch.promote_types", "torch.can_cast", "torch.is_grad_enabled",
    "triton.next_power_of_2", "triton.cdiv",
    # a type checker's annotation, which hands back what it is given; a fold of plain data (the rows, a product
    # of sizes), whose function is walked as called (_Body.handed) and whose result is as plain as it returns
    "typing.cast", "functools.reduce",
    # the device a launch runs on, and how many programs it holds (a persistent kernel's grid), and the
    # context managers that choose it or turn autograd off around the launch
    "torch.cuda.current_device", "torch.cuda.device_count", "torch.cuda.get_device_capability",
    "torch.cuda.get_device_name", "torch.cuda.get_device_properties", "torch.cuda.device_of", "torch.inference_mode",
    # waiting for the launch to finish (its errors surface at the wrapper's line), which reads no values
    "torch.cuda.synchronize"}
TENSOR_VIEW_METHODS = {"reshape", "view", "view_as", "reshape_as", "contiguous", "flatten", "unflatten", "squeeze",
                       "unsqueeze", "expand", "expand_as", "transpose", "permute", "movedim", "t", "to", "float",
                       "half", "bfloat16", "double", "clone", "detach", "cpu", "cuda", "type_as", "new_empty",
                       "new_zeros", "new_ones",
                       # views of parts of a tensor: one buffer allocated for h and y, then h, y = out.unbind(0)
                       "unbind", "split", "chunk", "narrow", "select"}
# torch's functions that return views of their tensors and are no tensor method (torch.atleast_2d(x).flatten(0, -2))
VIEW_FUNCTIONS = {"torch.atleast_1d", "torch.atleast_2d", "torch.atleast_3d"}
SCALAR_METHODS = {"size", "dim", "numel", "stride", "element_size", "nelement", "ndimension", "is_contiguous",
                  "data_ptr", "get_device", "storage_offset", "is_floating_point",
                  # what kind of tensor it is, read off its dtype and flags (never is_nonzero, which reads a value)
                  "is_complex", "is_signed", "is_inference", "is_conj", "is_neg", "is_pinned"}
SCALAR_ATTRIBUTES = {"shape", "ndim", "dtype", "device", "is_cuda", "layout", "requires_grad", "itemsize"}
# an int's own, in a heuristic: 1 << (n - 1).bit_length(), the next power of two (a tensor has no such method)
INT_METHODS = {"bit_length"}
SCALAR_ANNOTATIONS = {"int", "float", "bool", "str"}
# builtins that pack tensors without reading their values (argument checks over dict(x=x, ...) or
# zip(names, tensors), the first of them that fails one: next(t for t in ... if ...)); what they return holds the
# tensors, so computing on it is still seen
PACKING = {"dict", "zip", "enumerate", "tuple", "list", "next", "iter"}
PACKING_METHODS = {"items", "values", "keys"}
# methods of plain data a wrapper's checks and messages call on what is not a tensor (max(n - 1, 0).bit_length(),
# ", ".join(names)): every public method of Python's plain types that neither a tensor nor torch has, so that
# none can compute on a tensor under another name (type(x).numpy), and of those both have, the ones that
# read no values (str.split and Tensor.split, a view; str.index, torch.Size.numel, dict.values)
PLAIN_TYPES = (int, float, bool, complex, str, bytes, tuple, list, dict, set, frozenset)
VIEW_METHODS = {"split", "index", "numel", "values"}


@functools.cache
def plain_methods() -> frozenset[str]:
    """PLAIN_TYPES' public methods less torch's and torch.Tensor's names, with VIEW_METHODS (torch is imported
    here, when a wrapper is first checked, not with the policy)."""
    import torch
    return frozenset({m for t in PLAIN_TYPES for m in dir(t) if not m.startswith("_")}
                     - set(dir(torch.Tensor)) - set(dir(torch)) | VIEW_METHODS)
@functools.cache
def function_forms() -> frozenset[str]:
    """torch.NAME for each method of SCALAR_METHODS and TENSOR_VIEW_METHODS that torch also has as a function
    (torch.reshape(x, s) is x.reshape(s), torch.numel(x) is x.numel()); not a dtype (torch.float) or a module
    (torch.cuda), which share a method's name and are no function of it. And torch.Tensor.NAME for each: the
    method itself, torch.Tensor.contiguous(x) is x.contiguous() (map(torch.Tensor.contiguous, (x, fx))). And
    VIEW_FUNCTIONS."""
    import torch
    methods = SCALAR_METHODS | TENSOR_VIEW_METHODS
    return frozenset({f"torch.{m}" for m in methods
                      if callable(getattr(torch, m, None)) and not isinstance(getattr(torch, m), (type, torch.dtype))}
                     | {f"torch.Tensor.{m}" for m in methods if callable(getattr(torch.Tensor, m, None))}
                     | VIEW_FUNCTIONS)


# those a list, dict or set holding tensors answers with what it holds (a tensor has none of these methods)
CONTAINER_METHODS = {"get", "append", "extend", "pop", "setdefault", "update", "insert", "copy", "clear"}
# a named tuple's own methods (launch_for(n)._asdict()), which only copy its fields: named so that no field can be
NAMEDTUPLE_METHODS = {"_asdict", "_replace"}
# builtins whose result is a number, string or bool of Python's own, whatever they are given, and those whose
# result is as plain as what they are given (a container of Python's own built from it, one of its items)
SCALAR_BUILTINS = {"str", "repr", "format", "int", "float", "bool", "len", "isinstance"}
ITEM_BUILTINS = {"list", "tuple", "dict", "set", "frozenset", "sorted", "range", "enumerate", "zip", "reversed",
                 "min", "max", "abs", "round", "sum", "divmod", "next", "iter"}
# methods that hand out a container's items, and those that store what they are given in it
ITEM_METHODS = {"get", "pop", "popitem", "setdefault", "values", "items", "copy", "index"}
STORING_METHODS = {"append", "extend", "insert", "add", "update", "setdefault"}
# builtins that may take a tensor without reading its values
PASSIVE_BUILTINS = {"len", "isinstance", "type", "print", "str", "repr", "ValueError", "TypeError", "RuntimeError",
                    "NotImplementedError", "AssertionError", "torch.is_tensor", "torch.cuda.device_of", "typing.cast",
                    *PACKING}

KERNEL_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics"}
KERNEL_TYPES = {"int", "float", "bool"}          # the Python types Triton reads as i32, fp32 and u1
KERNEL_BUILTINS = {"range", "min", "max", "abs", "int", "float", "len", "True", "False", "None"}
KERNEL_METHODS = {"to", "dtype", "type", "element_ty", "shape", "reshape", "view", "trans", "permute", "broadcast_to",
                  "expand_dims", "sum", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "exp", "log",
                  "sqrt", "abs", "ravel", "split", "T", "value", "primitive_bitwidth", "is_floating",
                  "is_fp16", "is_bf16", "is_fp32"}
TL_MODULES = {"math", "extra"}                   # tl.math.X, tl.extra.cuda.libdevice.X
TL_REFUSED = {"core", "semantic", "standard", "target_info", "inline_asm_elementwise", "random"}


def check_fused(ctx: Notebook, wrapper: str) -> list[Violation]:
    """The kernels' and the wrapper's violations, and every rebinding of a name they checked."""
    out = []
    constants = _decorator_constants(ctx) if any(isinstance(d, ast.Call) for _, fn in ctx.kernels.values()
                                                 for d in fn.decorator_list) else frozenset()
    for name, (label, fn) in ctx.kernels.items():
        if not is_stub(fn):
            out += _Kernel(label, ctx.sources[label], ctx, fn, constants).run()
    if wrapper in ctx.functions and not is_stub(ctx.functions[wrapper][1]):
        label, fn = ctx.functions[wrapper]
        out += _Wrapper(ctx, wrapper).run(label, fn)
    # the kernel rules read the kernels and the functions their decorators name; the wrapper rules read the rest
    checked = {wrapper, *ctx.kernels, *ctx.functions, *ctx.classes}
    kernel_side = checked & (set(ctx.kernels) | {node.id for _, fn in ctx.kernels.values() for d in fn.decorator_list
                                                 for node in ast.walk(d) if isinstance(node, ast.Name)})
    return out + _rebound(ctx, kernel_side, "rebound") + _rebound(ctx, checked - kernel_side, "wrapper-rebound") + \
        _kernel_attributes(ctx)


def _kernel_attributes(ctx: Notebook) -> list[Violation]:
    """A kernel's attributes are Triton's: its heuristics' values, hooks and configs run inside the launch,
    handed its tensors (fused_add_layernorm_kernel.values.update(BLOCK=f)). Flags an attribute of a kernel's
    name, of a module-level name bound only to one, or of an item of a table of kernels, in any cell, but
    reading the autotuner's best_config."""
    names = set(ctx.kernels) | {name for name, nodes in ctx.module_bindings.items() if all(
        isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in ctx.kernels for n in nodes)}
    kernel = lambda v: isinstance(v, ast.Name) and v.id in names or isinstance(v, ast.Subscript) and \
        isinstance(v.value, ast.Name) and _kernel_table(v.value.id, ctx)
    out = []
    for label, tree in ctx.trees.items():
        if not ctx.student[label]:
            continue
        for node in ast.walk(tree):
            # setattr(kernel, "fn", f) is kernel.fn = f: any of the attribute builtins handed a kernel
            handed = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and \
                node.func.id in ("setattr", "delattr", "getattr", "hasattr") and kernel(node.args[0])
            if handed or isinstance(node, ast.Attribute) and kernel(node.value) and not (
                    node.attr == "best_config" and isinstance(node.ctx, ast.Load)):
                out.append(Violation(label, node.lineno, "kernel-attribute", FLAG, f"'{ast.unparse(node)[:60]}': a "
                                     "kernel's attributes are Triton's (its heuristics, hooks and configs run inside "
                                     "the launch, handed its tensors); launch it as kernel[grid](...) only",
                                     quote(ctx.sources[label], node.lineno)))
    return out


def _rebound(ctx: Notebook, names: set[str], rule: str) -> list[Violation]:
    """The checks above read each function's last top-level def; they hold only while the name still
    holds that def when the cells have run. Flags (as `rule`) every binding of these names after it (an
    assignment, an import, a loop or with target, a def nested in an if, a del), any binding of the wrapper
    where no def of it is checked, a `global` for them in any function, and a decorator on the wrapper or a
    helper (it replaces the def by what it returns) unless it is a library's given plain data, and then
    any use of the name but a call."""
    out = []
    for label, node, bound in ctx.top_bindings:
        final = ctx.functions.get(bound) or ctx.kernels.get(bound) or ctx.classes.get(bound)
        if not ctx.student[label] or bound not in names or (final is not None and final[1] is node):
            continue
        at, last = (ctx.order[label], node.lineno), (ctx.order[final[0]], final[1].lineno) if final else None
        if final is None or last < at:
            out.append(Violation(label, node.lineno, rule, FLAG, f"'{bound}' is bound again here, so the "
                                 "function the grader checked is not the one the tests call: define it once, "
                                 "with def, and leave the name alone", quote(ctx.sources[label], node.lineno)))
        elif any(at < (ctx.order[where], read.lineno) < last for read, where in ctx.loads.get(bound, [])):
            # read before its checked def binds it again (a partial, a decorator's argument, an object built):
            # what was read is this binding, which the grader did not check
            out.append(Violation(label, node.lineno, rule, FLAG, f"'{bound}' is bound here and read before "
                                 "the def the grader checks binds it again: define it once, with def",
                                 quote(ctx.sources[label], node.lineno)))
    for label, tree in ctx.trees.items():
        for node in ast.walk(tree) if ctx.student[label] else ():
            if isinstance(node, ast.Global) and names & set(node.names):
                out.append(Violation(label, node.lineno, rule, FLAG, f"'global {', '.join(names & set(node.names))}'"
                                     " lets a function rebind a name the grader checked", quote(ctx.sources[label], node.lineno)))
    decorated = set()
    for name, (label, fn) in ctx.functions.items():
        if name not in names or not fn.decorator_list:
            continue
        own = next((d for d in fn.decorator_list if not library_decorator(d, ctx)), None)
        if own is not None:
            out.append(Violation(label, own.lineno, rule, FLAG, f"a decorator on {name} that is not a library's "
                                 "given plain data: the name then holds what it returns, not the def the grader "
                                 "checked", quote(ctx.sources[label], own.lineno)))
        else:
            decorated.add(name)
    return out + _not_called(ctx, decorated, rule)


def _not_called(ctx: Notebook, names: set[str], rule: str) -> list[Violation]:
    """What a library decorator returned may hold more than the def: a dispatch registry
    (functools.singledispatch's register), attributes to replace. The notebook may only call it: any other
    use of the name (an attribute, an alias, an argument) is flagged."""
    out = []
    for label, tree in ctx.trees.items():
        if not (ctx.student[label] and names):
            continue
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load) and \
                    id(node) not in called:
                out.append(Violation(label, node.lineno, rule, FLAG, f"'{node.id}' is decorated, and used "
                                     "here other than called: through it, what the decorator returned could run "
                                     "something else than the def the grader checked; only call it",
                                     quote(ctx.sources[label], node.lineno)))
    return out


class _Wrapper:
    """The wrapper (and the notebook functions it calls) may check shapes, allocate, reshape and
    launch one notebook kernel once; any computing on the data is the kernel's."""

    def __init__(self, ctx: Notebook, name: str):
        self.ctx, self.name = ctx, name
        self.found: list[Violation] = []
        self.launches: list[tuple[ast.AST, tuple]] = []   # (node, branch path)
        self.seen: dict[tuple, bool] = {}   # (class, function, the parameters holding tensors) walked -> returns one
        self.fields: set[str] = set()   # attributes of the notebook's objects that some walked code sets to a tensor
        # attribute -> whether every store of it walked gave a tensor or plain data; the defs walked; and where
        # each attribute is stored (_init_stores): together, the fields that hold plain data (plain_field)
        self.field_stores: dict[str, bool] = {}
        self.walked: set[int] = set()
        self.init_stores = _init_stores(ctx)
        self.unsure = False     # a field read in this pass was not yet known to hold plain data
        self.partials = _module_partials(ctx)
        self.plain_returns: dict[tuple, bool] = {}   # (def, its opaque parameters) -> whether it returns plain data
        self.lambdas: dict[int, tuple] = {}   # id(a table's lambda) -> lambda_def
        # what the course's own cells bind and the student's never do (MAX_WIDTH, DTYPES): the course's data
        self.release_names = {name for label, _, name in ctx.top_bindings if not ctx.student[label]} - ctx.bound

    def returns_plain(self, label: str, fn, opaque: frozenset[str], outer: "_Body | None" = None,
                      cls: str | None = None) -> bool:
        """Whether every `return` of fn (not of the defs in it) gives plain data (_Body.plain), its `opaque`
        parameters handed what is not; a def nested in `outer` reads outer's names as they are there; a getter
        of the notebook class cls has its first parameter bound to an instance. False for a recursive call,
        while it is being worked out."""
        own = _own_names(fn)
        if outer is not None:
            opaque |= frozenset(outer.opaque_names() - own)
        key = (id(fn), opaque, cls)
        if key not in self.plain_returns:
            self.plain_returns[key] = False
            params = _arguments(fn.args)
            body = _Body(self, label, set(), {params[0].arg: cls} if cls is not None and params else None,
                         local=own | (outer.own if outer is not None else set()), fn=fn, opaque=opaque)
            self.plain_returns[key] = all(n.value is None or body.plain(n.value) for n in _returns(fn.body))
        return self.plain_returns[key]

    def flag(self, label, node, rule, message):
        self.found.append(Violation(label, node.lineno, rule, FLAG, message, quote(self.ctx.sources[label], node.lineno)))

    def lambda_def(self, node: ast.Lambda, body: "_Body") -> tuple[ast.FunctionDef, str, bool]:
        """A table's lambda as the def it could be, the same def each time (walks are remembered by def): with the
        cell it stands in and whether it is the walked function's own (its names then read as that function's)."""
        if id(node) not in self.lambdas:
            fn = ast.copy_location(ast.FunctionDef(name="<lambda>", args=node.args, body=[
                ast.copy_location(ast.Return(node.body), node.body)], decorator_list=[], returns=None), node)
            local = body.fn is not None and any(n is node for n in ast.walk(body.fn))
            label = body.label if local else next(
                (lb for lb, tree in self.ctx.trees.items() if any(n is node for n in ast.walk(tree))), body.label)
            self.lambdas[id(node)] = fn, label, local
        return self.lambdas[id(node)]

    def plain_field(self, cls: str, attr: str) -> bool:
        """Whether the attribute of an instance of cls holds plain data: it is set only by `self.attr = value` in
        the __init__ of cls or of a notebook base of it, each such __init__ walked, and every store walked gave
        plain data (or a tensor: fields); no def of the class is so named (a property's setter)."""
        inits = self.init_stores.get(attr)
        line = _notebook_bases(cls, self.ctx)
        chain = {id(self.ctx.method(c, "__init__")) for c in line}
        if not inits or any(id(fn) not in chain or self.ctx.method(c, attr) is not None for fn in inits for c in line):
            return False
        plain = self.field_stores.get(attr, False) and all(id(fn) in self.walked for fn in inits)
        self.unsure |= not plain
        return plain

    def run(self, label: str, fn: ast.FunctionDef) -> list[Violation]:
        while True:       # again while the walk finds more attributes holding tensors (self.h = ...), or more
            # about a field it found no plain data in so far (its __init__ walked after the read)
            fields, stores = set(self.fields), (dict(self.field_stores), set(self.walked))
            self.found, self.launches, self.seen, self.unsure, self.plain_returns = [], [], {}, False, {}
            self._constructed()
            self._function(label, fn)
            if self.fields == fields and not (self.unsure and (self.field_stores, self.walked) != stores):
                break
        if not self.launches:
            self.flag(label, fn, "wrapper-no-launch", f"{self.name} launches no @triton.jit kernel of the notebook "
                                                      "(kernel[grid](...)): h and y must be computed by your kernel")
        for i, (a, path_a) in enumerate(self.launches):
            for b, path_b in self.launches[i + 1:]:
                if not _exclusive(path_a, path_b):
                    self.flag(label, b, "wrapper-launches", "a second kernel launch on the same path: one launch "
                                                            "computes both h and y (one pass over memory)")
        return self.found

    def _constructed(self):
        """The attributes that the __init__ of the notebook's module-level objects sets to tensors: walked
        for those alone (it runs when the cell does, not in the wrapper), with a tensor in each parameter that
        its construction (LAUNCH = Launch(256)) gives anything but plain data or leaves at a default that is
        not a constant."""
        for name in sorted(self.ctx.instances):
            init = self.ctx.method(self.ctx.instances[name], "__init__")
            if init is not None:
                seen = dict(self.seen)
                given = _passed(init, self.ctx.built[name], 1, lambda v: not holds_no_tensor(v, self.ctx), self.ctx)
                self._function(self.ctx.cell_of(init), init, given, self.ctx.instances[name])
                self.found, self.launches, self.seen = [], [], seen

    def _function(self, label: str, fn, tensors: set[str] | None = None, cls: str | None = None,
                  outer: "_Body | None" = None, named: str | None = None, opaque: frozenset[str] = frozenset(),
                  raisers: frozenset[str] = frozenset()) -> bool:
        """Walk fn's body. The wrapper's parameters hold tensors but for a scalar annotation or a constant
        default; a helper's (tensors given) are those its call passes tensors to, as if its body stood at
        the call: it is walked once for each set of them. A method of the notebook's class cls (called on
        an instance) has its first parameter, self, bound to that instance. A def nested in the function
        `outer` walks (_nested_helpers) also reads outer's own names, as opaque as they are there, and may
        call outer's other such defs. A classmethod's first parameter names the class `named`. `opaque`: the
        parameters its call hands what is not plain data (_Body.given_opaque), `raisers` those it hands only an
        exception class (_Body.given_raisers). Returns whether
        a `return` of it holds a tensor (True while it is being walked: a recursive call)."""
        if tensors is None:
            tensors = set()
            for arg, default in _parameters(fn):
                scalar_type = isinstance(arg.annotation, ast.Name) and arg.annotation.id in SCALAR_ANNOTATIONS
                if not (scalar_type or _constant_default(default, self.ctx)):
                    tensors.add(arg.arg)
            # the grader hands the wrapper tensors and eps; a parameter it leaves at its default holds that
            module = _Body(self, label, set())
            defaults = [(arg.arg, default) for arg, default in _parameters(fn) if default is not None]
            opaque = frozenset(name for name, default in defaults if not module.plain(default))
            raisers = frozenset(name for name, default in defaults if module.exception_class(default))
        key = (cls, named, id(fn), frozenset(tensors), opaque, raisers)
        if key in self.seen:
            return self.seen[key]
        self.walked.add(id(fn))
        self.seen[key] = True
        params = _parameters(fn)
        instances = {params[0][0].arg: cls} if cls is not None and params else {}
        own = _own_names(fn)
        body = _Body(self, label, set(tensors), instances, own | (outer.own if outer is not None else set()), fn,
                     opaque, raisers)
        body.launchers = {**{k: v for k, v in self.partials.items() if k not in own}, **_launchers(fn, self.ctx)}
        body.kernel_aliases = _kernel_aliases(fn, self.ctx)
        body.classes = {params[0][0].arg: named} if named is not None and params and \
            params[0][0].arg not in _rebound_in(fn) else {}
        body.helpers = {**({k: v for k, v in outer.helpers.items() if k not in own} if outer is not None else {}),
                        **_nested_helpers(fn)}
        for _, default in _parameters(fn):     # evaluated once, at def time: what it holds is handed in
            if default is not None:
                body.expr(default, ())
        body.walk(fn.body, ())
        self.seen[key] = body.returns_tensor
        return body.returns_tensor


MAP_ITEM = "map item "    # the names of map's items when its function is called written out (_Body.as_generator)


def _super_init(f) -> bool:
    """super().__init__: a plain class's base is a library class or the notebook's (_plain_class)."""
    return isinstance(f, ast.Attribute) and f.attr == "__init__" and isinstance(f.value, ast.Call) and \
        isinstance(f.value.func, ast.Name) and f.value.func.id == "super" and not f.value.args and not f.value.keywords


def _own_names(fn) -> set[str]:
    """The names a function binds itself (parameters, assignments, loop and comprehension targets, a lambda's
    parameters, a match's captures): Python never reads these from the module."""
    names = {a.arg for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.Lambda))
             for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs + [n.args.vararg, n.args.kwarg] if a}
    names |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    names |= {n.name for n in ast.walk(fn) if isinstance(n, ast.ExceptHandler) and n.name}
    names |= {n.name for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
              and n is not fn}
    names |= {n.rest if isinstance(n, ast.MatchMapping) else n.name for n in ast.walk(fn)
              if isinstance(n, (ast.MatchAs, ast.MatchStar, ast.MatchMapping)) and
              (n.rest if isinstance(n, ast.MatchMapping) else n.name)}
    return names


def _store_counts(fn) -> dict[str, int]:
    """How many times fn (nested defs included) assigns or deletes each plain name."""
    stores: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    return stores


def _bound_once(fn) -> list[ast.Assign]:
    """The plain assignments `name = value` of fn whose name fn binds in no other way (no parameter, loop
    target, second assignment, del, nested def or class, or except target)."""
    stores = _store_counts(fn)
    others = {a.arg for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
              for a in _arguments(n.args)} | {n.name for n in ast.walk(fn) if isinstance(
                  n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)) and n.name}
    return [node for node in ast.walk(fn)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and stores[node.targets[0].id] == 1 and node.targets[0].id not in others]


def _kernel_aliases(fn, ctx: Notebook) -> dict[str, str]:
    """The names fn binds once, to a notebook kernel's own name, a choice between such (kernel = small_kernel
    if n <= 256 else kernel) or an item of a module-level table of such (_kernel_table: KERNELS[n <= 256]), and
    in no other way, with a kernel each names (kernel[grid](...)): the same object as a module's name, which the
    rebinding check keeps on its checked def. Not where fn binds a kernel's name itself."""
    own = _own_names(fn)

    def kernels(v) -> list[str] | None:
        if isinstance(v, ast.IfExp):
            body, orelse = kernels(v.body), kernels(v.orelse)
            return body + orelse if body is not None and orelse is not None else None
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id not in own and \
                _kernel_table(v.value.id, ctx):
            table = _module_table(v.value.id, ctx)
            return [k.id for k in (table.values if isinstance(table, ast.Dict) else table.elts)]
        return [v.id] if isinstance(v, ast.Name) and v.id in ctx.kernels and v.id not in own else None
    return {node.targets[0].id: named[0] for node in _bound_once(fn) if (named := kernels(node.value)) is not None}


def _launchers(fn, ctx: Notebook) -> dict[str, ast.Subscript | ast.Call]:
    """The names fn binds once, to a notebook kernel's kernel[grid] (or an alias's, _kernel_aliases), or to
    functools.partial of one, of a def of the notebook's or of a library's function (as_rows =
    partial(torch.reshape, shape=(-1, n))), and in no other way: calling one is that launch or call (launch =
    kernel[grid]; launch(...)), with the partial's arguments before the call's."""
    aliases, own = _kernel_aliases(fn, ctx), _own_names(fn)
    launch = lambda v: isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and \
        (v.value.id in ctx.kernels or v.value.id in aliases)
    own_def = lambda v: isinstance(v, ast.Name) and v.id in ctx.functions and v.id not in own
    return {node.targets[0].id: node.value for node in _bound_once(fn)
            if launch(node.value) or _partial_of(node.value, ctx, lambda v: launch(v) or own_def(v) or
                                                 ctx.resolve(v) is not None)}


def _partial_of(v, ctx: Notebook, callee) -> bool:
    """functools.partial(f, ...) with f such that callee(f), its arguments named or in order (no * or **)."""
    return isinstance(v, ast.Call) and ctx.resolve(v.func) == "functools.partial" and len(v.args) >= 1 and \
        callee(v.args[0]) and not any(isinstance(a, ast.Starred) for a in v.args) and \
        all(k.arg is not None for k in v.keywords)


def _module_partials(ctx: Notebook) -> dict[str, ast.Call]:
    """Module-level names bound once, to functools.partial of a def of the notebook's with plain data only
    (_require_float = functools.partial(_require_dtype, allowed=DTYPES)): calling one calls that def."""
    def plain(call: ast.Call) -> bool:
        return all(holds_no_tensor(a, ctx) for a in [*call.args[1:], *(k.value for k in call.keywords)])
    return {name: nodes[0].value for name, nodes in ctx.module_bindings.items()
            if len(nodes) == 1 and isinstance(nodes[0], ast.Assign) and _partial_of(
                nodes[0].value, ctx, lambda v: isinstance(v, ast.Name) and v.id in ctx.functions) and
            plain(nodes[0].value)}


def _rebound_in(fn) -> set[str]:
    """The names fn's body binds (assignments, loop, with and except targets, del, imports, nested defs and
    classes, and their and lambdas' parameters): a parameter among them may hold anything."""
    inner = [n for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                       ast.Lambda)) and n is not fn]
    names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    names |= {n.name for n in inner if not isinstance(n, ast.Lambda)}
    names |= {a.arg for n in inner if not isinstance(n, ast.ClassDef) for a in _arguments(n.args)}
    names |= {n.name for n in ast.walk(fn) if isinstance(n, ast.ExceptHandler) and n.name}
    names |= {a.asname or a.name.split(".")[0] for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    return names | {n.name for n in ast.walk(fn) if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name}


def _nested_helpers(fn) -> dict[str, ast.FunctionDef]:
    """The defs among fn's statements that are only ever called: undecorated, neither generators nor
    async, with no nonlocal or global, their name bound by that def alone and read only as the callee of a
    call (def require(ok, message): if not ok: raise ValueError(message); require(x.shape == fx.shape, ...)),
    and the lambdas a statement binds to a name in the same way (as_rows = lambda t: t.reshape(-1, n)), as
    the def `return` of its body. A call of one is walked as a module-level helper's is, its body with the
    tensors the call passes and those of the caller that it reads."""
    defs = [n for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                      ast.Lambda)) and n is not fn]
    named = [n.name for n in defs if not isinstance(n, ast.Lambda)]
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    stored |= {a.arg for n in [fn, *defs] for a in _arguments(n.args) if not isinstance(n, ast.ClassDef)}
    stored |= {n.name for n in ast.walk(fn) if isinstance(n, ast.ExceptHandler) and n.name}
    stored |= {a.asname or a.name for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    callees = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
    if "map" not in stored:         # map(rows, (x, fx)) calls rows (the walk checks that map is Python's)
        callees |= {id(n.args[0]) for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and n.func.id == "map" and n.args}
    loads: dict[str, list] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads.setdefault(n.id, []).append(n)
    only_called = lambda name: all(id(n) in callees for n in loads.get(name, []))
    plain = lambda node: not any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.Nonlocal, ast.Global))
                                 for n in ast.walk(node))
    helpers = {node.name: node for node in _statements(fn.body)
               if isinstance(node, ast.FunctionDef) and not node.decorator_list and named.count(node.name) == 1
               and node.name not in stored and only_called(node.name) and plain(node)}
    # name = lambda ...: bound by that assignment alone, then only called: the def it could be
    stores = _store_counts(fn)
    others = stored - {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for node in _statements(fn.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                isinstance(node.value, ast.Lambda) and plain(node.value):
            name = node.targets[0].id
            if stores[name] == 1 and name not in others and name not in named and only_called(name):
                body = ast.copy_location(ast.Return(node.value.body), node.value.body)
                helpers[name] = ast.copy_location(ast.FunctionDef(name=name, args=node.value.args, body=[body],
                                                                  decorator_list=[], returns=None), node)
    return helpers


ANY_ITEM = "any item"     # the index of an item a loop takes, of any position (_Body.bindings)


def _constant_record(name: str, ctx: Notebook) -> bool:
    """A module-level object of the notebook's typing.NamedTuple class built once from constants, its fields'
    defaults constants, the class defining none of the methods an item read or a loop would run: its items are
    those constants (CFG = Cfg(); CFG[0])."""
    if name not in ctx.instances or ctx.instances[name] not in ctx.classes:
        return False
    cls, built = ctx.classes[ctx.instances[name]][1], ctx.built[name]
    return [ctx.resolve(b) for b in cls.bases] == ["typing.NamedTuple"] and \
        not any(isinstance(s, ast.FunctionDef) and s.name.startswith("__") for s in cls.body) and \
        all(s.value is None or isinstance(s.value, ast.Constant)
            for s in cls.body if isinstance(s, ast.AnnAssign)) and \
        all(isinstance(a, ast.Constant) for a in [*built.args, *(k.value for k in built.keywords)])


def _named_tuple(cls: ast.ClassDef, ctx: Notebook) -> bool:
    """A typing.NamedTuple class of fields alone (no def; each default a literal; no field named as a method
    the wrapper may call on plain data, copy or index, which a field would then answer), none of whose methods
    or fields any cell sets on any object (for c in (Launch,): c._replace = f): built, it is a tuple of what it
    is given."""
    fields = {s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    vouched = SCALAR_METHODS | PACKING_METHODS | CONTAINER_METHODS | NAMEDTUPLE_METHODS | plain_methods() | \
        set(dir(tuple))
    return [ctx.resolve(b) for b in cls.bases] == ["typing.NamedTuple"] and \
        not any(isinstance(s, ast.FunctionDef) for s in cls.body) and \
        all(_is_literal(s.value, ctx) for s in cls.body if isinstance(s, ast.AnnAssign) and s.value is not None) and \
        not fields & vouched and not (fields | NAMEDTUPLE_METHODS) & ctx.stored_attributes


def _constant_field(cls: ast.ClassDef, name: str) -> bool:
    """Whether every assignment to `name` in the class (NAME = v in its body, self.NAME = v in its methods) gives
    a constant, or a container of constants, empty or written out (self.problems = []), and no def is so named."""
    values = [s.value for s in cls.body if isinstance(s, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in s.targets)]
    values += [n.value for n in ast.walk(cls) if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Attribute) and t.attr == name for t in n.targets)]
    def constant(v):
        if isinstance(v, (ast.Tuple, ast.List, ast.Set)):
            return all(constant(e) for e in v.elts)
        if isinstance(v, ast.Dict):
            return all(k is not None and constant(k) and constant(x) for k, x in zip(v.keys, v.values))
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("list", "dict", "set", "tuple"):
            return not v.args and not v.keywords
        return isinstance(v, ast.Constant)
    return bool(values) and all(map(constant, values)) and not any(
        isinstance(s, ast.FunctionDef) and s.name == name for s in cls.body)


def _init_stores(ctx: Notebook) -> dict[str, list[ast.FunctionDef] | None]:
    """attribute -> the __init__ defs of the notebook's classes that set it, each only as `self.NAME = value` (a
    target of an assignment in its own body, not a nested def's, self its first parameter and never rebound);
    None for an attribute also set, changed or deleted any other way in the student's cells (elsewhere, +=,
    setattr with its name written out). None at all where a cell calls setattr or delattr with a name the
    source does not write out."""
    out: dict[str, list[ast.FunctionDef] | None] = {}
    simple: set[int] = set()
    for _, node in ctx.classes.values():
        for init in (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"):
            params = [a.arg for a in _arguments(init.args)]
            if not params or params[0] in _rebound_in(init):
                continue
            for stmt in _statements(init.body):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] \
                    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
                for t in (n for target in targets for n in ([target] + getattr(target, "elts", []))):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == params[0]:
                        simple.add(id(t))
                        out.setdefault(t.attr, []).append(init)
    for label, tree in ctx.trees.items():
        for n in ast.walk(tree) if ctx.student[label] else ():
            if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) and id(n) not in simple:
                out[n.attr] = None
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("setattr", "delattr"):
                if len(n.args) > 1 and isinstance(n.args[1], ast.Constant):
                    out[str(n.args[1].value)] = None
                else:       # a name built at run time (f"n{i}") may be any field's
                    return {}
    return out


def _silent_exception(name: str, ctx: Notebook, seen: frozenset[str] = frozenset()) -> bool:
    """A module-level name for an exception class that computes nothing when built: Python's own, not rebound;
    the notebook's plain class with no __init__ or __new__ whose bases are such; or a name every binding of
    which in the student's cells is such (ShapeError = ValueError)."""
    if name in seen:
        return False
    if name in EXCEPTIONS and name not in ctx.bound:
        return True
    if name in ctx.classes:
        cls = ctx.classes[name][1]
        return bool(cls.bases) and not any(isinstance(s, ast.FunctionDef) and s.name in ("__init__", "__new__")
                                           for s in cls.body) and \
            all(isinstance(b, ast.Name) and _silent_exception(b.id, ctx, seen | {name}) for b in cls.bases)
    bound = ctx.module_bindings.get(name, [])
    return bool(bound) and name not in ctx.global_names and all(
        isinstance(b, ast.Assign) and isinstance(b.value, ast.Name) and
        _silent_exception(b.value.id, ctx, seen | {name}) for b in bound)


def _module_table(name: str, ctx: Notebook) -> ast.expr | None:
    """The display a module-level name of the student's is bound to, once and in no other way, and only read
    (_only_read: ERRORS = {"shape": ShapeError}); None for any other name."""
    bound = ctx.module_bindings.get(name, [])
    if len(bound) == 1 and isinstance(bound[0], ast.Assign) and len(bound[0].targets) == 1 and \
            isinstance(bound[0].value, (ast.Dict, ast.Tuple, ast.List)) and name not in ctx.global_names and \
            _only_read(name, ctx):
        return bound[0].value
    return None


def _exception_table(name: str, ctx: Notebook) -> bool:
    """A module-level table (_module_table) of exception classes that compute nothing when built."""
    table = _module_table(name, ctx)
    values = table.values if isinstance(table, ast.Dict) else table.elts if table is not None else []
    return bool(values) and all(isinstance(v, ast.Name) and _silent_exception(v.id, ctx) for v in values)


KEYED = frozenset({"sorted", "min", "max", "filter"})    # builtins that call a function on each item


def _keyed(node, shadowed: set[str]) -> tuple[ast.expr, ast.expr] | None:
    """(function, items) of Python's sorted, min or max given one iterable and key=, or of filter(f, items): what
    they call the function on; None for anything else."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in KEYED and
            node.func.id not in shadowed and not any(isinstance(a, ast.Starred) for a in node.args)):
        return None
    if node.func.id == "filter":
        return (node.args[0], node.args[1]) if len(node.args) == 2 and not node.keywords and not (
            isinstance(node.args[0], ast.Constant)) else None
    key = [k.value for k in node.keywords if k.arg == "key"]
    return (key[0], node.args[0]) if len(node.args) == 1 and key and not isinstance(key[0], ast.Constant) and \
        all(k.arg in ("key", "reverse", "default") for k in node.keywords) else None


PAIR = ("pair key ", "pair value ")   # the halves of an items() pair, named as no cell can name anything


def _pair_split(fn: ast.Lambda, items) -> tuple[list[str], ast.expr] | None:
    """A lambda of one parameter over one d.items(), which reads the pair only as kv[0] and kv[1]: its
    parameters as the key and the value (bind_items types each), and a copy of its body with each read so named."""
    param = fn.args.args[0].arg
    half = lambda n: isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == param and \
        isinstance(n.slice, ast.Constant) and type(n.slice.value) is int and n.slice.value in (0, 1)
    if len(items) != 1 or not (isinstance(items[0], ast.Call) and isinstance(items[0].func, ast.Attribute) and
                               items[0].func.attr == "items" and not items[0].args and not items[0].keywords):
        return None
    halves = {id(n.value) for n in ast.walk(fn.body) if half(n)}
    if any(isinstance(n, ast.Name) and n.id == param and id(n) not in halves or isinstance(n, ast.Lambda)
           for n in ast.walk(fn.body)):
        return None

    class Split(ast.NodeTransformer):
        def visit_Subscript(self, node):
            if half(node):
                return ast.copy_location(ast.Name(PAIR[node.slice.value] + param, ast.Load()), node)
            return self.generic_visit(node)
    return [PAIR[0] + param, PAIR[1] + param], Split().visit(copy.deepcopy(fn.body))


def _decorator_constants(ctx: Notebook) -> frozenset[str]:
    """The module-level names every binding of which is a literal of such names, and that nothing stores into
    (_only_read, a kernel decorator's argument a read too): each is the literal it holds (WARPS = (4, 8);
    configs=[triton.Config({}, num_warps=w) for w in WARPS])."""
    given = frozenset(id(a) for _, fn in ctx.kernels.values() for d in fn.decorator_list if isinstance(d, ast.Call)
                      for a in [*d.args, *(k.value for k in d.keywords)])
    known: set[str] = set()
    while more := {name for name, nodes in ctx.module_bindings.items() if name not in known | ctx.global_names and
                   all(isinstance(n, (ast.Assign, ast.AnnAssign)) and _is_literal(n.value, ctx, frozenset(known))
                       for n in nodes) and _only_read(name, ctx, given)}:
        known |= more
    # and data nothing stores into (WARPS = tuple(2 ** k for k in range(1, 4)))
    known |= {name for name in ctx.data & set(ctx.module_bindings) if _only_read(name, ctx, given)}
    return frozenset(known | _class_constants(ctx, frozenset(known)))


def _class_constants(ctx: Notebook, known: frozenset[str]) -> set[str]:
    """"C.NAME" for each name a class of constants binds to a literal: a plain class of the notebook's with no
    def, each of whose names is bound once in its body, and only read wherever C.NAME is written (never stored
    into, deleted, or asked to change: Tuning.KEY.append(...))."""
    out = set()
    for name, (_, cls) in ctx.classes.items():
        if cls.bases or any(isinstance(s, ast.FunctionDef) for s in cls.body):
            continue
        values = [(t.id, s.value) for s in cls.body if isinstance(s, (ast.Assign, ast.AnnAssign)) and
                  s.value is not None for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                  if isinstance(t, ast.Name)]
        counts = collections.Counter(n for n, _ in values)
        out |= {f"{name}.{n}" for n, v in values if counts[n] == 1 and _is_literal(v, ctx, known)}
    parents = {id(c): p for tree in ctx.trees.values() for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    for tree in ctx.trees.values():
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and f"{n.value.id}.{n.attr}" in out:
                parent = parents.get(id(n))
                if not isinstance(n.ctx, ast.Load) or isinstance(parent, ast.Attribute) or \
                        isinstance(parent, ast.Subscript) and not isinstance(parent.ctx, ast.Load):
                    out.discard(f"{n.value.id}.{n.attr}")
    return out


def _returns_self(fn) -> bool:
    """A method whose body (after its docstring) is `return self`, self its first parameter."""
    body = after_docstring(fn.body) if fn is not None else []
    params = _arguments(fn.args) if fn is not None else []
    return len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Name) and \
        bool(params) and body[0].value.id == params[0].arg and not fn.decorator_list


def _displayed(nodes) -> list[ast.expr]:
    """The nodes, and the items of the tuple, list, set and dict displays among them, theirs too (OPS=(ROWS,))."""
    out = []
    for node in nodes:
        out.append(node)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            out += _displayed([e.value if isinstance(e, ast.Starred) else e for e in node.elts])
        elif isinstance(node, ast.Dict):
            out += _displayed([v for v in [*node.keys, *node.values] if v is not None])
    return out


def _notebook_bases(cls: str, ctx: Notebook) -> list[str]:
    """cls and the notebook classes among its bases, theirs too, each once (Python's order aside)."""
    line, todo = [], [cls]
    while todo:
        name = todo.pop(0)
        if name in ctx.classes and name not in line:
            line.append(name)
            todo += [b.id for b in ctx.classes[name][1].bases if isinstance(b, ast.Name)]
    return line


def _kernel_table(name: str, ctx: Notebook) -> bool:
    """A module-level table (_module_table) of the notebook's kernels by their own names: KERNELS = {True:
    small_kernel, False: kernel}."""
    table = _module_table(name, ctx)
    values = table.values if isinstance(table, ast.Dict) else table.elts if table is not None else []
    return bool(values) and all(isinstance(v, ast.Name) and v.id in ctx.kernels for v in values)


def _items(container, index, body: "_Body") -> list[ast.expr]:
    """The expressions that container[index] may be: the index'th item of a display (any item for ANY_ITEM),
    through an own name's values and items of items; a constant None (no exception class) where unknown."""
    unknown = [ast.Constant(None)]
    if isinstance(container, ast.Dict):
        pairs = list(zip(container.keys, container.values))
        if any(k is None for k, _ in pairs):
            return unknown
        return [v for k, v in pairs if index == ANY_ITEM or isinstance(k, ast.Constant) and k.value == index] \
            or unknown
    if isinstance(container, ast.Name) and container.id not in body.own:    # a module-level table, bound once
        table = _module_table(container.id, body.w.ctx)
        return _items(table, index, body) if table is not None else unknown
    if isinstance(container, (ast.Tuple, ast.List, ast.Set)):
        if index == ANY_ITEM:
            return [e for e in container.elts if not isinstance(e, ast.Starred)] + \
                (unknown if any(isinstance(e, ast.Starred) for e in container.elts) else [])
        return [container.elts[index]] if isinstance(index, int) and -len(container.elts) <= index < len(
            container.elts) and not any(isinstance(e, ast.Starred) for e in container.elts) else unknown
    if isinstance(container, ast.Name) and container.id in body.own:
        values, not_told = body.bindings()
        if container.id in not_told or container.id not in values:
            return unknown
        return [item for v in values[container.id] for item in _items(v, index, body)]
    if isinstance(container, ast.Subscript) and isinstance(container.slice, ast.Constant):
        return [item for outer in _items(container.value, container.slice.value, body)
                for item in _items(outer, index, body)]
    return unknown


def _returns(stmts):
    """The return statements of a body, not of the defs, lambdas and classes in it."""
    for node in stmts:
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                yield from _returns(getattr(node, field, []))


def _statements(stmts):
    """The statements of a body and of the if, for, while, with and try bodies in it, not of nested defs."""
    for stmt in stmts:
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _statements(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _statements(handler.body)


def _lambda_like(node) -> bool:
    """A nested def that a lambda could be: no decorator, and a body of one return of a value after an
    optional docstring (def grid(meta): return (n_rows,) is grid = lambda meta: (n_rows,))."""
    if not isinstance(node, ast.FunctionDef):
        return False
    body = after_docstring(node.body)
    return not node.decorator_list and len(body) == 1 and isinstance(body[0], ast.Return) and \
        body[0].value is not None


def _plain_pattern(pattern, subject) -> bool:
    """A pattern of values, None/True/False, alternatives and captures only: matching it runs nothing of the
    subject's but ==; and where the subject is a shape (_shape_like), sequence patterns too (case (m,):), whose
    length and items are a torch.Size's or a tuple's own; where it is a tuple written out (match a == b, n > 9:),
    a sequence pattern of its length, each item's pattern plain for that item. Class and mapping patterns, and
    sequence patterns of anything else, read attributes, lengths and items, which an object of the notebook's
    could compute."""
    items = _tuple_items(pattern, subject)
    if items is not None:
        return all(_plain_pattern(p, item) for p, item in items)
    if isinstance(pattern, (ast.MatchOr, ast.MatchAs)) and isinstance(subject, ast.Tuple):
        return all(_plain_pattern(p, subject) for p in (pattern.patterns if isinstance(pattern, ast.MatchOr) else
                                                      [pattern.pattern] if pattern.pattern is not None else []))
    sequences = (ast.MatchSequence, ast.MatchStar) if _shape_like(subject) else ()
    return all(isinstance(p, (ast.MatchValue, ast.MatchSingleton, ast.MatchOr, ast.MatchAs, *sequences)) or
               not isinstance(p, ast.pattern) for p in ast.walk(pattern))


def _tuple_items(pattern, subject) -> list[tuple[ast.pattern, ast.expr]] | None:
    """(item pattern, item) of a sequence pattern with no star matched against a tuple written out, of its
    length and with no starred item; None otherwise."""
    if isinstance(pattern, ast.MatchSequence) and isinstance(subject, ast.Tuple) and \
            len(pattern.patterns) == len(subject.elts) and \
            not any(isinstance(p, ast.MatchStar) for p in pattern.patterns) and \
            not any(isinstance(e, ast.Starred) for e in subject.elts):
        return list(zip(pattern.patterns, subject.elts))
    return None


def _callable_entry(node, ctx: Notebook, own: set[str]) -> bool:
    """An item of a table of callables: a lambda (no yield, await, global or nonlocal), a def of the notebook's
    (each checked and kept on its name by the rebinding check), or a tuple of such and constants
    ((lambda: n <= MAX_WIDTH, "too wide"))."""
    if isinstance(node, ast.Tuple):
        return all(isinstance(e, ast.Constant) or _callable_entry(e, ctx, own) for e in node.elts)
    if isinstance(node, ast.Name):
        return node.id in ctx.functions and node.id not in own
    return isinstance(node, ast.Lambda) and not any(
        isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)) for n in ast.walk(node))


def _table_entries(node, ctx: Notebook, own: set[str], display=None) -> list[ast.expr] | None:
    """What a loop over node takes, where node is a table of callables or its items(), values() or keys(): a
    dict written out with constant keys, or a tuple or list written out, each of whose values is a
    _callable_entry; `display` the table node names (found here for a module-level name bound once to one and
    only read). Each item as the loop takes it: a (key, value) tuple for items(). None for anything else."""
    method = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr in ("items", "values", "keys") and not node.args and not node.keywords else None
    table = node.func.value if method else node
    if display is None and isinstance(table, ast.Name) and table.id not in own:
        nodes = ctx.module_bindings.get(table.id, [])
        if table.id not in ctx.global_names and len(nodes) == 1 and isinstance(nodes[0], ast.Assign) and \
                len(nodes[0].targets) == 1 and isinstance(nodes[0].targets[0], ast.Name) and _only_read(table.id, ctx):
            display = nodes[0].value
    display = display if display is not None else table
    if isinstance(display, ast.Dict) and all(isinstance(k, ast.Constant) for k in display.keys):
        if not all(_callable_entry(v, ctx, own) for v in display.values):
            return None
        if method == "items":
            return [ast.copy_location(ast.Tuple([k, v], ast.Load()), v) for k, v in zip(display.keys, display.values)]
        return list(display.keys) if method == "keys" else list(display.values)
    if isinstance(display, (ast.Tuple, ast.List)) and method is None and \
            not any(isinstance(e, ast.Starred) for e in display.elts) and \
            all(_callable_entry(e, ctx, own) for e in display.elts):
        return list(display.elts)
    return None


def _unpack(target, value, held: dict[str, list]) -> None:
    """What each name of a loop's target takes from one item: held[name] gains it; a tuple of the target's
    length unpacks item by item, and any other item goes whole to every name of a place it cannot fill."""
    if isinstance(target, ast.Name):
        held.setdefault(target.id, []).append(value)
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, ast.Tuple) and \
            len(value.elts) == len(target.elts):
        for t, v in zip(target.elts, value.elts):
            _unpack(t, v, held)
    else:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                held.setdefault(n.id, []).append(value)


def _agreed(ends: list[dict[str, str]]) -> dict[str, str]:
    """The names that hold an instance of one class at the end of every path (and before them: a loop's body
    may not run), each with that class."""
    return {name: cls for name, cls in ends[0].items() if all(end.get(name) == cls for end in ends[1:])}


def _shape_like(node) -> bool:
    """x.shape, x.size(), x.stride(), or tuple(...)/list(...)/torch.Size(...) of one: a tuple of ints."""
    if isinstance(node, ast.Attribute):
        return node.attr == "shape"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        if node.func.attr in ("size", "stride") and not node.args:
            return True
        if ast.unparse(node.func) == "torch.Size" and len(node.args) == 1:
            return _shape_like(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("tuple", "list") and \
            len(node.args) == 1 and not node.keywords:
        return _shape_like(node.args[0])
    return False


def _passed(fn, call: ast.Call, bound: int, carries, ctx: Notebook) -> set[str]:
    """The parameters of fn that `call` hands a tensor: an argument that carries(argument) says may hold one,
    or a default that is not a constant; every parameter when the call unpacks (*args, **kwargs). The first
    `bound` parameters (a method's self) take no argument of the call."""
    a = fn.args
    params = _parameters(fn)[bound:]
    if any(isinstance(v, ast.Starred) for v in call.args) or any(k.arg is None for k in call.keywords):
        return {p.arg for p, _ in params} | {v.arg for v in (a.vararg, a.kwarg) if v is not None}
    positional = [p.arg for p in a.posonlyargs + a.args][bound:]
    tensors = {p for p, v in zip(positional, call.args) if carries(v)}
    if a.vararg is not None and any(carries(v) for v in call.args[len(positional):]):
        tensors.add(a.vararg.arg)
    by_name = {p.arg for p in a.args + a.kwonlyargs}
    tensors |= {k.arg if k.arg in by_name or a.kwarg is None else a.kwarg.arg for k in call.keywords
                if carries(k.value)}
    given = set(positional[:len(call.args)]) | {k.arg for k in call.keywords}
    return tensors | {p.arg for p, d in params if p.arg not in given and d is not None
                      and not _constant_default(d, ctx)}


def _exclusive(a: tuple, b: tuple) -> bool:
    """Two launches on different branches of the same if statement never both run."""
    return any(x[0] == y[0] and x[1] != y[1] for x in a for y in b)


class _Body:
    """Statements of a wrapper function, with the names known to hold tensors."""

    def __init__(self, wrapper: _Wrapper, label: str, tensors: set[str], instances: dict[str, str] | None = None,
                 local: set[str] = frozenset(), fn=None, opaque: frozenset[str] = frozenset(),
                 raisers: frozenset[str] = frozenset()):
        self.w, self.label, self.tensors, self.loops = wrapper, label, tensors, 0
        self.opaque = set(opaque)     # parameters handed what may not be plain data (plain())
        self.raisers = raisers        # parameters handed only an exception class (exception_class())
        self.instances = dict(instances or {})   # name -> the notebook class it holds an instance of
        self.own = local     # the names the function binds: they hide module-level ones
        self.tensors |= wrapper.ctx.mutables - local     # items stored there by any function may be tensors
        self.launchers: dict[str, ast.Subscript | ast.Call] = {}   # launch = kernel[grid]: _launchers
        self.kernel_aliases: dict[str, str] = {}          # kernel = the notebook's kernel: _kernel_aliases
        self.helpers: dict[str, ast.FunctionDef] = {}     # defs in the function, only called: _nested_helpers
        self.classes: dict[str, str] = {}                 # a classmethod's cls -> the notebook class it names
        # id(a map call) -> as_generator's node; ("key", id(a sorted(...) call)) -> key_generator's
        self.generators: dict = {}
        self.partials: dict[int, ast.Call] = {}           # id(launch(...)) -> the launch with a partial's arguments
        # a loop's target -> the lambdas and defs a table of them gives it (for key, ok in CHECKS.items())
        self.callables: dict[str, list[ast.expr]] = {}
        self.returns_tensor = False                       # a `return` of the walked function holds a tensor
        self.fn, self._opaque = fn, None if fn is not None else set(self.opaque)
        self.params = {a.arg for a in _arguments(fn.args)} if fn is not None else set()
        self._bindings: tuple[dict[str, list], set[str]] | None = None if fn is not None else ({}, set())

    def instance_of(self, node) -> str | None:
        """The notebook class of which node is an instance: a name bound to one (where the walk is, or by every
        binding of the function's: w = Width(n) read before the walk reaches it), or C(...) itself."""
        if isinstance(node, ast.Name):
            found = self.instances.get(node.id) or (
                self.w.ctx.instances.get(node.id) if node.id not in self.own else None)
            if found is None and node.id in self.own and node.id not in self.params:
                values, unknown = self.bindings()
                built = {self.instance_of(v) if isinstance(v, ast.Call) else None for v in values.get(node.id, [None])}
                found = built.pop() if len(built) == 1 and node.id not in unknown | self.opaque else None
            return found
        if isinstance(node, ast.Call) and self.class_named(node.func) is not None:
            return self.class_named(node.func)
        return None

    def class_named(self, node) -> str | None:
        """The notebook class that node names: the class's own name, or a classmethod's first parameter (cls)."""
        if not isinstance(node, ast.Name):
            return None
        return self.classes.get(node.id) or (node.id if node.id in self.w.ctx.classes else None)

    def method(self, f) -> tuple[str | None, ast.FunctionDef | None, int, str | None] | None:
        """What calling f runs of the notebook's classes: (class of the instance it is bound to, or None; the
        def; how many of its parameters the call fills without an argument, 1 for self; for a classmethod, the
        class its first parameter names), with def None for a class built without an __init__ of its own;
        None where f is no class, instance or method of one."""
        ctx = self.w.ctx
        named = self.class_named(f)
        if named is not None:                                                # C(...): its __init__
            return named, ctx.method(named, "__init__"), 1, None
        cls = self.instance_of(f)
        if cls is not None:                                                  # obj(...): __call__, or forward
            fn = ctx.method(cls, "__call__") or (ctx.method(cls, "forward") if ctx.is_module(cls) else None)
            return (cls, fn, 1, None) if fn is not None else None
        if not isinstance(f, ast.Attribute):
            return None
        cls = self.instance_of(f.value)
        named = self.class_named(f.value)
        if named is not None and f.attr == "apply" and ctx.is_function(named) and ctx.method(named, "apply") is None:
            # Function.apply(...) runs forward(ctx, ...), or forward(...) where setup_context takes the ctx
            return None, ctx.method(named, "forward"), int(ctx.method(named, "setup_context") is None), None
        fn = ctx.method(cls or named, f.attr) if cls is not None or named is not None else None
        if fn is None:
            return None
        kinds = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}
        if "staticmethod" in kinds:
            return None, fn, 0, None
        if "classmethod" in kinds:      # its first parameter names the class it is called on
            return None, fn, 1, cls or named
        return (cls, fn, 1, None) if cls is not None else (None, fn, 0, None)   # C.method(obj, ...) names self

    def walk(self, stmts, path):
        for stmt in stmts:
            self.stmt(stmt, path)

    def branches(self, bodies, path, start: set[str]) -> None:
        """Walk each of these statement lists from the names holding tensors at `start`; after them a name
        holds a tensor where any of them, or none (`start`), left one: `h, y = out` in one branch of an if
        does not undo `h = torch.empty(...)` in the other."""
        held, before = set(start), dict(self.instances)
        ends = [before]
        for body, branch_path in bodies:
            self.tensors, self.instances = set(start), dict(before)
            self.walk(body, branch_path)
            held |= self.tensors
            ends.append(self.instances)
        self.tensors = held
        self.instances = _agreed(ends)

    def stmt(self, node, path):
        if isinstance(node, ast.If):
            self.expr(node.test, path)
            self.branches([(node.body, path + ((id(node), 0),)), (node.orelse, path + ((id(node), 1),))], path,
                          set(self.tensors))
        elif isinstance(node, (ast.For, ast.While)):
            self.expr(node.iter if isinstance(node, ast.For) else node.test, path)
            self.loops += 1
            while True:     # a body runs again with what its last run left, or not at all: walked to a fixed point
                start = set(self.tensors)
                if isinstance(node, ast.For):
                    self.bind_items(node.target, node.iter)
                self.branches([(node.body + node.orelse, path)], path, set(self.tensors))
                self.tensors |= start
                if self.tensors == start:
                    break
            self.loops -= 1
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and \
                self.helpers.get(getattr(node.targets[0], "id", None)) is not None:
            # name = lambda ...: a helper (_nested_helpers): its defaults run here, its body where it is called
            for part in [*node.value.args.defaults, *node.value.args.kw_defaults]:
                if part is not None:
                    self.expr(part, path)
            self.bind(node.targets[0], node.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is not None:
                self.expr(node.value, path)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    stored = isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                        t.value.id in self.w.ctx.mutables and t.value.id not in self.own   # _CACHE[key] = ...
                    if isinstance(t, (ast.Subscript, ast.Attribute)) and self.tensorish(t.value) and not stored:
                        self.w.flag(self.label, node, "wrapper-arithmetic", "writing values into a tensor in the "
                                                                            "wrapper: the kernel stores h and y")
                    self.bind(t, node.value)
        elif isinstance(node, ast.AugAssign):
            if self.tensorish(node.target) or self.tensorish(node.value):
                self.w.flag(self.label, node, "wrapper-arithmetic", "arithmetic on tensors in the wrapper: the "
                                                                    "kernel computes h and y")
            self.expr(node.value, path)
        elif isinstance(node, (ast.Return, ast.Expr)):
            if node.value is not None:
                self.expr(node.value, path)
                self.returns_tensor |= isinstance(node, ast.Return) and self.tensorish(node.value)
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                node.exc.raised = True      # raise error(message): call() asks what error holds
                self.expr(node.exc, path)
            if node.cause is not None:
                self.expr(node.cause, path)
        elif isinstance(node, ast.Assert):
            self.expr(node.test, path)
        elif isinstance(node, ast.With):
            for item in node.items:
                self.expr(item.context_expr, path)
                cls = self.instance_of(item.context_expr)
                if isinstance(item.optional_vars, ast.Name) and cls is not None and _returns_self(
                        self.w.ctx.method(cls, "__enter__")):
                    self.instances[item.optional_vars.id] = cls     # with Errors() as errors: the object built
            self.walk(node.body, path)
        elif isinstance(node, ast.Try):
            # a handler may start anywhere in the body: from what the body held at any point
            start = set(self.tensors)
            self.branches([(node.body + node.orelse, path)], path, start)
            self.branches([(h.body, path) for h in node.handlers], path, set(self.tensors))
            self.walk(node.finalbody, path)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            pass
        elif isinstance(node, ast.Match) and all(_plain_pattern(case.pattern, node.subject) for case in node.cases):
            self.match(node, path)
        elif isinstance(node, ast.FunctionDef) and self.helpers.get(node.name) is node:
            # its defaults and annotations run where the def stands; its body runs where it is called
            a = node.args
            for part in [*a.defaults, *a.kw_defaults, node.returns, *(p.annotation for p in _arguments(a))]:
                if part is not None:
                    self.expr(part, path)
        elif _lambda_like(node):
            # walked as a lambda's body is (a grid function of meta): with the annotations and defaults, which run
            # where the def stands; its name is the function's own, so calling it is calling a local
            a = node.args
            for part in [*a.defaults, *a.kw_defaults, node.returns, *(p.annotation for p in _arguments(a)),
                         node.body[-1].value]:
                if part is not None:
                    self.expr(part, path)
        else:
            self.w.flag(self.label, node, "wrapper-statement",
                        f"a {type(node).__name__} statement in the wrapper; it only checks, allocates and launches")

    def match(self, node: ast.Match, path):
        """A match of values (match x.dtype: case torch.float16 | torch.bfloat16: ...) is an if/elif chain:
        each case's value is compared with the subject as `subject == value` would be, its guard and body are
        walked on a branch of their own, and a capture (case other:) holds what the subject holds; a sequence
        pattern is one of a shape only (_plain_pattern), whose items hold ints."""
        self.expr(node.subject, path)
        start, held, before = set(self.tensors), set(self.tensors), dict(self.instances)
        ends = [before]
        for i, case in enumerate(node.cases):
            self.tensors, self.instances = set(start), dict(before)
            self.pattern(case.pattern, node.subject, path)
            if case.guard is not None:
                self.expr(case.guard, path)
            self.walk(case.body, path + ((id(node), i),))
            held |= self.tensors
            ends.append(self.instances)
        self.tensors = held
        self.instances = _agreed(ends)

    def pattern(self, pattern, subject, path) -> None:
        """A case's pattern against what it matches: each value compared as `subject == value`, each capture
        holding what the subject holds, a tuple written out matched item by item (_tuple_items)."""
        items = _tuple_items(pattern, subject)
        if items is not None:
            for p, item in items:
                self.pattern(p, item, path)
            return
        if isinstance(pattern, ast.MatchOr):
            for p in pattern.patterns:
                self.pattern(p, subject, path)
            return
        tensor = self.tensorish(subject)
        for sub in ast.walk(pattern):
            if isinstance(sub, ast.MatchValue):
                self.expr(ast.copy_location(ast.Compare(subject, [ast.Eq()], [sub.value]), sub), path)
            elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
                (self.tensors.add if tensor else self.tensors.discard)(sub.name)

    def passed(self, fn, node: ast.Call, bound: int = 0) -> set[str]:
        """The parameters of fn that this call hands a tensor (_passed, with what may hold one here)."""
        return _passed(fn, node, bound, self.tensorish, self.w.ctx)

    def given_opaque(self, fn, node: ast.Call, bound: int = 0) -> frozenset[str]:
        """The parameters of fn that this call hands what plain() cannot vouch for."""
        return frozenset(_passed(fn, node, bound, lambda v: not self.plain(v), self.w.ctx))

    def helper(self, node: ast.Call) -> bool:
        """Walk the def of the function's own that node calls, as if its body stood at the call, reading the
        function's names; whether a `return` of it holds a tensor."""
        fn = self.helpers[node.func.id]
        return self.w._function(self.label, fn, self.passed(fn, node) | (self.tensors - _own_names(fn)), outer=self,
                                opaque=self.given_opaque(fn, node) | frozenset(self.opaque_names() - _own_names(fn)),
                                raisers=self.given_raisers(fn, node))

    def given_raisers(self, fn, node: ast.Call, bound: int = 0) -> frozenset[str]:
        """The parameters of fn that this call hands an exception class (exception_class), or leaves at one;
        none where it unpacks (*args, **kwargs)."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return frozenset()
        positional = [p.arg for p in fn.args.posonlyargs + fn.args.args][bound:]
        handed = {**dict(zip(positional, node.args)), **{k.arg: k.value for k in node.keywords}}
        return frozenset(p.arg for p, default in _parameters(fn)[bound:]
                         if (v := handed.get(p.arg, default)) is not None and self.exception_class(v))

    def bind(self, target, value):
        if isinstance(target, ast.Name):
            if self.tensorish(value) or _has_alloc(value, self.w.ctx):
                self.tensors.add(target.id)
            else:
                self.tensors.discard(target.id)
            cls = self.instance_of(value)
            if cls is not None:
                self.instances[target.id] = cls
            else:
                self.instances.pop(target.id, None)
            self.callables.pop(target.id, None)
        elif isinstance(target, ast.Attribute) and self.instance_of(target.value) is not None:
            tensor = self.tensorish(value) or _has_alloc(value, self.w.ctx)
            if tensor:      # self.h = torch.empty_like(x)
                self.w.fields.add(target.attr)
            stores = self.w.field_stores
            stores[target.attr] = stores.get(target.attr, True) and (tensor or self.plain(value))
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                else [value] * len(target.elts)
            for t, v in zip(target.elts, values):
                self.bind(t, v)

    def bind_items(self, target, iterable):
        """A loop's target takes the items of what it loops over: for name, t in zip(names, (x, fx)) binds
        t to a tensor and name to a string; over a table of callables (_table_entries), each name the
        lambdas or defs, or the constants, its place in every item holds."""
        targets = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        for t, tensor in zip(targets, self.items(iterable, len(targets))):
            for name in (n.id for n in ast.walk(t) if isinstance(n, ast.Name)):
                (self.tensors.add if tensor else self.tensors.discard)(name)
                self.callables.pop(name, None)
        entries = self.table_entries(iterable)
        held: dict[str, list] = {}
        for entry in entries or ():
            _unpack(target, entry, held)
        for name, values in held.items():
            if all(isinstance(v, (ast.Lambda, ast.Name)) for v in values):
                self.callables[name] = values
            elif all(isinstance(v, ast.Constant) for v in values):
                self.tensors.discard(name)

    def table_entries(self, node) -> list[ast.expr] | None:
        """_table_entries, with a table the function binds once to one written out (checks = {...})."""
        table = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else node
        display = None
        if isinstance(table, ast.Name) and table.id in self.own:
            values, unknown = self.bindings()
            if table.id in unknown or len(values.get(table.id, [])) != 1:
                return None
            display = values[table.id][0]
        return _table_entries(node, self.w.ctx, self.own, display)

    def table_call(self, node: ast.Call) -> None:
        """A call of a loop target a table of callables bound: each lambda (one written in the function reads
        its names, as its nested defs do) or def it may hold, walked as called with these arguments."""
        for c in self.callables[node.func.id]:
            if isinstance(c, ast.Name):
                label, fn = self.w.ctx.functions[c.id]
                self.w._function(label, fn, self.passed(fn, node), opaque=self.given_opaque(fn, node),
                                 raisers=self.given_raisers(fn, node))
                continue
            fn, label, local = self.w.lambda_def(c, self)
            own = _own_names(fn)
            self.w._function(label, fn, self.passed(fn, node) | (self.tensors - own if local else set()),
                             outer=self if local else None, raisers=self.given_raisers(fn, node),
                             opaque=self.given_opaque(fn, node) | (frozenset(self.opaque_names() - own)
                                                                    if local else frozenset()))

    def items(self, node, n: int) -> list[bool]:
        """Whether each of the n fields of the items of `node` may hold a tensor."""
        call = self.w.ctx.resolve(node.func) is None and isinstance(node.func, ast.Name) and node.func.id \
            if isinstance(node, ast.Call) else None
        if call == "zip" and len(node.args) == n:
            return [self.holds(a) for a in node.args]
        if call == "enumerate" and n == 2 and node.args:
            return [False, self.holds(node.args[0])]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "items" \
                and n == 2:
            return [self.keys_tensorish(node.func.value), self.tensorish(node.func.value)]
        if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, (ast.Tuple, ast.List)) and
                                                           len(e.elts) == n for e in node.elts):
            return [any(self.tensorish(e.elts[i]) for e in node.elts) for i in range(n)]
        return [self.holds(node)] * n

    def keys_tensorish(self, d) -> bool:
        """Whether a dict's keys may be tensors: not those of a dict written out, or of dict(name=...), whose keys
        are not, nor of a name of the function's bound only to such and never stored into, nor of module-level
        plain data."""
        ctx = self.w.ctx
        if isinstance(d, ast.Dict):
            return any(k is None or self.tensorish(k) for k in d.keys)
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "dict" and \
                "dict" not in self.own | ctx.bound:
            return bool(d.args) or any(k.arg is None for k in d.keywords)
        if isinstance(d, ast.Name) and d.id in self.own:
            values, unknown = self.bindings()
            stored = any(isinstance(n, ast.Subscript) and not isinstance(n.ctx, ast.Load) and
                         isinstance(n.value, ast.Name) and n.value.id == d.id or
                         isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                         n.func.attr not in ("items", "keys", "values", "get", "copy") and
                         isinstance(n.func.value, ast.Name) and n.func.value.id == d.id for n in ast.walk(self.fn))
            return stored or d.id in unknown | self.opaque or not values.get(d.id) or any(
                not isinstance(v, (ast.Dict, ast.Call)) or self.keys_tensorish(v) for v in values[d.id])
        if isinstance(d, ast.Name) and d.id in ctx.data:
            return False
        return self.tensorish(d)

    def holds(self, node) -> bool:
        """Whether the items of a sequence may be tensors."""
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.tensorish(e) for e in node.elts)
        return self.tensorish(node)

    def plain(self, node) -> bool:
        """Whether node certainly holds plain data or a library's object, read from the source alone: a literal,
        a module-level data name, a parameter or own name bound only so, an attribute or an item of such, what
        a builtin, a library function or a method of such makes from such. An object of the notebook's, an
        exception caught, what the notebook's defs return, an item of a module-level list or dict (a function
        may have stored anything there) may have any method under a plain method's name (get, items, append)
        and any __getitem__. A tensor is plain by what it is bound to (x.reshape(-1, n))."""
        ctx = self.w.ctx
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            return True
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(self.plain(e.value if isinstance(e, ast.Starred) else e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(k is None or self.plain(k) for k in node.keys) and all(self.plain(v) for v in node.values)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.plain(node.elt)
        if isinstance(node, ast.DictComp):
            return self.plain(node.key) and self.plain(node.value)
        cls = self.instance_of(node)
        if cls is not None:      # self, LAUNCH: an object of the notebook's; a named tuple of plain data is plain data
            if not _named_tuple(ctx.classes[cls][1], ctx):
                return False
            if isinstance(node, ast.Call):
                return all(self.plain(a.value if isinstance(a, ast.Starred) else a)
                           for a in [*node.args, *(k.value for k in node.keywords)])
            return isinstance(node, ast.Name) and node.id in self.own and node.id not in self.opaque_names()
        if isinstance(node, ast.Name):
            if node.id in self.own or node.id.startswith(MAP_ITEM):
                return node.id not in self.opaque_names()
            return node.id in ctx.data | ctx.constants | ctx.scalars | self.w.release_names or \
                ctx.resolve(node) is not None
        if isinstance(node, ast.Attribute):
            cls = self.instance_of(node.value)
            if cls is not None:      # self.rows = x.reshape(...), a tensor; self.problems = [], as it is assigned
                getter = ctx.method(cls, node.attr)
                if getter is not None and is_getter(getter, ctx):
                    return self.w.returns_plain(ctx.cell_of(getter), getter, frozenset(), cls=cls)
                return node.attr in self.w.fields or cls in ctx.classes and (
                    _constant_field(ctx.classes[cls][1], node.attr) or self.w.plain_field(cls, node.attr))
            return ctx.resolve(node) is not None or self.plain(node.value)
        if isinstance(node, ast.Subscript):
            return self.items_plain(node.value) and self.plain(node.slice)
        if isinstance(node, ast.Slice):
            return all(self.plain(c) for c in (node.lower, node.upper, node.step) if c is not None)
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp)):
            return all(self.plain(c) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
        if isinstance(node, ast.Call):
            node = self.unpartial(node)
            f, given = node.func, [*node.args, *(k.value for k in node.keywords)]
            given = [a.value if isinstance(a, ast.Starred) else a for a in given]
            builtin = isinstance(f, ast.Name) and f.id not in self.own | ctx.bound and f.id
            if builtin in SCALAR_BUILTINS:
                return True        # str(d), len(names): Python's own scalars, whatever they are given
            if builtin in ITEM_BUILTINS:      # tuple(x.shape), max(n - 1, 0): as plain as the items they are given
                # (a key only orders them: key_generator judges what it makes)
                return all(map(self.items_plain, [*node.args, *(k.value for k in node.keywords if k.arg != "key")]))
            if builtin == "map" and len(node.args) >= 2:     # map(f, items): as plain as what f makes of them
                fn, items = node.args[0], node.args[1:]
                if isinstance(fn, ast.Lambda):
                    return self.plain(fn.body)      # its parameters take the items (bindings)
                if isinstance(fn, ast.Name) and fn.id in ctx.functions and fn.id not in self.own:
                    label, def_ = ctx.functions[fn.id]
                    params = [a.arg for a in def_.args.posonlyargs + def_.args.args]
                    return self.w.returns_plain(label, def_, frozenset(
                        p for p, it in zip(params, items) if not self.items_plain(it)))
                return ctx.resolve(fn) is not None and all(map(self.items_plain, items))
            if ctx.resolve(f) == "functools.reduce" and len(node.args) >= 2:   # reduce(f, items[, start])
                fn, opaque = node.args[0], not all(map(self.items_plain, node.args[1:]))
                if isinstance(fn, ast.Lambda):
                    return not opaque and self.plain(fn.body)      # its parameters take the items and the result
                if isinstance(fn, ast.Name) and fn.id in ctx.functions and fn.id not in self.own:
                    label, def_ = ctx.functions[fn.id]
                    return self.w.returns_plain(label, def_, frozenset(
                        a.arg for a in _arguments(def_.args)) if opaque else frozenset())
                return ctx.resolve(fn) is not None and not opaque    # reduce(operator.mul, shape)
            if isinstance(f, ast.Name) and f.id in ctx.containers and f.id not in self.own:   # Launch(block, 4)
                return all(map(self.plain, given))
            if ctx.resolve(f) == "typing.cast" and len(node.args) == 2 and not node.keywords:
                return self.plain(node.args[1])      # cast(int, n): a type checker's word, n itself
            if isinstance(f, ast.Name) and f.id in self.helpers:       # as_rows = lambda t: t.reshape(-1, n)
                return self.w.returns_plain(self.label, self.helpers[f.id], self.given_opaque(self.helpers[f.id], node),
                                            outer=self)
            if isinstance(f, ast.Name) and f.id in ctx.functions and f.id not in self.own:   # rows_view(x)
                label, def_ = ctx.functions[f.id]
                return self.w.returns_plain(label, def_, self.given_opaque(def_, node))
            method = self.method(f) if self.class_named(f) is None else None
            if method is not None:                                           # self._width(x, fx)
                _, def_, bound, _ = method
                return def_ is not None and self.w.returns_plain(ctx.cell_of(def_), def_,
                                                                 self.given_opaque(def_, node, bound))
            if ctx.resolve(f) is not None:   # torch.empty_like(x), triton.next_power_of_2(n)
                return all(map(self.plain, given))
            if isinstance(f, ast.Attribute) and ctx.resolve(f) is None:   # x.reshape(-1, n), str(d).split(".")
                receiver = self.items_plain if f.attr in ITEM_METHODS else self.plain
                return receiver(f.value) and all(map(self.plain, given))
        return False

    def items_plain(self, node) -> bool:
        """Whether what node holds as items is plain: node is, and is no module-level list, dict or set, where
        any function may have stored anything; or node is a record of constants (CFG = Cfg(), a NamedTuple)."""
        ctx = self.w.ctx
        if isinstance(node, ast.Name) and node.id not in self.own and _constant_record(node.id, ctx):
            return True
        return self.plain(node) and not (isinstance(node, ast.Name) and node.id not in self.own and
                                         node.id in ctx.mutables)

    def opaque_names(self) -> set[str]:
        """The function's own names that may hold what is not plain (plain()): worked out once, when first asked,
        from every binding of each in the function (flow aside) and the parameters its call hands such."""
        if self._opaque is None:
            values, not_told = self.bindings()
            unknown = not_told | self.opaque
            while True:     # from every name plain, the names whose values are not, until none is added
                self._opaque = set(unknown)
                more = {name for name, vs in values.items() if name not in unknown and not all(map(self.plain, vs))}
                if not more:
                    break
                unknown |= more
        return self._opaque

    def bindings(self) -> tuple[dict[str, list], set[str]]:
        """({own name: the values fn's bindings give it}, the names fn binds in a way no value tells: an
        exception caught, a with's target, a nested def or class, an import, a global, a local given an
        attribute). A loop's target takes an item of what it loops over (ITEMS[ANY_ITEM]), an unpacked name
        its item (value[i]); names.append(v) and table[k] = v give the container v."""
        if self._bindings is not None:
            return self._bindings
        values: dict[str, list] = {}
        unknown: set[str] = set()
        at = lambda new, old: ast.copy_location(new, old)

        def pair(target, value):
            if isinstance(target, ast.Name):
                values.setdefault(target.id, []).append(value)
            elif isinstance(target, (ast.Tuple, ast.List)):
                same = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                for i, t in enumerate(target.elts):
                    item = value.elts[i] if same else value if isinstance(t, ast.Starred) else \
                        at(ast.Subscript(value=value, slice=ast.Constant(i), ctx=ast.Load()), value)
                    pair(t.value if isinstance(t, ast.Starred) else t, item)
            elif isinstance(target, ast.Starred):
                pair(target.value, value)
            elif isinstance(target, (ast.Subscript, ast.Attribute)):
                root = target.value
                while isinstance(root, (ast.Subscript, ast.Attribute)):
                    root = root.value
                if isinstance(target, ast.Subscript):      # table[k] = v: the table holds v
                    pair(root, value)
                elif isinstance(root, ast.Name) and root.id not in self.instances:   # obj.get = f: no container
                    unknown.add(root.id)                   # of Python's takes it; self.h = ... is a field
        for n in ast.walk(self.fn):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    pair(t, n.value)
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and n.value is not None:
                pair(n.target, n.value)
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                entries = _table_entries(n.iter, self.w.ctx, set()) if not isinstance(n.iter, ast.Name) or \
                    n.iter.id not in _own_names(self.fn) else None
                for entry in entries or [at(ast.Subscript(value=n.iter, slice=ast.Constant(ANY_ITEM), ctx=ast.Load()),
                                            n.iter)]:
                    pair(n.target, entry)
            elif isinstance(n, (ast.With, ast.AsyncWith)):
                unknown |= {m.id for i in n.items if i.optional_vars is not None for m in ast.walk(i.optional_vars)
                            if isinstance(m, ast.Name)}
            elif isinstance(n, ast.ExceptHandler) and n.name:
                unknown.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                unknown |= {(a.asname or a.name).split(".")[0] for a in n.names}
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not self.fn:
                unknown.add(n.name)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                unknown |= set(n.names)
            elif isinstance(n, ast.Match):      # a capture holds the subject, an item or an attribute of it
                for m in (m for case in n.cases for m in ast.walk(case.pattern)):
                    name = m.rest if isinstance(m, ast.MatchMapping) else getattr(m, "name", None)
                    if name is not None:
                        values.setdefault(name, []).append(n.subject)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.attr in STORING_METHODS:     # names.append(v), table.update(...)
                values.setdefault(n.func.value.id, []).extend(a.value if isinstance(a, ast.Starred) else a
                                                              for a in [*n.args, *(k.value for k in n.keywords)])
            keyed = _keyed(n, set())
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "map" and n.args or keyed:
                # map(lambda t: ..., items): t takes the items; map(f, items) calls f(MAP_ITEM0) (as_generator);
                # sorted(items, key=f) and filter(f, items) alike (key_generator)
                fn, given = (keyed[0], [keyed[1]]) if keyed else (n.args[0], n.args[1:])
                params = [a.arg for a in _arguments(fn.args)] if isinstance(fn, ast.Lambda) else \
                    [f"{MAP_ITEM}{i}" for i in range(len(given))]
                for param, items in zip(params, given):
                    values.setdefault(param, []).append(
                        at(ast.Subscript(value=items, slice=ast.Constant(ANY_ITEM), ctx=ast.Load()), items))
        self._bindings = values, unknown
        return self._bindings

    def exception_class(self, node, seen: frozenset[str] = frozenset()) -> bool:
        """Whether node certainly holds an exception class that computes nothing when built: Python's own
        (ValueError) or the notebook's with no __init__ or __new__ in its line (class ShapeError(ValueError):
        pass), named, aliased (Mismatch = ValueError), handed to a parameter, or an item of a display of such
        ((failed, ShapeError, message) in a list looped over)."""
        ctx = self.w.ctx
        if isinstance(node, ast.Name):
            if node.id in self.own or node.id.startswith(MAP_ITEM):
                values, unknown = self.bindings()      # a parameter handed one, and bound to nothing else
                return node.id not in unknown | seen and (node.id in self.raisers or node.id in values) and \
                    all(self.exception_class(v, seen | {node.id}) for v in values.get(node.id, []))
            return _silent_exception(node.id, ctx)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            return all(self.exception_class(item, seen) for item in _items(node.value, node.slice.value, self))
        if isinstance(node, ast.IfExp):
            return self.exception_class(node.body, seen) and self.exception_class(node.orelse, seen)
        return False

    def tensorish(self, node) -> bool:
        if self.as_generator(node) is not None:
            return self.tensorish(self.as_generator(node))
        if isinstance(node, ast.Dict):
            return any(self.tensorish(v) for v in node.values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PACKING and \
                node.func.id not in self.w.ctx.functions:
            return any(self.holds(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in PACKING_METHODS | CONTAINER_METHODS | NAMEDTUPLE_METHODS:
            return self.tensorish(node.func.value)
        named = self.instance_of(node) if isinstance(node, ast.Call) else None
        if named is not None and _named_tuple(self.w.ctx.classes[named][1], self.w.ctx):   # Launch(x): holds x
            return any(self.holds(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Attribute):
            cls = self.instance_of(node.value)
            if cls is not None and _named_tuple(self.w.ctx.classes[cls][1], self.w.ctx):
                return self.tensorish(node.value)     # a field of a named tuple that holds a tensor may be one
            if cls is not None:      # a field set to a tensor, or a property whose getter returns one
                getter = self.w.ctx.method(cls, node.attr)
                if getter is not None and is_getter(getter, self.w.ctx):
                    return self.w._function(self.w.ctx.cell_of(getter), getter, set(), cls)
                return node.attr in self.w.fields
            return node.attr not in SCALAR_ATTRIBUTES and self.tensorish(node.value)
        if isinstance(node, ast.Subscript):
            return self.tensorish(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.helpers:
            return self.helper(node)     # a def of the function's own: whether a `return` of it holds a tensor
        if isinstance(node, ast.Call) and self.key_generator(node) is not None:   # the items, reordered or kept
            return self.holds(self.key_generator(node).generators[0].iter)
        if isinstance(node, ast.Call) and self.w.ctx.resolve(node.func) == "typing.cast" and len(node.args) == 2:
            return self.tensorish(node.args[1])       # cast(Tensor, x2): x2 itself
        if isinstance(node, ast.Call) and (returned := self.returned(node)) is not None:
            return returned
        if isinstance(node, ast.Call):
            node = self.unpartial(node)
            f = node.func
            path = self.w.ctx.resolve(f)
            if path in function_forms() and path.rsplit(".", 1)[-1] not in SCALAR_METHODS:     # torch.reshape(x, s)
                return any(self.tensorish(a) for a in [*node.args, *(k.value for k in node.keywords)])
            if path is None and isinstance(f, ast.Attribute) and f.attr in TENSOR_VIEW_METHODS:
                return self.tensorish(f.value)
            if path is None and isinstance(f, ast.Attribute) and f.attr in FILL_METHODS:
                return True
            return path in WRAPPER_ALLOC or path in WRAPPER_FILLS
        if isinstance(node, (ast.Tuple, ast.List)):
            return any(self.tensorish(e) for e in node.elts)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):    # its targets bound by expr()
            return self.tensorish(node.elt)
        if isinstance(node, ast.DictComp):
            return self.tensorish(node.value)
        if isinstance(node, ast.IfExp):
            return self.tensorish(node.body) or self.tensorish(node.orelse)
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            return any(self.tensorish(c) for c in ast.iter_child_nodes(node))
        return False

    def unpartial(self, node: ast.Call) -> ast.Call:
        """A call of a name bound to functools.partial(f, ...) as the call of f it is, the partial's arguments
        before the call's (made once per call, so that a launch is counted once)."""
        bound = self.launchers.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if not isinstance(bound, ast.Call):
            return node
        return self.partials.setdefault(id(node), ast.copy_location(ast.Call(
            bound.args[0], [*bound.args[1:], *node.args], [*bound.keywords, *node.keywords]), node))

    def returned(self, node: ast.Call) -> bool | None:
        """Whether a call of one of the notebook's module-level defs or of a method of its classes returns a
        tensor: a `return` of it holding one, walked with the tensors this call passes (rows_view(x).contiguous(),
        h, y = Fn.apply(...)); None for any other call (a class's constructor returns its instance)."""
        node = self.unpartial(node)
        f, ctx = node.func, self.w.ctx
        if isinstance(f, ast.Name) and f.id in ctx.functions and f.id not in self.own | set(self.helpers) | \
                set(self.launchers) and ctx.resolve(f) is None:
            label, fn = ctx.functions[f.id]
            return self.w._function(label, fn, self.passed(fn, node), opaque=self.given_opaque(fn, node),
                                    raisers=self.given_raisers(fn, node))
        method = self.method(f) if self.class_named(f) is None else None
        if method is not None and method[1] is not None:
            cls, fn, bound, named = method
            return self.w._function(ctx.cell_of(fn), fn, self.passed(fn, node, bound), cls, named=named,
                                    opaque=self.given_opaque(fn, node, bound),
                                    raisers=self.given_raisers(fn, node, bound))
        return None

    def as_generator(self, node) -> ast.GeneratorExp | None:
        """map(f, items) with Python's own map: the generator expression (f(t) for t in items) it is, or for
        a lambda (BODY for t in items), as a node to read, not to walk (several iterables zip into f's
        arguments); None for anything else. The same node each time it is asked for the same map."""
        if id(node) not in self.generators:
            self.generators[id(node)] = self._as_generator(node)
        return self.generators[id(node)]

    def key_generator(self, node) -> ast.GeneratorExp | None:
        """sorted(items, key=f), min and max alike, filter(f, items): the generator expression (f(t) for t in
        items) of the calls they make, as as_generator reads a map's; None for anything else."""
        if ("key", id(node)) not in self.generators:
            keyed = _keyed(node, self.own | self.w.ctx.bound) if "zip" not in self.own | self.w.ctx.bound else None
            self.generators["key", id(node)] = self._generator(node, keyed[0], keyed[1:]) if keyed else None
        return self.generators["key", id(node)]

    def on_items(self, node) -> ast.GeneratorExp | None:
        """The calls a map, sorted, min, max, filter or reduce makes of its function on each item."""
        return self.as_generator(node) or self.key_generator(node) or self.fold_generator(node)

    def fold_generator(self, node) -> ast.GeneratorExp | None:
        """functools.reduce(lambda acc, t: ..., items[, start]): the lambda's body as a generator expression's
        over zip(starts, items), t taking the items and acc the start, or the items where there is none or they
        may hold tensors (what the lambda returns is acc next); None for anything else."""
        if ("fold", id(node)) not in self.generators:
            fn = node.args[0] if isinstance(node, ast.Call) and node.args else None
            a = fn.args if isinstance(fn, ast.Lambda) else None
            fold = a is not None and self.w.ctx.resolve(node.func) == "functools.reduce" and \
                len(node.args) in (2, 3) and not node.keywords and len(a.args) == 2 and \
                "zip" not in self.own | self.w.ctx.bound and not any(isinstance(x, ast.Starred) for x in node.args)
            items = node.args[1] if fold else None
            start = items if not fold or len(node.args) == 2 or self.holds(items) else \
                ast.copy_location(ast.List([node.args[2]], ast.Load()), node)
            self.generators["fold", id(node)] = self._generator(node, fn, [start, items]) if fold else None
        return self.generators["fold", id(node)]

    def _as_generator(self, node) -> ast.GeneratorExp | None:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "map" and
                not node.keywords and len(node.args) >= 2 and not {"map", "zip"} & (self.own | self.w.ctx.bound)
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            return None
        return self._generator(node, node.args[0], node.args[1:])

    def _generator(self, node, fn, items) -> ast.GeneratorExp | None:
        at = lambda new: ast.copy_location(new, node)
        if isinstance(fn, ast.Lambda):
            a = fn.args
            if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or len(a.args) != len(items):
                return None
            names, elt = [p.arg for p in a.args], fn.body
            pair = _pair_split(fn, items)
            if pair is not None:      # key=lambda kv: kv[0] over d.items(): its key and its value named apart
                names, elt = pair
        else:       # its items named as nothing of the notebook's is: MAP_ITEM is no identifier a cell can bind
            names = [f"{MAP_ITEM}{i}" for i in range(len(items))]
            elt = at(ast.Call(fn, [at(ast.Name(name, ast.Load())) for name in names], []))
        targets = [at(ast.Name(name, ast.Store())) for name in names]
        target = targets[0] if len(targets) == 1 else at(ast.Tuple(targets, ast.Store()))
        iterable = items[0] if len(items) == 1 else at(ast.Call(at(ast.Name("zip", ast.Load())), list(items), []))
        return at(ast.GeneratorExp(elt, [ast.comprehension(target, iterable, [], 0)]))

    def expr(self, node, path):
        loops = []      # comprehensions, and maps (as_generator): their targets take their items
        for c in ast.walk(node):
            if isinstance(c, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                loops.append(c)
            elif self.on_items(c) is not None:
                loops.append(c)
                g = self.on_items(c).generators[0]
                self.bind_items(g.target, g.iter)
            elif isinstance(c, ast.comprehension):
                self.bind_items(c.target, c.iter)
        in_comprehension = {id(n) for c in loops for n in ast.walk(c)}
        # map(f, items) calls f on each item, a call the source does not write out: walked as written out
        for c in loops:
            if isinstance(c, ast.Call) and isinstance(self.on_items(c).elt, ast.Call) and \
                    self.on_items(c).elt.args and getattr(self.on_items(c).elt.args[0], "id", "").startswith(MAP_ITEM):
                self.call(self.on_items(c).elt, path, True)
        # what is named other than as a callee is walked as called (handed): a def, a class, a module-level object
        # of the notebook's class (its special methods), which a kernel may still not be handed (call())
        launched = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        mapped = {id(self.on_items(c).elt.func) for c in loops if isinstance(c, ast.Call) and
                  isinstance(self.on_items(c).elt, ast.Call)}     # walked with its items above
        # a def in a table of callables is walked where a loop's name holding it is called (table_call), with
        # what that call hands it
        tabled = {id(n) for d in ast.walk(node) if isinstance(d, (ast.Dict, ast.Tuple, ast.List)) and
                  _table_entries(d, self.w.ctx, self.own, d) is not None
                  for entry in (d.values if isinstance(d, ast.Dict) else d.elts) for n in ast.walk(entry)
                  if isinstance(n, ast.Name)}
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Name, ast.Attribute)) and isinstance(sub.ctx, ast.Load) and \
                    id(sub) not in launched | mapped | tabled:
                self.handed(sub)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and self.opaque_global(sub.id) and \
                    sub.id not in self.w.ctx.instances:
                self.w.flag(self.label, sub, "wrapper-torch-op", f"'{sub.id}' in the wrapper is an object of the "
                            "notebook's own (not a def, an import or plain data): what it runs is out of the "
                            "policy's sight; the wrapper only checks shapes, allocates h and y, and launches the kernel")
            if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Load) and not (
                    self.items_plain(sub.value) or self.tensorish(sub.value)) and \
                    not (isinstance(sub.value, ast.Name) and id(sub) in launched or self.kernel_of(sub.value) or
                         self.kernel_of(sub)):    # kernel[grid], KERNELS[k]: call()'s to judge
                self.w.flag(self.label, sub, "wrapper-torch-op", f"'{ast.unparse(sub)[:60]}' in the wrapper takes an "
                            "item of what the policy cannot read (an object of the notebook's, a call's result): its "
                            "__getitem__ may compute anything; the wrapper only checks shapes, allocates h and y, and "
                            "launches the kernel")
            if isinstance(sub, ast.BinOp) and (self.tensorish(sub.left) or self.tensorish(sub.right)):
                self.w.flag(self.label, sub, "wrapper-arithmetic",
                            "arithmetic on tensors in the wrapper (h = x + fx, a norm...): the kernel computes h and y")
            elif isinstance(sub, ast.UnaryOp) and self.tensorish(sub.operand):
                self.w.flag(self.label, sub, "wrapper-arithmetic", "arithmetic on a tensor in the wrapper")
            elif isinstance(sub, ast.Compare) and sum(map(self.tensorish, [sub.left, *sub.comparators])) >= 2 and \
                    not all(isinstance(op, (ast.Is, ast.IsNot)) for op in sub.ops):
                self.w.flag(self.label, sub, "wrapper-arithmetic", "an elementwise comparison of tensors in the wrapper")
            elif isinstance(sub, ast.Call):
                self.call(sub, path, id(sub) in in_comprehension)

    def handed(self, node) -> None:
        """A def, method or class of the notebook's named other than as a callee (key=f, iter(f, None), a bound
        method kept, a class handed on): what it is handed to may call it, with anything. Walked as if called
        so, a class with its special methods."""
        ctx = self.w.ctx
        if isinstance(node, ast.Name) and node.id not in self.own and node.id != self.w.name:
            if node.id in ctx.functions:
                label, fn = ctx.functions[node.id]
                self.w._function(label, fn, set(), opaque=frozenset(a.arg for a in _arguments(fn.args)))
            elif node.id in ctx.instances:      # a module-level object: what Python calls on it unwritten
                self.special_methods(ctx.instances[node.id])
            elif node.id in ctx.classes:
                init = ctx.method(node.id, "__init__")
                if init is not None:
                    self.w._function(ctx.cell_of(init), init, set(), node.id,
                                     opaque=frozenset(a.arg for a in _arguments(init.args)[1:]))
                self.special_methods(node.id)
        elif isinstance(node, ast.Attribute) and (found := self.method(node)) is not None and found[1] is not None:
            cls, fn, bound, named = found
            self.w._function(ctx.cell_of(fn), fn, set(), cls, named=named,
                             opaque=frozenset(a.arg for a in _arguments(fn.args)[bound:]))

    def special_methods(self, cls: str) -> None:
        """Walk the special methods and property getters of the notebook class cls, its own and its notebook
        bases', but __init__ (its call's to walk): Python calls them on an instance unwritten (with, for, ==,
        f"{obj}", len(), del, a call by what the instance is handed to, hasattr), handed what may be a tensor.
        For an nn.Module, every plain method too: its code calls methods by name (__call__ runs forward, __repr__
        extra_repr)."""
        ctx, line = self.w.ctx, _notebook_bases(cls, self.w.ctx)
        library = ctx.is_module(cls)
        for name in line:
            label, node = ctx.classes[name]
            for fn in node.body:
                if not isinstance(fn, ast.FunctionDef) or fn.name == "__init__" or ctx.method(cls, fn.name) is not fn:
                    continue
                special = fn.name.startswith("__") and fn.name.endswith("__")
                getter = is_getter(fn, ctx)
                kinds = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}
                params = [a.arg for a in _arguments(fn.args)]
                if "staticmethod" in kinds and special:
                    self.w._function(label, fn, set(params))
                elif "classmethod" in kinds and special:
                    self.w._function(label, fn, set(params[1:]), named=cls)
                elif special or getter:
                    self.w._function(label, fn, set(params[1:]), cls)
                elif library and not fn.decorator_list:
                    # it may never run: what it launches is not the wrapper's, and a call of it is walked anew
                    launches, seen = list(self.w.launches), dict(self.w.seen)
                    self.w._function(label, fn, set(params[1:]), cls)
                    self.w.launches[:], self.w.seen = launches, seen

    def kernel_of(self, node) -> str | None:
        """The notebook kernel that node names: its own name or an alias's (_kernel_aliases), or an item of a
        module-level table of kernels (_kernel_table: KERNELS[n <= 256])."""
        if isinstance(node, ast.Name):
            if node.id in self.kernel_aliases:
                return self.kernel_aliases[node.id]
            return node.id if node.id in self.w.ctx.kernels and node.id not in self.own else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id not in self.own and \
                _kernel_table(node.value.id, self.w.ctx):
            table = _module_table(node.value.id, self.w.ctx)
            return (table.values if isinstance(table, ast.Dict) else table.elts)[0].id
        return None

    def opaque_global(self, name: str) -> bool:
        """A module-level name bound by the student's cells to something other than a def, a kernel, an
        import, plain data or a result type: a module under another name, an object, a lambda."""
        ctx = self.w.ctx
        return name not in self.own and name in ctx.bound and not (
            name in ctx.functions or name in ctx.kernels or name in ctx.data or name in ctx.containers or
            name in ctx.aliases or name in ctx.classes or name in self.w.partials or _silent_exception(name, ctx) or
            _exception_table(name, ctx) or _kernel_table(name, ctx) or
            _table_entries(ast.Name(name, ast.Load()), ctx, self.own) is not None)

    def vouched_callee(self, f) -> bool:
        """What a call in the wrapper may call: an import's path, a name (a builtin, a def, a kernel, a result
        type; not one of the function's own, which may hold anything), a method of a tensor (checked below),
        or a plain-data method (str.join, dict.items, torch.Size.numel) of what is plain data (plain()). Not a
        method a tensor's class or a module has under another name (type(x).numpy)."""
        if self.w.ctx.resolve(f) is not None or self.method(f) is not None:   # or the notebook's plain class
            return True
        if _super_init(f) and "super" not in self.w.ctx.bound:     # a followed class's __init__ calling its base's
            return True
        if isinstance(f, ast.Name):     # not a data name either: _F = torch.add, then _F(*args)
            ctx = self.w.ctx
            return f.id not in self.own and (f.id not in ctx.bound or f.id in ctx.functions or f.id in ctx.kernels or
                                             f.id in ctx.containers or f.id in ctx.aliases)
        if isinstance(f, ast.Attribute) and f.attr in ("items", "values", "keys") and \
                self.table_entries(ast.Call(f, [], [])) is not None:
            return True     # CHECKS.items() of a table of callables: the loop over it is read (bind_items)
        if isinstance(f, ast.Attribute):
            return self.tensorish(f.value) or f.attr in SCALAR_METHODS | PACKING_METHODS | plain_methods() | \
                NAMEDTUPLE_METHODS | \
                CONTAINER_METHODS and self.plain(f.value)
        return False

    def call(self, node, path, in_comprehension: bool):
        f, ctx = node.func, self.w.ctx
        if getattr(node, "raised", False) and isinstance(f, (ast.Name, ast.Subscript)) and self.exception_class(f):
            return      # raise error(message) with error an exception class that computes nothing when built
        if self.as_generator(node) is not None or self.fold_generator(node) is not None:
            return      # its lambda's body is walked as a generator expression's
        keys = self.key_generator(node)
        if keys is not None:        # sorted(pairs, key=lambda kv: kv[0]): only what the function makes is compared
            if self.tensorish(keys.elt):
                self.w.flag(self.label, node, "wrapper-arithmetic", f"{f.id}() compares or tests what its function "
                            "makes of tensors, reading their values in Python: the kernel computes h and y")
            return
        if any(node is bound for bound in self.launchers.values()):    # launch = functools.partial(kernel[grid])
            return
        if isinstance(f, ast.Name) and f.id in self.launchers:     # launch = kernel[grid]; launch(...)
            node = self.unpartial(node)
            f = node.func if isinstance(self.launchers[f.id], ast.Call) else self.launchers[f.id]
        if isinstance(f, ast.Name) and f.id in self.helpers:       # def require(...): ... in the function
            self.helper(node)
            return
        if isinstance(f, ast.Name) and f.id in self.callables:     # for key, ok in CHECKS.items(): ok(x)
            self.table_call(node)
            return
        launch = isinstance(f, ast.Subscript) and (isinstance(f.value, ast.Name) or self.kernel_of(f.value))
        if not launch and not self.vouched_callee(f):
            self.w.flag(self.label, node, "wrapper-torch-op", f"'{ast.unparse(f)[:60]}(...)' in the wrapper calls "
                        "what the policy cannot name (a computed callee, a local holding a function, a method under "
                        "another name): the wrapper only checks shapes, allocates h and y, and launches the kernel")
            return
        if launch:
            if self.kernel_of(f.value):
                for arg in _displayed([*node.args, *(k.value for k in node.keywords)]):
                    if self.instance_of(arg) is not None or isinstance(arg, ast.Name) and arg.id in ctx.classes:
                        self.w.flag(self.label, arg, "wrapper-torch-op", f"'{ast.unparse(arg)[:40]}' hands the kernel "
                                    "an object of the notebook's own class, whose methods would run inside the launch: "
                                    "a kernel's arguments are tensors and plain data")
                if self.loops or in_comprehension:
                    self.w.flag(self.label, node, "wrapper-launch-loop", "a kernel launch inside a loop: one launch, "
                                                                         "grid = (n_rows,), one program per row")
                if all(node is not seen for seen, _ in self.w.launches):   # a helper walked once more
                    self.w.launches.append((node, path))
            else:
                self.w.flag(self.label, node, "wrapper-no-launch",
                            f"{f.value.id}[...](...) is not a @triton.jit kernel defined in your solution cells")
            return
        method = self.method(f)
        if method is not None:          # the notebook's class: C(...), obj(...), obj.method(...), C.method(...)
            cls, fn, bound, named = method
            if fn is not None:
                self.w._function(ctx.cell_of(fn), fn, self.passed(fn, node, bound), cls, named=named,
                                 opaque=self.given_opaque(fn, node, bound), raisers=self.given_raisers(fn, node, bound))
            if self.class_named(f) is not None:
                self.special_methods(self.class_named(f))
            context = ctx.method(f.value.id, "setup_context") if isinstance(f, ast.Attribute) and \
                f.attr == "apply" and isinstance(f.value, ast.Name) and f.value.id in ctx.classes else None
            if context is not None:     # it runs on apply's inputs and forward's output
                self.w._function(ctx.cell_of(context), context, {p.arg for p, _ in _parameters(context)[1:]})
            return
        name = ctx.resolve(f) or (f.id if isinstance(f, ast.Name) and f.id not in ctx.functions | ctx.kernels else None)
        if name is not None:
            if name.startswith("numpy"):
                self.w.flag(self.label, node, "numpy", f"{name} in the wrapper: the kernel computes h and y")
            elif name in WRAPPER_ALLOC or name.startswith("math.") or name in ctx.containers or \
                    name.split(".")[0] in HONEST_MODULES or name in function_forms() or \
                    name in WRAPPER_FILLS and _literal_fill(node, ctx):
                pass      # warnings.warn(...) reports, as print does; torch.reshape(x, s) is x.reshape(s)
            elif name in WRAPPER_SCALAR_FUNCS:
                if name not in PASSIVE_BUILTINS and any(self.tensorish(a) for a in node.args):
                    self.w.flag(self.label, node, "wrapper-arithmetic", f"{name}() of a tensor reads or reduces its "
                                                                        "values in Python: the kernel computes h and y")
            elif ctx.resolve(f) is not None:
                self.w.flag(self.label, node, "wrapper-torch-op", f"{name}(...) in the wrapper: it only checks "
                                                                  "shapes, allocates h and y, and launches the kernel")
            elif any(self.tensorish(a) for a in [*node.args, *(k.value for k in node.keywords)]):
                # sum(x), sorted(x), a local lambda applied to tensors: computing outside the kernel
                self.w.flag(self.label, node, "wrapper-arithmetic", f"{name}() applied to a tensor in the wrapper: "
                                                                    "the kernel computes h and y")
            return                      # a grid lambda of meta: its body is part of this walk
        if isinstance(f, ast.Name):
            if f.id in ctx.functions:
                label, fn = ctx.functions[f.id]
                self.w._function(label, fn, self.passed(fn, node), opaque=self.given_opaque(fn, node),
                                 raisers=self.given_raisers(fn, node))
            else:
                self.w.flag(self.label, node, "wrapper-no-launch", f"{f.id}(...) calls the kernel without a grid; "
                                                                   f"launch it as {f.id}[grid](...)")
            return
        if isinstance(f, ast.Attribute) and f.attr in CONTAINER_METHODS and \
                any(self.tensorish(a) for a in [*node.args, *(k.value for k in node.keywords)]):
            root = f.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):      # a list a tensor was put in holds a tensor: names.append(x)
                self.tensors.add(root.id)
        if isinstance(f, ast.Attribute) and f.attr in FILL_METHODS and _literal_fill(node, ctx):
            return
        if isinstance(f, ast.Attribute) and f.attr in PACKING_METHODS | CONTAINER_METHODS and \
                self.tensorish(f.value) and not self.plain(f.value) and self.table_entries(node) is None:
            # table[k].get(...), where a module-level table's item may be anything a function stored there
            self.w.flag(self.label, node, "wrapper-torch-op", f"'{ast.unparse(f)[:60]}(...)' in the wrapper calls a "
                        "method of what the policy cannot read (an object of the notebook's, an item of a module-level "
                        "list or dict): the wrapper only checks shapes, allocates h and y, and launches the kernel")
        if isinstance(f, ast.Attribute) and f.attr not in SCALAR_METHODS | TENSOR_VIEW_METHODS | PACKING_METHODS | \
                CONTAINER_METHODS and self.tensorish(f.value):
            self.w.flag(self.label, node, "wrapper-torch-op", f".{f.attr}(...) in the wrapper computes on the data; "
                                                              "the kernel computes h and y")


def _has_alloc(node, ctx) -> bool:
    return any(isinstance(n, ast.Call) and ctx.resolve(n.func) in WRAPPER_ALLOC | WRAPPER_FILLS for n in ast.walk(node))


def _literal_fill(call: ast.Call, ctx) -> bool:
    """Whether the fill of torch.full(size, fill), torch.full_like(x, fill) or x.new_full(size, fill) is a literal:
    a number, float("nan") or float("inf"), math.nan, torch.inf, or one negated."""
    fill = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "fill_value"), None)
    while isinstance(fill, ast.UnaryOp) and isinstance(fill.op, (ast.USub, ast.UAdd)):
        fill = fill.operand
    if isinstance(fill, ast.Constant):
        return isinstance(fill.value, (int, float, bool))
    if isinstance(fill, ast.Call) and isinstance(fill.func, ast.Name) and fill.func.id == "float" and \
            "float" not in ctx.bound and len(fill.args) == 1 and not fill.keywords:
        return isinstance(fill.args[0], ast.Constant) and isinstance(fill.args[0].value, str)
    return fill is not None and ctx.resolve(fill) in FILL_CONSTANTS


class _Kernel:
    """A @triton.jit function: decorators of plain data, constexpr annotations, literal defaults, and a
    body of Triton operations and arithmetic on their values (in the interpreter it runs as Python)."""

    def __init__(self, label: str, source: str, ctx: Notebook, fn: ast.FunctionDef, constants: frozenset[str]):
        """constants: the names a decorator's arguments may read as the literals they hold (_decorator_constants)."""
        self.label, self.source, self.ctx, self.fn, self.constants = label, source, ctx, fn, constants
        self.found: list[Violation] = []
        args = fn.args
        self.locals = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        self.constexpr = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs
                          if a.annotation is not None and self.annotation(a.annotation) == "constexpr"}
        self.locals |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        # def abs(...) in a cell, or a parameter named range, is no longer Python's
        self.builtins = KERNEL_BUILTINS - ctx.bound - self.locals

    def flag(self, node, rule, message):
        self.found.append(Violation(self.label, node.lineno, rule, FLAG, message, quote(self.source, node.lineno)))

    def run(self) -> list[Violation]:
        fn = self.fn
        for d in fn.decorator_list:
            self.decorator(d)
        args = fn.args
        for a in args.posonlyargs + args.args + args.kwonlyargs:
            if a.annotation is not None and self.annotation(a.annotation) is None:
                self.flag(a, "kernel-signature", f"parameter {a.arg}: a kernel's annotations are tl.constexpr or a "
                                                 "type Triton reads (int, float, bool, tl.int64, \"fp32\")")
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            if not _is_literal(d, self.ctx):
                self.flag(d, "kernel-signature", "a kernel parameter's default must be a plain constant")
        if args.vararg or args.kwarg:
            self.flag(fn, "kernel-signature", "*args / **kwargs in a kernel signature")
        for stmt in after_docstring(fn.body):
            self.stmt(stmt)
        return self.found

    def annotation(self, node) -> str | None:
        """What Triton makes of a parameter's annotation: "constexpr", "type" (int, float, bool, a tl dtype, a
        type string such as "*fp32": data, which Triton reads to specialise), or None, not one of these. Triton
        takes any annotation whose name holds "constexpr" for one (runtime/jit.py's KernelParam.is_constexpr),
        so such a string or path counts as constexpr here too."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return "constexpr" if "constexpr" in node.value else "type"
        if isinstance(node, ast.Name) and node.id in KERNEL_TYPES and node.id not in self.ctx.bound:
            return "type"
        path = self.ctx.resolve(node)
        if path is None or path.count(".") != 2 or not path.startswith("triton.language.") or not _tl_allowed(path):
            return None
        return "constexpr" if "constexpr" in path else "type"

    def decorator(self, d):
        target = d.func if isinstance(d, ast.Call) else d
        if self.ctx.resolve(target) not in KERNEL_DECORATORS:
            self.flag(d, "kernel-decorator", "a kernel's decorators are triton.jit, triton.autotune and "
                                             "triton.heuristics only")
            return
        if isinstance(d, ast.Call):
            for v in [*d.args, *(k.value for k in d.keywords)]:
                if not (_is_literal(v, self.ctx, self.constants) or self.heuristic(v) or self.data_function(v)):
                    self.flag(v, "kernel-decorator", "decorator arguments must be plain data (numbers, strings, "
                                                     "triton.Config(...), lists of them, small lambdas of args; a "
                                                     "lambda may call a def of yours that only returns such "
                                                     "arithmetic)")

    def data_function(self, v) -> bool:
        """configs=get_autotune_config(), as Triton's matmul tutorial writes it: a call, with no arguments, of
        the notebook's own function whose parameters all default to literals, that has no decorator and only
        returns plain data of them and of the decorator constants (its name the rebinding check keeps on that
        def)."""
        if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and not v.args and not v.keywords):
            return False
        found = self.ctx.functions.get(v.func.id)
        if found is None or found[1].decorator_list:
            return False
        a, body = found[1].args, after_docstring(found[1].body)
        defaults = [*a.defaults, *a.kw_defaults]
        if a.vararg or a.kwarg or len(defaults) != len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) or \
                not all(_is_literal(d, self.ctx, self.constants) for d in defaults):
            return False      # called with nothing, each parameter holds its default
        return len(body) == 1 and isinstance(body[0], ast.Return) and _is_literal(
            body[0].value, self.ctx, self.constants | {p.arg for p in _arguments(a)})

    def heuristic(self, v) -> bool:
        """triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])}), or a def of the
        notebook's that only returns such an expression in place of the lambda."""
        if isinstance(v, ast.Dict):
            return all(isinstance(k, ast.Constant) and self.heuristic(x) for k, x in zip(v.keys, v.values))
        if isinstance(v, ast.Name) and v.id in self.ctx.functions:
            fn = self.ctx.functions[v.id][1]
            body = after_docstring(fn.body)
            return not fn.decorator_list and len(body) == 1 and isinstance(body[0], ast.Return) and \
                body[0].value is not None and self.heuristic(ast.copy_location(ast.Lambda(fn.args, body[0].value), fn))
        if isinstance(v, ast.Name) and v.id not in self.ctx.global_names:
            # a name bound once, to such a lambda or a table of them, that nothing stores into (HEURISTICS = {...})
            nodes = self.ctx.module_bindings.get(v.id, [])
            return len(nodes) == 1 and isinstance(nodes[0], ast.Assign) and len(nodes[0].targets) == 1 and \
                isinstance(nodes[0].value, (ast.Lambda, ast.Dict)) and \
                _only_read(v.id, self.ctx, frozenset({id(v)})) and self.heuristic(nodes[0].value)
        if not isinstance(v, ast.Lambda) or len(v.args.args) != 1:
            return False
        return self.launch_arithmetic(v.body, {v.args.args[0].arg})

    def launch_arithmetic(self, body, params: set[str], seen: frozenset[str] = frozenset()) -> bool:
        """A heuristic's body, which runs inside the launch, on the launch's arguments (the tensors among them):
        it may read sizes and shapes and compute with numbers, and call a def of the notebook's that only returns
        such an expression of its own parameters (block_for(args["n_cols"])); never call a method that reads or
        writes the data (a["h_ptr"].copy_(...), a["x_ptr"].numpy(): NumPy runs no torch operator for the tracer
        to see)."""
        allowed = params | self.builtins | self.ctx.constants
        helpers = ("triton.next_power_of_2", "triton.cdiv")
        called = {id(n.func): n.func.id for n in ast.walk(body) if isinstance(n, ast.Call) and
                  isinstance(n.func, ast.Name) and n.func.id not in allowed and self.arithmetic_def(n.func.id, seen)}
        for n in ast.walk(body):
            if isinstance(n, ast.Name) and n.id not in allowed and id(n) not in called and \
                    self.ctx.resolve(n) != "triton":
                return False
            if isinstance(n, ast.Attribute) and self.ctx.resolve(n) not in helpers and not (
                    self.ctx.resolve(n) is None and n.attr in SCALAR_ATTRIBUTES | SCALAR_METHODS | INT_METHODS):
                return False
            if isinstance(n, ast.Call) and not (self.ctx.resolve(n.func) in helpers or id(n.func) in called or (
                    isinstance(n.func, ast.Name) and n.func.id in self.builtins - params) or (
                    isinstance(n.func, ast.Attribute) and n.func.attr in SCALAR_METHODS | INT_METHODS)):
                return False
            if isinstance(n, (ast.Lambda, ast.comprehension, ast.NamedExpr)):
                return False
        return True

    def arithmetic_def(self, name: str, seen: frozenset[str]) -> bool:
        """A def of the notebook's, undecorated, of plain positional parameters, whose body (after a docstring)
        is one `return` of launch arithmetic on them; not while it is being worked out (a recursive call)."""
        if name not in self.ctx.functions or name in seen:
            return False
        fn = self.ctx.functions[name][1]
        a, body = fn.args, after_docstring(fn.body)
        return not (fn.decorator_list or a.vararg or a.kwonlyargs or a.kwarg or a.defaults) and len(body) == 1 and \
            isinstance(body[0], ast.Return) and body[0].value is not None and \
            self.launch_arithmetic(body[0].value, {p.arg for p in a.posonlyargs + a.args}, seen | {name})

    def stmt(self, node):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in self.constexpr:
            self.constexpr |= {t.id for t in node.targets if isinstance(t, ast.Name)}    # an alias is one too
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr) and child is not getattr(node, "annotation", None):
                    self.expr(child)
        elif isinstance(node, ast.If):
            self.expr(node.test)
            for s in node.body + node.orelse:
                self.stmt(s)
        elif isinstance(node, ast.For):
            it = node.iter
            if not (isinstance(it, ast.Call) and (
                    (isinstance(it.func, ast.Name) and it.func.id == "range") or
                    self.ctx.resolve(it.func) in ("triton.language.range", "triton.language.static_range"))):
                self.flag(node, "kernel-python", "a kernel loops over range, tl.range or tl.static_range only")
            self.expr(it)
            for s in node.body + node.orelse:
                self.stmt(s)
        elif isinstance(node, ast.While):
            self.expr(node.test)
            for s in node.body + node.orelse:
                self.stmt(s)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            pass
        else:
            self.flag(node, "kernel-python", f"a {type(node).__name__} statement in a kernel: a kernel body is "
                                             "Triton operations and arithmetic on their values")

    def expr(self, node):
        if isinstance(node, ast.Constant):
            return
        if isinstance(node, ast.Name):
            ok = node.id in self.locals or node.id in self.builtins or node.id in self.ctx.kernels or \
                node.id in self.ctx.constants or self.ctx.resolve(node) in ("triton", "triton.language")
            if not ok:
                self.flag(node, "kernel-python", f"'{node.id}' in a kernel: only its parameters, its own "
                                                 "variables, tl, other kernels and plain constants")
            return
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.value, ast.Name) and \
                node.value.id in self.constexpr:
            # in the interpreter a constexpr parameter holds whatever object the launch passed: its methods
            # would run Python inside the launch, where nothing is traced
            self.flag(node, "kernel-python", f"'{ast.unparse(node)}': a tl.constexpr parameter is a compile-time "
                                             "constant (a number, a dtype, a flag); in a kernel it is used as a "
                                             "value, never indexed or asked for attributes or methods")
            return
        if isinstance(node, ast.Attribute):
            path = self.ctx.resolve(node)
            if path is not None:
                self.tl_path(node, path)
                return
            if node.attr not in KERNEL_METHODS:
                self.flag(node, "kernel-python", f"'.{node.attr}' on a value in a kernel: only Triton's "
                                                 "tensor methods (to, dtype, shape, reshape, sum, ...)")
            self.expr(node.value)
            return
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id not in self.builtins and f.id not in self.ctx.kernels:
                self.flag(node, "kernel-python", f"calling '{f.id}' in a kernel: only tl functions, other "
                                                 "@triton.jit functions, range, min and max")
            else:
                self.expr(f)
            for a in [*node.args, *(k.value for k in node.keywords)]:
                self.expr(a)
            return
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.List,
                             ast.Subscript, ast.Slice, ast.Starred)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
            return
        self.flag(node, "kernel-python", f"a {type(node).__name__} expression in a kernel")

    def tl_path(self, node, path: str):
        if not _tl_allowed(path):
            self.flag(node, "kernel-python", f"{path} in a kernel: only triton.language operations")


def _tl_allowed(path: str) -> bool:
    """A path a kernel may use: triton.language's public names (tl.math.X, tl.extra.cuda.libdevice.X)."""
    parts = path.split(".")
    if parts[:2] == ["triton", "language"]:
        rest = parts[2:]
        return not rest or (rest[0] not in TL_REFUSED and not rest[0].startswith("_") and
                            (len(rest) == 1 or rest[0] in TL_MODULES) and not any(p.startswith("_") for p in rest))
    return path in ("triton.cdiv", "triton.next_power_of_2")
