"""A cell's Python source as IPython reads it (nbtest.cellsource): the grader, the public tests and the
notebook's check cells (run by IPython itself) read every cell of every sample the same way."""
import textwrap
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

import nbtest
from nbtest.cellsource import magic_lines, python_source
from autograder import course
from autograder.core.extract import Template

ROOT = Path(__file__).resolve().parents[1]
IPYTHON = TransformerManager()

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
            graded = dict(template.fill(path).cells)
            for index, cell in enumerate(nb["cells"]):
                if cell.get("cell_type") != "code":
                    continue
                text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                assert_as_ipython(text)
                label = nbtest.cell_label(cell, index)
                if nbtest.is_solution(cell) and label in graded:
                    assert graded[label] == nbtest.source_of(cell) == python_source(text), (path.name, label)


def test_a_cell_is_read_as_the_oldest_python_the_course_runs(monkeypatch):
    """Syntax newer than cellsource.PYTHON fails wherever a cell is compiled (the public tests' load, the
    grader's child: one function) or parsed (the rules), whatever Python reads it. Shown with 3.10's `match`
    read as 3.9, as 3.12's `type X = ...` is read as 3.11."""
    from autograder.core import sandbox
    from nbtest import cellsource, policy
    source = "def kind(x):\n    match x:\n        case 0:\n            return 'zero'\n    return 'other'\n"
    namespace = {}
    exec(cellsource.compile_cell(source, "<cell kind>"), namespace)
    assert namespace["kind"](0) == "zero"
    monkeypatch.setattr(cellsource, "PYTHON", (3, 9))
    monkeypatch.setattr(policy, "PYTHON", (3, 9))
    for read in (cellsource.compile_cell, sandbox._compile_cell, lambda s, _: policy.parse(s)):
        with pytest.raises(SyntaxError, match="only supported in Python 3.10") as e:
            read(source, "<cell kind>")
        assert 2 <= e.value.lineno <= 5           # within the match statement (CPython names its end)
