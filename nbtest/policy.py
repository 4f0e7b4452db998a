"""Static policy for a submission's code: what the grader reads in the source, never runs.

    policy = for_assignment(course.assignment("residual-connections").rules)
    violations = check_cells([("setup", SETUP, False), ("residual_add", SRC, True)], policy)
    for v in violations:
        print(v)        # "residual_add line 3: [process-introspection] ... | import sys"

A cell is (label, source, is_student). Only student cells are checked; trusted cells
(the locked setup cells from the course's source notebook) are read for their imports
and definitions, so that `tl`, `F` or `nn` resolve the way they do when the notebook runs.

Each violation has a severity:

    withhold  the construct can reach the grader's own code or state in the sandbox child
              (frames, sys.modules, gc, ctypes, dunder attributes, computed attribute names,
              files, processes). Tests that rest on what the sandbox child reports (not on
              returned values) are held for an instructor's look (grading/grader.py).
    flag      the construct breaks the assignment's rules but cannot forge an observation
              (an import outside the allowed list, monkeypatching a library, a Transformer
              class in assignment 1, a wrapper that computes with torch in fused-add-norm).
              The rules test fails, the submission is flagged, and named tests that rest
              on the rule (block_parts, launches_kernel, one_launch) fail with it.

Pure Python: ast only. Nothing is imported from torch or Triton, and the source never runs. It is
the grader's policy and the public tests' (nbtest's rules test), so a student sees the same rules
applied before uploading.
"""
from __future__ import annotations

import ast
import collections
import functools
import re
import threading
from dataclasses import dataclass, field
from typing import Protocol

from .cellsource import PYTHON, python_lines


class Rules(Protocol):
    """An assignment's rules: course.toml's [assignments.NAME.policy] (course.Rules), or the release's rules.toml."""
    allowed_imports: tuple[str, ...]
    forbidden_modules: tuple[str, ...]
    no_transformer_classes: bool
    kernel_wrapper: str

WITHHOLD, FLAG = "withhold", "flag"
# What each withhold rule still guards with the probe out of reach (the demotion of each to a flag, tried
# against the forgeries and the hostile corpus); docs/security.md says the same, tests/test_policy.py checks
GUARDS = {
    "process-introspection": "sys, os, gc, ctypes, frames, sockets and files, by import, attribute or re-export: "
    "the child's connection to the grader, on which a cell can write any frame and the grader reads it as the "
    "probe's reply (core/replies.py; hostile-frame-* are read so), so a well-formed forged structure or "
    "launch-trace reply would pay what forged-structure-report and forged-launch-trace did; no sample forges one, "
    "and with every static withhold rule demoted no forgery sample outscores its twin",
    "dynamic-code": "exec, eval, compile, __import__, open, globals and vars: __import__ and the builtins that "
    "globals() and vars() hand out import a loaded module (os) with no audited event, the spelling of "
    "process-introspection's route; exec, compile and open are audited too; the only withhold finding on "
    "hostile-budget, whose tests that pass before it stalls are held (35 of 100 at the course's budget, 54 if "
    "demoted)",
    "dunder": "object.__setattr__, __dict__, __globals__, __closure__, __code__, __subclasses__: a library "
    "function's globals (os) and any class with no import and no audited event, the spelling of "
    "process-introspection's route; hides-encoder-layer scores its twin's 97 with it demoted (block_parts is held "
    "by the transformer-class flag too)",
    "private-attribute": "a library object's private attributes: torch's C internals and private modules "
    "(torch._C, torch._dynamo), where torch._C._dynamo.eval_frame.set_eval_frame hands a callback every frame "
    "that runs after it, the probe's included, with no audited event; and nn.Module's _modules, _parameters and "
    "hooks, a layer hidden from the structure the probe reads",
    "computed-attribute": "getattr, setattr and delattr with a name the policy cannot read: the spelling of "
    "a dunder, private or frame attribute (tb_frame, f_globals) out of the rules above; no sample trips it",
    "too-deep": "a cell nested deeper than the checks can walk: the policy cannot vouch for it, so any "
    "construct above could hide there",
    "monitor": "an audited event (a frame or gc read, exec, compile, an import, a file, a torch mode left "
    "active): the only defence against reach-dynamic-class-* and reach-torch-mode-*, torch modes that "
    "answer the probe's reads without reaching it; the strings a library runs (reach-string-*) find no probe",
}
_PARSING = threading.Lock()


def parse(source: str) -> ast.Module:
    """ast.parse, one thread at a time. CPython 3.11 keeps one AST-building depth counter per interpreter
    (gh-106905): the grader's threads, parsing two notebooks at once, could fail with SystemError "AST
    constructor recursion depth mismatch" and lose a batch's results."""
    with _PARSING:
        return ast.parse(source, feature_version=PYTHON)


# Modules whose import is itself a way into the process (severity withhold); any other module
# outside the allowed list is a plain flag.
PROCESS_MODULES = frozenset({
    "sys", "os", "gc", "ctypes", "importlib", "inspect", "builtins", "threading", "_thread", "signal",
    "subprocess", "socket", "io", "pathlib", "shutil", "pickle", "marshal", "types", "weakref", "code",
    "codeop", "runpy", "multiprocessing", "resource", "linecache", "traceback", "tracemalloc", "atexit",
    "faulthandler", "mmap", "tempfile", "posix", "pty", "fcntl", "select", "asyncio", "concurrent",
    "dis", "ast", "copyreg", "shelve", "sqlite3", "urllib", "http", "requests"})
# Modules any cell may import, whatever the assignment's list: compiler directives Jupyter honours per
# cell, and warnings, which neither the grader's child nor any score reads (copy, time, random and
# logging stay outside: copy hands out copyreg's dispatch table, the child times and seeds with time
# and random, logging opens files)
HONEST_MODULES = frozenset({"__future__", "warnings"})
# Names that run code, read files or expose a namespace. help() is not among them: it prints an object's
# documentation and hands nothing back; what pydoc may do for it (import a module named by a string, read
# input) is the monitor's to see (a grader package's import, builtins.input).
FORBIDDEN_NAMES = frozenset({
    "__import__", "exec", "eval", "compile", "open", "globals", "locals", "vars", "breakpoint",
    "input", "__builtins__", "__loader__", "__spec__", "memoryview", "exit", "quit"})
# Attribute names that lead from an ordinary object to the process: torch.sys, torch.os,
# a traceback's frames, a generator's frame, torch's dispatcher overrides.
PROCESS_ATTRIBUTES = frozenset({
    "sys", "os", "builtins", "importlib", "inspect", "gc", "ctypes", "subprocess", "socket", "shutil",
    "signal", "threading", "multiprocessing", "resource", "linecache", "pickle", "marshal", "pathlib",
    "tempfile", "weakref", "runpy", "tb_frame", "tb_next", "f_back", "f_globals", "f_locals",
    "f_builtins", "f_code", "gi_frame", "gi_code", "cr_frame", "ag_frame", "co_code", "library",
    "overrides", "hub", "ctypeslib"})
# Dotted paths (after import aliases are resolved) that read or write files, or reach the runtime.
PROCESS_PATHS = ("torch.load", "torch.save", "torch.from_file", "torch.utils", "torch.ops", "torch.jit",
                 "torch.package", "torch.multiprocessing", "torch.distributed",
                 "numpy.load", "numpy.save", "numpy.savez", "numpy.fromfile", "numpy.memmap",
                 "numpy.loadtxt", "numpy.genfromtxt", "numpy.lib", "triton.runtime", "triton.compiler",
                 "triton.backends", "triton.knobs", "triton.testing", "triton.tools")
# Compilers the grader's child and the public tests replace by a pass-through (nbtest/uncompiled.py): no
# compiler runs, so calling one reaches nothing.
UNCOMPILED = ("torch.compile", "torch.compiler.compile", "torch.jit.script")
# Dunder attributes an honest solution reads (super().__init__(), type(x).__name__).
SAFE_DUNDERS = frozenset({"__init__", "__name__", "__qualname__", "__doc__"})
# Dunders a class body may not define: they lie about type or reroute torch's dispatch.
OVERRIDE_DUNDERS = frozenset({"__class__", "__getattribute__", "__torch_function__", "__torch_dispatch__",
                              "__instancecheck__", "__subclasscheck__", "__init_subclass__", "__set_name__"})
# Private attributes of nn.Module: writing or reading them hides modules from the grader's view.
MODULE_PRIVATE = frozenset({
    "_modules", "_parameters", "_buffers", "_non_persistent_buffers_set", "_forward_hooks",
    "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks",
    "_load_state_dict_pre_hooks", "_version", "_apply", "_call_impl", "_get_name", "_named_members",
    "_C", "_dynamo", "_forward_hooks_with_kwargs", "_is_full_backward_hook"})
# namedtuple's own methods and attributes (_asdict, _replace, _make, _fields, ...), public though they start
# with an underscore, so that no field name can clash with them: taken from a namedtuple class itself
NAMEDTUPLE_API = frozenset(name for name in dir(collections.namedtuple("Row", "field"))
                           if name.startswith("_") and not name.startswith("__"))
TRANSFORMER = re.compile(r"^(Transformer(Encoder|Decoder)?(Layer)?|transformer)$")
ATTRIBUTE_FUNCS = ("getattr", "setattr", "delattr", "hasattr")
MAX_LITERAL_NUMBERS = 24     # more numbers than this in one literal container is a lookup table
# nn.Transformer.generate_square_subsequent_mask builds a causal mask: a static helper, not a layer
MASK_HELPER = ".generate_square_subsequent_mask"


@dataclass(frozen=True)
class Violation:
    cell: str
    line: int
    rule: str
    severity: str
    message: str
    quote: str     # the offending source line, stripped

    def __str__(self) -> str:
        return f"{self.cell} line {self.line}: [{self.rule}] {self.message} | {self.quote}"


@dataclass(frozen=True)
class Fused:
    """fused-add-norm's extra rules: the wrapper only checks, allocates and launches; kernels are Triton."""
    wrapper: str = "fused_add_layernorm"


@dataclass(frozen=True)
class Policy:
    allowed_imports: frozenset[str]          # module names, exact ("torch.nn.functional")
    no_transformer_classes: bool = False     # assignment 1: build the block from parts
    fused: Fused | None = None
    extra_forbidden_paths: tuple[str, ...] = field(default=())


def for_assignment(rules: Rules) -> Policy:
    """The policy course.toml's [assignments.X.policy] table describes."""
    return Policy(frozenset(rules.allowed_imports), rules.no_transformer_classes,
                  Fused(rules.kernel_wrapper) if rules.kernel_wrapper else None, tuple(rules.forbidden_modules))


# ---------------------------------------------------------------------------- the whole notebook

def check_cells(cells: list[tuple[str, str, bool]], policy: Policy) -> list[Violation]:
    """Every violation in the student cells, in cell and line order."""
    ctx = _Notebook(cells)
    out: list[Violation] = []
    for label, source, student in cells:
        if student and label in ctx.trees:
            try:
                out += _General(label, source, ctx, policy).run(ctx.trees[label])
            except RecursionError:
                out.append(_too_deep(label, source))
    if policy.fused:
        try:
            out += _check_fused(ctx, policy.fused)
        except RecursionError:
            label = next(label for label, _, student in cells if student)
            out.append(_too_deep(label, ctx.sources[label]))
    # the message breaks ties: a set's order changes from one process to the next (hash randomisation)
    return sorted(set(out), key=lambda v: (ctx.order[v.cell], v.line, v.rule, v.message))


def _too_deep(label: str, source: str) -> Violation:
    """Nesting deeper than the checks can walk: the policy cannot vouch for the cell."""
    return Violation(label, 1, "too-deep", WITHHOLD, "the cell nests expressions too deeply for the policy to read "
                     "it", quote(source, 1))


def check(source: str, policy: Policy, label: str = "cell", trusted: list[tuple[str, str]] = ()) -> list[Violation]:
    """Violations of one student cell, with trusted cells (setup) read for their imports."""
    return check_cells([*((lbl, src, False) for lbl, src in trusted), (label, source, True)], policy)


class _Notebook:
    """What the cells define: import aliases, module-level functions, Triton kernels, constants."""

    def __init__(self, cells):
        self.sources, self.trees, self.student, self.order = {}, {}, {}, {}
        self.aliases: dict[str, str] = {}         # local name -> dotted module path ("F" -> torch.nn.functional)
        self.functions: dict[str, tuple[str, ast.FunctionDef]] = {}   # student functions, by name
        self.kernels: dict[str, tuple[str, ast.FunctionDef]] = {}     # student @triton.jit functions
        self.constants: set[str] = set()          # module-level names bound to plain values
        self.containers: set[str] = set()         # student result types: a NamedTuple of fields, a namedtuple()
        self.classes: dict[str, tuple[str, ast.ClassDef]] = {}   # student classes of plain methods, by name
        self.instances: dict[str, str] = {}       # module-level names bound once to C(...), C such a class
        for i, (label, source, student) in enumerate(cells):
            self.order[label], self.sources[label], self.student[label] = i, source, student
            try:
                tree = parse(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue          # a cell that does not parse never runs (the child's compile fails alike)
            self.trees[label] = tree
            for node in tree.body:
                self._top_level(label, node, student)
        # a class whose attributes some code sets (Norm.forward = f, setattr(Norm, ...)) may run other
        # code than its defs: its methods are not followed
        for label, tree in self.trees.items():
            for node in ast.walk(tree) if self.student[label] else ():
                changed = node.value if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) \
                    else node.args[0] if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("setattr", "delattr") and node.args else None
                if isinstance(changed, ast.Name):
                    self.classes.pop(changed.id, None)
        self._objects()
        # every name the student's cells bind at module level (a builtin such as int rebound among them)
        self.bound = {name for label, tree in self.trees.items() if self.student[label]
                      for _, name in _bindings(tree.body)}
        # a constant is plain data by every binding: `C = 0` then `C = torch` makes C the module
        self.constants -= {name for label, tree in self.trees.items() if self.student[label]
                           for node, name in _bindings(tree.body)
                           if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_literal(node.value, self))}
        # names bound to data by every binding: plain data, and what an import names read as a value
        # (_SUPPORTED = (torch.float16, torch.float32)); a function read so can only be called by a name
        self.data = {name for label, tree in self.trees.items() if self.student[label]
                     for _, name in _bindings(tree.body)}
        self.data -= {name for label, tree in self.trees.items() if self.student[label]
                      for node, name in _bindings(tree.body)
                      if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_data(node.value, self))}
        # names that hold one number, string, bool or None: bound so by every binding in any cell, never named in
        # a `global` (eps=DEFAULT_EPS as a parameter's default holds no tensor)
        self.scalars = {name for label, tree in self.trees.items() for _, name in _bindings(tree.body)}
        self.scalars -= {name for label, tree in self.trees.items() for node, name in _bindings(tree.body)
                         if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and _scalar(node.value))}
        self.scalars -= {name for tree in self.trees.values() for node in ast.walk(tree)
                         if isinstance(node, ast.Global) for name in node.names}
        # module-level lists, dicts and sets: a function may store a tensor there, so what they hold may be one
        self.mutables = {name for label, tree in self.trees.items() if self.student[label]
                         for node, name in _bindings(tree.body) if isinstance(node, (ast.Assign, ast.AnnAssign)) and
                         isinstance(node.value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp))}
        # the private names the notebook gives its own objects, in any of its cells: a method of a base class
        # in the cell above, or a helper class's constant, is read in another cell as Run All runs them
        self.own_private = {name for label, tree in self.trees.items() if self.student[label]
                            for name in _private_names(tree)}

    def _top_level(self, label, node, student):
        if isinstance(node, ast.Import):
            for a in node.names:
                self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.FunctionDef) and student:
            if any(_is_jit(d, self) for d in node.decorator_list):
                self.kernels[node.name] = (label, node)
            else:
                self.functions[node.name] = (label, node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_literal(node.value, self):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            self.constants |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif student and _is_container(node, self):
            self.containers.add(node.name if isinstance(node, ast.ClassDef) else node.targets[0].id)
        elif student and isinstance(node, ast.ClassDef) and _plain_class(node, self):
            self.classes[node.name] = (label, node)

    def _objects(self):
        """The module-level objects of the notebook's classes a wrapper may call: a name bound once, by
        NAME = C(...), never named in a `global`, and no attribute set on it from outside (NAME.forward = f)
        that could hide a def."""
        bindings: dict[str, list] = {}
        for label, tree in self.trees.items():
            for node, name in _bindings(tree.body) if self.student[label] else ():
                bindings.setdefault(name, []).append(node)
        for name, nodes in bindings.items():
            value = getattr(nodes[0], "value", None)
            if len(nodes) == 1 and isinstance(nodes[0], ast.Assign) and len(nodes[0].targets) == 1 and \
                    isinstance(nodes[0].targets[0], ast.Name) and isinstance(value, ast.Call) and \
                    isinstance(value.func, ast.Name) and value.func.id in self.classes:
                self.instances[name] = value.func.id
        for label, tree in self.trees.items():
            for node in ast.walk(tree) if self.student[label] else ():
                if isinstance(node, ast.Global):
                    for name in node.names:
                        self.instances.pop(name, None)
                elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and \
                        isinstance(node.value, ast.Name) and node.value.id in self.instances:
                    cls = self.instances[node.value.id]
                    if node.attr.startswith("__") or node.attr in {"forward", "__call__", *(
                            s.name for s in self.classes[cls][1].body if isinstance(s, ast.FunctionDef))}:
                        self.instances.pop(node.value.id)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        node.func.id in ("setattr", "delattr") and node.args and isinstance(node.args[0], ast.Name):
                    self.instances.pop(node.args[0].id, None)

    def method(self, cls: str, name: str) -> ast.FunctionDef | None:
        """The def that `name` finds on the notebook class cls, its own or a notebook base's, or None."""
        label, node = self.classes[cls]
        own = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == name), None)
        if own is not None:
            return own
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id != cls:
                found = self.method(base.id, name)
                if found is not None:
                    return found
        return None

    def cell_of(self, method: ast.FunctionDef) -> str:
        """The label of the cell whose class defines this method."""
        return next(label for label, node in self.classes.values() if method in node.body)

    def is_function(self, cls: str) -> bool:
        """Whether cls subclasses torch.autograd.Function, whose apply runs setup_context and forward."""
        return any(self.resolve(b) == "torch.autograd.Function" for b in self.classes[cls][1].bases)

    def is_module(self, cls: str) -> bool:
        """Whether cls subclasses torch.nn.Module, whose __call__ runs forward."""
        return any(self.resolve(b) == "torch.nn.Module" or (isinstance(b, ast.Name) and b.id in self.classes and
                                                            b.id != cls and self.is_module(b.id))
                   for b in self.classes[cls][1].bases)

    def resolve(self, node) -> str | None:
        """The dotted path of Name / Attribute chains rooted at an import ("F.gelu" -> torch.nn.functional.gelu)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return ".".join([self.aliases[node.id], *reversed(parts)])
        return None


NAMED_TUPLES = {"typing.NamedTuple", "collections.namedtuple"}


def _private_names(tree) -> set[str]:
    """The private names a cell gives objects of its own: attributes it sets on self or cls, the functions,
    methods and classes it defines, and the names a class body binds (class constants, dataclass fields),
    never one of nn.Module's own (MODULE_PRIVATE)."""
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            own.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
                own |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {name for name in own if name.startswith("_") and not name.startswith("__") and name not in MODULE_PRIVATE}


def _is_container(node, ctx: _Notebook) -> bool:
    """A result type that computes nothing when built: `class R(NamedTuple)` with only annotated fields
    (typing refuses a __new__ or __init__ there), or `R = namedtuple("R", ...)`."""
    if isinstance(node, ast.ClassDef):
        return [ctx.resolve(b) for b in node.bases] == ["typing.NamedTuple"] and not node.keywords and \
            all(isinstance(s, ast.AnnAssign) and s.value is None and isinstance(s.target, ast.Name) or
                isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in node.body)
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
        isinstance(node.value, ast.Call) and ctx.resolve(node.value.func) in NAMED_TUPLES


def _plain_class(node: ast.ClassDef, ctx: _Notebook) -> bool:
    """A class whose methods the wrapper's check can follow: no decorator or keyword (metaclass), one base at
    most, a library class or the notebook's, and a body of a docstring, defs (static and class methods among
    them) and plain data bound to names that are not dunders, with no method setting an attribute that
    would hide a def (self.forward = f), so that what a call or an attribute of it runs is one of these
    defs or the library base's own."""
    if node.decorator_list or node.keywords or len(node.bases) > 1 or not all(
            ctx.resolve(b) is not None or (isinstance(b, ast.Name) and b.id in {*ctx.classes, "object"})
            for b in node.bases):
        return False
    methods = {s.name for s in node.body if isinstance(s, ast.FunctionDef)} | {"forward", "__call__"}
    for n in ast.walk(node):     # self.forward = f in a method: the instance's attribute hides the def
        if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) and \
                (n.attr in methods or n.attr.startswith("__")):
            return False
    for s in node.body:
        if isinstance(s, ast.FunctionDef):
            if s.name == "__new__" or not all(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
                                              for d in s.decorator_list):
                return False
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if not all(isinstance(t, ast.Name) and not t.id.startswith("__") for t in targets) or \
                    (s.value is not None and not _is_literal(s.value, ctx)):
                return False
        elif not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)):
            return False
    return True


def _is_data(node, ctx: _Notebook) -> bool:
    """Plain data, what an import names (torch.float16), and tuples, lists, sets and dicts of these."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_data(e, ctx) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_data(k, ctx) and _is_data(v, ctx) for k, v in zip(node.keys, node.values))
    return _is_literal(node, ctx) or (isinstance(node, (ast.Name, ast.Attribute)) and ctx.resolve(node) is not None)


def _scalar(node) -> bool:
    """One number, string, bool or None, signed or not."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (int, float, str)))


def _constant_default(node, ctx: _Notebook) -> bool:
    """A parameter's default that holds no tensor: a constant, or a module-level name that only ever holds one
    (eps=DEFAULT_EPS)."""
    return node is not None and (_scalar(node) or isinstance(node, ast.Constant) or (
        isinstance(node, ast.Name) and node.id in ctx.scalars))


def _is_jit(decorator, ctx: _Notebook) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ctx.resolve(target) in ("triton.jit", "triton.autotune", "triton.heuristics")


def _is_literal(node, ctx: _Notebook, names: frozenset = frozenset()) -> bool:
    """Plain data: constants, containers of them, triton.Config(...) / tl.constexpr(...) of them, and
    comprehensions over plain data ([triton.Config({}, num_warps=w) for w in (2, 4, 8)])."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id in names):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand, ctx, names)
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left, ctx, names) and _is_literal(node.right, ctx, names)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_literal(e, ctx, names) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k, ctx, names) and _is_literal(v, ctx, names)
                   for k, v in zip(node.keys, node.values))
    if isinstance(node, ast.Call) and ctx.resolve(node.func) in ("triton.Config", "triton.language.constexpr"):
        return all(_is_literal(a, ctx, names) for a in node.args) and \
            all(_is_literal(k.value, ctx, names) for k in node.keywords)
    if isinstance(node, ast.ListComp) and all(isinstance(g.target, ast.Name) and not g.ifs for g in node.generators):
        bound = names | {g.target.id for g in node.generators}
        return all(_is_literal(g.iter, ctx, names) for g in node.generators) and _is_literal(node.elt, ctx, bound)
    return False


def quote(source: str, lineno: int) -> str:
    """The source's line `lineno` as Python numbers it, stripped, one line of text wherever it is shown: a
    character that is not printable (U+2028 or a form feed in a comment, where Python's line goes on) as its
    Python escape, so that no table, grade cell or feedback page breaks the quote into lines of its own."""
    lines = python_lines(source)
    line = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
    return "".join(c if c.isprintable() or c == "\t" else ascii(c)[1:-1] for c in line)


def _arguments(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []), *args.kwonlyargs,
            *([args.kwarg] if args.kwarg else [])]


def _locals(fn) -> set[str]:
    """The names local to a function or lambda: its parameters and every name its own body binds
    (not a nested function's), less those it declares global or nonlocal."""
    names, outer, todo = {a.arg for a in _arguments(fn.args)}, set(), list(
        fn.body if isinstance(fn.body, list) else [fn.body])
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            outer |= set(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        todo += ast.iter_child_nodes(node)
    return names - outer


def _plain(text) -> bool:
    """A name, or the start of one, that can be neither a dunder nor a private attribute."""
    return isinstance(text, str) and text[:1].isalpha()


# ---------------------------------------------------------------------------- rules for every cell

class _General(ast.NodeVisitor):
    """Imports, names and attributes that reach the process; monkeypatching; Transformer classes."""

    def __init__(self, label: str, source: str, ctx: _Notebook, policy: Policy):
        self.label, self.source, self.ctx, self.policy = label, source, ctx, policy
        self.found: list[Violation] = []
        self.scopes: list[set[str]] = []          # the local names of each enclosing function

    def run(self, tree) -> list[Violation]:
        self._survey(tree)
        self.visit(tree)
        return self.found

    def _survey(self, tree) -> None:
        """What the visit needs to know ahead, in one walk: the names bound only by
        `for NAME in ("ln1", "ln2")` (literal strings, none starting with _). The private names the student
        gives their own objects, which may be read back, are the notebook's (_Notebook.own_private)."""
        loops, loop_targets, stored = set(), set(), []
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                stored.append(node)
            elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) and \
                    isinstance(node.iter, (ast.Tuple, ast.List)) and node.iter.elts and \
                    all(isinstance(e, ast.Constant) and _plain(e.value) for e in node.iter.elts):
                loops.add(node.target.id)
                loop_targets.add(id(node.target))
        self.own_private = self.ctx.own_private
        self.plain_names = loops - {node.id for node in stored if id(node) not in loop_targets}

    def flag(self, node, rule: str, severity: str, message: str) -> None:
        self.found.append(Violation(self.label, node.lineno, rule, severity, message, quote(self.source, node.lineno)))

    # -- imports
    def visit_Import(self, node):
        for a in node.names:
            self._module(node, a.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if node.level:
            self.flag(node, "import", FLAG, "relative imports are not allowed in a notebook cell")
        elif any(a.name == "*" for a in node.names):
            self.flag(node, "import", FLAG, f"'from {node.module} import *' hides which names the cell uses; "
                                            "import the names you need")
        else:
            self._module(node, node.module)
            for a in node.names:
                if a.name in PROCESS_MODULES | PROCESS_ATTRIBUTES or a.name.startswith("_"):
                    # from torch import sys, from torch.serialization import os: a library re-exports it
                    self.flag(node, "process-introspection", WITHHOLD,
                              f"'{a.name}' from {node.module} is the module or internal it re-exports, which "
                              "reaches the grading process; a solution needs none of it")
                self._path(node, f"{node.module}.{a.name}")
        self.generic_visit(node)

    def _module(self, node, name: str):
        root = name.split(".")[0]
        if name in HONEST_MODULES:
            return
        if root in PROCESS_MODULES or name in PROCESS_MODULES:
            self.flag(node, "process-introspection", WITHHOLD,
                      f"module '{name}' reaches the grading process (files, frames, other modules); "
                      "a solution needs none of it")
        elif any(part.startswith("_") for part in name.split(".")):
            self.flag(node, "private-attribute", WITHHOLD,
                      f"module '{name}' is a library's private module; use its public interface")
        elif name not in self.policy.allowed_imports:
            allowed = ", ".join(sorted(self.policy.allowed_imports))
            self.flag(node, "import", FLAG, f"module '{name}' is not among this assignment's imports ({allowed})")
        else:
            self._path(node, name)

    # -- names and attributes
    # -- scopes: a function's parameters and assigned names are its own, whatever builtin they share a
    # name with (def forward(self, input)); Python never falls back to the builtin for them
    def visit_FunctionDef(self, node):
        for d in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(d)
        self._in_scope(node, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(d)
        self._in_scope(node, [node.body])

    def _in_scope(self, node, body):
        self.scopes.append(_locals(node))
        for stmt in body:
            self.visit(stmt)
        for a in _arguments(node.args):
            if a.annotation is not None:
                self.visit(a.annotation)
        if getattr(node, "returns", None) is not None:
            self.visit(node.returns)
        self.scopes.pop()

    def _local(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def visit_Name(self, node):
        if self._local(node.id):
            pass
        elif node.id in FORBIDDEN_NAMES and not getattr(node, "function_locals", False):
            self.flag(node, "dynamic-code", WITHHOLD,
                      f"'{node.id}' runs code, opens files or exposes a namespace: not allowed in a solution")
        elif node.id == "__class__" and isinstance(node.ctx, ast.Load):
            self.flag(node, "dunder", WITHHOLD, "'__class__' exposes the class object: not allowed")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        attr = node.attr
        if attr == MASK_HELPER[1:]:
            node.value.mask_helper = True
        library = self.ctx.resolve(node.value)
        if isinstance(node.ctx, (ast.Store, ast.Del)) and library is not None:
            # torch.allclose = ..., torch.Tensor.__eq__ = ...: it changes the library in this process only;
            # the grader's code in the child is bound to the originals, so it is a flag, not a way in
            self.flag(node, "monkeypatch", FLAG, f"assigning to {library}.{attr} changes a library for everyone "
                                                 "in the process; define your own function instead")
            self.generic_visit(node)
            return
        if attr in ("__name__", "__qualname__") and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "__class__" and isinstance(node.ctx, ast.Load):
            node.value.reads_name = True       # self.__class__.__name__: reading a name, not the class
        if attr.startswith("__") and attr.endswith("__") and attr not in SAFE_DUNDERS and \
                not getattr(node, "reads_name", False):
            self.flag(node, "dunder", WITHHOLD, f"'.{attr}' reaches an object's internals (its dict, class, code "
                                                "or globals): not allowed in a solution")
        elif attr in PROCESS_ATTRIBUTES:
            self.flag(node, "process-introspection", WITHHOLD,
                      f"'.{attr}' leads from this object to the grading process; a solution needs none of it")
        elif attr.startswith("_") and not attr.startswith("__") and not (
                library is None and (self._own_private(node) or attr in NAMEDTUPLE_API)):
            # a private name read off an import's path (torch._foo) is the library's, whatever the notebook defines
            self.flag(node, "private-attribute", WITHHOLD,
                      f"'.{attr}' is a private attribute of a library object; use its public interface")
        path = self.ctx.resolve(node)
        if path is not None:
            self._path(node, path)
        self._transformer(node, attr)
        self.generic_visit(node)

    def _own_private(self, node) -> bool:
        return node.attr in self.own_private

    def _path(self, node, path: str):
        forbidden = PROCESS_PATHS + self.policy.extra_forbidden_paths
        hit = next((p for p in forbidden if path == p or path.startswith(p + ".")), None)
        if path in UNCOMPILED and isinstance(node, ast.Attribute):
            node.value.uncompiled = True      # the `torch.jit` of `torch.jit.script` is no use of torch.jit
        if hit is not None and path not in UNCOMPILED and not getattr(node, "uncompiled", False):
            own = hit in self.policy.extra_forbidden_paths
            rule, severity = ("forbidden-module", FLAG) if own else ("process-introspection", WITHHOLD)
            why = (f"this assignment may not use {hit} (course.toml)" if own else
                   "it reads or writes files, or reaches the runtime, which a solution never needs")
            self.flag(node, rule, severity, f"{path}: {why}")
        if self.policy.no_transformer_classes and path.startswith("torch.") and \
                any(TRANSFORMER.match(p) for p in path.split(".")[1:]) and not getattr(node, "mask_helper", False) \
                and not path.endswith(MASK_HELPER):
            self.flag(node, "transformer-class", FLAG, f"{path}: build TransformerBlock from its parts "
                                                       "(attn, ln1, ln2, ffn), not from torch's Transformer classes")

    def _transformer(self, node, attr: str):
        """Transformer classes reached without an import alias (some_module.TransformerEncoderLayer)."""
        if self.policy.no_transformer_classes and self.ctx.resolve(node) is None and TRANSFORMER.match(attr) \
                and attr != "transformer" and not isinstance(node.ctx, ast.Store):
            self.flag(node, "transformer-class", FLAG, f"'.{attr}': build TransformerBlock from its parts")

    # -- calls: getattr family, object.__setattr__
    def visit_Call(self, node):
        func = node.func.id if isinstance(node.func, ast.Name) and not self._local(node.func.id) else None
        if func == "locals" and self.scopes and not node.args and not node.keywords:
            # locals() called in a function (a debug print) is that call's own names, never the module's
            # namespace and its builtins, which module-level locals() is; the name itself is still flagged
            node.func.function_locals = True
        if func in ATTRIBUTE_FUNCS:
            name = node.args[1] if len(node.args) > 1 else None
            if any(isinstance(a, ast.Starred) for a in node.args) or (
                    not (isinstance(name, ast.Constant) and isinstance(name.value, str))
                    and func != "hasattr" and not self._own_computed(node.args[0], name)):
                self.flag(node, "computed-attribute", WITHHOLD,
                          f"{func}() with a computed name can reach anything; write the attribute out, or "
                          f"build the name on self from a plain prefix: getattr(self, f\"ln{{i}}\")")
            elif isinstance(name, ast.Constant):
                self._literal_attribute(node, func, name.value)
        self.generic_visit(node)

    def _own_computed(self, target, name) -> bool:
        """getattr(self, f"ln{i}"), setattr(self, "block" + str(i), ...), or a name a for loop takes from
        literal strings: an attribute of the student's own object that can never be a dunder or private."""
        if not (isinstance(target, ast.Name) and target.id in ("self", "cls")) or name is None:
            return False
        if isinstance(name, ast.Name):
            return name.id in self.plain_names
        head = name.values[0] if isinstance(name, ast.JoinedStr) and name.values else \
            name.left if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add) else None
        return isinstance(head, ast.Constant) and _plain(head.value)

    def _literal_attribute(self, node, func: str, attr: str):
        fake = ast.Attribute(value=node.args[0], attr=attr,
                             ctx=ast.Store() if func in ("setattr", "delattr") else ast.Load())
        ast.copy_location(fake, node)
        self.visit_Attribute(fake)

    # -- literal tables: answers collected from feedback
    def _table(self, node):
        numbers = sum(isinstance(n, ast.Constant) and type(n.value) in (int, float) for n in ast.walk(node))
        if numbers > MAX_LITERAL_NUMBERS:
            self.flag(node, "lookup-table", FLAG, f"a literal table of {numbers} numbers: answers are computed, "
                                                  "not looked up")
            return True
        return False

    def visit_Dict(self, node):
        if not self._table(node):
            self.generic_visit(node)

    def visit_List(self, node):
        if not self._table(node):
            self.generic_visit(node)

    visit_Tuple = visit_Set = visit_List

    # -- class bodies: type lies and dispatch overrides
    def visit_ClassDef(self, node):
        for stmt in node.body:
            names = []
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [stmt.name]
            elif isinstance(stmt, ast.Assign):
                names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            for name in names:
                if name in OVERRIDE_DUNDERS or name in MODULE_PRIVATE or name == "__dict__":
                    self.flag(stmt, "override", FLAG, f"defining {name} changes how torch or isinstance see "
                                                      "your objects; a solution returns plain tensors and modules")
        self.generic_visit(node)


# ---------------------------------------------------------------------------- fused-add-norm

# allocations that carry no value of the caller's: empty, zeros and ones (a weight of ones for weight=None), never
# full or tensor, whose values the wrapper would give
WRAPPER_ALLOC = {"torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
                 "torch.ones", "torch.ones_like"}
WRAPPER_SCALAR_FUNCS = {
    "len", "min", "max", "int", "float", "bool", "abs", "round", "tuple", "list", "range", "isinstance", "str",
    "repr", "print", "all", "any", "zip", "enumerate", "dict", "divmod", "type", "ValueError", "TypeError",
    "RuntimeError", "NotImplementedError", "AssertionError", "torch.Size", "torch.is_tensor",
    "torch.cuda.is_available", "torch.cuda.device", "torch.no_grad", "torch.finfo", "torch.iinfo",
    "triton.next_power_of_2", "triton.cdiv",
    # the device a launch runs on, and how many programs it holds (a persistent kernel's grid), and the
    # context managers that choose it or turn autograd off around the launch
    "torch.cuda.current_device", "torch.cuda.device_count", "torch.cuda.get_device_capability",
    "torch.cuda.get_device_name", "torch.cuda.get_device_properties", "torch.cuda.device_of", "torch.inference_mode"}
TENSOR_VIEW_METHODS = {"reshape", "view", "view_as", "reshape_as", "contiguous", "flatten", "unflatten", "squeeze",
                       "unsqueeze", "expand", "expand_as", "transpose", "permute", "movedim", "t", "to", "float",
                       "half", "bfloat16", "double", "clone", "detach", "cpu", "cuda", "type_as", "new_empty",
                       "new_zeros", "new_ones"}
SCALAR_METHODS = {"size", "dim", "numel", "stride", "element_size", "nelement", "ndimension", "is_contiguous",
                  "data_ptr", "get_device", "storage_offset", "is_floating_point"}
SCALAR_ATTRIBUTES = {"shape", "ndim", "dtype", "device", "is_cuda", "layout", "requires_grad", "itemsize"}
SCALAR_ANNOTATIONS = {"int", "float", "bool", "str"}
# builtins that pack tensors without reading their values (argument checks over dict(x=x, ...) or
# zip(names, tensors)); what they return holds the tensors, so computing on it is still seen
PACKING = {"dict", "zip", "enumerate", "tuple", "list"}
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
    (torch.cuda), which share a method's name and are no function of it."""
    import torch
    return frozenset(f"torch.{m}" for m in SCALAR_METHODS | TENSOR_VIEW_METHODS
                     if callable(getattr(torch, m, None)) and not isinstance(getattr(torch, m), (type, torch.dtype)))


# those a list, dict or set holding tensors answers with what it holds (a tensor has none of these methods)
CONTAINER_METHODS = {"get", "append", "extend", "pop", "setdefault", "update", "insert", "copy", "clear"}
# builtins that may take a tensor without reading its values
PASSIVE_BUILTINS = {"len", "isinstance", "type", "print", "str", "repr", "ValueError", "TypeError", "RuntimeError",
                    "NotImplementedError", "AssertionError", "torch.is_tensor", "torch.cuda.device_of", *PACKING}

KERNEL_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics"}
KERNEL_TYPES = {"int", "float", "bool"}          # the Python types Triton reads as i32, fp32 and u1
KERNEL_BUILTINS = {"range", "min", "max", "abs", "int", "float", "len", "True", "False", "None"}
KERNEL_METHODS = {"to", "dtype", "element_ty", "shape", "reshape", "view", "trans", "permute", "broadcast_to",
                  "expand_dims", "sum", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "exp", "log",
                  "sqrt", "abs", "ravel", "split", "T", "value", "primitive_bitwidth", "is_floating",
                  "is_fp16", "is_bf16", "is_fp32"}
TL_MODULES = {"math", "extra"}                   # tl.math.X, tl.extra.cuda.libdevice.X
TL_REFUSED = {"core", "semantic", "standard", "target_info", "inline_asm_elementwise", "random"}


def _check_fused(ctx: _Notebook, rules: Fused) -> list[Violation]:
    out = []
    for name, (label, fn) in ctx.kernels.items():
        if not is_stub(fn):
            out += _Kernel(label, ctx.sources[label], ctx, fn).run()
    if rules.wrapper in ctx.functions and not is_stub(ctx.functions[rules.wrapper][1]):
        label, fn = ctx.functions[rules.wrapper]
        out += _Wrapper(ctx, rules.wrapper).run(label, fn)
    return out + _rebound(ctx, {rules.wrapper, *ctx.kernels, *ctx.functions, *ctx.classes})


def _rebound(ctx: _Notebook, names: set[str]) -> list[Violation]:
    """The checks above read each function's last top-level def; they hold only while the name still
    holds that def when the cells have run. Flags every binding of these names after it (an assignment,
    an import, a loop or with target, a def nested in an if, a del), any binding of the wrapper where no
    def of it is checked, a `global` for them in any function, and a decorator on the wrapper or a
    helper (it replaces the def by what it returns) unless it is a library's given plain data, and then
    any use of the name but a call."""
    out = []
    for label, tree in ctx.trees.items():
        if not ctx.student[label]:
            continue
        for node, bound in _bindings(tree.body):
            final = ctx.functions.get(bound) or ctx.kernels.get(bound) or ctx.classes.get(bound)
            if bound not in names or (final is not None and final[1] is node):
                continue
            if final is None or (ctx.order[final[0]], final[1].lineno) < (ctx.order[label], node.lineno):
                out.append(Violation(label, node.lineno, "rebound", FLAG, f"'{bound}' is bound again here, so the "
                                     "function the grader checked is not the one the tests call: define it once, "
                                     "with def, and leave the name alone", quote(ctx.sources[label], node.lineno)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Global) and names & set(node.names):
                out.append(Violation(label, node.lineno, "rebound", FLAG, f"'global {', '.join(names & set(node.names))}'"
                                     " lets a function rebind a name the grader checked", quote(ctx.sources[label], node.lineno)))
    decorated = set()
    for name, (label, fn) in ctx.functions.items():
        if name not in names or not fn.decorator_list:
            continue
        own = next((d for d in fn.decorator_list if not _library_decorator(d, ctx)), None)
        if own is not None:
            out.append(Violation(label, own.lineno, "rebound", FLAG, f"a decorator on {name} that is not a library's "
                                 "given plain data: the name then holds what it returns, not the def the grader "
                                 "checked", quote(ctx.sources[label], own.lineno)))
        else:
            decorated.add(name)
    return out + _not_called(ctx, decorated)


def _library_decorator(d, ctx: _Notebook) -> bool:
    """A decorator imported from a library and given plain data only (functools.lru_cache(maxsize=None),
    torch.no_grad()): nothing of the notebook's reaches it but the def, so what it returns can only run
    that def, with the library's own work around it."""
    target = d.func if isinstance(d, ast.Call) else d
    return ctx.resolve(target) is not None and (not isinstance(d, ast.Call) or all(
        _is_literal(a, ctx) for a in [*d.args, *(k.value for k in d.keywords)]))


def _not_called(ctx: _Notebook, names: set[str]) -> list[Violation]:
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


def _bindings(stmts) -> list[tuple[ast.AST, str]]:
    """(statement, name) for each name bound at module level by these statements, in order; the bodies of
    if, for, while, try and with run at module level too, those of functions and classes do not."""
    out = []
    for node in stmts:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node, node.name))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out += [(node, (a.asname or a.name).split(".")[0]) for a in node.names]
            continue
        targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else
                   [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)) else
                   [i.optional_vars for i in node.items if i.optional_vars is not None]
                   if isinstance(node, (ast.With, ast.AsyncWith)) else [])
        for target in targets:
            out += [(node, n.id) for n in ast.walk(target) if isinstance(n, ast.Name)]
        for expr in (c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)):   # x := ... anywhere
            out += [(node, n.target.id) for n in ast.walk(expr) if isinstance(n, ast.NamedExpr)]
        for handler in getattr(node, "handlers", []):
            out += [(handler, handler.name)] if handler.name else []
            out += _bindings(handler.body)
        for body in ("body", "orelse", "finalbody"):
            out += _bindings(getattr(node, body, []))
    return out


def is_stub(fn: ast.FunctionDef) -> bool:
    """The release's stub, still unsolved: a docstring, then raise NotImplementedError()."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


class _Wrapper:
    """The wrapper (and the notebook functions it calls) may check shapes, allocate, reshape and
    launch one notebook kernel once; any computing on the data is the kernel's."""

    def __init__(self, ctx: _Notebook, name: str):
        self.ctx, self.name = ctx, name
        self.found: list[Violation] = []
        self.launches: list[tuple[ast.AST, tuple]] = []   # (node, branch path)
        self.seen: set[tuple] = set()   # (class, function, the parameters holding tensors) walked
        self.fields: set[str] = set()   # attributes of the notebook's objects that some walked code sets to a tensor

    def flag(self, label, node, rule, message):
        self.found.append(Violation(label, node.lineno, rule, FLAG, message, quote(self.ctx.sources[label], node.lineno)))

    def run(self, label: str, fn: ast.FunctionDef) -> list[Violation]:
        while True:       # again while the walk finds more attributes holding tensors (self.h = ...)
            fields = set(self.fields)
            self.found, self.launches, self.seen = [], [], set()
            self._constructed()
            self._function(label, fn)
            if self.fields == fields:
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
        for those alone (it runs when the cell does, not in the wrapper), any argument taken as a tensor."""
        for cls in sorted(set(self.ctx.instances.values())):
            init = self.ctx.method(cls, "__init__")
            if init is not None:
                seen = set(self.seen)
                self._function(self.ctx.cell_of(init), init, {p.arg for p, _ in _parameters(init)[1:]}, cls)
                self.found, self.launches, self.seen = [], [], seen

    def _function(self, label: str, fn, tensors: set[str] | None = None, cls: str | None = None):
        """Walk fn's body. The wrapper's parameters hold tensors but for a scalar annotation or a constant
        default; a helper's (tensors given) are those its call passes tensors to, as if its body stood at
        the call: it is walked once for each set of them. A method of the notebook's class cls (called on
        an instance) has its first parameter, self, bound to that instance."""
        if tensors is None:
            tensors = set()
            for arg, default in _parameters(fn):
                scalar_type = isinstance(arg.annotation, ast.Name) and arg.annotation.id in SCALAR_ANNOTATIONS
                if not (scalar_type or _constant_default(default, self.ctx)):
                    tensors.add(arg.arg)
        key = (cls, fn.name, frozenset(tensors))
        if key in self.seen:
            return
        self.seen.add(key)
        params = _parameters(fn)
        instances = {params[0][0].arg: cls} if cls is not None and params else {}
        body = _Body(self, label, set(tensors), instances, _own_names(fn))
        body.launchers = _launchers(fn, self.ctx)
        body.walk(fn.body, ())


def _super_init(f) -> bool:
    """super().__init__: a plain class's base is a library class or the notebook's (_plain_class)."""
    return isinstance(f, ast.Attribute) and f.attr == "__init__" and isinstance(f.value, ast.Call) and \
        isinstance(f.value.func, ast.Name) and f.value.func.id == "super" and not f.value.args and not f.value.keywords


def _own_names(fn) -> set[str]:
    """The names a function binds itself (parameters, assignments, loop and comprehension targets, a lambda's
    parameters): Python never reads these from the module."""
    names = {a.arg for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.Lambda))
             for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs + [n.args.vararg, n.args.kwarg] if a}
    names |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    names |= {n.name for n in ast.walk(fn) if isinstance(n, ast.ExceptHandler) and n.name}
    names |= {n.name for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
              and n is not fn}
    return names


def _launchers(fn, ctx: _Notebook) -> dict[str, ast.Subscript]:
    """The names fn binds once, to a notebook kernel's kernel[grid], and in no other way (no parameter, loop
    target, second assignment or del): calling one is that launch (launch = kernel[grid]; launch(...))."""
    stores: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    others = {a.arg for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
              for a in _arguments(n.args)} | {n.name for n in ast.walk(fn) if isinstance(
                  n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)) and n.name}
    return {node.targets[0].id: node.value for node in ast.walk(fn)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Subscript) and isinstance(node.value.value, ast.Name)
            and node.value.value.id in ctx.kernels and stores[node.targets[0].id] == 1
            and node.targets[0].id not in others}


def _lambda_like(node) -> bool:
    """A nested def that a lambda could be: no decorator, and a body of one return of a value after an
    optional docstring (def grid(meta): return (n_rows,) is grid = lambda meta: (n_rows,))."""
    if not isinstance(node, ast.FunctionDef):
        return False
    body = node.body[1:] if node.body and isinstance(node.body[0], ast.Expr) and \
        isinstance(node.body[0].value, ast.Constant) else node.body
    return not node.decorator_list and len(body) == 1 and isinstance(body[0], ast.Return) and \
        body[0].value is not None


def _parameters(fn) -> list[tuple[ast.arg, ast.expr | None]]:
    """(parameter, its default or None) for each named parameter of fn."""
    a = fn.args
    positional = a.posonlyargs + a.args
    return list(zip(positional, [None] * (len(positional) - len(a.defaults)) + list(a.defaults))) + \
        list(zip(a.kwonlyargs, a.kw_defaults))


def _exclusive(a: tuple, b: tuple) -> bool:
    """Two launches on different branches of the same if statement never both run."""
    return any(x[0] == y[0] and x[1] != y[1] for x in a for y in b)


class _Body:
    """Statements of a wrapper function, with the names known to hold tensors."""

    def __init__(self, wrapper: _Wrapper, label: str, tensors: set[str], instances: dict[str, str] | None = None,
                 local: set[str] = frozenset()):
        self.w, self.label, self.tensors, self.loops = wrapper, label, tensors, 0
        self.instances = dict(instances or {})   # name -> the notebook class it holds an instance of
        self.own = local     # the names the function binds: they hide module-level ones
        self.tensors |= wrapper.ctx.mutables - local     # items stored there by any function may be tensors
        self.launchers: dict[str, ast.Subscript] = {}      # launch = kernel[grid]: _launchers

    def instance_of(self, node) -> str | None:
        """The notebook class of which node is an instance: a name bound to one, or C(...) itself."""
        if isinstance(node, ast.Name):
            return self.instances.get(node.id) or (
                self.w.ctx.instances.get(node.id) if node.id not in self.own else None)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.w.ctx.classes:
            return node.func.id
        return None

    def method(self, f) -> tuple[str | None, ast.FunctionDef | None, int] | None:
        """What calling f runs of the notebook's classes: (class of the instance it is bound to, or None; the
        def; how many of its parameters the call fills without an argument, 1 for self), with def None for a
        class built without an __init__ of its own; None where f is no class, instance or method of one."""
        ctx = self.w.ctx
        if isinstance(f, ast.Name) and f.id in ctx.classes:                  # C(...): its __init__
            return f.id, ctx.method(f.id, "__init__"), 1
        cls = self.instance_of(f)
        if cls is not None:                                                  # obj(...): __call__, or forward
            fn = ctx.method(cls, "__call__") or (ctx.method(cls, "forward") if ctx.is_module(cls) else None)
            return (cls, fn, 1) if fn is not None else None
        if not isinstance(f, ast.Attribute):
            return None
        cls = self.instance_of(f.value)
        on_class = isinstance(f.value, ast.Name) and f.value.id in ctx.classes
        if on_class and f.attr == "apply" and ctx.is_function(f.value.id) and ctx.method(f.value.id, "apply") is None:
            # Function.apply(...) runs forward(ctx, ...), or forward(...) where setup_context takes the ctx
            return None, ctx.method(f.value.id, "forward"), int(ctx.method(f.value.id, "setup_context") is None)
        fn = ctx.method(cls or f.value.id, f.attr) if cls is not None or on_class else None
        if fn is None:
            return None
        kinds = {d.id for d in fn.decorator_list}
        if "staticmethod" in kinds:
            return None, fn, 0
        if "classmethod" in kinds:
            return None, fn, 1
        return (cls, fn, 1) if cls is not None else (None, fn, 0)     # C.method(obj, ...) names self itself

    def walk(self, stmts, path):
        for stmt in stmts:
            self.stmt(stmt, path)

    def branches(self, bodies, path, start: set[str]) -> None:
        """Walk each of these statement lists from the names holding tensors at `start`; after them a name
        holds a tensor where any of them, or none (`start`), left one: `h, y = out` in one branch of an if
        does not undo `h = torch.empty(...)` in the other."""
        held = set(start)
        for body, branch_path in bodies:
            self.tensors = set(start)
            self.walk(body, branch_path)
            held |= self.tensors
        self.tensors = held

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
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self.expr(node.exc, path)
        elif isinstance(node, ast.Assert):
            self.expr(node.test, path)
        elif isinstance(node, ast.With):
            for item in node.items:
                self.expr(item.context_expr, path)
            self.walk(node.body, path)
        elif isinstance(node, ast.Try):
            # a handler may start anywhere in the body: from what the body held at any point
            start = set(self.tensors)
            self.branches([(node.body + node.orelse, path)], path, start)
            self.branches([(h.body, path) for h in node.handlers], path, set(self.tensors))
            self.walk(node.finalbody, path)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            pass
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

    def passed(self, fn, node: ast.Call, bound: int = 0) -> set[str]:
        """The parameters of fn that this call hands a tensor: an argument that may hold one, or a default
        that is not a constant; every parameter when the call unpacks (*args, **kwargs). The first `bound`
        parameters (a method's self) take no argument of the call."""
        a = fn.args
        params = _parameters(fn)[bound:]
        everything = {p.arg for p, _ in params} | {v.arg for v in (a.vararg, a.kwarg) if v is not None}
        if any(isinstance(v, ast.Starred) for v in node.args) or any(k.arg is None for k in node.keywords):
            return everything
        positional = [p.arg for p in a.posonlyargs + a.args][bound:]
        tensors = {p for p, v in zip(positional, node.args) if self.tensorish(v)}
        if a.vararg is not None and any(self.tensorish(v) for v in node.args[len(positional):]):
            tensors.add(a.vararg.arg)
        by_name = {p.arg for p in a.args + a.kwonlyargs}
        for k in node.keywords:
            if self.tensorish(k.value):
                tensors.add(k.arg if k.arg in by_name or a.kwarg is None else a.kwarg.arg)
        given = set(positional[:len(node.args)]) | {k.arg for k in node.keywords}
        return tensors | {p.arg for p, d in params if p.arg not in given and d is not None
                          and not _constant_default(d, self.w.ctx)}

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
        elif isinstance(target, ast.Attribute) and self.instance_of(target.value) is not None:
            if self.tensorish(value) or _has_alloc(value, self.w.ctx):   # self.h = torch.empty_like(x)
                self.w.fields.add(target.attr)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                else [value] * len(target.elts)
            for t, v in zip(target.elts, values):
                self.bind(t, v)

    def bind_items(self, target, iterable):
        """A loop's target takes the items of what it loops over: for name, t in zip(names, (x, fx)) binds
        t to a tensor and name to a string."""
        targets = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        for t, tensor in zip(targets, self.items(iterable, len(targets))):
            for name in (n.id for n in ast.walk(t) if isinstance(n, ast.Name)):
                (self.tensors.add if tensor else self.tensors.discard)(name)

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
            return [False, self.tensorish(node.func.value)]
        if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, (ast.Tuple, ast.List)) and
                                                           len(e.elts) == n for e in node.elts):
            return [any(self.tensorish(e.elts[i]) for e in node.elts) for i in range(n)]
        return [self.holds(node)] * n

    def holds(self, node) -> bool:
        """Whether the items of a sequence may be tensors."""
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.tensorish(e) for e in node.elts)
        return self.tensorish(node)

    def tensorish(self, node) -> bool:
        if isinstance(node, ast.Dict):
            return any(self.tensorish(v) for v in node.values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PACKING and \
                node.func.id not in self.w.ctx.functions:
            return any(self.holds(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in PACKING_METHODS | CONTAINER_METHODS:
            return self.tensorish(node.func.value)
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Attribute):
            if self.instance_of(node.value) is not None:
                return node.attr in self.w.fields
            return node.attr not in SCALAR_ATTRIBUTES and self.tensorish(node.value)
        if isinstance(node, ast.Subscript):
            return self.tensorish(node.value)
        if isinstance(node, ast.Call):
            f = node.func
            path = self.w.ctx.resolve(f)
            if path in function_forms() and path.split(".")[-1] in TENSOR_VIEW_METHODS:     # torch.reshape(x, s)
                return any(self.tensorish(a) for a in [*node.args, *(k.value for k in node.keywords)])
            if path is None and isinstance(f, ast.Attribute) and f.attr in TENSOR_VIEW_METHODS:
                return self.tensorish(f.value)
            return path in WRAPPER_ALLOC
        if isinstance(node, (ast.Tuple, ast.List)):
            return any(self.tensorish(e) for e in node.elts)
        if isinstance(node, ast.IfExp):
            return self.tensorish(node.body) or self.tensorish(node.orelse)
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            return any(self.tensorish(c) for c in ast.iter_child_nodes(node))
        return False

    def expr(self, node, path):
        for c in ast.walk(node):
            if isinstance(c, ast.comprehension):
                self.bind_items(c.target, c.iter)
        in_comprehension = {id(n) for c in ast.walk(node) if isinstance(c, ast.comprehension)
                            for n in ast.walk(c)} | \
            {id(n) for c in ast.walk(node) if isinstance(c, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))
             for n in ast.walk(c)}
        # a module-level object of the notebook's plain class may be called or have an attribute read or set
        # (what that runs is followed, self.method); handed on anywhere else (a kernel's argument) it is opaque
        used = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)} | \
            {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Attribute)}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and self.opaque_global(sub.id) and \
                    not (sub.id in self.w.ctx.instances and id(sub) in used):
                self.w.flag(self.label, sub, "wrapper-torch-op", f"'{sub.id}' in the wrapper is an object of the "
                            "notebook's own (not a def, an import or plain data): what it runs is out of the "
                            "policy's sight; the wrapper only checks shapes, allocates h and y, and launches the kernel")
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

    def opaque_global(self, name: str) -> bool:
        """A module-level name bound by the student's cells to something other than a def, a kernel, an
        import, plain data or a result type: a module under another name, an object, a lambda."""
        ctx = self.w.ctx
        return name not in self.own and name in ctx.bound and not (
            name in ctx.functions or name in ctx.kernels or name in ctx.data or name in ctx.containers or
            name in ctx.aliases or name in ctx.classes)

    def vouched_callee(self, f) -> bool:
        """What a call in the wrapper may call: an import's path, a name (a builtin, a def, a kernel, a result
        type; not one of the function's own, which may hold anything), a method of a tensor (checked below),
        or a plain-data method (str.join, dict.items, torch.Size.numel) of anything else. Not a call's or an
        item's result, nor a method a tensor's class or a module has under another name (type(x).numpy)."""
        if self.w.ctx.resolve(f) is not None or self.method(f) is not None:   # or the notebook's plain class
            return True
        if _super_init(f) and "super" not in self.w.ctx.bound:     # a followed class's __init__ calling its base's
            return True
        if isinstance(f, ast.Name):     # not a data name either: _F = torch.add, then _F(*args)
            ctx = self.w.ctx
            return f.id not in self.own and (f.id not in ctx.bound or f.id in ctx.functions or f.id in ctx.kernels or
                                             f.id in ctx.containers or f.id in ctx.aliases)
        if isinstance(f, ast.Attribute):
            return self.tensorish(f.value) or f.attr in SCALAR_METHODS | PACKING_METHODS | plain_methods() | \
                CONTAINER_METHODS
        return False

    def call(self, node, path, in_comprehension: bool):
        f, ctx = node.func, self.w.ctx
        if isinstance(f, ast.Name) and f.id in self.launchers:     # launch = kernel[grid]; launch(...)
            f = self.launchers[f.id]
        if not (isinstance(f, ast.Subscript) and isinstance(f.value, ast.Name)) and not self.vouched_callee(f):
            self.w.flag(self.label, node, "wrapper-torch-op", f"'{ast.unparse(f)[:60]}(...)' in the wrapper calls "
                        "what the policy cannot name (a computed callee, a local holding a function, a method under "
                        "another name): the wrapper only checks shapes, allocates h and y, and launches the kernel")
            return
        if isinstance(f, ast.Subscript) and isinstance(f.value, ast.Name):
            if f.value.id in ctx.kernels:
                for arg in [*node.args, *(k.value for k in node.keywords)]:
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
            cls, fn, bound = method
            if fn is not None:
                self.w._function(ctx.cell_of(fn), fn, self.passed(fn, node, bound), cls)
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
                    name.split(".")[0] in HONEST_MODULES or name in function_forms():
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
                self.w._function(label, fn, self.passed(fn, node))
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
        if isinstance(f, ast.Attribute) and f.attr not in SCALAR_METHODS | TENSOR_VIEW_METHODS | PACKING_METHODS | \
                CONTAINER_METHODS and self.tensorish(f.value):
            self.w.flag(self.label, node, "wrapper-torch-op", f".{f.attr}(...) in the wrapper computes on the data; "
                                                              "the kernel computes h and y")


def _has_alloc(node, ctx) -> bool:
    return any(isinstance(n, ast.Call) and ctx.resolve(n.func) in WRAPPER_ALLOC for n in ast.walk(node))


class _Kernel:
    """A @triton.jit function: decorators of plain data, constexpr annotations, literal defaults, and a
    body of Triton operations and arithmetic on their values (in the interpreter it runs as Python)."""

    def __init__(self, label: str, source: str, ctx: _Notebook, fn: ast.FunctionDef):
        self.label, self.source, self.ctx, self.fn = label, source, ctx, fn
        self.found: list[Violation] = []
        args = fn.args
        self.locals = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        self.constexpr = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs
                          if a.annotation is not None and self.annotation(a.annotation) == "constexpr"}
        self.locals |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

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
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]          # the docstring
        for stmt in body:
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
                if not (_is_literal(v, self.ctx) or self.heuristic(v) or
                        (isinstance(v, ast.Name) and v.id in self.ctx.constants)):
                    self.flag(v, "kernel-decorator", "decorator arguments must be plain data (numbers, strings, "
                                                     "triton.Config(...), lists of them, small lambdas of args)")

    def heuristic(self, v) -> bool:
        """triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])})."""
        if isinstance(v, ast.Dict):
            return all(isinstance(k, ast.Constant) and self.heuristic(x) for k, x in zip(v.keys, v.values))
        if not isinstance(v, ast.Lambda) or len(v.args.args) != 1:
            return False
        # it runs inside the launch, on the launch's arguments (the tensors among them): it may read sizes and
        # shapes and compute with numbers, never call a method that reads or writes the data (a["h_ptr"].copy_(...),
        # a["x_ptr"].numpy(): NumPy runs no torch operator for the tracer to see)
        allowed = {v.args.args[0].arg} | KERNEL_BUILTINS | self.ctx.constants
        helpers = ("triton.next_power_of_2", "triton.cdiv")
        for n in ast.walk(v.body):
            if isinstance(n, ast.Name) and n.id not in allowed and self.ctx.resolve(n) != "triton":
                return False
            if isinstance(n, ast.Attribute) and self.ctx.resolve(n) not in helpers and not (
                    self.ctx.resolve(n) is None and n.attr in SCALAR_ATTRIBUTES | SCALAR_METHODS):
                return False
            if isinstance(n, ast.Call) and not (self.ctx.resolve(n.func) in helpers or (
                    isinstance(n.func, ast.Name) and n.func.id in KERNEL_BUILTINS) or (
                    isinstance(n.func, ast.Attribute) and n.func.attr in SCALAR_METHODS)):
                return False
            if isinstance(n, (ast.Lambda, ast.comprehension, ast.NamedExpr)) and n is not v:
                return False
        return True

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
            ok = node.id in self.locals or node.id in KERNEL_BUILTINS or node.id in self.ctx.kernels or \
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
            if isinstance(f, ast.Name) and f.id not in KERNEL_BUILTINS and f.id not in self.ctx.kernels:
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
