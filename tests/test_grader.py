"""The out-of-kernel grader: reference and release, the sample class, cheats, bad input.

One Grader (one fork server) serves the whole module; the sample class is graded once per
test run (conftest.py's sample_results), with a seed drawn per run and named in every
failure message.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from autograder import course, suites
from autograder.core import codec
from autograder.course import ROOT, CourseError
from autograder.core.extract import NotebookError, Template
from autograder.grading import grader as grader_module
from autograder.grading.grader import Grader
from autograder.results.result import MAX_OUTPUT
from helpers import SAMPLE_TIMEOUT_S, SampleClass, sample_kit

ASSIGNMENT = "residual-connections"
CLASS = SampleClass(ASSIGNMENT)
SAMPLES, EXPECTED, SOLUTION, RELEASE, SEED = CLASS.folder, CLASS.expected, CLASS.solution, CLASS.release, CLASS.seed


@pytest.fixture(scope="module")
def grader():
    with Grader(ASSIGNMENT, course.load(), timeout_s=SAMPLE_TIMEOUT_S) as g:
        yield g


@pytest.fixture(scope="module")
def graded(sample_results) -> dict[str, dict]:
    """Every sample's result, graded once per run with SEED."""
    return sample_results(ASSIGNMENT)[1]


def notebook_with(tmp_path: Path, name: str, **sources: str) -> Path:
    """The reference solution (as a student would fill it) with some solution cells replaced."""
    nb = json.loads((SAMPLES / "full-marks.ipynb").read_text())
    for cell in nb["cells"]:
        label = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if label in sources:
            cell["source"] = sources[label]
    path = tmp_path / name
    path.write_text(json.dumps(nb))
    return path


# ---------------------------------------------------------------- reference and release

def test_reference_scores_full_marks(grader):
    for seed in (SEED, SEED + 1):
        result = grader.grade(SOLUTION, seed).to_store()
        failed = {t["name"]: t["output"] for t in result["tests"] if t["score"] != t["max_score"]}
        assert not failed, f"seed {seed}: the reference lost points: {failed}"
        assert result["score"] == result["max_score"] == course.load().assignment(ASSIGNMENT).max_auto


def test_release_scores_zero_and_is_reported_not_crashed(grader):
    result = grader.grade(RELEASE, SEED).to_store()
    rules = [t for t in result["tests"] if t["max_score"] == 0]
    assert rules and all(t["output"] == "passed" for t in rules), "stubs break no rule"
    result["tests"] = [t for t in result["tests"] if t["max_score"]]
    assert result["score"] == 0
    for t in result["tests"]:
        assert "not implemented yet" in t["output"], (t["name"], t["output"])


def test_points_per_part_match_course_toml():
    suite = suites.load(ASSIGNMENT)
    auto = course.load().assignment(ASSIGNMENT).auto
    suite.check_points(auto)
    assert all((t.points > 0 or t.check.__name__ == "rules") and t.part in auto and len(t.name) > 15
               for t in suite.tests)
    assert sorted(t.part for t in suite.tests if t.points == 0) == sorted(auto), "one rules test per part"
    assert len({t.name for t in suite.tests}) == len(suite.tests), "test names must be unique"
    with pytest.raises(CourseError, match="differ from course.toml"):
        suite.check_points({**auto, 1: auto[1] + 1})


# ---------------------------------------------------------------- the sample class

@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_gets_expected_scores(graded, name):
    CLASS.assert_expected(name, graded[name])


def test_sample_class_is_up_to_date():
    kit = sample_kit()
    assert kit.stale(kit.render()) == [], "run: python submissions/make_samples.py"
    assert len(EXPECTED) >= 12


# ---------------------------------------------------------------- forgeries, honest styles, the oracle

def test_forgeries_of_the_childs_reports_earn_no_more_than_their_honest_twins(graded):
    CLASS.assert_forgeries_gain_nothing(graded)
    held = [t for t in graded["forged-mutation-report.ipynb"]["tests"] if t["output"].startswith("held for")]
    assert held and "[process-introspection]" in held[0]["output"] and "import sys" in held[0]["output"]


@pytest.mark.parametrize("sample, event, where", [
    ("reach-string-type-hint.ipynb", "compile", "typing.get_type_hints(_hint)"),
    ("reach-string-numpy-measure.ipynb", "compile", "np.testing.measure("),
    ("reach-dynamic-class-metaclass.ipynb", "torch.function_mode", "after cell 'residual_add' ran"),
    ("reach-torch-mode-generator.ipynb", "torch.function_mode", "after cell 'residual_add' ran"),
    ("reach-torch-mode-entered.ipynb", "torch.function_mode", "after cell 'residual_add' ran")])
def test_a_forgery_no_withhold_rule_sees_is_held_by_the_monitors_event(graded, sample, event, where):
    """A string a library runs, a torch function mode left active: no withhold rule gives these away
    (test_policy.py); the monitor's event, with its cell and line, holds them."""
    events = [r for r in graded[sample]["review"] if f"[monitor] {event}" in r]
    assert events and where in events[0], graded[sample]["review"]
    held = [t for t in graded[sample]["tests"] if t["output"].startswith("held for")]
    assert held and "[monitor]" in held[0]["output"]


def test_each_forgery_would_pay_without_the_policy(grader, graded, monkeypatch):
    """The forgeries are real: with no test held for review, each outscores its honest twin."""
    monkeypatch.setattr(grader_module, "_held", lambda *args: [])
    for forged, twin in CLASS.twins.items():
        if forged.startswith("oracle") or forged in CLASS.measured:
            continue     # defeated by seeds (test_an_oracle_loop_...) or by what the tests measure, not by the policy
        score = grader.grade(SAMPLES / forged, SEED).score
        assert score > graded[twin]["score"], f"{forged}: {score} without the policy (seed {SEED})"


def test_an_error_is_reported_by_its_own_type_not_by_what_its_class_attribute_claims():
    """isinstance believes a __class__ property, `except` does not: the probe reports what `except` sees
    (claims-error-class-*, which scored 100 against their twin's 96 when isinstance decided)."""
    from autograder.core import probe
    claims = type(RuntimeError)("ShapeError", (RuntimeError,), dict(__class__=property(lambda self: ValueError)))
    assert isinstance(claims("shapes"), ValueError)
    assert probe.describe_error(claims("shapes"))["is"] == ["RuntimeError"]
    assert probe.describe_error(type("Refused", (ValueError,), {})("shapes"))["is"] == ["ValueError"]


def test_honest_styles_keep_full_marks_and_trip_no_rule(graded):
    assert len(CLASS.honest) + len(SampleClass("fused-add-norm").honest) >= 10
    for name in CLASS.honest:
        result = graded[name]
        assert result["score"] == result["max_score"] and result["review"] == [], (name, result["review"])


ORACLE_FEEDBACK = re.compile(r"(chain_rule_grad|split_gradient)\(x0=(\S+?), .*?upstream=(\S+?)[,)].*?"
                             r"expected: (\[[^\]]*\]|\S+)", re.S)


def _oracle(table: dict) -> dict[str, str]:
    """chain_rule_grad and split_gradient that answer from a table of (x0, upstream) -> expected."""
    chain = {k[1:]: float(v) for k, v in table.items() if k[0] == "chain_rule_grad"}
    split = {k[1:]: tuple(json.loads(v)) for k, v in table.items() if k[0] == "split_gradient"}
    return {"chain_rule_grad": f"_SEEN, _SPLIT = {chain!r}, {split!r}\n\n"
                               "def chain_rule_grad(x0, branches, upstream, alpha=1.0):\n"
                               "    return _SEEN.get((f'{x0:.4g}', f'{upstream:.4g}'), upstream)\n",
            "split_gradient": "def split_gradient(x0, dF, upstream):\n"
                              "    return _SPLIT.get((f'{x0:.4g}', f'{upstream:.4g}'), (upstream, 0.0))\n"}


def _oracle_loop(grader, tmp_path, seed) -> float:
    """Part 2's score after three rounds of copying the expected values in the feedback into the table."""
    table = {}
    for round_ in range(4):
        result = grader.grade(notebook_with(tmp_path, f"oracle{round_}.ipynb", **_oracle(table)), seed)
        for t in result.tests:
            for fn, x0, upstream, expected in ORACLE_FEEDBACK.findall(t.output):
                table[(fn, x0, upstream)] = expected
    return result.parts()[2][0]


def test_an_oracle_loop_over_three_regrades_gains_nothing_under_per_submission_seeds(grader, tmp_path, monkeypatch):
    # Part 2's tests alone: the oracle answers only them, and each test draws its inputs from the seed
    # and its own name, so the other parts' (training) tests would change nothing here but the time.
    monkeypatch.setattr(grader, "graded", [t for t in grader.graded if t.part == 2])
    baseline = grader.grade(notebook_with(tmp_path, "guess.ipynb", **_oracle({}))).parts()[2][0]
    assert _oracle_loop(grader, tmp_path, None) <= baseline
    # the same loop against one seed for every submission (the grader before per-submission seeds)
    assert _oracle_loop(grader, tmp_path, SEED) > baseline


def test_checker_cheat_scores_exactly_the_wrong_answers(graded):
    cheat, honest = graded["checker-cheat.ipynb"], graded["wrong-answers.ipynb"]
    assert [(t["name"], t["score"]) for t in cheat["tests"]] == [(t["name"], t["score"]) for t in honest["tests"]]
    assert 0 < cheat["score"] < cheat["max_score"]


def test_always_equal_object_scores_nothing_it_returns(graded):
    result = graded["always-equal.ipynb"]
    returned = [t for t in result["tests"] if "AlwaysEqual" in t["output"]]
    assert returned and all(t["score"] == 0 for t in returned)
    assert "no plain torch.Tensor" in returned[0]["output"]


def test_infinite_loop_costs_only_the_tests_that_call_it(graded):
    result = graded["infinite-loop.ipynb"]
    lost = {t["name"]: t["output"] for t in result["tests"] if t["score"] < t["max_score"]}
    assert list(lost) == ["split_gradient: the identity path's and the branch's share"]
    assert "timed out" in next(iter(lost.values()))


def test_crashes_at_import_cost_only_the_affected_tests(graded):
    reasons = {name: {t["output"] for t in graded[name]["tests"] if t["score"] == 0}
               for name in ("crash-at-import.ipynb", "segfault-at-import.ipynb", "exits-at-import.ipynb")}
    assert any("ModuleNotFoundError" in r for r in reasons["crash-at-import.ipynb"])
    assert any("SIGSEGV" in r for r in reasons["segfault-at-import.ipynb"])
    assert any("SystemExit" in r for r in reasons["exits-at-import.ipynb"])
    for name in reasons:
        assert 0 < graded[name]["score"] < graded[name]["max_score"], name


@pytest.mark.parametrize("source, reason", [
    ("def split_gradient(x0, dF, upstream)\n    return 1, 2\n", "raised SyntaxError when loaded"),
    ("import os\nos._exit(3)\n", "exited with code 3"),
])
def test_syntax_error_and_os_exit_cost_only_their_cell(grader, tmp_path, source, reason):
    result = grader.grade(notebook_with(tmp_path, "broken.ipynb", split_gradient=source), SEED).to_store()
    lost = [t for t in result["tests"] if t["score"] < t["max_score"]]
    assert [t["name"] for t in lost] == ["split_gradient: the identity path's and the branch's share"]
    assert reason in lost[0]["output"] and "cell 'split_gradient'" in lost[0]["output"]


def test_solutions_are_not_readable_from_student_code(graded):
    result = graded["reads-solutions.ipynb"]
    assert result["score"] == 0, "a sandbox child read solutions/ from disk (is Landlock available?)"


def test_output_never_contains_hidden_or_solution_source(graded):
    CLASS.assert_no_source(graded)


# ---------------------------------------------------------------- the result format

def test_result_schema(graded):
    for result in graded.values():
        assert list(result) == ["assignment", "score", "max_score", "seed", "tests", "seed_from", "code_key",
                                "secret_id", "review"]
        assert result["assignment"] == ASSIGNMENT and result["seed"] == SEED and result["seed_from"] == "given"
        assert len(result["code_key"]) == 64 and len(result["secret_id"]) == 12
        assert result["score"] == sum(t["score"] for t in result["tests"])
        assert result["max_score"] == sum(t["max_score"] for t in result["tests"]) == 100
        for t in result["tests"]:
            assert list(t)[:5] == ["name", "part", "score", "max_score", "output"]   # to_json's, then the store's
            assert isinstance(t["name"], str) and t["part"] in (1, 2, 3, 4, 5)
            assert t["score"] in (0, t["max_score"]) and isinstance(t["output"], str) and t["output"]
        json.dumps(result)


def test_same_seed_same_inputs_same_feedback(grader, graded):
    again = grader.grade(SAMPLES / "pre-post-swapped.ipynb", SEED).to_store()
    assert again == graded["pre-post-swapped.ipynb"]


# one that trains, one whose training tests fail, one the monitor holds, one that forges a report
ON_CORES = ["full-marks.ipynb", "part5-shortcut-missing.ipynb", "reach-string-type-hint.ipynb",
            "forged-structure-report.ipynb"]


def test_a_notebook_graded_on_several_cores_gets_the_batchs_result(graded):
    """The command line grades one notebook on every core (Grader(parts_at_once=N)): each slow test
    first, in a child of its own, then a child per part; the rules tests once all are done. Every
    entry, note and review line is the batch's, at the same seed."""
    with Grader(ASSIGNMENT, course.load(), timeout_s=SAMPLE_TIMEOUT_S, parts_at_once=2) as g:
        groups = g._groups()
        slow = [t for t in g.graded if t.slow]
        assert len(slow) >= 3 and groups[:len(slow)] == [[t] for t in slow]
        assert not any(t.reads_findings for group in groups for t in group)
        for name in ON_CORES:
            assert g.grade(SAMPLES / name, SEED).to_store() == graded[name], f"{name}, seed {SEED}"


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("content, reason", [
    (b"%PDF-1.4 \x00\xff binary", "not a readable notebook"),
    (b'{"hello": "world"}', "not a Jupyter notebook"),
    (b"", "not a readable notebook"),
    # cells Jupyter and nbgrader cannot use: nbgrader's class run cannot grade them, so no path does
    (b'{"cells": [{"cell_type": "code", "metadata": {"nbgrader": []}, "source": ""}]}',
     "cell 0 has metadata (or metadata.nbgrader) that is not a JSON object"),
    (b'{"cells": [{"cell_type": "code", "metadata": null, "source": ""}]}', "cell 0 has metadata"),
    (b'{"cells": [{"cell_type": "markdown", "metadata": {}, "source": {"a": 1}}]}',
     "cell 0 has a source that is not text"),
])
def test_unreadable_files_score_zero_with_a_reason(grader, tmp_path, content, reason):
    path = tmp_path / "upload.ipynb"
    path.write_bytes(content)
    result = grader.grade(path, SEED).to_store()
    assert result["score"] == 0 and len(result["tests"]) == len(suites.load(ASSIGNMENT).tests)
    assert all(reason in t["output"] for t in result["tests"])


def test_missing_file_scores_zero(grader, tmp_path):
    result = grader.grade(tmp_path / "nothing.ipynb", SEED).to_store()
    assert result["score"] == 0 and "no such file" in result["tests"][0]["output"]


def test_notebook_without_solution_cells(grader, tmp_path):
    path = tmp_path / "empty.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": "hi"}],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = grader.grade(path, SEED).to_store()
    assert result["score"] == 0
    assert "solution cell 'residual_add' is missing from the notebook" in result["tests"][0]["output"]


def test_unknown_assignment_lists_the_valid_ones():
    with pytest.raises(CourseError, match="residual-connections"):
        Grader("no-such-assignment", course.load())


def test_locked_cells_come_from_the_source_notebook(tmp_path):
    nb = json.loads((SAMPLES / "full-marks.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "setup":
            cell["source"] = "import torch\ntorch.allclose = lambda *a, **k: True\n"
    path = tmp_path / "edited-setup.ipynb"
    path.write_text(json.dumps(nb))
    extracted = Template(SOLUTION).fill(path)
    setup = dict(extracted.cells)["setup"]
    assert "allclose" not in setup and "from torch import Tensor, nn" in setup
    assert extracted.problems == {}
    with pytest.raises(NotebookError):
        Template(SOLUTION).fill(SAMPLES / "invalid-json.ipynb")


# ---------------------------------------------------------------- the sandbox's limits

def test_memory_limit_fails_the_test_not_the_grader(grader, tmp_path):
    path = notebook_with(tmp_path, "greedy.ipynb", residual_add=(
        "def residual_add(x, fx):\n    big = torch.empty(6 << 30, dtype=torch.uint8)\n    return x + fx\n"))
    result = grader.grade(path, SEED).to_store()
    first = result["tests"][0]
    assert first["score"] == 0 and ("memory" in first["output"].lower() or "alloc" in first["output"].lower())
    assert grader.grade(SOLUTION, SEED).to_store()["score"] == 100


def test_student_code_cannot_kill_the_fork_server(grader, tmp_path):
    path = notebook_with(tmp_path, "killer.ipynb", split_gradient=(
        "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n    pass\n"
        "def split_gradient(x0, dF, upstream):\n    return upstream, upstream * dF(x0)\n"))
    result = grader.grade(path, SEED)
    # the grading finished. The code reaches the process, but it runs only in Part 2's child (the cells
    # that part's names need), whose tests rest on returned values: it is flagged, and nothing is held
    assert all(t.passed or t.max_score == 0 for t in result.tests)
    assert "[process-introspection]" in result.review[0] and result.review[0].endswith("| import os, signal")
    assert grader.grade(SOLUTION, SEED).to_store()["score"] == 100


def test_huge_messages_are_capped(grader, tmp_path):
    path = notebook_with(tmp_path, "chatty.ipynb", residual_add=(
        "def residual_add(x, fx):\n    raise ValueError('(2, 3) ' * 100000)\n"))
    result = grader.grade(path, SEED).to_store()
    assert max(len(t["output"]) for t in result["tests"]) <= MAX_OUTPUT


def test_what_student_code_says_about_hidden_inputs_reaches_feedback_only_as_an_excerpt(grader, tmp_path):
    """A function that puts its inputs into its exception, its returned string and a class name."""
    path = notebook_with(tmp_path, "leaky.ipynb", residual_add=(
        "def residual_add(x, fx):\n"
        "    raise ValueError(repr(x.tolist()) * 50)\n"), chain_rule_grad=(
        "def chain_rule_grad(x0, branches, upstream, alpha=1.0):\n"
        "    return type(f'Leak{x0!r}{upstream!r}' * 20, (), {})()\n"), split_gradient=(
        "def split_gradient(x0, dF, upstream):\n"
        "    return f'{x0!r} {upstream!r} ' * 200\n"))
    result = grader.grade(path, SEED)
    for name in ("residual_add returns x + fx on odd shapes", "chain_rule_grad on one block with random branches",
                 "split_gradient: the identity path's and the branch's share"):
        output = next(t.output for t in result.tests if t.name == name)
        student = max(re.findall(r"(?:ValueError: |type |string ')(.*?(?:\(cut\)|$))", output, re.M), key=len)
        assert student.endswith("(cut)") and len(student) <= 120, output


def test_child_frames_are_read_without_running_code(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (marker.touch, ())

    import pickle
    with pytest.raises(codec.CodecError):
        codec.loads(pickle.dumps({"result": Evil()}, protocol=2))
    assert not marker.exists()
    frame = {"result": {"kind": "tensor", "value": torch.ones(2)}, "list": [1, 2.5, None, "s"]}
    assert str(codec.loads(codec.dumps(frame))) == str(frame)


def test_a_breach_of_the_contract_is_named_in_the_failure(grader, tmp_path):
    """A TransformerBlock without the norm parameter: its tests fail and say what the contract asks."""
    source = json.loads((SAMPLES / "full-marks.ipynb").read_text())
    cell = next(c for c in source["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "transformer_block")
    text = "".join(cell["source"]).replace('norm: str = "pre"', "").replace("d_model: int, n_heads: int, ", "d_model: int, n_heads: int")
    path = notebook_with(tmp_path, "no-norm.ipynb", transformer_block=text)
    result = grader.grade(path, SEED).to_store()
    lost = [t for t in result["tests"] if t["score"] < t["max_score"]]
    assert lost and all(t["part"] == 4 for t in lost)
    assert any("TransformerBlock takes (d_model, n_heads), the assignment says (d_model, n_heads, norm)"
               in t["output"] for t in lost), [t["output"] for t in lost]


def test_contract_problems_compare_kind_and_parameters():
    from autograder import contract
    c = contract.load(ROOT / "solutions" / ASSIGNMENT)
    assert c["TransformerBlock"].attributes == ("attn", "ln1", "ln2", "ffn")
    reported = {"residual_add": {"defined": True, "kind": "function", "params": ["a", "b"]},
                "Residual": {"defined": True, "kind": "function", "params": ["sublayer"]},
                "split_gradient": {"defined": True, "kind": "function", "params": ["x0", "dF", "upstream", "extra"]},
                "gradient_norms": {"defined": False}}
    assert c.problems(reported) == {
        "residual_add": "residual_add takes (a, b), the assignment says (x, fx)",
        "Residual": "Residual is a function, the assignment asks for a class"}
