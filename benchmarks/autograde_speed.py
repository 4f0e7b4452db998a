"""`nbgrader autograde` through the hidden suites, against plain nbgrader, and a class in parallel.

    .venv/bin/python benchmarks/autograde_speed.py [--copies 2]

Prints
  per submission  `nbgrader autograde` of the sample class with this course's config (the
                  hidden suites out of kernel, nothing run in a kernel) against plain nbgrader
                  (every notebook executed in its own kernel), and the ratio (target <= 1.5x)
  class           `python -m autograder autograde` of the class x copies (each copy's code made
                  distinct, so nothing is reused) with 1 shard and with one per core, and the
                  speed-up (target >= 1.8x on 2 cores)

The hanging sample is left out (it costs the time limit by design, in both), and so is the
unreadable one (nbgrader cannot open it; `python -m autograder autograde` leaves it out of nbgrader).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from grade_speed import ASSIGNMENT, ENV, LEFT_OUT, SAMPLES, nbgrader as plain_nbgrader, run


def instructor_area(area: Path, notebooks: list[Path], copies: int = 1) -> dict:
    """submitted/sNNN/ASSIGNMENT/ for each notebook x copies; returns the environment that selects it."""
    for i in range(copies):
        for j, nb in enumerate(notebooks):
            folder = area / "submitted" / f"s{i:02d}{j:02d}" / ASSIGNMENT
            folder.mkdir(parents=True)
            text = nb.read_text(encoding="utf-8")
            if i:   # a distinct copy: a comment in the first solution cell changes the graded code
                data = json.loads(text)
                cell = next(c for c in data["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
                cell["source"] = ["# copy %d\n" % i, *cell["source"]] if isinstance(cell["source"], list) \
                    else f"# copy {i}\n{cell['source']}"
                text = json.dumps(data)
            (folder / f"{ASSIGNMENT}.ipynb").write_text(text, encoding="utf-8")
    return {**ENV, "COURSE_INSTRUCTOR_DIR": str(area)}


def ours_per_submission(notebooks: list[Path], tmp: Path) -> float:
    """Seconds of our `nbgrader autograde` (fresh results, gradebook already made) per notebook."""
    env = registered(instructor_area(tmp / "ours", notebooks))
    seconds = run(sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--log-level=ERROR", env=env)
    return seconds / len(notebooks)


def registered(env: dict) -> dict:
    """The assignment in the area's gradebook, as at the start of a semester (not part of the timing)."""
    run(sys.executable, "-c", "import sys; from autograder import autograde, canvas; "
        "autograde.register(sys.argv[1], canvas.nbgrader_config().CourseDirectory.db_url)", ASSIGNMENT, env=env)
    return env


def class_seconds(notebooks: list[Path], copies: int, workers: int, tmp: Path) -> tuple[int, float]:
    env = registered(instructor_area(tmp / f"class-{workers}", notebooks, copies))
    seconds = run(sys.executable, "-m", "autograder", "autograde", ASSIGNMENT, "--workers", str(workers), env=env)
    return len(notebooks) * copies, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=4, help="copies of the class for the class timing")
    args = parser.parse_args()
    notebooks = sorted(p for p in SAMPLES.glob("*.ipynb") if p.name not in LEFT_OUT | {"invalid-json.ipynb"})
    cores = os.cpu_count()
    print(f"sample class: {len(notebooks)} notebooks, {cores} cores, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ours = ours_per_submission(notebooks, tmp)
        start = time.perf_counter()
        plain = plain_nbgrader(notebooks, tmp) / len(notebooks)
        print(f"per submission: ours {ours:.2f} s, plain nbgrader {plain:.2f} s: ours takes {ours / plain:.2f}x "
              f"(target <= 1.5x)  [plain run {time.perf_counter() - start:.0f} s]")
        n, one = class_seconds(notebooks, args.copies, 1, tmp)
        _, many = class_seconds(notebooks, args.copies, cores, tmp)
        print(f"class of {n}: 1 worker {one:.1f} s, {cores} workers {many:.1f} s: speed-up {one / many:.2f}x "
              f"(target >= 1.8x); {n / many * 60:.0f} submissions/minute")
    return 0


if __name__ == "__main__":
    sys.exit(main())
