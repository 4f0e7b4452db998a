"""Part 5 of residual-connections' hidden tests: plain_mlp and residual_mlp, train and grad_norms.

A Part 5 block is ln = LayerNorm(d_in), ffn = Sequential(Linear(d_in, width), GELU, Linear(width, width)),
plus shortcut = ProjectionShortcut(d_in, width) in residual_mlp; model[depth] is the final LayerNorm,
model[depth + 1] the head. Every loss a test judges is computed here from the model's outputs
(t.invoke), never taken from the list train returns, except in train_updates, which checks that list
against the trajectories only honest SGD produces, on the whole set and on the minibatches the contract draws.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...kit import Trial, excerpt, part_label
from .specs import H
from .suite import F64, check_ffn_part, check_shortcut_part, ffn_of, ffn_weights, load_as_stated, spec, test


def _linear_entry(entry: dict | None) -> str:
    if entry is None:
        return "nothing"
    if entry.get("base") != "Linear":
        return excerpt(entry.get("type", "?"), 60)
    return f"Linear({entry.get('in_features')}, {entry.get('out_features')}, bias={entry.get('has_bias')})"


def _entry(model, path: str) -> str:
    """A submodule in words, from the structure report: Linear(4, 8, bias=True), LayerNorm([8]), GELU, nothing."""
    m = model.module(path)
    if m is None or m.get("base") == "Linear":
        return _linear_entry(m)
    if m.get("base") == "LayerNorm":
        return f"LayerNorm({m.get('normalized_shape')})"
    return str(m.get("base") or m.get("type"))


def _block_count(d_in: int, d_out: int) -> int:
    """Parameters of ln + ffn in one block: LayerNorm(d_in), Linear(d_in, d_out), Linear(d_out, d_out)."""
    return 2 * d_in + d_in * d_out + d_out + d_out * d_out + d_out


LAYOUT = ("A block is ln = LayerNorm(d_in), which normalises the block's input (Pre-LN), ffn = Sequential(Linear(d_in, "
          "width), GELU(), Linear(width, width)), as in Part 1's ResidualFFN(d_in, width, expansion=1), and in "
          "residual_mlp shortcut = ProjectionShortcut(d_in, width); model[depth] is the final LayerNorm(width), "
          "model[depth + 1] the head Linear(width, d_out).")


def _check_layers(t: Trial, builder: str, d_in: int, width: int, d_out: int, depth: int, shortcut: bool):
    """builder(d_in, width, d_out, depth)'s layers by behaviour: the grader's weights loaded at the paths
    LAYOUT states, then each block's ln, ffn (and shortcut), the final LayerNorm and the head called by
    those paths on the grader's inputs and compared with their computation here. The model, for the
    checks behaviour cannot make."""
    model = t.new(builder, d_in, width, d_out, depth, double=True)
    w = _weights(t, d_in, width, d_out, depth, project=shortcut and d_in != width)
    load_as_stated(t, model, w, LAYOUT)
    for l in range(depth):
        d = d_in if l == 0 else width
        x = t.randn(t.size(2, 5), d, dtype=F64, scale=t.uniform(0.5, 2))
        t.check(t.drive(model, f"{l}.ln", x), F.layer_norm(x, (d,), w[f"{l}.ln.weight"], w[f"{l}.ln.bias"]),
                f"{part_label(model, f'{l}.ln')}(x)", f"block {l}'s ln must be LayerNorm({d}) on the block's input",
                rtol=1e-9, atol=1e-10)
        check_ffn_part(t, model, f"{l}.ffn", w, x, width, width)
        if shortcut:
            check_shortcut_part(t, model, f"{l}.shortcut", x, w.get(f"{l}.shortcut.proj.weight"))
    h = t.randn(t.size(2, 5), width, dtype=F64, scale=t.uniform(0.5, 2))
    t.check(t.drive(model, str(depth), h), F.layer_norm(h, (width,), w[f"{depth}.weight"], w[f"{depth}.bias"]),
            f"{part_label(model, str(depth))}(x)", f"model[{depth}], after the {depth} blocks, must be the final "
            f"LayerNorm({width}): without it a Pre-LN stack hands the head a stream whose norm grows with depth",
            rtol=1e-9, atol=1e-10)
    t.check(t.drive(model, str(depth + 1), h), F.linear(h, w[f"{depth + 1}.weight"], w[f"{depth + 1}.bias"]),
            f"{part_label(model, str(depth + 1))}(x)", f"model[{depth + 1}] must be the head Linear({width}, {d_out})",
            rtol=1e-9, atol=1e-10)
    if model.module(str(depth + 2)) is not None:
        t.fail(f"{model.label}: model[{depth + 2}] ({_entry(model, str(depth + 2))}) should not exist; the model ends "
               "with the head (cross_entropy applies the softmax).")
    return model


@test(5, 2, "plain_mlp: depth blocks without shortcut, a final LayerNorm and a head")
def plain_structure(t: Trial):
    d_in, width, d_out, depth = t.size(5, 9), t.size(11, 15), t.size(3, 5), t.size(3, 5)
    model = _check_layers(t, "plain_mlp", d_in, width, d_out, depth, shortcut=False)
    # what behaviour cannot show (the structure report): a shortcut kept but never used, extra parameters
    for l in range(depth):
        if model.module(f"{l}.shortcut") is not None:
            t.fail(f"{model.label}: block {l} has a shortcut; a plain block is ffn(ln(x)), nothing added.")
    want = _block_count(d_in, width) + (depth - 1) * _block_count(width, width) + 2 * width + width * d_out + d_out
    got = model.structure.get("parameters")
    if got != want:
        t.fail(f"{model.label} has {got} parameters, expected {want}: the blocks, the final LayerNorm and the head only.")


@test(5, 3, "residual_mlp: blocks with a projection only where the width changes")
def residual_structure(t: Trial):
    d_out, depth = t.size(3, 5), t.size(3, 5)
    width = t.size(11, 15)
    for d_in in (t.size(5, 9), width):
        model = _check_layers(t, "residual_mlp", d_in, width, d_out, depth, shortcut=True)
        # what behaviour cannot show (the structure report): parameters that change no output
        want = (_block_count(d_in, width) + (d_in != width) * d_in * width
                + (depth - 1) * _block_count(width, width) + 2 * width + width * d_out + d_out)
        got = model.structure.get("parameters")
        if got != want:
            t.fail(f"{model.label} has {got} parameters, expected {want}: blocks (with one projection where the "
                   "width changes), the final LayerNorm and the head only.")


# ------------------------------------------------------------------ forward passes

def _weights(t: Trial, d_in: int, width: int, d_out: int, depth: int, project: bool) -> dict:
    w = {}
    for l in range(depth):
        d = d_in if l == 0 else width
        w |= {f"{l}.ln.weight": 1 + t.randn(d, dtype=F64, scale=0.3), f"{l}.ln.bias": t.randn(d, dtype=F64, scale=0.3),
              **ffn_weights(t, d, width, width, f"{l}.ffn")}
    if project:
        w["0.shortcut.proj.weight"] = t.randn(width, d_in, dtype=F64, scale=1 / math.sqrt(d_in))
    w |= {f"{depth}.weight": 1 + t.randn(width, dtype=F64, scale=0.3), f"{depth}.bias": t.randn(width, dtype=F64, scale=0.3),
          f"{depth + 1}.weight": t.randn(d_out, width, dtype=F64, scale=1 / math.sqrt(width)),
          f"{depth + 1}.bias": t.randn(d_out, dtype=F64, scale=0.1)}
    return w


def _forward(w: dict, x, depth: int, alpha=1.0, scale=1.0, shortcut=True, branch_ln=True, final_ln=True,
             first_alpha=None):
    """The model's output computed here; the keyword switches give the wrong variants
    (first_alpha: the first block's shortcut factor, when it differs from alpha)."""
    def ln(h, key):
        return F.layer_norm(h, h.shape[-1:], w[f"{key}.weight"], w[f"{key}.bias"])

    for l in range(depth):
        ffn = lambda h: ffn_of(w, h, f"{l}.ffn")
        skip = x @ w["0.shortcut.proj.weight"].T if (l == 0 and "0.shortcut.proj.weight" in w) else x
        factor = first_alpha if l == 0 and first_alpha is not None else alpha
        x = (factor * skip if shortcut else 0) + scale * ffn(ln(x, f"{l}.ln") if branch_ln else x)
    if final_ln:
        x = ln(x, str(depth))
    return F.linear(x, w[f"{depth + 1}.weight"], w[f"{depth + 1}.bias"])


def _fit(model, w: dict, depth: int) -> tuple[dict, bool]:
    """The weights moved to the model's own layout, and whether it has a final LayerNorm.

    A missing final LayerNorm or an extra identity-width projection is the structure test's to
    catch; here they are worked around (head found where it is, extra projections set to I), so
    that each mistake costs only its own test.
    """
    w = dict(w)
    top = [m for m in model.structure.get("modules", []) if m.get("path", "").isdigit()]
    final_ln = len(top) == depth + 2 and top[depth].get("base") == "LayerNorm"
    if not final_ln:
        for key in (f"{depth}.weight", f"{depth}.bias"):
            w.pop(key)
        w[f"{len(top) - 1}.weight"], w[f"{len(top) - 1}.bias"] = w.pop(f"{depth + 1}.weight"), w.pop(f"{depth + 1}.bias")
    for l in range(1, depth):
        proj = model.module(f"{l}.shortcut.proj")
        width = len(w[f"{l}.ffn.0.bias"])     # sized here, never by what the child reported
        if proj is not None and proj.get("base") == "Linear" and proj.get("in_features") == proj.get("out_features") == width:
            w[f"{l}.shortcut.proj.weight"] = torch.eye(width, dtype=F64)
    return w, final_ln


def _run(t: Trial, builder: str, w: dict, x, *dims: int, **kwargs):
    """(model, its output on x, whether it has a final LayerNorm) for builder(*dims, **kwargs), weights w loaded."""
    depth = dims[3]
    model = t.new(builder, *dims, double=True, **kwargs)
    loaded, final_ln = _fit(model, w, depth)
    t.load(model, loaded)
    return model, t.tensor(t.invoke(model, x).result, f"{model.label}(x)"), final_ln


def _drawn(t: Trial, project: bool) -> tuple[tuple[int, int, int, int], dict, torch.Tensor]:
    """Random sizes (d_in, width, d_out, depth = 3), float64 weights for them, and an input batch."""
    dims = (t.size(5, 9), t.size(11, 15), t.size(3, 5), 3)
    return dims, _weights(t, *dims, project=project), t.randn(t.size(5, 9), dims[0], dtype=F64)


def _check_forward(t: Trial, builder: str, project: bool, why: str, right: dict, wrong: list[tuple[str, dict]],
                   **build_kwargs):
    """builder(*dims, **build_kwargs) with known weights against _forward(**right); each wrong variant
    _forward(**kwargs) names its misconception when the output matches it instead."""
    dims, w, x = _drawn(t, project)
    model, out, final_ln = _run(t, builder, w, x, *dims, **build_kwargs)
    with torch.no_grad():
        want = _forward(w, x, dims[3], final_ln=final_ln, **right)
        alternatives = [(message, _forward(w, x, dims[3], final_ln=final_ln, **kwargs)) for message, kwargs in wrong]
    t.check(out, want, f"{model.label}(x)", why, rtol=1e-7, atol=1e-9, alternatives=alternatives)


@test(5, 2, "plain_mlp computes ffn(ln(x)) in every block, with nothing added")
def plain_forward(t: Trial):
    _check_forward(t, "plain_mlp", False, "a plain block is x -> ffn(ln(x)); no shortcut, no add",
                   {"shortcut": False},
                   [("the LayerNorm is not applied: a block is ffn(ln(x))", {"shortcut": False, "branch_ln": False})])


@test(5, 3, "residual_mlp computes shortcut(x) + ffn(ln(x)) (Pre-LN) and a final LayerNorm")
def residual_forward(t: Trial):
    _check_forward(t, "residual_mlp", True, "each block is shortcut(x) + ffn(ln(x)), then LayerNorm and the head", {},
                   [("the shortcut is missing: each block must add its input back (residual_add)", {"shortcut": False}),
                    ("the LayerNorm is not applied to the branch input: ffn(ln(x))", {"branch_ln": False})])


@test(5, 3, "alpha scales the shortcut and branch_scale the branch")
def residual_scaled(t: Trial):
    # multiples of 2**-10 (exact in float32 and float16): a model that keeps alpha as a float32 tensor
    # holds exactly the value the expected output is computed with
    alpha, scale = (round(t.uniform(*bounds) * 1024) / 1024 for bounds in ((0.3, 0.7), (1.5, 3.0)))
    _check_forward(
        t, "residual_mlp", True, f"with alpha={alpha:.3g}, branch_scale={scale:.3g} each block is "
        "alpha * shortcut(x) + branch_scale * ffn(ln(x))", {"alpha": alpha, "scale": scale},
        [("scaling the branch instead of the shortcut: alpha multiplies shortcut(x), branch_scale multiplies "
          "ffn(ln(x))", {"alpha": 1.0, "scale": alpha * scale}),
         ("alpha and branch_scale are swapped: alpha multiplies shortcut(x), branch_scale multiplies ffn(ln(x))",
          {"alpha": scale, "scale": alpha}),
         ("alpha is ignored: the shortcut is not scaled", {"alpha": 1.0, "scale": scale}),
         ("branch_scale is ignored", {"alpha": alpha, "scale": 1.0}),
         ("alpha is not applied to the first block's projected shortcut",
          {"alpha": alpha, "scale": scale, "first_alpha": 1.0})],
        alpha=alpha, branch_scale=scale)


@test(5, 1, "zero_init=True starts every branch's last Linear at zero, so that each block starts as its shortcut")
def residual_zero_init(t: Trial):
    # by the branches' last Linear alone, called by its path (ffn[2]) on the grader's input: zero weight and bias
    # map every input to zero. A block's output with a zero branch is its shortcut only if the block adds one,
    # which residual_forward judges; a test of that output here would pay a block that special-cases a zero
    # ffn[2] (red team 37), and of ffn's own output a branch whose forward answers zero (red team 39)
    d_in, width, d_out, depth = t.size(5, 9), t.size(11, 15), t.size(3, 5), 3
    for flag in (True, False):
        model = t.new("residual_mlp", d_in, width, d_out, depth, zero_init=flag, double=True)
        for l in range(depth):
            out = t.drive(model, f"{l}.ffn.2", t.randn(t.size(2, 5), width, dtype=F64))
            if flag and torch.count_nonzero(out):
                t.fail(f"{part_label(model, f'{l}.ffn.2')}(h) is not zero: with zero_init=True each branch's last "
                       "Linear (ffn[2]) must start with zero weight and bias, so that every block starts as its "
                       "shortcut.")
            if not flag and not torch.count_nonzero(out):
                t.fail(f"{part_label(model, f'{l}.ffn.2')}(h) is zero with zero_init=False, which must keep PyTorch's "
                       "default initialisation (zero_init applied regardless of the flag).")


# ------------------------------------------------------------------ training

def _sgd_losses(w1, b1, w2, b2, X, y, steps, lr, *, momentum=0.9, zero_grad=True, step=True, after=False,
                batch=None, seed=0):
    """SGD with momentum on Sequential(Linear, ReLU, Linear), computed here, on the whole set or (batch) on the
    contract's minibatches: idx = torch.randperm(len(X), generator=gen)[:batch], gen seeded once with seed;
    switches for mistakes."""
    params = [p.clone().requires_grad_(True) for p in (w1, b1, w2, b2)]
    bufs, losses = [None] * 4, []
    gen = torch.Generator().manual_seed(seed)
    loss_of = lambda idx: F.cross_entropy(F.linear(F.relu(F.linear(X[idx], params[0], params[1])), params[2],
                                                   params[3]), y[idx])
    for _ in range(steps):
        idx = slice(None) if batch is None else torch.randperm(len(X), generator=gen)[:batch]
        loss = loss_of(idx)
        if zero_grad:
            for p in params:
                p.grad = None
        loss.backward()
        with torch.no_grad():
            for i, p in enumerate(params):
                if step:
                    bufs[i] = p.grad.clone() if bufs[i] is None or momentum == 0 else momentum * bufs[i] + p.grad
                    p -= lr * bufs[i]
        losses.append(loss_of(idx).item() if after else loss.item())
    return losses


@test(5, 3, "train: SGD with momentum 0.9, zero_grad, backward and step on every batch")
def train_updates(t: Trial):
    n, d, k, hidden = t.size(15, 25), t.size(3, 7), t.size(3, 5), t.size(5, 9)
    tensors = [t.randn(hidden, d, scale=0.6), t.randn(hidden, scale=0.3), t.randn(k, hidden, scale=0.6), t.randn(k, scale=0.3)]
    X = t.randn(n, d)
    y = torch.randint(0, k, (n,), generator=t.gen)
    steps, lr, seed = 5, t.uniform(0.05, 0.2), t.rng.randrange(1000)
    what = f"train(model, X of shape {tuple(X.shape)}, y, steps={steps}, lr={lr:.3g}, batch={n + 3}, seed={seed})"
    obs = t.call("train", spec("mlp", *tensors), X, y, steps, lr=lr, batch=n + 3, seed=seed, readback=[1, 2])
    got = t.numbers(obs.result, what, steps, kinds=("list",))
    want = _sgd_losses(*tensors, X, y, steps, lr)
    t.check(got, want, what, "with batch >= len(X) every step sees the whole set, so the losses must follow "
            "full-batch SGD (lr, momentum=0.9); each entry is the loss before that step's update", rtol=1e-4, atol=1e-6,
            alternatives=lambda: [
                ("optimizer step forgotten: the parameters never change, so neither does the loss (opt.step() after "
                 "loss.backward(), or p -= lr * v by hand)",
                 _sgd_losses(*tensors, X, y, steps, lr, step=False)),
                ("zero_grad forgotten: gradients pile up across steps (opt.zero_grad() before backward; "
                 "torch.autograd.grad returns fresh ones)",
                 _sgd_losses(*tensors, X, y, steps, lr, zero_grad=False)),
                ("no momentum: v = 0.9 * v + g, then p -= lr * v (what torch.optim.SGD(params, lr=lr, momentum=0.9) does)",
                 _sgd_losses(*tensors, X, y, steps, lr, momentum=0.0)),
                ("lr ignored: the step size must be the lr argument",
                 _sgd_losses(*tensors, X, y, steps, 0.05)),
                ("each entry is the loss after the update; record the loss of the batch before stepping",
                 _sgd_losses(*tensors, X, y, steps, lr, after=True))])
    for name, before, after in (("X", X, obs.args_after[1]), ("y", y, obs.args_after[2])):
        if not torch.equal(t.tensor(after, name), before):
            t.fail(f"train changed its input {name}; the data must be left as it was.")
    batch = t.rng.randrange(3, n - 5)
    what = f"train(model, X of shape {tuple(X.shape)}, y, steps={steps}, lr={lr:.3g}, batch={batch}, seed={seed})"
    got = t.numbers(t.call("train", spec("mlp", *tensors), X, y, steps, lr=lr, batch=batch, seed=seed).result, what,
                    steps, kinds=("list",))
    t.check(got, _sgd_losses(*tensors, X, y, steps, lr, batch=batch, seed=seed), what,
            "each step draws idx = torch.randperm(len(X), generator=gen)[:batch] from one torch.Generator seeded "
            "with seed, and steps on the loss of those examples", rtol=1e-4, atol=1e-6,
            alternatives=lambda: [("batch ignored: every step used the whole set; draw `batch` examples each step",
                                   _sgd_losses(*tensors, X, y, steps, lr))])


def teacher_problem(gen: torch.Generator, n: int, d_in: int, k: int):
    """Gaussian inputs labelled by a random linear teacher: learnable, with classes of similar size.
    (X (n, d_in) float32, y (n,)) for train, and (X_held, y_held), n more examples of the same teacher
    that train never sees."""
    X = torch.randn(2 * n, d_in, generator=gen, dtype=torch.float64).float()
    y = (X @ torch.randn(d_in, k, generator=gen, dtype=torch.float64).float()).argmax(1)
    return X[:n], y[:n], X[n:], y[n:]


def _loss(t: Trial, model, X, y, data: str = "X") -> float:
    """The mean cross-entropy of the model's logits on (X, y), computed here; finite, or the test fails."""
    out = t.tensor(t.invoke(model, X).result, f"{model.label}({data})")
    if out.shape != (len(X), int(y.max()) + 1):
        t.fail(f"{model.label}({data}) returned shape {tuple(out.shape)}, expected {(len(X), int(y.max()) + 1)}: one "
               "logit per class per example.")
    if not torch.isfinite(out).all():
        t.fail(f"{model.label}({data}) returned logits that are not finite (nan or inf): a trained model's "
               "parameters and outputs must stay finite (a learning rate far too large, or a division by zero?).")
    return F.cross_entropy(out.double(), y).item()


def _train(t: Trial, model, X, y, steps: int, lr: float, batch: int, seed: int) -> list[float]:
    what = f"train({model.label}, X, y, steps={steps}, lr={lr}, batch={batch}, seed={seed})"
    losses = t.numbers(t.call("train", model, X, y, steps, lr=lr, batch=batch, seed=seed).result, what, steps,
                       kinds=("list",))
    if not all(math.isfinite(v) for v in losses):
        t.fail(f"{what} returned a non-finite loss ({', '.join(f'{v:.3g}' for v in losses if not math.isfinite(v))}).")
    return losses


# The training tests' problems, steps and bounds. Every step costs the same whatever the batch (models
# this small are all per-operation overhead), so each run trains on the whole set (batch = n) at lr 0.1:
# a few full-batch steps separate right from wrong more clearly than many noisy minibatch ones. The
# losses on new examples are what catch a forward that memorised train's own X. The figures quoted are
# the worst cases of benchmarks/part5_margins.py, which runs these tests' own functions with a grading's
# draws over grading seeds 1..N (N = 1000 for the small model, 600 for the deep residual runs of the two
# variants closest to its bound, 200 for the rest), as fractions.
SMALL = dict(n=512, width=16, depth=2, steps=25, lr=0.1)           # d_in and k drawn per run; the grader's
#                       own residual_mlp (with 15 steps, train without zero_grad lowered the loss on 2 seeds of 1000)
DEEP = dict(n=256, d_in=16, width=32, k=4, depth=16, steps=16, lr=0.1)   # plain_mlp at depth 16
#                       (with 12 steps, a plain block that adds x stalled on 1 seed of 300)
# residual_mlp at depth 16, on more examples (with 256, a first block without its shortcut fitted them past
# generalising), and most of RUNS runs on fresh draws decide (deep_residual_runs): one run of a first block
# without its shortcut (a structure mistake, which keeps this test) and one of a projection on every shortcut
# (which loses it) overlap, each on the wrong side of the bound about once in 300 runs
RESIDUAL = dict(DEEP, n=1024)
RUNS = 3
# plain_mlp at depth 2, the deep plain test's control, on DEEP's teacher with more examples: judged on new
# examples, it must learn the problem, not fit its training set (24 steps fit 256 examples past generalising)
SHALLOW = dict(DEEP, n=1024, steps=24, depth=2)
SMALL_FALL = 0.7      # training loss / its start: reference <= 0.10, no momentum <= 0.49, lr ignored (0.05)
#                       <= 0.18; zero_grad forgotten >= 3.3 (diverges)
HELD_SMALL = 0.85     # loss on new examples / its start: reference <= 0.18, no momentum <= 0.53; never stepped:
#                       exactly 1
DEEP_FIT = 0.55       # training loss / chance, each run: reference <= 0.12, first block without its shortcut
#                       <= 0.52; a projection on every shortcut >= 0.48 (most runs failed on every seed), the
#                       shortcut missing >= 0.83
HELD_DEEP = 0.9       # loss on new examples / its start, each run: reference <= 0.20, first block without its
#                       shortcut <= 0.52; never stepped (the forwards that memorise train's X): exactly 1
HELD_SHALLOW = 0.8    # plain at depth 2, loss on new examples / its start: reference <= 0.46, without the final
#                       LayerNorm <= 0.55; never stepped (a forward that memorises train's X in the shallow model
#                       only): exactly 1
PLAIN_STALL = 0.7     # plain at depth 16, training loss / chance: reference >= 0.91, without the final LayerNorm
#                       >= 0.84; a plain block that adds x where it can <= 0.41


SHALLOW_TWIN = 3      # the depth of the builder's model that each model the grader trains is compared with
SLOPE_RTOL, SLOPE_ATOL = 0.2, 2e-3    # a gradient against its forward's slope (specs._slopes), over 200 seeds
#                       (benchmarks/part5_slopes.py), at the first step and the later one: the reference's worst is
#                       under 0.12 of this tolerance, honest variants' under 0.13, a plain stack with ReLU (a mistake
#                       of plain_forward's) 0.54; a head that passes half its gradient is 2.5 times over it, and one
#                       that passes a millionth of it once a backward went through it 5 times at the later step


def _data(value: dict):
    """A value the grader's own code returned from the child as plain data (numbers, bools, tensors, lists), or None."""
    kind = value.get("kind")
    if kind in ("number", "bool"):
        return value.get("value")
    if kind in ("list", "tuple"):
        return [_data(v) for v in value.get("items", [])]
    if kind == "tensor" and type(value.get("value")) is torch.Tensor:
        return value["value"]
    return None


def _floats(values) -> bool:
    return isinstance(values, list) and all(type(v) is float for v in values)


def _as_returned(t: Trial, spec_name: str, value, shaped) -> None:
    """Fails unless what the grader's own code returned from the child is a list that shaped(it) accepts."""
    if not (isinstance(value, list) and shaped(value)):
        t.fail(f"the grader's {spec_name} came back from your code's process as something else than it returns: "
               "something in the process changed it.", misconception=None)


def _shallow_seen(t: Trial, builder: str, dims: tuple[int, int, int, int], X) -> tuple:
    """(builder's model at depth SHALLOW_TWIN, X, what its layers computed on X, the seed they ran with), taken
    before the deep model is built (specs.layer_outputs)."""
    shallow, seed = t.new(builder, *dims[:3], SHALLOW_TWIN), t.rng.getrandbits(31)
    seen = _data(t.run(["layer_outputs"], shallow, X, seed).result)
    _as_returned(t, "layer_outputs", seen, lambda v: all(
        isinstance(pair, list) and len(pair) == 2 and all(type(h) is torch.Tensor for h in pair) for pair in v))
    return shallow, X, seen, seed


def _built_as_at_any_depth(t: Trial, model, depth: int, shallow, X, seen: list, seed: int, when: str = "") -> None:
    """Fails unless model, a builder's at `depth`, is its model at depth SHALLOW_TWIN (shallow) with more blocks:
    as many layers besides the blocks, a forward that is its layers in order, and each layer computing, given
    the weights of one of shallow's, what that layer computed before model was built (specs.layers: seen). The
    deep tests train the model a builder makes at their depth; these are what makes it the model the tests of
    smaller depths judged. They are checked before training and again after it (when: "after training, "), so
    that a model that changes as it trains is judged as it ends, too."""
    if not seen:          # the shallow model's layers do not apply in order: a layout the structure tests judge
        return
    found = _data(t.run(["layers"], model, shallow, X, depth, SHALLOW_TWIN, seen, seed).result)
    if found == []:
        return
    _as_returned(t, "layers", found, lambda v: len(v) == 4 and _floats(v[:2]) and isinstance(v[2], bool)
                 and _floats(v[3]))
    mine, theirs, chain, differ = int(found[0]), int(found[1]), found[2], [int(i) for i in found[3]]
    if mine - depth != theirs - SHALLOW_TWIN:
        t.fail(f"{when}{model.label} has {mine} top-level layers, and {shallow.label} has {theirs}: at depth {depth} a "
               f"model must be built as at any depth, {depth - SHALLOW_TWIN} blocks more and the same other layers. "
               "The grader trains what the builder makes at this depth.", misconception=None)
    if not chain:
        t.fail(f"{when}{model.label}(X) is not its layers applied in order, model[0] first: the model must compute its "
               "blocks, the final LayerNorm and the head one after the other, as the contract lays them out.",
               misconception=None)
    if differ:
        t.fail(f"{when}{part_label(model, str(differ[0]))} computes otherwise than every layer of {shallow.label}, "
               "built before it, given the same weights and input: what a layer computes must not depend on the depth "
               "of the model it sits in, nor change when a deeper one is built or as it trains.", misconception=None)


def _follows_its_forward(t: Trial, label: str, slopes: list) -> None:
    """Fails unless each [step, gradient along v, the forward's slope along v] that specs.fit reports agrees."""
    for step, reported, measured in slopes:
        if not abs(reported - measured) <= SLOPE_ATOL + SLOPE_RTOL * max(abs(reported), abs(measured)):
            t.fail(f"the gradient of {label}'s loss that autograd gives is not the slope of what its forward computes: "
                   f"at training step {int(step) + 1}, along a direction in its parameters the gradient says "
                   f"{reported:.4g}, while the loss changes at {measured:.4g} per unit of step (central differences, "
                   f"step {H}). Training follows the gradient, "
                   "so a backward that differs from the forward (a detach, a gradient hook, a custom autograd "
                   "Function) trains something else than what the model computes.", misconception=None)


def _trained(t: Trial, builder: str, size: dict, d_in: int, k: int, before: bool = False,
             own_train: bool = False) -> tuple[str, list[float]]:
    """The label of builder(d_in, size's width, k, size's depth) and its losses [on X, on X_held] after size's
    steps of full-batch training (size's lr) on a fresh teacher problem of size's n examples; before=True: the
    two losses at the start first. own_train: the grader's own model of that name (specs.residual_mlp) trained by
    the submission's train (the test judges train: the model cannot train itself, whatever hooks a builder of the
    submission's would give it), else the submission's model, its Linears and LayerNorms initialised as PyTorch
    does (specs.initialise), trained by the grader's (specs.fit: the test judges the model), once it is found built
    as at any depth, failing where its backward does not follow its forward or it sets its own parameters."""
    X, y, X_held, y_held = teacher_problem(t.gen, size["n"], d_in, k)
    dims = (d_in, size["width"], k, size["depth"])
    shallow = None if own_train else _shallow_seen(t, builder, dims, X[:64].clone())   # 64 rows tell layers apart
    model = t.new(spec(builder, *dims)) if own_train else t.new(builder, *dims)
    if not own_train:
        seed = t.rng.getrandbits(63)
        t.run(["initialise"], model, seed % 2 ** 31)
    measure = lambda: [_loss(t, model, X, y), _loss(t, model, X_held, y_held, "X_held")]
    start = measure() if before else []
    if own_train:
        _train(t, model, X, y, size["steps"], size["lr"], size["n"], t.rng.randrange(1000))
    else:
        _built_as_at_any_depth(t, model, dims[3], *shallow)
        run = _data(t.run(["trainer"], model, X, y, size["steps"], size["lr"], seed).result)
        _as_returned(t, "trainer", run, lambda v: len(v) == 3 and isinstance(v[1], list)
                     and all(_floats(check) and len(check) == 3 for check in v[1]) and _floats(v[2:]))
        if run[2] >= 0:
            t.fail(f"at training step {int(run[2]) + 1}, {model.label}'s forward or backward changed its own "
                   "parameters: training moves them, by the gradient, and a model that sets them itself (back to "
                   "where they started, say) trains something else than the model it computes.", misconception=None)
        _follows_its_forward(t, model.label, run[1])
        _built_as_at_any_depth(t, model, dims[3], *shallow, when="after training, ")
    return model.label, start + measure()


# Each training test's runs, apart from its bounds: what the test judges, and what benchmarks/part5_margins.py
# measures over many seeds with the draws of a grading (size: the test's problem, or one to try instead).

def small_run(t: Trial, size: dict = SMALL) -> tuple[str, list[float]]:
    """train_lowers_loss: the grader's residual_mlp at size's depth trained by the submission's train; its losses
    [before, held-out before, after, held-out after]."""
    d_in, k = t.size(7, 11), t.size(3, 5)
    return _trained(t, "residual_mlp", size, d_in, k, before=True, own_train=True)


def deep_residual_runs(t: Trial, size: dict = RESIDUAL) -> list[tuple[str, list[float], str | None]]:
    """deep_residual_trains: residual_mlp at size's depth trained by the grader on a fresh problem and
    initialisation, again until most of RUNS runs passed or most failed, unless the first passed within half
    of each bound (every run of the reference did, none of a wrong variant's); for each run, (label, losses as
    small_run's, what was wrong or None). The test passes where most of them passed (deep_residual_passed)."""
    runs = []
    while True:
        label, losses = _trained(t, "residual_mlp", size, size["d_in"], size["k"], before=True)
        runs.append((label, losses, _deep_residual_wrong(losses, size)))
        passed = sum(wrong is None for *_, wrong in runs)
        if max(passed, len(runs) - passed) > RUNS // 2 or \
                (len(runs) == 1 and _deep_residual_wrong(losses, size, margin=0.5) is None):
            return runs


def deep_residual_passed(runs: list[tuple[str, list[float], str | None]]) -> bool:
    """deep_residual_trains' verdict on deep_residual_runs: most of the runs passed."""
    return 2 * sum(wrong is None for *_, wrong in runs) > len(runs)


def _deep_residual_wrong(losses: list[float], size: dict, margin: float = 1.0) -> str | None:
    """What is wrong with one run of deep_residual_trains, in words, or None; margin < 1: against that
    fraction of each bound."""
    _, held_before, loss, held = losses
    chance = math.log(size["k"])
    if not loss <= margin * DEEP_FIT * chance:       # a nan fails too
        return (f"training loss {loss:.3f}, where chance is ln {size['k']} = {chance:.3f} and the reference's stays "
                f"below {DEEP_FIT * chance:.3f}")
    if not held <= margin * HELD_DEEP * held_before:
        return (f"loss {held:.3f} on new examples of the same problem, which training never saw (its start: "
                f"{held_before:.3f}), where the reference's falls below {HELD_DEEP} of its start: a model that learned "
                "the problem, not the training set, does as well on new examples")
    return None


def deep_plain_runs(t: Trial, deep: dict = DEEP, shallow: dict = SHALLOW) -> tuple[str, float, str, list[float]]:
    """deep_plain_stalls: (label, training loss) of plain_mlp at deep's depth, then (label, held-out losses
    [before, after]) of plain_mlp at shallow's depth, its control; both trained by the grader."""
    label, (loss, _) = _trained(t, "plain_mlp", deep, deep["d_in"], deep["k"])
    shallow_label, (_, held_before, _, held) = _trained(t, "plain_mlp", shallow, shallow["d_in"], shallow["k"],
                                                        before=True)
    return label, loss, shallow_label, [held_before, held]


# how the tests that judge a model (not train) train it: specs.fit, the contract's train on the whole set
GRADER_TRAINING = "the grader's own training (train's contract: SGD with momentum 0.9, the whole set at each step)"


def _generalises(t: Trial, label: str, steps: int, held: float, bound: float, start: float, by: str = "train",
                 then: str = ". A model that learned the problem, not the training set, does as well on new "
                             "examples.") -> None:
    """Fails unless `held`, the loss on new examples, fell below bound * `start` (the untrained model's);
    `by`: what trained the model; `then`: what the message says after the figures."""
    if not held <= bound * start:       # a nan fails too
        t.fail(f"after {steps} steps of {by}, {label} has loss {held:.3f} on new examples of the same problem, "
               f"which training never saw (its start: {start:.3f}); the reference's falls below {bound} of its start "
               f"on every seed{then}")


@test(5, 2, "train lowers the loss of a small residual MLP the grader builds", slow=True)
def train_lowers_loss(t: Trial):
    steps = SMALL["steps"]
    label, (before, held_before, after, held_after) = small_run(t)
    if after > SMALL_FALL * before:
        t.fail(f"after train(..., steps={steps}) the loss of {label} on its training set went from {before:.3f} "
               f"to {after:.3f}; in the reference {steps} steps cut it to under 0.3 of its start on every seed. Check "
               "that train updates the parameters of the model it was given, with fresh gradients each step, and uses "
               "X[idx] and y[idx] of the same idx.")
    _generalises(t, label, steps, held_after, HELD_SMALL, held_before)
    t.note(f"training loss {before:.3f} -> {after:.3f}, on new examples {held_before:.3f} -> {held_after:.3f}")


@test(5, 2, "at depth 16 residual_mlp trains", slow=True)
def deep_residual_trains(t: Trial):
    runs = deep_residual_runs(t)
    wrong = [w for *_, w in runs if w is not None]
    label = runs[0][0]
    if not deep_residual_passed(runs):
        t.fail(f"{label} after {RESIDUAL['steps']} steps of {GRADER_TRAINING}, in {len(wrong)} of {len(runs)} runs on "
               f"fresh problems: {'; '.join(wrong)}. The reference passes on every seed. A residual stack this deep "
               "trains only if every block adds its input back unscaled (alpha=1, the identity where the width stays "
               "the same) and the branches see ln(x).")
    chance = math.log(RESIDUAL["k"])
    t.note(f"trained by the grader, {len(runs)} run{'s' * (len(runs) > 1)}: training loss "
           f"{', '.join(f'{losses[2]:.3f}' for _, losses, _ in runs)}, on new examples "
           f"{', '.join(f'{losses[3]:.3f}' for _, losses, _ in runs)} (chance {chance:.3f})")


@test(5, 2, "at depth 16 plain_mlp stays near chance", slow=True)
def deep_plain_stalls(t: Trial):
    chance = math.log(DEEP["k"])
    label, loss, shallow_label, (held_before, held) = deep_plain_runs(t)
    # A stall says something about depth only where the same training teaches the same plain network, shallow,
    # the problem: judged on examples training never saw, which no memorised answer reaches.
    _generalises(t, shallow_label, SHALLOW["steps"], held, HELD_SHALLOW, held_before, GRADER_TRAINING,
                 "; a two-block plain network learns this problem in the reference, so check plain_mlp before "
                 "reading anything into the deep one")
    if loss < PLAIN_STALL * chance:
        t.fail(f"{label} trained by {GRADER_TRAINING} to loss {loss:.3f} in {DEEP['steps']} steps (chance "
               f"{chance:.3f}); a plain stack this deep stays near chance in the reference. Does your plain block add "
               "its input back (a shortcut)?")
    t.note(f"trained by the grader: training loss {loss:.3f} (chance {chance:.3f}); the two-block control on new "
           f"examples {held_before:.3f} -> {held:.3f}")


# ------------------------------------------------------------------ gradient norms

@test(5, 2, "grad_norms: ||dL/dx_l|| at every block's input and after the last block")
def grad_norms_values(t: Trial):
    d, k, depth = t.size(5, 9), t.size(3, 5), t.size(3, 6)
    shortcut = t.choice([True, False])
    tensors = []
    for _ in range(depth):
        tensors += [t.randn(d, d, scale=1.2 / math.sqrt(d)), t.randn(d, scale=0.1)]
    tensors += [t.randn(k, d, scale=1 / math.sqrt(d)), t.randn(k, scale=0.1)]
    X = t.randn(t.size(9, 15), d)
    y = torch.randint(0, k, (len(X),), generator=t.gen)
    model_spec = spec("stack", shortcut, *tensors)
    what = f"grad_norms({depth} tanh blocks {'with' if shortcut else 'without'} shortcut + head, X, y, depth={depth})"
    obs = t.call("grad_norms", model_spec, X, y, depth, readback=[1])
    got = t.numbers(obs.result, what, depth + 1, kinds=("list",))
    model = t.build(model_spec)
    want = t.ref.grad_norms(model, X, y, depth)
    t.check(got, want, what, "entry l is the norm of dL/dx_l, x_l the input of model[l] (x_0 = X), L the mean "
            "cross-entropy", rtol=1e-4, atol=1e-9, alternatives=[
                ("the entries are in reverse order: entry 0 belongs to x_0 = X", want[::-1]),
                ("summed cross-entropy instead of the mean (F.cross_entropy's default is the mean)",
                 [v * len(X) for v in want])])
    if not torch.equal(t.tensor(obs.args_after[1], "X"), X):
        t.fail(f"{what} changed X; work on a detached copy.")
