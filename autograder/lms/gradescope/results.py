"""Our Result as Gradescope's results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/).

    to_gradescope(result, visibility="after_published", late=Late(...), answers=[...], execution_time=12.3) -> dict
    not_graded(assignment, reason) -> dict      # score 0 and the reason, for a run that graded nothing

Per-test scores are the Result's own: Gradescope gets exactly what `python -m autograder
grade` prints. Only the top-level score may differ from their sum, by the late penalty.
Each written answer (nbgrading/answers.py) is one more entry of 0 points, after its part's
tests, for the graders of the manually graded questions to read (docs/gradescope.md). A test
held for review is tagged HELD_TAG; the top-level output says how many points are held. extra_data
also carries what the class report and `review` read back from an "Export Submissions" zip
(export.py): each test's id (its function's name: the key, where `name` is only its title), kind and
misconception id, and the static policy's findings.
"""
from __future__ import annotations

from ...nbgrading.answers import Answer
from ...results.render import held_line
from ...results.result import Result, points
from .late import Late

ANSWERS_SEEN = "after_published"   # graders read them at once; the student, with the grades
# A held test's tag: its check passed but its points wait for an instructor's manual regrade (docs/gradescope.md)
HELD_TAG = "held for review"
WRITTEN_TAG = "written answer"   # a written answer's entry: not a hidden test


def to_gradescope(result: Result, *, visibility: str, late: Late | None = None, answers: list[Answer] = (),
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
            "tags": [f"part {t.part}"] + ([] if t.ran else ["not run"]) + ([HELD_TAG] if t.kind == "held" else []),
            "visibility": visibility,
            "extra_data": {"id": t.key, "part": t.part, "ran": t.ran, "kind": t.kind, "misconception": t.misconception,
                           **({"held": t.held} if t.kind == "held" else {})},
        })
    for a in answers:
        part = a.question.part
        numbers[part] = numbers.get(part, 0) + 1
        tests.insert(place(tests, part), written(a, f"{part}.{numbers[part]}"))
    penalty = late.penalty if late else 0
    lines = [f"{result.assignment}: {result.score} / {result.max_score} automatic points from the hidden "
             f"tests, run outside your notebook (seed {result.seed})."]
    if late:
        lines.append(late.line())
    if held := held_line(result):
        lines.append(held[0].upper() + held[1:] + " (docs/gradescope.md).")
    if answers:
        manual = sum(a.question.points for a in answers)
        lines.append(f"Your written answers ({manual:g} points) are graded by hand; they are listed here, as the "
                     "graders read them, once the grades are published.")
    out = {
        "score": points(max(0, result.score - penalty)),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",           # the grader's log is for instructors
        "extra_data": {"assignment": result.assignment, "seed": result.seed, "auto_score": result.score,
                       "max_score": result.max_score, "held_for_review": result.held_points,
                       "review": list(result.review),     # the policy's findings, for `review` (export.py)
                       **({"late": late.to_json()} if late else {})},
        "tests": tests,
    }
    if execution_time is not None:
        out["execution_time"] = round(execution_time, 1)
    return out


def place(tests: list[dict], part: int) -> int:
    """Where a written answer of this part goes: after the first run of the part's entries (a suite
    lists its 0-point rules tests last, apart from their part); without one, before the next part's."""
    parts = [t["extra_data"]["part"] for t in tests]
    if part not in parts:
        return next((i for i, p in enumerate(parts) if p > part), len(parts))
    at = parts.index(part)
    while at < len(parts) and parts[at] == part:
        at += 1
    return at


def written(a: Answer, number: str) -> dict:
    """A written answer's entry: the question, the answer rendered (cleaned HTML), 0 points."""
    q = a.question
    return {
        "name": f"Part {q.part} written answer ({q.points:g} points, graded by hand): {q.short}",
        "number": number,
        "score": 0,
        "max_score": 0,
        "output": a.html(),
        "output_format": "html",
        "tags": [f"part {q.part}", WRITTEN_TAG, f"{q.points:g} manual points"],
        "visibility": ANSWERS_SEEN,
        "extra_data": {"part": q.part, "grade_id": q.grade_id, "manual_points": q.points,
                       "answered": a.text is not None},
    }


def not_graded(assignment: str, reason: str) -> dict:
    """results.json for a run that graded nothing (no notebook, the grader killed or broken)."""
    return {"score": 0, "output": f"{assignment}: not graded: {reason}", "output_format": "text",
            "visibility": "visible", "stdout_visibility": "hidden", "extra_data": {"assignment": assignment}}
