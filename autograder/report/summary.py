"""A graded class in numbers: per part, per hidden test, per misconception, and what is listed apart.

    s = summarise(students)       # classlist.Student list, graded ones counted
    s.tests["residual_add_values"].pass_rate, s.misconceptions["silent-broadcasting"].students

Tests are keyed by id (their function's name, TestResult.key), so results graded before and after a
sentence was reworded count as one test; the sentence is only its title (the first one met).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..results.result import TestResult
from .classlist import Student

APART = {"error": "raised an exception", "not_attempted": "left as a stub", "timed_out": "timed out",
         "crashed": "crashed the grading process", "unreadable": "not a readable notebook",
         "unusable": "replied with something unusable",
         "held": "held for an instructor's review (the checks passed; 0 until released)",
         "confirmed": "held, and confirmed at 0 after an instructor's review"}


@dataclass
class TestRow:
    title: str       # the sentence shown for it
    part: int
    points: int
    graded: int = 0
    passed: int = 0
    failed_by: list[str] = field(default_factory=list)
    points_lost: float = 0

    @property
    def pass_rate(self) -> float:
        return self.passed / self.graded if self.graded else 0.0


@dataclass
class MisconceptionRow:
    students: set[str] = field(default_factory=set)
    tests: set[str] = field(default_factory=set)     # test ids
    points_lost: float = 0


@dataclass
class Summary:
    students: list[Student]
    tests: dict[str, TestRow]                        # test id -> its row, in the suite's order
    misconceptions: dict[str | None, MisconceptionRow]   # None: failures the suite names no misconception for
    apart: dict[str, dict[str, list[str]]]           # student -> kind -> test ids
    parts: dict[int, list[float]]                    # part -> each graded student's points
    part_max: dict[int, int]
    totals: list[float]
    max_score: int

    def by_points_lost(self) -> list[tuple[str | None, MisconceptionRow]]:
        return sorted(self.misconceptions.items(), key=lambda kv: (-kv[1].points_lost, -len(kv[1].students),
                                                                   kv[0] or "~"))


def kind(t: TestResult, decision: str | None = None) -> str:
    """The test's kind ("confirmed": held, and the result's decision kept it at 0; a released one is passed);
    a store written before kinds were kept gives passed, not_run or failed."""
    if t.kind == "held" and decision == "confirm":
        return "confirmed"
    if t.kind:
        return t.kind
    return "passed" if t.passed else "not_run" if not t.ran else "failed"


def summarise(students: list[Student]) -> Summary:
    graded = [s for s in students if s.result is not None]
    tests: dict[str, TestRow] = {}
    misconceptions: dict[str | None, MisconceptionRow] = defaultdict(MisconceptionRow)
    apart: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    parts: dict[int, list[float]] = defaultdict(list)
    part_max: dict[int, int] = {}
    for s in graded:
        for part, (score, top) in s.result.parts().items():
            parts[part].append(score)
            part_max[part] = max(part_max.get(part, 0), top)
        for t in s.result.tests:
            row = tests.setdefault(t.key, TestRow(t.name, t.part, t.max_score))
            k = kind(t, s.result.decision)
            if k == "not_run":
                continue
            row.graded += 1
            if k == "passed":
                row.passed += 1
                continue
            lost = t.max_score - t.score
            row.failed_by.append(s.name)
            row.points_lost += lost
            if k == "failed":
                m = misconceptions[t.misconception]
                m.students.add(s.name)
                m.tests.add(t.key)
                m.points_lost += lost
            else:
                apart[s.name][k].append(t.key)
    return Summary(students, tests, dict(misconceptions), {k: dict(v) for k, v in apart.items()}, dict(parts),
                   part_max, [s.result.score for s in graded], max((s.result.max_score for s in graded), default=0))
