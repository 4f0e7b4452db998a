"""fused-add-norm's kernel rules: each kernel is Triton operations only, its decorators are given plain data, its
attributes are Triton's, and each name they check is bound by its checked def alone. What the wrapper around the
kernel does is measured where it runs (the launch trace: docs/security.md), not read here.

    out = check_kernels(Notebook(cells))    # [Violation, ...], severity flag

policy.check_cells runs it on every notebook: one without a @triton.jit def has nothing to check but where
a kernel may be made.
"""
from __future__ import annotations

import ast
import collections
import functools

from .cellcode import (FLAG, NUMBER_FUNCTIONS, Notebook, Violation, _arguments, _is_jit, _is_literal, _only_read,
                       after_docstring, dtype_path, is_stub, library_decorator, names_one_of, quote)

SCALAR_METHODS = {"size", "dim", "numel", "stride", "element_size", "nelement", "ndimension", "is_contiguous",
                  "data_ptr", "get_device", "storage_offset", "is_floating_point",
                  # what kind of tensor it is, read off its dtype and flags (never is_nonzero, which reads a value)
                  "is_complex", "is_signed", "is_inference", "is_conj", "is_neg", "is_pinned"}
SCALAR_ATTRIBUTES = {"shape", "ndim", "dtype", "device", "is_cuda", "layout", "requires_grad", "itemsize"}
# an int's own, in a heuristic: 1 << (n - 1).bit_length(), the next power of two (a tensor has no such method)
INT_METHODS = {"bit_length"}


KERNEL_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics"}
KERNEL_TYPES = {"int", "float", "bool"}          # the Python types Triton reads as i32, fp32 and u1
KERNEL_BUILTINS = {"range", "min", "max", "abs", "int", "float", "len", "True", "False", "None"}
# what a kernel reads off a value: a block's and a dtype's data, and every method Triton's tensor and dtype classes
# define (kernel_methods)
KERNEL_DATA = {"dtype", "type", "element_ty", "shape", "value", "primitive_bitwidth", "T"}
TL_MODULES = {"math", "extra"}                   # tl.math.X, tl.extra.cuda.libdevice.X
TL_REFUSED = {"core", "semantic", "standard", "target_info", "inline_asm_elementwise", "random"}


@functools.lru_cache(maxsize=1)
def kernel_methods() -> frozenset[str]:
    """KERNEL_DATA, the public names triton.language's tensor class defines (its operations: .rsqrt(), .cast(),
    .sum(), each a Triton builtin or a jit function of triton.language.standard), and its dtype's is_* questions;
    read off the installed Triton, whose kernels these are (red team 38: a hand-kept list missed .rsqrt)."""
    try:
        import triton.language as tl
    except ImportError:
        return frozenset(KERNEL_DATA)
    return frozenset(KERNEL_DATA | {n for n in vars(tl.tensor) if not n.startswith("_")} |
                     {n for n in vars(tl.dtype) if n.startswith("is_")})


def check_kernels(ctx: Notebook) -> list[Violation]:
    """The kernels' violations, and every rebinding of a kernel's name or of a function its decorators name."""
    out = _unread_kernels(ctx)
    if not ctx.kernels:      # none to read, but one made where these rules would not read it
        return out
    constants = _decorator_constants(ctx) if any(isinstance(d, ast.Call) for _, fn in ctx.kernels.values()
                                                 for d in fn.decorator_list) else frozenset()
    for name, (label, fn) in ctx.kernels.items():
        if not is_stub(fn):
            out += _Kernel(label, ctx.sources[label], ctx, fn, constants).run()
    roots = [n for _, fn in ctx.kernels.values() for n in [*fn.decorator_list, *fn.args.defaults, *fn.args.kw_defaults]
             if n is not None]
    checked = set(ctx.kernels) | (_reached(ctx, roots) & (set(ctx.functions) | set(ctx.classes)))
    return out + _rebound(ctx, checked) + _kernel_attributes(ctx)


def _reached(ctx: Notebook, roots: list[ast.AST]) -> set[str]:
    """The names these nodes read, and those read in turn by the defs, classes and module-level values they name
    (a heuristic's helper, a table's def, a default's class of constants): the rules read each by its last binding,
    so each must keep it (red team 39: a helper of a heuristic def, a def in a table and a default's class, each
    bound again to an object that ran Python on the blocks)."""
    seen: set[str] = set()
    todo = [n.id for root in roots for n in ast.walk(root) if isinstance(n, ast.Name)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = ctx.functions.get(name) or ctx.classes.get(name)
        nodes = [found[1]] if found else [b.value for b in ctx.module_bindings.get(name, [])
                                          if isinstance(b, (ast.Assign, ast.AnnAssign)) and b.value is not None]
        todo += [n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and n.id not in seen]
    return seen


def _unread_kernels(ctx: Notebook) -> list[Violation]:
    """A kernel these rules read is a def at the top level of its cell, decorated @triton.jit (cellcode.kernel_defs;
    the fusion tests fail a launch of any other). Flags a jit decorator on any other def (in a function, an if), and
    triton.jit or triton.JITFunction reached but as such a decorator (triton.jit(f), held, handed on)."""
    out = []
    for label, tree in ctx.trees.items():
        if not ctx.student[label]:
            continue
        top = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
        decorating = {id(d.func if isinstance(d, ast.Call) else d) for fn in top for d in fn.decorator_list}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node not in top and any(_is_jit(d, ctx) for d in
                                                                              node.decorator_list):
                where = node.decorator_list[0]
            elif isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in decorating and \
                    names_one_of(ctx.resolve(node), ("triton.jit", "triton.JITFunction")):
                where = node
            else:
                continue
            out.append(Violation(label, where.lineno, "kernel-decorator", FLAG, "a kernel is @triton.jit on a def at "
                                 "the top level of its cell: the grader reads only such a def's body, and a launch "
                                 "of any other kernel (defined in a function or an if, made by calling triton.jit) "
                                 "fails the fusion tests", quote(ctx.sources[label], where.lineno)))
    return out


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


def _rebound(ctx: Notebook, names: set[str]) -> list[Violation]:
    """The checks above read each function's last top-level def; they hold only while the name still
    holds that def when the cells have run. Flags every binding of these names after it (an assignment, an
    import, a loop or with target, a def nested in an if, a del), a `global` for them in any function, and a
    decorator on a function they name (it replaces the def by what it returns) unless it is a library's given
    plain data, and then any use of the name but a call."""
    out = []
    for label, node, bound in ctx.top_bindings:
        final = ctx.functions.get(bound) or ctx.kernels.get(bound) or ctx.classes.get(bound)
        if not ctx.student[label] or bound not in names or (final is not None and final[1] is node):
            continue
        at, last = (ctx.order[label], node.lineno), (ctx.order[final[0]], final[1].lineno) if final else None
        if final is None or last < at:
            out.append(Violation(label, node.lineno, "rebound", FLAG, f"'{bound}' is bound again here, so the "
                                 "function the grader checked is not the one the tests call: define it once, "
                                 "with def, and leave the name alone", quote(ctx.sources[label], node.lineno)))
        elif any(at < (ctx.order[where], read.lineno) < last for read, where in ctx.loads.get(bound, [])):
            # read before its checked def binds it again (a partial, a decorator's argument, an object built):
            # what was read is this binding, which the grader did not check
            out.append(Violation(label, node.lineno, "rebound", FLAG, f"'{bound}' is bound here and read before "
                                 "the def the grader checks binds it again: define it once, with def",
                                 quote(ctx.sources[label], node.lineno)))
    for label, tree in ctx.trees.items():
        for node in ast.walk(tree) if ctx.student[label] else ():
            if isinstance(node, ast.Global) and names & set(node.names):
                named = ", ".join(names & set(node.names))
                out.append(Violation(label, node.lineno, "rebound", FLAG, f"'global {named}' lets a function rebind a "
                                     "name the grader checked", quote(ctx.sources[label], node.lineno)))
    decorated = set()
    for name, (label, fn) in ctx.functions.items():
        if name not in names or not fn.decorator_list:
            continue
        own = next((d for d in fn.decorator_list if not library_decorator(d, ctx)), None)
        if own is not None:
            out.append(Violation(label, own.lineno, "rebound", FLAG, f"a decorator on {name} that is not a library's "
                                 "given plain data: the name then holds what it returns, not the def the grader "
                                 "checked", quote(ctx.sources[label], own.lineno)))
        else:
            decorated.add(name)
    return out + _not_called(ctx, decorated)


def _not_called(ctx: Notebook, names: set[str]) -> list[Violation]:
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
                out.append(Violation(label, node.lineno, "rebound", FLAG, f"'{node.id}' is decorated, and used "
                                     "here other than called: through it, what the decorator returned could run "
                                     "something else than the def the grader checked; only call it",
                                     quote(ctx.sources[label], node.lineno)))
    return out


def _module_table(name: str, ctx: Notebook) -> ast.expr | None:
    """The display a module-level name of the student's is bound to, once and in no other way, and only read
    (_only_read: ERRORS = {"shape": ShapeError}); None for any other name."""
    bound = ctx.module_bindings.get(name, [])
    if len(bound) == 1 and isinstance(bound[0], ast.Assign) and len(bound[0].targets) == 1 and \
            isinstance(bound[0].value, (ast.Dict, ast.Tuple, ast.List)) and name not in ctx.global_names and \
            _only_read(name, ctx):
        return bound[0].value
    return None


def _decorator_constants(ctx: Notebook) -> frozenset[str]:
    """The module-level names every binding of which is a literal of such names, and that nothing stores into
    (_only_read, a kernel decorator's argument a read too): each is the literal it holds (WARPS = (4, 8);
    configs=[triton.Config({}, num_warps=w) for w in WARPS])."""
    given = frozenset(id(a) for _, fn in ctx.kernels.values() for d in fn.decorator_list if isinstance(d, ast.Call)
                      for a in [*d.args, *(k.value for k in d.keywords)]) | \
        frozenset(id(d) for _, fn in ctx.kernels.values() for d in [*fn.args.defaults, *fn.args.kw_defaults])
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


def _kernel_table(name: str, ctx: Notebook) -> bool:
    """A module-level table (_module_table) of the notebook's kernels by their own names: KERNELS = {True:
    small_kernel, False: kernel}."""
    table = _module_table(name, ctx)
    values = table.values if isinstance(table, ast.Dict) else table.elts if table is not None else []
    return bool(values) and all(isinstance(v, ast.Name) and v.id in ctx.kernels for v in values)


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
        self.arithmetic: dict[str, bool] = {}     # arithmetic_def's answers, by def

    def flag(self, node, rule, message):
        self.found.append(Violation(self.label, node.lineno, rule, FLAG, message, quote(self.source, node.lineno)))

    def resolve(self, node, scope: set[str] | None = None) -> str | None:
        """ctx.resolve in the body's scope (the kernel's own variables by default): a chain rooted at a name the
        scope binds names no import (`tl = x` in a kernel, then tl.handle is x's attribute, not triton.language's)."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        local = self.locals if scope is None else scope
        return None if isinstance(root, ast.Name) and root.id in local else self.ctx.resolve(node)

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
            if not _is_literal(d, self.ctx, self.constants | self.ctx.scalars):     # ROWS: tl.constexpr = ROWS_PER
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
                                                     "triton.Config(...), lists of them, small lambdas of args, or a "
                                                     "def of yours of arithmetic on sizes and dtypes: assignments, "
                                                     "ifs, whiles and returns, no call of a tensor's methods)")

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
        notebook's of such arithmetic (arithmetic_body) in place of the lambda."""
        if isinstance(v, ast.Dict):
            return all(isinstance(k, ast.Constant) and self.heuristic(x) for k, x in zip(v.keys, v.values))
        if isinstance(v, ast.Name) and v.id in self.ctx.functions:
            fn = self.ctx.functions[v.id][1]
            a = fn.args
            return not (fn.decorator_list or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg) and \
                len(a.args) == 1 and self.arithmetic_body(after_docstring(fn.body), {a.args[0].arg})
        if isinstance(v, ast.Name) and v.id not in self.ctx.global_names:
            # a name bound once, to such a lambda or a table of them, that nothing stores into (HEURISTICS = {...})
            nodes = self.ctx.module_bindings.get(v.id, [])
            return len(nodes) == 1 and isinstance(nodes[0], ast.Assign) and len(nodes[0].targets) == 1 and \
                isinstance(nodes[0].value, (ast.Lambda, ast.Dict)) and \
                _only_read(v.id, self.ctx, frozenset({id(v)})) and self.heuristic(nodes[0].value)
        if not isinstance(v, ast.Lambda) or len(v.args.args) != 1:
            return False
        return self.launch_arithmetic(v.body, {v.args.args[0].arg})

    def launch_arithmetic(self, body, params: set[str]) -> bool:
        """A heuristic's body, which runs inside the launch, on the launch's arguments (the tensors among them):
        it may read sizes and shapes and compute with numbers, and call a def of the notebook's that only returns
        such an expression of its own parameters (block_for(args["n_cols"])); never call a method that reads or
        writes the data (a["h_ptr"].copy_(...), a["x_ptr"].numpy(): NumPy runs no torch operator for the tracer
        to see)."""
        allowed = params | self.builtins | self.ctx.constants
        helpers = {"triton.next_power_of_2", "triton.cdiv", *NUMBER_FUNCTIONS}
        called = {id(n.func): n.func.id for n in ast.walk(body) if isinstance(n, ast.Call) and
                  isinstance(n.func, ast.Name) and n.func.id not in allowed and self.arithmetic_def(n.func.id)}
        for n in ast.walk(body):
            if isinstance(n, ast.Name) and n.id not in allowed and id(n) not in called and \
                    self.resolve(n, params) not in {"triton", "triton.language", "torch", "math", *helpers}:
                return False      # a module whose paths the checks below read, or a helper imported by name
            path = self.resolve(n, params) if isinstance(n, ast.Attribute) else None
            if isinstance(n, ast.Attribute) and path not in helpers and not (
                    path is None and n.attr in SCALAR_ATTRIBUTES | SCALAR_METHODS | INT_METHODS) and \
                    not dtype_path(path, "torch.") and not dtype_path(path, "triton.language."):
                return False      # a["x_ptr"].dtype == torch.float32 compares dtypes
            if isinstance(n, ast.Call) and not (self.resolve(n.func, params) in helpers or id(n.func) in called or (
                    isinstance(n.func, ast.Name) and n.func.id in self.builtins - params) or (
                    isinstance(n.func, ast.Attribute) and n.func.attr in SCALAR_METHODS | INT_METHODS)):
                return False
            if isinstance(n, (ast.Lambda, ast.comprehension, ast.NamedExpr)):
                return False
        return True

    def arithmetic_def(self, name: str) -> bool:
        """A def of the notebook's, undecorated, of plain positional parameters, whose body (after a docstring)
        is launch arithmetic on them (arithmetic_body); not while it is being worked out (a recursive call). Worked
        out once per def: helpers calling each other twice at each of 18 levels took 2^18 readings (red team 39)."""
        if name in self.arithmetic:
            return self.arithmetic[name]
        if name not in self.ctx.functions:
            return False
        self.arithmetic[name] = False       # while it is worked out
        fn = self.ctx.functions[name][1]
        a = fn.args
        self.arithmetic[name] = not (fn.decorator_list or a.vararg or a.kwonlyargs or a.kwarg or a.defaults) and \
            self.arithmetic_body(after_docstring(fn.body), {p.arg for p in a.posonlyargs + a.args})
        return self.arithmetic[name]

    def arithmetic_body(self, body: list, params: set[str]) -> bool:
        """A def's statements, each of launch arithmetic on its parameters and the names it assigns: an assignment
        (augmented or annotated) to plain names or tuples of them, an if, a while, a return (n = args["n_cols"];
        w = 1; while w * 256 < n and w < 16: w *= 2; return w)."""
        targets = [t for s in body for n in ast.walk(s) for t in (
            n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign))
            else [])]
        names = params | {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for stmt in body:
            if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)):
                plain = all(isinstance(n, (ast.Name, ast.Tuple, ast.Store)) for t in (
                    stmt.targets if isinstance(stmt, ast.Assign) else [] if isinstance(stmt, ast.Return)
                    else [stmt.target]) for n in ast.walk(t))
                if not plain or stmt.value is None or not self.launch_arithmetic(stmt.value, names):
                    return False
            elif not (isinstance(stmt, (ast.If, ast.While)) and self.launch_arithmetic(stmt.test, names) and
                      self.arithmetic_body(stmt.body, names) and self.arithmetic_body(stmt.orelse, names)):
                return False
        return True

    def stmt(self, node):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in self.constexpr:
            self.constexpr |= {t.id for t in node.targets if isinstance(t, ast.Name)}    # an alias is one too
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr) and child is not getattr(node, "annotation", None):
                    self.expr(child)
        elif isinstance(node, (ast.If, ast.While)):
            self.expr(node.test)
            for s in node.body + node.orelse:
                self.stmt(s)
        elif isinstance(node, ast.For):
            it = node.iter
            if not (isinstance(it, ast.Call) and (
                    (isinstance(it.func, ast.Name) and it.func.id == "range") or
                    self.resolve(it.func) in ("triton.language.range", "triton.language.static_range"))):
                self.flag(node, "kernel-python", "a kernel loops over range, tl.range or tl.static_range only")
            self.expr(it)
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
            path = self.resolve(node)
            if path is not None:
                self.tl_path(node, path)
                return
            if node.attr not in kernel_methods():
                self.flag(node, "kernel-python", f"'.{node.attr}' on a value in a kernel: only Triton's "
                                                 "tensor methods (to, dtype, shape, reshape, sum, rsqrt, ...)")
            self.expr(node.value)
            return
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id not in self.builtins and f.id not in self.ctx.kernels:
                hint = " (to print a value, tl.device_print(\"h\", h))" if f.id == "print" else \
                    f" (the notebook binds '{f.id}' to something of its own)" if f.id in KERNEL_BUILTINS else ""
                self.flag(node, "kernel-python", f"calling '{f.id}' in a kernel: only tl functions, other "
                                                 f"@triton.jit functions, range, min, max, abs, int, float and "
                                                 f"len{hint}")
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
        # every part: triton.language.math.core is triton.language.core (red team 39)
        return not rest or ((len(rest) == 1 or rest[0] in TL_MODULES) and
                            not any(p in TL_REFUSED or p.startswith("_") for p in rest))
    return path in ("triton.cdiv", "triton.next_power_of_2")
