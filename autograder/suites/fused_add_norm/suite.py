"""What fused-add-norm's parts share: SUITE, the tolerances, and calling the wrapper: its inputs, one call
checked to return (h, y) shaped and typed like x, and the check of h and y against LayerNorm."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...kit import Suite, Trial, describe, show

# The fusion tests measure what the wrapper does (part1.launched and part1.fused, at every traced call): torch
# computing, the values handed to Python, the launches, the tensor classes torch hands work to, the memory Python
# shares, the threads and modes beside the tracer. They are held too by the kernel rules, for what runs inside a
# launch unseen (Python in a kernel, a heuristic, a kernel's attributes); by numpy (forbidden-module); by a library
# changed in the process (monkeypatch: what the wrapper calls is then code of the notebook's); and by the withhold
# rules that hold every test that reads the child's reports (kit/trial.py: REPORTS). The timing test's timed calls
# are not traced: it judges its own traced call as one_launch does (part2.timing).
KERNEL_RULES = {"forbidden-module", "kernel-python", "kernel-decorator", "kernel-signature", "kernel-attribute",
                "rebound", "monkeypatch"}
SUITE = Suite("fused-add-norm", cuda=True, held_by={"launches_kernel": KERNEL_RULES, "one_launch": KERNEL_RULES,
                                                    "timing": KERNEL_RULES})
test = SUITE.test
F64 = torch.float64
FN = "fused_add_layernorm"
DEFAULT_EPS = 1e-5
# rtol, atol. bf16: one bf16 step (2^-7 relative), because Triton's interpreter casts fp32 to bf16 by dropping
# the low 16 bits (toward zero) where torch and a GPU round to nearest
BF16_STEP = 2.0 ** -7
TOLERANCE = {torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2 * BF16_STEP, 1e-2)}


def block_of(n: int) -> int:
    return 1 << (n - 1).bit_length()


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


def run(t: Trial, x, fx, weight, bias, eps: float | None = None, readback=()):
    """The wrapper's (h, y), checked to be two tensors shaped and typed like x; and the observation
    (readback: as t.call's). Every call runs under the launch tracer, read by the fusion tests alone, so that
    no code can tell the calls they judge from the others (a tracer's torch function mode is visible to it)."""
    what = label(x, eps)
    obs = t.call(FN, x, fx, weight, bias, trace="launches", readback=readback, **({} if eps is None else {"eps": eps}))
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
