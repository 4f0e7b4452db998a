"""Wall time of a student's whole public test run, `pytest` in the assignment folder.

Runs the public tests against the reference solution (the source notebook, so every test
executes to the end) and prints the median of --repeat runs. Target: under 5 s.

    .venv/bin/python benchmarks/public_tests.py [--repeat 5]
"""
import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one_run(folder: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=folder,
                   check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--assignment", default="residual-connections")
    args = parser.parse_args()
    folder = ROOT / "solutions" / args.assignment
    times = [one_run(folder) for _ in range(args.repeat)]
    print(f"public tests, {args.assignment}: median {statistics.median(times):.2f} s over {args.repeat} runs "
          f"(min {min(times):.2f}, max {max(times):.2f}); target < 5 s")


if __name__ == "__main__":
    main()
