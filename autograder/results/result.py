"""One grading result: the object every consumer (command line, nbgrader, LMS) reads and renders.

    result = Result("residual-connections", seed, [TestResult("...", 1, 2, 2, "passed"), ...],
                    seed_from="code", code_key=..., secret_id=..., review=("cell line N: [rule] ...",))
    result.score, result.max_score, result.parts()      # totals, per part {part: (score, max)}
    result.to_json()                                      # the object docs/results.md fixes
    Result.from_json(data)                                # and back
    result.held_points, result.decided("release")          # points held for review; an instructor's decision applied

A test that needs CUDA, graded where there is none, is not run: `not_run` makes its entry
by course.toml's without_cuda rule, here and nowhere else (docs/results.md says what each
rule gives on each path).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..course import Assignment, split_points

MAX_OUTPUT = 1500          # characters of feedback per test
NOT_RUN = "skipped: "      # how the output of a test that was not run begins
# What happened in a test, kept in the results store (not in the --json object): "failed" is a
# wrong answer (with the suite's misconception id where it declares one); the others lost the
# points without showing a misconception, and the class report lists them apart. "held": the test's check
# passed, but the code breaks a rule that could forge what it rests on: 0 until an instructor decides.
KINDS = ("passed", "failed", "error", "not_attempted", "timed_out", "crashed", "unreadable", "unusable", "not_run",
         "held")
VERDICTS = ("release", "confirm")   # an instructor's decision on a submission's held tests (docs/results.md)


@dataclass(frozen=True)
class TestResult:
    name: str          # what the test checks, in words a student reads
    part: int          # the assignment's part (course.toml auto table)
    score: float
    max_score: float   # course.toml's share of the part's points (a whole number where it is one)
    output: str        # "passed", or what went wrong and the misconception it shows
    misconception: str | None = field(default=None, compare=False)   # the suite's id (suites/*/misconceptions.py)
    kind: str = field(default="", compare=False)   # one of KINDS; "" in a store written before kinds were kept
    retried: bool = field(default=False, compare=False)   # its first run hit the wall-clock backstop (docs/results.md)
    held: float = field(default=0, compare=False)   # what its passed check earned, held for review (0: never held)
    id: str = field(default="", compare=False)   # the test function's name: stores and samples know it by this
    # what its check read of the child's own reports (kit.trial.REPORTS keys): a forgery of those could
    # have made it pass, so a rule that reaches the process holds it
    rests: tuple[str, ...] = field(default=(), compare=False)

    @property
    def key(self) -> str:
        """Its id; in a store written before ids were kept, its name."""
        return self.id or self.name

    @property
    def ran(self) -> bool:
        """False for a CUDA-only test on a machine without CUDA."""
        return not self.output.startswith(NOT_RUN)

    @property
    def passed(self) -> bool:
        """Ran and earned its points; a 0-point test (a part's rules) passes only when it says so."""
        return self.ran and self.score == self.max_score and (self.max_score > 0 or self.output.startswith("passed"))

    def to_json(self) -> dict:
        return {"name": self.name, "part": self.part, "score": self.score, "max_score": self.max_score,
                "output": self.output}

    def to_store(self) -> dict:
        """to_json and, for the class report and the review queue, the test's id, the kind, the misconception
        id, whether it was retried, the points held and the child's reports it rested on."""
        return {**self.to_json(), "id": self.key, "kind": self.kind, "misconception": self.misconception, "retried": self.retried,
                "held": self.held, "rests": list(self.rests)}

    @classmethod
    def from_json(cls, data: dict) -> "TestResult":
        """From to_json's object or to_store's."""
        return cls(str(data["name"]), int(data["part"]), data["score"], points(data["max_score"]), str(data["output"]),
                   data.get("misconception"), str(data.get("kind") or ""), data.get("retried") is True,
                   data.get("held") or 0, str(data.get("id") or ""), tuple(map(str, data.get("rests") or ())))

    def decided(self, verdict: str) -> "TestResult":
        """A held test after an instructor's decision: "release" gives it the points its check earned,
        "confirm" keeps 0; either way the first line of its output says so."""
        if self.kind != "held":
            return self
        if verdict == "release":
            return _headed(dataclasses.replace(self, score=self.held, kind="passed"), RELEASED)
        return _headed(self, CONFIRMED)


@dataclass(frozen=True)
class Result:
    assignment: str
    seed: int
    tests: list[TestResult]
    submission: str | None = field(default=None, compare=False)   # the graded file, in batches
    seed_from: str = "given"     # "code": derived from code_key and the course secret (core/seeds.py)
    code_key: str = ""           # Extracted.key of what was graded
    secret_id: str = ""          # which course secret derived the seed
    review: tuple[str, ...] = ()  # the static policy's findings, for an instructor's look
    decision: str = field(default="", compare=False)   # one of VERDICTS once decided (the store keeps it apart)

    @property
    def held_points(self) -> float:
        """Points held for review now: earned by checks that passed, 0 until an instructor releases them."""
        return points(sum(t.held for t in self.tests if t.kind == "held"))

    @property
    def waiting(self) -> bool:
        """Flagged (policy findings, or tests held) and no instructor's decision yet."""
        return not self.decision and bool(self.review or self.held_points)

    def decided(self, verdict: str) -> "Result":
        """This result with an instructor's decision (one of VERDICTS) applied to its held tests."""
        if verdict not in VERDICTS:
            raise ValueError(f"a decision is one of {', '.join(VERDICTS)}, not {verdict!r}")
        tests = [t.decided(verdict) for t in self.tests]
        # a test not run for want of CUDA, its points redistributed (a maximum of more than 0), follows the fraction
        # of the others earned as decided: released points count there too
        ran = [t for t in tests if t.ran]
        tests = [t if t.ran or not t.max_score else
                 dataclasses.replace(not_run(t.name, t.part, t.max_score, "redistribute", ran), id=t.id)
                 for t in tests]
        return dataclasses.replace(self, tests=tests, decision=verdict)

    @property
    def score(self) -> float:
        return points(sum(t.score for t in self.tests))

    @property
    def max_score(self) -> float:
        return points(sum(t.max_score for t in self.tests))

    def parts(self) -> dict[int, tuple[float, int]]:
        """{part: (score, max_score)} summed over the part's tests, in part order."""
        out: dict[int, tuple[float, int]] = {}
        for t in sorted(self.tests, key=lambda t: t.part):
            score, top = out.get(t.part, (0, 0))
            out[t.part] = (points(score + t.score), points(top + t.max_score))
        return out

    def scaled(self, auto: dict[int, int]) -> "Result":
        """This result at course.toml's points per part (`auto`), graded at others: each part's tests keep
        the weights they were graded at (their max_score), share out the part's points in proportion
        (course.split_points), and keep the fraction of each they earned or had held. A part whose tests carry
        no points (left out by without_cuda = "skip") stays at 0. Nothing is regraded."""
        shares: dict[int, float] = {}      # index in self.tests -> its points
        for part, (_, top) in self.parts().items():
            mine = [i for i, t in enumerate(self.tests) if t.part == part]
            if top:
                shares.update(zip(mine, split_points([self.tests[i].max_score for i in mine], auto.get(part, 0))))
        tests = [t if shares.get(i, t.max_score) == t.max_score else _rescaled(t, shares[i])
                 for i, t in enumerate(self.tests)]
        return dataclasses.replace(self, tests=tests)

    def under(self, a: Assignment) -> "Result":
        """This kept result under course.toml as it is now (a: its assignment): each part at its `auto`
        points (scaled), and each test that was not run for want of CUDA given its entry by the without_cuda
        rule now, at its points now, from the fraction of the other tests earned. Nothing is regraded."""
        result = self.scaled(a.auto)
        if a.timing is None or all(t.ran for t in result.tests):
            return result
        from .. import suites      # only here: the suite's weights, for a test whose kept entry has none (skip)
        weights = {key: t.points for t in suites.load(a.name).scaled(a.auto) for key in (t.id, t.name)}
        ran = [t for t in result.tests if t.ran]
        tests = [t if t.ran or t.key not in weights else
                 dataclasses.replace(not_run(t.name, t.part, weights[t.key], a.timing.without_cuda, ran), id=t.id)
                 for t in result.tests]
        return dataclasses.replace(result, tests=tests)

    def to_json(self) -> dict:
        """The object docs/results.md fixes (and the command line prints): nothing more."""
        data = {"assignment": self.assignment, "score": self.score, "max_score": self.max_score,
                "seed": self.seed, "tests": [t.to_json() for t in self.tests]}
        return {"submission": self.submission, **data} if self.submission is not None else data

    def to_store(self) -> dict:
        """A results store's line: to_json, where the seed came from, the policy's review lines,
        and each test's to_store."""
        return {**self.to_json(), "seed_from": self.seed_from, "code_key": self.code_key,
                "secret_id": self.secret_id, "review": list(self.review),
                "tests": [t.to_store() for t in self.tests]}

    @classmethod
    def from_json(cls, data: dict) -> "Result":
        return cls(str(data["assignment"]), int(data["seed"]), [TestResult.from_json(t) for t in data["tests"]],
                   data.get("submission"), str(data.get("seed_from", "given")), str(data.get("code_key", "")),
                   str(data.get("secret_id", "")), tuple(map(str, data.get("review", ()))))


def _rescaled(test: TestResult, share: float) -> TestResult:
    """A test at `share` points instead of its max_score, with the same fraction earned and held."""
    ratio = share / test.max_score
    test = dataclasses.replace(test, max_score=share, score=share if test.score == test.max_score
                               else points(test.score * ratio), held=points(test.held * ratio))
    head = next((h for h in HEADS if test.output.startswith(h)), None)
    return _headed(test, head) if head and test.held else test     # its first line at the new points too


# The first line of a held test's output, by what became of it: what it says of the points is written from
# the test's fields (max_score, held), so a result rescaled to course.toml's points says the new ones.
HELD, RELEASED, CONFIRMED = ("held for an instructor's review", "passed: released after an instructor's review",
                             "held, and confirmed after an instructor's review")
HEADS = (HELD, RELEASED, CONFIRMED)


def _headed(test: TestResult, head: str) -> TestResult:
    """test with its output's first line replaced by `head`'s sentence at its points; the rest (why) kept."""
    top, earned = count(test.max_score, "point"), f"{test.held:g}"
    line = {HELD: f"{HELD}: 0 of {top} now; {earned} if an instructor releases "
                  f"{'it' if test.held == 1 else 'them'}",
            RELEASED: f"{RELEASED}, {earned} of {top} given back (the test had been held; why is below)",
            CONFIRMED: f"{CONFIRMED}: 0 of {top}; the {earned} its check earned "
                       f"{'is' if test.held == 1 else 'are'} not given"}[head]
    why = test.output.split("\n", 1)[1:]
    return dataclasses.replace(test, output=_cut("\n".join([line, *why])))   # the line is longer than the head


def entry(name: str, part: int, score: float, max_score: int, output: str, misconception: str | None = None,
          kind: str = "") -> TestResult:
    """A test's result with its output tidied and cut to MAX_OUTPUT characters."""
    return TestResult(name, part, score, max_score, _cut(tidy(output, 4 * MAX_OUTPUT)), misconception, kind)


def _cut(output: str) -> str:
    """output cut to MAX_OUTPUT characters, saying so."""
    return output if len(output) <= MAX_OUTPUT else output[:MAX_OUTPUT - 20] + " ... (cut)"


def held_entry(name: str, part: int, max_score: int, why: str) -> TestResult:
    """The entry of a test whose check passed but is held for an instructor's review: 0 now, and its
    points kept in `held` for a release. The first line says what happened to the points (decided()
    rewrites it); `why` follows."""
    return _headed(dataclasses.replace(entry(name, part, 0, max_score, f"{HELD}\n{why}", kind="held"),
                                       held=max_score), HELD)


def tidy(text: str, limit: int) -> str:
    """Cut to `limit` characters first, then drop each line's trailing blanks: linear in `limit`.

    A child's text can be any size; re.sub(r"\\s+\\n", ...) would be quadratic on a long run
    of spaces without a newline (400,000 spaces held the GIL for minutes). Lone surrogates
    (unencodable in UTF-8, so they crash a table or a JSON file) become "?"."""
    text = text[:limit].encode("utf-8", "replace").decode("utf-8")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def not_run(name: str, part: int, test_points: int, rule: str, graded: list[TestResult]) -> TestResult:
    """The entry of a CUDA-only test graded without CUDA, by course.toml's without_cuda rule.

    "redistribute": its points stay in the maximum and are scored at the fraction of the
    graded tests' points earned (27 of 30 -> 9 of its 10). "skip": it is left out of the
    maximum (score 0 of 0)."""
    why = f"{NOT_RUN}needs a CUDA GPU (none on the grading machine)"
    if rule == "skip":
        return entry(name, part, 0, 0, f"{why}; not graded, per course.toml (without_cuda = \"skip\"): its "
                                       f"{test_points} points are left out of the maximum", kind="not_run")
    earned, top = sum(t.score for t in graded), sum(t.max_score for t in graded)
    score = points(test_points * earned / top) if top else 0
    shown = " and ".join(f"part {p}" for p in sorted({t.part for t in graded})) or "no part"
    return entry(name, part, score, test_points,
                 f"{why}; its {test_points} points are redistributed to {shown} per course.toml "
                 f"(without_cuda = \"redistribute\"): they follow the fraction of {shown} you "
                 f"earned, {points(earned)} of {top}, so {score} of {test_points}", kind="not_run")


def count(n: float, noun: str) -> str:
    """"1 point", "2 points", "1.5 points"."""
    return f"{n:g} {noun}{'s' * (n != 1)}"


def points(value: float) -> float | int:
    """A score to two decimals, as a whole number where it is one."""
    value = round(value, 2)
    return int(value) if value == int(value) else value
