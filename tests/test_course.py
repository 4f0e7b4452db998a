"""course.toml: loaded, validated, and consistent with the notebooks' points."""
import re
from pathlib import Path

import nbtest
import pytest

from autograder import course
from autograder.course import CourseError
from helpers import RELEASE_NB, ROOT, SOURCE_NB

GOOD = (ROOT / "course.toml").read_text()
RC = "[assignments.residual-connections]\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path


def test_loads_the_repository_course():
    c = course.load()
    a = c.assignment("residual-connections")
    assert a.auto == {1: 20, 2: 15, 3: 15, 4: 25, 5: 25} and a.max_auto == 100
    assert a.parts == [1, 2, 3, 4, 5]
    assert a.notebook_path(ROOT / "solutions") == SOURCE_NB


@pytest.mark.parametrize("edit, key, problem", [
    (lambda s: s.replace('id = "resid-2027"\n', ""), "course.id", "missing"),
    (lambda s: s.replace("timeout_s = 10", 'timeout_s = "10"'), "grading.timeout_s", "expected a number"),
    (lambda s: s.replace("memory_mb = 4096", "memory_mb = 4.5"), "grading.memory_mb", "expected a whole"),
    (lambda s: s.replace("2027-02-15T23:59:00Z", '"next friday"'), "residual-connections.deadline",
     "expected a date-time"),
    (lambda s: s.replace("2027-02-15T23:59:00Z", "2027-02-15T23:59:00"), "deadline", "time zone"),
    (lambda s: s.replace("1 = 20", "1 = -20"), "auto.1", "whole number of points"),
    (lambda s: s.replace("workers = 0", "workers = -2"), "grading.workers", "expected a whole number >= 0"),
    (lambda s: s.replace('kind = "canvas"', 'kind = "moodle"'), "lms.kind", "expected one of canvas, gradescope, got"),
    (lambda s: s.replace("late_per_day = 5", "late_per_day = -1", 1), "late_per_day", "points >= 0"),
    (lambda s: s.replace('visibility = "after_published"', 'visibility = "hidden"'), "lms.gradescope.visibility",
     "expected one of visible, after_published, got 'hidden'"),
    (lambda s: s.replace('missing = "blank"', 'missing = "excused"'), "lms.missing",
     "expected one of blank, zero, got 'excused'"),
    (lambda s: s.replace('late = "late_per_day"', 'late = "zero"'), "lms.gradescope.late",
     "expected one of late_per_day, none"),
    (lambda s: s.replace(RC, RC + 'gradescope = { visibility = "soon" }\n'),
     "residual-connections.gradescope.visibility", "expected one of visible"),
    (lambda s: s.replace("[grading]", "[grading]\ntimout_s = 3"), "grading.timout_s", "unknown key"),
    (lambda s: s.replace("submission_budget_s = 300", "submission_budget_s = 5"), "grading.submission_budget_s",
     "at least timeout_s"),
    (lambda s: s.replace("max_cell_kb = 512", "max_cell_kb = 0"), "grading.max_cell_kb", "KiB >= 1"),
    (lambda s: s.replace("[assignments.residual-connections]", "[assignments.no-such-thing]"),
     "no-such-thing.notebook", "unknown assignment"),
    (lambda s: s.replace('"dataclasses", "torch",', '"dataclasses", "math typing",'),   # fused-add-norm's list
     "fused-add-norm.policy.allowed_imports", "expected module names"),
    (lambda s: s.replace('forbidden_modules = ["numpy"]', 'forbidden_modules = ["torch"]'),
     "fused-add-norm.policy.forbidden_modules", "torch also in allowed_imports"),
    (lambda s: s.replace("no_transformer_classes = true", 'no_transformer_classes = "yes"'),
     "policy.no_transformer_classes", "true or false"),
    (lambda s: s.replace('forbidden_modules = ["numpy"]', 'forbidden_modules = ["numpy"]\nkernel_wraper = "x"'),
     "fused-add-norm.policy.kernel_wraper", "unknown key"),
])
def test_bad_course_file_names_file_and_key(tmp_path, edit, key, problem):
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(CourseError) as err:
        course.load(path)
    msg = str(err.value)
    assert re.match(rf"{re.escape(str(path))}:\d+: ", msg) and key in msg and problem in msg, msg


def test_a_bad_value_is_named_by_its_own_line(tmp_path):
    text = GOOD.replace("auto = { 1 = 20,", "auto = { 1 = -20,")
    line = 1 + text.splitlines().index(next(s for s in text.splitlines() if "1 = -20" in s))
    with pytest.raises(CourseError, match=rf"course.toml:{line}: assignments.residual-connections.auto.1: expected"):
        course.load(write(tmp_path, text))


@pytest.mark.parametrize("workers, cpus, graders", [(0, 1, 2), (0, 2, 3), (0, 16, 24), (5, 2, 5), (1, 16, 1)])
def test_graders_at_once_are_workers_or_one_and_a_half_per_core(tmp_path, monkeypatch, workers, cpus, graders):
    monkeypatch.setattr(course.os, "cpu_count", lambda: cpus)
    c = course.load(write(tmp_path, GOOD.replace("workers = 0", f"workers = {workers}")))
    assert c.grading.graders() == graders


def test_each_assignment_has_its_static_policy():
    rules = course.load().assignment("residual-connections").rules
    assert "torch.nn.functional" in rules.allowed_imports and rules.no_transformer_classes
    fused = course.load().assignment("fused-add-norm").rules
    assert fused.forbidden_modules == ("numpy",) and "triton.language" in fused.allowed_imports


def test_not_toml(tmp_path):
    with pytest.raises(CourseError, match="course.toml:1: not valid TOML"):
        course.load(write(tmp_path, "[course\nname = 1"))


def test_unknown_assignment_lists_valid_ones():
    with pytest.raises(CourseError, match="unknown assignment 'resnet'.*residual-connections"):
        course.load().assignment("resnet")


def test_release_points_match_course():
    """Each grade cell partN-tests / partN-written of the release carries the points course.toml gives part N
    (the release writes them: nbgrading/plugins.py CoursePoints; `python -m autograder check` says where not)."""
    nb = nbtest.read_notebook(RELEASE_NB)
    auto, manual = {}, {}
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if not meta.get("grade"):
            continue
        part, kind = re.fullmatch(r"part(\d)-(tests|written)", meta["grade_id"]).groups()
        (auto if kind == "tests" else manual)[int(part)] = meta["points"]
    a = course.load().assignment("residual-connections")
    assert auto == a.auto
    assert manual == a.manual


def test_gradescope_visibility_per_assignment_overrides_the_course(tmp_path):
    path = write(tmp_path, GOOD.replace(RC, RC + 'gradescope = { visibility = "visible" }\n'))
    c = course.load(path)
    assert c.lms.visibility(c.assignment("residual-connections")) == "visible"
    assert c.lms.visibility(c.assignment("fused-add-norm")) == "after_published"
    assert c.lms.gradescope.late == "late_per_day"


def test_late_penalty_counts_started_days():
    a = course.load().assignment("residual-connections")
    assert [a.late_penalty(s) for s in (-5, 0, 1, 86400, 86401)] == \
        [(0, 0), (0, 0), (1, a.late_per_day), (1, a.late_per_day), (2, 2 * a.late_per_day)]


def test_each_notebook_tells_students_its_without_cuda_rule():
    """A timed part without a GPU on the grader follows course.toml's without_cuda: the notebook
    the student reads names the rule in force, so a change to course.toml cannot leave it stale."""
    c = course.load()
    for name in c.assignments:
        timing = c.assignment(name).timing
        if timing is None:
            continue
        nb = nbtest.read_notebook(c.assignment(name).notebook_path(ROOT / "solutions"))
        text = "\n".join("".join(cell["source"]) for cell in nb["cells"] if cell["cell_type"] == "markdown")
        assert f'without_cuda = "{timing.without_cuda}"' in text, (name, timing.without_cuda)


def test_the_timing_threshold_students_read_is_course_tomls():
    timing = course.load().assignment("fused-add-norm").timing
    public = (ROOT / "solutions" / "fused-add-norm" / "test_public.py").read_text()
    assert f"MIN_SPEEDUP = {timing.min_speedup:g}" in public
    nb = nbtest.read_notebook(ROOT / "solutions" / "fused-add-norm" / "fused-add-norm.ipynb")
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert f"at least {timing.min_speedup:g} times as fast as eager" in " ".join(text.split())
