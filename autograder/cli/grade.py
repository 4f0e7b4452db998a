"""python -m autograder grade: grade submitted notebooks against the hidden suites.

    python -m autograder grade residual-connections alice.ipynb [--json] [--seed N]
    python -m autograder grade residual-connections downloads/ --out results.jsonl

One notebook prints its result (a table, or with --json the object docs/results.md
fixes). Several notebooks, or folders of them, are graded in parallel with a progress
bar on stderr; with --out each result is kept in a results store (a JSON-lines file)
the moment it is ready, and a rerun skips what the store holds. The exit status is 0
whenever results were produced, whatever the submissions did.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core import seeds
from ..grading.batch import NotAllGraded, grade_many, grade_notebook, notebooks
from ..results.render import review_summary, score_line, table
from ..results.store import Store, StoreError
from ..results.terminal import shown


def add_parser(commands) -> None:
    p = commands.add_parser("grade", help="grade submitted notebooks against the hidden suites",
                            description=__doc__.split("\n\n")[0])
    p.add_argument("assignment", help="an assignment named in course.toml")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="notebooks, or folders of notebooks")
    p.add_argument("--json", action="store_true", help="print results as JSON instead of tables")
    p.add_argument("--out", type=Path, help="keep one JSON line per submission in this file (resumable)")
    p.add_argument("--seed", type=int, help="draw the hidden tests' inputs from this seed, for every notebook "
                                            "(default: a seed derived from each notebook's code and the course "
                                            "secret, so a grade reproduces without it)")
    p.add_argument("--workers", type=int, help="parallel graders (default: course.toml grading.workers)")
    p.add_argument("--timeout", type=float, help="seconds per hidden test (default: course.toml grading.timeout_s)")
    p.set_defaults(run=run)


def run(args) -> int:
    course = args.course
    course.assignment(args.assignment)          # an unknown name stops here, listing the valid ones
    paths = notebooks(args.paths)
    if not paths:
        print(f"error: no notebooks in {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 2
    if len(args.paths) == 1 and not args.paths[0].is_dir() and args.out is None:
        result = grade_notebook(args.assignment, paths[0], course, args.seed, timeout_s=args.timeout, fork=True)
        print(shown(json.dumps(result.to_json(), indent=2) if args.json else table(result)))
        return 0
    try:
        store = Store(args.out, args.assignment, args.seed, seeds.secret_id(seeds.read_secret())) if args.out else None
    except (StoreError, seeds.SecretError) as e:
        print(shown(f"error: {e}"), file=sys.stderr)
        return 2
    if store and args.seed is not None and store.seed != args.seed:
        had = "seeds derived from each notebook's code" if store.seed is None else f"seed {store.seed}"
        print(f"error: {args.out} was graded with {had}; "
              f"{'leave out --seed' if store.seed is None else 'give that seed'}, or choose another --out",
              file=sys.stderr)
        return 2
    before = sum(store.has(p) for p in paths) if store else 0
    failed = None
    try:
        results = grade_many(args.assignment, paths, course, store, args.seed, workers=args.workers,
                             timeout_s=args.timeout, progress=True)
    except NotAllGraded as e:          # the rest were graded (and stored); these are said below
        results, failed = e.results, e
    except KeyboardInterrupt:
        if store:
            print(f"\ninterrupted: the results so far are safe in {args.out}; run the same command again "
                  "to grade the rest", file=sys.stderr)
        return 130
    if store:
        for r in results:
            print(score_line(r))
        skipped = f" ({before} graded before, skipped)" if before else ""
        print(shown(f"graded {len(results)} submissions into {args.out}{skipped}"))
        print(shown(review_summary(results, args.assignment, args.out)))
    else:
        for r in results:
            print(shown(json.dumps(r.to_json()) if args.json else table(r) + "\n"))
    if failed:
        print(shown(f"error: {failed}"), file=sys.stderr)
        return 1
    return 0
