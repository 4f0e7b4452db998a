"""The release: generated from solutions/, no solution code, stubs everywhere, no drift."""
import json

import pytest
import torch

from autograder.course import ROOT
from autograder.nbgrading import release
from helpers import ASSIGNMENTS, COURSE, NAMES, solution_lines
from nbtest.rules_text import imports_rule

@pytest.mark.parametrize("a", ASSIGNMENTS, ids=NAMES)
def test_source_has_solution_regions(a):
    assert len(solution_lines(a)) > 10


@pytest.mark.parametrize("a", ASSIGNMENTS, ids=NAMES)
def test_release_has_no_solution_text(a):
    text = a.notebook_path(ROOT / "assignments").read_text()
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert [l for l in solution_lines(a) if l in text] == []


@pytest.mark.parametrize("a", ASSIGNMENTS, ids=NAMES)
def test_release_has_no_outputs_or_execution_counts(a):
    for cell in json.loads(a.notebook_path(ROOT / "assignments").read_text())["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["id"]


@pytest.mark.parametrize("a", ASSIGNMENTS, ids=NAMES)
def test_the_notebook_states_the_import_rule_the_policy_applies(a):
    """The rules section's import bullet is written from policy.py's own lists (nbtest/rules_text.py):
    every module and library path that can flag or hold a line is named where the student reads."""
    line = imports_rule(a.rules)
    for root in (ROOT / "solutions", ROOT / "assignments"):
        text = "".join(json.loads(a.notebook_path(root).read_text())["cells"][1]["source"])
        assert line in text.splitlines(), f"{a.notebook_path(root)}: its rules cell's import bullet should read\n{line}"


def test_every_stub_of_assignment_1_raises_not_implemented(release):
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
    assert release.drift(COURSE) == []


def test_student_dist_holds_the_release_and_nothing_else(tmp_path):
    out = release.build_student(tmp_path / "student")
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    package = sorted(f"nbtest/{p.name}" for p in release.STUDENT_PACKAGE.glob("*.py"))
    assert files == sorted(["README.md", "pytest.ini", "requirements.txt", *package]
                           + [f"{a.name}/{name}" for a in ASSIGNMENTS
                              for name in (a.notebook, "test_public.py", "contract.toml", "rules.toml")])
    everything = "\n".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert [l for a in ASSIGNMENTS for l in solution_lines(a) if l in everything] == []
    assert "autograder" not in everything
