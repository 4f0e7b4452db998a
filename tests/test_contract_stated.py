"""Every requirement an assignment's contract declares is stated where the student reads the stub:
in the stub's own cell (its docstring and signature) or in the markdown cell above it."""
import ast
import re

import nbtest
import pytest

from autograder import contract
from helpers import ASSIGNMENTS, ROOT


def defining_cell(cells: list, name: str, kind: str) -> int:
    """The index of the solution cell that defines `name`."""
    pattern = re.compile(rf"^(?:def|class) {re.escape(name)}\b", re.M)
    found = [i for i, c in enumerate(cells) if nbtest.is_solution(c) and pattern.search(nbtest.source_of(c))]
    assert len(found) == 1, f"{name} ({kind}) is defined in {len(found)} solution cells, expected 1"
    return found[0]


def stated(word: str, text: str) -> bool:
    """word appears in text as a whole word (or, for punctuation such as ffn[0], as written)."""
    if re.fullmatch(r"\w+", word):
        return re.search(rf"\b{re.escape(word)}\b", text) is not None
    return word in text


@pytest.mark.parametrize("a", ASSIGNMENTS, ids=lambda a: a.name)
def test_every_requirement_is_stated_at_its_stub(a):
    release = a.notebook_path(ROOT / "assignments")
    cells = nbtest.read_notebook(release)["cells"]
    missing = {}
    for name, entry in contract.load(release.parent).items():
        i = defining_cell(cells, name, entry.kind)
        above = next((nbtest.source_of(c) for c in reversed(cells[:i]) if c["cell_type"] == "markdown"), "")
        text = nbtest.source_of(cells[i]) + above
        gaps = [w for w in entry.requirements if not stated(w, text)]
        if gaps:
            missing[name] = gaps
    assert not missing, f"{a.name}: requirements the student is never told, by stub: {missing}"


def test_the_check_finds_an_unstated_requirement():
    assert not stated("ln1", "attn and ln2 only")
    assert stated("ffn[0]", "weights go into ffn[0]") and not stated("x", "fx only")


@pytest.mark.parametrize("a", ASSIGNMENTS, ids=lambda a: a.name)
def test_every_public_failure_says_what_was_expected(a):
    """Each assert of the public tests carries a message, and none uses pytest.raises, whose failure is a
    bare "DID NOT RAISE" (nbtest.value_error says what was expected instead)."""
    path = a.notebook_path(ROOT / "solutions").parent / "test_public.py"
    tree = ast.parse(path.read_text())
    bare = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert) and n.msg is None]
    raises = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "raises"]
    assert not bare and not raises, f"{path}: asserts without a message at {bare}, pytest.raises at {raises}"
