"""What the box around a sandbox child costs: this tree against another (main), side by side.

    .venv/bin/python benchmarks/box_overhead.py --other TREE [--children 20] [--rounds 3] [--grades 3]

Prints, for each tree, rounds interleaved so that both see the same machine load:
  child   median ms to start one sandbox child, load a one-line cell, and end it (fork, box,
          first reply, reap; the cgroup removed and the scratch folder deleted)
  grade   median s of `python -m autograder grade residual-connections full-marks.ipynb --json`
          in a fresh process (Python start and torch import included)
and each figure's ratio, this tree / the other.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
NOTEBOOK = Path("submissions/residual-connections/full-marks.ipynb")


def children(n: int) -> list[float]:
    """ms per child, in this process (the tree is the first entry of sys.path)."""
    from autograder.core.sandbox import PROBE, Limits, Sandbox, Zygote
    zygote = Zygote([PROBE])
    times = []
    try:
        for _ in range(n):
            start = time.perf_counter()
            with Sandbox(zygote, [("a", "x = 1\n")], None, Limits(10, 4096)) as box:
                box.start()
            times.append((time.perf_counter() - start) * 1000)
    finally:
        zygote.close()
    return times


def measure_children(tree: Path, n: int) -> list[float]:
    code = (f"import sys, json; sys.path.insert(0, {str(tree)!r}); sys.path.insert(0, {str(HERE / 'benchmarks')!r}); "
            f"import box_overhead; print(json.dumps(box_overhead.children({n})))")
    out = subprocess.run([str(tree / ".venv/bin/python"), "-c", code], cwd=tree, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.splitlines()[-1])


def measure_grade(tree: Path) -> float:
    start = time.perf_counter()
    subprocess.run([str(tree / ".venv/bin/python"), "-m", "autograder", "grade", "residual-connections",
                    str(NOTEBOOK), "--json"], cwd=tree, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--other", type=Path, required=True, help="the tree to compare with (its own .venv)")
    p.add_argument("--children", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--grades", type=int, default=3)
    args = p.parse_args()
    trees = {"this": HERE, "other": args.other.resolve()}
    child = {name: [] for name in trees}
    grade = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            child[name] += measure_children(tree, args.children)
    for _ in range(args.grades):
        for name, tree in trees.items():
            grade[name].append(measure_grade(tree))
    for name, tree in trees.items():
        print(f"{name:<6} {str(tree):<28} child {statistics.median(child[name]):7.1f} ms   "
              f"grade {statistics.median(grade[name]):6.2f} s")
    print(f"ratio  this / other              child {statistics.median(child['this']) / statistics.median(child['other']):7.2f}      "
          f"grade {statistics.median(grade['this']) / statistics.median(grade['other']):6.2f}")


if __name__ == "__main__":
    main()
