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
              (monkeypatching a library, a Transformer class in assignment 1, Python in a Triton
              kernel in fused-add-norm).
              The rules test fails, the submission is flagged, and named tests that rest
              on the rule (block_parts, launches_kernel, one_launch) are held with it.

Pure Python: ast only. Nothing is imported from torch or Triton, and the source never runs. It is
the grader's policy and the public tests' (nbtest's rules test), so a student sees the same rules
applied before uploading.
"""
from __future__ import annotations

import ast
import builtins
import collections
import copy
import functools
import inspect
import re
import sys
import types
from dataclasses import dataclass, field
from typing import Protocol

from .cellcode import (COMPREHENSIONS, FLAG, HONEST_MODULES, MODULE_PRIVATE, PROCESS_PATHS, WITHHOLD, Notebook,
                       Scopes, Violation, _arguments, _bindings, _bound_by, _locals, _plain, _results, named, quote)
from .kernel_rules import check_kernels


class Rules(Protocol):
    """An assignment's rules: course.toml's [assignments.NAME.policy] (course.Rules), or the release's rules.toml."""
    allowed_imports: tuple[str, ...]
    forbidden_modules: tuple[str, ...]
    no_transformer_classes: bool

# What each withhold rule still guards with the probe out of reach (the demotion of each to a flag, tried
# against the forgeries and the hostile corpus); docs/security.md says the same, tests/test_policy.py checks
GUARDS = {
    "process-introspection": "sys, os, gc, ctypes, frames, sockets and files, by import, attribute or re-export, and "
    "torch's helpers that follow a dotted attribute path from a string (torch.fx, torch.export, torch.ao: "
    "fqn-path-retypes-error scores 100 to its twin's 96 with it demoted): the "
    "process's memory and the loop's own state (ctypes writes any word of the child, as the *-retypes-error samples "
    "do by other routes; gc and frames reach the running loop's locals, among them the key it signs its frames "
    "with). Writing on the child's connection to the grader pays nothing since frames are signed: the grader refuses "
    "a frame the loop did not sign (core/frames.py; forged-reply-frame, red team round 5, scored 100 to its twin's "
    "96 before), and the test that asked loses its point",
    "dynamic-code": "exec, eval, compile, __import__, open, globals and vars: __import__ and the builtins that "
    "globals() and vars() hand out import a loaded module (os) with no audited event, the spelling of "
    "process-introspection's route; exec, compile and open are audited too",
    "dunder": "object.__setattr__, __dict__, __globals__, __closure__, __code__, __subclasses__: a library "
    "function's globals (os) and any class with no import and no audited event, the spelling of "
    "process-introspection's route; hides-encoder-layer scores its twin's 97 with it demoted (block_parts is held "
    "by the transformer-class flag too)",
    "private-attribute": "a library object's private attributes: torch's C internals and private modules "
    "(torch._C, torch._dynamo), where torch._C._dynamo.eval_frame.set_eval_frame hands a callback every frame "
    "that runs after it, the probe's included, with no audited event; and nn.Module's _modules, _parameters and "
    "hooks, a layer hidden from the structure the probe reads",
    "computed-attribute": "getattr, setattr and delattr with a name the policy cannot read, or held and handed "
    "on (ga = getattr, map(setattr, ...)), or copied by functools.update_wrapper under such names, or set as the "
    "keys of a ParameterDict: the spelling of a dunder, private or frame attribute (tb_frame, f_globals) out of the "
    "rules above, or a sparse tensor's indices (numpy's __array_interface__ is refused by the child's setattr too: "
    "alias-setattr-retypes-error scores its twin's 96 with it demoted)",
    "too-deep": "a cell nested deeper than the checks can walk: the policy cannot vouch for it, so any "
    "construct above could hide there",
    "import": "a module outside the assignment's imports, by import or as another module's attribute "
    "(torch.nn.functional.np), a class or function of one reached under another package's path "
    "(torch.amp.grad_scaler.Enum is enum's: reexported-enum-retypes-error), or all of one's names (import *): the "
    "policy vouches only for the modules it lists "
    "(the standard library's process modules are process-introspection's). An installed library can write raw "
    "addresses as ctypes does (cffi, a Jupyter dependency: cffi-retypes-error, a RuntimeError turned into a "
    "ValueError, scores 100 to its twin's 96 with it demoted; Triton's interpreter did in residual-connections, "
    "kernel-retypes-error), and the standard library's helpers make an attribute from data, which numpy reads as an "
    "array interface (enum's functional API: enum-retypes-error scores 100 to its twin's 96 with it a flag; "
    "argparse's Namespace sets its through setattr, which the child refuses too)",
    "protocol": "a special name that is not Python's own defined by a class, bound by any statement (an assignment, "
    "a match's capture, an import's alias: match-capture-retypes-error and import-alias-retypes-error score 100 to "
    "their twin's 96 with it demoted, where the child did not refuse them), as a keyword or as a string (numpy's "
    "__array_interface__, __array_struct__; the CUDA array interface, __dlpack__), __getattr__, which answers "
    "any name, and classes built from names the policy cannot read (three-argument type(), a metaclass, "
    "make_dataclass, its namespace and make_dataclass held or passed on, __annotations__, __slots__ and "
    "__match_args__ other than literal names, a "
    "class based on typing.Type, the builtin type handed back by typing.get_origin, kept in a subscript (get_args "
    "hands it back), compared with an object of the notebook's (its __eq__ keeps it), or in an annotation the "
    "notebook reads back (get_type_hints, dataclasses.fields, a match's Field(type=...))): numpy builds an "
    "array at the raw address such an object names, so any object of the "
    "child is read or written with no process module and no audited event (interface-retypes-error, a "
    "RuntimeError turned into a ValueError in memory, scores 100 to its twin's 96 with it demoted, as "
    "annotations-retypes-error, namespace-retypes-error and getargs-type-retypes-error do)",
    "unchecked-memory": "torch's tensors whose memory torch leaves to the code to keep in bounds: a sparse tensor, "
    "whose indices torch trusts (no invariant is checked by default, and indices() hands them out to be changed "
    "after any check), and a storage, which resize_ shrinks under the tensors that view it (numpy's in-place "
    ".resize frees the data under its views alike, with refcheck=False or whenever its count of references says "
    "none is left: a view reached as .base, base-resize-retypes-error); an operator's unsafe=True, which skips "
    "its checks (segment_reduce's offsets then reach any address: segment-reduce-retypes-error); adding a sparse "
    "tensor to a dense one writes at its index however far past that tensor, so any word of the child "
    "(sparse-retypes-error once scored 100 to its twin's 96 with torch alone; the child now checks every sparse "
    "tensor torch builds, nbtest/buffers.py, but indices() still hands them out to be changed); numpy's array "
    "classes called or held (numpy.ndarray, recarray, numpy.rec) build an array over any buffer, of objects too, "
    "and .resize with refcheck=False in a ** display (object-buffer-retypes-error and "
    "refcheck-kwargs-retypes-error score 100 to their twin's 96 with it demoted); a name the notebook gives its "
    "own object (self.saved_storage, a method pair_indices) is its own unless torch or numpy has it too",
    "monitor": "an audited event (a frame or gc read, exec, compile, an import, a file, a torch mode left "
    "active): the only defence against reach-dynamic-class-* and reach-torch-mode-*, torch modes that "
    "answer the probe's reads without reaching it; the strings a library runs (reach-string-*) find no probe",
}
# Modules whose import is itself a way into the process (severity withhold); any other module
# outside the allowed list is a plain flag.
PROCESS_MODULES = frozenset({
    "sys", "os", "gc", "ctypes", "importlib", "inspect", "builtins", "threading", "_thread", "signal",
    "subprocess", "socket", "io", "pathlib", "shutil", "pickle", "marshal", "types", "weakref", "code",
    "codeop", "runpy", "multiprocessing", "resource", "linecache", "traceback", "tracemalloc", "atexit",
    "faulthandler", "mmap", "tempfile", "posix", "pty", "fcntl", "select", "asyncio", "concurrent",
    "dis", "ast", "copyreg", "shelve", "sqlite3", "urllib", "http", "requests"})
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
# torch.library's one name a Triton solution calls: wrap_triton hands back a wrapper that launches the kernel it is
# given as kernel[grid](...) does (so that torch.compile can trace it); the rest of torch.library replaces
# torch's own operators in the process
LIBRARY_LAUNCHERS = frozenset({"torch.library.wrap_triton"})
# numpy's modules that build records and strings over a buffer (numpy.rec.array(buf), numpy.char.array): called,
# each builds an array over any buffer it is handed, of objects too (a pointer to an object the code made up);
# numpy's array classes themselves are known by what they are (_over_a_buffer)
ARRAY_MODULES = ("numpy.rec", "numpy.char", "numpy.core")
# Compilers the grader's child and the public tests replace by a pass-through (nbtest/uncompiled.py): no
# compiler runs, so calling one reaches nothing.
UNCOMPILED = ("torch.compile", "torch.compiler.compile", "torch.jit.script")
# Dunder attributes an honest solution reads (super().__init__(), type(x).__name__, torch.__version__): a method
# it calls on its own object, or text.
SAFE_DUNDERS = frozenset({"__init__", "__name__", "__qualname__", "__doc__", "__version__"})
# Dunders a class body may not define: they lie about type or reroute torch's dispatch.
OVERRIDE_DUNDERS = frozenset({"__class__", "__getattribute__", "__torch_function__", "__torch_dispatch__",
                              "__instancecheck__", "__subclasscheck__", "__init_subclass__", "__set_name__"})
# Python's own special names (the data model's methods and a class's special attributes, a module's names): a
# class may define these, and a string or keyword may name them. Any other dunder is a library's protocol, read
# off the object by that library; numpy's __array_interface__ and __array_struct__ name a raw address, at which
# numpy builds an array that reads and writes whatever lies there (rule protocol). OVERRIDE_DUNDERS are the
# override rule's.
_OPERATORS = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow", "lshift", "rshift",
              "and", "xor", "or")
DATA_MODEL = frozenset({
    *(f"__{p}{op}__" for op in _OPERATORS for p in ("", "r", "i")),
    "__new__", "__init__", "__del__", "__repr__", "__str__", "__bytes__", "__format__", "__lt__", "__le__", "__eq__",
    "__ne__", "__gt__", "__ge__", "__hash__", "__bool__", "__setattr__", "__delattr__", "__dir__", "__get__",
    "__set__", "__delete__", "__slots__", "__call__", "__len__", "__length_hint__", "__getitem__", "__setitem__",
    "__delitem__", "__missing__", "__iter__", "__next__", "__reversed__", "__contains__", "__neg__", "__pos__",
    "__abs__", "__invert__", "__complex__", "__int__", "__float__", "__index__", "__round__", "__trunc__",
    "__floor__", "__ceil__", "__enter__", "__exit__", "__await__", "__aiter__", "__anext__", "__aenter__",
    "__aexit__", "__class_getitem__", "__mro_entries__", "__post_init__", "__doc__", "__module__", "__qualname__",
    "__annotations__", "__match_args__", "__copy__", "__deepcopy__", "__reduce__", "__reduce_ex__",
    "__getstate__", "__setstate__", "__getnewargs__", "__getnewargs_ex__", "__sizeof__", "__name__", "__main__",
    "__all__", "__version__", "__file__", "__future__", "__dataclass_fields__"})
# of those, the methods through which Python's operators and builtins use an object (x + y is x.__add__(y), f(x) is
# f.__call__(x), len(x) is x.__len__()): what the object does, never its attributes by name, its class, its namespace
# or how it is copied and pickled; called by name (x.__add__(fx), super().__call__(x)) each does what its operator does
OPERATOR_METHODS = frozenset({
    *(f"__{p}{op}__" for op in _OPERATORS for p in ("", "r", "i")),
    "__repr__", "__str__", "__format__", "__bytes__", "__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__",
    "__hash__", "__bool__", "__call__", "__len__", "__getitem__", "__setitem__", "__delitem__", "__iter__", "__next__",
    "__reversed__", "__contains__", "__neg__", "__pos__", "__abs__", "__invert__", "__int__", "__float__", "__index__",
    "__enter__", "__exit__", "__post_init__"})
# the names through which torch makes a tensor whose memory it trusts the code with (rule unchecked-memory):
# every name of its sparse API holds "sparse" (sparse_coo_tensor, to_sparse, torch.sparse, the sparse_coo
# layout, Embedding's sparse=True), every storage's "storage" (untyped_storage(), UntypedStorage; its offset is
# a number), and a sparse tensor hands out its indices through a method whose name ends in "indices"
# where the embeddings take `sparse` by position (its keyword is the rule's by name)
SPARSE_AT = {"torch.nn.Embedding": 6, "torch.nn.EmbeddingBag": 6, "torch.nn.Embedding.from_pretrained": 6,
             "torch.nn.EmbeddingBag.from_pretrained": 6, "torch.nn.functional.embedding": 6,
             "torch.nn.functional.embedding_bag": 7}


def unchecked_memory(name: str) -> bool:
    """A name of torch's sparse or storage API; asking whether a tensor is sparse (is_sparse) makes none."""
    lower = name.lower()
    return not lower.startswith("is_") and ("sparse" in lower or "storage" in lower and lower != "storage_offset")


def _annotations(node) -> list:
    """The annotations a def's arguments and return, or an annotated assignment, declare."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [a.annotation for a in _arguments(node.args) if a.annotation is not None] + \
            ([node.returns] if node.returns is not None else [])
    return [node.annotation] if isinstance(node, ast.AnnAssign) else []


@functools.cache
def library_names() -> frozenset[str]:
    """The attribute names of torch, its tensors, storages, sparse and functional APIs and numpy's arrays: a name
    the notebook gives its own object (self.saved_storage, a method pair_indices) is its own unless a library
    has it too, whatever object it is read off (imported here, when first asked, not with the policy)."""
    import numpy
    import torch
    return frozenset(name for api in (torch, torch.Tensor, torch.UntypedStorage, torch.TypedStorage, torch.sparse,
                                      torch.nn.functional, numpy, numpy.ndarray) for name in dir(api))


@functools.cache
def dispatch_overrides() -> dict[int, str]:
    """id -> name of torch.overrides' own functions and classes (has_torch_function_unary, handle_torch_function,
    TorchFunctionMode), which torch.nn.functional and torch.autograd re-export under paths of their own: each
    tells code whether a torch function mode is active, or runs one (imported here, when first asked)."""
    import torch.overrides
    return {id(value): f"torch.overrides.{name}" for name, value in vars(torch.overrides).items()
            if not name.startswith("_") and callable(value) and
            getattr(value, "__module__", "") in ("torch.overrides", "torch._C")}


def _over_a_buffer(obj) -> bool:
    """numpy's ndarray, or a subclass of it built over a buffer or a file it is handed (recarray's buf,
    chararray's buffer, numpy.ma.mrecords.MaskedRecords, memmap), not over data it copies (MaskedArray, matrix)."""
    numpy = sys.modules.get("numpy")
    if numpy is None or not (isinstance(obj, type) and issubclass(obj, numpy.ndarray)):
        return False
    try:
        given = set(inspect.signature(obj.__new__).parameters)
    except (TypeError, ValueError):
        return True
    return bool(given & {"buf", "buffer", "filename", "args", "kwargs"})


# the contexts where type(x) is only read (its name, a comparison, isinstance's classes, a message), never
# called or kept: the metaclass it returns for a class builds a class from any namespace
_TYPE_READERS = frozenset({"isinstance", "issubclass", "print", "str", "repr", "format", "id", "hash"})
# namedtuple's own methods and attributes (_asdict, _replace, _make, _fields, ...), public though they start
# with an underscore, so that no field name can clash with them: taken from a namedtuple class itself
NAMEDTUPLE_API = frozenset(name for name in dir(collections.namedtuple("Row", "field"))
                           if name.startswith("_") and not name.startswith("__"))
TRANSFORMER = re.compile(r"^(Transformer(Encoder|Decoder)?(Layer)?|transformer)$")
ATTRIBUTE_FUNCS = ("getattr", "setattr", "delattr", "hasattr")
# typing's alias of the builtin type: what get_origin hands back for it, and what a class based on it subclasses
# (a metaclass), with no `type` written at all; get_args hands back only what the code wrote in the subscript
TYPE_ALIAS = "typing.Type"
CLASS_MAKER = "dataclasses.make_dataclass"
# torch's dict of parameters sets each key as an attribute of itself (setattr), a value that is no tensor in its
# __dict__: its keys are attribute names
KEYED_SETTER = "torch.nn.ParameterDict"
# what hands back an annotation as a value: typing.get_type_hints, a dataclass field's .type, a singledispatch
# function's registry
ANNOTATION_READERS = frozenset({"typing.get_type_hints", "dataclasses.fields", "functools.singledispatch",
                                "functools.singledispatchmethod"})
MAX_LITERAL_NUMBERS = 24     # more numbers than this in one literal container is a lookup table
# nn.Transformer.generate_square_subsequent_mask builds a causal mask: a static helper, not a layer
MASK_HELPER = ".generate_square_subsequent_mask"


def _mask_helper(path: str | None) -> bool:
    """The mask helper of a class that has it: the same name read off a Transformer class that lacks it raises
    AttributeError, whose .obj is the class (red team 39)."""
    return path is not None and path.endswith(MASK_HELPER) and named(path)[1] is not None


@dataclass(frozen=True)
class Policy:
    allowed_imports: frozenset[str]          # module names, exact ("torch.nn.functional")
    no_transformer_classes: bool = False     # assignment 1: build the block from parts
    extra_forbidden_paths: tuple[str, ...] = field(default=())


def for_assignment(rules: Rules) -> Policy:
    """The policy course.toml's [assignments.X.policy] table describes."""
    return Policy(frozenset(rules.allowed_imports), rules.no_transformer_classes, tuple(rules.forbidden_modules))


# ---------------------------------------------------------------------------- the whole notebook

def check_cells(cells: list[tuple[str, str, bool]], policy: Policy) -> list[Violation]:
    """Every violation in the student cells, in cell and line order."""
    ctx = Notebook(cells)
    reads = _reads_annotations(ctx)       # of the whole notebook, as Run All runs it: worked out once
    annotations = reads, set() if reads else _annotation_aliases(ctx)
    local, keyed = _bound_in_functions(ctx), _keyed_holders(ctx)
    out: list[Violation] = []
    for label, source, student in cells:
        if student and label in ctx.trees:
            try:
                out += _General(label, source, ctx, policy, annotations, local).run(ctx.trees[label])
            except RecursionError:
                out.append(_too_deep(label, source))
    out += _keyed_uses(ctx, keyed)
    try:
        out += check_kernels(ctx)
    except RecursionError:
        label = next(label for label, _, student in cells if student)
        out.append(_too_deep(label, ctx.sources[label]))
    # the message breaks ties: a set's order changes from one process to the next (hash randomisation)
    return sorted(set(out), key=lambda v: (ctx.order[v.cell], v.line, v.rule, v.message))


def _keyed_holders(ctx: Notebook) -> set[str]:
    """The names, and the attribute names (self.params), that any cell binds to torch's ParameterDict(...)."""
    out = set()
    for tree in ctx.trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call) and \
                    ctx.resolve(node.value.func) == KEYED_SETTER:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    out |= {t.id if isinstance(t, ast.Name) else t.attr for t in ast.walk(target)
                            if isinstance(t, (ast.Name, ast.Attribute))}
    return out


# the methods through which a dict, list or set of a library's changes (numpy.typecodes.update(...), the object
# looked up at its path: torch.add is no set's): a monkeypatch
CONTAINER_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert",
                                "remove", "add", "discard"})
# what may be done with a ParameterDict besides indexing it: read it, never hand it on or alias it (a helper, an alias
# or a dunder call would set its keys out of the policy's sight)
KEYED_READS = frozenset({"items", "keys", "values", "parameters", "named_parameters", "get"})
KEYED_READERS = frozenset({"len", "print", "str", "repr", "isinstance", "iter", "list", "dict", "sorted"})


def _keyed_uses(ctx: Notebook, keyed: set[str]) -> list[Violation]:
    """Every use of a ParameterDict, whose keys become attribute names of it: one is built only as the value
    bound to a name or an attribute, with no keys or a dict of plain keys (_plain_key), never held as a value
    (an alias, a partial); a holder of one (_keyed_holders) is indexed, given plain keys only, or read
    (KEYED_READS, KEYED_READERS, a loop, `in`), never updated, handed on or aliased (a list's item, `words |= {key:
    value}`, a helper handed it): each of those could set a key the policy cannot read."""
    out = []
    for label, tree in ctx.trees.items():
        if not ctx.student[label]:
            continue
        parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        for node in ast.walk(tree):
            parent = parents.get(id(node))
            why = None
            if isinstance(node, ast.Call) and ctx.resolve(node.func) == KEYED_SETTER:
                bound = isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node and all(
                    isinstance(t, (ast.Name, ast.Attribute)) for t in
                    (parent.targets if isinstance(parent, ast.Assign) else [parent.target]))
                plain = not node.keywords and len(node.args) <= 1 and all(
                    isinstance(a, ast.Dict) and all(k is not None and _plain_key(k) for k in a.keys) for a in node.args)
                why = None if bound and plain else "built other than as the value bound to a name or an attribute" \
                    if not bound else "given keys the policy cannot read"
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and \
                    ctx.resolve(node) == KEYED_SETTER and not (isinstance(parent, ast.Call) and parent.func is node):
                why = "held or passed on: whoever calls it names the keys"
            elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and \
                    _name_of(node.value) in keyed and not _plain_key(node.slice):
                why = "given a key the policy cannot read"
            elif isinstance(node, ast.AugAssign) and _name_of(node.target) in keyed:
                why = "updated in place"
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and \
                    _name_of(node) in keyed:
                read = isinstance(parent, ast.Subscript) and parent.value is node or \
                    isinstance(parent, ast.Attribute) and parent.attr in KEYED_READS and \
                    isinstance(parents.get(id(parent)), ast.Call) and parents[id(parent)].func is parent or \
                    isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node or \
                    isinstance(parent, ast.Compare) and node in parent.comparators or \
                    isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and \
                    parent.func.id in KEYED_READERS and node in parent.args or \
                    isinstance(parent, ast.Attribute) and isinstance(node, ast.Name) and node.id in ("self", "cls")
                why = None if read else "held, handed on or called on other than to read it"
            if why:
                out.append(Violation(label, node.lineno, "computed-attribute", WITHHOLD, f"a ParameterDict {why}: "
                                     "its keys are attribute names, which the policy reads only where it is built "
                                     "and indexed; write the keys out, or build them on a plain prefix "
                                     "(f\"alpha{i}\")", quote(ctx.sources[label], node.lineno)))
    return out


def _name_of(node) -> str | None:
    """The name a Name or an attribute (self.params) is read or bound under."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _plain_key(node) -> bool:
    """A key that can never be a dunder or a private name: a string written out that starts with a letter, or
    one built on such a prefix (f"alpha{i}", "w" + str(i))."""
    head = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else \
        node.left if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) else node
    return isinstance(head, ast.Constant) and _plain(head.value)


def _too_deep(label: str, source: str) -> Violation:
    """Nesting deeper than the checks can walk: the policy cannot vouch for the cell."""
    return Violation(label, 1, "too-deep", WITHHOLD, "the cell nests expressions too deeply for the policy to read "
                     "it", quote(source, 1))


def check(source: str, policy: Policy, label: str = "cell", trusted: list[tuple[str, str]] = ()) -> list[Violation]:
    """Violations of one student cell, with trusted cells (setup) read for their imports."""
    return check_cells([*((lbl, src, False) for lbl, src in trusted), (label, source, True)], policy)



def _annotation_aliases(ctx: Notebook) -> set[str]:
    """Module-level names bound once, to a subscript (BlockClass = type[nn.Module]), and read only in
    annotations, in every cell."""
    bound = collections.Counter(name for _, _, name in ctx.top_bindings)
    candidates = {b.targets[0].id for tree in ctx.trees.values() for b in tree.body
                  if isinstance(b, ast.Assign) and len(b.targets) == 1 and isinstance(b.targets[0], ast.Name) and
                  isinstance(b.value, ast.Subscript) and bound[b.targets[0].id] == 1}
    in_annotations = {id(n) for tree in ctx.trees.values() for node in ast.walk(tree) for a in _annotations(node)
                      for n in ast.walk(a)}
    read_elsewhere = {n.id for tree in ctx.trees.values() for n in ast.walk(tree) if isinstance(n, ast.Name) and
                      n.id in candidates and isinstance(n.ctx, ast.Load) and id(n) not in in_annotations}
    return candidates - read_elsewhere


def _reads_annotations(ctx: Notebook) -> bool:
    """Whether any cell uses what hands an annotation back as a value: ANNOTATION_READERS, dataclasses.fields
    only where some `.type` is read off an object and not called (field.type, a class pattern's type=;
    x.type(torch.float32) is a tensor's method)."""
    nodes = [n for tree in ctx.trees.values() for n in ast.walk(tree)]
    used = {ctx.resolve(n) for n in nodes if isinstance(n, (ast.Name, ast.Attribute))}
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    type_read = any(isinstance(n, ast.Attribute) and n.attr == "type" and id(n) not in called for n in nodes) or any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr" and len(n.args) > 1 and
        isinstance(n.args[1], ast.Constant) and n.args[1].value == "type" for n in nodes) or any(
        isinstance(n, ast.MatchClass) and "type" in n.kwd_attrs for n in nodes)     # case Field(type=T)
    return bool(used & ANNOTATION_READERS - {"dataclasses.fields"}) or "dataclasses.fields" in used and type_read


def _keywords(node: ast.Call) -> list[ast.keyword]:
    """A call's keywords, with those of a **{...} display whose keys are strings written out read as keywords
    (any other ** stays one keyword with no name)."""
    out = []
    for k in node.keywords:
        if k.arg is None and isinstance(k.value, ast.Dict) and _literal_names(k.value):
            out += [ast.copy_location(ast.keyword(arg=key.value, value=value), k)
                    for key, value in zip(k.value.keys, k.value.values)]
        else:
            out.append(k)
    return out


# functools' attribute copiers and how many arguments they take before assigned and updated: those name
# the attributes copied from one object to another
WRAPPER_COPIERS = {"functools.update_wrapper": 2, "functools.wraps": 1}


# a class body's tables of names, each of which becomes an attribute of the class or its instances
NAME_TABLES = ("__annotations__", "__slots__", "__match_args__")


def _literal_names(node) -> bool:
    """A string, or a dict display, tuple, list or set whose keys or items are all strings written out."""
    items = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) \
        else [node]
    return all(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in items)


def _constant(node) -> bool:
    """A literal number, string, bool or None (a negative number too)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and not isinstance(node.value, bytes)

MATCH_SUBJECT = "match subject"   # a match's subject in the reads its patterns make, where it is no path


def _is_path(node) -> bool:
    """A name, or attributes of one (torch.nn.functional)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _pattern_reads(pattern, subject) -> list[ast.expr]:
    """The attributes and items of `subject` that a match pattern reads, as expressions: a class pattern's
    keywords (case C(x=P): subject.x, then P's reads of it), a mapping pattern's keys (subject["k"]), a
    sequence pattern's items, through or-patterns and as-patterns."""
    at = lambda new: ast.copy_location(new, pattern)
    if isinstance(pattern, ast.MatchClass):
        reads = []
        for attr, sub in zip(pattern.kwd_attrs, pattern.kwd_patterns):
            read = at(ast.Attribute(value=copy.deepcopy(subject), attr=attr, ctx=ast.Load()))
            reads += [read, *_pattern_reads(sub, read)]
        return reads + [r for sub in pattern.patterns for r in _pattern_reads(sub, subject)]
    if isinstance(pattern, ast.MatchMapping):
        reads = []
        for key, sub in zip(pattern.keys, pattern.patterns):
            read = at(ast.Subscript(value=copy.deepcopy(subject), slice=copy.deepcopy(key), ctx=ast.Load()))
            reads += [read, *_pattern_reads(sub, read)]
        return reads
    if isinstance(pattern, ast.MatchSequence):
        return [r for i, sub in enumerate(pattern.patterns) for r in _pattern_reads(
            sub, at(ast.Subscript(value=copy.deepcopy(subject), slice=ast.Constant(i), ctx=ast.Load())))]
    if isinstance(pattern, ast.MatchOr):
        return [r for sub in pattern.patterns for r in _pattern_reads(sub, subject)]
    if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        return _pattern_reads(pattern.pattern, subject)
    return []


def _inert(node, ctx: Notebook, local: set[str]) -> bool:
    """An operand whose comparison methods are Python's or a library's, so that comparing with it hands the
    other operand to no code of the notebook's: a constant, what an import names, plain data, a builtin
    the notebook leaves alone, type(x), and displays of these (x in (int, float)); never a name some scope
    of the notebook binds (`local`: object = CATCH in a function)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_inert(e, ctx, local) for e in node.elts)
    root = node
    while isinstance(root, (ast.Attribute, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if isinstance(root, ast.Name) and root.id in local:
        return False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" and \
            len(node.args) == 1 and "type" not in ctx.bound:
        return True
    if isinstance(node, ast.Name) and node.id in vars(builtins) and node.id not in ctx.bound:
        return True
    return _constant(node) or ctx.resolve(node) is not None or isinstance(node, ast.Name) and node.id in ctx.data


def _compares_only(pattern, ctx: Notebook, local: set[str]) -> bool:
    """A case pattern that only compares the subject with values Python's or a library's own (case
    typing.Literal | None:), binding and reading nothing of it."""
    if isinstance(pattern, ast.MatchOr):
        return all(_compares_only(p, ctx, local) for p in pattern.patterns)
    if isinstance(pattern, ast.MatchValue):
        return _inert(pattern.value, ctx, local)
    return isinstance(pattern, ast.MatchSingleton) or isinstance(pattern, ast.MatchAs) and pattern.pattern is None \
        and pattern.name is None


@functools.lru_cache(maxsize=2)
def _loop_names(ctx: Notebook, local: frozenset[str]) -> dict[int, frozenset[str]]:
    """For each read of a name (by the id of its ast.Name) that finds it in a scope where only `for NAME in ("ln1",
    "ln2")` binds it (strings written out, in the loop or in a module-level tuple bound once: NAMES = ("weight",
    "bias")), the strings it takes. A parameter, a def, a match capture, an except or import name, or a loop over
    anything else in that scope (in any cell, the course's own too, where it is the module's), a global or nonlocal
    statement naming it anywhere, or a class body's scope (whose reads fall back to the module's) and it is none of
    them: getattr(o, name) could then read any attribute."""
    loops: dict[int, tuple[str, ...]] = {}
    for label, tree in ctx.trees.items():
        for node in ast.walk(tree) if ctx.student[label] else ():
            if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) and \
                    (names := _written_out(node.iter, ctx, local)):
                loops[id(node.target)] = names
    scopes = Scopes(ctx.trees.values())
    written = {key: frozenset(v for n in nodes for v in loops[id(n)]) for key, nodes in scopes.bindings.items()
               if key[1] not in scopes.declared and scopes.kinds[key[0]] is not ast.ClassDef and
               all(id(n) in loops for n in nodes)}
    return {read: written[key] for read, key in scopes.reads.items() if key in written}


@functools.lru_cache(maxsize=2)
def _base_names(ctx: Notebook) -> frozenset[str]:
    """The names (or last attributes) every class of the notebook names as a base: read once, not once for each
    frozen dataclass (2,000 of them held the grader's own process for a minute: red team 38)."""
    return frozenset(getattr(b, "id", None) or getattr(b, "attr", None) for tree in ctx.trees.values()
                     for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for b in c.bases
                     if isinstance(b, (ast.Name, ast.Attribute)))


@functools.lru_cache(maxsize=2)
def _reflects(ctx: Notebook) -> bool:
    """Whether a student cell names __radd__ or __rmod__ (a def, an attribute, a string): for "ln" + s and
    "ln%d" % s, Python calls a str subclass's own first, which may return any name (red team 38)."""
    names = {"__radd__", "__rmod__"}
    return any(getattr(node, "name", None) in names or getattr(node, "id", None) in names or
               getattr(node, "attr", None) in names or getattr(node, "arg", None) in names or
               isinstance(node, ast.Constant) and isinstance(node.value, str) and any(n in node.value for n in names)
               for label, tree in ctx.trees.items() if ctx.student[label] for node in ast.walk(tree))


def _written_out(node, ctx: Notebook, local: frozenset[str]) -> tuple[str, ...]:
    """The strings a loop over `node` takes, where they are written out: a tuple or list display of strings, or
    a module-level name bound once, to such a tuple, and nowhere else (no def binds it)."""
    if isinstance(node, ast.Name) and node.id not in local | ctx.global_names:
        bound = ctx.module_bindings.get(node.id, [])
        node = bound[0].value if len(bound) == 1 and isinstance(bound[0], ast.Assign) and \
            len(bound[0].targets) == 1 and isinstance(bound[0].value, ast.Tuple) else None
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts and \
            all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)
    return ()


def _bound_in_functions(ctx: Notebook) -> set[str]:
    """The names a def, lambda, class body or comprehension of the notebook binds: its parameters, assignments,
    loop and except targets, imports and match captures, which hide a module's or a builtin's name there."""
    local = set()
    for tree in ctx.trees.values():
        for scope in ast.walk(tree):
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, *COMPREHENSIONS)):
                for n in ast.walk(scope):
                    local.update(_bound_by(n))
    return local


# ---------------------------------------------------------------------------- rules for every cell

class _General(ast.NodeVisitor):
    """Imports, names and attributes that reach the process; monkeypatching; Transformer classes."""

    def __init__(self, label: str, source: str, ctx: Notebook, policy: Policy, annotations: tuple[bool, set[str]],
                 local: set[str]):
        """annotations: whether the notebook reads annotations back (_reads_annotations), and the names it binds
        to a type read only in annotations (_annotation_aliases); local: the names its defs bind
        (_bound_in_functions); keyed: those bound to a ParameterDict (_keyed_holders)."""
        self.label, self.source, self.ctx, self.policy = label, source, ctx, policy
        self.annotations, self.local = annotations, local
        self.found: list[Violation] = []
        self.scopes: list[set[str]] = []          # the local names of each enclosing function
        self.class_bodies: list[int] = []         # of each enclosing class body, how many functions enclose it

    def run(self, tree) -> list[Violation]:
        self._survey(tree)
        self._type_reads(tree, self.ctx, self.local, *self.annotations)
        self.visit(tree)
        return self.found

    @staticmethod
    def _type_reads(tree, ctx: Notebook, local: set[str], reads_annotations: bool, aliases: set[str]) -> None:
        """Marks each type(x) that is only read (type(x).__name__, type(a) is type(b), isinstance(y, type(x)),
        a message, a dict's key) and the builtin `type` as isinstance's class or an annotation's (unless the
        notebook reads annotations back): anything else that holds or calls it may hold a metaclass (rule
        protocol). A subscript keeps what it is given (typing.Optional[type], whose get_args is type), and so
        does a comparison other than `is` with an object of the notebook's (CATCH.__eq__(type) keeps type)."""
        def one_arg_type(n):
            return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "type" and \
                len(n.args) == 1 and not n.keywords

        def own_classes_in(fn) -> list:
            """Each type(self) in a plain method (no decorator) that never binds self again; the method walked once
            (once per call, 4,000 type(self) in one method held the grader's own process for minutes: red team
            38)."""
            if not fn.args.args or fn.decorator_list:
                return []
            first, nodes = fn.args.args[0].arg, list(ast.walk(fn))
            if any(isinstance(m, ast.Name) and m.id == first and not isinstance(m.ctx, ast.Load) for m in nodes):
                return []
            return [n for n in nodes if one_arg_type(n) and isinstance(n.args[0], ast.Name) and n.args[0].id == first]

        own_classes = {n for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for fn in cls.body
                       if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in own_classes_in(fn)}

        def mark(n, calls_only=False):
            for m in ([n, *n.elts] if isinstance(n, ast.Tuple) else [n]):
                m.class_read = m.class_read if calls_only and hasattr(m, "class_read") else not calls_only
                if one_arg_type(m) or not calls_only and isinstance(m, ast.Name) and m.id == "type":
                    m.type_read = True
        top = set(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                # an attribute read (type(x).__name__), never one set or deleted on the class, which changes it
                # for the whole process (type(kernel).run = f: a library's), nor its mro(), which hands out the
                # classes it derives from; only a method's own class, type(self), is the notebook's to change
                if isinstance(node.ctx, ast.Load) and node.attr != "mro" or node.value in own_classes:
                    mark(node.value)
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                identity = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
                for operand in operands:
                    if identity or all(_inert(o, ctx, local) for o in operands if o is not operand):
                        mark(operand)
            elif isinstance(node, ast.FormattedValue):
                mark(node.value)
            elif isinstance(node, ast.Subscript):
                mark(node.slice, calls_only=True)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _TYPE_READERS:
                for a in node.args:
                    mark(a)
            elif isinstance(node, ast.Call) and one_arg_type(node.func):
                node.func.type_read = True      # type(X)(name, bases, namespace): checked as a class built
                node.metaclass_call = True
            elif isinstance(node, ast.Match) and all(_compares_only(c.pattern, ctx, local) for c in node.cases):
                mark(node.subject)      # match typing.get_origin(hint): case typing.Literal: compared only
            written_once = [node.value] if isinstance(node, ast.Assign) and node in top and \
                len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id in aliases \
                else []     # BlockClass = type[nn.Module], read only in annotations: an annotation written once
            for annotation in _annotations(node) + written_once:   # a declaration (block_cls: type, -> type[...])
                for n in ast.walk(annotation):      # unless the notebook reads annotations back, to call them
                    n.class_read, n.read_back = not reads_annotations, reads_annotations
                    if isinstance(n, ast.Name) and n.id == "type":
                        n.type_read = not reads_annotations
        # origin = typing.get_origin(hint) (or ... or hint), then origin only compared as above, in this cell and
        # read in no other: a read too
        read_only: dict[str, bool] = {}     # per name, asked once: a name assigned n times and read n times is n
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if name not in read_only:
                    uses = ctx.loads.get(name, [])
                    read_only[name] = bool(uses) and all(ctx.trees[label] is tree and getattr(u, "class_read", False)
                                                         for u, label in uses)
                if read_only[name]:
                    for value in node.value.values if isinstance(node.value, ast.BoolOp) else [node.value]:
                        mark(value)

    def _unchecked(self, node, what: str, why: str = "a sparse tensor's indices and a storage's size are memory "
                   "torch trusts the code to keep in bounds; a solution uses dense tensors and their views") -> None:
        self.flag(node, "unchecked-memory", WITHHOLD, f"{what}: {why}")

    def _protocol(self, node, what: str) -> None:
        self.flag(node, "protocol", WITHHOLD, f"{what}: a library reads such a name off an object, and numpy "
                                              "builds an array at the raw address it names; use Python's own "
                                              "special methods and write each name out")

    def _bound(self, node) -> None:
        """The names a node binds other than by a plain name (an import's, a parameter's, an except's, a match
        capture's): each bound as an assignment binds it, in a class body the class's attribute."""
        for name in _bound_by(node):
            self._special(node, name, "a binding of")

    def visit_ExceptHandler(self, node):
        self._bound(node)
        self.generic_visit(node)

    def _special(self, node, name: str, what: str) -> None:
        """A special name bound or given as a keyword or a string: Python's own pass, and the override rule's."""
        if name in ("__getattr__", "__getattribute__"):
            self._protocol(node, f"{what} {name}, which answers every name a library asks for")
        elif name.startswith("__") and name.endswith("__") and len(name) > 4 and \
                name not in DATA_MODEL | OVERRIDE_DUNDERS | {"__dict__", *MODULE_PRIVATE}:
            self._protocol(node, f"{what} {name}, which is not one of Python's special names")

    def _namespace(self, node, namespace) -> None:
        """A class built at run time: its names must be ones the policy reads (a dict display or dict(...)
        with keywords, whose keys and keywords are then checked like any)."""
        display = isinstance(namespace, ast.Dict) and all(isinstance(k, ast.Constant) for k in namespace.keys)
        keywords = isinstance(namespace, ast.Call) and isinstance(namespace.func, ast.Name) and \
            namespace.func.id == "dict" and not namespace.args and all(k.arg is not None for k in namespace.keywords)
        if not (display or keywords):
            self._protocol(node, "a class built from a namespace the policy cannot read")

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            self._special(node, node.value, "the string")

    def visit_ClassDef_protocol(self, node) -> None:
        for b in node.bases:
            if isinstance(b, ast.Name) and b.id == "type":
                b.type_read = True      # said once, here
        if any(k.arg == "metaclass" for k in node.keywords) or \
                any(isinstance(b, ast.Name) and b.id == "type" or self.ctx.resolve(
                    b.value if isinstance(b, ast.Subscript) else b) == TYPE_ALIAS for b in node.bases):
            self._protocol(node, f"class {node.name} is or has a metaclass, which can build it from any names")

    def _survey(self, tree) -> None:
        """What the visit needs to know ahead: the names loops bind to strings written out (_loop_names), and those
        of them none of whose strings starts with _. The private names the student gives their own objects, which
        may be read back, are the notebook's (Notebook.own_private)."""
        self.own_private = self.ctx.own_private
        self.loop_names = _loop_names(self.ctx, frozenset(self.local))
        self.plain_names = {read for read, values in self.loop_names.items() if all(map(_plain, values))}
        self.reflects = _reflects(self.ctx)

    def flag(self, node, rule: str, severity: str, message: str) -> None:
        self.found.append(Violation(self.label, node.lineno, rule, severity, message, quote(self.source, node.lineno)))

    # -- imports
    def visit_Import(self, node):
        for a in node.names:
            self._module(node, a.name)
        self._bound(node)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        self._bound(node)
        if node.level:
            self.flag(node, "import", FLAG, "relative imports are not allowed in a notebook cell")
        elif any(a.name == "*" for a in node.names):
            self.flag(node, "import", WITHHOLD, f"'from {node.module} import *' hides which names the cell uses; "
                                                "import the names you need")
        else:
            if not all(f"{node.module}.{a.name}" in LIBRARY_LAUNCHERS for a in node.names):
                self._module(node, node.module)
            for a in node.names:
                if unchecked_memory(a.name):
                    self._unchecked(node, f"'{a.name}' from {node.module}")
                if a.name in PROCESS_MODULES | PROCESS_ATTRIBUTES or a.name.startswith("_"):
                    # from torch import sys, from torch.serialization import os: a library re-exports it
                    self.flag(node, "process-introspection", WITHHOLD,
                              f"'{a.name}' from {node.module} is the module or internal it re-exports, which "
                              "reaches the grading process; a solution needs none of it")
                self._path(node, f"{node.module}.{a.name}", imported_as=a.asname or a.name)
        self.generic_visit(node)

    def _mask_helper_only(self, name: str) -> bool:
        """Whether every read of this name in the notebook is name.generate_square_subsequent_mask (from torch.nn
        import Transformer, for its mask helper alone: red team 39, an honest block flagged)."""
        reads = [(n, parent) for tree in self.ctx.trees.values() for parent in ast.walk(tree)
                 for n in ast.iter_child_nodes(parent) if isinstance(n, ast.Name) and n.id == name and
                 isinstance(n.ctx, ast.Load)]
        return bool(reads) and all(isinstance(parent, ast.Attribute) and parent.value is n and
                                   parent.attr == MASK_HELPER[1:] for n, parent in reads)

    def _module(self, node, name: str, via: str | None = None):
        """An import of `name`, or `via`, a path that reaches that module as another's attribute
        (numpy.ma.core.np)."""
        root = name.split(".")[0]
        what = f"module '{name}'" if via is None else f"{via}, the module {name},"
        if name in HONEST_MODULES:
            return
        if unchecked_memory(name):
            self._unchecked(node, what)
        if root in PROCESS_MODULES or name in PROCESS_MODULES:
            self.flag(node, "process-introspection", WITHHOLD,
                      f"{what} reaches the grading process (files, frames, other modules); "
                      "a solution needs none of it")
        elif any(part.startswith("_") for part in name.split(".")):
            self.flag(node, "private-attribute", WITHHOLD,
                      f"{what} is a library's private module; use its public interface")
        elif (parent := next((p for p in self.policy.allowed_imports if name.startswith(f"{p}.")), None)) is not None:
            # a submodule of an allowed package is that package's path: `from torch.optim import SGD` is
            # torch.optim.SGD, read as the attribute path is
            reached = [part for part in name[len(parent) + 1:].split(".") if part in PROCESS_ATTRIBUTES]
            if reached:
                self.flag(node, "process-introspection", WITHHOLD, f"module '{name}': '.{reached[0]}' leads from "
                                                                   f"{parent} to the grading process; a solution "
                                                                   "needs none of it")
            else:
                self._path(node, name)
        elif name not in self.policy.allowed_imports:
            # the policy vouches only for the modules it lists: an installed library may write raw memory (cffi
            # casts a number to a pointer), and the standard library's helpers make attributes from data (enum's
            # functional API, argparse's Namespace), which numpy reads as an array interface
            self.flag(node, "import", WITHHOLD, f"{what} is not among this assignment's imports "
                                                f"({', '.join(sorted(self.policy.allowed_imports))})")
        else:
            self._path(node, name)

    # -- names and attributes
    # -- scopes: a function's parameters and assigned names are its own, whatever builtin they share a
    # name with (def forward(self, input)); Python never falls back to the builtin for them
    def visit_FunctionDef(self, node):
        self._special(node, node.name, "a def of")
        for d in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(d)
        self._in_scope(node, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(d)
        self._in_scope(node, [node.body])

    def _in_scope(self, node, body):
        own = _locals(node)
        # an import in the function binds a module there, as at the top (the policy reads its paths alike)
        imported = {name for n in ast.walk(node) if isinstance(n, ast.Import) for name in self.ctx.modules
                    if any((a.asname or a.name.split(".")[0]) == name for a in n.names)}
        self.scopes.append(own - imported)
        for stmt in body:
            self.visit(stmt)
        for a in _arguments(node.args):
            self._bound(a)
            if a.annotation is not None:
                self.visit(a.annotation)
        if getattr(node, "returns", None) is not None:
            self.visit(node.returns)
        self.scopes.pop()

    def _local(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def visit_ListComp(self, node):
        """A comprehension is a scope of its own: its targets hide a builtin's or a module's name inside it alone
        (Python 3), and its first iterable is read outside it."""
        first = node.generators[0]
        self.visit(first.iter)
        self.scopes.append({n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)})
        for g in node.generators:
            self.visit(g.target)
            if g is not first:
                self.visit(g.iter)
            for condition in g.ifs:
                self.visit(condition)
        for result in _results(node):
            self.visit(result)
        self.scopes.pop()

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_Name(self, node):
        self._held_maker(node)
        if not isinstance(node.ctx, ast.Load):
            self._special(node, node.id, "a binding of")
        elif node.id == "type" and not self._local(node.id) and getattr(node, "read_back", False):
            self._protocol(node, "the builtin type in an annotation the notebook reads back (dataclasses.fields, "
                                 "singledispatch): what reads it holds type, which builds a class from any names; "
                                 "annotate with typing.Type[...]")
        elif node.id == "type" and not self._local(node.id) and not getattr(node, "type_read", False) and \
                not getattr(node, "type_called", False):
            self._protocol(node, "the builtin type, held or passed on (it builds a class from any names)")
        elif node.id in ("getattr", "setattr", "delattr") and not self._local(node.id) and \
                not getattr(node, "attribute_called", False):
            self.flag(node, "computed-attribute", WITHHOLD,
                      f"{node.id} held or passed on: whoever calls it names an attribute out of the policy's sight (a "
                      f"sparse tensor's indices, numpy's __array_interface__); call {node.id}(obj, \"name\") itself")
        elif node.id in self.ctx.modules and not self._local(node.id) and not getattr(node, "attribute_base", False) \
                and not getattr(node, "called", False):
            # an import's name, in a function too: only ever read as module.NAME, or called, which a module cannot
            # be (a cell that binds the name again, F = lambda x: ..., calls its own)
            again = any(not isinstance(b, (ast.Import, ast.ImportFrom)) for b in self.ctx.module_bindings.get(node.id, []))
            self.flag(node, "process-introspection", WITHHOLD,
                      f"the module '{node.id}' held, passed or returned as a value: under another name the paths "
                      f"read off it (numpy.lib, torch.utils) are out of the policy's sight; write {node.id}.NAME" +
                      (f" (the notebook also binds '{node.id}' to something else, which the rules read as the module "
                       "all the same: give that another name)" if again else ""))
        if not self._local(node.id) and node.id in self.ctx.imported:
            self._array_class(node, self.ctx.imported[node.id])
        if self._local(node.id):
            pass
        elif node.id in FORBIDDEN_NAMES and not getattr(node, "function_locals", False):
            self.flag(node, "dynamic-code", WITHHOLD,
                      f"'{node.id}' runs code, opens files or exposes a namespace: not allowed in a solution")
        elif node.id in NAME_TABLES and not (isinstance(node.ctx, ast.Store) and getattr(node, "literal_names", False)):
            self._protocol(node, f"{node.id} other than set once to literal names: each name becomes an attribute "
                                 "(a dataclass's field, a slot), numpy's __array_interface__ among them")
        elif node.id == "__class__" and isinstance(node.ctx, ast.Load):
            self.flag(node, "dunder", WITHHOLD, "'__class__' exposes the class object: not allowed")
        self.generic_visit(node)

    def visit_Assign(self, node):
        if _constant(node.value):
            for target in node.targets:
                target.constant_value = True
        if _literal_names(node.value):
            for target in node.targets:
                target.literal_names = True
        self.generic_visit(node)

    def _changes_library(self, node, what: str) -> None:
        self.flag(node, "monkeypatch", FLAG, f"{what} changes a library for everyone in the process; define your own "
                                             "function, dict or list instead")

    def visit_Subscript(self, node):
        library = self.ctx.resolve(node.value)
        if isinstance(node.ctx, (ast.Store, ast.Del)) and library is not None:
            # numpy.typecodes["All"] = ...: an item of a library's own dict or list, as an attribute set on it
            self._changes_library(node, f"assigning to an item of {library}")
        self.generic_visit(node)

    def _held_maker(self, node) -> None:
        """make_dataclass read as a value (an alias, a partial, map's function): whoever calls it names the
        fields, out of the policy's sight (its call is read where it is written, visit_Call)."""
        if not isinstance(node.ctx, ast.Load) or getattr(node, "maker_called", False) or \
                isinstance(node, ast.Name) and self._local(node.id):
            return
        if self.ctx.resolve(node) == CLASS_MAKER:
            self._protocol(node, "dataclasses.make_dataclass held or passed on: whoever calls it builds a class from "
                                 "field names the policy cannot read; call it with literal names")

    def visit_Attribute(self, node):
        self._held_maker(node)
        attr = node.attr
        node.value.attribute_base = True
        library, path = self.ctx.resolve(node.value), self.ctx.resolve(node)
        if _mask_helper(path):
            node.value.mask_helper = True
        if path in LIBRARY_LAUNCHERS and isinstance(node.ctx, ast.Load):
            node.value.launcher_path = True     # the .library of torch.library.wrap_triton
        if isinstance(node.ctx, ast.Store) and getattr(node, "constant_value", False) and \
                (library or "").split(".")[:2] == ["torch", "backends"] and not attr.startswith("_"):
            # torch.backends.cudnn.deterministic = True: a switch torch documents for its users to set
            # (reproducibility, TF32), set to a literal, is configuration; it installs no code of the student's
            self.generic_visit(node)
            return
        if isinstance(node.ctx, (ast.Store, ast.Del)) and library is not None:
            # torch.allclose = ..., torch.Tensor.__eq__ = ...: it changes the library in this process only;
            # the grader's code in the child is bound to the originals, so it is a flag, not a way in
            self._changes_library(node, f"assigning to {library}.{attr}")
            self.generic_visit(node)
            return
        if attr in ("__name__", "__qualname__") and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "__class__" and isinstance(node.ctx, ast.Load):
            node.value.reads_name = True       # self.__class__.__name__: reading a name, not the class
        if attr.startswith("__") and attr.endswith("__") and attr not in SAFE_DUNDERS and \
                not getattr(node, "reads_name", False) and not getattr(node, "frozen_field", False) and \
                not (attr == "__class__" and getattr(node, "class_read", False)) and \
                attr not in OPERATOR_METHODS:
            self.flag(node, "dunder", WITHHOLD, f"'.{attr}' reaches an object's internals (its dict, class, code "
                                                "or globals): not allowed in a solution")
        elif attr in PROCESS_ATTRIBUTES and not getattr(node, "launcher_path", False):
            self.flag(node, "process-introspection", WITHHOLD,
                      f"'.{attr}' leads from this object to the grading process; a solution needs none of it")
        elif attr == "obj" and isinstance(node.ctx, ast.Load):
            # Python sets it on an AttributeError: the object whose attribute was missing, a module among them,
            # held where no rule reads its paths (red team 39: numpy.lib's as_strided through numpy.nope)
            self.flag(node, "process-introspection", WITHHOLD,
                      "'.obj' is, on an AttributeError, the object whose attribute was missing (a module, a "
                      "library class), out of the rules' sight; a solution needs none of it (an attribute of your own "
                      "needs another name)")
        elif unchecked_memory(attr) and not self._own_name(attr):
            self._unchecked(node, f"'.{attr}'")
        elif attr == "resize" and path != "numpy.resize" and not self._own_name(attr):
            self._unchecked(node, "'.resize', numpy's in-place resize", "it frees the data the array's views still "
                            "use whenever its reference count says none is left (a view reached as .base, a list "
                            "item popped); numpy.resize(a, shape) makes a new array")

        elif attr.startswith("_") and not attr.startswith("__") and not (
                self.ctx.resolve(node.value, imported=True) is None and
                (self._own_private(node) or attr in NAMEDTUPLE_API)):
            # a private name read off an import's path (torch._foo) is the library's, whatever the notebook defines
            self.flag(node, "private-attribute", WITHHOLD,
                      f"'.{attr}' is a private attribute of a library object; use its public interface")
        # an import's name a cell binds again may hold the module where this reads it (import numpy as N, N = None)
        if (path := path or self.ctx.resolve(node, imported=True)) is not None:
            self._path(node, path)
            self._array_class(node, path)
        self._transformer(node, attr)
        self.generic_visit(node)

    def _array_class(self, node, path: str) -> None:
        """numpy's array classes, and any class that builds classes (a metaclass: typing.ABCMeta), called or held
        under any path (numpy.ma.core.ndarray is numpy.ndarray); only read (isinstance's class, an annotation
        nothing reads back) they build nothing."""
        if getattr(node, "class_read", False) or getattr(node, "attribute_base", False):
            return
        canonical, obj = named(path)
        hit = next((p for p in ARRAY_MODULES if canonical == p or canonical.startswith(p + ".")), None)
        if hit is None and _over_a_buffer(obj):
            hit = path if canonical == f"numpy.{obj.__name__}" else f"{path}, numpy's {obj.__name__},"
        if hit is not None:
            self._unchecked(node, f"{hit} called or held", "it builds an array over any buffer, of objects too; "
                                  "build arrays with numpy.array, numpy.zeros and the like")
        elif isinstance(obj, type) and issubclass(obj, type):
            self._protocol(node, f"{path}, a metaclass, called or held (it builds a class from any names)")

    def _own_private(self, node) -> bool:
        return node.attr in self.own_private

    def _own_name(self, name: str) -> bool:
        """A name the notebook gives an object of its own that no library of the sparse and storage rule has."""
        return name in self.ctx.own_names and name not in library_names()

    def _path(self, node, path: str, imported_as: str | None = None):
        """What a dotted path reaches; imported_as: the name a `from` import binds it to."""
        canonical, obj = named(path)
        reexported = dispatch_overrides().get(id(obj)) if obj is not None and path.startswith("torch.") else None
        if reexported is not None and "overrides" not in path.split("."):
            self.flag(node, "process-introspection", WITHHOLD,
                      f"{path} is {reexported}: torch's dispatch to function modes, which tells code whether the "
                      "grader's is active; a solution needs none of it")
        # a module reached as another's attribute (numpy.ma.core.np, dataclasses.types) is judged as its import, and
        # so is a class or function of another package's (torch.amp.grad_scaler.Enum is enum.Enum); a C module's
        # leading underscore aside (functools.reduce comes from _functools), and nbtest's own stand-ins, which the
        # public tests' process has put in torch's place by then (torch.compile, torch.frombuffer) and the grader's
        # has not: the same code gets the same finding in both
        if canonical != path and isinstance(obj, types.ModuleType):
            self._module(node, canonical, via=path)
        home = getattr(obj, "__module__", None) if isinstance(obj, (type, types.FunctionType,
                                                                     types.BuiltinFunctionType)) else None
        if isinstance(home, str) and home.lstrip("_").split(".")[0] not in (path.split(".")[0], "builtins", "nbtest"):
            self._module(node, home.lstrip("_"), via=path)
        forbidden = PROCESS_PATHS + self.policy.extra_forbidden_paths
        hit = next((p for p in forbidden if any(q == p or q.startswith(p + ".") for q in (path, canonical))), None)
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
                and not _mask_helper(path) and not (imported_as and _mask_helper(path + MASK_HELPER) and
                                                    self._mask_helper_only(imported_as)):
            self.flag(node, "transformer-class", FLAG, f"{path}: build TransformerBlock from its parts "
                                                       "(attn, ln1, ln2, ffn), not from torch's Transformer classes")

    def _transformer(self, node, attr: str):
        """Transformer classes reached without an import alias (some_module.TransformerEncoderLayer)."""
        if self.policy.no_transformer_classes and self.ctx.resolve(node) is None and TRANSFORMER.match(attr) \
                and attr != "transformer" and not isinstance(node.ctx, ast.Store):
            self.flag(node, "transformer-class", FLAG, f"'.{attr}': build TransformerBlock from its parts")

    # -- calls: getattr family, object.__setattr__
    def visit_Call(self, node):
        node.func.called = True
        func = node.func.id if isinstance(node.func, ast.Name) and not self._local(node.func.id) else None
        if isinstance(node.func, ast.Attribute) and node.func.attr in CONTAINER_MUTATORS and \
                (library := self.ctx.resolve(node.func.value)) is not None and \
                isinstance(named(library)[1], (dict, list, set)):
            self._changes_library(node, f"{library}.{node.func.attr}(...)")
        for k in _keywords(node):
            if k.arg is not None:
                self._special(k, k.arg, "the keyword")
                if k.arg == "unsafe" and not (isinstance(k.value, ast.Constant) and k.value.value is False):
                    self._unchecked(k, "unsafe=", "it skips the operator's checks of its offsets or indices, which "
                                    "then reach any memory of the process; leave it out")
                elif unchecked_memory(k.arg) and not (isinstance(k.value, ast.Constant) and k.value.value is False):
                    self._unchecked(k, f"the keyword {k.arg}")
        if self.ctx.resolve(node.func) in WRAPPER_COPIERS and (len(node.args) > WRAPPER_COPIERS[
                self.ctx.resolve(node.func)] or any(k.arg is None or k.arg in ("assigned", "updated") and
                                                     not _literal_names(k.value) for k in node.keywords)):
            self.flag(node, "computed-attribute", WITHHOLD,
                      "functools.update_wrapper or wraps with names the policy cannot read: it copies attributes "
                      "by those names, a getattr and a setattr out of the policy's sight; name them in a literal")
        for k in node.keywords:
            if k.arg is None and isinstance(k.value, ast.Dict) and not _literal_names(k.value):
                self.flag(k.value, "computed-attribute", WITHHOLD,
                          "a ** display with a computed key names a keyword out of the policy's sight (resize's "
                          "refcheck, sparse); write each keyword out")

        method = node.func.attr if isinstance(node.func, ast.Attribute) and self.ctx.resolve(node.func) is None else \
            node.args[1].value if func in ATTRIBUTE_FUNCS and len(node.args) > 1 and \
            isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) else ""
        if method.endswith("indices") and not self._own_name(method):
            # a sparse tensor's indices() (crow_indices(), ...) hands out the index tensor torch trusts; a
            # library's function (torch.triu_indices) and a result's field (topk(...).indices) are not calls of it
            self._unchecked(node, f"'.{method}()', a sparse tensor's own indices")
        at = SPARSE_AT.get(self.ctx.resolve(node.func) or "")
        if at is not None and len(node.args) > at and not (
                isinstance(node.args[at], ast.Constant) and node.args[at].value is False):
            self._unchecked(node, "an embedding's sparse argument, given by position: its gradient is a sparse tensor")
        if func in ATTRIBUTE_FUNCS:
            node.func.attribute_called = True
        if self.ctx.resolve(node.func) == "typing.get_origin" and not getattr(node, "class_read", False):
            self._protocol(node, "typing.get_origin() held or called on: it hands back the class a type alias stands "
                                 "for, the builtin type for typing.Type, which builds a class from any names; compare "
                                 "it (get_origin(hint) is typing.Literal)")
        if func == "type":
            node.func.type_called = True
            if len(node.args) == 1 and not node.keywords:
                if not getattr(node, "type_read", False):
                    self._protocol(node, "type(x) held, called or given an attribute: for a class it is its "
                                         "metaclass, which builds a class from any names, and an attribute set on "
                                         "it changes that class for the whole process (a library's)")
            elif len(node.args) == 3 and not node.keywords:
                self._namespace(node, node.args[2])
            else:
                self._protocol(node, "a class built by type() from arguments the policy cannot read")
        elif getattr(node, "metaclass_call", False):
            if len(node.args) == 3 and not node.keywords:
                self._namespace(node, node.args[2])
            else:
                self._protocol(node, "a call of type(x) with arguments the policy cannot read (a metaclass's call)")
        elif self.ctx.resolve(node.func) == CLASS_MAKER:
            node.func.maker_called = True
            fields = node.args[1] if len(node.args) > 1 else None
            names = [f.elts[0] if isinstance(f, ast.Tuple) and f.elts else f
                     for f in (fields.elts if isinstance(fields, (ast.List, ast.Tuple)) else [])]
            if fields is None or not isinstance(fields, (ast.List, ast.Tuple)) or \
                    not all(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in names) or \
                    any(k.arg is None for k in node.keywords):
                self._protocol(node, "make_dataclass with field names the policy cannot read")
            for k in node.keywords:
                if k.arg == "namespace":
                    self._namespace(node, k.value)
        if func == "locals" and self.scopes and self.class_bodies[-1:] != [len(self.scopes)] and not node.args \
                and not node.keywords:
            # locals() called in a function (a debug print) is that call's own names, never the module's
            # namespace and its builtins, which module-level locals() is, nor a class body's namespace, whose
            # keys become the class's attributes; the name itself is still flagged
            node.func.function_locals = True
        if func in ATTRIBUTE_FUNCS:
            name = node.args[1] if len(node.args) > 1 else None
            own = self._own_computed(node.args[0], name)
            # the names it reads where they are written out: a string, or the strings a loop takes (for name in
            # ("weight", "bias"): getattr(layer, name) reads what layer.weight and layer.bias do)
            written = ((name.value,) if isinstance(name, ast.Constant) and isinstance(name.value, str) else
                       sorted(self.loop_names[id(name)]) if id(name) in self.loop_names
                       else None)
            if any(isinstance(a, ast.Starred) for a in node.args) or (written is None and func != "hasattr"
                                                                      and not own):
                self.flag(node, "computed-attribute", WITHHOLD,
                          f"{func}() with a computed name can reach anything; write the attribute out, loop over "
                          f"names written out (for name in (\"weight\", \"bias\")), or build the name on self from "
                          f"a plain prefix: getattr(self, f\"ln{{i}}\")")
            elif written is not None and not own:
                for value in written:
                    # hasattr(x, "__call__") answers whether, never what: Python's own special names may be asked for
                    if not (func == "hasattr" and value in DATA_MODEL):
                        self._literal_attribute(node, func, value)
        self.generic_visit(node)

    def _own_computed(self, target, name) -> bool:
        """getattr(self, f"ln{i}"), setattr(self, "block" + str(i), ...), "ln%d" % i, "ln{}".format(i), or a name a
        for loop takes from literal strings: an attribute of the student's own object that can never be a dunder or
        private (a literal's first character, a letter, begins it)."""
        if not (isinstance(target, ast.Name) and target.id in ("self", "cls")) or name is None:
            return False
        if isinstance(name, ast.Name):
            return id(name) in self.plain_names
        head = name
        while isinstance(head, ast.BinOp) and isinstance(head.op, (ast.Add, ast.Mod)) and not self.reflects:
            head = head.left
        head = head.values[0] if isinstance(head, ast.JoinedStr) and head.values else \
            head.func.value if isinstance(head, ast.Call) and isinstance(head.func, ast.Attribute) and \
            head.func.attr == "format" else head
        # a literal alone is read as the attribute it names (_literal_attribute), with every attribute rule
        return head is not name and isinstance(head, ast.Constant) and _plain(head.value)

    def _literal_attribute(self, node, func: str, attr: str):
        fake = ast.Attribute(value=node.args[0], attr=attr,
                             ctx=ast.Store() if func in ("setattr", "delattr") else ast.Load())
        ast.copy_location(fake, node)
        fake.alone = True      # its object is visited once, as the call's argument
        self.visit_Attribute(fake)

    def generic_visit(self, node):
        """Each node's children, but not those of getattr's attribute read as obj.name (_literal_attribute): visited
        there too, getattr(getattr(...)) nested n deep was walked 2 ** n times."""
        if not getattr(node, "alone", False):
            super().generic_visit(node)

    # -- a frozen dataclass's derived fields: object.__setattr__(self, "name", value) in __post_init__
    def _frozen_dataclass(self, node: ast.ClassDef) -> bool:
        """A class decorated @dataclass(frozen=True) alone, with no base, keyword or subclass in the notebook: its
        __post_init__ runs only from its own generated __init__ (calling it by name is a dunder read), on an
        instance of it, a plain object, so setting a field there with object.__setattr__ sets nothing else."""
        if node.bases or node.keywords or len(node.decorator_list) != 1:
            return False
        d = node.decorator_list[0]
        if not (isinstance(d, ast.Call) and self.ctx.resolve(d.func) == "dataclasses.dataclass" and not d.args and
                any(k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
                    for k in d.keywords)):
            return False
        return node.name not in _base_names(self.ctx)

    def _frozen_fields(self, method: ast.FunctionDef) -> None:
        """Marks each object.__setattr__(self, "field", value) in this __post_init__ (not in a nested def): self
        its first parameter, never rebound, the name written out and plain, `object` the builtin."""
        params = _arguments(method.args)
        own = _locals(method)
        if not params or "object" in own or "object" in self.ctx.bound:
            return
        first = params[0].arg
        if any(isinstance(n, ast.Name) and n.id == first and not isinstance(n.ctx, ast.Load) for n in ast.walk(method)):
            return
        todo = list(method.body)
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__setattr__" and \
                    isinstance(n.func.value, ast.Name) and n.func.value.id == "object" and not n.keywords and \
                    len(n.args) == 3 and isinstance(n.args[0], ast.Name) and n.args[0].id == first and \
                    isinstance(n.args[1], ast.Constant) and _plain(n.args[1].value) and \
                    not any(isinstance(a, ast.Starred) for a in n.args):
                n.func.frozen_field = True
            todo += ast.iter_child_nodes(n)

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
    def visit_Match(self, node):
        """A case's patterns read what they match: a class pattern's keywords are attributes of the subject, a
        mapping pattern's keys its items, each checked as that attribute or item written out would be
        (case object(__class__=C) is C = subject.__class__). The subject is itself where it is a path
        (match torch.nn.functional: ...), else a name of nothing."""
        subject = node.subject if _is_path(node.subject) else ast.Name(id=MATCH_SUBJECT, ctx=ast.Load())
        for case in node.cases:
            for read in _pattern_reads(case.pattern, subject):
                self.visit(ast.fix_missing_locations(ast.copy_location(read, case.pattern)))
            for pattern in ast.walk(case.pattern):
                self._bound(pattern)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        self._special(node, node.name, "a class named")
        self.visit_ClassDef_protocol(node)
        if self._frozen_dataclass(node):
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == "__post_init__":
                    self._frozen_fields(stmt)
        # every name the body binds, however (an annotation, a walrus, a loop's target): each is the class's
        for stmt, name in _bindings(node.body):
            if name == "__dict__":
                self.flag(stmt, "dunder", WITHHOLD, "a class body that binds __dict__ hands that object to whatever "
                                                    "reads an instance's namespace (functools.update_wrapper copies "
                                                    "it): not allowed in a solution")
            elif name in OVERRIDE_DUNDERS or name in MODULE_PRIVATE:
                self.flag(stmt, "override", FLAG, f"defining {name} changes how torch or isinstance see "
                                                  "your objects; a solution returns plain tensors and modules")
        self.class_bodies.append(len(self.scopes))
        self.generic_visit(node)
        self.class_bodies.pop()
