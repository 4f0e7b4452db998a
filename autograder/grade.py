"""python -m autograder grade: grade submitted notebooks against the hidden suites.

    python -m autograder grade residual-connections alice.ipynb [--json] [--seed N]
    python -m autograder grade residual-connections downloads/ --out results.jsonl

One notebook prints its result (a table, or with --json the object SPEC.md fixes).
Several notebooks, or folders of them, are graded in parallel with a progress bar
on stderr; with --out each result is appended to a JSON-lines file the moment it is
ready, and a rerun skips the submissions already there. The exit status is 0 whenever
results were produced, whatever the submissions did.

From Python (the nbgrader plugin does this):

    grade_notebook("residual-connections", path, seed=None) -> dict
    grade_many("residual-connections", paths, out=None, seed=None) -> list[dict]
    with Grader("residual-connections") as g: g.grade(path)      # many calls, one setup
"""
from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from . import course as course_mod
from .course import Course
from .report import Progress, table


def grade_notebook(assignment: str, path: str | Path, seed: int | None = None, *,
                   course: Course | None = None, timeout_s: float | None = None, fork: bool = False) -> dict:
    """Grade one notebook: {"assignment", "score", "max_score", "seed", "tests": [...]}.

    fork: see Grader (the command line sets it: its process holds only this one path).
    """
    from .score import Grader   # torch and the fork server only when grading
    with Grader(assignment, course, timeout_s=timeout_s, fork=fork) as grader:
        return grader.grade(path, seed)


def grade_many(assignment: str, paths: list[str | Path], out: str | Path | None = None,
               seed: int | None = None, *, workers: int | None = None, course: Course | None = None,
               timeout_s: float | None = None, progress: bool = False) -> list[dict]:
    """Grade notebooks in parallel; returns this call's results, each with a "submission" path.

    With `out`, every result is appended to that JSON-lines file (flushed and synced)
    as soon as it exists, and submissions the file already holds are skipped, graded
    with the file's seed, so an interrupted batch loses nothing and resumes.
    """
    from .score import Grader, new_seed   # torch and the fork server only when grading
    done = read_results(out) if out else []
    graded = {_key(r["submission"]) for r in done}
    todo = [str(p) for p in dict.fromkeys(map(str, paths)) if _key(p) not in graded]
    if seed is None:
        seed = done[0]["seed"] if done else new_seed()
    results: list[dict] = []
    if not todo:
        return results
    bar = Progress(len(todo)) if progress else None
    with Grader(assignment, course, timeout_s=timeout_s) as grader, \
            ThreadPoolExecutor(workers or grader.workers or os.cpu_count()) as pool, \
            _Appender(out) as sink:
        futures = {pool.submit(grader.grade, path, seed): path for path in todo}
        try:
            for future in as_completed(futures):
                result = {"submission": futures[future], **future.result()}
                sink.write(result)
                results.append(result)
                if bar:
                    bar.update(f"{result['score']}/{result['max_score']} {result['submission']}")
        except BaseException:      # Ctrl-C or a broken grader: stop the children, keep what is written
            pool.shutdown(wait=False, cancel_futures=True)
            grader.close()
            raise
    order = {path: i for i, path in enumerate(todo)}
    return sorted(results, key=lambda r: order[r["submission"]])


def read_results(path: str | Path) -> list[dict]:
    """The results a JSON-lines file holds (a torn last line, from a killed run, is ignored)."""
    path = Path(path)
    if not path.exists():
        return []
    results = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            result = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(result, dict) and "submission" in result:
            results.append(result)
    return results


class _Appender:
    """Appends JSON lines to a file, each one flushed to disk before the next; or nothing."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.file = None

    def __enter__(self) -> "_Appender":
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            torn = self.path.exists() and self.path.stat().st_size and not self.path.read_bytes().endswith(b"\n")
            self.file = self.path.open("a", encoding="utf-8")
            if torn:
                self.file.write("\n")
        return self

    def write(self, result: dict) -> None:
        if self.file:
            self.file.write(json.dumps(result) + "\n")
            self.file.flush()
            os.fsync(self.file.fileno())

    def __exit__(self, *exc) -> None:
        if self.file:
            self.file.close()


def notebooks(paths: list[Path]) -> list[Path]:
    """Files as given; folders replaced by the .ipynb files below them (checkpoints left out)."""
    out = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        else:
            out.append(path)
    return out


def _key(path: str | Path) -> str:
    return os.path.abspath(path)


def add_parser(commands) -> None:
    p = commands.add_parser("grade", help="grade submitted notebooks against the hidden suites",
                            description=__doc__.split("\n\n")[0])
    p.add_argument("assignment", help="an assignment named in course.toml")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="notebooks, or folders of notebooks")
    p.add_argument("--json", action="store_true", help="print results as JSON instead of tables")
    p.add_argument("--out", type=Path, help="append one JSON line per submission to this file (resumable)")
    p.add_argument("--seed", type=int, help="draw the hidden tests' inputs from this seed (to reproduce a grade)")
    p.add_argument("--workers", type=int, help="parallel graders (default: course.toml grading.workers)")
    p.add_argument("--timeout", type=float, help="seconds per hidden test (default: course.toml grading.timeout_s)")
    p.set_defaults(run=run)


def run(args) -> int:
    course = course_mod.load()
    course.assignment(args.assignment)          # an unknown name stops here, listing the valid ones
    paths = notebooks(args.paths)
    if not paths:
        print(f"error: no notebooks in {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 2
    if len(args.paths) == 1 and not args.paths[0].is_dir() and args.out is None:
        result = grade_notebook(args.assignment, paths[0], args.seed, course=course, timeout_s=args.timeout,
                                fork=True)
        print(json.dumps(result, indent=2) if args.json else table(result))
        return 0
    before = {_key(r["submission"]) for r in read_results(args.out)} if args.out else set()
    try:
        results = grade_many(args.assignment, paths, args.out, args.seed, workers=args.workers, course=course,
                             timeout_s=args.timeout, progress=True)
    except KeyboardInterrupt:
        if args.out:
            print(f"\ninterrupted: {len(read_results(args.out))} results are safe in {args.out}; "
                  "run the same command again to grade the rest", file=sys.stderr)
        return 130
    if args.out:
        for r in results:
            print(f"{r['score']:>4} / {r['max_score']:<4} {r['submission']}")
        skipped = sum(_key(p) in before for p in paths)
        skipped = f" ({skipped} graded before, skipped)" if skipped else ""
        print(f"graded {len(results)} submissions into {args.out}{skipped}")
    else:
        for r in results:
            print(json.dumps(r) if args.json else table(r) + "\n")
    return 0
