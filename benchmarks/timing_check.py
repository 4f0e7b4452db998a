"""fused-add-norm's timing test end to end: the reference and two samples that must lose it.

    .venv/bin/python benchmarks/timing_check.py --out gpu-check     # on CUDA: the grading path
    .venv/bin/python benchmarks/timing_check.py --cpu --out out      # without: the CPU's clock

Grades full-marks, one-program-for-all-rows and cached-outputs (submissions/fused-add-norm/)
with the whole hidden suite: on CUDA as a grader there does (sandbox children on the GPU, in
their box), or with --cpu through Grader(time_on_cpu=True), where the timing test runs the
kernel in Triton's interpreter against eager PyTorch on the CPU's clock, at the suite's CPU
size and threshold (suites/fused_add_norm/part2.py: CPU). Prints each timing entry (size, device,
peak bandwidth and its source, times, GB/s, speed-up against the threshold) and the seconds
each notebook took, writes the results to OUT/timing.jsonl, and exits 1 unless each sample
lost exactly what it is declared to: the tests expected.json says it fails, and the timing
test as TIMING says. benchmarks/gpu_check.sh runs it on CUDA; tests/test_fused_timing.py
runs it with --cpu. Without CUDA and without --cpu it says so and exits 0.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from autograder import course, suites
from autograder.grading.cuda import cuda_present
from autograder.grading.grader import Grader

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "fused-add-norm"
SAMPLES = ROOT / "submissions" / ASSIGNMENT
TIMED = {t.id for t in suites.load(ASSIGNMENT).tests if t.needs_cuda}
# sample -> words its timing entry must begin with or contain: (on CUDA, on the CPU's clock)
TIMING = {
    "full-marks.ipynb": ("passed", "passed"),
    # Triton's interpreter runs a kernel's programs one after another: one program is no slower there
    "one-program-for-all-rows.ipynb": ("too slow", "passed"),
    "cached-outputs.ipynb": ("not the result of this call's inputs",) * 2,
}


def lost(result: dict, sample: str, on_cpu: bool) -> list[str]:
    """What differs from the declaration: each test scored otherwise than expected.json (or, for
    the timing test, TIMING) says; tests are matched by id (the results store's tests[].id)."""
    expected = json.loads((SAMPLES / "expected.json").read_text())["samples"][sample]["tests"]
    words = TIMING[sample][on_cpu]
    problems = []
    for t in result["tests"]:
        if t["kind"] == "not_run":
            problems.append(f"{t['name']}: not run")
        elif t["id"] in TIMED:
            if (words == "passed") != (t["score"] == t["max_score"]) or words not in t["output"]:
                problems.append(f"{t['name']}: expected {words!r}, got: {t['output']}")
        elif t["score"] != expected[t["id"]]:
            problems.append(f"{t['name']}: {t['score']} of {t['max_score']}, expected {expected[t['id']]}: "
                            f"{t['output']}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu-check"), help="folder for timing.jsonl")
    parser.add_argument("--cpu", action="store_true", help="without CUDA: the timing test on the CPU's clock")
    parser.add_argument("--seed", type=int, default=None, help="the grading seed (default: drawn, and printed)")
    args = parser.parse_args(argv)
    cuda = cuda_present()
    if not cuda and not args.cpu:
        print("benchmarks/timing_check.py needs a CUDA GPU to time on one; --cpu runs the timing test on the "
              "CPU's clock (Triton's interpreter), as the tests do.")
        return 0
    seed = random.randrange(2 ** 31) if args.seed is None else args.seed
    on_cpu = not cuda
    print(f"{ASSIGNMENT}: timing test on {'the CPU clock (--cpu)' if on_cpu else 'CUDA'}, seed {seed}")
    args.out.mkdir(parents=True, exist_ok=True)
    failures = 0
    with Grader(ASSIGNMENT, course.load(), cuda=cuda, time_on_cpu=on_cpu) as grader, \
            open(args.out / "timing.jsonl", "w") as store:
        for sample in TIMING:
            start = time.monotonic()
            result = grader.grade(SAMPLES / sample, seed).to_store()
            seconds = time.monotonic() - start
            store.write(json.dumps(result) + "\n")
            entry = next(t for t in result["tests"] if t["id"] in TIMED)
            problems = lost(result, sample, on_cpu)
            failures += bool(problems)
            print(f"\n{sample} ({seconds:.1f} s): {result['score']} / {result['max_score']}; timing test "
                  f"{entry['score']} / {entry['max_score']}, {'as declared' if not problems else 'NOT AS DECLARED'}")
            print("  " + entry["output"].replace("\n", "\n  "))
            for problem in problems:
                print(f"  ! {problem}")
    print(f"\nwrote {args.out / 'timing.jsonl'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
