"""Held tests and the instructor's decisions on them, without grading: the result, the store, the renderers
and Gradescope's results.json. The review command on a graded class is tested in test_autograde.py."""
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from autograder.lms.gradescope.results import HELD_TAG, to_gradescope
from autograder.results.render import feedback_text, review_summary, table
from autograder.results.result import MAX_OUTPUT, Result, held_entry, not_run
from autograder.results.result import TestResult as Entry   # not collected as a test class
from autograder.results.store import Store, StoreError

SCHEMA = Draft202012Validator(json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text()))
FINDING = "residual_add line 1: [process-introspection] module 'sys' reaches the grading process | import sys"


def flagged(key: str = "k1") -> Result:
    """A result with one held test of 6 points, one passed test of 2 and one failed test of 2."""
    return Result("residual-connections", 7, [
        held_entry("residual_add leaves its inputs unchanged", 1, 6, f"The test passed, but ...:\n  {FINDING}"),
        Entry("residual_add returns x + fx", 1, 2, 2, "passed", kind="passed"),
        Entry("Residual refuses", 1, 0, 2, "wrong", kind="failed")], code_key=key, review=(FINDING,))


def test_a_held_test_scores_0_and_keeps_what_its_check_earned():
    result = flagged()
    held = result.tests[0]
    assert (held.score, held.max_score, held.held, held.kind) == (0, 6, 6, "held")
    assert held.output.splitlines()[0] == ("held for an instructor's review: 0 of 6 points now; 6 if an instructor "
                                           "releases them")
    assert (result.score, result.held_points, result.waiting) == (2, 6, True)
    assert set(result.to_json()["tests"][0]) == {"name", "part", "score", "max_score", "output"}   # --json: unchanged
    assert Result.from_json(json.loads(json.dumps(result.to_store()))).tests[0].held == 6


@pytest.mark.parametrize("verdict, first_line", [
    ("", "held for an instructor's review: 0 of 9 points now; 9 if an instructor releases them"),
    ("release", "passed: released after an instructor's review, 9 of 9 points given back"),
    ("confirm", "held, and confirmed after an instructor's review: 0 of 9 points; the 9 its check earned"),
])
def test_a_held_test_rescaled_to_course_toml_says_its_new_points(verdict, first_line):
    """Part 1 at 15 points instead of 10 (course.toml edited after grading): the held test's 6 of 10 become
    9, and its first line says 9, whether it is still held, released or confirmed."""
    result = flagged().decided(verdict) if verdict else flagged()
    held = result.scaled({1: 15}).tests[0]
    assert (held.max_score, held.held) == (9, 9)
    assert held.output.startswith(first_line) and FINDING in held.output


@pytest.mark.parametrize("verdict, score, first_line", [
    ("release", 8, "passed: released after an instructor's review, 6 of 6 points given back"),
    ("confirm", 2, "held, and confirmed after an instructor's review: 0 of 6 points; the 6 its check earned"),
])
def test_a_decision_restores_or_keeps_the_held_points_and_says_so(verdict, score, first_line):
    decided = flagged().decided(verdict)
    assert (decided.score, decided.waiting) == (score, False)
    assert decided.tests[0].output.startswith(first_line)
    assert FINDING in decided.tests[0].output                   # the reason stays beside the decision
    assert decided.tests[2] == flagged().tests[2]               # a failed test is not the decision's
    text = feedback_text(decided, 1)
    assert first_line.split(",")[0] in text and ("HELD" in text) == (verdict == "confirm")
    assert ("given back" if verdict == "release" else "not given") in table(decided).splitlines()[3]


@pytest.mark.parametrize("verdict, timing", [("release", 10), ("confirm", 2)])
def test_points_redistributed_without_cuda_follow_the_decision(verdict, timing):
    """A CUDA-only test graded without CUDA, its points redistributed, scores the fraction of the other tests
    earned: released points count there as they do in the part (2 of 10 earned at grading, 10 of 10 once the
    held 8 are released). Before, a release left it at the fraction earned while the points were held."""
    ran = [held_entry("launches_kernel", 1, 8, "held"), Entry("values", 1, 2, 2, "passed", kind="passed")]
    result = Result("fused-add-norm", 1, [*ran, not_run("timing", 2, 10, "redistribute", ran)])
    assert result.tests[2].score == 2
    decided = result.decided(verdict)
    assert decided.tests[2].score == timing and f"so {timing} of 10" in decided.tests[2].output
    assert decided.score == (20 if verdict == "release" else 4)
    skipped = Result("fused-add-norm", 1, [*ran, not_run("timing", 2, 10, "skip", ran)]).decided(verdict)
    assert (skipped.tests[2].score, skipped.tests[2].max_score) == (0, 0)


@pytest.mark.parametrize("verdict", ["", "release", "confirm"])
def test_a_held_test_with_a_long_reason_keeps_to_the_output_limit(verdict):
    """The first line written from the points is longer than the word it replaces: the whole output is still
    cut to MAX_OUTPUT, held, decided or rescaled."""
    long = Result("residual-connections", 7, [held_entry("t", 1, 6, "why: " + "x" * 3 * MAX_OUTPUT)])
    for result in (long, long.decided(verdict) if verdict else long, long.scaled({1: 15})):
        output = result.tests[0].output
        assert len(output) <= MAX_OUTPUT and output.endswith("x ... (cut)")


def test_decisions_are_appended_kept_per_code_and_the_newest_wins(tmp_path):
    path = tmp_path / "store.jsonl"
    store = Store(path, "residual-connections")
    store.put("k1", flagged("k1"))
    store.put("k2", flagged("k2"))                              # another submission's code
    store.decide("k1", "confirm", "51014")
    store.decide("k1", "release", "51014", note="the import only prints the version")
    reopened = Store(path, "residual-connections")
    assert reopened.get("k1").score == 8 and reopened.get("k1").decision == "release"
    assert reopened.graded("k1").score == 2                     # as the grader gave it
    assert reopened.get("k2").waiting                           # a new submission waits for its own decision
    assert reopened.decision("k1")["note"] == "the import only prints the version"
    reopened.put("k1", flagged("k1"))                           # the same code graded again
    assert Store(path, "residual-connections").get("k1").score == 8
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["decision"] for line in lines if "decision" in line] == ["confirm", "release"]
    with pytest.raises(StoreError, match="release, confirm"):
        store.decide("k1", "forgive", "51014")
    with pytest.raises(StoreError, match="no result"):
        store.decide("k9", "release", "51014")


def test_review_summary_counts_what_waits_and_names_the_command():
    results = [flagged("a"), flagged("b").decided("release"), Result("residual-connections", 1, [])]
    assert review_summary(results, "residual-connections") == (
        "review: 1 submission of residual-connections waits for an instructor's decision (6 points held, 0 until "
        "released): python -m autograder review residual-connections")
    assert "no submission" in review_summary(results[1:], "residual-connections")


def test_gradescope_tags_a_held_test_and_says_what_is_held():
    doc = to_gradescope(flagged(), visibility="visible")
    SCHEMA.validate(doc)
    held, passed = doc["tests"][:2]
    assert HELD_TAG in held["tags"] and HELD_TAG not in passed["tags"]
    assert (held["score"], held["status"], held["extra_data"]["held"]) == (0, "failed", 6)
    assert "Held for an instructor's review: 1 test whose checks passed, 0 of their 6 points now" in doc["output"]
    assert doc["extra_data"]["held_for_review"] == 6
