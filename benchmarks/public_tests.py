"""A student's two waits, for each assignment: the whole public test run (`pytest` in the assignment
folder) and Run All of the notebook in a fresh kernel.

Both run on the reference solution (the source notebook, so every test and cell executes to the
end) in a copy of the student release (what `make release` writes to dist/student/) with that
notebook in place, as a student who solved everything runs them. Prints the
median of --repeat runs of each, and its ratio to a bare `import torch` measured in the same run,
taking turns with it (baseline.py). Targets: public tests at most 1.5x, Run All
under 15 s on 2 cores.

    .venv/bin/python benchmarks/public_tests.py [--repeat 5] [--assignment NAME]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograder import course
from autograder.course import SOLUTIONS
from autograder.nbgrading.release import build_student
from baseline import in_turns, ratio


def public_tests(notebook: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=notebook.parent,
                   check=True, capture_output=True)
    return time.perf_counter() - start


def solved_release(notebook: Path, into: Path) -> Path:
    """The student release under `into/release`, this notebook in its assignment's folder."""
    student = build_student(into / "release")
    return Path(shutil.copy(notebook, student / notebook.parent.name))


def run_all(notebook: Path) -> float:
    nb = nbformat.read(notebook, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--assignment", action="append", help="default: every assignment of course.toml")
    args = parser.parse_args()
    c = course.load()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    for name in args.assignment or list(c.assignments):
        notebook = c.assignment(name).notebook_path(SOLUTIONS)
        with tempfile.TemporaryDirectory() as scratch:
            solved = solved_release(notebook, Path(scratch))
            for label, measure, target in (("public tests", public_tests, "target <= 1.5x"),
                                           ("Run All", run_all, "target < 15 s")):
                times, ref = in_turns(lambda: measure(solved), args.repeat)
                median = statistics.median(times)
                print(f"{label}, {name}: median {median:.2f} s over {args.repeat} runs (min {min(times):.2f}, "
                      f"max {max(times):.2f}) = {ratio(median, ref)}; {target}", flush=True)


if __name__ == "__main__":
    main()
