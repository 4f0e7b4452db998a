"""course.toml, loaded and checked in one place.

    course = load()                      # the repository's course.toml
    a = course.assignment("residual-connections")
    a.auto[1], a.max_auto, a.notebook_path(ROOT / "solutions")

Every problem is one CourseError naming the file and the key.
"""
from __future__ import annotations

import datetime as dt
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COURSE_FILE = Path(os.environ.get("COURSE_FILE") or ROOT / "course.toml")   # another file for a trial run
SOLUTIONS = ROOT / "solutions"
LMS_KINDS = ("canvas", "gradescope")
VISIBILITIES = ("visible", "after_published")   # when Gradescope shows students the hidden tests' entries
MISSING_SCORES = ("blank", "zero")               # a non-submitter in the Canvas CSV: left blank, or 0
LATE_POLICIES = ("late_per_day", "none")         # Gradescope: late_per_day off per started day after its due date
WITHOUT_CUDA = ("redistribute", "skip")
DTYPES = ("float16", "bfloat16", "float32")
MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class CourseError(ValueError):
    """course.toml is missing a key, has a wrong type, or names something that does not exist."""


def split_points(weights: list[float], total: float) -> list[float]:
    """`total` points shared out in proportion to `weights`, to two decimals, summing to `total` exactly
    (each share is the difference of rounded running totals): [2, 2, 1] of 25 -> [10, 10, 5].
    All weights 0: all shares 0."""
    whole, running, given, out = sum(weights), 0.0, 0.0, []
    for weight in weights:
        running += weight
        edge = round(total * running / whole, 2) if whole else 0.0
        share = round(edge - given, 2)
        out.append(int(share) if share == int(share) else share)
        given = edge
    return out


@dataclass(frozen=True)
class Timing:
    """A graded speed test that needs CUDA: the student's kernel against eager PyTorch."""
    part: int
    rows: int
    width: int
    dtype: str
    min_speedup: float        # eager time / student time, measured in the same run
    without_cuda: str         # "redistribute": its points go to the other parts; "skip": not graded


@dataclass(frozen=True)
class Rules:
    """What a submission's source may contain, checked by the grader (nbtest/policy.py) without running it."""
    allowed_imports: tuple[str, ...] = ()     # modules a solution cell may import, exact ("torch.nn.functional")
    forbidden_modules: tuple[str, ...] = ()   # modules not to be used at all, even reached as an attribute
    no_transformer_classes: bool = False      # torch.nn's Transformer classes may not be used


@dataclass(frozen=True)
class Assignment:
    name: str
    notebook: str
    deadline: dt.datetime
    auto: dict[int, int]      # part -> points from hidden tests
    manual: dict[int, int]    # part -> points from written answers
    timing: Timing | None = None
    late_per_day: float = 0   # points off for each started day after the deadline (0: no penalty)
    gradescope_visibility: str | None = None   # overrides [lms.gradescope] visibility for this assignment
    rules: Rules = Rules()    # the static policy of its solution cells

    @property
    def cell_points(self) -> dict[str, int]:
        """{grade_id: points} of the notebook's grade cells, from auto (partN-tests) and manual (partN-written)."""
        return {**{f"part{p}-tests": v for p, v in sorted(self.auto.items())},
                **{f"part{p}-written": v for p, v in sorted(self.manual.items())}}

    @property
    def parts(self) -> list[int]:
        return sorted(set(self.auto) | set(self.manual))

    @property
    def max_auto(self) -> int:
        return sum(self.auto.values())

    @property
    def deadline_utc(self) -> dt.datetime:
        """The deadline as nbgrader stores due dates: UTC, without a time zone."""
        return self.deadline.astimezone(dt.timezone.utc).replace(tzinfo=None)

    def late_penalty(self, seconds_late: float) -> tuple[int, float]:
        """(started days after the deadline, points off): late_per_day for each started day."""
        days = math.ceil(seconds_late / 86400) if seconds_late > 0 else 0
        return days, days * self.late_per_day

    def notebook_path(self, folder: Path) -> Path:
        """Where this assignment's notebook sits under solutions/, assignments/, ..."""
        return Path(folder) / self.name / self.notebook


@dataclass(frozen=True)
class Grading:
    timeout_s: float
    memory_mb: int
    workers: int
    submission_budget_s: float   # one submission, loading and every test: then it is stopped
    max_cell_kb: int             # a larger cell in a submitted notebook is not run (score 0)

    def graders(self) -> int:
        """Submissions one grading process grades at once (grade's batches, Gradescope's roots): `workers`,
        or when 0 one and a half per core. A submission's grader thread and its sandbox child take turns,
        each waiting on the other, so one per core leaves the cores idle a fifth of the time on 2 cores
        (busy 79%, and 87% with 3 at once: benchmarks/grade_speed.py)."""
        cpus = os.cpu_count() or 1
        return self.workers or cpus + (cpus + 1) // 2


@dataclass(frozen=True)
class Gradescope:
    visibility: str = "after_published"   # the hidden tests' names, scores and messages: when students see them
    late: str = "late_per_day"            # what a submission after Gradescope's due date costs


@dataclass(frozen=True)
class Lms:
    kind: str
    canvas_course_id: int
    gradescope: Gradescope = Gradescope()
    missing: str = "blank"     # a non-submitter's Canvas grade: "blank" (Canvas keeps "excused") or "zero"

    def visibility(self, assignment: Assignment) -> str:
        """Gradescope visibility of an assignment's hidden-test entries."""
        return assignment.gradescope_visibility or self.gradescope.visibility


@dataclass(frozen=True)
class CanvasApi:
    """[canvas]: Canvas's REST API (lms/canvas/api.py), the course's id being [lms] canvas_course_id."""
    base_url: str = ""                                  # "https://canvas.example.edu"; "" until set
    token_file: str = "~/.config/residual-course/canvas-token"   # when CANVAS_TOKEN is not set; owner-only
    assignments: dict[str, int] = field(default_factory=dict)    # course assignment -> its Canvas id


@dataclass(frozen=True)
class Report:
    """The class report's similarity check (docs/report.md): a pair is listed when the larger share of
    its fingerprints found in the other reaches `similarity_threshold` over at least `min_shared`."""
    similarity_threshold: float = 0.45
    min_shared: int = 50


@dataclass(frozen=True)
class Course:
    name: str
    id: str
    grading: Grading
    lms: Lms
    assignments: dict[str, Assignment]
    report: Report = Report()
    canvas: CanvasApi = CanvasApi()

    def assignment(self, name: str) -> Assignment:
        try:
            return self.assignments[name]
        except KeyError:
            raise CourseError(f"unknown assignment {name!r}; course.toml has: "
                              + ", ".join(sorted(self.assignments))) from None


HEADER = re.compile(r"\s*\[\[?([^\]]+)\]\]?\s*(#.*)?$")
KEY = re.compile(r"\s*([A-Za-z0-9_\-\"'. ]+?)\s*=")


def _names(dotted: str) -> list[str]:
    return [part.strip().strip("\"'") for part in dotted.split(".")]


def toml_line(text: str, keys: list[str]) -> int | None:
    """The line (from 1) of a TOML file's text that best names the dotted key `keys`: its own line, or else
    the line of its nearest table or key written there (an inline table's line); None when not found."""
    best, table = (0, None), []
    for number, line in enumerate(text.splitlines(), 1):
        if header := HEADER.match(line):
            table, found = _names(header.group(1)), _names(header.group(1))
        elif key := KEY.match(line):
            found = table + _names(key.group(1))
        else:
            continue
        common = min(len(found), len(keys))     # a table [a.b] names key a, and key a.b.c is in it
        if found[:common] == keys[:common] and common > best[0]:
            best = (common, number)
    return best[1]


def where(path: Path, text: str, keys: list[str]) -> str:
    """"path:line" of a key (toml_line), or "path" when the line is not found."""
    line = toml_line(text, keys)
    return f"{path}:{line}" if line else str(path)


class _Reader:
    """Typed access to one TOML table, with errors that name the file, the line and the key."""

    def __init__(self, path: Path, table: dict, prefix: str, text: str = ""):
        self.path, self.table, self.prefix, self.text = path, table, prefix, text

    def error(self, key: str, problem: str) -> CourseError:
        dotted = f"{self.prefix}.{key}" if self.prefix else str(key)
        keys = (_names(self.prefix) if self.prefix else []) + [str(key)]
        return CourseError(f"{where(self.path, self.text, keys)}: {dotted}: {problem}")

    def get(self, key: str, kind: type | tuple[type, ...], label: str):
        if key not in self.table:
            raise self.error(key, f"missing (expected {label})")
        value = self.table[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self.error(key, f"expected {label}, got {type(value).__name__} {value!r}")
        return value

    def sub(self, key: str) -> _Reader:
        table = self.get(key, dict, "a table")
        return _Reader(self.path, table, f"{self.prefix}.{key}" if self.prefix else key, self.text)

    def only(self, *keys: str) -> None:
        for key in self.table:
            if key not in keys:
                raise self.error(key, f"unknown key (expected one of: {', '.join(keys)})")

    def points(self, key: str) -> dict[int, int]:
        table = self.sub(key)
        out = {}
        for part, value in table.table.items():
            if not str(part).isdigit() or int(part) < 1:
                raise table.error(part, "parts are numbered 1, 2, ...")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise table.error(part, f"expected a whole number of points >= 0, got {value!r}")
            out[int(part)] = value
        return out


def _timing(t: _Reader, auto: dict[int, int]) -> Timing:
    t.only("part", "rows", "width", "dtype", "min_speedup", "without_cuda")
    timing = Timing(part=t.get("part", int, "a part number"), rows=t.get("rows", int, "a whole number"),
                    width=t.get("width", int, "a whole number"), dtype=t.get("dtype", str, "a dtype name"),
                    min_speedup=float(t.get("min_speedup", (int, float), "a number")),
                    without_cuda=t.get("without_cuda", str, "a string"))
    if timing.part not in auto:
        raise t.error("part", f"part {timing.part} has no automatic points in auto")
    if timing.dtype not in DTYPES:
        raise t.error("dtype", f"expected one of {', '.join(DTYPES)}, got {timing.dtype!r}")
    if timing.without_cuda not in WITHOUT_CUDA:
        raise t.error("without_cuda", f"expected one of {', '.join(WITHOUT_CUDA)}, got {timing.without_cuda!r}")
    return timing


def _choice(t: _Reader, key: str, choices: tuple[str, ...]) -> str:
    value = t.get(key, str, "a string")
    if value not in choices:
        raise t.error(key, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def _gradescope(t: _Reader) -> Gradescope:
    t.only("visibility", "late")
    default = Gradescope()
    return Gradescope(visibility=_choice(t, "visibility", VISIBILITIES) if "visibility" in t.table else default.visibility,
                      late=_choice(t, "late", LATE_POLICIES) if "late" in t.table else default.late)


def _gradescope_visibility(a: _Reader) -> str | None:
    """[assignments.NAME.gradescope] visibility, the only per-assignment Gradescope setting."""
    if "gradescope" not in a.table:
        return None
    t = a.sub("gradescope")
    t.only("visibility")
    return _choice(t, "visibility", VISIBILITIES)


def _rules(r: _Reader) -> Rules:
    r.only("allowed_imports", "forbidden_modules", "no_transformer_classes")
    names = {}
    for key in ("allowed_imports", "forbidden_modules"):
        value = r.get(key, list, "a list of module names") if key in r.table else []
        if not all(isinstance(v, str) and MODULE_NAME.fullmatch(v) for v in value):
            raise r.error(key, f"expected module names such as \"torch.nn.functional\", got {value!r}")
        names[key] = tuple(value)
    clash = set(names["allowed_imports"]) & set(names["forbidden_modules"])
    if clash:
        raise r.error("forbidden_modules", f"{', '.join(sorted(clash))} also in allowed_imports; keep it in one list")
    return Rules(names["allowed_imports"], names["forbidden_modules"],
                 r.get("no_transformer_classes", bool, "true or false") if "no_transformer_classes" in r.table
                 else False)


def read_toml(path: Path, error: type[Exception]) -> tuple[str, dict]:
    """(text, data) of a TOML file; `error` naming the file and the line where it is missing or not TOML."""
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as e:
        line = re.search(r"at line (\d+)", str(e))
        raise error(f"{path}{':' + line.group(1) if line else ''}: not valid TOML: {e}") from None


def load(path: str | Path = COURSE_FILE, solutions: str | Path = SOLUTIONS) -> Course:
    """Read and validate course.toml; every assignment must exist under solutions/."""
    path = Path(path)
    text, data = read_toml(path, CourseError)
    top = _Reader(path, data, "", text)
    top.only("course", "grading", "lms", "assignments", "report", "canvas")

    course = top.sub("course")
    course.only("name", "id")
    grading = top.sub("grading")
    grading.only("timeout_s", "memory_mb", "workers", "submission_budget_s", "max_cell_kb")
    timeout_s = float(grading.get("timeout_s", (int, float), "a number of seconds"))
    budget_s = float(grading.get("submission_budget_s", (int, float), "a number of seconds"))
    if budget_s < timeout_s:
        raise grading.error("submission_budget_s", f"expected at least timeout_s ({timeout_s:g} s): it covers "
                                                   f"loading and every test of one submission, got {budget_s:g}")
    max_cell_kb = grading.get("max_cell_kb", int, "a whole number of KiB")
    if max_cell_kb < 1:
        raise grading.error("max_cell_kb", f"expected a whole number of KiB >= 1, got {max_cell_kb}")
    workers = grading.get("workers", int, "a whole number (0 = by the cores)")
    if workers < 0:
        raise grading.error("workers", f"expected a whole number >= 0 (0 = by the cores), got {workers}")
    lms = top.sub("lms")
    lms.only("kind", "canvas_course_id", "gradescope", "missing")
    kind = lms.get("kind", str, "a string")
    if kind not in LMS_KINDS:
        raise lms.error("kind", f"expected one of {', '.join(LMS_KINDS)}, got {kind!r}")

    assignments = {}
    table = top.sub("assignments")
    if not table.table:
        raise CourseError(f"{path}: assignments: no assignments listed")
    for name in table.table:
        a = table.sub(name)
        a.only("notebook", "deadline", "auto", "manual", "timing", "late_per_day", "gradescope", "policy")
        deadline = a.get("deadline", dt.datetime, "a date-time such as 2027-02-15T23:59:00Z")
        if deadline.tzinfo is None:
            raise a.error("deadline", "needs a time zone, e.g. 2027-02-15T23:59:00Z")
        auto = a.points("auto")
        late = float(a.get("late_per_day", (int, float), "a number of points")) if "late_per_day" in a.table else 0.0
        if late < 0:
            raise a.error("late_per_day", f"expected points >= 0 taken off per day late, got {late:g}")
        assignment = Assignment(name=name, notebook=a.get("notebook", str, "a file name"),
                                deadline=deadline, auto=auto, manual=a.points("manual"),
                                timing=_timing(a.sub("timing"), auto) if "timing" in a.table else None,
                                late_per_day=late, rules=_rules(a.sub("policy")) if "policy" in a.table else Rules(),
                                gradescope_visibility=_gradescope_visibility(a))
        source = assignment.notebook_path(Path(solutions))
        if not source.is_file():
            raise a.error("notebook", f"unknown assignment: no source notebook at {source}")
        assignments[name] = assignment

    return Course(
        name=course.get("name", str, "a string"),
        id=course.get("id", str, "a string"),
        grading=Grading(timeout_s=timeout_s,
                        memory_mb=grading.get("memory_mb", int, "a whole number of MiB"),
                        workers=workers,
                        submission_budget_s=budget_s, max_cell_kb=max_cell_kb),
        lms=Lms(kind=kind, canvas_course_id=lms.get("canvas_course_id", int, "a whole number"),
                gradescope=_gradescope(lms.sub("gradescope")) if "gradescope" in lms.table else Gradescope(),
                missing=_choice(lms, "missing", MISSING_SCORES) if "missing" in lms.table else Lms.missing),
        assignments=assignments,
        report=_report(top.sub("report")) if "report" in top.table else Report(),
        canvas=_canvas(top.sub("canvas"), assignments) if "canvas" in top.table else CanvasApi(),
    )


def _report(r: _Reader) -> Report:
    r.only("similarity_threshold", "min_shared")
    threshold = float(r.get("similarity_threshold", (int, float), "a number between 0 and 1"))
    if not 0 < threshold <= 1:
        raise r.error("similarity_threshold", f"expected a number in (0, 1], got {threshold:g}")
    shared = r.get("min_shared", int, "a whole number of fingerprints") if "min_shared" in r.table else 50
    if shared < 1:
        raise r.error("min_shared", f"expected a whole number >= 1, got {shared}")
    return Report(threshold, shared)


def _canvas(c: _Reader, assignments: dict[str, Assignment]) -> CanvasApi:
    c.only("base_url", "token_file", "assignments")
    base_url = c.get("base_url", str, "a URL such as \"https://canvas.example.edu\"").rstrip("/")
    if base_url and not re.fullmatch(r"https?://[^/\s]+(/[^\s]*)?", base_url):
        raise c.error("base_url", f"expected an http(s) URL such as \"https://canvas.example.edu\", got {base_url!r}")
    ids = c.sub("assignments") if "assignments" in c.table else _Reader(c.path, {}, f"{c.prefix}.assignments")
    for name, value in ids.table.items():
        if name not in assignments:
            raise ids.error(name, f"not an assignment of this course (expected one of: {', '.join(assignments)})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ids.error(name, f"expected the whole number in the assignment's Canvas URL, got {value!r}")
    return CanvasApi(base_url=base_url,
                     token_file=c.get("token_file", str, "a file path") if "token_file" in c.table
                     else CanvasApi.token_file,
                     assignments=dict(ids.table))
