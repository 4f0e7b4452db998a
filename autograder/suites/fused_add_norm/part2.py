"""Part 2 of fused-add-norm's hidden tests: the kernel timed against eager PyTorch (10 points)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...kit import Trial, describe
from ...kit.bandwidth import copy_rate, data_sheet_peak
from .part1 import fused
from .suite import BF16_STEP, DEFAULT_EPS, FN, TOLERANCE, check_values, inputs, label, test


def spec(*items) -> dict:
    return {"spec": list(items)}


@dataclass(frozen=True)
class Clocked:
    """What the timing test times: rows x width of dtype, against eager PyTorch, needing min_speedup; a copy
    of `copied` bytes measures the bandwidth where kit.bandwidth has no data-sheet figure; `reps` rounds
    of `inner` calls (fewer past budget_ms); `checked` rows of every timed call's result are checked."""
    rows: int
    width: int
    dtype: str
    min_speedup: float
    copied: int
    reps: int = 20
    inner: int = 5
    budget_ms: float = 4000
    checked: int = 8


# Which size and threshold apply where. On CUDA (grading): course.toml's [timing] rows, width, dtype and
# min_speedup. On CPU, only with Grader(time_on_cpu=True) (tests/ and benchmarks/timing_check.py --cpu;
# never a grade: a grader without CUDA skips this test, course.toml's without_cuda): Triton's interpreter
# runs the kernel's programs one after another in Python, 2000 to 5000 times slower than eager PyTorch at
# this size (2e-4x to 5e-4x measured on two shared cores), so CPU's threshold, 1e-5x, proves the machinery
# and the report, not the speed.
CPU = Clocked(rows=8, width=256, dtype="float16", min_speedup=1e-5, copied=1 << 20, reps=5, inner=2,
              budget_ms=2000, checked=4)
STALE = ("not the result of this call's inputs: every timed call gets inputs drawn afresh, in place, in the same "
         "tensors, so a wrapper that returns what it computed before (a cache keyed on the tensors) is wrong "
         "here. Compute h and y on every call.")


def clocked(t: Trial) -> Clocked:
    if t.cuda:
        return Clocked(t.timing.rows, t.timing.width, t.timing.dtype, t.timing.min_speedup, copied=1 << 29)
    return CPU


def check_timed(t: Trial, checked, weight, bias, dtype, what: str) -> None:
    """The rows the probe reported of each timed call: h exactly x + fx (a bf16 step apart at most, as in
    check_values), y LayerNorm(h) within the dtype's tolerance."""
    if not isinstance(checked, list) or not checked:
        t.fail("the results of the timed calls could not be read", misconception=None)
    rtol, atol = TOLERANCE[dtype]
    for i, call in enumerate(checked, 1):
        call_what = f"{what}, timed call {i} of {len(checked)}"
        x, fx = (t.tensor(a, f"{call_what}, input") for a in call["args"])
        value = call["result"]
        if value.get("kind") not in ("tuple", "list") or value.get("length") != 2:
            t.fail(f"{call_what} returned {describe(value)}; it must return the tuple (h, y)")
        h, y = (t.tensor(item, f"{call_what}, {name},") for name, item in zip("hy", value["items"]))
        t.check(h, x + fx, f"{call_what}, h", STALE, rtol=BF16_STEP if dtype == torch.bfloat16 else 0, atol=0)
        want = F.layer_norm(x.double() + fx.double(), x.shape[-1:], weight.double(), bias.double(), DEFAULT_EPS)
        t.check(y, want, f"{call_what}, y", STALE, rtol=rtol, atol=atol)


def milliseconds(t: Trial, reply: dict, key: str) -> float:
    values = reply.get("ms", {}).get(key) if isinstance(reply.get("ms"), dict) else None
    if not isinstance(values, list) or not values or not all(type(v) is float and v > 0 for v in values):
        t.fail(f"the timing of {key} could not be read ({str(values)[:100]})")
    return statistics.median(values)


@test(2, 10, "timing on CUDA: faster than eager PyTorch (x + fx, then F.layer_norm)", needs_cuda=True)
def timing(t: Trial):
    c = clocked(t)
    dtype = getattr(torch, c.dtype)
    x, fx, weight, bias = inputs(t, min(c.rows, 64), c.width, dtype=dtype)
    obs = check_values(t, x, fx, weight, bias, why=f"timing is graded only for a correct kernel: {c.dtype} rows of "
                       f"width {c.width} must give LayerNorm(x + fx) (accumulate in fp32)")
    # the timed calls are not traced (the tracer's modes would cost what is timed): this traced call is judged as
    # one_launch judges part 1's, so that what is timed is a wrapper that launched its kernel alone
    why = fused(label(x), obs.trace)
    if why:
        t.fail(f"timing is graded only for a fused kernel: {why}")
    seed = t.rng.getrandbits(31)
    big = [spec("randn", [c.rows, c.width], c.dtype, seed + i, t.device) for i in (0, 1)]
    rows = sorted(t.rng.sample(range(c.rows), c.checked))
    obs = t.time(FN, *big, weight, bias, against={"eager": spec("eager"), "copy": spec("copy", c.copied, t.device)},
                 reps=c.reps, inner=c.inner, budget_ms=c.budget_ms, fresh=[0, 1], rows=rows)
    check_timed(t, obs.reply.get("checked"), weight, bias, dtype,
                f"{FN} on {c.dtype} x of shape ({c.rows}, {c.width}), rows {rows}")
    yours, eager, copy = (milliseconds(t, obs.reply, key) for key in ("fn", "eager", "copy"))
    device = str(obs.reply.get("device", "?"))
    peak, source = data_sheet_peak(device), "data sheet"
    if not peak:
        peak, source = copy_rate(c.copied, copy), "a measured copy on the device"
    moved = 4 * c.rows * c.width * torch.empty(0, dtype=dtype).element_size()   # read x and fx, write h and y

    def rate(ms: float) -> str:
        gbps = moved / ms / 1e6
        return f"{ms:.3f} ms, {gbps:.4g} GB/s = {100 * gbps * 1e9 / peak:.3g}% of peak"

    report = (f"{c.rows} x {c.width} {c.dtype} on {device} (peak {peak / 1e9:.4g} GB/s, {source}): yours "
              f"{rate(yours)}; eager {rate(eager)}; {eager / yours:.3g}x eager (needs {c.min_speedup:g}x)")
    if eager / yours < c.min_speedup:
        t.fail(f"too slow: {report}. A fused kernel reads x and fx and writes h and y once: look for copies "
               "in the wrapper (.float(), .clone(), torch ops on the data) and try num_warps.")
    t.note(report)
