"""Grading speed on the sample class: this grader against plain `nbgrader autograde`, in one run.

    .venv/bin/python benchmarks/grade_speed.py [--repeat 2] [--copies 5] [--timeout 2] [--nbgrader-every 4]
                                               [--standalone-every 1]

Prints each time also as a ratio to a bare `import torch` measured in the same run (baseline.py):
  standalone  the median wall time of grading one notebook in a fresh process (Python start and
              torch import included), over the class x repeat: by grade_notebook() and by
              `python -m autograder grade A NOTEBOOK --json`, which also imports the other subcommands
              (target: at most 2x)
  batch       submissions per minute of one `python -m autograder grade A FOLDER --out FILE`
              over the class x copies, course.toml's grading.workers at once (0: one and a half per core), and
              how busy the machine's cores were meanwhile (target: at least 250)
  nbgrader    `nbgrader autograde` of every --nbgrader-every'th of the notebooks in a temporary course
              (its own kernel per notebook, check cells included), per notebook and per minute, and the
              ratios (a sample: each notebook's Run All trains Part 5's sweep)

The hanging sample is left out (it costs the time limit by design, in both graders).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import course
from autograder.nbgrading.run import tools_path
from baseline import import_torch_s, ratio

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "residual-connections"
SAMPLES = ROOT / "submissions" / ASSIGNMENT
LEFT_OUT = {"infinite-loop.ipynb"}
ENV = {**os.environ, "PATH": tools_path()}


def run(*args: str, env=ENV, cwd=ROOT) -> float:
    """Wall seconds of a command that must succeed."""
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return time.perf_counter() - start


# grading one notebook in a fresh process without the command line's other subcommands
GRADE_ONE = ("import json, sys; from autograder import course; from autograder.grading.batch import grade_notebook; "
             "print(json.dumps(grade_notebook(sys.argv[1], sys.argv[2], course.load(), timeout_s=float(sys.argv[3]), "
             "fork=True).to_json()))")


def standalone(notebooks: list[Path], repeat: int, timeout: str, command_line: bool) -> list[float]:
    """Wall seconds per notebook, each graded by a fresh process."""
    head = ["-m", "autograder", "grade"] if command_line else ["-c", GRADE_ONE]
    tail = ["--json", "--timeout", timeout] if command_line else [timeout]
    return [run(sys.executable, *head, ASSIGNMENT, str(nb), *tail) for _ in range(repeat) for nb in notebooks]


def cpu_busy_s() -> float:
    """The machine's CPU seconds spent busy so far, from /proc/stat (user, nice, system; 0 where it is absent)."""
    try:
        with open("/proc/stat") as f:
            return sum(map(int, f.readline().split()[1:4])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def batch(notebooks: list[Path], copies: int, timeout: str, tmp: Path) -> tuple[int, float, float]:
    """(submissions, seconds, the share of the machine's cores busy meanwhile)."""
    folder = tmp / "batch"
    for i in range(copies):
        for nb in notebooks:
            (folder / f"copy{i}").mkdir(parents=True, exist_ok=True)
            (folder / f"copy{i}" / nb.name).write_text(distinct(nb, i), encoding="utf-8")
    out = tmp / "results.jsonl"
    busy = cpu_busy_s()
    seconds = run(sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(folder), "--out", str(out),
                  "--timeout", timeout)
    results = [line for line in out.read_text().splitlines() if '"submission"' in line]
    assert len(results) == copies * len(notebooks), "the batch must write one result per submission"
    return len(results), seconds, (cpu_busy_s() - busy) / (seconds * (os.cpu_count() or 1))


def distinct(notebook: Path, copy: int) -> str:
    """The notebook with a comment naming the copy in each solution cell: the results store regrades
    nothing it has seen, so identical copies would be graded once."""
    text = notebook.read_text(encoding="utf-8", errors="replace")
    try:
        nb = json.loads(text)
    except json.JSONDecodeError:      # an unreadable sample: its bytes are its key
        return text + " " * copy
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        if isinstance(cell, dict) and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cell["source"] = source + f"\n# copy {copy}\n"
    return json.dumps(nb)


def nbgrader(notebooks: list[Path], tmp: Path) -> float:
    """Seconds for `nbgrader autograde` of every notebook (one student each) in a fresh course."""
    course = tmp / "nbgrader"
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for f in (ROOT / "solutions" / ASSIGNMENT).iterdir():
        if f.is_file():
            shutil.copy(f, source / f.name)
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{course}/gradebook.db'\n")
    run(sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--log-level=ERROR", cwd=course)
    for i, nb in enumerate(notebooks):
        folder = course / "submitted" / f"student{i:02d}" / ASSIGNMENT
        folder.mkdir(parents=True)
        shutil.copy(nb, folder / f"{ASSIGNMENT}.ipynb")
        shutil.copy(ROOT / "assignments" / ASSIGNMENT / "test_public.py", folder)
    env = {**ENV, "PYTHONPATH": str(ROOT / "assignments")}   # the check cells import nbtest
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--create", "--log-level=ERROR"],
                   cwd=course, env=env, capture_output=True)   # fails on the unreadable sample, goes on
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="standalone runs per notebook")
    parser.add_argument("--copies", type=int, default=5, help="copies of the class in the batch")
    parser.add_argument("--timeout", default="2", help="seconds per hidden test")
    parser.add_argument("--nbgrader-every", type=int, default=4, help="plain nbgrader grades every N'th notebook")
    parser.add_argument("--standalone-every", type=int, default=1, help="fresh processes grade every N'th notebook")
    args = parser.parse_args()
    notebooks = sorted(p for p in SAMPLES.glob("*.ipynb") if p.name not in LEFT_OUT)
    print(f"sample class: {len(notebooks)} notebooks ({', '.join(sorted(LEFT_OUT))} left out), "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    ref = import_torch_s()
    with tempfile.TemporaryDirectory() as tmp:
        medians = {}
        for label, command_line in (("grade_notebook()", False), ("python -m autograder grade", True)):
            times = standalone(notebooks[::args.standalone_every], args.repeat, args.timeout, command_line)
            medians[command_line] = statistics.median(times)
            print(f"standalone: median {medians[command_line]:.2f} s per submission with {label} "
                  f"(min {min(times):.2f}, max {max(times):.2f}, {len(times)} runs) = {ratio(medians[command_line], ref)}")
        median = medians[True]
        n, seconds, busy = batch(notebooks, args.copies, args.timeout, Path(tmp))
        ours = n / seconds * 60
        print(f"batch:      {n} submissions in {seconds:.1f} s = {ours:.0f} submissions/minute, "
              f"{seconds / n:.2f} s each = {ratio(seconds / n, ref)}; {course.load().grading.graders()} at once, "
              f"the cores {busy:.0%} busy")
        sample = notebooks[::args.nbgrader_every]
        nb_seconds = nbgrader(sample, Path(tmp))
        per = nb_seconds / len(sample)
        theirs = len(sample) / nb_seconds * 60
        print(f"nbgrader:   {len(sample)} submissions in {nb_seconds:.1f} s = {per:.2f} s per submission "
              f"= {ratio(per, ref)}, {theirs:.0f} submissions/minute")
        print(f"ratio:      nbgrader autograde takes {per / median:.1f}x the standalone command's time per "
              f"submission; batch grades {ours / theirs:.1f}x as many submissions per minute")
    print(json.dumps({"import_torch_s": round(ref, 3), "standalone_median_s": round(medians[False], 3),
                      "command_line_median_s": round(median, 3), "command_line_ratio": round(median / ref, 2),
                      "batch_per_minute": round(ours, 1), "batch_cores_busy": round(busy, 2),
                      "nbgrader_s_per_submission": round(per, 3), "nbgrader_per_minute": round(theirs, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
