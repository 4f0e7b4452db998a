"""Template.needed: each part's child loads only the cells its names need (docs/security.md)."""
import json

import pytest
import torch

import nbtest
from helpers import RELEASE_NB, SOURCE_NB

from autograder import contract
from autograder.core.extract import Extracted, Template

TEMPLATE = Template(SOURCE_NB)
REFERENCE = TEMPLATE.fill(SOURCE_NB)
CONTRACT = set(contract.load(SOURCE_NB.parent))


def needed(names: set[str], **cells: str) -> list[str]:
    """The labels a child for `names` loads, with some of the reference's cells replaced."""
    extracted = Extracted([(label, cells.get(label, src)) for label, src in REFERENCE.cells], {})
    return [label for label, _ in TEMPLATE.needed(extracted, names, CONTRACT)]


def test_a_part_loads_its_cells_and_what_they_use_and_nothing_else():
    assert needed({"chain_rule_grad", "split_gradient"}) == ["setup", "chain_rule_grad", "split_gradient"]
    assert needed({"residual_add"}) == ["setup", "residual_add"]
    # ResidualFFN uses residual_add and ProjectionShortcut, each in its own cell
    assert needed({"ResidualFFN"}) == ["setup", "residual_add", "projection_shortcut", "residual_ffn"]


def test_a_construct_in_another_part_s_cell_never_loads():
    patched = "import sys\nsys.modules['autograder.core.probe'].encode = None\n" + dict(REFERENCE.cells)["train"]
    assert "train" not in needed({"residual_add"}, train=patched)
    assert "train" in needed({"train"}, train=patched)


def test_helpers_imports_and_globals_from_other_cells_come_along():
    cells = dict(REFERENCE.cells)
    helper = cells["split_gradient"] + "\n\ndef _tanh_prime(v):\n    return 1 - math.tanh(v) ** 2\n"
    uses_helper = cells["chain_rule_grad"] + "\n_ = _tanh_prime\n"
    assert "split_gradient" in needed({"chain_rule_grad"}, split_gradient=helper, chain_rule_grad=uses_helper)
    imports = "import numpy as np\nfrom math import tau as TAU\n" + cells["gradient_norms"]
    uses_imports = cells["residual_add"] + "\n_ = (np, TAU)\n"
    assert "gradient_norms" in needed({"residual_add"}, gradient_norms=imports, residual_add=uses_imports)
    sets_global = cells["train"] + "\n\ndef _configure():\n    global SCALE\n    SCALE = 2.0\n"
    uses_global = cells["residual_add"] + "\n_ = lambda: SCALE\n"
    assert "train" in needed({"residual_add"}, train=sets_global, residual_add=uses_global)


def test_a_cell_that_no_longer_parses_still_loads_to_report_its_problem():
    assert needed({"residual_add"}, residual_add="def residual_add(x, fx:\n") == ["setup", "residual_add"]


def test_a_cell_that_defines_no_contract_name_serves_every_part():
    fused = SOURCE_NB.parent.parent / "fused-add-norm" / "fused-add-norm.ipynb"
    template, names = Template(fused), set(contract.load(fused.parent))
    torch_only = "def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):\n    return x + fx, x\n"
    extracted = Extracted([(label, torch_only if label == "fused_add_layernorm" else src)
                           for label, src in template.fill(fused).cells], {})
    # the wrapper never names the kernel, but the kernel's cell still loads (and is reported unlaunched)
    assert [label for label, _ in template.needed(extracted, names, names)] == \
        ["setup", "fused_kernel", "fused_add_layernorm"]


def _with_helper_cell(tmp_path):
    """The reference with residual_add's shape check in a cell of the student's own, above it, and a
    scratch cell (a demo) that nothing needs."""
    nb = nbtest.read_notebook(SOURCE_NB)
    at = next(i for i, c in enumerate(nb["cells"]) if nbtest.grade_id(c) == "residual_add")
    nb["cells"][at]["source"] = ("def residual_add(x, fx):\n    check_same_shape(x, fx)\n    return x + fx\n")
    own = lambda src: {"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None}
    nb["cells"][at:at] = [own("def check_same_shape(a, b):\n    if a.shape != b.shape:\n"
                              "        raise ValueError(f'shapes {tuple(a.shape)} and {tuple(b.shape)} differ')\n"),
                          own("demo = residual_add(torch.ones(2), torch.ones(2))\n")]
    path = tmp_path / "helper.ipynb"
    path.write_text(json.dumps(nb))
    return path, f"cell {at}"


def test_a_helper_in_a_cell_of_the_student_s_own_runs_where_it_is_needed(tmp_path):
    """Run All runs every cell: the grader and the public tests run the student's own cells that the
    graded cells need, in their place, checked as the student's; a cell nothing needs does not run."""
    path, helper = _with_helper_cell(tmp_path)
    extracted = TEMPLATE.fill(path)
    labels = [label for label, _ in extracted.cells]
    assert labels.index("setup") < labels.index(helper) == labels.index("residual_add") - 1
    assert len(labels) == len(REFERENCE.cells) + 1            # the demo cell is not run
    assert [label for label, _ in TEMPLATE.needed(extracted, {"residual_add"}, CONTRACT)] == \
        ["setup", helper, "residual_add"]
    assert (helper, dict(extracted.cells)[helper], True) in TEMPLATE.marked(extracted)
    module = nbtest.load(path, name="helper_cell", partial=True)
    assert callable(module.check_same_shape) and not hasattr(module, "demo")


def test_a_chain_of_many_own_cells_costs_time_in_proportion_to_its_size(tmp_path, monkeypatch):
    """Own cells each needing the next (the last one the residual_add cell's helper) are found and placed with
    each cell read a bounded number of times: found by rescanning every cell for each one added, and placed by
    searching the list for each, a chain of 4,000 tiny cells (half a megabyte) held a whole batch before its
    first student was graded, since a batch reads every notebook's code before grading any."""
    nb = json.loads(SOURCE_NB.read_text())
    cell = next(c for c in nb["cells"] if nbtest.grade_id(c) == "residual_add")
    cell["source"] = "".join(cell["source"]) + "\n_ = h0\n"
    n = nbtest.Limits.MAX_CODE_CELLS - 100          # within the code cells a notebook may have
    nb["cells"] += [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": f"h{j} = h{j + 1} if False else 0\n" if j < n - 1 else f"h{j} = 0\n"}
                    for j in reversed(range(n))]
    path = tmp_path / "chain.ipynb"
    path.write_text(json.dumps(nb))
    parses = []
    real = nbtest.notebook.parse
    monkeypatch.setattr(nbtest.notebook, "parse", lambda source: parses.append(1) or real(source))
    for cache in (nbtest.notebook.bound_names, nbtest.notebook.used_names, nbtest.notebook.free_names,
                  nbtest.notebook.top_level_names):
        cache.cache_clear()
    extracted = TEMPLATE.fill(path)
    labels = [label for label, _ in extracted.cells]
    chain = [label for label in labels if label.startswith("cell ")]
    assert labels[-n:] == chain == [f"cell {i}" for i in range(len(nb["cells"]) - n, len(nb["cells"]))]   # Run All's order
    assert [label for label, _ in TEMPLATE.needed(extracted, {"residual_add"}, CONTRACT)].count("residual_add") == 1
    assert len(parses) < 10 * (n + len(nb["cells"]))


def test_an_own_cell_that_first_looks_at_run_all_s_data_still_defines_its_helper(tmp_path):
    """In Run All a helper cell may read what a cell the grader does not run made (the digits X, above Part 5)
    before its def; the public tests, like the grader, run an own cell on past that line, so the helper is
    there. A solution cell that fails still stops where it fails."""
    nb = nbtest.read_notebook(SOURCE_NB)
    at = next(i for i, c in enumerate(nb["cells"]) if nbtest.grade_id(c) == "residual_add")
    nb["cells"][at]["source"] = "def residual_add(x, fx):\n    check_same_shape(x, fx)\n    return x + fx\n"
    nb["cells"].insert(at, {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                            "source": "print(X.shape)\n\ndef check_same_shape(a, b):\n    assert a.shape == b.shape\n"})
    path = tmp_path / "data-first.ipynb"
    path.write_text(json.dumps(nb))
    assert f"cell {at}" in [label for label, _ in TEMPLATE.needed(TEMPLATE.fill(path), {"residual_add"}, CONTRACT)]
    module = nbtest.load(path, name="data_first", partial=True)
    assert callable(module.check_same_shape)
    nb["cells"][at]["metadata"] = {"nbgrader": {"grade_id": "residual_add", "solution": True}}
    nb["cells"][at + 1]["metadata"] = {}
    path.write_text(json.dumps(nb))
    with pytest.raises(AttributeError, match="NameError"):
        nbtest.load(path, name="data_first_solution", partial=True).check_same_shape


def test_a_solution_cell_split_in_two_is_taken_whole(tmp_path):
    """JupyterLab's Split Cell gives both halves the cell's nbgrader metadata (jupyter/nbgrader#1083): Run All and
    the public tests run both, so the grader takes both, in order, as the one cell; it took only the first half,
    and a plain_mlp split from its PlainBlock scored nothing for plain_mlp."""
    nb = nbtest.read_notebook(SOURCE_NB)
    at = next(i for i, c in enumerate(nb["cells"]) if nbtest.grade_id(c) == "residual_add")
    second = json.loads(json.dumps(nb["cells"][at]))
    nb["cells"][at]["source"] = "def check_same_shape(a, b):\n    assert a.shape == b.shape\n"
    second["source"] = "def residual_add(x, fx):\n    check_same_shape(x, fx)\n    return x + fx\n"
    second["id"] = "residual_add-split"
    nb["cells"].insert(at + 1, second)
    path = tmp_path / "split.ipynb"
    path.write_text(json.dumps(nb))
    extracted = TEMPLATE.fill(path)
    assert [label for label, _ in extracted.cells].count("residual_add") == 1 and not extracted.problems
    assert dict(extracted.cells)["residual_add"] == nb["cells"][at]["source"] + second["source"]
    module = nbtest.load(path, name="split_cell", partial=True)
    assert callable(module.residual_add) and callable(module.check_same_shape)


def test_a_solution_cell_without_its_metadata_runs_as_run_all_runs_it(tmp_path):
    """A solution typed again into a new cell, or a cell whose nbgrader metadata a round trip dropped, has no
    grade_id: it runs as an own cell that binds a contract name no solution cell binds, in the grader and in
    the public tests alike. A scratch copy of a contract name that a solution cell binds, and no cell reads,
    still does not run."""
    nb = nbtest.read_notebook(SOURCE_NB)
    at = next(i for i, c in enumerate(nb["cells"]) if nbtest.grade_id(c) == "transformer_block")
    nb["cells"][at]["metadata"] = {}
    scratch = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
               "source": "def split_gradient(*args):\n    return None\n"}
    nb["cells"].append(scratch)
    path = tmp_path / "lost.ipynb"
    path.write_text(json.dumps(nb))
    (tmp_path / "contract.toml").write_bytes((SOURCE_NB.parent / "contract.toml").read_bytes())
    extracted = TEMPLATE.fill(path)
    cells = dict(extracted.cells)
    own = [label for label in cells if label not in dict(REFERENCE.cells)]
    assert len(own) == 1 and "class TransformerBlock" in cells[own[0]] and "return None" not in "".join(cells.values())
    assert extracted.problems == {"transformer_block": "solution cell 'transformer_block' is missing from the notebook"}
    module = nbtest.load(path, name="metadata_lost", partial=True)
    assert isinstance(module.TransformerBlock, type) and module.split_gradient.__code__.co_argcount > 0
    (tmp_path / "contract.toml").unlink()       # outside an assignment's folder: nothing asks for TransformerBlock
    assert not hasattr(nbtest.load(path, name="metadata_lost_alone", partial=True), "TransformerBlock")


def test_a_module_cell_whose_nbgrader_metadata_was_dropped_stands_for_its_solution_cell(tmp_path):
    """Every cell's nbgrader metadata dropped, its `module` tag kept (red team 38): the public tests run the
    module cells as they are, so the grader takes each such cell for the solution cell whose names it defines.
    It reported every solution cell missing, and the notebook scored 0 while every public test passed.
    (fused-add-norm's solution cells carry the tag; residual-connections' run as own cells, the test above.)"""
    source = SOURCE_NB.parents[1] / "fused-add-norm" / "fused-add-norm.ipynb"
    template = Template(source)
    nb = nbtest.read_notebook(source)
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("nbgrader", None)
    path = tmp_path / "stripped.ipynb"
    path.write_text(json.dumps(nb))
    extracted = template.fill(path)
    assert extracted.cells == template.fill(source).cells and not extracted.problems
    module = nbtest.load(path, name="stripped_fused", partial=True)
    assert callable(module.fused_add_layernorm) and callable(module.fused_add_layernorm_kernel)


def test_the_setup_cell_stripped_of_its_metadata_still_runs_first(tmp_path):
    """residual-connections with every cell's nbgrader metadata dropped, the setup cell's `module` tag kept: its
    solution cells then run as own cells, placed after the module cell above them, and the setup cell, its
    grade_id gone, was none the grader knew, so they ran ahead of its imports (red team 39: 15 of 100, every
    public test passed). A module cell with no grade_id stands for the locked cell it binds the names of."""
    nb = nbtest.read_notebook(SOURCE_NB)
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("nbgrader", None)
    path = tmp_path / "stripped.ipynb"
    path.write_text(json.dumps(nb))
    (tmp_path / "contract.toml").write_bytes((SOURCE_NB.parent / "contract.toml").read_bytes())
    extracted = TEMPLATE.fill(path)
    assert [src for _, src in extracted.cells] == [src for _, src in REFERENCE.cells]


def test_a_stub_left_in_place_runs_the_def_a_later_own_cell_writes(tmp_path):
    """A solution cell left as the release's stub, the student's code in a cell of their own below it: Run All
    runs the later def, and so do the grader and the public tests (red team 39: both graded the stub, which no
    module cell reads, while the notebook's own check passed the def). A scratch copy below a solved cell still
    does not run (test_a_solution_cell_without_its_metadata_runs_as_run_all_runs_it)."""
    reference, stubs = nbtest.read_notebook(SOURCE_NB), nbtest.read_notebook(RELEASE_NB)
    at = next(i for i, c in enumerate(reference["cells"]) if nbtest.grade_id(c) == "residual_stream_norms")
    solved = reference["cells"][at]
    left = dict(solved, source=next(c for c in stubs["cells"] if nbtest.grade_id(c) == "residual_stream_norms")["source"])
    own = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": solved["source"]}
    path = tmp_path / "below.ipynb"
    path.write_text(json.dumps(dict(reference, cells=reference["cells"][:at] + [left, own] + reference["cells"][at + 1:])))
    (tmp_path / "contract.toml").write_bytes((SOURCE_NB.parent / "contract.toml").read_bytes())
    cells = TEMPLATE.fill(path).cells
    assert [src for _, src in cells].count(nbtest.source_of(own)) == 1
    assert [label for label, _ in cells].index("residual_stream_norms") < len(cells) - 1
    module = nbtest.load(path, name="stub_then_def", partial=True)
    assert module.residual_stream_norms([], torch.ones(1, 2, 3)) == pytest.approx([3 ** 0.5])
    # the def at the end, under a copy of the setup cell (its metadata pasted with it): still after the stub, as in
    # Run All; the copy placed it right after the setup cell, where the stub ran later and won
    setup = next(c for c in reference["cells"] if nbtest.grade_id(c) == "setup")
    path.write_text(json.dumps(dict(reference, cells=reference["cells"][:at] + [left] + reference["cells"][at + 1:]
                                    + [setup, own])))
    labels = [label for label, _ in TEMPLATE.fill(path).cells]
    assert labels.index("residual_stream_norms") < labels.index(f"cell {len(reference['cells']) + 1}")
