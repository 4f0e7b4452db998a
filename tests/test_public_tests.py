"""The public tests, run as a student runs them: pass on the reference, fail clearly on stubs."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbtest
import pytest

from helpers import COURSE, NAMES, RELEASE_NB, SOURCE_NB, SampleClass, public_test_count

from autograder.course import ROOT

N_PUBLIC = public_test_count(COURSE.assignment("residual-connections"))


def run_pytest(folder):
    """`pytest` in an assignment folder, as a student types it; returns (exit code, output)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf"],
                          cwd=folder, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_reference_passes_every_public_test():
    code, out = run_pytest(SOURCE_NB.parent)
    assert code == 0, out
    assert f"{N_PUBLIC} passed" in out, out


def test_release_fails_every_public_test_with_a_clear_message():
    code, out = run_pytest(RELEASE_NB.parent)
    assert code == 1, out
    assert f"{N_PUBLIC} failed" in out, out
    assert out.count("not implemented yet") >= N_PUBLIC, out
    assert "Traceback" not in out


def test_check_in_the_notebook_passes_on_reference(reference, capsys):
    for part in (1, 2, 3, 4, 5):
        nbtest.check(part, vars(reference), SOURCE_NB.parent / "test_public.py")
    out = capsys.readouterr().out
    assert "FAILED" not in out and "not done" not in out
    assert sum(int(n) for n in re.findall(r"(\d+) of \d+ public tests passed", out)) == N_PUBLIC


def test_check_in_the_notebook_reports_each_stub(release, capsys):
    nbtest.check(1, vars(release), RELEASE_NB.parent / "test_public.py")
    out = capsys.readouterr().out
    assert "not done  test_part1_residual_add_values_and_shape: still the stub" in out
    assert re.search(r"^Part 1: 0 of (\d+) public tests passed \(\1 not done\)\.$", out, re.M), out


def test_check_names_the_misconception(reference, capsys):
    """A broadcasting residual_add fails with the public test's explanation, not a bare assert."""
    live = dict(vars(reference), residual_add=lambda x, fx: x + fx)
    nbtest.check(1, live, SOURCE_NB.parent / "test_public.py")
    out = capsys.readouterr().out
    assert "FAILED    test_part1_residual_add_rejects_broadcasting" in out
    assert re.search(r"^Part 1: \d+ of \d+ public tests passed \(2 failed\)\.$", out, re.M), out


def test_loader_reports_a_broken_cell(tmp_path):
    nb = nbtest.read_notebook(SOURCE_NB)
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "split_gradient")
    cell["source"] = "def split_gradient(x0, dF, upstream):\n    return (upstream,\n"
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(nbtest.NotebookError, match=r"(?s)cell 'split_gradient' fails when run on its own: .*SyntaxError"):
        nbtest.load(path)


@pytest.mark.parametrize("content, problem", [("{not json", "not JSON"), ('{"a": 1}', "no 'cells' list")])
def test_loader_reports_an_unreadable_notebook(tmp_path, content, problem):
    path = tmp_path / "x.ipynb"
    path.write_text(content)
    with pytest.raises(nbtest.NotebookError, match=problem):
        nbtest.load(path)


def _beside_release(tmp_path, assignment: str, sample) -> "Path":
    """A sample notebook in a folder laid out as the release's (contract.toml, rules.toml beside it)."""
    folder = tmp_path / assignment
    folder.mkdir(parents=True)
    for name in ("contract.toml", "rules.toml"):
        shutil.copy(ROOT / "assignments" / assignment / name, folder / name)
    return Path(shutil.copy(sample, folder / f"{assignment}.ipynb"))


@pytest.mark.parametrize("assignment", NAMES)
def test_the_rules_test_passes_every_honest_sample(tmp_path, assignment):
    """The honest samples, the idiom corpus's among them, break no rule in the public tests either."""
    parts = sorted(COURSE.assignment(assignment).auto)
    for sample in SampleClass(assignment).honest:
        notebook = _beside_release(tmp_path / sample, assignment, ROOT / "submissions" / assignment / sample)
        assert {p: nbtest.rule_breaks(p, notebook) for p in parts} == {p: [] for p in parts}, sample


def test_the_rules_test_shows_the_line_the_rule_and_what_to_do(tmp_path):
    notebook = _beside_release(tmp_path, "residual-connections",
                               ROOT / "submissions" / "residual-connections" / "reach-alias-getattr.ipynb")
    shown = nbtest.rule_breaks(1, notebook)
    assert any("[builtin-alias]" in line and "ga, sa = getattr, setattr" in line and "call getattr(...) directly"
               in line for line in shown), shown
    with pytest.raises(AssertionError, match="README.md"):
        nbtest.follows_rules(1, notebook)
