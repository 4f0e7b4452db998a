"""The public tests, run as a student runs them: pass on the reference, fail clearly on stubs."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbtest
import pytest
import torch
from nbtest import uncompiled
from torch import nn

from helpers import COURSE, NAMES, RELEASE_NB, SOURCE_NB, SampleClass, public_test_count

from autograder.core.extract import Template
from autograder.course import ROOT
from autograder.grading.grader import Grader
from autograder.nbgrading import release

N_PUBLIC = public_test_count(COURSE.assignment("residual-connections"))


def run_pytest(folder, tmp: Path | None = None):
    """`pytest` in an assignment folder, as a student types it, with TMPDIR=tmp if given; returns (exit code,
    output)."""
    env = {**os.environ, **({"TMPDIR": str(tmp)} if tmp else {})}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_reference_passes_every_public_test(tmp_path):
    """Every public test passes, and the run leaves nothing in the temporary folder (the monitor's scratch
    folder, where torch's compiler writes its cache, is removed at the end)."""
    code, out = run_pytest(SOURCE_NB.parent, tmp_path)
    assert code == 0, out
    assert f"{N_PUBLIC} passed" in out, out
    assert list(tmp_path.iterdir()) == []


def test_release_fails_every_public_test_with_a_clear_message():
    code, out = run_pytest(RELEASE_NB.parent)
    assert code == 1, out
    assert f"{N_PUBLIC} failed" in out, out
    assert out.count("not implemented yet") >= N_PUBLIC, out
    assert "Traceback" not in out


@pytest.mark.parametrize("message, shape, named", [
    ("cannot add (9, 7, 1) and (9, 7, 11)", (9, 7, 1), True),
    ("got [9, 7, 1]", (9, 7, 1), True),
    ("got torch.Size([9, 7, 1])", (9, 7, 1), True),
    ("x: 9x7x1 and fx: 9x7x11", (9, 7, 1), True),      # a shape as an honest message often writes it
    ("x: 9x7x1 and fx: 9x7x11", (9, 7, 11), True),
    ("x is 9 × 7 × 1", (9, 7, 1), True),
    ("weight has shape (5,), not (64,)", (5,), True),
    ("weight has shape (5), not (64)", (5,), True),
    ("x: 9x7x11 and fx: 9x7x11", (9, 7, 1), False),   # a prefix of another shape names nothing
    ("x: 19x7x1", (9, 7, 1), False),
    ("(9, 7) and (9, 7, 11)", (9, 7, 1), False),
    ("width 5", (5,), False),
])
def test_a_shape_is_named_in_any_of_the_usual_spellings(message, shape, named):
    """The public tests and the grader read an error message's shapes with this one helper."""
    assert nbtest.names_shape(message, shape) is named


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


def _with_broken_split_gradient() -> dict:
    nb = nbtest.read_notebook(SOURCE_NB)
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "split_gradient")
    cell["source"] = "def split_gradient(x0, dF, upstream):\n    return (upstream,\n"
    return nb


def test_check_runs_an_ffn_held_in_a_module_list_in_order(reference, capsys):
    """An ffn kept in an nn.ModuleList that the block's forward runs in order: where the tests call ffn
    themselves they run it in order too (nbtest.layers.as_layer, which the grader's probe calls)."""
    class ListFFN(reference.ResidualFFN):
        def __init__(self, d_in, d_out, expansion=4):
            super().__init__(d_in, d_out, expansion)
            self.ffn = nn.ModuleList(list(self.ffn))

        def forward(self, x):
            h = x
            for layer in self.ffn:
                h = layer(h)
            return reference.residual_add(self.shortcut(x), h)

    nbtest.check(1, dict(vars(reference), ResidualFFN=ListFFN), SOURCE_NB.parent / "test_public.py")
    out = capsys.readouterr().out
    assert "FAILED" not in out and "not done" not in out, out


def test_compiled_functions_pass_through_where_the_tests_run_cells(monkeypatch):
    """nbtest.uncompiled.install, which the public tests' fixture and the grader's child run before any
    cell: every form of torch.compile and torch.jit.script hands back what it was given."""
    for owner, name in ((torch, "compile"), (torch.compiler, "compile"), (torch.jit, "script")):
        monkeypatch.setattr(owner, name, getattr(owner, name))     # this process's originals come back after
    uncompiled.install()
    layer = nn.Linear(2, 2)
    assert torch.compile(abs) is abs and torch.compile(layer, fullgraph=True) is layer
    assert torch.compile(mode="max-autotune", dynamic=True)(abs) is abs and torch.compiler.compile(abs) is abs
    assert torch.jit.script(abs) is abs and torch.jit.script(layer) is layer


def test_check_names_a_module_without_forward_as_an_error_not_a_stub(reference, capsys):
    """An ffn built as an nn.ModuleList that the block's own forward calls: torch's own NotImplementedError,
    which is no stub."""
    class ListFFN(reference.ResidualFFN):
        def __init__(self, d_in, d_out, expansion=4):
            super().__init__(d_in, d_out, expansion)
            self.ffn = nn.ModuleList(list(self.ffn))

    nbtest.check(1, dict(vars(reference), ResidualFFN=ListFFN), SOURCE_NB.parent / "test_public.py")
    out = capsys.readouterr().out
    assert 'FAILED    test_part1_residual_ffn' in out and 'Module [ModuleList] is missing the required "forward"' in out
    assert "not done" not in out, out


def test_loader_reports_a_broken_cell(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(_with_broken_split_gradient()))
    with pytest.raises(nbtest.NotebookError, match=r"(?s)cell 'split_gradient' fails when run on its own: .*SyntaxError"):
        nbtest.load(path)
    partial = nbtest.load(path, name="broken_partial", partial=True)     # the public tests' fixture
    assert callable(partial.chain_rule_grad)
    with pytest.raises(AttributeError, match=r"does not define 'split_gradient': cell 'split_gradient' raised "
                                             r"SyntaxError when loaded: '\(' was never closed \(line 2\)"):
        partial.split_gradient


def test_a_cell_that_does_not_parse_costs_its_own_tests_in_pytest(tmp_path):
    """As in the grade, where only the broken cell's names are missing: not every test in error."""
    code, out = run_pytest(_release_copy(tmp_path, "residual-connections", _with_broken_split_gradient()))
    failed = re.findall(r"^FAILED\s+(test_part\w+)", out, re.M)
    assert code == 1 and " error" not in out and failed, out
    assert all(name.startswith("test_part2_") for name in failed), failed
    assert "cell 'split_gradient' raised SyntaxError when loaded: '(' was never closed (line 2)" in out, out


def test_cells_are_compiled_without_the_loader_s_future_imports(reference):
    """nbtest/notebook.py has `from __future__ import annotations`; a cell's annotations stay classes, as
    in Jupyter (a typing.NamedTuple result would otherwise make typing compile strings)."""
    assert reference.residual_add.__annotations__["x"] is reference.Tensor


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
                               ROOT / "submissions" / "residual-connections" / "reach-reexport-torch.ipynb")
    shown = nbtest.rule_breaks(1, notebook)
    assert any("[process-introspection]" in line and "from torch import sys as _reexported" in line
               and "a solution needs none of it" in line for line in shown), shown
    assert all(line.startswith("(holds) ") for line in shown), shown
    with pytest.raises(AssertionError, match="Rules the grader checks") as failed:
        nbtest.follows_rules(1, notebook)
    assert "each line marked (holds) also holds tests" in str(failed.value)


def test_a_flag_rule_is_not_said_to_hold_tests(tmp_path):
    """A flag rule (a library patched) only flags the notebook for review; the grader holds no test for it but
    those that name it, so the rules test does not say it holds any (it said so of every rule), but of those."""
    notebook = _beside_release(tmp_path, "residual-connections",
                               ROOT / "submissions" / "residual-connections" / "checker-cheat.ipynb")
    parts = sorted(COURSE.assignment("residual-connections").auto)
    shown = [line for p in parts for line in nbtest.rule_breaks(p, notebook)]
    assert shown and all("[monkeypatch]" in line and not line.startswith("(holds)") for line in shown), shown
    part = next(p for p in parts if nbtest.rule_breaks(p, notebook))
    with pytest.raises(AssertionError, match="for an instructor's review:") as failed:
        nbtest.follows_rules(part, notebook)
    assert "holds" not in str(failed.value).split("\n")[0]
    # a flag rule some hidden test is held by (rules.toml's `holding`: fused-add-norm's kernel rules hold the fusion
    # tests) holds those tests, and says so
    fused = _beside_release(tmp_path / "fused", "fused-add-norm",
                            ROOT / "submissions" / "fused-add-norm" / "standard-jit-origin-computes.ipynb")
    shown = nbtest.rule_breaks(1, fused)
    assert shown and all(line.startswith("(holds) ") for line in shown), shown


def test_the_rules_test_reads_within_the_grader_s_bounds(tmp_path):
    """rules.toml's max_cell_kb (course.toml's grading.max_cell_kb, written by the release) bounds the rules
    test's reading as it bounds the grader's: a cell the grader would not run is listed by its part's rules
    test with the grader's own reason, and a notebook the grader would not read fails the rules test with the
    grader's own error. Before, a student met these bounds only in the grade."""
    assert "max_cell_kb = 512" in (ROOT / "assignments" / "residual-connections" / "rules.toml").read_text()
    nb = nbtest.read_notebook(ROOT / "submissions" / "residual-connections" / "full-marks.ipynb")

    def padded(labels: set[str]) -> Path:
        """The notebook with a 600 KiB comment at the end of these solution cells, beside the release's files."""
        cells = [dict(c, source=nbtest.source_of(c) + "\n# " + "x" * (600 << 10) + "\n")
                 if nbtest.grade_id(c) in labels else c for c in nb["cells"]]
        path = tmp_path / f"{len(labels)}.ipynb"
        path.write_text(json.dumps(dict(nb, cells=cells)))
        return _beside_release(tmp_path / path.stem, "residual-connections", path)

    one = padded({"residual_add"})
    problems = Template(SOURCE_NB).fill(one).problems
    assert list(problems) == ["residual_add"] and "600 KiB" in problems["residual_add"]
    assert [line for line in nbtest.rule_breaks(1, one) if "KiB" in line] == [problems["residual_add"]]
    two = padded({"residual_add", "train"})        # 1.2 MiB of code in all
    with pytest.raises(nbtest.NotebookError) as grader:
        Template(SOURCE_NB).fill(two)
    with pytest.raises(nbtest.NotebookError) as public:
        nbtest.rule_breaks(1, two)
    assert "code cells may hold in all" in str(grader.value) and str(public.value) == str(grader.value)
    # a cell split in two (JupyterLab copies its metadata to both halves) is one cell to the grader: 2 x 300 KiB
    at = next(i for i, c in enumerate(nb["cells"]) if nbtest.grade_id(c) == "residual_add")
    half = dict(nb["cells"][at], source="# " + "x" * (300 << 10) + "\n")
    (tmp_path / "split.ipynb").write_text(json.dumps(dict(nb, cells=nb["cells"][:at + 1] + [half, half]
                                                          + nb["cells"][at + 1:])))
    split = _beside_release(tmp_path / "split", "residual-connections", tmp_path / "split.ipynb")
    problems = Template(SOURCE_NB).fill(split).problems
    assert list(problems) == ["residual_add"]
    assert [line for line in nbtest.rule_breaks(1, split) if "KiB" in line] == [problems["residual_add"]]


def test_a_helper_cell_s_broken_rule_is_listed_by_the_part_it_serves(tmp_path):
    """A cell of the student's own that defines no name the contract asks for (a helper) belongs to the part of
    the cell below it that does, in the public tests and in the grade alike: one above Part 4's first solution
    cell was listed by part 1's rules test, where a student working on Part 4 would not look."""
    nb = nbtest.read_notebook(ROOT / "submissions" / "residual-connections" / "full-marks.ipynb")
    at = next(i for i, c in enumerate(nb["cells"]) if nbtest.grade_id(c) == "transformer_block")
    nb["cells"][at]["source"] = nbtest.source_of(nb["cells"][at]) + "\n_cloned = cloned\n"
    nb["cells"].insert(at, {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                            "source": "import copy\n\n\ndef cloned(module):\n    return copy.deepcopy(module)\n"})
    path = tmp_path / "helper.ipynb"
    path.write_text(json.dumps(nb))
    public = _beside_release(tmp_path / "release", "residual-connections", path)
    parts = sorted(COURSE.assignment("residual-connections").auto)
    listed = {part: nbtest.rule_breaks(part, public) for part in parts}
    assert [part for part, lines in listed.items() if lines] == [4], listed
    assert "[import] module 'copy'" in listed[4][0], listed
    with Grader("residual-connections", COURSE) as grader:
        rules = [t for t in grader.grade(path, 1).tests if t.max_score == 0]
    assert [t.part for t in rules if t.kind != "passed"] == [4], [(t.part, t.output) for t in rules]
    assert "[import] module 'copy'" in next(t.output for t in rules if t.part == 4)


def test_a_stub_redefined_by_a_later_cell_is_done_as_the_grader_finds(tmp_path):
    """A solution cell left as the stub, with the student's code in a cell of their own below it: the
    grader calls the later def, so the rules test does not say the part is still a stub."""
    reference, stubs = nbtest.read_notebook(SOURCE_NB), nbtest.read_notebook(RELEASE_NB)
    index = next(i for i, c in enumerate(reference["cells"]) if nbtest.grade_id(c) == "residual_add")
    solved = reference["cells"][index]
    left = dict(solved, source=next(c for c in stubs["cells"] if nbtest.grade_id(c) == "residual_add")["source"])
    own = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": solved["source"]}
    for cells, done in ([left], False), ([left, own], True):
        notebook = dict(reference, cells=reference["cells"][:index] + cells + reference["cells"][index + 1:])
        path = tmp_path / f"{done}" / "residual-connections.ipynb"
        path.parent.mkdir()
        path.write_text(json.dumps(notebook))
        path = _beside_release(tmp_path / f"release-{done}", "residual-connections", path)
        if done:
            assert nbtest.rule_breaks(1, path) == []
        else:
            with pytest.raises(NotImplementedError, match="part 1 still has a stub"):
                nbtest.rule_breaks(1, path)


def test_an_abstract_method_of_the_students_own_class_is_no_stub(tmp_path):
    """A base class of the student's own, not a name the contract asks for, may leave a method to its
    subclasses by raising NotImplementedError (honest8's rc_05): the part is done all the same."""
    reference = nbtest.read_notebook(SOURCE_NB)
    index = next(i for i, c in enumerate(reference["cells"]) if nbtest.grade_id(c) == "residual_add")
    cell = reference["cells"][index]
    base = ("class Combiner:\n    def combine(self, x, fx):\n        raise NotImplementedError('subclasses combine')"
            "\n\n\n")
    reference["cells"][index] = dict(cell, source=base + nbtest.source_of(cell))
    path = tmp_path / "own" / "residual-connections.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(reference))
    assert nbtest.rule_breaks(1, _beside_release(tmp_path / "release", "residual-connections", path)) == []


def _release_copy(tmp_path, assignment: str, notebook: dict) -> Path:
    """The student release (its vendored nbtest package, pytest.ini, the assignments' folders) with this
    notebook in it: the folder to run `pytest` in."""
    folder = release.build_student(tmp_path / "student") / assignment
    (folder / f"{assignment}.ipynb").write_text(json.dumps(notebook))
    return folder


@pytest.mark.parametrize("assignment", NAMES)
def test_pytest_watches_the_code_with_the_grader_monitor_and_honest_idioms_raise_nothing(tmp_path, assignment):
    """`pytest` runs the grader's monitor while the tests call the notebook's code: the idiom corpus's
    sample (an optimizer step, a global seed, typing, dataclasses, ...) passes every public test."""
    notebook = nbtest.read_notebook(ROOT / "submissions" / assignment / "idioms-1.ipynb")
    code, out = run_pytest(_release_copy(tmp_path, assignment, notebook))
    assert code == 0 and "[monitor]" not in out, out


def test_the_rules_test_shows_what_the_monitor_saw_with_its_line(tmp_path):
    """A string evaluated through typing while a test calls residual_add: no static rule names it, the
    monitor sees it, and only Part 1's rules test fails, quoting the line."""
    notebook = nbtest.read_notebook(SOURCE_NB)
    cell = next(c for c in notebook["cells"] if nbtest.grade_id(c) == "residual_add")
    cell["source"] = nbtest.source_of(cell).replace("def residual_add(", (
        "import typing\n\n\ndef _hint(p: \"len('abc')\"):\n    pass\n\n\ndef residual_add(")).replace(
        "    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n    typing.get_type_hints(_hint)\n", 1)
    assert "typing.get_type_hints(_hint)" in cell["source"]
    code, out = run_pytest(_release_copy(tmp_path, "residual-connections", notebook))
    failed = re.findall(r"^FAILED\s+(test_part\w+)", out, re.M)
    assert code == 1 and failed == ["test_part1_follows_the_rules"], out
    assert re.search(r"residual_add line \d+: \[monitor\] exec: executes a code object "
                     r"\| typing.get_type_hints\(_hint\)", out), out


def test_a_file_the_code_writes_by_a_relative_name_is_no_event_and_lands_nowhere_near(tmp_path):
    """The grader's child runs in its scratch folder, where a file written by a relative name raises no event;
    pytest ran the code in the student's folder, failed the rules test saying the grader would hold the part, and
    left the file beside the notebook (red team 38). It now runs the code in its own temporary folder."""
    notebook = nbtest.read_notebook(SOURCE_NB)
    cell = next(c for c in notebook["cells"] if nbtest.grade_id(c) == "residual_add")
    cell["source"] = nbtest.source_of(cell).replace(
        "    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n    numpy.savetxt(\"shapes.csv\", [list(x.shape)])\n", 1)
    cell["source"] = "import numpy\n\n\n" + cell["source"]
    folder = _release_copy(tmp_path, "residual-connections", notebook)
    code, out = run_pytest(folder)
    assert code == 0 and "[monitor]" not in out, out
    assert sorted(p.name for p in folder.iterdir()) == sorted(["contract.toml", "residual-connections.ipynb",
                                                               "rules.toml", "test_public.py"])
