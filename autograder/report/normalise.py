"""A student's code as token streams that say what it does, not how it is typed.

    units("def f(x):\\n    return 1 + x\\n", names_of(release_code))    # the release defines f
    -> [Unit(name="f", tokens=("DEF", "RETURN", "Add", "(", "N", "V", ")"), lines=(1, 2, 2, 2, 2, 2, 2))]

MOSS and JPlag compare token streams rather than text for the same reason: an edit that leaves
behaviour alone should leave the stream alone. Here, from Python's own ast:
- comments, docstrings, imports, annotations and no-op statements (pass, ..., a bare name or
  constant, x = x) are gone; so is dead code: what follows a return, raise, break or continue,
  the branch a constant if or while never takes, assignments nothing reads (of values with no
  call), and top-level functions nothing calls;
- a loop that only appends to the list (sets items of the dict, adds to the 0) made just before
  it is that comprehension (that sum); a name assigned and read once, in the next statement, is
  inlined; a, b = c, d is two assignments and x += y is x = x + y;
- every name the student binds (parameters, locals, helpers, their own attributes) is V, every
  number N and string S (formatted strings too); names the release defines and library calls
  stay as written; operands of commutative operators and keyword arguments are sorted.
Each function (each method, each nested def, a class's other statements, the module's other
statements) is a unit of its own, so reordering them, or moving them between cells, changes nothing.
"""
from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize
from collections import Counter
from dataclasses import dataclass

from nbtest.cellsource import MAX_BRACES

NAME, NUMBER, STRING = "V", "N", "S"
COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
SYMMETRIC = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
FLIPPED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}           # a > b is b < a
INVERSE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn,
           ast.NotIn: ast.In, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt}
TERMINAL = (ast.Return, ast.Raise, ast.Break, ast.Continue)
SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.FunctionDef,
          ast.AsyncFunctionDef, ast.ClassDef)
# a line that does not parse (a typo) is blanked and parsing retried, this many times at most: each parse reads all
# the student's code (up to course.toml's bounds)
PARSE_TRIES = 16


@dataclass(frozen=True)
class Unit:
    name: str                    # "Class.method", "function", "Class", "<module>"
    tokens: tuple[str, ...]
    lines: tuple[int, ...]       # the code's line (1-based) each token comes from


def names_of(release_code: str) -> set[str]:
    """Every identifier-like word of the release's code, docstrings included: the names it prescribes."""
    return set(re.findall(r"[A-Za-z_]\w*", release_code)) | set(dir(builtins))


def units(code: str, prescribed: set[str]) -> list[Unit]:
    """The code's units, normalised; names in `prescribed` (names_of the release) are kept unless the code binds
    them. Code that does not parse, or nests deeper than Python's recursion limit, is one unit of its raw tokens."""
    tree = parse(code)
    try:
        return _units(tree, prescribed) if tree is not None else [_raw(code)]
    except RecursionError:
        return [_raw(code)]


def _units(tree: ast.Module, prescribed: set[str]) -> list[Unit]:
    names = _Names()
    names.visit(tree)
    top = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    norm = _Normaliser(names, prescribed)
    body = [s for s in norm.block(tree.body)
            if not (isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name not in prescribed
                    and names.loaded[s.name] == 0)]            # a helper nothing calls is dead code
    module = ast.Module(body=body, type_ignores=[])
    inline(module, names.loaded)               # the reads before normalising: no fewer than after
    emit = _Emitter(names.bound - (top & prescribed), names.stored_attrs - prescribed)
    emit.unit("<module>", module.body)
    return [u for u in emit.units if u.tokens]


def parse(code: str) -> ast.Module | None:
    """The code's ast, with lines that do not parse blanked; None when that does not help."""
    if code.count("{") > MAX_BRACES:   # as no cell of it parses in the grader: compared as typed
        return None
    lines = code.split("\n")
    for _ in range(PARSE_TRIES):
        try:
            return ast.parse("\n".join(lines))
        except SyntaxError as e:
            if not e.lineno or e.lineno > len(lines) or not lines[e.lineno - 1].strip():
                break
            lines[e.lineno - 1] = ""
        except (ValueError, RecursionError, MemoryError):
            break
    return None


def _raw(code: str) -> Unit:
    """The code's tokens as typed, names V, numbers N and strings S, comments left out."""
    tokens: list[tuple[str, int]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
                word = {tokenize.NUMBER: NUMBER, tokenize.STRING: STRING}.get(tok.type, tok.string)
                tokens.append((NAME if tok.type == tokenize.NAME and not keyword.iskeyword(word) else word,
                               tok.start[0]))
    except (tokenize.TokenError, SyntaxError):
        pass                                    # what came before the error is kept
    return Unit("<unparsed>", tuple(w for w, _ in tokens), tuple(line for _, line in tokens))


class _Names(ast.NodeVisitor):
    """What the code binds and reads: names (with how often each is read) and attributes it assigns.
    Imported names are not bound here: a library's name stays as written."""

    def __init__(self):
        self.bound: set[str] = set()
        self.loaded: Counter[str] = Counter()
        self.stored_attrs: set[str] = set()

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.loaded[node.id] += 1
        else:
            self.bound.add(node.id)

    def visit_arg(self, node):
        self.bound.add(node.arg)

    def visit_Attribute(self, node):
        if not isinstance(node.ctx, ast.Load):
            self.stored_attrs.add(node.attr)
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        self.bound.add(node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_ExceptHandler(self, node):
        if node.name:
            self.bound.add(node.name)
        self.generic_visit(node)


def _pure(e: ast.expr) -> bool:
    """An expression with no call, subscript or await in it: evaluating it does nothing."""
    return not any(isinstance(n, (ast.Call, ast.Subscript, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr))
                   for n in ast.walk(e))


def _constant(e: ast.expr) -> tuple[bool, object]:
    """(is it a constant, its value)."""
    if isinstance(e, ast.Constant):
        return True, e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not) and isinstance(e.operand, ast.Constant):
        return True, not e.operand.value
    return False, None


def _load(target: ast.expr) -> ast.expr:
    node = ast.parse(ast.unparse(target), mode="eval").body
    return ast.copy_location(node, target)


class _Normaliser:
    """Statements in, fewer and plainer statements out (the rules in the module's docstring)."""

    def __init__(self, names: _Names, prescribed: set[str]):
        self.names, self.prescribed = names, prescribed
        self.in_function = False

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out += self.stmt(s)
            if out and isinstance(out[-1], TERMINAL):
                break                                   # the rest never runs
        return self._comprehensions(out)

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, (ast.Pass, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)):
            return []
        if isinstance(s, ast.Expr):
            return [] if _pure(s.value) else [s]
        if isinstance(s, ast.Assert):
            known, value = _constant(s.test)
            return [] if known and value else [s]
        if isinstance(s, ast.AnnAssign):
            return [] if s.value is None else self.stmt(ast.copy_location(ast.Assign([s.target], s.value), s))
        if isinstance(s, ast.AugAssign):
            value = ast.copy_location(ast.BinOp(_load(s.target), s.op, s.value), s.value)
            return self.stmt(ast.copy_location(ast.Assign([s.target], value), s))
        if isinstance(s, ast.Assign):
            return self._assign(s)
        if isinstance(s, ast.ClassDef):
            s.body = self.block(s.body)
            return [s]
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outer, self.in_function = self.in_function, True
            s.body = self.block(s.body)
            self.in_function = outer
            inline(s)
            return [s]
        if isinstance(s, (ast.If, ast.While)):
            known, value = _constant(s.test)
            if known:
                if not value:
                    return self.block(s.orelse)
                if isinstance(s, ast.If):
                    return self.block(s.body)
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            if isinstance(s, ast.If) and s.orelse and isinstance(s.test, ast.UnaryOp) \
                    and isinstance(s.test.op, ast.Not):
                s.test, s.body, s.orelse = s.test.operand, s.orelse, s.body      # if not c: A else: B
            if not s.body and not s.orelse:
                return [] if _pure(s.test) else [ast.copy_location(ast.Expr(s.test), s)]
            if not s.body:
                s.test = ast.copy_location(ast.UnaryOp(ast.Not(), s.test), s.test)
                s.body, s.orelse = s.orelse, []
            return [s]
        if isinstance(s, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            s.body = self.block(s.body)
            if isinstance(s, (ast.For, ast.AsyncFor)):
                s.orelse = self.block(s.orelse)
            return [s] if s.body else []
        if isinstance(s, ast.Try):
            s.body, s.orelse, s.finalbody = self.block(s.body), self.block(s.orelse), self.block(s.finalbody)
            for h in s.handlers:
                h.body = self.block(h.body)
            return [s] if s.body else s.finalbody
        return [s]

    def _assign(self, s: ast.Assign) -> list[ast.stmt]:
        if len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple) and isinstance(s.value, ast.Tuple) \
                and len(s.targets[0].elts) == len(s.value.elts) \
                and not any(isinstance(t, ast.Starred) for t in s.targets[0].elts):
            return [a for t, v in zip(s.targets[0].elts, s.value.elts)
                    for a in self._assign(ast.copy_location(ast.Assign([t], v), s))]
        names = [t.id for t in s.targets if isinstance(t, ast.Name)]
        if len(names) == len(s.targets) and _pure(s.value):
            # a module-level name the release mentions may be read by the tests
            if all(self.names.loaded[n] == 0 and (self.in_function or n not in self.prescribed) for n in names):
                return []                               # nothing reads it
            if isinstance(s.value, ast.Name) and names == [s.value.id]:
                return []                               # x = x
        return [s]

    def _comprehensions(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """v = [] / {} / 0 followed by a loop that only appends to v (sets v[k], adds to v): one comprehension."""
        out: list[ast.stmt] = []
        for s in stmts:
            prev = out[-1] if out else None
            made = prev is not None and isinstance(prev, ast.Assign) and len(prev.targets) == 1 \
                and isinstance(prev.targets[0], ast.Name)
            comp = made and isinstance(s, ast.For) and self._as_comprehension(prev.targets[0].id, prev.value, s)
            if comp:
                prev.value = ast.copy_location(comp, prev.value)
            else:
                out.append(s)
        return out

    @staticmethod
    def _as_comprehension(var: str, start: ast.expr, loop: ast.For) -> ast.expr | None:
        generators = []
        s: ast.stmt = loop
        while True:
            if isinstance(s, ast.For) and not s.orelse and len(s.body) == 1:
                generators.append(ast.comprehension(s.target, s.iter, [], 0))
            elif isinstance(s, ast.If) and not s.orelse and len(s.body) == 1 and generators:
                generators[-1].ifs.append(s.test)
            else:
                break
            s = s.body[0]
        if not generators:
            return None
        is_var = lambda e: isinstance(e, ast.Name) and e.id == var
        empty_list = isinstance(start, ast.List) and not start.elts
        empty_dict = isinstance(start, ast.Dict) and not start.keys
        if empty_list and isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) \
                and isinstance(s.value.func, ast.Attribute) and s.value.func.attr == "append" \
                and is_var(s.value.func.value) and len(s.value.args) == 1:
            return ast.ListComp(s.value.args[0], generators)
        if not isinstance(s, ast.Assign) or len(s.targets) != 1:
            return None
        target, value = s.targets[0], s.value
        if empty_dict and isinstance(target, ast.Subscript) and is_var(target.value):
            return ast.DictComp(target.slice, value, generators)
        if isinstance(start, ast.Constant) and start.value == 0 and is_var(target) \
                and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and is_var(value.left):
            return ast.Call(ast.Name("sum", ast.Load()), [ast.GeneratorExp(value.right, generators)], [])
        return None


def inline(scope: ast.AST, reads: Counter | None = None) -> None:
    """v = e; f(v) -> f(e) in every block of a normalised function (or module), when v is a name
    assigned in the block and read once in all the scope (`reads`, counted here by default), in the next statement."""
    if reads is None:
        reads = Counter(n.id for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    blocks = [scope]
    while blocks:
        node = blocks.pop()
        for field in ("body", "orelse", "finalbody", "handlers"):
            value = getattr(node, field, None)
            if not isinstance(value, list) or not value or not isinstance(value[0], (ast.stmt, ast.excepthandler)):
                continue
            if isinstance(value[0], ast.stmt):
                setattr(node, field, _inline_block(value, reads))
            blocks += [s for s in getattr(node, field) if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _inline_block(stmts: list[ast.stmt], reads: Counter) -> list[ast.stmt]:
    out = list(stmts)
    i = 0
    while i < len(out) - 1:
        s, nxt = out[i], out[i + 1]
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                and isinstance(nxt, (ast.Return, ast.Assign, ast.Expr, ast.Raise)) \
                and reads[s.targets[0].id] == 1 and _replace(nxt, s.targets[0].id, s.value):
            del out[i]
            i = max(i - 1, 0)
        else:
            i += 1
    return out


def _replace(stmt: ast.stmt, var: str, value: ast.expr) -> bool:
    """Put value in place of the one read of var in stmt (outside any nested scope); False when there is none."""
    found = []

    def walk(node):
        for field, child in ast.iter_fields(node):
            items = child if isinstance(child, list) else [child]
            for k, item in enumerate(items):
                if isinstance(item, ast.Name) and item.id == var and isinstance(item.ctx, ast.Load):
                    found.append((node, field, k if isinstance(child, list) else None))
                elif isinstance(item, ast.AST) and not isinstance(item, SCOPES):
                    walk(item)
    walk(stmt)
    if len(found) != 1:
        return False
    node, field, k = found[0]
    if k is None:
        setattr(node, field, value)
    else:
        getattr(node, field)[k] = value
    return True


class _Emitter:
    """Normalised statements to tokens, one Unit per function, class body and module body."""

    def __init__(self, abstract_names: set[str], abstract_attrs: set[str]):
        self.abstract_names, self.abstract_attrs = abstract_names, abstract_attrs
        self.units: list[Unit] = []
        self.line = 1                 # the line of the statement being emitted

    def unit(self, name: str, body: list[ast.stmt], head: list[tuple[str, int]] = ()) -> None:
        """The unit `name` from its body's statements; the definitions in it become units after it."""
        nested: list[ast.stmt] = []
        tokens = list(head)
        for s in body:
            tokens += self.stmt(s, nested)
        self.units.append(Unit(name, tuple(w for w, _ in tokens), tuple(line for _, line in tokens)))
        for s in nested:
            label = s.name if name == "<module>" else f"{name}.{s.name}"
            kind = "CLASS" if isinstance(s, ast.ClassDef) else "DEF"
            bases = [x for b in getattr(s, "bases", []) for x in self.expr(b)]
            decorators = [x for d in s.decorator_list for x in [("@", d.lineno), *self.expr(d)]]
            self.unit(label, s.body, [(kind, s.lineno), *bases, *decorators])

    def stmt(self, s: ast.stmt, nested: list) -> list[tuple[str, int]]:
        """Tokens of one statement; a definition has none here: it is queued in `nested`, a unit of its own."""
        at = self.line = s.lineno
        t = lambda *words: [(w, at) for w in words]
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            nested.append(s)
            return []
        if isinstance(s, ast.Return):
            return t("RETURN") + (self.expr(s.value) if s.value else [])
        if isinstance(s, ast.Assign):
            out = []
            for target in s.targets:
                out += self.expr(target) + t("=")
            return out + self.expr(s.value)
        if isinstance(s, ast.Expr):
            return self.expr(s.value)
        if isinstance(s, (ast.For, ast.AsyncFor)):
            return (t("FOR") + self.expr(s.target) + t("IN") + self.expr(s.iter) + self.block(s.body, nested)
                    + (t("ELSE") + self.block(s.orelse, nested) if s.orelse else []))
        if isinstance(s, (ast.If, ast.While)):
            return (t("IF" if isinstance(s, ast.If) else "WHILE") + self.expr(s.test)
                    + self.block(s.body, nested)
                    + (t("ELSE") + self.block(s.orelse, nested) if s.orelse else []))
        if isinstance(s, (ast.With, ast.AsyncWith)):
            out = t("WITH")
            for item in s.items:
                out += self.expr(item.context_expr) + (self.expr(item.optional_vars) if item.optional_vars else [])
            return out + self.block(s.body, nested)
        if isinstance(s, ast.Raise):
            return t("RAISE") + (self.expr(s.exc) if s.exc else [])
        if isinstance(s, ast.Try):
            out = t("TRY") + self.block(s.body, nested)
            for h in s.handlers:
                out += t("EXCEPT") + (self.expr(h.type) if h.type else []) + self.block(h.body, nested)
            return (out + (t("ELSE") + self.block(s.orelse, nested) if s.orelse else [])
                    + (t("FINALLY") + self.block(s.finalbody, nested) if s.finalbody else []))
        if isinstance(s, ast.Assert):
            return t("ASSERT") + self.expr(s.test)
        if isinstance(s, ast.Delete):
            return t("DEL") + [x for target in s.targets for x in self.expr(target)]
        return t(type(s).__name__.upper())

    def block(self, body: list[ast.stmt], nested: list) -> list[tuple[str, int]]:
        out = [("{", body[0].lineno)] if body else []
        for s in body:
            out += self.stmt(s, nested)
        return out + [("}", out[-1][1])] if body else out

    def expr(self, e: ast.expr) -> list[tuple[str, int]]:
        at = getattr(e, "lineno", None) or self.line        # a node normalising made: its statement's line
        t = lambda *words: [(w, at) for w in words]
        if isinstance(e, ast.Name):
            return t(NAME if e.id in self.abstract_names else e.id)
        if isinstance(e, ast.Constant):
            v = e.value
            return t(STRING if isinstance(v, (str, bytes)) else repr(v) if v is None or isinstance(v, bool)
                     else "..." if v is Ellipsis else NUMBER)
        if isinstance(e, ast.JoinedStr) or _formats(e):
            return t(STRING)
        if isinstance(e, ast.Attribute):
            return self.expr(e.value) + t("." + (NAME if e.attr in self.abstract_attrs else e.attr))
        if isinstance(e, ast.BinOp):
            op = type(e.op).__name__
            if isinstance(e.op, COMMUTATIVE):
                return t(op, "(") + _sorted([self.expr(x) for x in _operands(e, type(e.op))]) + t(")")
            return t(op, "(") + self.expr(e.left) + self.expr(e.right) + t(")")
        if isinstance(e, ast.BoolOp):
            return t(type(e.op).__name__, "(") + _sorted([self.expr(x) for x in e.values]) + t(")")
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.Not) and isinstance(e.operand, ast.Compare) and len(e.operand.ops) == 1 \
                    and type(e.operand.ops[0]) in INVERSE:              # not a is b: a is not b
                c = e.operand
                return self.expr(ast.copy_location(ast.Compare(c.left, [INVERSE[type(c.ops[0])]()], c.comparators), c))
            return t(type(e.op).__name__) + self.expr(e.operand)
        if isinstance(e, ast.Compare):
            if len(e.ops) == 1:
                op, left, right = type(e.ops[0]), e.left, e.comparators[0]
                if op in FLIPPED:
                    op, left, right = FLIPPED[op], right, left
                sides = [self.expr(left), self.expr(right)]
                return t(op.__name__, "(") + (_sorted(sides) if issubclass(op, SYMMETRIC) else sides[0] + sides[1]) \
                    + t(")")
            out = t("CMP") + self.expr(e.left)
            for op, c in zip(e.ops, e.comparators):
                out += t(type(op).__name__) + self.expr(c)
            return out
        if isinstance(e, ast.Call):
            out = self.expr(e.func) + t("(")
            for a in e.args:
                out += self.expr(a)
            keywords = [t(f"{k.arg}=" if k.arg else "**") + self.expr(k.value) for k in e.keywords]
            return out + _sorted(keywords) + t(")")
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            return t("[") + [x for elt in e.elts for x in self.expr(elt)] + t("]")
        if isinstance(e, ast.Dict):
            return t("{") + [x for k, v in zip(e.keys, e.values) for x in (self.expr(k) if k else t("**"))
                             + self.expr(v)] + t("}")
        if isinstance(e, ast.Subscript):
            return self.expr(e.value) + t("[") + self.expr(e.slice) + t("]")
        if isinstance(e, ast.Slice):
            return t(":") + [x for part in (e.lower, e.upper, e.step) for x in (self.expr(part) if part else t("_"))]
        if isinstance(e, ast.Starred):
            return t("*") + self.expr(e.value)
        if isinstance(e, ast.IfExp):
            test, body, orelse = e.test, e.body, e.orelse
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, body, orelse = test.operand, orelse, body
            return t("IFX") + self.expr(test) + self.expr(body) + self.expr(orelse)
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            out = t("COMP")
            for g in e.generators:
                out += t("FOR") + self.expr(g.target) + t("IN") + self.expr(g.iter)
                for cond in g.ifs:
                    out += t("IF") + self.expr(cond)
            elt = self.expr(e.key) + self.expr(e.value) if isinstance(e, ast.DictComp) else self.expr(e.elt)
            return out + t("DO") + elt + t("END")
        if isinstance(e, ast.Lambda):
            return t("LAMBDA") + self.expr(e.body)
        if isinstance(e, (ast.Await, ast.Yield, ast.YieldFrom)):
            return t(type(e).__name__.upper()) + (self.expr(e.value) if e.value else [])
        if isinstance(e, ast.NamedExpr):
            return self.expr(e.target) + t("=") + self.expr(e.value)
        return t(type(e).__name__)


def _formats(e: ast.expr) -> bool:
    """"..." % args and "...".format(...): a formatted string, as an f-string is."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mod):
        return isinstance(e.left, ast.Constant) and isinstance(e.left.value, str)
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "format" \
        and isinstance(e.func.value, ast.Constant) and isinstance(e.func.value.value, str)


def _operands(e: ast.expr, op: type) -> list[ast.expr]:
    """a + (b + c) and (a + b) + c alike: the operands of a chain of one commutative operator."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, op):
        return _operands(e.left, op) + _operands(e.right, op)
    return [e]


def _sorted(parts: list[list[tuple[str, int]]]) -> list[tuple[str, int]]:
    return [x for part in sorted(parts, key=lambda p: [w for w, _ in p]) for x in part]
