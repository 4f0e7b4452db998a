"""Written answers: rendering them (what every Gradescope run and report view does) and one PDF per submission.

    .venv/bin/python benchmarks/answers_speed.py [--repeat 5]

On the samples with written answers (WRITTEN in submissions/residual_connections.py), prints the
median of --repeat runs, in wall-clock and CPU time: taking and rendering one notebook's answers,
and writing its PDF (fpdf2, with its 8 DejaVu fonts loaded each time). On a loaded machine the CPU
figure is the steadier one.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "submissions")]
    from autograder import course
    from autograder.course import SOLUTIONS
    from autograder.lms.gradescope.pdf import write_pdf
    from autograder.nbgrading.answers import Questions
    import residual_connections as samples
    c = course.load()
    questions = Questions(c.assignment("residual-connections").notebook_path(SOLUTIONS), c.grading.max_cell_kb)
    notebooks = [ROOT / "submissions" / "residual-connections" / f"{name}.ipynb" for name in samples.WRITTEN]
    times = {"answers taken and rendered": [], "PDF written": []}   # (wall, cpu) per run
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for nb in notebooks:
                wall, cpu = time.perf_counter(), time.process_time()
                answers = questions.answers(nb)
                [a.html() for a in answers]
                wall2, cpu2 = time.perf_counter(), time.process_time()
                write_pdf(answers, Path(tmp) / f"{nb.stem}.pdf", nb.stem)
                times["answers taken and rendered"].append((wall2 - wall, cpu2 - cpu))
                times["PDF written"].append((time.perf_counter() - wall2, time.process_time() - cpu2))
    print(f"{len(notebooks)} notebooks x {args.repeat}, {len(questions.questions)} written questions each (median)")
    for what, runs in times.items():
        wall, cpu = (statistics.median(r[i] for r in runs) * 1000 for i in (0, 1))
        print(f"{what + ':':28} {wall:8.1f} ms wall, {cpu:8.1f} ms CPU per notebook")
    return 0


if __name__ == "__main__":
    sys.exit(main())
