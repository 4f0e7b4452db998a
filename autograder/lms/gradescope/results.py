"""Our Result as Gradescope's results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/).

    to_gradescope(result, visibility="after_published", late=Late(...), execution_time=12.3) -> dict
    not_graded(assignment, reason) -> dict      # score 0 and the reason, for a run that graded nothing

Per-test scores are the Result's own: Gradescope gets exactly what `python -m autograder
grade` prints. Only the top-level score may differ from their sum, by the late penalty.
"""
from __future__ import annotations

from ...results.result import Result, points
from .late import Late


def to_gradescope(result: Result, *, visibility: str, late: Late | None = None,
                  execution_time: float | None = None) -> dict:
    """visibility: course.toml's choice for the hidden tests' entries ("visible" or "after_published")."""
    numbers: dict[int, int] = {}
    tests = []
    for t in result.tests:
        numbers[t.part] = numbers.get(t.part, 0) + 1
        tests.append({
            "name": t.name,
            "number": f"{t.part}.{numbers[t.part]}",     # Gradescope groups "1.1", "1.2", ... by part
            "score": t.score,
            "max_score": t.max_score,
            # a CUDA test that was not run scores by the without_cuda rule: it did not fail, and its
            # output (results.result.not_run) says how its points were given
            "status": "failed" if t.ran and not t.passed else "passed",
            "output": t.output,
            "output_format": "text",   # messages hold tensors, x_l and '*': markdown would mangle them
            "tags": [f"part {t.part}"] + ([] if t.ran else ["not run"]),
            "visibility": visibility,
            "extra_data": {"part": t.part, "ran": t.ran},
        })
    penalty = late.penalty if late else 0
    lines = [f"{result.assignment}: {result.score} / {result.max_score} automatic points from the hidden "
             f"tests, run outside your notebook (seed {result.seed})."]
    if late:
        lines.append(late.line())
    out = {
        "score": points(max(0, result.score - penalty)),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",           # the grader's log is for instructors
        "extra_data": {"assignment": result.assignment, "seed": result.seed, "auto_score": result.score,
                       "max_score": result.max_score, **({"late": late.to_json()} if late else {})},
        "tests": tests,
    }
    if execution_time is not None:
        out["execution_time"] = round(execution_time, 1)
    return out


def not_graded(assignment: str, reason: str) -> dict:
    """results.json for a run that graded nothing (no notebook, the grader killed or broken)."""
    return {"score": 0, "output": f"{assignment}: not graded: {reason}", "output_format": "text",
            "visibility": "visible", "stdout_visibility": "hidden", "extra_data": {"assignment": assignment}}
