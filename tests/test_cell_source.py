"""A cell's Python source as IPython reads it (nbtest.cellsource): the grader, the public tests and the
notebook's check cells (run by IPython itself) read every cell of every sample the same way."""
import ast
import inspect
import json
import textwrap
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

import nbtest
from nbtest import cellcode, cellsource
from nbtest.cellsource import magic_lines, python_source
from nbtest.policy import check_cells, for_assignment
from autograder import course
from autograder.core.extract import Template

ROOT = Path(__file__).resolve().parents[1]
IPYTHON = TransformerManager()
FULL_MARKS = ROOT / "submissions" / "residual-connections" / "full-marks.ipynb"

CASES = [
    # Black's and PEP 8's breaks before an operator: continuation lines, Python as written
    ('msg = ("x is %s, fx is %s"\n       % (a, b))\n', 'msg = ("x is %s, fx is %s"\n       % (a, b))\n'),
    ("if (\n    a\n    != b\n):\n    pass\n", "if (\n    a\n    != b\n):\n    pass\n"),
    ("x = 1 \\\n  % 2\n", "x = 1 \\\n  % 2\n"),
    ("s = '''\n%not a magic\n!nor this\n'''\n", "s = '''\n%not a magic\n!nor this\n'''\n"),
    # magics, shell escapes and help at the start of a logical line
    ("%matplotlib inline\nimport torch\n", "# %matplotlib inline\nimport torch\n"),
    ("!pip list\nx = 1\n", "# !pip list\nx = 1\n"),
    ("files = !ls\n", "# files = !ls\n"),
    ("torch.nn.Linear?\n", "# torch.nn.Linear?\n"),
    ("if x:\n    %time f()\n", "if x:\n    pass  # %time f()\n"),
    # cell magics: a Python body runs, another language's does not
    ("%%time\nx = 1\n", "# %%time\nx = 1\n"),
    ("%%bash\nls\n", "# %%bash\n# ls\n"),
    ("", "\n"),
    # a cell pasted with its indent runs dedented
    ("    x = 1\n    y = x\n", "x = 1\ny = x\n"),
    # autocalls: the call IPython writes, inside a block too; `/` with no name left to Python
    ("/show x y\n", "show(x, y)\n"),
    (",show a b\n", 'show("a", "b")\n'),
    (";show a  b\n", 'show("a  b")\n'),
    ("if x:\n    /show x\n", "if x:\n    show(x)\n"),
    ("%%time\n/show x\n", "# %%time\nshow(x)\n"),
    ("/ show x\n", "/ show x\n"),
    ("x = (1,\n/2)\n", "x = (1,\n/2)\n"),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_a_cell_reads_as_ipython_reads_it(text, expected):
    assert python_source(text) == expected
    assert_as_ipython(text)


def assert_as_ipython(text: str) -> None:
    """python_source(text) is IPython's own transform of text but for the lines IPython turns into
    get_ipython() calls, which it comments out (a cell magic: the cell, or its first line)."""
    ours, theirs = python_source(text).splitlines(), IPYTHON.transform_cell(text).splitlines()
    if text.lstrip().startswith("%%"):
        assert ours[0].startswith("# %%") and theirs[0].startswith("get_ipython().run_cell_magic(")
        return
    magic = set(magic_lines(textwrap.dedent(text).splitlines()))
    kept = [line for i, line in enumerate(ours) if i not in magic]
    # IPython drops a cell's leading blank lines; line numbers stay here
    assert _unpadded(kept) == _unpadded([line for line in theirs if "get_ipython()" not in line])
    assert bool(magic) == any("get_ipython()" in line for line in theirs)


def test_an_autocall_joined_by_backslashes_keeps_the_line_numbers():
    """IPython joins the lines into one call; here the joined lines stay, blank, so the line after is line 3."""
    text = "/show x \\\n  y\nz = 1\n"
    assert python_source(text) == "show(x, y)\n\nz = 1\n"
    assert IPYTHON.transform_cell(text) == "show(x, y)\nz = 1\n"


def _unpadded(lines: list[str]) -> list[str]:
    """lines without the blank ones before the first line of text."""
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return lines[first:]


def test_the_grader_the_public_tests_and_the_check_cells_read_every_cell_alike():
    """Every code cell of every sample: the text IPython would run (the check cells' kernel) is the text
    nbtest reads (the public tests' load, the rules test), and the grader runs that same text."""
    for name in course.load().assignments:
        template = Template(ROOT / "solutions" / name / f"{name}.ipynb")
        for path in sorted((ROOT / "submissions" / name).glob("*.ipynb")):
            try:
                nb = nbtest.read_notebook(path)
            except nbtest.NotebookError:
                continue                     # the samples that are no readable notebook
            graded, read = dict(template.fill(path).cells), {}
            for index, cell in enumerate(nb["cells"]):
                if cell.get("cell_type") != "code":
                    continue
                text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                assert_as_ipython(text)
                assert nbtest.source_of(cell) == python_source(text), (path.name, index)
                label = nbtest.cell_label(cell, index)
                if nbtest.is_solution(cell) and label in graded:     # a cell split in two: its pieces in turn
                    read[label] = read.get(label, "") + nbtest.source_of(cell)
            assert all(graded[label] == source for label, source in read.items()), path.name


# private names in a class, each place Python mangles them or leaves them (a call's keywords, a class pattern's
# attributes, __dunders__, a class named _ alone); red team 38 read getattr(self, __n) as a loop's __n
PRIVATE_NAMES = """
import numpy as _Words__np
for __n in ("weight",):
    pass
class Words(__Base, metaclass=__Meta):
    import __x
    from m import __y as __z
    from __pkg import w
    __t = lambda __p: __p
    def __m(self, __a, *, __k=1, **__kw):
        global __g
        __g = self.__attr + getattr(self, __n)
        f(__key=1)
        try:
            pass
        except E as __e:
            pass
        match v:
            case {"a": 1, **__rest}:
                pass
            case P(__ka=1, x=[*__star]):
                pass
            case __cap:
                return __np.lib, __dunder__, ___
        def inner():
            nonlocal __a
            return [__i for __i in __a if (__w := __i)]
    class __Inner:
        y = __q
    @__deco
    class _:
        v = __q
"""


def test_a_private_name_in_a_class_reads_as_python_compiles_it():
    """The names every rule reads (cellcode.parse) are those the compiled code uses: __n in class Words is
    _Words__n, so getattr(self, __n) reads the module's _Words__n, not a loop's __n."""
    def compiled(code) -> set[str]:
        names = {*code.co_names, *code.co_varnames, *code.co_cellvars, *code.co_freevars}
        return names.union(*(compiled(c) for c in code.co_consts if inspect.iscode(c)))

    read = set()
    for node in ast.walk(cellcode.parse(PRIVATE_NAMES)):
        read.update(v for f in ("id", "attr", "name", "asname", "rest", "module")
                    if isinstance(v := getattr(node, f, None), str))
        read.update(getattr(node, "names", []) if isinstance(node, (ast.Global, ast.Nonlocal)) else [])
        read.update([node.arg] if isinstance(node, ast.arg) else [])
    # a class body's own names, and a comprehension's argument
    assert read == compiled(compile(PRIVATE_NAMES, "<cell>", "exec")) - {"__name__", "__module__", "__qualname__", ".0"}


def test_a_cell_is_read_as_the_oldest_python_the_course_runs(monkeypatch):
    """Syntax newer than cellsource.PYTHON fails wherever a cell is compiled (the public tests' load, the
    grader's child: compile_cell, or compile_statements for an own cell) or parsed (the rules), whatever Python
    reads it. Shown with 3.10's `match` read as 3.9, as 3.12's `type X = ...` is read as 3.11."""
    from autograder.core import sandbox
    from nbtest import cellsource
    source = "def kind(x):\n    match x:\n        case 0:\n            return 'zero'\n    return 'other'\n"
    namespace = {}
    exec(cellsource.compile_cell(source, "<cell kind>"), namespace)
    assert namespace["kind"](0) == "zero"
    monkeypatch.setattr(cellsource, "PYTHON", (3, 9))     # cellcode.parse reads cells through cellsource too
    for read in (cellsource.compile_cell, sandbox._compile_cell, cellsource.compile_statements,
                 sandbox._compile_statements, lambda s, _: cellcode.parse(s)):
        with pytest.raises(SyntaxError, match="only supported in Python 3.10") as e:
            read(source, "<cell kind>")
        assert 2 <= e.value.lineno <= 5           # within the match statement (CPython names its end)


def test_a_cell_of_too_many_braces_does_not_parse_anywhere():
    """Python reads an f-string's fields in time that grows with their number squared: a cell of 170,000 held the
    grader's own process for 45 s before any child ran, and the report for minutes (red team 37). A cell of more
    than MAX_BRACES braces is a SyntaxError wherever a cell is read; one of MAX_BRACES is not."""
    from autograder.core import sandbox
    at_most = "x = 1\ntext = f'" + "{x}" * cellsource.MAX_BRACES + "'\n"
    cellsource.compile_cell(at_most, "<cell fine>")
    over = at_most.replace("x = 1", "y = {x}")
    for read in (cellsource.compile_cell, sandbox._compile_cell, lambda s, _: cellcode.parse(s)):
        with pytest.raises(SyntaxError, match="braces"):
            read(over, "<cell braces>")


# f-strings as Python 3.12 reads them (PEP 701) and whether 3.11 does: (text, 3.11's reason or None)
FSTRINGS = [
    ('f"{x}"', None), ("f'{d[\"k\"]}'", None), ('f"{x!r:>{w}}"', None), ('f"""{"a"}"""', None),
    ("rf'{x}\\d'", None), ('f"{{x}}"', None), ('f"a" "b" f\'{y}\'', None), ('f"{x:%Y-%m-%d}"', None),
    ('f"{(a := 1)}"', None), ('f"{d[1:2]}"', None), ("f'{x:\\'>10}'", None), ("f'{\", \".join(xs)}'", None), ('f"""\n{x\n}\n"""', None),
    ('f"{", ".join(xs)}"', "reuses its own quotes"), ('f"{x["k"]}"', "reuses its own quotes"),
    ('f"{f"{x}"}"', "reuses its own quotes"), ("f\'\'\'{\'\'\'a\'\'\'}\'\'\'", "reuses its own quotes"),
    ("f'{\"\\n\".join(x)}'", "backslash"), ('f"{x # c\n}"', "comment"), ("f'{x\n}'", "breaks a line"),
]


@pytest.mark.parametrize("text, problem", FSTRINGS)
def test_an_f_string_is_read_as_python_3_11_reads_it(text, problem):
    """On Python 3.12 and later a replacement field may reuse its f-string's quotes, hold a backslash, a comment
    or a line break, and the feature version does not refuse them: the public tests passed such a cell, which
    the grader's 3.11 could not read (22 of 100 points lost, red team 37). syntax_tree reads each f-string as
    3.11 does there."""
    found = cellsource.fstring_problem(text)
    assert (found is None) if problem is None else (problem in found), found


def test_every_f_string_of_the_samples_reads_alike_on_python_3_12(monkeypatch):
    """The 3.11 reading of f-strings, as Python 3.12 applies it, refuses no cell that 3.11 reads."""
    monkeypatch.setattr(cellsource, "_NEWER_FSTRINGS", True)
    for path in sorted((ROOT / "submissions").glob("*/*.ipynb")):
        try:
            cells = nbtest.read_notebook(path)["cells"]
        except nbtest.NotebookError:
            continue
        for cell in cells:
            source = nbtest.source_of(cell) if cell.get("cell_type") == "code" else ""
            try:
                cellsource.syntax_tree(source)
            except SyntaxError as e:
                assert "f-string" not in str(e), (path.name, str(e))


# What str.splitlines breaks a line at besides Python's newlines: Python reads each as a character of
# its line (in a comment or a string; elsewhere a SyntaxError, as in the kernel), and IPython keeps it
SEPARATORS = ["\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85"]


@pytest.mark.parametrize("sep", SEPARATORS)
def test_a_line_separator_python_does_not_count_stays_in_its_line(sep):
    """A U+2028 pasted into a comment or a message (a web page, a PDF) runs as the kernel runs it: the comment
    goes on, the string holds it. Split there, the rest of a comment would run as code in the grader only and
    a string would stop being one (an honest cell failing to load, its part lost)."""
    text = f"x = 1  # note{sep}y = 2\nm = 'a{sep}b'\n%time f()\n"
    assert python_source(text) == f"x = 1  # note{sep}y = 2\nm = 'a{sep}b'\n# %time f()\n"
    magicless = text.replace("%time f()\n", "")
    assert python_source(magicless) == IPYTHON.transform_cell(magicless)
    names: dict = {}
    exec(compile(python_source(magicless), "cell", "exec"), names)
    assert "y" not in names and names["m"] == f"a{sep}b"


def test_a_functions_source_is_found_at_pythons_line_numbers(tmp_path):
    """linecache holds a cell's lines as Python numbers them: inspect (and Triton's jit, which compiles a kernel
    from the source it finds there) reads the function Python ran, not text a separator shifted into place."""
    nb = json.loads(FULL_MARKS.read_text())
    cell = next(c for c in nb["cells"] if nbtest.grade_id(c) == "residual_add")
    cell["source"] = "# notes\u2028 from the slides\u2028 and more\n" + "".join(cell["source"]) \
        + "\n\ndef shown_later():\n    return 'later'\n"
    path = tmp_path / "separator.ipynb"
    path.write_text(json.dumps(nb))
    module = nbtest.load(path)
    assert inspect.getsource(module.shown_later) == "def shown_later():\n    return 'later'\n"
    assert inspect.getsource(module.residual_add).startswith("def residual_add(")


def test_a_quoted_line_is_the_line_python_numbers_and_stays_one_line():
    """The policy's quote is the line the finding's number names, a separator in it written as its escape."""
    source = python_source("x = 1  # fine\u2028 innocent\nimport sys  # ok\u2029 here\n")
    [violation] = [v for v in check_cells([("residual_add", source, True)], for_assignment(
        course.load().assignment("residual-connections").rules)) if v.rule == "process-introspection"]
    assert (violation.line, violation.quote) == (2, "import sys  # ok\\u2029 here")


def test_a_quoted_line_is_cut_at_quote_chars():
    """A finding quotes its line, cut at QUOTE_CHARS: thousands of findings on one 24,000-character line were each
    escaped whole, for minutes in the grader's own process (red team 38)."""
    line = "type(s);" * 3000
    quoted = cellcode.quote(f"def f(s):\n    {line}\n", 2)
    assert quoted == line[:cellcode.QUOTE_CHARS] + " ..." and cellcode.quote("x = 1\n", 1) == "x = 1"
