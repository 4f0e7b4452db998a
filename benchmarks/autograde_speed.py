"""`nbgrader autograde` through the hidden suites, against plain nbgrader, and a class in parallel.

    .venv/bin/python benchmarks/autograde_speed.py [--copies 4 10] [--repeat 3]

Prints, each time also as a ratio to a bare `import torch` measured in the same run (baseline.py),
  per submission  `nbgrader autograde` of the sample class with this course's config (the
                  hidden suites out of kernel, nothing run in a kernel) against plain nbgrader
                  (every notebook executed in its own kernel), and the ratio (target <= 1.5x)
  class           for the class x each --copies (each copy's code made distinct, so nothing is
                  reused; fresh results and autograded folders, the assignment registered):
                  `nbgrader autograde` (sequential, one student at a time), then
                  `python -m autograder autograde` with 1 worker and with one per core, taking
                  turns --repeat times; the medians, and the speed-ups of the last over both
                  (target >= 1.8x on 2 cores)

The hanging sample is left out (it costs the time limit by design, in both), and so is the
unreadable one (nbgrader cannot open it; `python -m autograder autograde` leaves it out of nbgrader).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from baseline import import_torch_s, ratio
from grade_speed import ASSIGNMENT, ENV, LEFT_OUT, SAMPLES, nbgrader as plain_nbgrader, run

NBGRADER_AUTOGRADE = ("-m", "nbgrader", "autograde", ASSIGNMENT, "--log-level=ERROR")   # this course's config


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


def registered(env: dict) -> dict:
    """The assignment in the area's gradebook, as at the start of a semester (not part of the timing)."""
    run(sys.executable, "-c", "import sys; from autograder import course; from autograder.nbgrading import classrun, run; "
        "classrun.register(course.load(), sys.argv[1], run.nbgrader_config().CourseDirectory.db_url)", ASSIGNMENT,
        env=env)
    return env


def class_seconds(notebooks: list[Path], copies: int, tmp: Path, *command: str) -> float:
    """Wall seconds of `command` over the class x copies in a fresh area (removed afterwards)."""
    area = tmp / "class"
    env = registered(instructor_area(area, notebooks, copies))
    try:
        return run(sys.executable, *command, env=env)
    finally:
        shutil.rmtree(area)


def class_figures(notebooks: list[Path], copies: int, repeat: int, tmp: Path, ref: float) -> dict:
    """The class x copies graded sequentially by nbgrader, then by the class command with 1 and all workers;
    the three take turns `repeat` times (this machine's speed drifts), and the medians are compared."""
    n, cores = len(notebooks) * copies, os.cpu_count()
    commands = {"nbgrader autograde": NBGRADER_AUTOGRADE,
                "1 worker": ("-m", "autograder", "autograde", ASSIGNMENT, "--workers", "1"),
                f"{cores} workers": ("-m", "autograder", "autograde", ASSIGNMENT, "--workers", str(cores))}
    runs: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, command in commands.items():
            runs[label].append(class_seconds(notebooks, copies, tmp, *command))
    sequential, one, many = (statistics.median(times) for times in runs.values())
    print(f"class of {n}, median of {repeat} (s): " + "; ".join(
        f"{label} {statistics.median(times):.1f} ({', '.join(f'{t:.1f}' for t in times)})"
        for label, times in runs.items()))
    print(f"  {cores} workers: {n / many * 60:.0f} submissions/minute, {many / n:.2f} s each = {ratio(many / n, ref)}; "
          f"speed-up {sequential / many:.2f}x over nbgrader autograde, {one / many:.2f}x over 1 worker "
          "(target >= 1.8x)", flush=True)
    return {"class": n, "workers": cores, "runs_s": runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[4, 10],
                        help="class sizes to time, in copies of the sample class")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each class command, taking turns")
    args = parser.parse_args()
    notebooks = sorted(p for p in SAMPLES.glob("*.ipynb") if p.name not in LEFT_OUT | {"invalid-json.ipynb"})
    print(f"sample class: {len(notebooks)} notebooks, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    ref = import_torch_s()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ours = class_seconds(notebooks, 1, tmp, *NBGRADER_AUTOGRADE) / len(notebooks)
        start = time.perf_counter()
        plain = plain_nbgrader(notebooks, tmp) / len(notebooks)
        print(f"per submission: ours {ours:.2f} s = {ratio(ours, ref)}, plain nbgrader {plain:.2f} s = "
              f"{ratio(plain, ref)}: ours takes {ours / plain:.2f}x (target <= 1.5x)  "
              f"[plain run {time.perf_counter() - start:.0f} s]", flush=True)
        classes = [class_figures(notebooks, copies, args.repeat, tmp, ref) for copies in args.copies]
    print(json.dumps({"import_torch_s": round(ref, 3), "ours_s_per_submission": round(ours, 3),
                      "plain_s_per_submission": round(plain, 3),
                      "classes": classes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
