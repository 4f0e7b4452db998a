"""fused-add-norm's timing test end to end without a GPU, and the one command that runs it on one.

On the CPU's clock (Grader(time_on_cpu=True)) the timing test runs the kernel in Triton's
interpreter against eager PyTorch on CPU tensors, at the suite's CPU size and threshold
(suites/fused_add_norm/part2.py: CPU): the probe's "time" op, the fresh inputs of each timed call,
the checks of their results, the medians, the copy-bandwidth fallback and the report all run.
benchmarks/timing_check.py --cpu is what benchmarks/gpu_check.sh runs on CUDA without --cpu.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

from autograder import course, suites
from autograder.course import ROOT
from autograder.grading.grader import Grader
from autograder.suites.fused_add_norm import part2

ASSIGNMENT = "fused-add-norm"
SAMPLES = ROOT / "submissions" / ASSIGNMENT
TIMING = next(t.name for t in suites.load(ASSIGNMENT).tests if t.needs_cuda)
NO_CUDA = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
NUMBER = r"[0-9.]+(?:e[-+][0-9]+)?"
RATE = rf"(?P<{{0}}_ms>{NUMBER}) ms, (?P<{{0}}_gbps>{NUMBER}) GB/s = (?P<{{0}}_share>{NUMBER})% of peak"
# the report line, field by field, as the CUDA run writes it too (one f-string in the suite)
REPORT = re.compile(rf"(?P<rows>\d+) x (?P<width>\d+) (?P<dtype>\w+) on (?P<device>.+?) \(peak (?P<peak>{NUMBER}) "
                    rf"GB/s, (?P<source>data sheet|a measured copy on the device)\): yours {RATE.format('yours')}; "
                    rf"eager {RATE.format('eager')}; (?P<speedup>{NUMBER})x eager \(needs (?P<needs>{NUMBER})x\)")


@pytest.fixture(scope="module")
def timing_check(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """benchmarks/timing_check.py --cpu: its run, and each sample's timing entry from OUT/timing.jsonl."""
    out = tmp_path_factory.mktemp("timing")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "timing_check.py"), "--cpu", "--out", str(out)],
                          cwd=ROOT, env=NO_CUDA, capture_output=True, text=True, timeout=600)
    lines = (out / "timing.jsonl").read_text().splitlines() if (out / "timing.jsonl").exists() else []
    names = ["full-marks", "one-program-for-all-rows", "cached-outputs"]
    return proc, {name: {t["name"]: t for t in json.loads(line)["tests"]} for name, line in zip(names, lines)}


def test_each_sample_meets_its_declaration_on_the_cpu_clock(timing_check):
    proc, results = timing_check
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "timing test on the CPU clock (--cpu)" in proc.stdout
    assert proc.stdout.count("as declared") == 3 and "NOT AS DECLARED" not in proc.stdout, proc.stdout
    assert len(results) == 3 and all(tests[TIMING]["kind"] != "not_run" for tests in results.values())


def test_the_reference_passes_the_cpu_threshold_and_reports_every_field(timing_check):
    proc, results = timing_check
    entry = results["full-marks"][TIMING]
    assert (entry["score"], entry["max_score"], entry["kind"]) == (10, 10, "passed"), entry
    passed, report = entry["output"].split("\n")
    assert passed == "passed" and report in proc.stdout
    m = REPORT.fullmatch(report)
    assert m, report
    cpu = part2.CPU
    assert (int(m["rows"]), int(m["width"]), m["dtype"], float(m["needs"])) == (cpu.rows, cpu.width, cpu.dtype,
                                                                               cpu.min_speedup)
    assert m["device"].endswith(" CPU") and m["source"] == "a measured copy on the device"
    yours, eager, peak = float(m["yours_ms"]), float(m["eager_ms"]), float(m["peak"]) * 1e9
    assert float(m["speedup"]) >= cpu.min_speedup
    # the figures agree with each other to their printed digits (ms to 3 decimals, the rest to 3 or 4 digits)
    assert float(m["speedup"]) == pytest.approx(eager / yours, rel=0.02, abs=2e-3 / yours)
    moved = 4 * cpu.rows * cpu.width * 2    # fp16: read x and fx, write h and y
    for who, ms in (("yours", yours), ("eager", eager)):
        gbps = float(m[f"{who}_gbps"])
        assert gbps == pytest.approx(moved / ms / 1e6, rel=0.02, abs=moved / 1e6 * 5e-4 / ms ** 2)
        assert float(m[f"{who}_share"]) == pytest.approx(100 * gbps * 1e9 / peak, rel=0.01)


def test_a_cache_of_outputs_fails_on_its_stale_results_and_only_there(timing_check):
    _, results = timing_check
    tests = results["cached-outputs"]
    entry = tests[TIMING]
    assert (entry["score"], entry["kind"]) == (0, "failed"), entry
    assert "timed call 1 of" in entry["output"] and part2.STALE in entry["output"]
    assert "too slow" not in entry["output"]
    assert all(t["score"] == t["max_score"] for name, t in tests.items() if name != TIMING)


def test_a_kernel_slower_than_the_threshold_fails_with_the_same_report(monkeypatch):
    """The threshold's other side: the reference against a CPU threshold it cannot reach."""
    monkeypatch.setattr(part2, "CPU", dataclasses.replace(part2.CPU, min_speedup=1e6))
    with Grader(ASSIGNMENT, course.load(), cuda=False, time_on_cpu=True) as grader:
        grader.graded = [t for t in grader.graded if t.needs_cuda]
        entry = next(t for t in grader.grade(SAMPLES / "full-marks.ipynb", 3).to_store()["tests"] if t["name"] == TIMING)
    assert (entry["score"], entry["kind"]) == (0, "failed"), entry
    assert entry["output"].startswith("too slow: ") and "(needs 1e+06x)" in entry["output"]
    assert REPORT.search(entry["output"]), entry["output"]


def test_gpu_check_without_cuda_says_so_and_exits_0(tmp_path):
    out = tmp_path / "gpu-check"
    proc = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), str(out)],
                          env={**NO_CUDA, "PYTHON": sys.executable}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "needs a CUDA GPU and this machine has none: nothing was run" in proc.stdout
    assert not out.exists()


def test_gpu_check_runs_on_cuda_the_commands_the_tests_run_without_it():
    """Each step of gpu_check.sh is a command a test runs here: timing_check.py (above, with --cpu),
    the public tests and benchmarks/fused_add_norm.py (tests/test_fused_add_norm.py)."""
    steps = re.findall(r"^step (\w+) (\d+) (.+)$", (ROOT / "benchmarks" / "gpu_check.sh").read_text(), re.M)
    assert [(name, command) for name, _, command in steps] == [
        ("timing", '"$PYTHON" benchmarks/timing_check.py --out "$OUT"'),
        ("public", '"$PYTHON" -m pytest -q -s -p no:cacheprovider solutions/fused-add-norm/test_public.py'),
        ("bench", '"$PYTHON" benchmarks/fused_add_norm.py --out "$OUT"')]
    assert sum(int(limit) for _, limit, _ in steps) <= 8 * 60
