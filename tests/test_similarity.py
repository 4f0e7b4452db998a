"""The similarity check sees through the edits copiers make, and pairs no two authors.

The evaluation set is copier_edits.py's (honest notebooks of several styles and three authors,
each copied with every edit alone and combined); benchmarks/similarity_eval.py prints its table.
"""
from __future__ import annotations

import html
import json
import random
import textwrap
from pathlib import Path

import pytest
from copier_edits import (ASSIGNMENT, EDITS, NO_OPS, ORDER, SAMPLES, combined, evaluation_set, solution_cells,
                          write_notebook)
from helpers import COURSE, RELEASE_NB, ROOT

from autograder.core.extract import Template
from autograder.grading.batch import grade_many
from autograder.report import similarity
from autograder.report.code import release_code, solution_code, solution_ids
from autograder.report.normalise import names_of, units

TEMPLATE = Template(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
IDS = solution_ids(TEMPLATE)
RELEASE = release_code(RELEASE_NB)


def shape(code: str) -> list[tuple[str, ...]]:
    return sorted(u.tokens for u in units(textwrap.dedent(code), names_of(RELEASE)))


def test_every_copy_is_listed_and_no_pair_of_authors_is():
    seed = random.randrange(1000)
    codes, positives, negatives = evaluation_set(IDS, seed)
    rule = COURSE.report
    prints = similarity.fingerprints(codes, RELEASE)
    listed = {frozenset((p.a, p.b)): p for p in similarity.compare(prints, rule.similarity_threshold,
                                                                   rule.min_shared)}
    missed = [p for p in positives if frozenset(p) not in listed]
    assert not missed, (seed, missed)
    wrong = [(a, b, listed[frozenset((a, b))].score) for a, b in negatives if frozenset((a, b)) in listed]
    assert not wrong, (seed, wrong)
    assert len({b.split("~")[0] for _, b in positives}) >= 6 and len(EDITS) >= 8


def test_a_copy_with_every_edit_keeps_its_bases_score(tmp_path):
    """The edits change how the code is typed, not what it does: graded, a copy scores what its base scores."""
    seed, expected = random.randrange(1000), json.loads((SAMPLES / "expected.json").read_text())["samples"]
    bases = ["full-marks", "honest-b", "style-identity-flag-shortcut"]
    for base in bases:
        cells = solution_cells(SAMPLES / f"{base}.ipynb", IDS)
        write_notebook(SAMPLES / f"{base}.ipynb", IDS, combined(ORDER, cells, random.Random(seed)),
                       tmp_path / f"{base}.ipynb")
    results = grade_many(ASSIGNMENT, [tmp_path / f"{base}.ipynb" for base in bases], COURSE, seed=seed)
    assert len(results) == len(bases)
    for r in results:
        base = Path(r.submission).name
        lost = [(t.name, t.output[:200]) for t in r.tests if t.score < t.max_score]
        assert r.score == expected[base]["score"], (base, seed, lost)


def test_what_is_typed_around_the_code_changes_nothing():
    plain = """
        def norms(blocks, x):
            out = []
            for b in blocks:
                if b is not None:
                    out.append(b(x).norm())
            return out
        """
    typed = '''
        import torch
        def norms(blocks: list, x) -> list:
            """Norms, one a block."""
            result = [blk(x).norm() for blk in blocks if not (blk is None)]   # a comprehension
            pass
            ...
            return result
            print("never")

        def unused_helper(a):
            return a * 2
        '''
    assert shape(plain) == shape(typed)
    assert shape(plain) != shape(plain.replace(".norm()", ".sum()"))       # what it does still counts
    assert shape(plain) != shape(plain.replace("is not None", "is None"))


def test_constant_branches_unused_names_and_order_change_nothing():
    a = """
        def f(x):
            y = x * 2
            return y + 1

        def g(x, fx):
            a, b = x, fx
            a += b
            return a
        """
    b = """
        def g(x, fx):
            if False:
                raise RuntimeError("no")
            unused = 42
            first = x
            first = first + fx
            return first

        def f(x):
            return 1 + 2 * x
        """
    assert shape(a) == shape(b)


def test_a_line_that_does_not_parse_loses_only_itself():
    code = "def f(x):\n    return x * 2 + 1\n%timeit f(1)\n"
    assert shape(code) == shape("def f(x):\n    return x * 2 + 1\n")


def test_the_release_alone_has_no_fingerprints():
    untouched = solution_code(SAMPLES / "untouched-release.ipynb", TEMPLATE)
    prints = similarity.fingerprints({"a": untouched, "b": untouched}, RELEASE)
    assert prints["a"].grams == {}
    assert similarity.compare(prints, 0.45, 50) == []


def test_code_nested_past_the_recursion_limit_is_compared_as_typed():
    deep = "def f(a):\n    return " + "+".join(["a"] * 3000) + "\n"
    honest = solution_code(SAMPLES / "honest-a.ipynb", TEMPLATE)
    prints = similarity.fingerprints({"a": deep, "b": deep, "c": honest}, RELEASE)
    assert [(p.a, p.b, p.identical) for p in similarity.compare(prints, 0.45, 50)] == [("a", "b", "byte-identical")]
    assert len(prints["c"].grams) > 500


def test_a_notebook_the_grader_does_not_read_is_not_compared(tmp_path):
    """The report reads a notebook within the grader's bounds (nbtest.Limits): one whose code is over them is left
    out, where the report read and compared any file up to 256 MiB (red team 37's 2.6 MB of split cells)."""
    nb = json.loads((SAMPLES / "honest-a.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "residual_add")
    nb["cells"].insert(nb["cells"].index(cell) + 1, dict(cell, source="# pad\n" * (200 << 10)))
    (tmp_path / "big.ipynb").write_text(json.dumps(nb))
    assert solution_code(tmp_path / "big.ipynb", TEMPLATE) is None
    assert solution_code(SAMPLES / "honest-a.ipynb", TEMPLATE)


def test_an_edited_notebook_is_read_as_it_was_written(tmp_path):
    cells = solution_cells(SAMPLES / "honest-a.ipynb", IDS)
    copy = EDITS["split-merge"](EDITS["no-op"](cells, random.Random(1)), random.Random(1))
    assert copy != cells
    write_notebook(SAMPLES / "honest-a.ipynb", IDS, copy, tmp_path / "copy.ipynb")
    assert solution_code(tmp_path / "copy.ipynb", TEMPLATE).split("\n") == [        # blank lines at cell ends aside
        line for cell in copy for line in cell.rstrip("\n").split("\n") + ["", ""]][:-1]


@pytest.mark.parametrize("edit", ["no-op", "reorder"])
def test_regions_show_each_students_own_lines_and_mark_the_matched_ones(edit):
    cells = solution_cells(SAMPLES / "honest-a.ipynb", IDS)
    codes = {"a": "\n\n".join(cells), "b": "\n\n".join(EDITS[edit](cells, random.Random(2)))}
    prints = similarity.fingerprints(codes, RELEASE)
    [pair] = similarity.compare(prints, 0.45, 50)
    regions = similarity.regions(prints, pair)
    assert len(regions) >= 10             # honest-a's functions and methods, each beside its copy
    marked = {"a": [], "b": []}
    for side, k in (("a", 0), ("b", 1)):
        own = set(codes[side].split("\n"))
        for region in regions:
            for line in region[k].split("\n"):
                text = html.unescape(line.removeprefix("<mark>").removesuffix("</mark>"))[6:]
                assert text in own, (side, text)
                if line.startswith("<mark>"):
                    marked[side].append(text.strip())
    for side in marked:
        assert "out = torch.add(x, fx)" in marked[side]
        assert not set(marked[side]) & set(NO_OPS)        # an inserted no-op matches nothing


def test_a_unit_of_many_lines_shows_its_first_lines_only():
    """A function padded with 200,000 comment lines: its excerpt on a pair's page stops at EXCERPT_LINES lines (red
    team 37's report, which ran for minutes on each pair it was in and wrote every line each time)."""
    honest = solution_code(SAMPLES / "honest-a.ipynb", TEMPLATE).split("\n")
    at = next(i for i, line in enumerate(honest) if line.startswith("def residual_add(")) + 1
    code = "\n".join(honest[:at] + ["    # pad"] * 200_000 + honest[at:])
    prints = similarity.fingerprints({"a": code, "b": code}, RELEASE)
    regions = similarity.regions(prints, similarity.compare(prints, 0.45, 50)[0])
    padded = [left for left, right in regions if "# pad" in left]
    assert len(padded) == 1 and padded[0].count("\n") == similarity.EXCERPT_LINES
    assert padded[0].endswith("left out)") and all(left == right for left, right in regions)


def test_pairs_that_share_a_student_are_one_cluster():
    """Connected components of the listed pairs: a-b and b-c make one cluster of three, d-e another."""
    Pair = similarity.Pair
    pairs = [Pair("b", "c", 0.6, 0.5, 55, ""), Pair("d", "e", 0.8, 0.7, 60, ""), Pair("a", "b", 0.9, 0.9, 80, "")]
    found = similarity.clusters(pairs)
    assert [c.members for c in found] == [["a", "b", "c"], ["d", "e"]]
    assert [(c.strongest.a, c.strongest.b, c.pairs) for c in found] == [("a", "b", 2), ("d", "e", 1)]
    assert similarity.clusters([]) == []
