"""The reference every benchmark's figure is divided by, measured in the same run: a bare
`import torch` in a fresh process (Python's start included), the floor under anything that
tests or grades a notebook. A ratio to it holds across machines and loads where seconds do not.

    from baseline import import_torch_s, in_turns, ratio
    ref = import_torch_s()                              # median wall seconds of 5 fresh imports
    times, ref = in_turns(lambda: one_run(path), 5)     # or: 5 runs, each after a fresh import
    print(f"grade: {t:.2f} s, {ratio(t, ref)}")        # "grade: 3.10 s, 1.86x a bare import torch (1.67 s, this run)"
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def import_torch_s(repeat: int = 5) -> float:
    """Median wall seconds of `python -c "import torch"` in a fresh process, over `repeat` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ratio(seconds: float, reference: float) -> str:
    return f"{seconds / reference:.2f}x a bare import torch ({reference:.2f} s, this run)"


def in_turns(measure: Callable[[], float], repeat: int) -> tuple[list[float], float]:
    """(measure()'s seconds, the median of the imports'): `repeat` runs of measure, each right after a
    bare import, so that both see the same load on a busy machine."""
    times, refs = [], []
    for _ in range(repeat):
        refs.append(import_torch_s(1))
        times.append(measure())
    return times, statistics.median(refs)
