"""Whether this machine has a GPU, and which parts' points leave the maximum without one (course.toml's
without_cuda = "skip"). nbgrader's export and feedback read the points through here: torch is imported only
when a GPU must be asked about, so that those commands, which never grade, start without it."""
from __future__ import annotations

from .. import suites
from ..course import Assignment
from ..results.result import Result


def cuda_present() -> bool:
    """Whether this machine has a CUDA GPU, asked through NVML where it can be: a process that
    initialised CUDA cannot be forked into a fork server whose children use the GPU."""
    import torch
    return torch.cuda.device_count() > 0


def parts_left_out(a: Assignment, kept: list[Result]) -> set[int]:
    """Parts of a whose points leave the maximum: every test of the part needs CUDA, course.toml says
    without_cuda = "skip", and the part's tests were not run, in any of `kept` (the class's results, graded
    wherever they were) or, with none kept yet, on this machine, where they will be graded. A part that
    one kept result ran stays in (a kept result is reused, not regraded, on any machine: docs/results.md)."""
    if a.timing is None or a.timing.without_cuda != "skip":
        return set()
    tests = suites.load(a.name).tests
    cuda_parts = {p for p in {t.part for t in tests} if all(t.needs_cuda for t in tests if t.part == p)}
    if not kept:
        return set() if cuda_present() else cuda_parts
    return {p for p in cuda_parts if not any(t.ran for r in kept for t in r.tests if t.part == p)}
