"""The class report's speed on a class of N students made of copies of the sample class.

    .venv/bin/python benchmarks/report_speed.py [--students 200] [--results STORE] [--repeat 3]

Grades the sample class into a results store first (or reads --results, a store of it), then
writes the report for N students (sample i % 26 under the name sNNN-SAMPLE) --repeat times and
prints the median of: the summary and charts, the similarity check, and the whole report.
Copies share their code, and identical code is lexed once: a class of N distinct notebooks
spends ~50 ms more per notebook in copydetect's Pygments filter.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import course  # noqa: E402
from autograder.grading.batch import grade_many  # noqa: E402
from autograder.report.build import write_report  # noqa: E402
from autograder.report.classlist import from_store  # noqa: E402
from autograder.results.store import Store  # noqa: E402

ASSIGNMENT = "residual-connections"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=200)
    p.add_argument("--results", type=Path, help="a results store of the sample class (default: grade it now)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    c = course.load()
    with tempfile.TemporaryDirectory() as tmp:
        store_path = args.results or Path(tmp) / "results.jsonl"
        if args.results is None:
            samples = sorted((ROOT / "submissions" / ASSIGNMENT).glob("*.ipynb"))
            print(f"grading the sample class ({len(samples)} notebooks) ...", flush=True)
            grade_many(ASSIGNMENT, samples, c, store=Store(store_path, ASSIGNMENT))
        sample = from_store(Store(store_path, ASSIGNMENT))
        students = [replace(sample[i % len(sample)], name=f"s{i:03d}-{sample[i % len(sample)].name}")
                    for i in range(args.students)]
        runs = [write_report(c, ASSIGNMENT, students, Path(tmp) / "out") for _ in range(args.repeat)]
    for part in ("summary", "similarity", "total"):
        print(f"{part:<11} {statistics.median(r[part] for r in runs):6.2f} s  (runs: "
              + ", ".join(f"{r[part]:.2f}" for r in runs) + ")")
    print(f"{args.students} students; target: total under 10 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
