"""The class report's speed on a class of N distinct notebooks made from the sample class.

    .venv/bin/python benchmarks/report_speed.py [--students 200] [--results STORE] [--repeat 3] [--copies]

Grades the sample class into a results store first (or reads --results, a store of it), then
writes the report for N students --repeat times and prints the median of: the summary and
charts, the similarity check, and the whole report. Student i hands in sample i % S edited
with copier's edits (tests/copier_edits.py: a combination and a seed of its own), so no two
notebooks are the same and each is normalised and fingerprinted (identical code is done once);
each keeps its sample's result. --copies hands in the samples as they are (identical copies).
Run it with the report's share of the machine, e.g. `taskset -c 0,1` for 2 cores.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import copier_edits  # noqa: E402
from autograder import course  # noqa: E402
from autograder.core.extract import NotebookError, Template  # noqa: E402
from autograder.grading.batch import grade_many  # noqa: E402
from autograder.report.build import write_report  # noqa: E402
from autograder.report.classlist import Student, from_store  # noqa: E402
from autograder.report.code import solution_code, solution_ids  # noqa: E402
from autograder.results.store import Store  # noqa: E402

ASSIGNMENT = "residual-connections"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=200)
    p.add_argument("--results", type=Path, help="a results store of the sample class (default: grade it now)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--copies", action="store_true", help="the samples as they are, not edited")
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
        if not args.copies:
            ids = solution_ids(Template(c.assignment(ASSIGNMENT).notebook_path(course.SOLUTIONS)))
            students = [edited(st, i, ids, Path(tmp)) for i, st in enumerate(students)]
            codes = [solution_code(st.notebook, ids) for st in students if st.notebook is not None]
            readable = [code for code in codes if code is not None]
            print(f"{len(set(readable))} distinct solution codes among {len(readable)} readable notebooks "
                  f"({len(students) - len(readable)} unreadable)", flush=True)
        runs = [write_report(c, ASSIGNMENT, students, Path(tmp) / "out") for _ in range(args.repeat)]
    for part in ("summary", "similarity", "total"):
        print(f"{part:<11} {statistics.median(r[part] for r in runs):6.2f} s  (runs: "
              + ", ".join(f"{r[part]:.2f}" for r in runs) + ")")
    kind = "copies of the samples" if args.copies else "distinct notebooks"
    print(f"{args.students} students ({kind}); target: similarity under 60 s on 2 cores")
    return 0


def edited(st: Student, i: int, ids: list[str], folder: Path) -> Student:
    """st handing in its notebook edited with the i-th combination of copier's edits (seed i)."""
    if st.notebook is None:
        return st
    try:
        cells = copier_edits.solution_cells(st.notebook, ids)
    except (NotebookError, OSError):
        return st                                   # an unreadable sample stays as it is
    names = [name for k, name in enumerate(copier_edits.ORDER) if (i + 1) >> k & 1]
    out = folder / f"{st.name}.ipynb"
    copier_edits.write_notebook(st.notebook, ids, copier_edits.combined(names, cells, random.Random(i)), out)
    return replace(st, notebook=out)


if __name__ == "__main__":
    sys.exit(main())
