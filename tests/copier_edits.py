"""The edits a student makes to a classmate's notebook to hide a copy, made by program.

    cells = solution_cells(notebook, ids)                 # [source of each solution cell], in order
    copy = EDITS["rename"](cells, random.Random(1))       # another list of cell sources, same behaviour
    copy = combined(["rename", "no-op"], cells, rng)      # several edits, one after another
    write_notebook(notebook, ids, copy, out)              # the notebook with those cells in place
    evaluation_set(ids) -> (codes, positives, negatives)  # the similarity check's evaluation set

Each edit keeps what the code does: rename local names, reorder functions and methods, put a
no-op after every statement, change comments and docstrings, add dead code, turn loops into
comprehensions and back, move code between cells (split and merge), extract a helper function.
The seed picks names, no-ops and words, so one edit with several seeds gives distinct notebooks.
A cell that does not parse is left as it is. benchmarks/similarity_eval.py and
tests/test_similarity.py use it, and benchmarks/report_speed.py makes its class of distinct
notebooks with it.
"""
from __future__ import annotations

import ast
import builtins
import io
import itertools
import json
import random
import tokenize
from pathlib import Path

import nbtest

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "residual-connections"
SAMPLES = ROOT / "submissions" / ASSIGNMENT
# honest notebooks of different styles, each with its author: the reference's style variants
# rewrite some of its cells, honest-a and honest-b were written without it (submissions/)
BASES = {"full-marks": "reference", "style-torch-add-helper": "reference", "style-identity-flag-shortcut": "reference",
         "style-functional-gelu-ffn": "reference", "style-reduce-chain": "reference",
         "style-mask-helper-block": "reference", "style-setattr-block": "reference",
         "honest-a": "honest-a", "honest-b": "honest-b"}
WORDS = ["acc", "tmp", "val", "res", "buf", "item", "node", "cache", "part", "step", "piece", "store", "hold"]
KEEP = set(dir(builtins)) | {"self", "cls"}


def solution_cells(notebook: Path, ids: list[str]) -> list[str]:
    """The notebook's solution cells' sources in the order of ids (the first cell of each id)."""
    found: dict[str, str] = {}
    for cell in nbtest.read_notebook(notebook)["cells"]:
        label = nbtest.grade_id(cell)
        if cell.get("cell_type") == "code" and label in ids and label not in found:
            found[label] = nbtest.source_of(cell)
    return [found.get(label, "") for label in ids]


def write_notebook(notebook: Path, ids: list[str], cells: list[str], out: Path) -> None:
    """notebook with its solution cells' sources replaced by cells (in the order of ids)."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    new = dict(zip(ids, cells))
    for cell in nb["cells"]:
        label = nbtest.grade_id(cell)
        if cell.get("cell_type") == "code" and label in new:
            cell["source"] = new.pop(label)
    out.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def _per_cell(edit):
    """An edit of one cell's source as an edit of every cell; a cell that does not parse is left alone."""
    def run(cells: list[str], rng: random.Random) -> list[str]:
        out = []
        for src in cells:
            try:
                ast.parse(src)
            except SyntaxError:
                out.append(src)
                continue
            out.append(edit(src, rng))
        return out
    run.__doc__ = edit.__doc__
    return run


def _statements(tree: ast.AST):
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            for s in value if isinstance(value, list) else []:
                if isinstance(s, ast.stmt):
                    yield s


def _insert_after(src: str, places: dict[int, list[str]]) -> str:
    """src with lines inserted after the given (1-based) line numbers."""
    lines = src.split("\n")
    for n in sorted(places, reverse=True):
        lines[n:n] = places[n]
    return "\n".join(lines)


# ------------------------------------------------------------------ the edits

@_per_cell
def rename(src: str, rng: random.Random) -> str:
    """Every local variable (not a parameter, attribute or global, nor one an f-string reads) gets another name."""
    tree = ast.parse(src)
    params = {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
              for a in n.posonlyargs + n.args + n.kwonlyargs + [n.vararg, n.kwarg] if a}
    top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    in_fstrings = {n.id for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)
                   if isinstance(n, ast.Name)}          # one token to tokenize: left as they are
    local -= params | top | KEEP | in_fstrings
    words = rng.sample(WORDS, len(WORDS))
    new = {name: f"{words[i % len(words)]}_{i}" for i, name in enumerate(sorted(local))}
    out, prev = [], None
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.NAME and tok.string in new and not (prev and prev.string == "."):
            tok = tok._replace(string=new[tok.string])
        out.append(tok)
        prev = tok
    return tokenize.untokenize(out)


@_per_cell
def reorder(src: str, rng: random.Random) -> str:
    """The cell's functions and classes in another order, and each class's methods reversed."""
    tree = ast.parse(src)
    lines = src.split("\n")
    start = lambda n: min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
    text = lambda n: lines[start(n) - 1:n.end_lineno]
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    if not defs:
        return src
    out = [line for n in tree.body if n not in defs for line in text(n)]
    for n in defs[::-1] if len(defs) <= 2 else rng.sample(defs, len(defs)):
        methods = [m for m in n.body if isinstance(m, ast.FunctionDef)] if isinstance(n, ast.ClassDef) else []
        if len(methods) >= 2 and n.body[-len(methods):] == methods:
            out += lines[start(n) - 1:start(methods[0]) - 1]          # the class line, its docstring
            for m in methods[::-1]:
                out += text(m) + [""]
        else:
            out += text(n) + [""]
    return "\n".join(out) + "\n"


NO_OPS = ["pass", "...", "None", "0", "'-'", "()"]


@_per_cell
def no_op(src: str, rng: random.Random) -> str:
    """A no-op statement (pass, ..., a bare constant) after every simple statement."""
    tree = ast.parse(src)
    lines = src.split("\n")
    places: dict[int, list[str]] = {}
    for s in _statements(tree):
        if not isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.If, ast.For, ast.While, ast.With, ast.Try,
                              ast.Return, ast.Raise)) and s.lineno == s.end_lineno:
            indent = lines[s.lineno - 1][:s.col_offset]
            places.setdefault(s.end_lineno, []).append(indent + rng.choice(NO_OPS))
    return _insert_after(src, places)


PHRASES = ["compute the result", "see the lecture notes", "as in the exercise", "shape check first",
           "the main step", "TODO tidy this", "works for any batch size", "careful with the shapes"]


@_per_cell
def comments(src: str, rng: random.Random) -> str:
    """Comments dropped and others written, and every docstring replaced by another one."""
    out = [t for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type != tokenize.COMMENT]
    src = tokenize.untokenize(out)
    tree = ast.parse(src)
    lines = src.split("\n")
    places: dict[int, list[str]] = {}
    replace: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            indent = lines[first.lineno - 1][:first.col_offset]
            doc = f'{indent}"""{rng.choice(PHRASES).capitalize()}."""'
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                replace[first.lineno] = doc
                for n in range(first.lineno + 1, first.end_lineno + 1):
                    replace[n] = None
            else:
                places.setdefault(first.lineno - 1, []).append(doc)
            places.setdefault(first.lineno - 1, []).append(f"{indent}# {rng.choice(PHRASES)}")
    lines = [replace.get(i + 1, line) for i, line in enumerate(lines)]
    kept = {i + 1: line for i, line in enumerate(lines)}
    out_lines = []
    for n in range(1, len(lines) + 1):
        if kept[n] is not None:
            out_lines.append(kept[n])
        out_lines += places.get(n, [])
    return "\n".join(places.get(0, []) + out_lines)


@_per_cell
def dead_code(src: str, rng: random.Random) -> str:
    """Dead code in every function: an if False block, an unused variable, a statement after the return;
    and an unused helper at the top of the cell."""
    tree = ast.parse(src)
    lines = src.split("\n")
    places: dict[int, list[str]] = {}
    w = rng.choice(WORDS)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.body:
            first = node.body[1 if ast.get_docstring(node) and len(node.body) > 1 else 0]
            indent = lines[first.lineno - 1][:first.col_offset]
            places.setdefault(first.lineno - 1, []).extend(
                [f"{indent}{w}_unused = {rng.randint(2, 99)}", f"{indent}if False:",
                 f"{indent}    print('{w}', {w}_unused * 2)"])
            last = node.body[-1]
            if isinstance(last, ast.Return):
                places.setdefault(last.end_lineno, []).append(f"{indent}{w}_after = None")
    helper = [f"def _{w}_unused_helper(a, b):", "    return [a * b for _ in range(3)]", ""]
    return "\n".join(helper) + "\n" + _insert_after(src, places) if tree.body else src


class _LoopsToComprehensions(ast.NodeTransformer):
    """v = [e for t in it if c] <-> v = []; for t in it: if c: v.append(e), both ways; and return [comp]
    as a loop filling a list that is then returned."""

    def __init__(self, rng: random.Random):
        self.rng, self.changed = rng, False

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in body:
            self.visit(s)
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                    and isinstance(s.value, ast.ListComp):
                out += self._loop(s.targets[0].id, s.value)
            elif isinstance(s, ast.Return) and isinstance(s.value, ast.ListComp):
                name = f"{self.rng.choice(WORDS)}_list"
                out += self._loop(name, s.value) + [ast.Return(ast.Name(name, ast.Load()))]
            elif out and isinstance(s, ast.For) and (comp := self._comp(out[-1], s)) is not None:
                out[-1] = comp
                self.changed = True
            else:
                out.append(s)
        return out

    def _loop(self, name: str, comp: ast.ListComp) -> list[ast.stmt]:
        self.changed = True
        inner: ast.stmt = ast.Expr(ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "append", ast.Load()),
                                            [comp.elt], []))
        for g in reversed(comp.generators):
            for cond in reversed(g.ifs):
                inner = ast.If(cond, [inner], [])
            inner = ast.For(g.target, g.iter, [inner], [], None)
        return [ast.Assign([ast.Name(name, ast.Store())], ast.List([], ast.Load()), lineno=0), inner]

    @staticmethod
    def _comp(prev: ast.stmt, loop: ast.For):
        if not (isinstance(prev, ast.Assign) and len(prev.targets) == 1 and isinstance(prev.targets[0], ast.Name)
                and isinstance(prev.value, ast.List) and not prev.value.elts and not loop.orelse
                and len(loop.body) == 1):
            return None
        s, ifs = loop.body[0], []
        if isinstance(s, ast.If) and not s.orelse and len(s.body) == 1:
            ifs, s = [s.test], s.body[0]
        call = s.value if isinstance(s, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append"
                and isinstance(call.func.value, ast.Name) and call.func.value.id == prev.targets[0].id
                and len(call.args) == 1):
            return None
        comp = ast.ListComp(call.args[0], [ast.comprehension(loop.target, loop.iter, ifs, 0)])
        return ast.Assign(prev.targets, comp, lineno=0)

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, self._body(value))
        for h in getattr(node, "handlers", []):
            h.body = self._body(h.body)
        return node


@_per_cell
def loops(src: str, rng: random.Random) -> str:
    """Loops that fill a list written as comprehensions, and comprehensions as such loops."""
    tree = ast.parse(src)
    edit = _LoopsToComprehensions(rng)
    edit.visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n" if edit.changed else src


def split_merge(cells: list[str], rng: random.Random) -> list[str]:
    """Code moved between cells: the first cell's last definition moves to the start of the next one
    (a split), and the last two non-empty cells are merged into the earlier one (a merge)."""
    out = list(cells)
    full = [i for i, src in enumerate(out) if src.strip()]
    if len(full) >= 2:
        i = full[0]
        try:
            tree = ast.parse(out[i])
        except SyntaxError:
            tree = None
        if tree and len(tree.body) >= 2:
            last = tree.body[-1]
            start = min([last.lineno] + [d.lineno for d in getattr(last, "decorator_list", [])])
            lines = out[i].split("\n")
            moved = "\n".join(lines[start - 1:last.end_lineno])
            out[i] = "\n".join(lines[:start - 1]).rstrip() + "\n"
            out[i + 1] = moved + "\n\n\n" + out[i + 1]
        a, b = full[-2], full[-1]
        out[a] = out[a].rstrip() + "\n\n\n" + out[b]
        out[b] = rng.choice(["", "# moved up\n", "pass\n"])
    return out


@_per_cell
def helper(src: str, rng: random.Random) -> str:
    """In every function of four statements or more, the first half of its body moved into a new
    function it calls, with what that half reads as arguments and what it sets and the rest reads returned."""
    tree = ast.parse(src)
    name_base = rng.choice(WORDS)
    added: list[tuple[ast.AST, ast.FunctionDef]] = []
    for parent in [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        for fn in [n for n in parent.body if isinstance(n, ast.FunctionDef)]:
            body = fn.body[1:] if ast.get_docstring(fn) else fn.body
            if len(body) < 4:
                continue
            half = len(body) // 2
            first, rest = body[:half], body[half:]
            if any(isinstance(n, (ast.Return, ast.Yield, ast.Raise, ast.Nonlocal, ast.Global, ast.Lambda,
                                  ast.FunctionDef)) or _bare_super(n)
                   for s in first for n in ast.walk(s)):
                continue                            # these mean something else in another function
            stored = {n.id for s in first for n in ast.walk(s) if isinstance(n, ast.Name)
                      and isinstance(n.ctx, ast.Store)}
            read = {n.id for s in first for n in ast.walk(s) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Load)}
            params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
            later_stored = {n.id for s in rest for n in ast.walk(s) if isinstance(n, ast.Name)
                            and isinstance(n.ctx, ast.Store)}
            if (read - stored) & later_stored:
                continue                            # the first half reads a local the second half sets
            args = [p for p in params if p in read]
            later = {n.id for s in rest for n in ast.walk(s) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Load)}
            returned = sorted(stored & later)
            hname = f"_{name_base}_{fn.name.strip('_')}_part"
            ret = [ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in returned], ast.Load())
                              if len(returned) > 1 else ast.Name(returned[0], ast.Load()))] if returned else []
            new_fn = ast.FunctionDef(hname, ast.arguments([], [ast.arg(a) for a in args], None, [], [], None, []),
                                     first + ret, [], None, None, type_params=[])
            call = ast.Call(ast.Name(hname, ast.Load()), [ast.Name(a, ast.Load()) for a in args], [])
            if not returned:
                head: ast.stmt = ast.Expr(call)
            elif len(returned) == 1:
                head = ast.Assign([ast.Name(returned[0], ast.Store())], call, lineno=0)
            else:
                head = ast.Assign([ast.Tuple([ast.Name(n, ast.Store()) for n in returned], ast.Store())], call,
                                  lineno=0)
            fn.body = fn.body[:len(fn.body) - len(body)] + [head] + rest
            added.append((parent, new_fn))
    if not added:
        return src
    for parent, new_fn in added:
        if parent is tree:
            tree.body.insert(0, new_fn)
        else:                                      # a method's helper: a module-level function before the class
            tree.body.insert(tree.body.index(parent), new_fn)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _bare_super(node: ast.AST) -> bool:
    """super() with no arguments: it needs the method's class, so it cannot move out of the method."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" \
        and not node.args


EDITS = {"rename": rename, "reorder": reorder, "no-op": no_op, "comments": comments, "dead-code": dead_code,
         "loops": loops, "split-merge": split_merge, "helper": helper}
# the order combined() applies edits in: structure first, then names, then what is typed around the code
ORDER = ["loops", "helper", "reorder", "split-merge", "rename", "dead-code", "no-op", "comments"]


def combined(names: list[str], cells: list[str], rng: random.Random) -> list[str]:
    """cells after each named edit in turn (in ORDER)."""
    for name in sorted(names, key=ORDER.index):
        cells = EDITS[name](cells, rng)
    return cells


def variants(seed: int) -> list[tuple[str, list[str]]]:
    """(label, edits) of the evaluation set: each edit alone, all of them, and three random triples."""
    rng = random.Random(seed)
    triples = [sorted(rng.sample(ORDER, 3)) for _ in range(3)]
    return [(name, [name]) for name in EDITS] + [("all", list(ORDER))] + \
        [("+".join(t), t) for t in triples]


def evaluation_set(ids: list[str], seed: int = 0):
    """The similarity check's evaluation set, as solution code (the cells joined as report/code.py joins them).

    Returns (codes, positives, negatives): codes {label: code} of every base notebook (BASES) and
    every transformed copy of each ("BASE~EDITS"); positives, the (base, copy) pairs; negatives,
    every pair of labels whose authors differ (BASES), copies included."""
    codes, author, positives = {}, {}, []
    for base, who in BASES.items():
        cells = solution_cells(SAMPLES / f"{base}.ipynb", ids)
        codes[base], author[base] = "\n\n".join(cells), who
        for k, (label, names) in enumerate(variants(seed)):
            copy = combined(names, cells, random.Random(seed * 1000 + k))
            name = f"{base}~{label}"
            codes[name], author[name] = "\n\n".join(copy), who
            positives.append((base, name))
    negatives = [(a, b) for a, b in itertools.combinations(sorted(codes), 2) if author[a] != author[b]]
    return codes, positives, negatives
