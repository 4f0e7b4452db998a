"""The out-of-kernel grader on each assignment: reference and release, the sample classes, cheats, bad input.

One Grader (one fork server) per assignment serves the whole module, made when a test first asks for
it: residual-connections' with the sample classes' per-test timeout, fused-add-norm's told there is
no CUDA, so that its results are the same on any machine (the timing test is skipped and its points
follow course.toml's without_cuda). Each sample class is graded once per test run, with a seed drawn
per run and named in every failure message, by conftest.py's sample_results (the batch grader, with the
same per-test timeout); on a machine with CUDA, fused-add-norm's by its grader here instead. The tests of one idea are parametrised over
the assignments; the sections after them hold what only one assignment has.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from autograder import course, suites
from autograder.core import codec
from autograder.course import ROOT, CourseError
from autograder.core.extract import NotebookError, Template
from autograder.grading.cuda import cuda_present
from autograder.grading.grader import Grader
from autograder.results.result import Result
from autograder.results.result import MAX_OUTPUT
from helpers import NAMES, SAMPLE_TIMEOUT_S, SampleClass, sample_kit

RESIDUAL, FUSED = "residual-connections", "fused-add-norm"
CLASSES = {name: SampleClass(name) for name in NAMES}
RC = CLASSES[RESIDUAL]
SEED = CLASSES[RESIDUAL].seed          # one per run, the same for every class
GRADER_OPTIONS = {RESIDUAL: {"timeout_s": SAMPLE_TIMEOUT_S}, FUSED: {"cuda": False}}
SKIPPED = "skipped: needs a CUDA GPU (none on the grading machine)"
SUITE = {name: suites.load(name) for name in NAMES}
TIMING = next(t.name for t in SUITE[FUSED].tests if t.needs_cuda)
FUSED_TESTS = {t.name for t in SUITE[FUSED].tests if t.name.startswith("fused: ")}
SAMPLES = [(name, sample) for name in NAMES for sample in sorted(CLASSES[name].expected)]


@pytest.fixture(scope="module")
def grader():
    """grader(name): the assignment's Grader (GRADER_OPTIONS), made on first use and kept for the module."""
    with contextlib.ExitStack() as stack:
        made = {}

        def get(name: str) -> Grader:
            if name not in made:
                made[name] = stack.enter_context(Grader(name, course.load(), **GRADER_OPTIONS[name]))
            return made[name]
        yield get


@pytest.fixture(scope="module")
def graded(sample_results, grader):
    """graded(name): every sample's result with SEED, graded once per run (the module's docstring says by what)."""
    made = {}

    def get(name: str) -> dict[str, dict]:
        if name not in made:
            batch = name == RESIDUAL or not cuda_present()     # sample_results grades as the grader here does
            made[name] = sample_results(name)[1] if batch else CLASSES[name].grade_all(grader(name))
        return made[name]
    return get


def by_name(result: dict) -> dict[str, dict]:
    return {t["name"]: t for t in result["tests"]}


def notebook_with(tmp_path: Path, name: str, **sources: str) -> Path:
    """residual-connections' reference solution (as a student would fill it) with some solution cells replaced."""
    nb = json.loads((CLASSES[RESIDUAL].folder / "full-marks.ipynb").read_text())
    for cell in nb["cells"]:
        label = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if label in sources:
            cell["source"] = sources[label]
    path = tmp_path / name
    path.write_text(json.dumps(nb))
    return path


# ---------------------------------------------------------------- every assignment: reference and release

@pytest.mark.parametrize("name", NAMES)
def test_reference_scores_full_marks(grader, name):
    for seed in (SEED, SEED + 1):
        result = grader(name).grade(CLASSES[name].solution, seed).to_store()
        failed = {t["name"]: t["output"] for t in result["tests"] if t["score"] != t["max_score"]}
        assert not failed, f"seed {seed}: the reference lost points: {failed}"
        assert result["score"] == result["max_score"] == course.load().assignment(name).max_auto


@pytest.mark.parametrize("name", NAMES)
def test_release_scores_zero_and_is_reported_not_crashed(grader, name):
    result = grader(name).grade(CLASSES[name].release, SEED).to_store()
    rules = [t for t in result["tests"] if t["max_score"] == 0]
    assert rules and all(t["output"] == "passed" for t in rules), "stubs break no rule"
    result["tests"] = [t for t in result["tests"] if t["max_score"]]
    assert result["score"] == 0 and result["max_score"] == course.load().assignment(name).max_auto
    cuda_only = {t.name: t.points for t in SUITE[name].tests if t.needs_cuda}
    for t in result["tests"]:
        if t["name"] in cuda_only:
            assert t["output"].startswith(SKIPPED) and t["max_score"] == cuda_only[t["name"]], t
        else:
            assert "not implemented yet" in t["output"], (t["name"], t["output"])


@pytest.mark.parametrize("name", NAMES)
def test_the_suites_weights_give_course_toml_points_per_part(name):
    suite = suites.load(name)
    auto = course.load().assignment(name).auto
    for points in (auto, {**auto, 1: auto[1] + 1}):      # @test points are weights: any auto is shared out
        scaled = suite.scaled(points)
        assert {p: round(sum(t.points for t in scaled if t.part == p), 2) for p in points} == points
    assert all((t.points > 0 or t.check.__name__ == "rules") and t.part in auto and len(t.name) > 15
               for t in suite.tests)
    run_without_cuda = [p for p in sorted(auto) if any(t.part == p and not t.needs_cuda for t in suite.tests)]
    assert sorted(t.part for t in suite.tests if t.points == 0) == run_without_cuda, "one rules test per part"
    assert len({t.name for t in suite.tests}) == len(suite.tests), "test names must be unique"
    with pytest.raises(CourseError, match="part 1 has weighted tests but no `auto` points"):
        suite.scaled({**auto, 1: 0})


CHILD = """import importlib, json, sys
from autograder import suites
for m in suites.child_modules({name!r}):
    importlib.import_module(m)
loaded = sorted(sys.modules)
importlib.import_module(suites.part_names({name!r})[-1])
print(json.dumps([loaded, [t.name for t in suites.load({name!r}).tests]]))
"""


@pytest.mark.parametrize("name", NAMES)
def test_a_child_imports_the_specs_and_no_hidden_module(name):
    """What a sandbox child imports before student code (suites.child_modules), in a fresh interpreter, loads
    no hidden module; every module of the suite package but the specs and the package is hidden; and the
    tests run in the same order whichever part module was imported first."""
    proc = subprocess.run([sys.executable, "-c", CHILD.format(name=name)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded, tests = json.loads(proc.stdout)
    assert suites.specs_name(name) in loaded and not [m for m in loaded if suites.is_hidden(m)]
    package, parts = suites.package(name), suites.part_names(name)
    assert parts and all(map(suites.is_hidden, [suites.hidden_name(name), *parts, f"{package}.misconceptions"]))
    assert not suites.is_hidden(package) and not suites.is_hidden(suites.specs_name(name))
    assert tests == [t.name for t in suites.load(name).tests]


# ---------------------------------------------------------------- every assignment: the sample class

@pytest.mark.parametrize("name, sample", SAMPLES)
def test_sample_gets_expected_scores(graded, name, sample):
    CLASSES[name].assert_expected(sample, graded(name)[sample])


def test_sample_classes_are_up_to_date():
    kit = sample_kit()
    assert kit.stale(kit.render()) == [], "run: python submissions/make_samples.py"
    assert len(CLASSES[RESIDUAL].expected) >= 12


@pytest.mark.parametrize("name", NAMES)
def test_forgeries_earn_no_more_than_their_honest_twins(graded, name):
    CLASSES[name].assert_forgeries_gain_nothing(graded(name))


@pytest.mark.parametrize("name", NAMES)
def test_each_forgery_would_pay_without_the_policy(graded, name):
    """The forgeries are real: with no test held for review, each outscores its honest twin. A held test is
    one whose check passed (results.result.held_entry), its points kept for a release: the result with every
    held test released is the grade without the policy, so the class's own results say it. A forgery of the
    probe finds it out of reach (OUT_OF_REACH): with every held test released it scores no more than its twin.
    One the tests measure (MEASURED) fails what it forged: with every held test of both released, it scores no
    more than its twin."""
    samples = CLASSES[name]
    released = lambda sample: Result.from_json(graded(name)[sample]).decided("release").score
    for forged, twin in samples.twins.items():
        if forged in samples.out_of_reach | samples.measured:
            limit = released(twin) if forged in samples.measured else graded(name)[twin]["score"]
            assert released(forged) <= limit, f"{forged}: {released(forged)} without the policy (seed {SEED})"
            continue
        if forged.startswith("oracle"):
            continue     # defeated by seeds (test_an_oracle_loop_...), not by the policy
        result = Result.from_json(graded(name)[forged])
        assert any(t.kind == "held" for t in result.tests), f"{forged}: nothing held (seed {SEED})"
        score = result.decided("release").score
        assert score > graded(name)[twin]["score"], f"{forged}: {score} without the policy (seed {SEED})"


@pytest.mark.parametrize("name", NAMES)
def test_honest_styles_keep_full_marks_and_trip_no_rule(graded, name):
    assert sum(len(samples.honest) for samples in CLASSES.values()) >= 10
    for sample in CLASSES[name].honest:
        result = graded(name)[sample]
        assert result["score"] == result["max_score"] and result["review"] == [], (sample, result["review"])


@pytest.mark.parametrize("name", NAMES)
def test_output_never_contains_hidden_or_solution_source(graded, name):
    CLASSES[name].assert_no_source(graded(name))


@pytest.mark.parametrize("name", NAMES)
def test_result_schema(graded, name):
    auto = course.load().assignment(name).auto
    names = [t.name for t in SUITE[name].tests]
    cuda_only = {t.name for t in SUITE[name].tests if t.needs_cuda}   # their points follow without_cuda
    for result in graded(name).values():
        assert list(result) == ["assignment", "score", "max_score", "seed", "tests", "seed_from", "code_key",
                                "secret_id", "review"]
        assert result["assignment"] == name and result["seed"] == SEED and result["seed_from"] == "given"
        assert len(result["code_key"]) == 64 and len(result["secret_id"]) == 12
        assert result["score"] == round(sum(t["score"] for t in result["tests"]), 2)
        assert result["max_score"] == sum(t["max_score"] for t in result["tests"]) == sum(auto.values())
        assert [t["name"] for t in result["tests"]] == names
        assert [t["id"] for t in result["tests"]] == [t.id for t in SUITE[name].tests]   # the functions' names
        for t in result["tests"]:
            assert list(t)[:5] == ["name", "part", "score", "max_score", "output"]   # to_json's, then the store's
            assert t["part"] in auto and isinstance(t["output"], str) and t["output"]
            assert t["score"] in (0, t["max_score"]) or t["name"] in cuda_only
        json.dumps(result)


# ---------------------------------------------------------------- residual-connections: forgeries, cheats, cores

def test_a_forged_mutation_report_is_held_for_process_introspection(graded):
    held = [t for t in graded(RESIDUAL)["forged-mutation-report.ipynb"]["tests"] if t["output"].startswith("held for")]
    assert held and "[process-introspection]" in held[0]["output"] and "import sys" in held[0]["output"]


@pytest.mark.parametrize("sample, event, where", [
    ("reach-string-type-hint.ipynb", "exec", "typing.get_type_hints(_hint)"),
    ("reach-string-numpy-measure.ipynb", "compile", "np.testing.measure("),
    ("reach-dynamic-class-call.ipynb", "torch.function_mode", "after cell 'residual_add' ran"),
    ("reach-dynamic-class-metaclass.ipynb", "torch.function_mode", "after cell 'residual_add' ran"),
    ("reach-torch-mode-generator.ipynb", "torch.function_mode", "after cell 'residual_add' ran"),
    ("reach-torch-mode-entered.ipynb", "torch.function_mode", "after cell 'residual_add' ran")])
def test_a_forgery_no_withhold_rule_sees_is_held_by_the_monitors_event(graded, sample, event, where):
    """A string a library runs, a torch function mode left active: no withhold rule gives these away
    (test_policy.py); the monitor's event, with its cell and line, holds them."""
    result = graded(RESIDUAL)[sample]
    events = [r for r in result["review"] if f"[monitor] {event}" in r]
    assert events and where in events[0], result["review"]
    held = [t for t in result["tests"] if t["output"].startswith("held for")]
    assert held and "[monitor]" in held[0]["output"]


def test_an_error_is_reported_by_its_own_type_not_by_what_its_class_attribute_claims():
    """isinstance believes a __class__ property, `except` does not: the probe reports what `except` sees
    (claims-error-class-*, which scored 100 against their twin's 96 when isinstance decided)."""
    from autograder.core import probe
    claims = type(RuntimeError)("ShapeError", (RuntimeError,), dict(__class__=property(lambda self: ValueError)))
    assert isinstance(claims("shapes"), ValueError)
    assert probe.describe_error(claims("shapes"))["is"] == ["RuntimeError"]
    assert probe.describe_error(type("Refused", (ValueError,), {})("shapes"))["is"] == ["ValueError"]


def test_the_structure_report_reads_every_entry_of_a_modules_own_dict_whatever_its_class():
    """A module's _parameters in a dict subclass whose methods list nothing (what a copy through __getstate__ can
    make, hides-projection-copied-state) was read as no parameters; dict's own methods read every entry. A table
    that is no dict at all, which nn.Module never keeps, makes the report raise."""
    import collections
    import types

    from autograder.core import probe

    class Silent(collections.OrderedDict):
        def items(self):
            return iter(())

        values = keys = __iter__ = items
    layer = torch.nn.Linear(3, 4)
    layer._parameters = Silent(layer._parameters)
    assert list(layer.parameters()) == [] and probe.structure(layer)["parameters"] == 16
    layer._parameters = types.MappingProxyType(dict(layer._parameters))
    with pytest.raises(TypeError, match="Linear._parameters is a mappingproxy, not the dict nn.Module keeps"):
        probe.structure(layer)


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


def _oracle_loop(grader: Grader, tmp_path, seed) -> float:
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
    residual = grader(RESIDUAL)
    monkeypatch.setattr(residual, "graded", [t for t in residual.graded if t.part == 2])
    baseline = residual.grade(notebook_with(tmp_path, "guess.ipynb", **_oracle({}))).parts()[2][0]
    assert _oracle_loop(residual, tmp_path, None) <= baseline
    # the same loop against one seed for every submission (the grader before per-submission seeds)
    assert _oracle_loop(residual, tmp_path, SEED) > baseline


RESIDUAL_ADD = "def residual_add(x, fx):\n    if x.shape != fx.shape:\n        raise ValueError(f'{x.shape} vs {fx.shape}')\n"


STORAGE_TELL = "    if x.untyped_storage().resizable():\n        x += fx\n        return x\n    return x + fx\n"


@pytest.mark.parametrize("tell", [
    STORAGE_TELL,
    "    if x.dim() == 3 and x.dtype == torch.float32:\n        return x + fx\n    x += fx\n    return x\n",
    "    _CALLS.append(1)\n    if len(_CALLS) != 7:\n        x += fx\n        return x\n    return x + fx\n"],
    ids=["storage", "shape", "count"])
def test_an_in_place_add_that_tells_the_read_back_call_apart_still_fails_no_mutation(grader, tmp_path, monkeypatch, tell):
    """residual_add in place except at the call that looks like the one read back (tells-read-back-*): its
    inputs in memory that cannot be resized (the grader's shared memory, which it once handed the function
    itself), that call's shape and dtype, its place in the order of calls. Every call of a function whose
    inputs a test reads back is read back alike, on ordinary tensors, and a change at any fails that test."""
    residual = grader(RESIDUAL)
    monkeypatch.setattr(residual, "graded", [t for t in residual.graded if t.part == 1])
    source = ("_CALLS = []\n\n" if "_CALLS" in tell else "") + RESIDUAL_ADD + tell
    graded = residual.grade(notebook_with(tmp_path, "tells.ipynb", residual_add=source))
    result = {t.id: t for t in graded.tests}
    assert not result["residual_add_no_mutation"].passed and result["residual_add_values"].passed
    # no rule broken, no event, nothing held; but a storage is memory torch trusts the code with (unchecked-memory)
    assert [r for r in graded.review if "[unchecked-memory]" not in r or tell != STORAGE_TELL] == [], graded.review


def test_checker_cheat_scores_what_the_wrong_answers_score(graded):
    """The patched checkers (torch.allclose, numpy.testing, ...) change nothing the grader compares, in its own
    process: test for test, the wrong answers' scores, and a review line for the patches (monkeypatch)."""
    cheat, honest = graded(RESIDUAL)["checker-cheat.ipynb"], graded(RESIDUAL)["wrong-answers.ipynb"]
    assert [(t["name"], t["score"]) for t in cheat["tests"]] == [(t["name"], t["score"]) for t in honest["tests"]]
    assert any("[monkeypatch]" in line for line in cheat["review"])
    assert 0 < cheat["score"] < cheat["max_score"]


def test_always_equal_object_scores_nothing_it_returns(graded):
    result = graded(RESIDUAL)["always-equal.ipynb"]
    returned = [t for t in result["tests"] if "AlwaysEqual" in t["output"]]
    assert returned and all(t["score"] == 0 for t in returned)
    assert "no plain torch.Tensor" in returned[0]["output"]


def test_infinite_loop_costs_only_the_tests_that_call_it(graded):
    result = graded(RESIDUAL)["infinite-loop.ipynb"]
    lost = {t["name"]: t["output"] for t in result["tests"] if t["score"] < t["max_score"]}
    assert list(lost) == ["split_gradient: the identity path's and the branch's share"]
    assert "timed out" in next(iter(lost.values()))


def test_crashes_at_import_cost_only_the_affected_tests(graded):
    reasons = {name: {t["output"] for t in graded(RESIDUAL)[name]["tests"] if t["score"] == 0}
               for name in ("crash-at-import.ipynb", "segfault-at-import.ipynb", "exits-at-import.ipynb")}
    assert any("ModuleNotFoundError" in r for r in reasons["crash-at-import.ipynb"])
    assert any("SIGSEGV" in r for r in reasons["segfault-at-import.ipynb"])
    assert any("SystemExit" in r for r in reasons["exits-at-import.ipynb"])
    for name in reasons:
        assert 0 < graded(RESIDUAL)[name]["score"] < graded(RESIDUAL)[name]["max_score"], name


@pytest.mark.parametrize("source, reason", [
    ("def split_gradient(x0, dF, upstream)\n    return 1, 2\n", "raised SyntaxError when loaded"),
    ("import os\nos._exit(3)\n", "exited with code 3"),
    # nested past cellsource.MAX_DEPTH, or past what Python's parser reads at all: the readers of the cell in the
    # grader's own process (the policy, the names it uses) overflowed and stopped the batch
    ("def split_gradient(x0, dF, upstream):\n    return " + "1 + " * 150 + "1, 2\n", "more than 100 levels deep"),
    ("def split_gradient(x0, dF, upstream):\n    return " + "-" * 400_000 + "1, 2\n", "nested too deeply"),
])
def test_syntax_error_and_os_exit_cost_only_their_cell(grader, tmp_path, source, reason):
    result = grader(RESIDUAL).grade(notebook_with(tmp_path, "broken.ipynb", split_gradient=source), SEED).to_store()
    lost = [t for t in result["tests"] if t["score"] < t["max_score"]]
    assert [t["name"] for t in lost] == ["split_gradient: the identity path's and the branch's share"]
    assert reason in lost[0]["output"] and "cell 'split_gradient'" in lost[0]["output"]


def test_solutions_are_not_readable_from_student_code(graded):
    result = graded(RESIDUAL)["reads-solutions.ipynb"]
    assert result["score"] == 0, "a sandbox child read solutions/ from disk (is Landlock available?)"


def test_same_seed_same_inputs_same_feedback(grader, graded):
    again = grader(RESIDUAL).grade(RC.folder / "pre-post-swapped.ipynb", SEED).to_store()
    assert again == graded(RESIDUAL)["pre-post-swapped.ipynb"]


# one that trains, one whose training tests fail, one the monitor holds, one that forges a report
ON_CORES = ["full-marks.ipynb", "part5-shortcut-missing.ipynb", "reach-string-type-hint.ipynb",
            "forged-structure-report.ipynb"]


def test_a_notebook_graded_on_several_cores_gets_the_batchs_result(graded):
    """The command line grades one notebook on every core (Grader(parts_at_once=N)): each slow test
    first, in a child of its own, then a child per part; the rules tests once all are done. Every
    entry, note and review line is the batch's, at the same seed."""
    with Grader(RESIDUAL, course.load(), timeout_s=SAMPLE_TIMEOUT_S, parts_at_once=2) as g:
        groups = g._groups()
        slow = [t for t in g.graded if t.slow]
        assert len(slow) >= 3 and groups[:len(slow)] == [[t] for t in slow]
        assert not any(t.reads_findings for group in groups for t in group)
        for name in ON_CORES:
            assert g.grade(RC.folder / name, SEED).to_store() == graded(RESIDUAL)[name], f"{name}, seed {SEED}"


# ---------------------------------------------------------------- residual-connections: bad input

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
    (b'{"cells": [], "n": ' + b"9" * 5000 + b"}", "Exceeds the limit"),     # json's ValueError, no JSONDecodeError
    # code the grader would read in its own process for a minute, before any child runs (extract.CODE_CELLS)
    (json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                            "source": "#" * (300 << 10)}] * 4}).encode(), "a notebook's code cells may hold in all"),
    # cells each reader passes over, 70,000 of them for a minute (red team 38)
    (json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                            "source": "x = 1"}] * 2001}).encode(), "more than the 2000 a notebook may have"),
])
def test_unreadable_files_score_zero_with_a_reason(grader, tmp_path, content, reason):
    path = tmp_path / "upload.ipynb"
    path.write_bytes(content)
    result = grader(RESIDUAL).grade(path, SEED).to_store()
    assert result["score"] == 0 and len(result["tests"]) == len(suites.load(RESIDUAL).tests)
    assert all(reason in t["output"] for t in result["tests"])


def test_missing_file_scores_zero(grader, tmp_path):
    result = grader(RESIDUAL).grade(tmp_path / "nothing.ipynb", SEED).to_store()
    assert result["score"] == 0 and "no such file" in result["tests"][0]["output"]


def test_notebook_without_solution_cells(grader, tmp_path):
    path = tmp_path / "empty.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": "hi"}],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = grader(RESIDUAL).grade(path, SEED).to_store()
    assert result["score"] == 0
    assert "solution cell 'residual_add' is missing from the notebook" in result["tests"][0]["output"]


def test_unknown_assignment_lists_the_valid_ones():
    with pytest.raises(CourseError, match="residual-connections"):
        Grader("no-such-assignment", course.load())


def test_locked_cells_come_from_the_source_notebook(tmp_path):
    nb = json.loads((RC.folder / "full-marks.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "setup":
            cell["source"] = "import torch\ntorch.allclose = lambda *a, **k: True\n"
    path = tmp_path / "edited-setup.ipynb"
    path.write_text(json.dumps(nb))
    extracted = Template(RC.solution).fill(path)
    setup = dict(extracted.cells)["setup"]
    assert "allclose" not in setup and "from torch import Tensor, nn" in setup
    assert extracted.problems == {}
    with pytest.raises(NotebookError):
        Template(RC.solution).fill(RC.folder / "invalid-json.ipynb")


# ---------------------------------------------------------------- residual-connections: the sandbox's limits

def test_memory_limit_fails_the_test_not_the_grader(grader, tmp_path):
    path = notebook_with(tmp_path, "greedy.ipynb", residual_add=(
        "def residual_add(x, fx):\n    big = torch.empty(6 << 30, dtype=torch.uint8)\n    return x + fx\n"))
    result = grader(RESIDUAL).grade(path, SEED).to_store()
    first = result["tests"][0]
    assert first["score"] == 0 and ("memory" in first["output"].lower() or "alloc" in first["output"].lower())
    assert grader(RESIDUAL).grade(RC.solution, SEED).to_store()["score"] == 100


def test_student_code_cannot_kill_the_fork_server(grader, tmp_path):
    path = notebook_with(tmp_path, "killer.ipynb", split_gradient=(
        "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n    pass\n"
        "def split_gradient(x0, dF, upstream):\n    return upstream, upstream * dF(x0)\n"))
    result = grader(RESIDUAL).grade(path, SEED)
    # the grading finished. The code reaches the process, but it runs only in Part 2's child (the cells
    # that part's names need), whose tests rest on returned values: it is flagged, and nothing is held
    assert all(t.passed or t.max_score == 0 for t in result.tests)
    assert "[process-introspection]" in result.review[0] and result.review[0].endswith("| import os, signal")
    assert grader(RESIDUAL).grade(RC.solution, SEED).to_store()["score"] == 100


def test_huge_messages_are_capped(grader, tmp_path):
    path = notebook_with(tmp_path, "chatty.ipynb", residual_add=(
        "def residual_add(x, fx):\n    raise ValueError('(2, 3) ' * 100000)\n"))
    result = grader(RESIDUAL).grade(path, SEED).to_store()
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
    result = grader(RESIDUAL).grade(path, SEED)
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
    source = json.loads((RC.folder / "full-marks.ipynb").read_text())
    cell = next(c for c in source["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "transformer_block")
    text = "".join(cell["source"]).replace('norm: str = "pre"', "").replace("d_model: int, n_heads: int, ", "d_model: int, n_heads: int")
    path = notebook_with(tmp_path, "no-norm.ipynb", transformer_block=text)
    result = grader(RESIDUAL).grade(path, SEED).to_store()
    lost = [t for t in result["tests"] if t["score"] < t["max_score"]]
    assert lost and all(t["part"] == 4 for t in lost)
    assert any("TransformerBlock takes (d_model, n_heads), the assignment says (d_model, n_heads, norm)"
               in t["output"] for t in lost), [t["output"] for t in lost]


def test_contract_problems_compare_kind_and_parameters():
    from autograder import contract
    c = contract.load(ROOT / "solutions" / RESIDUAL)
    assert c["TransformerBlock"].attributes == ("attn", "ln1", "ln2", "ffn")
    reported = {"residual_add": {"defined": True, "kind": "function", "params": ["a", "b"]},
                "Residual": {"defined": True, "kind": "function", "params": ["sublayer"]},
                "split_gradient": {"defined": True, "kind": "function", "params": ["x0", "dF", "upstream", "extra"]},
                "gradient_norms": {"defined": False}}
    assert c.problems(reported) == {
        "residual_add": "residual_add takes (a, b), the assignment says (x, fx)",
        "Residual": "Residual is a function, the assignment asks for a class"}


# ---------------------------------------------------------------- fused-add-norm: the command line, the fused tests

def test_fused_reference_scores_full_marks_through_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", FUSED, str(CLASSES[FUSED].solution), "--json",
                           "--seed", str(SEED)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert list(result) == ["assignment", "score", "max_score", "seed", "tests"]   # docs/results.md, fixed
    assert result["assignment"] == FUSED and result["seed"] == SEED
    lost = {t["name"]: t["output"] for t in result["tests"] if t["score"] != t["max_score"]}
    assert not lost, f"seed {SEED}: the reference lost points: {lost}"
    assert result["score"] == result["max_score"] == course.load().assignment(FUSED).max_auto == 40
    graded = [t for t in result["tests"] if not t["output"].startswith(SKIPPED)]
    assert {t["part"] for t in graded} >= {1} and sum(t["max_score"] for t in graded if t["part"] == 1) == 30
    assert "nanobind" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_fused_add_norm_has_one_timing_test_and_two_fused_ones():
    suite = SUITE[FUSED]
    assert [t.name for t in suite.tests if t.needs_cuda] == [TIMING]
    assert len(FUSED_TESTS) == 2 and sum(t.points for t in suite.tests if t.part == 1) == 30
    assert suite.cuda


def test_torch_only_wrapper_loses_exactly_the_fused_points(graded):
    result = graded(FUSED)["torch-only-wrapper.ipynb"]
    tests = by_name(result)
    lost = {name for name, t in tests.items() if t["part"] == 1 and t["score"] < t["max_score"]}
    assert lost == FUSED_TESTS, \
        f"seed {SEED}: {json.dumps({n: tests[n]['output'] for n in lost ^ FUSED_TESTS}, indent=1)}"
    assert sum(tests[name]["max_score"] for name in FUSED_TESTS) == 10
    for name in FUSED_TESTS:
        assert "calls torch ops instead of your Triton kernel" in tests[name]["output"]
        assert "fused_add_layernorm_kernel is defined but never launched" in tests[name]["output"]
        assert "add, native_layer_norm" in tests[name]["output"]
    assert sum(t["score"] for t in result["tests"] if t["part"] == 1) == 20


@pytest.mark.parametrize("sample, call", [("numpy-empty-kernel", "torch.Tensor.numpy"),
                                          ("by-hand-wrapper", "torch.Tensor.tolist"),
                                          ("heuristic-computes", "torch.Tensor.numpy")])
def test_a_wrapper_that_hands_python_the_values_loses_the_fused_tests(graded, sample, call):
    """Python computing h and y around an empty kernel, in the wrapper or in a heuristic the launch runs, must
    first take the values out of the tensors: the trace sees that call, whatever the policy says of it."""
    tests = by_name(graded(FUSED)[f"{sample}.ipynb"])
    for name in FUSED_TESTS:
        assert tests[name]["score"] == 0 and f"handed the tensors' values to Python ({call}" in tests[name]["output"]


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
def test_fused_failures_name_the_misconception(graded, name, test, words):
    output = by_name(graded(FUSED)[name])[test]["output"]
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
def test_edited_fused_reference_is_told_its_misconception(grader, tmp_path, cell, old, new, test, words):
    nb = json.loads((CLASSES[FUSED].folder / "full-marks.ipynb").read_text())
    source = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == cell)
    text = "".join(source["source"])
    assert old in text
    source["source"] = text.replace(old, new)
    path = tmp_path / "edited.ipynb"
    path.write_text(json.dumps(nb))
    entry = by_name(grader(FUSED).grade(path, SEED).to_store())[test]
    assert entry["score"] == 0 and words in entry["output"], f"seed {SEED}: {entry['output']}"


# ---------------------------------------------------------------- fused-add-norm without CUDA: course.toml decides

def course_with(without_cuda: str) -> course.Course:
    """course.toml as it is, but with this without_cuda rule for fused-add-norm's timing test."""
    real = course.load()
    a = real.assignment(FUSED)
    changed = dataclasses.replace(a, timing=dataclasses.replace(a.timing, without_cuda=without_cuda))
    return dataclasses.replace(real, assignments={**real.assignments, FUSED: changed})


def test_without_cuda_redistribute_scores_the_timing_points_at_part_1s_fraction(graded):
    assert course.load().assignment(FUSED).timing.without_cuda == "redistribute"
    for name, part1, timing in [("full-marks.ipynb", 30, 10), ("torch-only-wrapper.ipynb", 20, 6.67),
                                ("variance-over-block.ipynb", 25, 8.33), ("untouched-release.ipynb", 0, 0)]:
        result = graded(FUSED)[name]
        entry = by_name(result)[TIMING]
        assert (entry["part"], entry["score"], entry["max_score"]) == (2, timing, 10), (name, entry)
        assert entry["output"].startswith(SKIPPED + "; its 10 points are redistributed to part 1 per course.toml")
        assert f"{part1} of 30, so {timing} of 10" in entry["output"]
        assert result["max_score"] == 40 and result["score"] == round(part1 + timing, 2)


def test_without_cuda_skip_drops_the_timing_points_from_the_maximum():
    with Grader(FUSED, course_with("skip"), cuda=False) as grader:
        for name, score in [("full-marks.ipynb", 30), ("variance-over-block.ipynb", 25)]:
            result = grader.grade(CLASSES[FUSED].folder / name, SEED).to_store()
            entry = by_name(result)[TIMING]
            assert (entry["score"], entry["max_score"]) == (0, 0)
            assert entry["output"].startswith(SKIPPED + "; not graded, per course.toml")
            assert "its 10 points are left out of the maximum" in entry["output"]
            assert (result["score"], result["max_score"]) == (score, 30), result


def test_a_judge_fails_its_test_at_the_first_call_it_finds_wanting_and_never_raises():
    """Test.judges reads every traced call of its part (grading/grader.py): the first it finds wanting is the
    failure, and a report the judge cannot read costs the test alone, as an unusable reply does. fused-add-norm's
    judges read a malformed report as one that shows no launch of the notebook's kernel."""
    from autograder.grading.grader import _judged
    from autograder.kit.trial import Test as SuiteTest
    from autograder.suites.fused_add_norm import part1
    empty = SuiteTest("judged", 1, 1, lambda t: None, judges=lambda label, report: None if report else f"{label}: empty")
    assert _judged(empty, [("f(1)", {"launches": []}), ("f(2)", {}), ("f(3)", {})]) == "f(2): empty"
    assert _judged(empty, [("f(1)", {"launches": []})]) is None
    raising = SuiteTest("judged", 1, 1, lambda t: None, judges=lambda label, report: report["launches"][0])
    assert _judged(raising, [("f(1)", {})]) == "could not be checked: the submission's reply to f(1) was unusable (KeyError)"
    for judge in (part1.launched, part1.fused):
        assert "launched no @triton.jit kernel" in judge("f(1)", {"launches": "x", "ops": 5, "calls": None})
