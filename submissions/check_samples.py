"""Grade a sample class at several seeds and compare each test's score with its expected.json.

    python submissions/check_samples.py residual-connections [--seeds 1 2 3] [--only part5- style-]

`make test` grades the samples at one seed per run (tests/helpers.py: SampleClass draws it); a test
whose margin depends on its inputs (Part 5's training tests) must give every sample its expected score
at any seed. This grades each sample whose name starts with one of --only (all by default) at each seed,
prints every test whose score differs, with its output, and exits 1 if any did. Tests are matched by id
(their function's name), so a reworded sentence matches what expected.json holds. Slow by design
(a class per seed, on one core): run it after changing a hidden test's sizes, steps or bounds.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "submissions")]

from samplekit import differences  # noqa: E402  (after the path is set)

from autograder import course  # noqa: E402
from autograder.grading.grader import Grader  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--only", nargs="+", default=[""], help="grade only the samples whose name starts so")
    args = parser.parse_args()
    folder = ROOT / "submissions" / args.assignment
    expected = {name: sample for name, sample in json.loads((folder / "expected.json").read_text())["samples"].items()
                if name.startswith(tuple(args.only))}
    differ = 0
    with Grader(args.assignment, course.load()) as grader:
        for seed in args.seeds:
            start = time.perf_counter()
            for name, sample in expected.items():
                for line in differences(grader.grade(folder / name, seed), sample["tests"]):
                    differ += 1
                    print(f"seed {seed} {name}: {line}")
            print(f"seed {seed}: {len(expected)} samples graded in {time.perf_counter() - start:.0f} s", flush=True)
    print(f"{differ} test scores differ from expected.json")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
