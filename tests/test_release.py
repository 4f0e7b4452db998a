"""The release: generated from solutions/, no solution code, stubs everywhere, no drift."""
import json
import re

import nbtest
import pytest
import torch

from autograder import release
from conftest import RELEASE_NB, SOURCE_NB

SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def solution_lines() -> set[str]:
    """Non-trivial lines that occur in the source notebook only between solution markers."""
    src = "\n".join(nbtest.source_of(c) for c in nbtest.read_notebook(SOURCE_NB)["cells"])
    inside = {l.strip() for r in SOLUTION_REGION.findall(src) for l in r.splitlines() if len(l.strip()) > 12}
    outside = {l.strip() for l in SOLUTION_REGION.sub("", src).splitlines()}
    outside |= {l.strip() for l in (SOURCE_NB.parent / "test_public.py").read_text().splitlines()}
    return inside - outside


def test_source_has_solution_regions():
    assert len(solution_lines()) > 30


def test_release_has_no_solution_text():
    text = RELEASE_NB.read_text()
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    leaked = [l for l in solution_lines() if l in text]
    assert leaked == []


def test_release_has_no_outputs_or_execution_counts():
    for cell in json.loads(RELEASE_NB.read_text())["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["id"]


def test_every_stub_raises_not_implemented(release):
    calls = {
        "residual_add": lambda: release.residual_add(torch.zeros(2), torch.zeros(2)),
        "Residual": lambda: release.Residual(torch.nn.Identity())(torch.zeros(2)),
        "ProjectionShortcut": lambda: release.ProjectionShortcut(2, 3),
        "ResidualFFN": lambda: release.ResidualFFN(2, 3),
        "chain_rule_grad": lambda: release.chain_rule_grad(1.0, [], 1.0),
        "split_gradient": lambda: release.split_gradient(1.0, abs, 1.0),
        "gradient_norms": lambda: release.gradient_norms(torch.zeros(2), []),
        "TransformerBlock": lambda: release.TransformerBlock(8, 2),
        "residual_stream_norms": lambda: release.residual_stream_norms([], torch.zeros(1, 1, 2)),
    }
    for name, call in calls.items():
        with pytest.raises(NotImplementedError):
            call()


def test_regenerating_the_release_reproduces_assignments():
    assert release.drift() == []


def test_student_dist_holds_the_release_and_nothing_else(tmp_path):
    out = release.build_student(tmp_path / "student")
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == ["README.md", "nbtest.py", "pytest.ini", "requirements.txt",
                     "residual-connections/residual-connections.ipynb",
                     "residual-connections/test_public.py"]
    everything = "\n".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert [l for l in solution_lines() if l in everything] == []
    assert "autograder" not in everything
