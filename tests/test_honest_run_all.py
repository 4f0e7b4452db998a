"""Run All over the honest samples of how Jupyter reads and runs a notebook, as a student runs them before
uploading: every cell runs in one kernel, no cell raises, and every check cell passes its public tests.

The samples (full marks and no finding in the grader, tests/test_policy.py and check_samples):

    residual-connections/idioms-2     Black continuation lines (`% (a, b)`, `!= b`), a cell's own
                                      `from __future__ import annotations`, a namedtuple result,
                                      torch.compile (decorator, options and call forms) and torch.jit.script
    residual-connections/helper-cell  a helper in a cell of the student's own, above the cell that uses it
    residual-connections/ffn-module-list  every ffn an nn.ModuleList that the blocks run in order
    fused-add-norm/idioms-3           a typing.NamedTuple result, Black continuation operators

Each runs as the notebook of a copy of its assignment's release folder (its check cells run the
test_public.py there, and the rules test reads the notebook beside it). To keep the
cost low, Part 5's sweep, scaling table and check cell (dozens of models trained) are left out: Part 5's
definitions run, and the grader exercises them. torch.compile and torch.compiler.compile run uncompiled, as
in the grader and pytest (nbtest.uncompiled, set by a cell after the setup cell): a real compile runs inductor and a C
compiler, about a minute per function on this machine; torch.jit.script compiles for real (milliseconds).
"""
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.course import ROOT

SAMPLES = [("residual-connections", "idioms-2"), ("residual-connections", "helper-cell"),
           ("residual-connections", "ffn-module-list"), ("fused-add-norm", "idioms-3")]
SLOW = {"part5-sweep", "part5-scaling", "part5-tests"}
UNCOMPILED = ("from nbtest.uncompiled import passed_through\nimport torch\n\n"
              "torch.compile = torch.compiler.compile = passed_through")


@pytest.fixture(scope="module", params=SAMPLES, ids=lambda s: "/".join(s))
def executed(request, tmp_path_factory):
    """The sample after nbclient ran it top to bottom, saved as the notebook of a copy of its release folder
    (the rules test reads the file beside test_public.py), Part 5's training left out."""
    assignment, sample = request.param
    folder = shutil.copytree(ROOT / "assignments" / assignment, tmp_path_factory.mktemp(sample) / assignment)
    path = shutil.copy(ROOT / "submissions" / assignment / f"{sample}.ipynb", folder / f"{assignment}.ipynb")
    nb = nbformat.read(path, as_version=4)
    # after the setup cell, as a student's own cell would sit: nbtest imported before the setup cell imports
    # Triton would find no interpreter to make autotune as on a GPU (nbtest.warmup.interpreter_as_on_gpu)
    cells = [c for c in nb.cells if c.get("id") not in SLOW]
    after = next(i for i, c in enumerate(cells) if c.get("id") == "setup") + 1
    nb.cells = [*cells[:after], nbformat.v4.new_code_cell(UNCOMPILED, id="uncompiled"), *cells[after:]]
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def test_no_cell_raises(executed):
    for cell in executed.cells:
        for o in cell.get("outputs", []):
            assert o.output_type != "error", f"{cell.get('id')}: {o.get('ename')}: {o.get('evalue')}"
            assert "Traceback" not in o.get("text", ""), (cell.get("id"), o)


def test_every_check_cell_passes(executed):
    checks = [c for c in executed.cells if c.get("id", "").endswith("-tests")]
    assert checks
    for cell in checks:
        out = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "FAILED" not in out and "not done" not in out, out
        assert "public tests passed" in out or "there is none here, so its check is skipped" in out, out
