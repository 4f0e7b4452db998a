"""Part 3 of residual-connections' hidden tests: gradient_norms through stacks of random branches."""
from __future__ import annotations

import math

import torch

from ...kit import Trial
from .suite import F64, spec, test


def _tanh_branches(t: Trial, depth: int, d: int, dtype: torch.dtype = torch.float32, gain: float = 1.0) -> list:
    return [spec("branch", "tanh", t.randn(d, d, dtype=dtype, scale=gain / math.sqrt(d)), t.randn(d, dtype=dtype, scale=0.1))
            for _ in range(depth)]


def _norms(t: Trial, x0: torch.Tensor, specs: list, what: str, **kwargs) -> torch.Tensor:
    obs = t.call("gradient_norms", x0, specs, readback=[0], **kwargs)
    out = t.tensor(obs.result, what)
    t.check(t.tensor(obs.args_after[0], "x0"), x0, f"x0 after {what}",
            "gradient_norms must not modify x0 (work on a detached copy)", exact=True)
    return out


def _cut(depth: int) -> tuple:
    """The norms of a stream detached between blocks: only x_L has a gradient."""
    return ("detached gradient: only x_L has a gradient, every earlier entry is 0 (the stream was detached "
            "between blocks)", torch.tensor([0.0] * depth + [1.0], dtype=F64), "detached-gradient")


def _check_norms(t: Trial, x0: torch.Tensor, specs: list, what: str, why: str, extra=(), **kwargs):
    out = _norms(t, x0, specs, what, **kwargs)
    want = t.ref.gradient_norms(x0, [t.build(s) for s in specs], **kwargs)
    raw = want * math.sqrt(x0.numel())      # ||dL/dx_L|| = sqrt(numel) when L = x_L.sum()
    t.check(out, want, what, why, rtol=1e-5, atol=1e-12, alternatives=[
        *extra, _cut(len(specs)),
        ("not normalised: divide each norm by ||dL/dx_L||", raw, "norms-normalisation"),
        ("normalised by ||dL/dx_0|| instead of ||dL/dx_L||", want / want[0], "norms-normalisation"),
        ("the entries are in reverse order: entry 0 belongs to x_0, the last to x_L", want.flip(0),
         "norms-normalisation")])


@test(3, 2, "gradient_norms returns shape (L+1,), float64, ending in 1, and leaves x0 alone",
      misconception="norms-normalisation")
def norms_shape(t: Trial):
    depth, d = t.size(3, 7), t.size()
    x0 = t.randn(t.size(), d)
    what = f"gradient_norms(x0 of shape {tuple(x0.shape)}, {depth} tanh branches)"
    out = _norms(t, x0, _tanh_branches(t, depth, d), what)
    if out.shape != (depth + 1,):
        t.fail(f"{what} returned shape {tuple(out.shape)}, expected ({depth + 1},): one entry per x_0 ... x_L.")
    if out.dtype != F64:
        t.fail(f"{what} returned {str(out.dtype).removeprefix('torch.')}, expected float64 as the docstring says: in "
               "float32 a ratio like 0.5 ** 100 = 7.9e-31 underflows to 0 when it is squared inside the norm.",
               misconception="norms-underflow")
    t.check(out[-1], 1.0, f"the last entry of {what}", "the last entry is ||dL/dx_L|| / ||dL/dx_L|| = 1", rtol=1e-9)


@test(3, 3, "scaled shortcut with zero branches decays as alpha ** (L - l)")
def norms_decay(t: Trial):
    alpha, depth = t.uniform(0.3, 0.9), t.size(5, 41)
    x0 = t.randn(t.size())
    want = torch.tensor([alpha ** (depth - l) for l in range(depth + 1)], dtype=F64)
    what = f"gradient_norms(x0, {depth} zero branches, alpha={alpha:.4g})"
    out = _norms(t, x0, [spec("branch", "zero")] * depth, what, alpha=alpha)
    t.check(out, want, what, "with zero branches each block multiplies the gradient by alpha", rtol=1e-6,
            alternatives=[("scaled shortcut ignored: alpha was never applied", torch.ones(depth + 1, dtype=F64),
                           "scaled-shortcut-ignored"), _cut(depth),
                          ("the entries are in reverse order: entry 0 belongs to x_0", want.flip(0),
                           "norms-normalisation")])
    _autograd_only(t, depth, alpha)


def _autograd_only(t: Trial, depth: int, alpha: float):
    """The same depth and alpha with small tanh branches, in float64: only a gradient taken through the
    branches gives these norms (alpha ** (L - l) written down does not)."""
    d = t.size()
    x0 = t.randn(t.size(), d, dtype=F64)
    _check_norms(t, x0, _tanh_branches(t, depth, d, F64, gain=0.3),
                 f"gradient_norms(x0, {depth} small tanh branches, alpha={alpha:.4g})",
                 "with non-zero branches each block multiplies the gradient by alpha + F_l'(x_l): only autograd "
                 "through the whole stack gives these norms", alpha=alpha,
                 extra=[("the norms of zero branches: the branches' own gradient is missing (alpha ** (L - l) "
                         "written down, or the branches detached)",
                         torch.tensor([alpha ** (depth - l) for l in range(depth + 1)], dtype=F64),
                         "detached-gradient")])


@test(3, 2, "identity shortcut survives 100 layers")
def norms_depth_100(t: Trial):
    x0 = t.randn(t.size(), t.size())
    what = "gradient_norms(x0, 100 zero branches)"
    out = _norms(t, x0, [spec("branch", "zero")] * 100, what)
    t.check(out, torch.ones(101, dtype=F64), what,
            "with alpha = 1 the identity path alone carries the whole gradient: every entry is 1", rtol=1e-9,
            alternatives=[_cut(100)])
    _autograd_only(t, 100, 1.0)


@test(3, 4, "random tanh branches with random alpha match the reference")
def norms_random(t: Trial):
    for alpha in (1.0, t.uniform(0.5, 0.95)):
        depth, d = t.size(5, 9), t.size()
        x0 = t.randn(t.size(), d)
        specs = _tanh_branches(t, depth, d)
        ignored = ("scaled shortcut ignored: these are the norms with alpha = 1",
                   t.ref.gradient_norms(x0, [t.build(s) for s in specs]), "scaled-shortcut-ignored")
        _check_norms(t, x0, specs, f"gradient_norms(x0, {depth} tanh branches, alpha={alpha:.4g})",
                     "must match ||dL/dx_l|| / ||dL/dx_L|| computed by autograd through the whole stack "
                     "(a detached x_l cuts the gradient)", extra=[ignored] if alpha != 1.0 else [], alpha=alpha)


@test(3, 3, "plain stack (shortcut=False)")
def norms_plain(t: Trial):
    scales = [t.uniform(0.3, 1.5) for _ in range(t.size(3, 7))]
    want = torch.tensor([math.prod(scales[l:]) for l in range(len(scales) + 1)], dtype=F64)
    what = "gradient_norms(x0, branches c_l * x, shortcut=False)"
    out = _norms(t, t.randn(t.size()), [spec("branch", "scale", c) for c in scales], what, shortcut=False)
    t.check(out, want, what, "without a shortcut x_(l+1) = F_l(x_l): the gradient is the product of the c_l",
            rtol=1e-6, alternatives=[("shortcut=False ignored: the identity path is still there",
                                      torch.tensor([math.prod(1 + c for c in scales[l:]) for l in range(len(scales) + 1)],
                                                   dtype=F64), "shortcut-flag-ignored"), _cut(len(scales))])
    depth, d = t.size(3, 7), t.size()
    _check_norms(t, t.randn(d), _tanh_branches(t, depth, d), f"gradient_norms(x0, {depth} tanh branches, shortcut=False)",
                 "without a shortcut x_(l+1) = F_l(x_l)", shortcut=False)


@test(3, 1, "no path back: zero branches without a shortcut give zeros, not an error")
def norms_no_path(t: Trial):
    depth = t.size(3, 7)
    what = f"gradient_norms(x0, {depth} zero branches, shortcut=False)"
    out = _norms(t, t.randn(t.size()), [spec("branch", "zero")] * depth, what, shortcut=False)
    t.check(out, torch.tensor([0.0] * depth + [1.0], dtype=F64), what,
            "x_L does not depend on the earlier x_l, so their gradients are zero (and the last entry is 1)")
