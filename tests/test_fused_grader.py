"""The hidden suite of fused-add-norm through the out-of-kernel grader, on CPU (Triton's interpreter).

One Grader serves the module, told there is no CUDA (so the results are the same on any
machine): the timing test is skipped and its points follow course.toml's without_cuda.
The sample class (submissions/fused-add-norm/) is graded once, with a seed drawn per run
and named in every failure message.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from autograder import course, suites
from autograder.course import ROOT
from autograder.grading import grader as grader_module
from autograder.grading.grader import Grader
from helpers import SampleClass

ASSIGNMENT = "fused-add-norm"
CLASS = SampleClass(ASSIGNMENT)
SAMPLES, EXPECTED, SOLUTION, RELEASE, SEED = CLASS.folder, CLASS.expected, CLASS.solution, CLASS.release, CLASS.seed
SUITE = suites.load(ASSIGNMENT)
TIMING = next(t.name for t in SUITE.tests if t.needs_cuda)
FUSED = {t.name for t in SUITE.tests if t.name.startswith("fused: ")}
SKIPPED = "skipped: needs a CUDA GPU (none on the grading machine)"


@pytest.fixture(scope="module")
def grader():
    with Grader(ASSIGNMENT, course.load(), cuda=False) as g:
        yield g


@pytest.fixture(scope="module")
def graded(grader) -> dict[str, dict]:
    return CLASS.grade_all(grader)


def by_name(result: dict) -> dict[str, dict]:
    return {t["name"]: t for t in result["tests"]}


def course_with(without_cuda: str) -> course.Course:
    """course.toml as it is, but with this without_cuda rule for fused-add-norm's timing test."""
    real = course.load()
    a = real.assignment(ASSIGNMENT)
    changed = dataclasses.replace(a, timing=dataclasses.replace(a.timing, without_cuda=without_cuda))
    return dataclasses.replace(real, assignments={**real.assignments, ASSIGNMENT: changed})


# ---------------------------------------------------------------- reference, release, torch-only wrapper

def test_reference_scores_full_marks_through_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(SOLUTION), "--json",
                           "--seed", str(SEED)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert list(result) == ["assignment", "score", "max_score", "seed", "tests"]   # docs/results.md, fixed
    assert result["assignment"] == ASSIGNMENT and result["seed"] == SEED
    lost = {t["name"]: t["output"] for t in result["tests"] if t["score"] != t["max_score"]}
    assert not lost, f"seed {SEED}: the reference lost points: {lost}"
    assert result["score"] == result["max_score"] == course.load().assignment(ASSIGNMENT).max_auto == 40
    graded = [t for t in result["tests"] if not t["output"].startswith(SKIPPED)]
    assert {t["part"] for t in graded} >= {1} and sum(t["max_score"] for t in graded if t["part"] == 1) == 30
    assert "nanobind" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_release_scores_zero_and_is_reported_not_crashed(grader):
    result = grader.grade(RELEASE, SEED).to_store()
    rules = [t for t in result["tests"] if t["max_score"] == 0]
    assert rules and all(t["output"] == "passed" for t in rules), "stubs break no rule"
    result["tests"] = [t for t in result["tests"] if t["max_score"]]
    assert result["score"] == 0 and result["max_score"] == 40
    for t in result["tests"]:
        if t["name"] == TIMING:
            assert t["output"].startswith(SKIPPED) and t["max_score"] == 10, t
        else:
            assert "not implemented yet" in t["output"], (t["name"], t["output"])


def test_torch_only_wrapper_loses_exactly_the_fused_points(graded):
    result = graded["torch-only-wrapper.ipynb"]
    tests = by_name(result)
    lost = {name for name, t in tests.items() if t["part"] == 1 and t["score"] < t["max_score"]}
    assert lost == FUSED, f"seed {SEED}: {json.dumps({n: tests[n]['output'] for n in lost ^ FUSED}, indent=1)}"
    assert sum(tests[name]["max_score"] for name in FUSED) == 10
    for name in FUSED:
        assert "calls torch ops instead of your Triton kernel" in tests[name]["output"]
        assert "fused_add_layernorm_kernel is defined but never launched" in tests[name]["output"]
        assert "add, native_layer_norm" in tests[name]["output"]
    assert sum(t["score"] for t in result["tests"] if t["part"] == 1) == 20


def test_forgeries_of_the_launch_trace_earn_no_more_than_their_honest_twins(graded):
    CLASS.assert_forgeries_gain_nothing(graded)
    tests = by_name(graded["numpy-empty-kernel.ipynb"])
    for name in FUSED:
        assert tests[name]["score"] == 0 and "[forbidden-module]" in tests[name]["output"], tests[name]["output"]


def test_each_forgery_would_pay_without_the_policy(grader, graded, monkeypatch):
    """The forgeries are real: with no test held for review, each outscores its honest twin."""
    monkeypatch.setattr(grader_module, "_held", lambda *args: [])
    for forged, twin in CLASS.twins.items():
        score = grader.grade(SAMPLES / forged, SEED).score
        assert score > graded[twin]["score"], f"{forged}: {score} without the policy (seed {SEED})"


def test_honest_styles_keep_full_marks_and_trip_no_rule(graded):
    for name in CLASS.honest:
        result = graded[name]
        assert result["score"] == result["max_score"] and result["review"] == [], (name, result["review"])


# ---------------------------------------------------------------- the sample class

@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_gets_expected_scores(graded, name):
    CLASS.assert_expected(name, graded[name])


@pytest.mark.parametrize("name, test, words", [
    ("variance-over-block.ipynb", "widths that are not powers of two (masks, and sums divided by n)",
     "variance divided by BLOCK instead of n"),
    ("no-mask.ipynb", "widths that are not powers of two (masks, and sums divided by n)", "no mask"),
    ("masked-lanes-not-zeroed.ipynb", "widths that are not powers of two (masks, and sums divided by n)",
     "masked lanes not zeroed before squaring"),
    ("fp16-accumulation.ipynb", "fp16 and bf16 inputs: h and y keep the dtype, mean and variance accumulated in fp32",
     "fp16 accumulation"),
    ("in-place-h.ipynb", "inputs are left unchanged and h and y are new tensors", "input modified"),
    ("launch-per-row.ipynb", "fused: one launch computes both h and y, with no torch arithmetic around it",
     "a Python loop over rows"),
    ("no-input-checks.ipynb", "a width over 8192 raises a ValueError naming the limit",
     "instead of raising ValueError"),
])
def test_failures_name_the_misconception(graded, name, test, words):
    output = by_name(graded[name])[test]["output"]
    assert words in output, f"seed {SEED}: {output}"
    if "yours" in output:
        assert "expected:" in output


@pytest.mark.parametrize("cell, old, new, test, words", [
    ("fused_kernel", "axis=0) / n_cols\n    w =", "axis=0) / (n_cols - 1)\n    w =",
     "h = x + fx exactly and y = LayerNorm(h), at widths that are powers of two", "unbiased variance"),
    ("fused_add_layernorm", "h, y, n, eps,", "h, y, n, 1e-5,",
     "the eps, weight and bias passed in are used (and eps defaults to 1e-5)", "is ignored: this y uses 1e-5"),
    ("fused_add_layernorm", "return h.view(x.shape), y.view(x.shape)", "return y.view(x.shape), h.view(x.shape)",
     "h = x + fx exactly and y = LayerNorm(h), at widths that are powers of two", "h and y are swapped"),
])
def test_edited_reference_is_told_its_misconception(grader, tmp_path, cell, old, new, test, words):
    nb = json.loads((SAMPLES / "full-marks.ipynb").read_text())
    source = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == cell)
    text = "".join(source["source"])
    assert old in text
    source["source"] = text.replace(old, new)
    path = tmp_path / "edited.ipynb"
    path.write_text(json.dumps(nb))
    entry = by_name(grader.grade(path, SEED).to_store())[test]
    assert entry["score"] == 0 and words in entry["output"], f"seed {SEED}: {entry['output']}"


def test_output_never_contains_hidden_or_solution_source(graded):
    CLASS.assert_no_source(graded)


# ---------------------------------------------------------------- without CUDA: course.toml decides

def test_without_cuda_redistribute_scores_the_timing_points_at_part_1s_fraction(graded):
    assert course.load().assignment(ASSIGNMENT).timing.without_cuda == "redistribute"
    for name, part1, timing in [("full-marks.ipynb", 30, 10), ("torch-only-wrapper.ipynb", 20, 6.67),
                                ("variance-over-block.ipynb", 25, 8.33), ("untouched-release.ipynb", 0, 0)]:
        result = graded[name]
        entry = by_name(result)[TIMING]
        assert (entry["part"], entry["score"], entry["max_score"]) == (2, timing, 10), (name, entry)
        assert entry["output"].startswith(SKIPPED + "; its 10 points are redistributed to part 1 per course.toml")
        assert f"{part1} of 30, so {timing} of 10" in entry["output"]
        assert result["max_score"] == 40 and result["score"] == round(part1 + timing, 2)


def test_without_cuda_skip_drops_the_timing_points_from_the_maximum():
    with Grader(ASSIGNMENT, course_with("skip"), cuda=False) as grader:
        for name, score in [("full-marks.ipynb", 30), ("variance-over-block.ipynb", 25)]:
            result = grader.grade(SAMPLES / name, SEED).to_store()
            entry = by_name(result)[TIMING]
            assert (entry["score"], entry["max_score"]) == (0, 0)
            assert entry["output"].startswith(SKIPPED + "; not graded, per course.toml")
            assert "its 10 points are left out of the maximum" in entry["output"]
            assert (result["score"], result["max_score"]) == (score, 30), result


# ---------------------------------------------------------------- the suite and the result format

def test_points_per_part_match_course_toml():
    SUITE.check_points(course.load().assignment(ASSIGNMENT).auto)
    assert [t.name for t in SUITE.tests if t.needs_cuda] == [TIMING]
    assert len(FUSED) == 2 and sum(t.points for t in SUITE.tests if t.part == 1) == 30
    assert SUITE.cuda and len({t.name for t in SUITE.tests}) == len(SUITE.tests)


def test_result_schema(graded):
    for result in graded.values():
        assert list(result) == ["assignment", "score", "max_score", "seed", "tests", "seed_from", "code_key",
                                "secret_id", "review"]
        assert result["assignment"] == ASSIGNMENT and result["seed"] == SEED
        assert result["score"] == round(sum(t["score"] for t in result["tests"]), 2)
        assert result["max_score"] == sum(t["max_score"] for t in result["tests"]) == 40
        assert [t["name"] for t in result["tests"]] == [t.name for t in SUITE.tests]
        for t in result["tests"]:
            assert list(t)[:5] == ["name", "part", "score", "max_score", "output"]   # to_json's, then the store's
            assert t["part"] in (1, 2) and isinstance(t["output"], str) and t["output"]
            assert t["score"] in (0, t["max_score"]) or t["name"] == TIMING
        json.dumps(result)
