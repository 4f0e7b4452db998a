"""What a notebook's cells define, read from their syntax trees (never run), and how a finding is written:
the facts both the policy's rules (policy.py) and the kernel rules (kernel_rules.py) read.

    ctx = Notebook([("setup", SETUP, False), ("residual_add", SRC, True)])
    ctx.functions["residual_add"]      # (cell label, its ast.FunctionDef)
    ctx.resolve(node)                  # "torch.nn.functional.gelu" for the ast of `F.gelu`

A cell is (label, source, is_student); the trusted (locked) cells are read for their imports and
definitions, so that `tl`, `F` or `nn` resolve as they do when the notebook runs. The helpers named with a
leading underscore are the two rule modules' own, not the package's interface.
"""
from __future__ import annotations

import ast
import builtins
import functools
import importlib
import re
import threading
import types
from dataclasses import dataclass

from .cellsource import python_lines, syntax_tree

WITHHOLD, FLAG = "withhold", "flag"

_PARSING = threading.Lock()


def parse(source: str) -> ast.Module:
    """cellsource.syntax_tree (ast.parse as Python 3.11 reads it, depth bounded), one thread at a time. CPython
    3.11 keeps one AST-building depth counter per interpreter (gh-106905): the grader's threads, parsing two
    notebooks at once, could fail with SystemError "AST constructor recursion depth mismatch" and lose a batch's
    results."""
    with _PARSING:
        tree = syntax_tree(source)
    # only a class's body mangles, and only a name like __x: most cells hold neither, and skip the extra walk
    return _mangled(tree) if "class" in source and _PRIVATE.search(source) else tree


_PRIVATE = re.compile(r"(?<!\w)__\w*[^\W_]_?(?!\w)")    # __x, __x_: no __dunder__, nor one of underscores alone


def _mangled(tree: ast.Module) -> ast.Module:
    """The tree with each private name in a class written as Python compiles it (its private name mangling): in
    class C's body, its methods and their lambdas, __x is _C__x as a name, an attribute, a parameter, an import's
    module, name or alias, an except or match capture, or a global. A call's keywords and a class pattern's
    attributes stay as written, as Python leaves them; every rule then reads the names the code uses."""
    todo: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while todo:
        node, owner = todo.pop()
        own = node.name if isinstance(node, ast.ClassDef) else None     # its body's owner: the name as written
        if owner is not None and not isinstance(node, ast.keyword):
            for field in ("id", "attr", "arg", "name", "asname", "rest", "module"):
                if isinstance(value := getattr(node, field, None), str):
                    setattr(node, field, _private(value, owner))
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                node.names = [_private(name, owner) for name in node.names]
        if isinstance(node, ast.ClassDef):
            # its decorators, bases and keywords are read where it stands, its body in its own name
            todo += [(n, owner) for n in (*node.decorator_list, *node.bases, *node.keywords)]
            todo += [(n, own) for n in node.body]
        else:
            todo += [(n, owner) for n in ast.iter_child_nodes(node)]
    return tree


def _private(name: str, owner: str) -> str:
    """`name` in class `owner`'s body: _Owner__x for __x, but for a __dunder__, a dotted module path or a class
    named with underscores alone."""
    owner = owner.lstrip("_")
    return f"_{owner}{name}" if owner and name.startswith("__") and not name.endswith("__") and "." not in name \
        else name

# Modules any cell may import, whatever the assignment's list: compiler directives Jupyter honours per
# cell, and warnings, which neither the grader's child nor any score reads (copy, time, random and
# logging stay outside: copy hands out copyreg's dispatch table, the child times and seeds with time
# and random, logging opens files)
HONEST_MODULES = frozenset({"__future__", "warnings"})
# the decorators a followed class's methods may carry (_plain_class): Python's own, each read where it is used
METHOD_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
# and the library's getter, which runs once and keeps what it returns: read as a property is
CACHED_GETTER = "functools.cached_property"
# and the class decorators it may carry: Python's own, which add methods written in the class's own (the
# comparisons total_ordering derives from its __lt__ and __eq__) or only mark it (typing.final), so that what
# runs is still its defs
CLASS_DECORATORS = frozenset({"functools.total_ordering", "typing.final"})
# Private attributes of nn.Module: writing or reading them hides modules from the grader's view.
MODULE_PRIVATE = frozenset({
    "_modules", "_parameters", "_buffers", "_non_persistent_buffers_set", "_forward_hooks",
    "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks",
    "_load_state_dict_pre_hooks", "_version", "_apply", "_call_impl", "_get_name", "_named_members",
    "_C", "_dynamo", "_forward_hooks_with_kwargs", "_is_full_backward_hook"})


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


class Notebook:
    """What the cells define: import aliases, module-level functions, Triton kernels, constants."""

    def __init__(self, cells):
        self.sources, self.trees, self.student, self.order = {}, {}, {}, {}
        self.aliases: dict[str, str] = {}         # local name -> dotted module path ("F" -> torch.nn.functional)
        self.functions: dict[str, tuple[str, ast.FunctionDef]] = {}   # student functions, by name
        self.kernels: dict[str, tuple[str, ast.FunctionDef]] = {}     # student @triton.jit functions
        self.constants: set[str] = set()          # module-level names bound to plain values
        self.classes: dict[str, tuple[str, ast.ClassDef]] = {}   # student classes of plain methods, by name
        for i, (label, source, student) in enumerate(cells):
            self.order[label], self.sources[label], self.student[label] = i, source, student
            try:
                tree = parse(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue          # a cell that does not parse never runs (the child's compile fails alike)
            self.trees[label] = tree
            for node in tree.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    self.aliases.update(_imported(node))
        # an import inside a function names its module there as at the top: `import numpy` in a def, then
        # numpy.lib, is the path numpy.lib (a name the top level already imports keeps its module)
        for tree in self.trees.values():
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and node not in tree.body:
                    for name, path in _imported(node):
                        self.aliases.setdefault(name, path)
        # (cell, statement, name) for each name any cell binds at module level, in Run All's order (_bindings)
        self.top_bindings = [(label, node, name) for label, tree in self.trees.items()
                             for node, name in _bindings(tree.body)]
        self.global_names = {name for tree in self.trees.values() for node in ast.walk(tree)
                             if isinstance(node, ast.Global) for name in node.names}
        # every name the student's cells bind at module level (a builtin such as int rebound among them), with
        # the statements that bind it, in order; and the names a function of theirs binds there (global NAME)
        self.module_bindings: dict[str, list[ast.AST]] = {}
        for label, node, name in self.top_bindings:
            if self.student[label]:
                self.module_bindings.setdefault(name, []).append(node)
        # a `global` in a def binds at module level when the def runs (global abs; abs = ...: red team 39); a
        # module-level def the notebook never names or decorates never runs, however its body reads
        self.bound = set(self.module_bindings) | _run_globals(self.trees.values())
        # a name an import binds and a cell binds again otherwise (def empty_like, class triton, Any = obj, or a
        # function's `global`) holds that object, not the module's: it names no import's path (resolve)
        self.imported = dict(self.aliases)        # as the imports bind them, bound again or not (resolve)
        for label, node, name in self.top_bindings:
            if name in self.aliases and not isinstance(node, (ast.Import, ast.ImportFrom)) and _rebinds(node, name):
                self.aliases.pop(name, None)
        for name in self.global_names:
            self.aliases.pop(name, None)
        for label, tree in self.trees.items():
            for node in tree.body:
                self._top_level(label, node, self.student[label])
        # the names an `import` statement binds to a module, anywhere: such a name held, passed or returned
        # (m = numpy) would hide the paths the policy reads off it (m.lib)
        self.modules = {name for tree in self.trees.values() for node in ast.walk(tree)
                        if isinstance(node, ast.Import) for name, _ in _imported(node)}
        # a class whose attributes some code sets (Norm.forward = f, setattr(Norm, ...)) may run other
        # code than its defs: its methods are not followed; nor where any object's attribute of a def's name is
        # set (for cls in (Norm,): cls.forward = f, an alias's): the object may be the class under another name
        self.stored_attributes: set[str] = set()      # every attribute name a student cell sets or deletes
        for label, tree in self.trees.items():
            for node in ast.walk(tree) if self.student[label] else ():
                setter = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("setattr", "delattr") and node.args
                changed = node.value if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) \
                    else node.args[0] if setter else None
                if isinstance(changed, ast.Name):
                    self.classes.pop(changed.id, None)
                if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
                    self.stored_attributes.add(node.attr)
                elif setter and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    self.stored_attributes.add(str(node.args[1].value))
        for name, (_, node) in list(self.classes.items()):
            if {s.name for s in node.body if isinstance(s, ast.FunctionDef)} & self.stored_attributes:
                del self.classes[name]
        # a method a library's decorator wraps is what that decorator returned, which may hold code of its own
        # (singledispatchmethod's register, cached_property's func): its class is followed only where no cell
        # reaches that object, as C.m off a class (or cls) other than to call it, or X.m.attr off anything (a
        # getter's value is read off self or an instance, and may be asked for its own attributes)
        class_names = {"cls"} | {n.name for tree in self.trees.values() for n in ast.walk(tree)
                                 if isinstance(n, ast.ClassDef)}
        class_names |= {name for name, nodes in self.module_bindings.items() if any(
            isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in class_names for n in nodes)}
        off_class, through = set(), set()
        for label, tree in self.trees.items():
            parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
            for node in ast.walk(tree) if self.student[label] else ():
                if isinstance(node, ast.Attribute):
                    parent = parents.get(node)
                    if isinstance(parent, ast.Attribute) and parent.value is node:
                        through.add(node.attr)
                    if isinstance(node.value, ast.Name) and node.value.id in class_names and not (
                            isinstance(parent, ast.Call) and parent.func is node):
                        off_class.add(node.attr)
        for name, (_, node) in list(self.classes.items()):
            if any(isinstance(s, ast.FunctionDef) and any(not (isinstance(d, ast.Name) and d.id in METHOD_DECORATORS)
                                                          for d in s.decorator_list) and
                   (s.name in off_class or s.name in through and not is_getter(s, self)) for s in node.body):
                del self.classes[name]
        # every read of a name, in any cell, with the cell's label
        self.loads: dict[str, list[tuple[ast.Name, str]]] = {}
        for label, tree in self.trees.items():
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self.loads.setdefault(node.id, []).append((node, label))
        for name, (_, node) in list(self.classes.items()):     # ValueError or property rebound is no longer Python's
            if any(isinstance(b, ast.Name) and b.id in EXCEPTIONS & self.bound for b in node.bases) or \
                    any(isinstance(d, ast.Name) and d.id in METHOD_DECORATORS & self.bound
                        for s in node.body if isinstance(s, ast.FunctionDef) for d in s.decorator_list):
                del self.classes[name]
        # a constant is plain data by every binding: `C = 0` then `C = torch` makes C the module
        self.constants -= {name for label, node, name in self.top_bindings if self.student[label]
                           and not (isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_literal(node.value, self))}
        self.constants -= self.global_names
        # names that hold one number, string, bool or None: bound so by every binding in any cell, never named in
        # a `global` (eps=DEFAULT_EPS as a parameter's default holds no tensor)
        self.scalars = {name for _, _, name in self.top_bindings}
        self.scalars -= {name for _, node, name in self.top_bindings
                         if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and _scalar(node.value))}
        self.scalars -= self.global_names
        # names bound to data by every binding: plain data, and what an import names read as a value
        # (_SUPPORTED = (torch.float16, torch.float32)); a function read so can only be called by a name. Worked
        # out from the names already known to be data (in any cell: the course's DTYPES too) until none is
        # added (OK = frozenset(DTYPES)); never a name a `global` names, which a function may bind to anything
        self.bindings: dict[str, list[ast.AST]] = {}      # as module_bindings, of every cell
        for _, node, name in self.top_bindings:
            self.bindings.setdefault(name, []).append(node)
        self.data: set[str] = set()
        # each name checked again only when a name its bindings read becomes data: a chain a1 = a0, a2 = a1, ...
        # is worked out in one pass over it, not one pass per name
        readers: dict[str, set[str]] = {}
        for name, nodes in self.bindings.items():
            for node in nodes:
                for n in ast.walk(node.value) if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value else ():
                    if isinstance(n, ast.Name):
                        readers.setdefault(n.id, set()).add(name)
        todo = set(self.bindings) - self.global_names
        while todo:
            name = todo.pop()
            if name not in self.data and all(isinstance(n, (ast.Assign, ast.AnnAssign)) and _is_data(n.value, self)
                                             for n in self.bindings[name]):
                self.data.add(name)
                todo |= readers.get(name, set()) - self.global_names
        # a class whose body binds a name to another name is followed only where that name holds one scalar or
        # plain data (ALL = DTYPES), or is one the class bound before (ALL = (FLOAT16, FLOAT32))
        for name, (_, node) in list(self.classes.items()):
            own: set[str] = set()
            for s in node.body:
                if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
                    looped = {t.id for c in ast.walk(s.value) if isinstance(c, ast.comprehension)
                              for t in ast.walk(c.target) if isinstance(t, ast.Name)}
                    if any(isinstance(n, ast.Name) and n.id not in own | looped | self.scalars | self.data |
                           set(self.aliases) for n in ast.walk(s.value)):
                        del self.classes[name]
                        break
                    own |= {t.id for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                            if isinstance(t, ast.Name)}
        # the private names the notebook gives its own objects, in any of its cells: a method of a base class
        # in the cell above, or a helper class's constant, is read in another cell as Run All runs them
        self.own_names = {name for label, tree in self.trees.items() if self.student[label]
                          for name in _given_names(tree)}
        self.own_private = {name for name in self.own_names if name.startswith("_") and not name.startswith("__")
                            and name not in MODULE_PRIVATE}

    def _top_level(self, label, node, student):
        if isinstance(node, ast.FunctionDef) and student:
            if any(_is_jit(d, self) for d in node.decorator_list):
                self.kernels[node.name] = (label, node)
            else:
                self.functions[node.name] = (label, node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_literal(node.value, self):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            self.constants |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif student and isinstance(node, ast.ClassDef) and _plain_class(node, self):
            self.classes[node.name] = (label, node)

    @functools.cached_property
    def table_reads(self) -> tuple[set[int], dict[str, list[ast.Name]], dict[str, bool]]:
        """_reads of this notebook, worked out when first asked."""
        return _reads(self)

    def resolve(self, node, imported: bool = False) -> str | None:
        """The dotted path of Name / Attribute chains rooted at an import ("F.gelu" -> torch.nn.functional.gelu).
        A name a cell binds again (F = lambda x: ...) roots none, but where imported: the module it may still hold
        wherever it is read, for the rules that forbid a path."""
        aliases = self.imported if imported else self.aliases
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in aliases:
            return ".".join([aliases[node.id], *reversed(parts)])
        return None


def _rebinds(node, name: str) -> bool:
    """Whether a statement _bindings names for `name` binds the name itself, not an attribute or an item of what
    it holds (torch.allclose = f binds no `torch`)."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete, ast.For, ast.AsyncFor, ast.With,
                             ast.AsyncWith)):
        return True
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def _imported(node) -> list[tuple[str, str]]:
    """(the name an import binds, the dotted path it names) for each of its names."""
    if isinstance(node, ast.Import):
        return [(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0]) for a in node.names]
    if node.module and not node.level:
        return [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names if a.name != "*"]
    return []


# nn.Module's methods that give the module an attribute by the name they are handed
REGISTERS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})


def _given_names(tree) -> set[str]:
    """The names a cell gives objects of its own: attributes it sets on self or cls (self.x = ..., by name through
    register_buffer, add_module or setattr), the functions, methods and classes it defines, and the names a class
    body binds (class constants, dataclass fields)."""
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            own.add(node.attr)
        elif isinstance(node, ast.Call) and (name := _named_on_self(node)) is not None:
            own.add(name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
                own |= {t.id for t in targets if isinstance(t, ast.Name)}
    return own


def _named_on_self(call: ast.Call) -> str | None:
    """The literal name a call gives an attribute of self or cls: self.register_buffer("_mask", m) and its kin,
    setattr(self, "_x", v)."""
    f, args = call.func, call.args
    if isinstance(f, ast.Attribute) and f.attr in REGISTERS and isinstance(f.value, ast.Name) and \
            f.value.id in ("self", "cls"):
        named = args[0] if args else next((k.value for k in call.keywords if k.arg == "name"), None)
    elif isinstance(f, ast.Name) and f.id == "setattr" and len(args) > 1 and isinstance(args[0], ast.Name) and \
            args[0].id in ("self", "cls"):
        named = args[1]
    else:
        return None
    return named.value if isinstance(named, ast.Constant) and isinstance(named.value, str) else None


def _is_docstring(stmt) -> bool:
    """A string (or other constant) standing alone: a docstring, or an attribute's docstring below it."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def after_docstring(body: list) -> list:
    """A def's or class's statements after its docstring."""
    return body[1:] if body and _is_docstring(body[0]) else body


def _named_data(node, ctx: Notebook) -> bool:
    """What an import names (torch.float16), or a tuple, list or set of such, of constants and of names (each
    checked once the notebook's data is known: Notebook's class check)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(isinstance(e, (ast.Constant, ast.Name)) or _named_data(e, ctx) for e in node.elts)
    return isinstance(node, ast.Attribute) and ctx.resolve(node) is not None


def is_getter(fn: ast.FunctionDef, ctx: Notebook) -> bool:
    """A method of a followed class that an attribute read runs: @property, or functools.cached_property."""
    return any(isinstance(d, ast.Name) and d.id == "property" or ctx.resolve(d) == CACHED_GETTER
               for d in fn.decorator_list)


def library_decorator(d, ctx: Notebook) -> bool:
    """A decorator imported from a library and given plain data only (functools.lru_cache(maxsize=None),
    torch.no_grad()): nothing of the notebook's reaches it but the def, so what it returns can only run
    that def, with the library's own work around it."""
    target = d.func if isinstance(d, ast.Call) else d
    return ctx.resolve(target) is not None and (not isinstance(d, ast.Call) or all(
        _is_literal(a, ctx) for a in [*d.args, *(k.value for k in d.keywords)]))


# Python's exception classes, a plain class's possible base (class ShapeError(ValueError)): built, each keeps
# its arguments and computes nothing
EXCEPTIONS = frozenset(name for name, obj in vars(builtins).items()
                       if isinstance(obj, type) and issubclass(obj, BaseException))


def _plain_class(node: ast.ClassDef, ctx: Notebook) -> bool:
    """A class whose methods a check can follow: no decorator but CLASS_DECORATORS, no keyword
    (metaclass), one base at
    most, a library class or the notebook's, or several of Python's exceptions and one of the notebook's at
    most (class DtypeError(ShapeError, TypeError), whose defs are found as Python's order finds them), and a
    body of a docstring, defs (static and class methods among them) and plain data bound to names that are not
    dunders, with no method setting an attribute that would hide a def (self.forward = f), so that what a call
    or an attribute of it runs is one of these defs (a property's getter among them) or the library base's
    own."""
    names = [b.id if isinstance(b, ast.Name) else None for b in node.bases]
    exceptions = len(names) > 1 and all(b in EXCEPTIONS or b in ctx.classes for b in names) and \
        sum(b in ctx.classes for b in names) <= 1
    if any(ctx.resolve(d) not in CLASS_DECORATORS for d in node.decorator_list) or node.keywords or \
            len(node.bases) > 1 and not exceptions or not all(
            ctx.resolve(b) is not None or (isinstance(b, ast.Name) and b.id in {*ctx.classes, "object", *EXCEPTIONS})
            for b in node.bases):
        return False
    if any(isinstance(n, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)) or
           isinstance(n, ast.Call) and isinstance(s, ast.AnnAssign) and n in set(ast.walk(s.annotation))
           for s in node.body if not isinstance(s, ast.FunctionDef) for n in ast.walk(s)):
        return False      # x: (G := f) = 0 binds G in the class where no value shows it; an annotation can call
    methods = {s.name for s in node.body if isinstance(s, ast.FunctionDef)} | {"forward", "__call__"}
    for n in ast.walk(node):     # self.forward = f in a method: the instance's attribute hides the def
        if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) and \
                (n.attr in methods or n.attr.startswith("__")):
            return False
    for s in node.body:
        if isinstance(s, ast.FunctionDef):
            # a library's decorator given plain data runs the def (@torch.no_grad() on forward), Triton's
            # makes a kernel of it
            if s.name == "__new__" or not all(isinstance(d, ast.Name) and d.id in METHOD_DECORATORS or
                                              ctx.resolve(d) == CACHED_GETTER or library_decorator(d, ctx) and
                                              not ctx.resolve(d.func if isinstance(d, ast.Call) else d).startswith(
                                                  "triton.")
                                              for d in s.decorator_list):
                return False
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if not all(isinstance(t, ast.Name) and not t.id.startswith("__") for t in targets) or \
                    (s.value is not None and not _is_literal(s.value, ctx) and not _named_data(s.value, ctx) and
                     not isinstance(s.value, ast.Name)):
                return False      # a name: one holding a scalar or data (MAX = MAX_WIDTH), checked once they are known
        elif not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) or isinstance(s, ast.Pass)):
            return False
    return True


# what these hand back is a number, a string or a bool whatever they are given (Python refuses an __int__,
# __str__, __bool__ or __len__ that returns anything else)
_SCALAR_CALLS = frozenset({"int", "float", "str", "bool", "len", "torch.cuda.is_available", "torch.cuda.device_count"})
# and these when what they are given is data (an object's own operators could return anything): numbers, and
# Python's own containers of the data they are given (frozenset({...}), dict(zip(keys, values)))
_DATA_CALLS = frozenset({"min", "max", "abs", "round", "triton.next_power_of_2", "triton.cdiv", "tuple", "list",
                         "set", "frozenset", "dict", "sorted", "zip", "range", "enumerate", "reversed"})


# functions of the allowed modules that hand back numbers, or Python's own containers, of the numbers they are given
NUMBER_FUNCTIONS = frozenset({"math.ceil", "math.floor", "math.log2", "math.log", "math.sqrt", "math.isqrt",
                              "math.prod", "math.gcd", "itertools.product"})
DTYPES = {"torch.": "torch.dtype", "triton.language.": "triton.language.dtype"}


def dtype_path(path: str | None, prefix: str) -> bool:
    """Whether a dotted path under prefix (a key of DTYPES) names a dtype of that library (torch.float16,
    triton.language.float32): immutable data."""
    if path is None or not path.startswith(prefix):
        return False
    kind = named(DTYPES[prefix])[1]
    return isinstance(kind, type) and isinstance(named(path)[1], kind)


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _results(node) -> list:
    """What a comprehension makes of each item: its element, or a dict comprehension's key and value."""
    return [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]


def _is_data(node, ctx: Notebook, names: frozenset[str] = frozenset()) -> bool:
    """Plain data, what an import names (torch.float16), tuples, lists, sets and dicts of these, and what is
    computed from them once, at module level, into a number, string or bool or a container of such: an
    f-string, a string's method (", ".join(...)), a conditional between data, arithmetic on data, a call of
    _SCALAR_CALLS (or of _DATA_CALLS on data), a comprehension of data over data ({2 ** k: ... for k in
    range(14)}; `names`, its targets), a device's properties
    (torch.cuda.get_device_properties(0).multi_processor_count). None of these is a callable or a tensor, so a
    kernel decorator given one runs nothing of the notebook's (kernel_rules)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_data(e, ctx, names) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_data(k, ctx, names) and _is_data(v, ctx, names)
                   for k, v in zip(node.keys, node.values))
    if isinstance(node, COMPREHENSIONS):   # tuple(... for k in ...)
        bound = set(names)
        for g in node.generators:
            targets = _target_names(g.target)
            if g.is_async or not _is_data(g.iter, ctx, names) or not all(isinstance(t, ast.Name) for t in targets):
                return False
            bound |= {t.id for t in targets}
            if not all(_is_data(c, ctx, frozenset(bound)) for c in g.ifs):
                return False
        return all(_is_data(part, ctx, frozenset(bound)) for part in _results(node))
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.IfExp):
        return _is_data(node.body, ctx, names) and _is_data(node.orelse, ctx, names)
    if isinstance(node, ast.BinOp):
        return _is_data(node.left, ctx, names) and _is_data(node.right, ctx, names)
    if isinstance(node, (ast.Compare, ast.BoolOp)):     # a comprehension's condition
        return all(_is_data(c, ctx, names) for c in ([node.left, *node.comparators] if isinstance(node, ast.Compare)
                                                      else node.values))
    if isinstance(node, ast.UnaryOp):
        return _is_data(node.operand, ctx, names)
    if isinstance(node, ast.Name) and (node.id in ctx.scalars or node.id in ctx.constants or node.id in ctx.data or
                                       node.id in names):
        return True
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call) and \
            ctx.resolve(node.value.func) == "torch.cuda.get_device_properties":
        return True
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Constant) and isinstance(f.value.value, str):
            return True
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Name) and \
                f.value.func.id == "str" and "str" not in ctx.bound and all(_is_data(a, ctx, names) for a in node.args):
            return True      # str(d).removeprefix("torch."): a method of a string, given data
        name = _called(f, ctx)
        # a key that is a builtin of Python's (sorted(DTYPES, key=str)), or reverse=, orders data and adds none
        ordering = all(k.arg in ("key", "reverse") and (isinstance(k.value, ast.Constant) or isinstance(
            k.value, ast.Name) and k.value.id in _SCALAR_CALLS and k.value.id not in ctx.bound) for k in node.keywords)
        if name in _SCALAR_CALLS or name in _DATA_CALLS and ordering and \
                all(_is_data(a, ctx, names) for a in node.args):
            return True
        if name == "typing.get_args" and len(node.args) == 1 and literal_type(node.args[0], ctx):
            return True      # a Literal's choices: a tuple of constants
    return _is_literal(node, ctx, names) or (isinstance(node, (ast.Name, ast.Attribute)) and ctx.resolve(node) is not None)


def _called(func, ctx: Notebook) -> str | None:
    """What a call's function names: a builtin's name the notebook leaves as Python's, or an import's path."""
    return func.id if isinstance(func, ast.Name) and func.id not in ctx.bound else ctx.resolve(func)


def _target_names(target) -> list[ast.expr]:
    """The names a loop target binds, a tuple's unpacked; anything else (an attribute, an item) as it is."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _target_names(e)]
    return [target.value if isinstance(target, ast.Starred) else target]


def _scalar(node) -> bool:
    """One number, string, bool or None, signed or not, or arithmetic on such (1 << 16, 8 * 32)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.BinOp):
        return _scalar(node.left) and _scalar(node.right)
    return isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (int, float, str)))


# what reads a module-level table without storing into it: its items, a copy, its length, a loop over it
_TABLE_READERS = frozenset({"dict", "list", "tuple", "set", "frozenset", "sorted", "len", "iter", "enumerate", "zip",
                            "min", "max", "sum", "any", "all", "reversed", "str", "repr"})
_TABLE_READ_METHODS = frozenset({"get", "items", "keys", "values", "copy", "count", "index"})


def _only_read(name: str, ctx: Notebook, also: frozenset[int] = frozenset()) -> bool:
    """Whether the module-level name is bound once and every other use of it, in any cell, only reads it: an
    item (NAME[key]), a read method (NAME.get(k), NAME.copy()), a builtin reader's argument (dict(NAME),
    len(NAME)), a ** unpacking ({**NAME}, f(**NAME)), a loop over it, the right of `in`, an f-string's value,
    or one of the nodes `also` (by id)."""
    read, uses, answers = ctx.table_reads
    if not also and name in answers:
        return answers[name]
    named = uses.get(name, [])
    answer = all(isinstance(n.ctx, ast.Store) or id(n) in read or id(n) in also for n in named) and \
        sum(isinstance(n.ctx, ast.Store) for n in named) == 1
    if not also:
        answers[name] = answer
    return answer


def _reads(ctx: Notebook) -> tuple[set[int], dict[str, list[ast.Name]], dict[str, bool]]:
    """The ids of the nodes the notebook only reads (_only_read), its Name nodes by name, and a dict for _only_read's
    answers: walked once per notebook (Notebook.table_reads), each name answered once, not once per use (2,000
    constants beside an autotuned kernel took 54 s, 2,000 reads of one table 122 s: red team 39)."""
    read: set[int] = set()
    uses: dict[str, list[ast.Name]] = {}
    for tree in ctx.trees.values():
        for n in ast.walk(tree):
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
                read.add(id(n.value))
            elif isinstance(n, ast.Call):
                f = n.func
                if isinstance(f, ast.Attribute) and f.attr in _TABLE_READ_METHODS:
                    read.add(id(f.value))
                if isinstance(f, ast.Name) and f.id in _TABLE_READERS and f.id not in ctx.bound:
                    read |= {id(a) for a in n.args}
                read |= {id(k.value) for k in n.keywords if k.arg is None}
            elif isinstance(n, ast.Dict):
                read |= {id(v) for k, v in zip(n.keys, n.values) if k is None}
            elif isinstance(n, (ast.For, ast.comprehension)):
                read.add(id(n.iter))
            elif isinstance(n, ast.Compare):
                read |= {id(c) for op, c in zip(n.ops, n.comparators) if isinstance(op, (ast.In, ast.NotIn))}
            elif isinstance(n, ast.FormattedValue):
                read.add(id(n.value))
            elif isinstance(n, ast.Name):
                uses.setdefault(n.id, []).append(n)
    return read, uses, {}


def literal_type(node, ctx: Notebook) -> bool:
    """typing.Literal[...] of constants, or a module-level name only ever bound to one (Norm = Literal[...])."""
    def literal(n):
        return isinstance(n, ast.Subscript) and ctx.resolve(n.value) == "typing.Literal" and all(
            isinstance(e, ast.Constant) for e in (n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]))
    if not isinstance(node, ast.Name):
        return literal(node)
    bound = ctx.bindings.get(node.id, [])
    return bool(bound) and all(isinstance(b, (ast.Assign, ast.AnnAssign)) and literal(b.value) for b in bound)


def _is_jit(decorator, ctx: Notebook) -> bool:
    """triton.jit, triton.autotune or triton.heuristics, called or not, under any path that names it."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return names_one_of(ctx.resolve(target), ("triton.jit", "triton.autotune", "triton.heuristics"))


# Dotted paths (after import aliases are resolved) that read or write files, or reach the runtime: torch.fx,
# torch.export and torch.ao follow a dotted attribute path handed to them as a string (getattr_from_fqn, fetch_attr),
# `__self__.__import__` of a builtin included, where the policy reads no name; torch.get_device_module hands back a
# module (torch.cpu, which holds torch), whose paths no rule reads off a call's result (red team 39)
PROCESS_PATHS = ("torch.load", "torch.save", "torch.serialization", "torch.from_file", "torch.utils", "torch.ops",
                 "torch.jit", "torch.package", "torch.multiprocessing", "torch.distributed", "torch.fx",
                 "torch.export", "torch.ao", "torch.get_device_module",
                 "numpy.load", "numpy.save", "numpy.savez", "numpy.fromfile", "numpy.memmap",
                 "numpy.loadtxt", "numpy.genfromtxt", "numpy.lib", "triton.runtime", "triton.compiler",
                 "triton.backends", "triton.knobs", "triton.testing", "triton.tools")
# the packages whose objects the policy looks up to see what a path names (what a solution may import)
LOOKED_UP = frozenset({"numpy", "torch", "triton", "typing", "dataclasses", "functools", "collections", "itertools",
                       "math"})


@functools.lru_cache(maxsize=None)
def named(path: str) -> tuple[str, object]:
    """What a dotted path rooted at an import names, looked up on the objects themselves: the path as they name
    themselves, each module it reaches renamed by its __name__ (numpy.ma.core.np.lib is numpy.lib,
    dataclasses.types is types), and the object, or None where the lookup stops (a package outside LOOKED_UP,
    a name that is not a plain attribute: no module __getattr__ or property runs here)."""
    parts = path.split(".")
    if parts[0] not in LOOKED_UP:
        return path, None
    obj, name = importlib.import_module(parts[0]), parts[0]
    for i, part in enumerate(parts[1:], 1):
        found = vars(obj).get(part) if hasattr(obj, "__dict__") else None
        if found is None and isinstance(obj, types.ModuleType) and not part.startswith("_") and \
                not any(f"{obj.__name__}.{part}".startswith(p) for p in PROCESS_PATHS):
            try:      # a submodule the notebook imports (import numpy.ma.mrecords): a library's own code
                found = importlib.import_module(f"{obj.__name__}.{part}")
            except Exception:
                found = None
        if found is None:
            return ".".join([name, *parts[i:]]), None
        obj = found
        name = obj.__name__ if isinstance(obj, types.ModuleType) else f"{name}.{part}"
    return name, obj


@functools.lru_cache(maxsize=None)
def names_one_of(path: str | None, paths: tuple[str, ...]) -> bool:
    """Whether a dotted path names what one of `paths` names: itself, or another path into the same installed
    package that reaches the same object (triton.language.standard.jit is triton.jit; red team 38 made kernels
    with it that no rule read). Looked up as `named` looks: no code of theirs runs."""
    if path in paths:
        return True
    if path is None or path.split(".")[0] not in {p.split(".")[0] for p in paths}:
        return False
    found = named(path)[1]
    return found is not None and any(found is named(p)[1] for p in paths)


def _is_literal(node, ctx: Notebook, names: frozenset = frozenset()) -> bool:
    """Plain data: constants, containers of them, triton.Config(...) / tl.constexpr(...) of them, and
    comprehensions over plain data ([triton.Config({}, num_warps=w) for w in (2, 4, 8)])."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id in names):
        return True
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and f"{node.value.id}.{node.attr}" in names:
        return True       # a class of constants' name (kernel_rules._class_constants)
    if isinstance(node, ast.Attribute) and dtype_path(ctx.resolve(node), "triton.language."):
        return True       # tl.float32: a dtype of Triton's, which a kernel may hold (ACC: tl.constexpr = tl.float32)
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
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("values", "keys",
                                                                                            "items") and \
            isinstance(node.func.value, ast.Name) and node.func.value.id in names and not node.args:
        return True      # STAGES.values() of a name that holds a literal
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple", "sorted") \
            and len(node.args) == 1 and not node.keywords:
        return _is_literal(node.args[0], ctx, names)     # list(CONFIGS.values()), run once where it is written
    if isinstance(node, (ast.Compare, ast.BoolOp)):     # a comprehension's condition (if w * s <= 16)
        return all(_is_literal(c, ctx, names) for c in ([node.left, *node.comparators] if isinstance(node, ast.Compare)
                                                         else node.values))
    if isinstance(node, ast.Call) and not node.keywords and _called(node.func, ctx) in _DATA_CALLS | NUMBER_FUNCTIONS:
        return all(_is_literal(a, ctx, names) for a in node.args)     # range(1, 4), itertools.product(WARPS, STAGES)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        bound = set(names)      # each loop's targets (for w, s in ((4, 1), (8, 2))), for what follows it
        for g in node.generators:
            targets = _target_names(g.target)
            if g.is_async or not all(isinstance(t, ast.Name) for t in targets) or \
                    not _is_literal(g.iter, ctx, frozenset(bound)):
                return False
            bound |= {t.id for t in targets}
            if not all(_is_literal(c, ctx, frozenset(bound)) for c in g.ifs):
                return False
        return _is_literal(node.elt, ctx, frozenset(bound))
    return False


@functools.lru_cache(maxsize=4)
def kernel_defs(cells: tuple[tuple[str, str], ...]) -> frozenset[tuple[str, int]]:
    """(label, line) where each @triton.jit def the kernel rules read starts in the cells (label, source), its line
    as its code object gives it (the first decorator's). A launch of any other function runs a kernel no rule read:
    a def nested in a function or an if, or one made by calling triton.jit."""
    ctx = Notebook([(label, source, True) for label, source in cells])
    return frozenset((label, min(d.lineno for d in fn.decorator_list)) for label, fn in ctx.kernels.values())


QUOTE_CHARS = 400


@functools.lru_cache(maxsize=16)
def _lines_of(source: str) -> tuple[str, ...]:
    """python_lines(source), split once for all the quotes of a cell: a cell of thousands of findings was split
    once for each."""
    return tuple(python_lines(source))


def quote(source: str, lineno: int) -> str:
    """The source's line `lineno` as Python numbers it, stripped, one line of text wherever it is shown: a
    character that is not printable (U+2028 or a form feed in a comment, where Python's line goes on) as its
    Python escape, so that no table, grade cell or feedback page breaks the quote into lines of its own. A line over
    QUOTE_CHARS is cut there: a 24,000-character line of 3,000 findings was escaped once for each (red team 38)."""
    lines = _lines_of(source)
    line = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
    cut = line[:QUOTE_CHARS]
    return "".join(c if c.isprintable() or c == "\t" else ascii(c)[1:-1] for c in cut) + \
        (" ..." if len(line) > QUOTE_CHARS else "")


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
        if isinstance(node, COMPREHENSIONS):
            # its targets are its own names (Python 3), not the function's; a := in it binds in the function
            todo += [n for g in node.generators for n in (g.iter, *g.ifs)] + _results(node)
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


class Scopes:
    """Python's scopes over a notebook's cells, which share one module scope: each node that binds a name, keyed by
    (scope, name), and for each name a cell reads, the scope its value comes from. A scope is the id() of its def,
    lambda, class or comprehension node, and 0 for the module's.

        scopes = Scopes(ctx.trees.values())
        scopes.reads[id(name_node)]      # (scope, "name"): where a read of `name` finds it, or (None, "name")"""

    def __init__(self, trees):
        self.bindings: dict[tuple[int, str], list[ast.AST]] = {}
        self.declared: set[str] = set()            # every name a global or nonlocal statement names
        self.kinds: dict[int, type] = {0: ast.Module}
        chains: dict[int, tuple[tuple[int, ...], str]] = {}
        todo = [(tree, (0,)) for tree in trees]
        while todo:
            node, chain = todo.pop()
            here = chain[-1]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                # decorators, defaults, annotations and bases run where the def stands; its body in a scope of its own
                inner = chain + (id(node),)
                self.kinds[id(node)] = type(node)
                outside = [*getattr(node, "decorator_list", []), *getattr(node, "bases", []),
                           *(k.value for k in getattr(node, "keywords", [])), getattr(node, "returns", None)]
                if not isinstance(node, ast.Lambda):
                    self._bind(here, node.name, node)
                if not isinstance(node, ast.ClassDef):
                    outside += [*node.args.defaults, *node.args.kw_defaults]
                    for a in _arguments(node.args):
                        self._bind(id(node), a.arg, a)
                        outside.append(a.annotation)
                todo += [(n, chain) for n in outside if n is not None]
                todo += [(n, inner) for n in (node.body if isinstance(node.body, list) else [node.body])]
                continue
            if isinstance(node, COMPREHENSIONS):
                # its first iterable is read outside it (Python 3)
                inner = chain + (id(node),)
                self.kinds[id(node)] = type(node)
                todo.append((node.generators[0].iter, chain))
                todo += [(n, inner) for g in node.generators for n in (g.target, *g.ifs)] + \
                    [(g.iter, inner) for g in node.generators[1:]] + [(n, inner) for n in _results(node)]
                continue
            if isinstance(node, ast.NamedExpr):
                # x := ... binds in the nearest scope that is not a comprehension
                self._bind(next(s for s in reversed(chain) if self.kinds[s] not in COMPREHENSIONS), node.target.id,
                           node.target)
                todo.append((node.value, chain))
                continue
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                self.declared.update(node.names)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                chains[id(node)] = (chain, node.id)
            for name in _bound_by(node):
                self._bind(here, name, node)
            todo += [(n, chain) for n in ast.iter_child_nodes(node)]
        self.reads = {key: (self._resolve(chain, name), name) for key, (chain, name) in chains.items()}

    def _bind(self, scope: int, name: str, node) -> None:
        self.bindings.setdefault((scope, name), []).append(node)

    def _resolve(self, chain: tuple[int, ...], name: str) -> int | None:
        """The scope a read finds `name` in: its own, or the nearest enclosing one that binds it, passing over class
        bodies (a method does not see its class's names); None for a builtin or a name nothing binds."""
        if (chain[-1], name) in self.bindings:
            return chain[-1]
        return next((s for s in reversed(chain[:-1]) if self.kinds[s] is not ast.ClassDef and
                     (s, name) in self.bindings), None)


def _run_globals(trees) -> set[str]:
    """The names a `global` statement names in any def that may run: all but those in a module-level def, with no
    decorator, whose name no cell reads (a scratch cell's `def remember(v): global max; max = v`, never called) and
    Python calls on no occasion of its own (a module's __getattr__ runs for any name the module lacks)."""
    read: set[str] = set()
    declared = []         # (a statement at a cell's top, the names the global statements in it declare)
    for tree in trees:
        for top in tree.body:
            names = set()
            for n in ast.walk(top):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    read.add(n.id)
                elif isinstance(n, ast.Global):
                    names.update(n.names)
            if names:
                declared.append((top, names))
    return {name for top, names in declared
            if not (isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) and not top.decorator_list and
                    top.name not in read and not top.name.startswith("__"))
            for name in names}


def _plain(text) -> bool:
    """A name, or the start of one, that can be neither a dunder nor a private attribute."""
    return isinstance(text, str) and text[:1].isalpha()


def _bound_by(node) -> list[str]:
    """The names this one node binds (not its children): a stored or deleted name, a parameter, an except's or a
    match capture's name (a mapping pattern's **rest too) and each name an import binds."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    return []


def _bindings(stmts) -> list[tuple[ast.AST, str]]:
    """(statement, name) for each name bound at module level by these statements, in order (an assignment
    expression, x := ..., is its own statement: what x holds is its value, not the enclosing statement's); the
    bodies of if, for, while, try and with run at module level too, those of functions and classes do not."""
    out = []
    for node in stmts:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node, node.name))
            # its decorators, defaults, annotations, bases and keywords run where it stands: x := ... there
            a = getattr(node, "args", None)
            parts = [*node.decorator_list, *getattr(node, "bases", []),
                     *(k.value for k in getattr(node, "keywords", []))]
            if a is not None:
                parts += [*a.defaults, *(d for d in a.kw_defaults if d is not None), node.returns,
                          *(p.annotation for p in _arguments(a))]
            out += [(n, n.target.id) for part in parts if part is not None for n in ast.walk(part)
                    if isinstance(n, ast.NamedExpr)]
            continue
        if isinstance(node, ast.Match):      # its captures bind at module level, and its cases' bodies run there
            out += [(n, n.target.id) for n in ast.walk(node.subject) if isinstance(n, ast.NamedExpr)]
            for case in node.cases:
                out += [(m, name) for m in ast.walk(case.pattern) for name in _bound_by(m)]
                out += [(n, n.target.id) for n in ast.walk(case.guard) if isinstance(n, ast.NamedExpr)] \
                    if case.guard is not None else []
                out += _bindings(case.body)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out += [(node, name) for name in _bound_by(node)]
            continue
        targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else
                   [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)) else
                   [i.optional_vars for i in node.items if i.optional_vars is not None]
                   if isinstance(node, (ast.With, ast.AsyncWith)) else [])
        for target in targets:
            out += [(node, n.id) for n in ast.walk(target) if isinstance(n, ast.Name)]
        for expr in (c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)):   # x := ... anywhere,
            out += [(n, n.target.id) for n in ast.walk(expr) if isinstance(n, ast.NamedExpr)]   # bound by itself
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


