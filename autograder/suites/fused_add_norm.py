"""Hidden tests of fused-add-norm (docs/contract.md): part 1 correctness, part 2 timing.

Never shipped. The submission runs on the GPU where the grading machine has one and in
Triton's interpreter on CPU tensors where it has none; inputs are drawn per run from the
grading seed and every expected value is computed here, in float64, from F.layer_norm.

Points of part 1 (30): 20 for the values (the wrapper's contract: h, y, widths, shapes,
eps, weight and bias, fp16, inputs, errors), which a wrapper made of torch ops also earns,
and 10 for fusion, which it does not: "fused" tests watch, in the child, which Triton
kernels defined in the notebook a call launches and which torch operators run around them.
Part 2 (10) times the kernel against eager PyTorch on CUDA at course.toml's [timing] size, each
timed call on inputs drawn afresh and its results checked; without CUDA it is skipped and its
points follow course.toml's without_cuda (grading.grader), except under Grader(time_on_cpu=True),
which runs it on the CPU's clock at CPU's size and threshold (below) to test the machinery.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..kit.bandwidth import copy_rate, data_sheet_peak
from ..core.sandbox import Died
from ..kit import Suite, Trial, describe, excerpt, shape_in, show

# Tests that rest on what the sandbox child reports besides returned values (see
# residual_connections.py); the fusion tests are also held by the wrapper and kernel rules, which
# say that nothing but the kernel computes h and y (docs/security.md).
KERNEL_RULES = {"wrapper-no-launch", "wrapper-arithmetic", "wrapper-torch-op", "wrapper-statement", "numpy",
                "forbidden-module", "kernel-python", "kernel-decorator", "kernel-signature", "rebound"}
ONE_LAUNCH_RULES = KERNEL_RULES | {"wrapper-launch-loop", "wrapper-launches"}
SUITE = Suite("fused-add-norm", cuda=True,
              trusts_child={"inputs_untouched", "shape_mismatch", "too_wide", "launches_kernel", "one_launch",
                            "timing"},
              held_by={"launches_kernel": KERNEL_RULES, "one_launch": ONE_LAUNCH_RULES, "timing": ONE_LAUNCH_RULES})
test = SUITE.test
F64 = torch.float64
FN = "fused_add_layernorm"
DEFAULT_EPS = 1e-5
# rtol, atol. bf16: one bf16 step (2^-7 relative), because Triton's interpreter casts fp32 to bf16 by dropping
# the low 16 bits (toward zero) where torch and a GPU round to nearest
BF16_STEP = 2.0 ** -7
TOLERANCE = {torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2 * BF16_STEP, 1e-2)}
# torch operators that compute on the data: a fused wrapper only checks, allocates, reshapes and launches
ARITHMETIC = {"add", "sub", "rsub", "mul", "div", "neg", "reciprocal", "sqrt", "rsqrt", "pow", "square", "exp",
              "sum", "mean", "var", "var_mean", "std", "std_mean", "addcmul", "addcdiv", "lerp", "where",
              "native_layer_norm", "layer_norm", "rms_norm", "_fused_rms_norm", "native_group_norm",
              "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
              "linalg_vector_norm", "norm", "mm", "bmm", "addmm", "matmul"}
MASKS = ("the kernel works on BLOCK = next_power_of_2(n) lanes, of which only n are real: mask every load and "
         "store (cols < n_cols), zero the masked lanes before summing the squared deviations, and divide the "
         "sums by n, not by BLOCK")


def spec(*items) -> dict:
    return {"spec": list(items)}


def block_of(n: int) -> int:
    return 1 << (n - 1).bit_length()


# ===================================================================== calling the wrapper

def inputs(t: Trial, *shape: int, dtype=torch.float32, scale: float = 1.0, shift: float = 0.0):
    """x and fx of `shape` (values scale * N(0, 1) + shift), weight near 1 and bias near 0 of (n,)."""
    n = shape[-1]
    x, fx = ((t.randn(*shape, dtype=F64, scale=scale) + shift).to(dtype) for _ in range(2))
    weight = (1 + t.randn(n, dtype=F64, scale=0.5)).to(dtype)
    bias = t.randn(n, dtype=F64, scale=0.5).to(dtype)
    return x, fx, weight, bias


def label(x: torch.Tensor, eps: float | None = None) -> str:
    dtype = str(x.dtype).removeprefix("torch.")
    eps_arg = "" if eps is None else f", eps={eps:.3g}"
    return f"{FN}(x, fx, weight, bias{eps_arg}) on {dtype} x of shape {tuple(x.shape)}"


def run(t: Trial, x, fx, weight, bias, eps: float | None = None, trace: str | None = None, readback=()):
    """The wrapper's (h, y), checked to be two tensors shaped and typed like x; and the observation
    (readback: as t.call's)."""
    what = label(x, eps)
    obs = t.call(FN, x, fx, weight, bias, trace=trace, readback=readback, **({} if eps is None else {"eps": eps}))
    value = obs.result
    if value.get("kind") not in ("tuple", "list") or value.get("length") != 2:
        t.fail(f"{what} returned {describe(value)}; it must return the tuple (h, y): h = x + fx, the residual "
               "stream kept for the next block, and y = LayerNorm(h).")
    h, y = (t.tensor(item, f"{what}, {name},") for name, item in zip(("h", "y"), value["items"]))
    for name, out in (("h", h), ("y", y)):
        if out.shape != x.shape:
            t.fail(f"{what}: {name} has shape {tuple(out.shape)}, expected x's shape {tuple(x.shape)}. The "
                   "wrapper works on rows, x.reshape(-1, n), and returns h and y shaped like x.")
        if out.dtype != x.dtype:
            t.fail(f"{what}: {name} is {str(out.dtype)[6:]}, expected x's dtype {str(x.dtype)[6:]}: the dtype "
                   "changed. Allocate h and y like x (torch.empty_like); the kernel converts to fp32 inside and "
                   "back to the pointer's type when it stores.")
    return h, y, obs


def layer_norm_variants(h: torch.Tensor, x: torch.Tensor, weight, bias, eps: float) -> tuple[torch.Tensor, list]:
    """LayerNorm(h) in float64, and the wrong answers that name a misconception."""
    h, x, weight, bias = h.to(F64), x.to(F64), weight.to(F64), bias.to(F64)
    n = h.shape[-1]
    block = block_of(n)
    mean = h.mean(-1, keepdim=True)
    centred = h - mean
    squares = centred.pow(2).sum(-1, keepdim=True)

    def norm(var, c=centred, e=eps, w=weight, b=bias):
        return c / torch.sqrt(var + e) * w + b

    want = F.layer_norm(h, (n,), weight, bias, eps)
    variants = []
    if block != n:
        mean_b = h.sum(-1, keepdim=True) / block
        variants += [
            (f"variance divided by BLOCK instead of n: at width {n} the kernel has {block} lanes but only {n} "
             "real values; divide the sum of squares by n_cols", norm(squares / block)),
            (f"mean and variance divided by BLOCK ({block}) instead of n ({n}): divide both sums by n_cols",
             norm((h - mean_b).pow(2).sum(-1, keepdim=True) / block, c=h - mean_b)),
            (f"masked lanes not zeroed before squaring: the {block - n} lanes past the row's end hold h = 0, so "
             "h - mean there is -mean and adds (BLOCK - n) * mean^2 to the variance; use "
             "tl.where(mask, h - mean, 0.0)", norm((squares + (block - n) * mean.pow(2)) / n))]
    variants += [
        ("unbiased variance: LayerNorm divides the sum of squared deviations by n, not n - 1",
         norm(squares / (n - 1))),
        ("eps outside the square root: y = (h - mean) / sqrt(var + eps) * weight + bias",
         centred / (torch.sqrt(squares / n) + eps) * weight + bias),
        ("weight and bias are not applied", norm(squares / n, w=1.0, b=0.0)),
        ("the bias is not added", norm(squares / n, b=0.0)),
        ("the weight is not applied", norm(squares / n, w=1.0)),
        ("y is LayerNorm(x): normalise h = x + fx, the sum, not x", F.layer_norm(x, (n,), weight, bias, eps))]
    if eps != DEFAULT_EPS:
        variants.append((f"the eps passed in ({eps:.3g}) is ignored: this y uses 1e-5",
                         norm(squares / n, e=DEFAULT_EPS)))
    return want, variants


def check_values(t: Trial, x, fx, weight, bias, eps: float | None = None, why: str | None = None, readback=()):
    """One call; h must be exactly x + fx and y LayerNorm(h) within the dtype's tolerance."""
    h, y, obs = run(t, x, fx, weight, bias, eps, readback=readback)
    what = label(x, eps)
    eps_used = DEFAULT_EPS if eps is None else eps
    want_h = x + fx
    # y normalises x + fx as summed in fp32 (a kernel) or as rounded to x's dtype (eager PyTorch): both are right
    want_y, variants = layer_norm_variants(x.double() + fx.double(), x, weight, bias, eps_used)
    rounded_y = F.layer_norm(want_h.double(), x.shape[-1:], weight.double(), bias.double(), eps_used)
    rtol, atol = TOLERANCE[x.dtype]
    close = lambda a, b: bool(torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol))
    h_ok = torch.equal(h, want_h) or (x.dtype == torch.bfloat16 and bool(torch.allclose(
        h.double(), want_h.double(), rtol=BF16_STEP, atol=0)))   # a truncating cast is one step off
    if not h_ok:
        if close(h, want_y) and close(y, want_h):
            t.fail(f"{what}: h and y are swapped: return (h, y), the stream first.")
        if close(h, want_y):
            t.fail(f"{what}: h is normalised: h is the residual stream x + fx, returned as it is for the next "
                   f"block to add to; only y is LayerNorm(h).\n  yours:    {show(h)}\n  expected: {show(want_h)}")
        t.check(h, want_h, f"{what}, h", "h must be exactly x + fx, element by element (add in fp32, store in "
                "x's dtype)", exact=True, alternatives=[("h is x: the add is missing", x),
                                                        ("h is fx: the add is missing", fx)])
    if close(y, rounded_y):
        return obs
    t.check(y, want_y, f"{what}, y", why or "y must be LayerNorm(x + fx) over the last dimension: "
            "(h - mean) / sqrt(var + eps) * weight + bias, with the biased variance", rtol=rtol, atol=atol,
            alternatives=variants)
    return obs


def offset(t: Trial) -> float:
    """A mean for the inputs' rows, away from 0 (where lanes past the row's end that hold -mean go unseen)."""
    return t.choice([-1, 1]) * t.uniform(0.5, 2)


def widths_not_powers_of_two(t: Trial, ranges) -> list[int]:
    """One random width from each (lo, hi) range, at most 95% of its BLOCK, so that BLOCK-sized sums show."""
    widths = []
    for lo, hi in ranges:
        n = t.rng.randrange(lo, hi)
        while block_of(n) == n or n > 0.95 * block_of(n):
            n = t.rng.randrange(lo, hi)
        widths.append(n)
    return widths


# ===================================================================== Part 1: values (20 points)

@test(1, 2, "h = x + fx exactly and y = LayerNorm(h), at widths that are powers of two")
def powers_of_two(t: Trial):
    for n in t.rng.sample([16, 32, 64, 128, 256, 512], 3):
        check_values(t, *inputs(t, t.rng.randint(1, 12), n))


def check_width(t: Trial, rows: int, n: int, why: str) -> None:
    """Rows of width n (with a mean away from 0); a crash there is a kernel without masks."""
    x, fx, weight, bias = inputs(t, rows, n, shift=offset(t))
    try:
        check_values(t, x, fx, weight, bias, why=why)
    except Died as e:
        t.fail(f"no mask: at width {n} (BLOCK = {block_of(n)}) {label(x)} crashed the process ({e}): without "
               f"masks the kernel reads and writes past the end of the tensors. {MASKS}")


@test(1, 3, "widths that are not powers of two (masks, and sums divided by n)", own_child=True)
def not_powers_of_two(t: Trial):
    for n in widths_not_powers_of_two(t, [(17, 61), (129, 251), (520, 1000)]):
        check_width(t, t.rng.randint(2, 9), n, f"wrong at width {n}, not a power of two (no mask, or sums over "
                    f"all BLOCK lanes?): {MASKS}")


@test(1, 2, "3-D and 4-D inputs, and a non-contiguous one, normalised over the last dimension")
def leading_dimensions(t: Trial):
    for shape in [(t.rng.randint(2, 4), t.rng.randint(2, 5)), (2, t.rng.randint(1, 3), t.rng.randint(2, 3))]:
        n = t.choice([32, 64, 128])
        check_values(t, *inputs(t, *shape, n), why="the leading dimensions are rows: normalise each row of "
                     "x.reshape(-1, n) over the last dimension only, and return h and y shaped like x")
    n = t.choice([32, 64])
    x, fx, weight, bias = inputs(t, t.rng.randint(2, 4), t.rng.randint(2, 5), n)
    x, fx = x.transpose(0, 1).contiguous().transpose(0, 1), fx.transpose(0, 1).contiguous().transpose(0, 1)
    try:
        check_values(t, x, fx, weight, bias, why="non-contiguous input (a transposed view): a kernel that reads "
                     "row r at r * n_cols needs contiguous rows; make them so in the wrapper (.contiguous())")
    except Died as e:
        t.fail(f"non-contiguous input (a transposed view of shape {tuple(x.shape)}) crashed the process ({e}): "
               "a kernel that reads row r at r * n_cols needs contiguous rows; use .contiguous() in the wrapper.")


@test(1, 2, "the eps, weight and bias passed in are used (and eps defaults to 1e-5)")
def eps_weight_bias(t: Trial):
    n = t.choice([64, 128, 256])
    for _ in range(2):    # small variance, so that eps matters
        eps = 10 ** t.uniform(-3, -0.5)
        check_values(t, *inputs(t, t.rng.randint(2, 8), n, scale=t.uniform(0.02, 0.08)), eps=eps)
    x, fx, weight, bias = inputs(t, t.rng.randint(2, 8), n, scale=0.003)
    check_values(t, x, fx, weight, bias, why="without an eps argument, eps must default to 1e-5 (as in "
                 "F.layer_norm); with a variance this small a different default shows")


@test(1, 2, "wide rows, up to 8192, also not powers of two", own_child=True)
def wide_rows(t: Trial):
    for n in [8192, *widths_not_powers_of_two(t, [(4100, 7700)])]:
        check_width(t, t.rng.randint(1, 3), n, f"wrong at width {n}: one program must hold the whole row "
                    f"(BLOCK = {block_of(n)}); {MASKS}")


@test(1, 2, "fp16 and bf16 inputs: h and y keep the dtype, mean and variance accumulated in fp32")
def half_precision(t: Trial):
    n = t.choice([2048, 4096])
    shift = 40000 / n     # h ~ 2 * shift, so a row sums to about 80000: past fp16's largest value, 65504
    x, fx, weight, bias = inputs(t, t.rng.randint(2, 6), n, dtype=torch.float16, shift=shift)
    check_values(t, x, fx, weight, bias, why=(
        f"fp16 accumulation: sum the row in fp32 (load, then .to(tl.float32)). A row of {n} fp16 values near "
        f"{2 * shift:.3g} sums to about 80000, past fp16's largest value, 65504 (inf, then nan), and fp16 sums "
        "lose the small deviations from the mean"))
    # widths that are powers of two, so that this test sees the dtype and nothing else (masks have their own)
    x, fx, weight, bias = inputs(t, t.rng.randint(2, 6), t.choice([256, 512]), dtype=torch.bfloat16,
                                 shift=offset(t))
    check_values(t, x, fx, weight, bias, why=(
        "bf16 inputs: load, convert to fp32, compute, and store h and y as bf16 (y.to(y_ptr.dtype.element_ty)); "
        "bf16 keeps 8 significant bits, so sums in bf16 lose most of each row"))


@test(1, 2, "rows with a large mean: the variance from centred values (two passes), not E[h^2] - mean^2")
def large_mean(t: Trial):
    n = t.choice([2048, 4096])
    shift = t.choice([-1, 1]) * t.uniform(500, 2000)
    x, fx, weight, bias = inputs(t, t.rng.randint(4, 8), n, shift=shift)
    h, y, obs = run(t, x, fx, weight, bias)
    t.check(h, x + fx, f"{label(x)}, h", "h must be exactly x + fx", exact=True)
    want_h = (x + fx).double()
    want = F.layer_norm(want_h, (n,), weight.double(), bias.double(), DEFAULT_EPS)
    mean = want_h.mean(-1, keepdim=True)
    one_pass = (want_h.float().pow(2).mean(-1, keepdim=True) - want_h.float().mean(-1, keepdim=True).pow(2)).double()
    t.check(y, want, f"{label(x)} with rows of mean about {shift:.0f} and variance about 2, y",
            "the variance of a row must come from the centred values, sum((h - mean)^2) / n, after the mean: "
            "E[h^2] - mean^2 subtracts two numbers near mean^2, each rounded in fp32, and loses most digits",
            rtol=0, atol=1e-3, alternatives=[
                ("one-pass variance: E[h^2] - mean^2 in fp32 loses most digits when a row's mean is large "
                 "compared with its spread; compute mean first, then sum((h - mean)^2) / n",
                 (want_h - mean) / torch.sqrt(one_pass.clamp_min(0) + DEFAULT_EPS) * weight.double()
                 + bias.double())])


@test(1, 1, "inputs are left unchanged and h and y are new tensors")
def inputs_untouched(t: Trial):
    x, fx, weight, bias = inputs(t, t.rng.randint(2, 8), t.choice([64, 128, 256]))
    obs = check_values(t, x, fx, weight, bias, readback=[0, 1, 2, 3])
    for name, before, after in zip(("x", "fx", "weight", "bias"), (x, fx, weight, bias), obs.args_after):
        t.check(t.tensor(after, name), before, f"{name} after {label(x)}",
                f"input modified: {FN} changed its input {name} (h stored into x's memory, or x += fx in the "
                "wrapper); the caller still needs its inputs, so write h and y to new tensors", exact=True)
    if obs.shares_input:
        t.fail(f"input modified: the h or y that {label(x)} returned shares memory with an input; allocate h and "
               "y as new tensors (torch.empty_like(x)).")


def refused(t: Trial, x, fx, weight, bias, why: str) -> str:
    """The message of the ValueError the wrapper raised on bad input."""
    obs = t.call(FN, x, fx, weight, bias, expect_error=True)
    what = f"{FN}(x of shape {tuple(x.shape)}, fx of shape {tuple(fx.shape)}, ...)"
    if obs.error is None:
        t.fail(f"{what} returned {describe(obs.result)} instead of raising ValueError: {why}")
    if "ValueError" not in obs.error["is"]:
        t.fail(t.raised(what, obs.error) + f"; expected your own ValueError: {why}")
    return obs.error["message"]


@test(1, 1, "x and fx of different shapes raise a ValueError naming both")
def shape_mismatch(t: Trial):
    rows, n = t.rng.randint(2, 6), t.choice([32, 48, 64])
    weight, bias = inputs(t, 1, n)[2:]
    for xs, fs in [((rows, n), (rows, n + t.rng.randint(1, 9))), ((rows, n), (rows + 2, n)), ((rows, n), (2, rows, n))]:
        message = refused(t, t.randn(*xs), t.randn(*fs), weight, bias,
                          "silent mismatch: the kernel would read fx as rows of x's width; check x.shape == "
                          "fx.shape before launching")
        if not (shape_in(message, xs) and shape_in(message, fs)):
            t.fail(f"the ValueError must name both shapes, {xs} and {fs}, so the caller can find the bug; yours "
                   f"said: {excerpt(message)!r}")


@test(1, 1, "a width over 8192 raises a ValueError naming the limit")
def too_wide(t: Trial):
    limit = int(t.ref.MAX_WIDTH)
    n = limit + t.rng.randint(1, 300)
    x, fx, weight, bias = inputs(t, 2, n)
    message = refused(t, x, fx, weight, bias, f"widths over {limit} must be refused (one program holds a whole "
                      "row, BLOCK = next_power_of_2(n) lanes)")
    if str(limit) not in message:
        t.fail(f"the ValueError for width {n} must name the limit, {limit}; yours said: {excerpt(message)!r}")


@test(1, 1, "a weight or bias not of shape (n,) raises a ValueError naming its shape")
def weight_shape(t: Trial):
    rows, n = t.rng.randint(2, 6), t.choice([32, 48, 64])
    x, fx, weight, bias = inputs(t, rows, n)
    for w, b in [(t.randn(n + t.rng.randint(1, 5)), bias), (weight, t.randn(1, n)), (weight, t.randn(n - 1))]:
        bad = tuple((w if w.shape != (n,) else b).shape)
        message = refused(t, x, fx, w, b, f"a weight or bias of shape {bad} for rows of width {n} must be "
                          f"refused: the kernel would read {n} values of it regardless")
        if not shape_in(message, bad):
            t.fail(f"the ValueError for a weight or bias of shape {bad} must name that shape; yours said: "
                   f"{message!r}")


@test(1, 1, "float64 inputs raise a ValueError naming the dtype (the kernel computes in fp32)")
def float64_refused(t: Trial):
    x, fx, weight, bias = inputs(t, t.rng.randint(2, 6), t.choice([32, 64]), dtype=F64)
    message = refused(t, x, fx, weight, bias, "the kernel computes in fp32, so float64 outputs would carry only "
                      "fp32 accuracy; refuse float64 and say so")
    if "float64" not in message:
        t.fail(f"the ValueError for float64 inputs must name the dtype, float64; yours said: {message!r}")


# ===================================================================== Part 1: fused (10 points)

def traced(t: Trial, *shape: int) -> tuple[str, list[dict], list[str], list[str]]:
    """One traced call: its label, the launches of kernels defined in the notebook, the arithmetic
    torch operators that ran outside launches, and the notebook's kernels."""
    x, fx, weight, bias = inputs(t, *shape)
    h, y, obs = run(t, x, fx, weight, bias, trace="launches")
    trace = obs.trace
    launches = [launch for launch in trace.get("launches", []) if isinstance(launch, dict)]
    mine = [launch for launch in launches if str(launch.get("file", "")).startswith("<cell ")]
    arithmetic = [str(op) for op in trace.get("ops", []) if str(op).rstrip("_") in ARITHMETIC]
    return label(x), mine, arithmetic, [str(k) for k in trace.get("kernels", [])]


def torch_instead(what: str, arithmetic: list[str], kernels: list[str]) -> str:
    defined = (f" ({', '.join(kernels)} is defined but never launched)" if len(kernels) == 1 else
               f" ({', '.join(kernels)} are defined but never launched)" if kernels else "")
    used = f"; torch computed with {', '.join(arithmetic)}" if arithmetic else ""
    return (f"calls torch ops instead of your Triton kernel: {what} launched no @triton.jit kernel defined in "
            f"your notebook{defined}{used}. Compute h and y in your kernel, launched as kernel[grid](...).")


@test(1, 5, "fused: fused_add_layernorm launches your @triton.jit kernel")
def launches_kernel(t: Trial):
    what, mine, arithmetic, kernels = traced(t, t.rng.randint(2, 3), t.rng.randint(2, 4), t.choice([32, 64]))
    if not mine:
        t.fail(torch_instead(what, arithmetic, kernels))


@test(1, 5, "fused: one launch computes both h and y, with no torch arithmetic around it")
def one_launch(t: Trial):
    for shape in [(1, t.choice([32, 64])), (t.rng.randint(2, 3), t.rng.randint(3, 5), t.choice([32, 64]))]:
        what, mine, arithmetic, kernels = traced(t, *shape)
        if not mine:
            t.fail(torch_instead(what, arithmetic, kernels))
        if arithmetic:
            t.fail(f"not fused: {what} also ran torch arithmetic on the data, outside your kernel "
                   f"({', '.join(arithmetic)}): h = x + fx or LayerNorm computed by torch moves the stream "
                   "through memory again. The kernel computes both h and y; the wrapper only checks the "
                   "shapes, allocates h and y, and launches it.")
        if len(mine) > 1:
            rows = math.prod(shape[:-1])
            kernels = ", ".join(dict.fromkeys(launch.get("kernel", "?") for launch in mine))
            t.fail(f"not fused: {what} ({rows} rows) launched {len(mine)} kernels ({kernels}). One pass over "
                   "memory is one launch, one program per row, grid = (n_rows,): a Python loop over rows, or "
                   "separate add and norm kernels, read the stream more than once.")


# ===================================================================== Part 2: timing (10 points)

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
    check_values(t, x, fx, weight, bias, why=f"timing is graded only for a correct kernel: {c.dtype} rows of "
                 f"width {c.width} must give LayerNorm(x + fx) (accumulate in fp32)")
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
