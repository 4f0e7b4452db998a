"""Part 1 of fused-add-norm's hidden tests: the wrapper's values (20 points), which a wrapper made of torch
ops also earns, and fusion (10 points), which it does not."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from nbtest.tensor_values import values_read
from nbtest.warmup import OUT_OF_BOUNDS

from ...core.sandbox import Died
from ...kit import Failed, Trial, describe, excerpt, shape_in
from .suite import DEFAULT_EPS, F64, FN, block_of, check_values, inputs, label, run, test

MASKS = ("the kernel works on BLOCK = next_power_of_2(n) lanes, of which only n are real: mask every load and "
         "store (cols < n_cols), zero the masked lanes before summing the squared deviations, and divide the "
         "sums by n, not by BLOCK")


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


# ------------------------------------------------------------------ values (20 points)

@test(1, 2, "h = x + fx exactly and y = LayerNorm(h), at widths that are powers of two")
def powers_of_two(t: Trial):
    for n in t.rng.sample([16, 32, 64, 128, 256, 512], 3):
        check_values(t, *inputs(t, t.rng.randint(1, 12), n))


def check_width(t: Trial, rows: int, n: int, why: str) -> None:
    """Rows of width n (with a mean away from 0); a crash there, or the interpreter's out-of-bounds fault
    (nbtest/warmup.py), is a kernel without masks."""
    x, fx, weight, bias = inputs(t, rows, n, shift=offset(t))
    where = f"no mask: at width {n} (BLOCK = {block_of(n)}) {label(x)}"
    try:
        check_values(t, x, fx, weight, bias, why=why)
    except Died as e:
        t.fail(f"{where} crashed the process ({e}): without masks the kernel reads and writes past the end of the "
               f"tensors. {MASKS}")
    except Failed as e:
        if e.kind != "error" or OUT_OF_BOUNDS not in str(e):
            raise
        t.fail(f"{where}: the kernel reads or writes past the end of the tensors; Triton's interpreter stops it "
               f"there ({OUT_OF_BOUNDS}), where a GPU faults or corrupts memory. {MASKS}")


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


# ------------------------------------------------------------------ fused (10 points)

# a fused wrapper only checks, allocates, reshapes and launches. The torch operators that compute nothing (aten
# names, an in-place variant's trailing _ dropped): allocating, filling with a constant, copying or casting, and
# viewing or rearranging memory. Any other operator that runs around or inside the launch computes with torch,
# whatever its name (add, a convolution, exp2, a batched matmul): what a wrapper and Triton's interpreter need is
# known, what computes is not a list that closes
NON_COMPUTING = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill", "zero", "scalar_tensor",
    "copy", "clone", "_to_copy", "to", "lift_fresh", "lift_fresh_copy", "detach", "alias", "set", "contiguous",
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "expand", "expand_as", "permute",
    "transpose", "t", "squeeze", "unsqueeze", "flatten", "unflatten", "view_as", "select", "slice", "split",
    "split_with_sizes", "chunk", "narrow", "unbind", "movedim", "swapaxes", "stack", "cat", "promote_types",
    "result_type"}


def _listed(trace: dict, key: str) -> list:
    value = trace.get(key)
    return value if type(value) is list else []


def _listed_number(trace: dict, key: str) -> int:
    value = trace.get(key)
    return value if type(value) is int else 1 if value is not None else 0


def _computing(trace: dict, key: str) -> list[str]:
    """The torch operators a traced call ran ("ops": outside launches; "ops_in_launches") outside NON_COMPUTING."""
    return [str(op) for op in _listed(trace, key) if str(op).rstrip("_") not in NON_COMPUTING]


def _launches(trace: dict) -> tuple[list[dict], list[dict], list[str]]:
    """A traced call's launches, those of kernels defined in the notebook, and the torch operators outside
    NON_COMPUTING that ran outside launches."""
    launches = [launch for launch in _listed(trace, "launches") if isinstance(launch, dict)]
    mine = [launch for launch in launches if str(launch.get("file", "")).startswith("<cell ")]
    return launches, mine, _computing(trace, "ops")


def not_the_kernel(what: str, trace: dict) -> str | None:
    """Why the traced call's h and y are not its kernel's work, as the trace measured it, or None."""
    launches, mine, _ = _launches(trace)
    each = lambda key, among=launches: sorted({excerpt(str(v), 60) for launch in among for v in launch.get(key) or []})
    checked = {(f"<cell {label}>", line) for label, line in _listed(trace, "kernel_defs")}
    found = [
        # a kernel the rules never read (defined inside a function or an if, or made by calling triton.jit): in
        # the interpreter its body is Python, free to compute with what it loads (its tensors' NumPy arrays)
        (sorted({excerpt(str(launch.get("kernel", "?")), 60) for launch in mine
                 if (str(launch.get("file")), launch.get("line") if type(launch.get("line")) is int else 0)
                 not in checked}),
         lambda n: f"not a kernel the rules read: {what} launched {n}, which is not a @triton.jit def at the top "
                   "level of a cell. The grader reads such a def's body for Triton operations alone (a compiler on "
                   "a GPU runs nothing else, Triton's interpreter on a CPU runs any Python); one defined inside a "
                   "function or an if, or made by calling triton.jit, is not read. Write the kernel as "
                   "@triton.jit on a def at the top level of its cell."),
        # torch inside a launch: a kernel's tl operations never run torch, so it is Python reached from the kernel
        # (an object handed to it whose method computes)
        (_computing(trace, "ops_in_launches"),
         lambda n: f"not your kernel: while {what} ran its kernel, torch computed ({n}). A Triton kernel computes "
                   "h and y with tl operations on what it loads; torch reached from inside it, through an object "
                   "handed to the kernel, is the wrapper computing, not the kernel."),
        ([excerpt(str(name), 60) for name in _listed(trace, "machinery")],
         lambda n: f"not your kernel: while {what} ran, Triton's launch classes or triton.language were not "
                   f"Triton's own: your code changed {n}, so what runs around or inside each launch is yours, where "
                   "the trace cannot count it. Leave Triton alone; launch your kernel as kernel[grid](...)."),
        ([excerpt(str(name), 60) for name in _listed(trace, "modes")],
         lambda n: f"not your kernel: while {what} ran, the grader's tracer was taken off torch's stack of {n}, so "
                   "what ran from then on went uncounted. Leave torch's modes alone: a wrapper checks the inputs, "
                   "allocates h and y, and launches the kernel."),
        (["another thread"] if _listed_number(trace, "threads") else [],
         lambda n: f"not your kernel: while {what} ran, {n} ran beside it, where the grader's tracer (each thread's "
                   "own) cannot see what it computes. A wrapper runs on the caller's thread: it checks the inputs, "
                   "allocates h and y, and launches the kernel."),
        # a tensor class's own __torch_function__ or __torch_dispatch__ runs where the tracer's mode is set aside
        ([excerpt(str(name), 60) for name in _listed(trace, "classes")],
         lambda n: f"not your kernel: while {what} ran, torch handed its work to a tensor class of the notebook's "
                   f"({n}), whose own __torch_function__ or __torch_dispatch__ runs Python where the trace cannot "
                   "count it. h and y are plain tensors that your kernel writes: allocate them with torch.empty_like "
                   "and launch the kernel."),
        (each("swapped"),
         lambda n: f"not your kernel: when {what} launched its kernel, Triton's kernel object was no longer what "
                   f"@triton.jit made of your function ({n} changed), so what ran is not the kernel you decorated. "
                   "Leave the kernel object alone; launch it as kernel[grid](...)."),
        (values_read(_listed(trace, "calls")),
         lambda n: f"not your kernel: {what} handed the tensors' values to Python ({n}), which computes on them "
                   "where no kernel runs. A wrapper asks a tensor only for its shape, strides, dtype and device, "
                   "allocates h and y, and launches the kernel, whose tl operations compute on what it loads."),
        # Python reads and writes a tensor over a bytearray, a numpy array or a file with no torch call: values copied
        # there left the trace, values copied from there (or returned) are Python's work. After the values read, whose
        # message is the cause where a tensor's numpy() shared its memory
        ([excerpt(str(where), 60) for where in _listed(trace, "shared")],
         lambda n: f"not your kernel: {what} used a tensor whose memory Python shares ({n}): one made over a "
                   "bytearray, a numpy array or a file (torch.frombuffer, torch.from_numpy, .numpy()), which Python "
                   "reads and writes with no torch call. h and y are tensors of torch's own that your kernel writes: "
                   "allocate them with torch.empty_like and launch the kernel on the inputs."),
        # a launch that raised took its values with it (an assert's message holds what the kernel loaded)
        ([excerpt(str(name), 60) for name in _listed(trace, "raised")],
         lambda n: f"not your kernel: a launch of {n} raised, and {what} went on and returned: the kernel did not "
                   "compute h and y, and what it raised (an assert's message) can carry the values it loaded. Let a "
                   "failing launch fail the call."),
        (each("hooks"),
         lambda n: f"not your kernel: while {what} ran, the kernel it launched held a hook of the notebook's ({n}), "
                   "which runs inside the launch, handed its tensors. A Triton kernel computes h and y with tl "
                   "operations on what it loads: leave its hooks to Triton."),
        # in Triton's interpreter a tl.constexpr parameter holds the object the launch passed: `if FLAG:` or `N < M`
        # in the kernel runs that object's methods, Python inside the launch, unseen by the trace
        (each("foreign", mine),
         lambda n: f"{what} passed your kernel an object of type {n}: a kernel's arguments are tensors and plain "
                   "data (numbers, bools, strings, dtypes), so that nothing but the kernel computes inside the "
                   "launch. Pass the tensors, their sizes and constants; compute h and y in the kernel.")]
    return next((message(", ".join(names)) for names, message in found if names), None)


def torch_instead(what: str, arithmetic: list[str], kernels: list[str]) -> str:
    defined = (f" ({', '.join(kernels)} is defined but never launched)" if len(kernels) == 1 else
               f" ({', '.join(kernels)} are defined but never launched)" if kernels else "")
    used = f"; torch computed with {', '.join(arithmetic)}" if arithmetic else ""
    return (f"calls torch ops instead of your Triton kernel: {what} launched no @triton.jit kernel defined in "
            f"your notebook{defined}{used}. Compute h and y in your kernel, launched as kernel[grid](...).")


def launched(what: str, trace: dict) -> str | None:
    """launches_kernel's verdict on one traced call: its kernel did the work, and it is the notebook's: torch
    computing anywhere in the call (before the launch, feeding the kernel, or after it) did part of it."""
    why = not_the_kernel(what, trace)
    if why:
        return why
    _, mine, arithmetic = _launches(trace)
    if not mine:
        return torch_instead(what, arithmetic, [str(k) for k in _listed(trace, "kernels")])
    if arithmetic:
        return (f"not your kernel alone: {what} also ran torch arithmetic on the data, outside your kernel "
                f"({', '.join(arithmetic)}): h = x + fx or LayerNorm computed by torch, before the launch or after "
                "it, is work your kernel should do, and moves the stream through memory again. The kernel computes "
                "both h and y; the wrapper only checks the shapes, allocates h and y, and launches it.")
    return None


def fused(what: str, trace: dict) -> str | None:
    """one_launch's verdict on one traced call: launched, with no torch arithmetic, in one launch."""
    why = launched(what, trace)
    if why:
        return why
    _, mine, _ = _launches(trace)
    if len(mine) > 1:
        kernels = ", ".join(dict.fromkeys(str(launch.get("kernel", "?")) for launch in mine))
        return (f"not fused: {what} launched {len(mine)} kernels ({kernels}). One pass over memory is one launch, "
                "one program per row, grid = (n_rows,): a Python loop over rows, or separate add and norm kernels, "
                "read the stream more than once.")
    return None


def traced(t: Trial, verdict, *shape: int) -> None:
    """One traced call of the wrapper on inputs of `shape`, failing the test with the verdict's reason."""
    x, fx, weight, bias = inputs(t, *shape)
    why = verdict(label(x), run(t, x, fx, weight, bias)[2].trace)
    if why:
        t.fail(why)


# the fusion tests judge every traced call of part 1 (Test.judges), the values tests' too, each in its own child:
# code that computed h and y otherwise at shapes or dtypes only those tests use would earn their points unjudged
@test(1, 5, "fused: fused_add_layernorm launches your @triton.jit kernel", judges=launched)
def launches_kernel(t: Trial):
    traced(t, launched, t.rng.randint(2, 3), t.rng.randint(2, 4), t.choice([32, 64]))


@test(1, 5, "fused: one launch computes both h and y, with no torch arithmetic around it", judges=fused)
def one_launch(t: Trial):
    for shape in [(1, t.choice([32, 64])), (t.rng.randint(2, 3), t.rng.randint(3, 5), t.choice([32, 64]))]:
        traced(t, fused, *shape)
