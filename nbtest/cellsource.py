"""A code cell's text as the Python that IPython runs: its magics, shell escapes and help requests
commented out, its autocalls (`/f x`, `,f a b`, `;f a b`) written as the calls IPython makes of them,
each found where IPython finds it, at the start of a logical line only.

    python_source("x = (a\\n     % b)\\n%time f()\\n")   # -> "x = (a\\n     % b)\\n# %time f()\\n"
    python_source("/show x y\\n")                          # -> "show(x, y)\\n"

A line inside brackets, inside a triple-quoted string or after a backslash continues the line before
it (Black and PEP 8 break a long line before its operator: `% args`, `!= b`), so it is Python even
where it starts with `%` or `!`. Line numbers are kept: line 7 of the cell is line 7 here. A line is
what Python counts as one (python_lines: it ends at a newline); the other characters str.splitlines
breaks at (U+2028 in a comment pasted from a web page, a form feed) stay where they are, as IPython keeps
them, so a comment or a string holding one reads as the kernel ran it.
The notebook's readers (nbtest.notebook.source_of: the grader, the public tests, the rules test) all
read cells through this module; tests/test_cell_source.py holds it to IPython's own input transformer.

    compile_cell(source, filename)   # the cell's code, compiled as Jupyter does and parsed as Python 3.11
"""
from __future__ import annotations

import __future__
import re

_PYTHON_NEWLINE = re.compile(r"\r\n|\r|\n")    # what ends a line for Python's tokenizer, and nothing else


def python_lines(text: str, keepends: bool = False) -> list[str]:
    """text's lines as Python numbers them, as str.splitlines gives them (str.splitlines itself also breaks
    at U+2028, form feeds and other separators, which Python reads as a character of the line: `# note\u2028
    x = 1` is one comment). keepends: each line with its newline, as linecache holds a file's lines (inspect
    and Triton's jit read a function's source there: a line split elsewhere would hand them other text)."""
    pieces = _PYTHON_NEWLINE.split(text)
    if keepends:
        ends = _PYTHON_NEWLINE.findall(text) + [""]
        pieces = [line + end for line, end in zip(pieces, ends)]
    return pieces[:-1] if pieces and not pieces[-1] else pieces

# `x = !ls`, `a, b = %sx ls`: IPython's SystemAssign and MagicAssign
_ASSIGN_ESCAPE = re.compile(r"\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")
_ESCAPES = ("%", "!", "?")     # line magic, shell escape, help (`?name`, `??name`)
# IPython's autocall escapes and the call each writes of `NAME ARGS` (inputtransformer2's _tr_paren,
# _tr_quote, _tr_quote2): f(a, b), f("a", "b"), f("a b"); a `/` with no name stays as written (IPython's
# SyntaxError there leaves the line to Python, which reports it)
_AUTOCALLS = {
    "/": lambda name, args: f"{name}({', '.join(args.split())})" if name else None,
    ",": lambda name, args: name + '("' + '", "'.join(args.split()) + '")',
    ";": lambda name, args: name + '("' + args + '")',
}
PYTHON_CELL_MAGICS = frozenset({"time", "capture"})   # their body runs as the kernel's own Python
# The Python a cell must parse as, whatever Python reads it: the oldest the course runs (pyproject.toml's
# requires-python, Gradescope's image). A student on a newer Python who writes its syntax (`type X = ...`,
# `def f[T]()`) sees the SyntaxError in the public tests, not first in the grade.
PYTHON = (3, 11)
_ONLY_AST = 0x400      # ast.PyCF_ONLY_AST
_FUTURE = {name: getattr(__future__, name).compiler_flag for name in __future__.all_feature_names}


# How deep a cell's syntax tree may nest. Honest cells nest up to some 30 levels; the readers of a tree (the static
# policy, the names a cell defines and uses) walk it recursively, and one nested thousands of levels deep
# (`1+1+...+1`) overflowed them in the grader's own process, where a parse that exhausts Python's own limits
# raised RecursionError or MemoryError: either stopped a whole batch. Such a cell does not parse, here and so
# wherever a cell is read: in the grader's child, in the grader and in the public tests alike.
MAX_DEPTH = 100
# How many braces a cell may hold. Python 3.11 reads an f-string's fields in time that grows with their number squared
# (one string of 170,000 `{1}` took 20 s to parse, in every reader of the cell: red team 37); honest cells hold tens.
MAX_BRACES = 10_000


def compile_cell(source: str, filename: str):
    """A cell's Python (python_source's) compiled as Jupyter compiles a cell: no compiler flag of the
    caller's leaks in (dont_inherit; `from __future__ import annotations` of ours would turn a cell's
    annotations into strings), and its syntax read as PYTHON's. Raises SyntaxError."""
    return compile(syntax_tree(source, filename), filename, "exec", dont_inherit=True)


def syntax_tree(source: str, filename: str = "<unknown>"):
    """The cell's syntax tree (ast.Module), read as PYTHON's, or SyntaxError, also for a tree nested more than
    MAX_DEPTH levels deep. compile takes a feature version only when it stops at the tree (as ast.parse does);
    builtins alone, where the grader's child calls this between a submission's cells."""
    if source.count("{") > MAX_BRACES:
        raise SyntaxError(f"the cell holds more than {MAX_BRACES:,} braces, which Python takes too long to read in "
                          "f-strings; build such text in a loop", (filename, 1, 1, None))
    try:
        tree = compile(source, filename, "exec", _ONLY_AST, dont_inherit=True, _feature_version=PYTHON[1])
    except (RecursionError, MemoryError):
        raise SyntaxError("the cell is nested too deeply for Python to read it", (filename, 1, 1, None)) from None
    level, nodes = 1, [tree]
    while nodes:     # level by level, no recursion: the walk itself must not overflow
        if level > MAX_DEPTH:
            line = next((node.lineno for node in nodes if hasattr(node, "lineno")), 1)
            raise SyntaxError(f"the cell nests expressions or statements more than {MAX_DEPTH} levels deep; split "
                              "that line into steps", (filename, line, 1, None))
        below = []
        for node in nodes:
            for name in node._fields:
                value = getattr(node, name, None)
                if type(value) is list:
                    below += [child for child in value if hasattr(child, "_fields")]
                elif hasattr(value, "_fields"):
                    below.append(value)
        level, nodes = level + 1, below
    if _NEWER_FSTRINGS:
        _older_fstrings(source, tree, filename)
    return tree


# From Python 3.12 (PEP 701) an f-string's replacement fields may reuse its quotes, hold a backslash, a comment or
# a line break; 3.11's tokenizer ends the string at its quote, and the feature version does not make 3.12's parser
# refuse them. So on 3.12 and later each f-string's text is read as 3.11 reads it (never in the grader's child:
# its Python is 3.11, whose parser refuses them itself).
_NEWER_FSTRINGS = __import__("sys").version_info >= (3, 12) > PYTHON


def _older_fstrings(source: str, tree, filename: str) -> None:
    """SyntaxError for the first f-string of `tree` that Python 3.11 cannot read."""
    import ast
    inner = {id(n) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
             for n in ast.walk(node) if n is not node and isinstance(n, ast.JoinedStr)}
    lines = [line.encode("utf-8") for line in python_lines(source, keepends=True)]   # once: columns are bytes
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in inner:
            first, last = node.lineno - 1, node.end_lineno - 1
            text = (lines[first][node.col_offset:node.end_col_offset] if first == last else
                    lines[first][node.col_offset:] + b"".join(lines[first + 1:last]) + lines[last][:node.end_col_offset])
            problem = fstring_problem(text.decode("utf-8", "replace"))
            if problem:
                raise SyntaxError(f"{problem}: Python 3.12 reads it, the grader's Python 3.11 does not; "
                                  "use the other kind of quotes inside, or compute the value on a line before",
                                  (filename, node.lineno, node.col_offset + 1, None))


def fstring_problem(text: str) -> str | None:
    """Why Python 3.11 cannot read the string literals `text` (one or more, implicitly joined, as an f-string's
    source segment is) as they read on 3.12, or None. 3.11 ends a string at its first quote, and an f-string's
    replacement field may hold no backslash, no comment and, in a string of single quotes, no line break."""
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t\r\n\\()":
            i += 1
        elif text[i] == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
        else:
            start = i
            while i < n and text[i].isalpha():
                i += 1
            prefix = text[start:i].lower()
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else text[i:i + 1]
            if not quote:
                return None
            i, problem = _string_end(text, i + len(quote), quote, "r" in prefix, "f" in prefix)
            if problem:
                return problem
    return None


def _string_end(text: str, i: int, quote: str, raw: bool, formatted: bool) -> tuple[int, str | None]:
    """(where the string whose body starts at i ends, as 3.11 reads it; why 3.11 cannot read it, or None)."""
    n = len(text)
    while i < n:
        if text.startswith(quote, i):
            return i + len(quote), None
        c = text[i]
        if c == "\\" and not raw:
            i += 2
        elif formatted and c == "{":
            if text.startswith("{{", i):
                i += 2
            else:
                i, problem = _field_end(text, i + 1, quote)
                if problem:
                    return n, problem
        else:
            i += 1
    return n, None


def _field_end(text: str, i: int, quote: str) -> tuple[int, str | None]:
    """Where an f-string's replacement field that starts at i ends (after its `}`), as 3.11 reads it, and why
    3.11 cannot read it, or None."""
    n, depth = len(text), 0
    while i < n:
        c = text[i]
        if text.startswith(quote, i):
            return n, "an f-string reuses its own quotes inside a replacement field"
        if c == "\\":
            return n, "an f-string's replacement field holds a backslash"
        if c == "#":
            return n, "an f-string's replacement field holds a comment"
        if c in "\r\n" and len(quote) == 1:
            return n, "an f-string in single quotes breaks a line inside a replacement field"
        if c in "\'\"":     # a string inside the field, in the other quotes: 3.11 reads it to its own quote
            inner = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else c
            end = text.find(inner, i + len(inner))
            if end < 0 or quote in text[i:end + len(inner)]:
                return n, "an f-string reuses its own quotes inside a replacement field"
            if "\\" in text[i:end]:
                return n, "an f-string's replacement field holds a backslash"
            i = end + len(inner)
        elif c in "([":
            depth, i = depth + 1, i + 1
        elif c in ")]":
            depth, i = depth - 1, i + 1
        elif c == "{":
            depth, i = depth + 1, i + 1
        elif c == "}":
            if depth == 0:
                return i + 1, None
            depth, i = depth - 1, i + 1
        elif c == ":" and depth == 0 and not text.startswith(":=", i):   # the format spec, which may hold fields
            i += 1
            while i < n and text[i] != "}":
                if text[i] == "\\":            # an escape, as in the string's text: f'{x:\'>10}'
                    i += 2
                    continue
                if text.startswith(quote, i):
                    return n, "an f-string reuses its own quotes inside a replacement field"
                if text[i] == "{":
                    i, problem = _field_end(text, i + 1, quote)
                    if problem:
                        return n, problem
                else:
                    i += 1
            return i + 1, None
        else:
            i += 1
    return n, None


def compile_statements(source: str, filename: str) -> list:
    """A student's own cell (a helper) as compile_cell compiles it, one code object per top-level statement,
    to run in turn: in Run All the cell runs beside the notebook's other cells, in the grader and the public
    tests without those that make its data (the digits X, y), so a line that looks at them (`print(X.shape)`)
    fails there; run one at a time, the definitions after it still run. A `from __future__` import holds
    for the statements after it, as in one cell. Raises SyntaxError where compile_cell does."""
    tree = syntax_tree(source, filename)
    compile(tree, filename, "exec", dont_inherit=True)    # the whole cell's errors (a late __future__ import)
    flags, codes = 0, []
    for node in tree.body:
        if type(node).__name__ == "ImportFrom" and node.module == "__future__":
            for alias in node.names:
                flags |= _FUTURE.get(alias.name, 0)
        codes.append(compile(type(tree)(body=[node], type_ignores=[]), filename, "exec", flags, dont_inherit=True))
    return codes


def python_source(text: str) -> str:
    """The cell's text with each IPython-only logical line commented out ("# " in front) and each autocall
    written as its call, ending in a newline. A cell magic's body is read as Python where the kernel runs it
    so (%%time, %%capture) and commented out with it where it is another language's (%%bash, %%writefile)."""
    lines = _dedented(python_lines(text))
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    cell_magic = first is not None and lines[first].startswith("%%")
    if cell_magic and lines[first][2:].split(" ", 1)[0] not in PYTHON_CELL_MAGICS:
        return "".join(f"# {line}\n" for line in lines)
    read = lines[:first] + [""] + lines[first + 1:] if cell_magic else lines    # a Python body, read as Python
    spans = _escaped(read)       # one scan of the cell for both
    commented, calls = set(_magic(spans)) | ({first} if cell_magic else set()), _autocalls(read, spans)
    return "".join(f"{calls[i]}\n" if i in calls else _commented(line, i - 1 in commented) + "\n"
                   if i in commented else f"{line}\n" for i, line in enumerate(lines)) or "\n"


def _commented(line: str, continued: bool) -> str:
    """A magic's line as a comment; one inside a block (`if x:` then `    %time f()`) leaves a `pass`
    in its place, so the block keeps a body as it has in IPython."""
    body = line.lstrip()
    indent = line[:len(line) - len(body)]
    return f"{indent}pass  # {body}" if indent and not continued else f"# {line}"


def magic_lines(lines: list[str]) -> list[int]:
    """Indexes of the lines IPython reads as magics, shell escapes or help: a logical line starting
    with an escape (and the lines its backslashes join to it), `name = !cmd` / `name = %magic`, and a
    logical line that ends in `?` outside strings and comments (`torch.nn.Linear?`)."""
    return _magic(_escaped(lines))


def _magic(spans: list[tuple[int, int, bool]]) -> list[int]:
    return [i for start, end, autocall in spans if not autocall for i in range(start, end + 1)]


def _autocalls(lines: list[str], spans: list[tuple[int, int, bool]]) -> dict[int, str]:
    """{index: Python} for the lines of each logical line IPython reads as an autocall (`/f x`; spans:
    _escaped's): its first line the call, indented as it was, and the lines its backslashes join to it
    blank, so that line numbers stay. IPython joins those lines with a space, as here."""
    calls = {}
    for start, end, autocall in spans:
        if not autocall:
            continue
        line = lines[start]
        body = line.lstrip()
        parts = [body, *lines[start + 1:end + 1]]
        joined = " ".join([part.rstrip()[:-1] for part in parts[:-1]] + [parts[-1].rstrip()])
        name, _, args = joined[1:].partition(" ")
        call = _AUTOCALLS[joined[0]](name, args)
        if call is not None:
            calls.update({i: "" for i in range(start + 1, end + 1)})
            calls[start] = line[:len(line) - len(body)] + call
    return calls


def _escaped(lines: list[str]) -> list[tuple[int, int, bool]]:
    """(first, last, is an autocall) for each logical line IPython reads as other than Python."""
    found: list[tuple[int, int, bool]] = []
    depth, quote, joined, start, escape, autocall = 0, None, False, 0, False, False
    for i, line in enumerate(lines):
        at_start = depth == 0 and quote is None and not joined
        if at_start:
            start = i
            stripped = line.lstrip()
            autocall = stripped.startswith(tuple(_AUTOCALLS))
            escape = autocall or stripped.startswith(_ESCAPES) or bool(_ASSIGN_ESCAPE.match(line))
        if escape:    # IPython takes the rest of the line as the magic's text, brackets and all
            joined = line.endswith("\\")
            escape = joined
            if not joined:
                found.append((start, i, autocall))
            continue
        depth, quote, last = _scan(line, depth, quote)
        joined = line.endswith("\\") and (quote is None or len(quote) == 1)
        if quote is not None and len(quote) == 1 and not joined:
            quote = None          # an unclosed one-line string: a SyntaxError Python reports itself
        if depth == 0 and quote is None and not joined and last == "?":
            found.append((start, i, False))
    if escape:                    # a cell ending in a backslash after an escape
        found.append((start, len(lines) - 1, autocall))
    return found


def _scan(line: str, depth: int, quote: str | None) -> tuple[int, str | None, str]:
    """After one physical line: the bracket depth, the string left open (its quote) or None, and the
    line's last character of code (outside strings and comments)."""
    i, last = 0, ""
    while i < len(line):
        c = line[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i, quote, last = i + len(quote), None, c
                continue
            i += 1
            continue
        if c == "#":
            break
        if c in "'\"":
            quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else c
            i += len(quote)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        if not c.isspace():
            last = c
        i += 1
    return depth, quote, last


def _dedented(lines: list[str]) -> list[str]:
    """IPython's leading_indent: a cell whose first line is indented loses that indent on every line
    that has it (a block pasted from inside a function runs)."""
    first = next((line for line in lines if line.strip()), "")
    indent = first[:len(first) - len(first.lstrip())]
    if not indent:
        return lines
    return [line[len(indent):] if line.startswith(indent) else line for line in lines]
