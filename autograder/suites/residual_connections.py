"""Hidden tests of residual-connections (SPEC.md, assignment 1, parts 1 to 4).

Never shipped: the release, public tests and every output contain none of this.
Inputs are drawn per run from the grading seed; `t.ref` is the reference module
loaded from solutions/, and Part 4 compares with nn.TransformerEncoderLayer.
"""
from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import nn

from ..kit import Suite, Trial, describe, excerpt, shape_in

# Tests that rest on what the sandbox child reports besides returned values (errors raised,
# inputs after the call, gradients, the structure report): student code that reaches into the
# process could forge those, so the static policy holds them for review (docs/security.md).
SUITE = Suite("residual-connections", trusts_child={
    "residual_add_no_broadcasting", "residual_add_error_message", "residual_add_no_mutation",
    "residual_add_gradients", "residual_shape_mismatch", "shortcut_identity", "shortcut_projection", "ffn_layers",
    "norms_shape", "norms_decay", "norms_depth_100", "norms_random", "norms_plain", "norms_no_path",
    "block_parts", "block_bad_norm", "stream_norms"},
    held_by={"block_parts": {"transformer-class"}})
test = SUITE.test
F64 = torch.float64


def spec(*items) -> dict:
    return {"spec": list(items)}


# ===================================================================== Part 1

def _refused(t: Trial, xs: tuple, fs: tuple) -> dict:
    """residual_add on two shapes that must be refused; the ValueError it raised."""
    obs = t.call("residual_add", t.randn(*xs), t.randn(*fs), expect_error=True)
    if obs.error is None:
        t.fail(f"silent broadcasting: residual_add(x of shape {xs}, fx of shape {fs}) returned "
               f"{describe(obs.result)} instead of raising ValueError. PyTorch broadcasts quietly; "
               "compare x.shape == fx.shape yourself before adding.")
    if "ValueError" not in obs.error["is"]:
        t.fail(t.raised(f"residual_add(x of shape {xs}, fx of shape {fs})", obs.error)
               + "; expected your own ValueError naming both shapes.")
    return obs.error


@test(1, 2, "residual_add returns x + fx on odd shapes")
def residual_add_values(t: Trial):
    for ndim in (1, 2, 3, 4):
        shape = tuple(t.size(1 if ndim > 2 else 3) for _ in range(ndim))
        x, fx = t.randn(*shape), t.randn(*shape)
        what = f"residual_add(x, fx) with x and fx of shape {shape}"
        out = t.tensor(t.call("residual_add", x, fx).result, what)
        t.check(out, x + fx, what, "must be x + fx, element by element", exact=True,
                alternatives=[("returns x, not x + fx", x), ("returns fx, not x + fx", fx),
                              ("returns x - fx", x - fx)])


@test(1, 1, "residual_add keeps float64 and float32")
def residual_add_dtype(t: Trial):
    shape = (t.size(), t.size())
    for dtype in (F64, torch.float32):
        x, fx = t.randn(*shape, dtype=dtype), t.randn(*shape, dtype=dtype)
        what = f"residual_add on two {str(dtype)[6:]} tensors"
        out = t.tensor(t.call("residual_add", x, fx).result, what)
        if out.dtype != dtype:
            t.fail(f"{what} returned {str(out.dtype)[6:]}: the dtype changed (a .float(), .double() or "
                   "torch.tensor(...) copy?); keep the inputs' dtype.")
        t.check(out, x + fx, what, "must be x + fx at full precision", exact=True)


@test(1, 2, "residual_add refuses broadcastable shapes")
def residual_add_no_broadcasting(t: Trial):
    b, n, d = t.size(), t.size(), t.size(5)
    for xs, fs in [((b, n, 1), (b, n, d)), ((b, n, d), (1, n, d)), ((d,), (n, d)), ((n, 1), (1, d)),
                   ((n, d), (d,))]:
        _refused(t, xs, fs)


@test(1, 1, "residual_add's ValueError names both shapes")
def residual_add_error_message(t: Trial):
    n, d, k = t.size(), t.size(), t.size()
    for xs, fs in [((n, d, 1), (n, d, k)), ((n, d), (n, d + k + 1))]:
        error = _refused(t, xs, fs)
        if not (shape_in(error["message"], xs) and shape_in(error["message"], fs)):
            t.fail(f"the ValueError must name both shapes, {xs} and {fs}, so the bug can be found; "
                   f"yours said: {excerpt(error['message'])!r}")


@test(1, 2, "residual_add leaves its inputs unchanged")
def residual_add_no_mutation(t: Trial):
    shape = (t.size(), t.size(), t.size())
    x, fx = t.randn(*shape), t.randn(*shape)
    obs = t.call("residual_add", x, fx)
    t.check(t.tensor(obs.result, "residual_add(x, fx)"), x + fx, "residual_add(x, fx)", "must be x + fx", exact=True)
    for name, before, after in (("x", x, obs.args_after[0]), ("fx", fx, obs.args_after[1])):
        t.check(t.tensor(after, name), before, f"{name} after residual_add(x, fx)",
                f"in-place add: residual_add changed its input {name} (x += fx, x.add_(fx) or out=x "
                "writes into the caller's tensor); the stream x is still needed, return a new tensor",
                exact=True)
    if obs.shares_input:
        t.fail("in-place add: the tensor residual_add returned shares memory with an input; return a new tensor.")


@test(1, 2, "gradients reach both x and fx")
def residual_add_gradients(t: Trial):
    shape = (t.size(), t.size())
    x, fx, upstream = t.randn(*shape), t.randn(*shape), t.randn(*shape)
    obs = t.call("residual_add", x, fx, grad=upstream, grad_args=(0, 1), expect_error=True)
    if obs.error and "in-place" in obs.error["message"]:
        t.fail(f"in-place add: with x and fx requiring grad, residual_add raised {excerpt(obs.error['type'])}: "
               f"{excerpt(obs.error['message'])} Return x + fx as a new tensor.")
    if obs.error:
        t.fail(t.raised("residual_add(x, fx)", obs.error))
    if isinstance(obs.grads, dict):
        error = obs.grads["error"]
        if error["type"] == "Detached":
            t.fail("detached gradient: the result of residual_add does not require grad although x and fx do "
                   "(.detach(), .data, torch.no_grad() or a torch.tensor(...) copy cut the graph).")
        t.fail(f"backpropagating through residual_add raised {excerpt(error['type'])}: {excerpt(error['message'])}")
    for name, grad in zip(("x", "fx"), obs.grads):
        if grad.get("kind") == "none":
            t.fail(f"detached gradient: no gradient reached {name}; both the shortcut and the branch "
                   "must stay in the graph.")
        t.check(t.tensor(grad, f"the gradient of {name}"), upstream, f"dL/d{name} through residual_add",
                "an unscaled add passes the upstream gradient to both inputs unchanged",
                alternatives=[("the gradient was doubled or scaled: the add must be plain x + fx", 2 * upstream)])


@test(1, 1, "Residual with a zero sublayer is exactly the identity")
def residual_zero_sublayer(t: Trial):
    d = t.size()
    block = t.new("Residual", spec("branch", "linear", torch.zeros(d, d, dtype=F64), torch.zeros(d, dtype=F64)))
    x = t.randn(t.size(), d, dtype=F64)
    out = t.tensor(t.invoke(block, x).result, "Residual(zero sublayer)(x)")
    t.check(out, x, "Residual(zero sublayer)(x)", "with a zero sublayer forward must return x exactly: "
            "x + sublayer(x)", exact=True)


@test(1, 1, "Residual adds the sublayer's output to x")
def residual_values(t: Trial):
    d = t.size()
    weight, bias = t.randn(d, d, dtype=F64, scale=0.3), t.randn(d, dtype=F64)
    block = t.new("Residual", spec("branch", "linear", weight, bias))
    x = t.randn(t.size(), t.size(), d, dtype=F64)
    fx = F.linear(x, weight, bias)
    out = t.tensor(t.invoke(block, x).result, "Residual(sublayer)(x)")
    t.check(out, x + fx, "Residual(sublayer)(x)", "forward must be residual_add(x, sublayer(x))",
            rtol=1e-10, atol=1e-12, alternatives=[("the shortcut is missing: it returns sublayer(x) only", fx),
                                                  ("the sublayer is never applied: it returns x", x)])


@test(1, 1, "Residual refuses a sublayer whose output shape differs")
def residual_shape_mismatch(t: Trial):
    d = t.size(5)
    block = t.new("Residual", spec("branch", "linear", t.randn(1, d), t.randn(1)))
    obs = t.invoke(block, t.randn(t.size(), d), expect_error=True)
    if obs.error is None:
        t.fail(f"silent broadcasting: with a sublayer (n, {d}) -> (n, 1), Residual returned "
               f"{describe(obs.result)}; forward must go through residual_add, which refuses different shapes.")
    if "ValueError" not in obs.error["is"]:
        t.fail(t.raised(f"Residual with a sublayer (n, {d}) -> (n, 1)", obs.error)
               + "; expected the ValueError of residual_add.")


@test(1, 2, "ProjectionShortcut(d, d) is the identity with no parameters")
def shortcut_identity(t: Trial):
    d = t.size()
    shortcut = t.new("ProjectionShortcut", d, d)
    count = shortcut.structure.get("parameters")
    if count != 0:
        t.fail(f"{shortcut.label} has {count} parameters; an identity shortcut has none "
               "(use nn.Identity() or return x when d_in == d_out).")
    for dtype in (F64, torch.float32):
        x = t.randn(t.size(), d, dtype=dtype)
        out = t.tensor(t.invoke(shortcut, x).result, shortcut.label)
        t.check(out, x, f"{shortcut.label}(x), {str(dtype)[6:]}", "must return x unchanged", exact=True)


def _linear_entry(entry: dict | None) -> str:
    if entry is None:
        return "nothing"
    if entry.get("base") != "Linear":
        return excerpt(entry.get("type", "?"), 60)
    return f"Linear({entry.get('in_features')}, {entry.get('out_features')}, bias={entry.get('has_bias')})"


@test(1, 2, "ProjectionShortcut(d_in, d_out) is x W_s, a Linear without bias")
def shortcut_projection(t: Trial):
    d_in = t.size()
    d_out = d_in + 2 * t.size(1, 5)
    shortcut = t.new("ProjectionShortcut", d_in, d_out)
    proj = shortcut.module("proj")
    expected = f"Linear({d_in}, {d_out}, bias=False)"
    if _linear_entry(proj) != expected:
        hint = " (the projection is x W_s: no bias)" if proj and proj.get("has_bias") else ""
        t.fail(f"{shortcut.label}: expected attribute proj = nn.{expected}; yours is {_linear_entry(proj)}{hint}.")
    if shortcut.structure.get("parameters") != d_in * d_out:
        t.fail(f"{shortcut.label} has {shortcut.structure.get('parameters')} parameters, expected {d_in * d_out} "
               "(those of proj only).")
    weight = t.randn(d_out, d_in, scale=0.3)
    t.load(shortcut, {"proj.weight": weight})
    x = t.randn(t.size(), d_in)
    out = t.tensor(t.invoke(shortcut, x).result, shortcut.label)
    t.check(out, x @ weight.T, f"{shortcut.label}(x)", "must be x W_s^T through proj", rtol=1e-5, atol=1e-6)


def _ffn_layers(block) -> str:
    layers = [m for m in block.structure.get("modules", []) if re.fullmatch(r"ffn\.\w+", m.get("path", ""))]
    return ", ".join(_linear_entry(m) if m.get("base") == "Linear" else excerpt(m.get("base") or m.get("type"), 60)
                     for m in layers) or "no submodules"


@test(1, 1, "ResidualFFN's layers: Linear(d_in, e*d_out), GELU, Linear(e*d_out, d_out)")
def ffn_layers(t: Trial):
    d_in, d_out, e = t.size(), t.size(), t.choice([2, 3])
    for args in ((768, 768), (d_in, d_out, e)):
        block = t.new("ResidualFFN", *args)
        i, o, k = (*args, 4)[:3]
        want = f"Linear({i}, {k * o}, bias=True), GELU, Linear({k * o}, {o}, bias=True)"
        if _ffn_layers(block) != want:
            t.fail(f"{block.label}: expected ffn = Sequential({want}), widening to {k * o} = expansion * d_out "
                   f"and back to {o}; yours: {_ffn_layers(block)}.")
        shortcut = block.module("shortcut")
        if shortcut is None or "ProjectionShortcut" not in shortcut.get("mro", []):
            t.fail(f"{block.label}: expected attribute shortcut = ProjectionShortcut(d_in, d_out); "
                   f"yours is {excerpt(shortcut.get('type'), 60) if shortcut else 'missing'}.")


@test(1, 2, "ResidualFFN computes shortcut(x) + ffn(x)")
def ffn_forward(t: Trial):
    d = t.size()
    for d_in, d_out in ((d, d), (d, d + 2 * t.size(1, 5))):
        e = t.choice([1, 2, 3])
        block = t.new("ResidualFFN", d_in, d_out, e, double=True)
        w = {"ffn.0.weight": t.randn(e * d_out, d_in, dtype=F64, scale=0.4), "ffn.0.bias": t.randn(e * d_out, dtype=F64),
             "ffn.2.weight": t.randn(d_out, e * d_out, dtype=F64, scale=0.4), "ffn.2.bias": t.randn(d_out, dtype=F64)}
        if d_in != d_out:
            w["shortcut.proj.weight"] = t.randn(d_out, d_in, dtype=F64, scale=0.4)
        t.load(block, w)
        x = t.randn(t.size(1, 5), t.size(), d_in, dtype=F64)
        hidden = F.linear(x, w["ffn.0.weight"], w["ffn.0.bias"])
        ffn = F.linear(F.gelu(hidden), w["ffn.2.weight"], w["ffn.2.bias"])
        shortcut = x if d_in == d_out else x @ w["shortcut.proj.weight"].T
        out = t.tensor(t.invoke(block, x).result, block.label)
        t.check(out, shortcut + ffn, f"{block.label}(x)", "forward must be residual_add(shortcut(x), ffn(x))",
                rtol=1e-9, atol=1e-10, alternatives=[
                    ("the shortcut is missing: it returns ffn(x) only", ffn),
                    ("ReLU instead of GELU in the FFN", shortcut + F.linear(F.relu(hidden), w["ffn.2.weight"], w["ffn.2.bias"])),
                    ("GELU's tanh approximation: use nn.GELU() (exact erf form)",
                     shortcut + F.linear(F.gelu(hidden, approximate="tanh"), w["ffn.2.weight"], w["ffn.2.bias"]))])


# ===================================================================== Part 2

def _math_branch(t: Trial) -> list:
    """A random smooth scalar branch [family, a, b]."""
    return [t.choice(["sin", "tanh", "square", "bump", "softplus"]), t.uniform(-0.6, 0.6), t.uniform(0.5, 1.5)]


def _stack(t: Trial, depth: int, kind: str = "pair"):
    """depth random branches: (specs for the submission, the same functions for the grader)."""
    params = [_math_branch(t) for _ in range(depth)]
    specs = [spec(kind, *p) for p in params]
    return specs, [t.build(s) for s in specs]


def _chain_variants(x0: float, pairs: list, upstream: float, alpha: float) -> list:
    """Wrong answers that name a misconception, computed by hand."""
    def run(local, step_alpha):
        x, grad, xs = x0, upstream, []
        for f, df in pairs:
            xs.append(x)
            x = step_alpha * x + f(x)
        for (f, df), xl in zip(pairs, xs):
            grad *= local(df, xl, f)
        return grad
    return [
        ("derivative at the wrong point: every dF was evaluated at x0, not at each block's own input x_l",
         run(lambda df, xl, f: alpha + df(x0), alpha)),
        ("derivative at the wrong point: dF was evaluated at the block's output x_(l+1), not its input x_l",
         run(lambda df, xl, f: alpha + df(alpha * xl + f(xl)), alpha)),
        ("scaled shortcut ignored: alpha was never used (x_(l+1) = alpha x_l + F(x_l))",
         run(lambda df, xl, f: 1 + df(xl), 1.0)),
        ("scaled shortcut ignored in the derivative: the local factor is alpha + F'(x_l), not 1 + F'(x_l)",
         run(lambda df, xl, f: 1 + df(xl), alpha)),
        ("the branch derivatives were added instead of multiplied by the chain rule",
         upstream * (1 + sum(df(x0) for f, df in pairs))),
        ("the upstream gradient dL/dx_L was not multiplied in", run(lambda df, xl, f: alpha + df(xl), alpha) / upstream),
        ("hard-coded worked example: 7.0 is the answer for x0 = 2, F(x) = 0.1 x^2 and upstream 5 only", 7.0),
    ]


def _check_chain(t: Trial, depth: int, alpha: float | None):
    x0, upstream = t.uniform(-2, 2), t.choice([-1, 1]) * t.uniform(0.5, 3)
    specs, pairs = _stack(t, depth)
    kwargs = {} if alpha is None else {"alpha": alpha}
    what = f"chain_rule_grad(x0={x0:.4g}, {depth} branches, upstream={upstream:.4g}" + (
        f", alpha={alpha:.4g})" if alpha is not None else ")")
    got = t.number(t.call("chain_rule_grad", x0, specs, upstream, **kwargs).result, what)
    want = t.ref.chain_rule_grad(x0, pairs, upstream, **kwargs)
    t.check(got, want, what, "dL/dx0 = upstream * product over blocks of (alpha + F_l'(x_l))",
            rtol=1e-9, atol=1e-12, alternatives=_chain_variants(x0, pairs, upstream, 1.0 if alpha is None else alpha))


@test(2, 3, "chain_rule_grad on one block with random branches")
def chain_one_block(t: Trial):
    for _ in range(3):
        _check_chain(t, 1, None)


@test(2, 4, "chain_rule_grad takes each derivative at that block's own input")
def chain_many_blocks(t: Trial):
    for depth in (3, 5):
        _check_chain(t, depth, None)


@test(2, 3, "chain_rule_grad with a scaled shortcut alpha")
def chain_alpha(t: Trial):
    for alpha in (t.uniform(0.3, 0.9), t.uniform(1.1, 1.6)):
        _check_chain(t, 3, alpha)


@test(2, 1, "chain_rule_grad with no blocks returns upstream")
def chain_empty(t: Trial):
    x0, upstream, alpha = t.uniform(-2, 2), t.uniform(0.5, 3), t.uniform(0.3, 0.9)
    what = f"chain_rule_grad(x0={x0:.4g}, [], upstream={upstream:.4g}, alpha={alpha:.4g})"
    got = t.number(t.call("chain_rule_grad", x0, [], upstream, alpha=alpha).result, what)
    t.check(got, upstream, what, "with no blocks x_L = x0, so dL/dx0 is the upstream gradient itself",
            rtol=1e-12, alternatives=[("hard-coded worked example: 7.0 fits one example only", 7.0)])


@test(2, 4, "split_gradient: the identity path's and the branch's share")
def split(t: Trial):
    for _ in range(3):
        x0, upstream = t.uniform(-2, 2), t.choice([-1, 1]) * t.uniform(0.5, 3)
        (dspec,), (df,) = _stack(t, 1, "derivative")
        what = f"split_gradient(x0={x0:.4g}, dF, upstream={upstream:.4g})"
        got = t.numbers(t.call("split_gradient", x0, dspec, upstream).result, what, 2, kinds=("tuple", "list"))
        want = list(t.ref.split_gradient(x0, df, upstream))
        t.check(got, want, what, "(identity share, branch share) = (upstream * 1, upstream * F'(x0))",
                rtol=1e-9, atol=1e-12, alternatives=[
                    ("the two shares are swapped: the identity path comes first", want[::-1]),
                    ("hard-coded worked example: (5.0, 2.0) fits one example only", [5.0, 2.0]),
                    ("the upstream gradient was not multiplied in", [1.0, df(x0)])])


# ===================================================================== Part 3

def _tanh_branches(t: Trial, depth: int, d: int) -> list:
    return [spec("branch", "tanh", t.randn(d, d, scale=1 / math.sqrt(d)), t.randn(d, scale=0.1))
            for _ in range(depth)]


def _norms(t: Trial, x0: torch.Tensor, specs: list, what: str, **kwargs) -> torch.Tensor:
    obs = t.call("gradient_norms", x0, specs, **kwargs)
    out = t.tensor(obs.result, what)
    t.check(t.tensor(obs.args_after[0], "x0"), x0, f"x0 after {what}",
            "gradient_norms must not modify x0 (work on a detached copy)", exact=True)
    return out


def _check_norms(t: Trial, x0: torch.Tensor, specs: list, what: str, why: str, extra=(), **kwargs):
    out = _norms(t, x0, specs, what, **kwargs)
    want = t.ref.gradient_norms(x0, [t.build(s) for s in specs], **kwargs)
    raw = want * math.sqrt(x0.numel())      # ||dL/dx_L|| = sqrt(numel) when L = x_L.sum()
    t.check(out, want, what, why, rtol=1e-5, atol=1e-12, alternatives=[
        *extra,
        ("not normalised: divide each norm by ||dL/dx_L||", raw),
        ("normalised by ||dL/dx_0|| instead of ||dL/dx_L||", want / want[0]),
        ("the entries are in reverse order: entry 0 belongs to x_0, the last to x_L", want.flip(0))])


@test(3, 2, "gradient_norms returns shape (L+1,) ending in 1, and leaves x0 alone")
def norms_shape(t: Trial):
    depth, d = t.size(3, 7), t.size()
    x0 = t.randn(t.size(), d)
    what = f"gradient_norms(x0 of shape {tuple(x0.shape)}, {depth} tanh branches)"
    out = _norms(t, x0, _tanh_branches(t, depth, d), what)
    if out.shape != (depth + 1,):
        t.fail(f"{what} returned shape {tuple(out.shape)}, expected ({depth + 1},): one entry per x_0 ... x_L.")
    t.check(out[-1], 1.0, f"the last entry of {what}", "the last entry is ||dL/dx_L|| / ||dL/dx_L|| = 1", rtol=1e-9)


@test(3, 3, "scaled shortcut with zero branches decays as alpha ** (L - l)")
def norms_decay(t: Trial):
    alpha, depth = t.uniform(0.3, 0.9), t.size(5, 41)
    x0 = t.randn(t.size())
    want = torch.tensor([alpha ** (depth - l) for l in range(depth + 1)], dtype=F64)
    what = f"gradient_norms(x0, {depth} zero branches, alpha={alpha:.4g})"
    out = _norms(t, x0, [spec("branch", "zero")] * depth, what, alpha=alpha)
    t.check(out, want, what, "with zero branches each block multiplies the gradient by alpha", rtol=1e-6,
            alternatives=[("scaled shortcut ignored: alpha was never applied", torch.ones(depth + 1, dtype=F64)),
                          ("the entries are in reverse order: entry 0 belongs to x_0", want.flip(0))])


@test(3, 2, "identity shortcut survives 100 layers")
def norms_depth_100(t: Trial):
    x0 = t.randn(t.size(), t.size())
    what = "gradient_norms(x0, 100 zero branches)"
    out = _norms(t, x0, [spec("branch", "zero")] * 100, what)
    t.check(out, torch.ones(101, dtype=F64), what,
            "with alpha = 1 the identity path alone carries the whole gradient: every entry is 1", rtol=1e-9)


@test(3, 4, "random tanh branches with random alpha match the reference")
def norms_random(t: Trial):
    for alpha in (1.0, t.uniform(0.5, 0.95)):
        depth, d = t.size(5, 9), t.size()
        x0 = t.randn(t.size(), d)
        _check_norms(t, x0, _tanh_branches(t, depth, d), f"gradient_norms(x0, {depth} tanh branches, alpha={alpha:.4g})",
                     "must match ||dL/dx_l|| / ||dL/dx_L|| computed by autograd through the whole stack "
                     "(a detached x_l cuts the gradient)", alpha=alpha)


@test(3, 3, "plain stack (shortcut=False)")
def norms_plain(t: Trial):
    scales = [t.uniform(0.3, 1.5) for _ in range(t.size(3, 7))]
    want = torch.tensor([math.prod(scales[l:]) for l in range(len(scales) + 1)], dtype=F64)
    what = "gradient_norms(x0, branches c_l * x, shortcut=False)"
    out = _norms(t, t.randn(t.size()), [spec("branch", "scale", c) for c in scales], what, shortcut=False)
    t.check(out, want, what, "without a shortcut x_(l+1) = F_l(x_l): the gradient is the product of the c_l",
            rtol=1e-6, alternatives=[("shortcut=False ignored: the identity path is still there",
                                      torch.tensor([math.prod(1 + c for c in scales[l:]) for l in range(len(scales) + 1)],
                                                   dtype=F64))])
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


# ===================================================================== Part 4

_TO_ENCODER = {"attn.in_proj_weight": "self_attn.in_proj_weight", "attn.in_proj_bias": "self_attn.in_proj_bias",
               "attn.out_proj.weight": "self_attn.out_proj.weight", "attn.out_proj.bias": "self_attn.out_proj.bias",
               "ln1.weight": "norm1.weight", "ln1.bias": "norm1.bias", "ln2.weight": "norm2.weight",
               "ln2.bias": "norm2.bias", "ffn.0.weight": "linear1.weight", "ffn.0.bias": "linear1.bias",
               "ffn.2.weight": "linear2.weight", "ffn.2.bias": "linear2.bias"}


def _dims(t: Trial) -> tuple[int, int]:
    heads = t.choice([1, 3])
    return heads * t.size(3, 5), heads


def _block_weights(t: Trial, d: int) -> dict[str, torch.Tensor]:
    """Random weights for every parameter, LayerNorm affines included (so ln1 and ln2 differ)."""
    s = 1 / math.sqrt(d)
    return {"attn.in_proj_weight": t.randn(3 * d, d, dtype=F64, scale=s), "attn.in_proj_bias": t.randn(3 * d, dtype=F64, scale=0.1),
            "attn.out_proj.weight": t.randn(d, d, dtype=F64, scale=s), "attn.out_proj.bias": t.randn(d, dtype=F64, scale=0.1),
            "ln1.weight": 1 + t.randn(d, dtype=F64, scale=0.3), "ln1.bias": t.randn(d, dtype=F64, scale=0.3),
            "ln2.weight": 1 + t.randn(d, dtype=F64, scale=0.3), "ln2.bias": t.randn(d, dtype=F64, scale=0.3),
            "ffn.0.weight": t.randn(4 * d, d, dtype=F64, scale=s), "ffn.0.bias": t.randn(4 * d, dtype=F64, scale=0.1),
            "ffn.2.weight": t.randn(d, 4 * d, dtype=F64, scale=s / 2), "ffn.2.bias": t.randn(d, dtype=F64, scale=0.1)}


def _encoder(weights: dict, d: int, heads: int, pre: bool, causal: bool, mask_t: bool = False):
    """nn.TransformerEncoderLayer with these weights, as a function of x."""
    layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=pre).double().eval()
    layer.load_state_dict({_TO_ENCODER[k]: v for k, v in weights.items()})

    def run(x):
        if not causal:
            return layer(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=F64)
        return layer(x, src_mask=mask.T if mask_t else mask, is_causal=not mask_t)
    return run


def _swap_norms(weights: dict) -> dict:
    swap = {"ln1.weight": "ln2.weight", "ln1.bias": "ln2.bias", "ln2.weight": "ln1.weight", "ln2.bias": "ln1.bias"}
    return {k: weights[swap.get(k, k)] for k in weights}


def _check_block(t: Trial, norm: str | None, causal: bool):
    """The submission's block against nn.TransformerEncoderLayer with the same weights."""
    d, heads = _dims(t)
    layout = norm or "pre"
    kwargs = {} if norm is None else {"norm": norm}
    block = t.new("TransformerBlock", d, heads, double=True, **kwargs)
    weights = _block_weights(t, d)
    t.load(block, weights)
    x = t.randn(t.size(1, 3), t.size(3, 7), d, dtype=F64)
    out = t.tensor(t.invoke(block, x, causal=causal).result, f"{block.label}(x, causal={causal})")
    pre, other = layout == "pre", "post" if layout == "pre" else "pre"
    with torch.no_grad():
        want = _encoder(weights, d, heads, pre, causal)(x)
        alternatives = [
            (f"Pre/Post swapped: this is what a {other}-LN block computes", _encoder(weights, d, heads, not pre, causal)(x)),
            ("ln1 and ln2 are swapped: ln1 belongs to the attention sublayer, ln2 to the FFN",
             _encoder(_swap_norms(weights), d, heads, pre, causal)(x))]
        if causal:
            alternatives += [
                ("missing causal mask: with causal=True position t may attend only to positions <= t",
                 _encoder(weights, d, heads, pre, False)(x)),
                ("causal mask inverted: True must mark the positions above the diagonal (the future)",
                 _encoder(weights, d, heads, pre, True, mask_t=True)(x))]
    t.check(out, want, f"{block.label}(x, causal={causal})",
            f"differs from nn.TransformerEncoderLayer(norm_first={pre}) with the same weights", rtol=0, atol=1e-6,
            alternatives=alternatives)


@test(4, 3, "TransformerBlock is built from attn, ln1, ln2 and ffn")
def block_parts(t: Trial):
    d, heads = _dims(t)
    block = t.new("TransformerBlock", d, heads, norm=t.choice(["pre", "post"]))
    wrapped = [m["path"] for m in block.structure.get("modules", [])
               if m.get("base") in ("TransformerEncoderLayer", "TransformerEncoder", "Transformer")]
    if wrapped:
        t.fail(f"{block.label} wraps nn.{block.module(wrapped[0])['base']} (at '{wrapped[0] or 'the block'}'); "
               "build the block from its parts: attn, ln1, ln2 and ffn.")
    attn = block.module("attn") or {}
    if (attn.get("base"), attn.get("embed_dim"), attn.get("num_heads"), attn.get("batch_first")) != \
            ("MultiheadAttention", d, heads, True):
        t.fail(f"{block.label}: expected attn = nn.MultiheadAttention({d}, {heads}, batch_first=True); yours: "
               f"{excerpt(attn.get('type', 'missing'), 60)} (embed_dim={attn.get('embed_dim')}, num_heads={attn.get('num_heads')}, "
               f"batch_first={attn.get('batch_first')}).")
    for name in ("ln1", "ln2"):
        ln = block.module(name) or {}
        if (ln.get("base"), ln.get("normalized_shape")) != ("LayerNorm", [d]):
            t.fail(f"{block.label}: expected {name} = nn.LayerNorm({d}); yours: {excerpt(ln.get('type', 'missing'), 60)}.")
    want = f"Linear({d}, {4 * d}, bias=True), GELU, Linear({4 * d}, {d}, bias=True)"
    if _ffn_layers(block) != want:
        t.fail(f"{block.label}: expected ffn = Sequential({want}) as in ResidualFFN; yours: {_ffn_layers(block)}.")
    expected = 4 * d * d + 4 * d + 4 * d + 8 * d * d + 5 * d
    if block.structure.get("parameters") != expected:
        t.fail(f"{block.label} has {block.structure.get('parameters')} parameters, expected {expected} "
               "(attn, ln1, ln2 and ffn only): remove extra layers.")


@test(4, 2, "TransformerBlock rejects an unknown norm with ValueError")
def block_bad_norm(t: Trial):
    d, heads = _dims(t)
    for bad in t.rng.sample(["mid", "sandwich", "postln", "none", "", "layer"], 3):
        obs = t.new("TransformerBlock", d, heads, norm=bad, expect_error=True)
        if obs.error is None:
            t.fail(f"TransformerBlock(..., norm={bad!r}) was accepted; anything but 'pre' or 'post' must raise "
                   "ValueError (silently picking a layout hides typos).")
        if "ValueError" not in obs.error["is"]:
            t.fail(t.raised(f"TransformerBlock(..., norm={bad!r})", obs.error) + "; expected ValueError.")


def _against_encoder_layer(key: str, points: int, name: str, norm: str | None, causal: bool) -> None:
    """Register a test of the block (layout `norm`, None for the default) against the reference layer."""
    def check(t: Trial):
        _check_block(t, norm, causal)
    check.__name__ = key
    test(4, points, name)(check)


_against_encoder_layer("block_pre", 4, "Pre-LN block matches nn.TransformerEncoderLayer(norm_first=True)", "pre", False)
_against_encoder_layer("block_post", 4, "Post-LN block matches nn.TransformerEncoderLayer(norm_first=False)", "post",
                       False)
_against_encoder_layer("block_pre_causal", 3, "causal Pre-LN block attends only to the past", "pre", True)
_against_encoder_layer("block_post_causal", 3, "causal Post-LN block attends only to the past", "post", True)
_against_encoder_layer("block_default", 1, "the default norm is 'pre'", None, False)


@test(4, 2, "Pre-LN block with zero output projections is exactly the identity")
def block_pre_identity(t: Trial):
    d, heads = _dims(t)
    block = t.new("TransformerBlock", d, heads, norm="pre", double=True)
    weights = _block_weights(t, d)
    for name in ("attn.out_proj.weight", "attn.out_proj.bias", "ffn.2.weight", "ffn.2.bias"):
        weights[name] = torch.zeros_like(weights[name])
    t.load(block, weights)
    x = t.randn(t.size(1, 3), t.size(3, 7), d, dtype=F64)
    out = t.tensor(t.invoke(block, x).result, f"{block.label}(x)")
    t.check(out, x, f"{block.label}(x) with zero output projections",
            "a Pre-LN block only adds to the stream: with both branches' outputs zero it must return x exactly "
            "(only the branch inputs go through ln1 and ln2)", exact=True)


@test(4, 3, "residual_stream_norms: mean per-token L2 norm before and after each block")
def stream_norms(t: Trial):
    d = t.size()
    specs = [spec("branch", "scale", t.uniform(0.5, 2.0)) if t.rng.random() < 0.4 else
             spec("branch", "residual", t.randn(d, d, scale=1 / math.sqrt(d)), t.randn(d, scale=0.3))
             for _ in range(t.size(3, 5))]
    x = t.randn(t.size(1, 3), t.size(3, 7), d, scale=t.uniform(0.5, 3))
    what = f"residual_stream_norms({len(specs)} blocks, x of shape {tuple(x.shape)})"
    obs = t.call("residual_stream_norms", specs, x)
    t.check(t.tensor(obs.args_after[1], "x"), x, f"x after {what}", "residual_stream_norms must not modify x", exact=True)
    got = t.numbers(obs.result, what, len(specs) + 1, kinds=("list",))
    blocks = [t.build(s) for s in specs]
    want = t.ref.residual_stream_norms(blocks, x)
    with torch.no_grad():
        streams = [x]
        for b in blocks:
            streams.append(b(streams[-1]))
    t.check(got, want, what, "entry l is the mean over tokens of ||x_l[b, t, :]||, before the first block "
            "and after each", rtol=1e-5, alternatives=[
                ("the norm of the whole tensor, not the mean per-token norm", [s.norm().item() for s in streams]),
                ("the norm is taken over the wrong dimension: a token's vector is the last one, d_model",
                 [s.norm(dim=1).mean().item() for s in streams]),
                ("the mean of squared norms, not of norms", [s.pow(2).sum(-1).mean().item() for s in streams])])
