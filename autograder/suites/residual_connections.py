"""Hidden tests of residual-connections (docs/contract.md, parts 1 to 5).

Never shipped: the release, public tests and every output contain none of this.
Inputs are drawn per run from the grading seed; `t.ref` is the reference module
loaded from solutions/, Part 4 compares with nn.TransformerEncoderLayer, and Part 5 trains
the student's models on small seeded problems.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..kit import Failed, Suite, Trial, describe, excerpt, part_label, shape_in, show

# Tests that rest on what the sandbox child reports besides returned values (errors raised,
# inputs after the call, gradients, the structure report): student code that reaches into the
# process could forge those, so the static policy holds them for review (docs/security.md).
SUITE = Suite("residual-connections", trusts_child={
    "residual_add_no_broadcasting", "residual_add_error_message", "residual_add_no_mutation",
    "residual_add_gradients", "residual_shape_mismatch", "shortcut_identity", "ffn_layers",
    "norms_shape", "norms_decay", "norms_depth_100", "norms_random", "norms_plain", "norms_no_path",
    "block_parts", "block_bad_norm", "stream_norms", "plain_structure", "residual_structure", "train_updates",
    "grad_norms_values"},
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
               "compare x.shape == fx.shape yourself before adding.", misconception="silent-broadcasting")
    if "ValueError" not in obs.error["is"]:
        t.fail(t.raised(f"residual_add(x of shape {xs}, fx of shape {fs})", obs.error)
               + "; expected your own ValueError naming both shapes.", kind="error")
    return obs.error


@test(1, 2, "residual_add returns x + fx on odd shapes", misconception="not-x-plus-fx")
def residual_add_values(t: Trial):
    for ndim in (1, 2, 3, 4):
        shape = tuple(t.size(1 if ndim > 2 else 3) for _ in range(ndim))
        x, fx = t.randn(*shape), t.randn(*shape)
        what = f"residual_add(x, fx) with x and fx of shape {shape}"
        out = t.tensor(t.call("residual_add", x, fx).result, what)
        t.check(out, x + fx, what, "must be x + fx, element by element", exact=True,
                alternatives=[("returns x, not x + fx", x), ("returns fx, not x + fx", fx),
                              ("returns x - fx", x - fx)])


@test(1, 1, "residual_add keeps float64 and float32", misconception="dtype-changed")
def residual_add_dtype(t: Trial):
    shape = (t.size(), t.size())
    for dtype in (F64, torch.float32):
        x, fx = t.randn(*shape, dtype=dtype), t.randn(*shape, dtype=dtype)
        what = f"residual_add on two {str(dtype)[6:]} tensors"
        out = t.tensor(t.call("residual_add", x, fx).result, what)
        if out.dtype != dtype:
            t.fail(f"{what} returned {str(out.dtype)[6:]}: the dtype changed (a .float(), .double() or "
                   "torch.tensor(...) copy?); keep the inputs' dtype.")
        t.check(out, x + fx, what, "must be x + fx at full precision", exact=True, misconception="not-x-plus-fx")


@test(1, 2, "residual_add refuses broadcastable shapes", misconception="silent-broadcasting")
def residual_add_no_broadcasting(t: Trial):
    b, n, d = t.size(), t.size(), t.size(5)
    for xs, fs in [((b, n, 1), (b, n, d)), ((b, n, d), (1, n, d)), ((d,), (n, d)), ((n, 1), (1, d)),
                   ((n, d), (d,))]:
        _refused(t, xs, fs)


@test(1, 1, "residual_add's ValueError names both shapes", misconception="error-without-shapes")
def residual_add_error_message(t: Trial):
    n, d, k = t.size(), t.size(), t.size()
    for xs, fs in [((n, d, 1), (n, d, k)), ((n, d), (n, d + k + 1))]:
        error = _refused(t, xs, fs)
        if not (shape_in(error["message"], xs) and shape_in(error["message"], fs)):
            t.fail(f"the ValueError must name both shapes, {xs} and {fs}, so the bug can be found; "
                   f"yours said: {excerpt(error['message'])!r}")


@test(1, 2, "residual_add leaves its inputs unchanged", misconception="in-place-add")
def residual_add_no_mutation(t: Trial):
    shape = (t.size(), t.size(), t.size())
    x, fx = t.randn(*shape), t.randn(*shape)
    obs = t.call("residual_add", x, fx, readback=[0, 1])
    t.check(t.tensor(obs.result, "residual_add(x, fx)"), x + fx, "residual_add(x, fx)", "must be x + fx", exact=True,
            misconception="not-x-plus-fx")
    for name, before, after in (("x", x, obs.args_after[0]), ("fx", fx, obs.args_after[1])):
        t.check(t.tensor(after, name), before, f"{name} after residual_add(x, fx)",
                f"in-place add: residual_add changed its input {name} (x += fx, x.add_(fx) or out=x "
                "writes into the caller's tensor); the stream x is still needed, return a new tensor",
                exact=True)
    if obs.shares_input:
        t.fail("in-place add: the tensor residual_add returned shares memory with an input; return a new tensor.")


@test(1, 2, "gradients reach both x and fx", misconception="detached-gradient")
def residual_add_gradients(t: Trial):
    shape = (t.size(), t.size())
    x, fx, upstream = t.randn(*shape), t.randn(*shape), t.randn(*shape)
    obs = t.call("residual_add", x, fx, grad=upstream, grad_args=(0, 1), expect_error=True)
    if obs.error and "in-place" in obs.error["message"]:
        t.fail(f"in-place add: with x and fx requiring grad, residual_add raised {excerpt(obs.error['type'])}: "
               f"{excerpt(obs.error['message'])} Return x + fx as a new tensor.", misconception="in-place-add")
    if obs.error:
        t.fail(t.raised("residual_add(x, fx)", obs.error), kind="error")
    if isinstance(obs.grads, dict):
        error = obs.grads["error"]
        if error["type"] == "Detached":
            t.fail("detached gradient: the result of residual_add does not require grad although x and fx do "
                   "(.detach(), .data, torch.no_grad() or a torch.tensor(...) copy cut the graph).")
        t.fail(f"backpropagating through residual_add raised {excerpt(error['type'])}: {excerpt(error['message'])}", kind="error")
    for name, grad in zip(("x", "fx"), obs.grads):
        if grad.get("kind") == "none":
            t.fail(f"detached gradient: no gradient reached {name}; both the shortcut and the branch "
                   "must stay in the graph.")
        t.check(t.tensor(grad, f"the gradient of {name}"), upstream, f"dL/d{name} through residual_add",
                "an unscaled add passes the upstream gradient to both inputs unchanged",
                alternatives=[("the gradient was doubled or scaled: the add must be plain x + fx", 2 * upstream,
                               "not-x-plus-fx")])


@test(1, 1, "Residual with a zero sublayer is exactly the identity", misconception="not-x-plus-fx")
def residual_zero_sublayer(t: Trial):
    d = t.size()
    block = t.new("Residual", spec("branch", "linear", torch.zeros(d, d, dtype=F64), torch.zeros(d, dtype=F64)))
    x = t.randn(t.size(), d, dtype=F64)
    out = t.tensor(t.invoke(block, x).result, "Residual(zero sublayer)(x)")
    t.check(out, x, "Residual(zero sublayer)(x)", "with a zero sublayer forward must return x exactly: "
            "x + sublayer(x)", exact=True)


@test(1, 1, "Residual adds the sublayer's output to x", misconception="not-x-plus-fx")
def residual_values(t: Trial):
    d = t.size()
    weight, bias = t.randn(d, d, dtype=F64, scale=0.3), t.randn(d, dtype=F64)
    block = t.new("Residual", spec("branch", "linear", weight, bias))
    x = t.randn(t.size(), t.size(), d, dtype=F64)
    fx = F.linear(x, weight, bias)
    out = t.tensor(t.invoke(block, x).result, "Residual(sublayer)(x)")
    t.check(out, x + fx, "Residual(sublayer)(x)", "forward must be residual_add(x, sublayer(x))",
            rtol=1e-10, atol=1e-12, alternatives=[("the shortcut is missing: it returns sublayer(x) only", fx,
                                                   "shortcut-missing"),
                                                  ("the sublayer is never applied: it returns x", x)])


@test(1, 1, "Residual refuses a sublayer whose output shape differs", misconception="silent-broadcasting")
def residual_shape_mismatch(t: Trial):
    d = t.size(5)
    block = t.new("Residual", spec("branch", "linear", t.randn(1, d), t.randn(1)))
    obs = t.invoke(block, t.randn(t.size(), d), expect_error=True)
    if obs.error is None:
        t.fail(f"silent broadcasting: with a sublayer (n, {d}) -> (n, 1), Residual returned "
               f"{describe(obs.result)}; forward must go through residual_add, which refuses different shapes.")
    if "ValueError" not in obs.error["is"]:
        t.fail(t.raised(f"Residual with a sublayer (n, {d}) -> (n, 1)", obs.error)
               + "; expected the ValueError of residual_add.", kind="error")


@test(1, 2, "ProjectionShortcut(d, d) is the identity with no parameters", misconception="projection-shortcut")
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


@test(1, 2, "ProjectionShortcut(d_in, d_out) is x W_s, a Linear without bias", misconception="projection-shortcut")
def shortcut_projection(t: Trial):
    d_in = t.size()
    d_out = d_in + 2 * t.size(1, 5)
    shortcut = t.new("ProjectionShortcut", d_in, d_out)
    # by behaviour, not by the structure report: the grader's W_s in proj.weight (a load that fails or
    # a forward that ignores it shows in the values), then 0 -> 0 (no bias) and x -> x W_s^T
    weight = t.randn(d_out, d_in, scale=0.3)
    t.load(shortcut, {"proj.weight": weight})
    zero = t.tensor(t.invoke(shortcut, torch.zeros(t.size(), d_in)).result, shortcut.label)
    if zero.shape == (len(zero), d_out) and zero.abs().max() > 0:
        t.fail(f"{shortcut.label} maps x = 0 to {show(zero[0])}, not 0: the projection is x W_s, with no bias "
               f"(nn.Linear({d_in}, {d_out}, bias=False)).")
    x = t.randn(t.size(), d_in)
    out = t.tensor(t.invoke(shortcut, x).result, shortcut.label)
    t.check(out, x @ weight.T, f"{shortcut.label}(x)", "must be x W_s^T through proj", rtol=1e-5, atol=1e-6)


def _ffn_weights(t: Trial, d_in: int, d_out: int, hidden: int, at: str = "ffn") -> dict[str, torch.Tensor]:
    """Float64 weights for an FFN Linear(d_in, hidden), GELU, Linear(hidden, d_out) kept at `at`."""
    return {f"{at}.0.weight": t.randn(hidden, d_in, dtype=F64, scale=1 / math.sqrt(d_in)),
            f"{at}.0.bias": t.randn(hidden, dtype=F64, scale=0.3),
            f"{at}.2.weight": t.randn(d_out, hidden, dtype=F64, scale=1 / math.sqrt(hidden)),
            f"{at}.2.bias": t.randn(d_out, dtype=F64, scale=0.3)}


def _ffn(w: dict, x: torch.Tensor, at: str = "ffn", act=F.gelu) -> torch.Tensor:
    """The FFN with the weights at `at`, computed here (act: the activation, for the wrong variants)."""
    return F.linear(act(F.linear(x, w[f"{at}.0.weight"], w[f"{at}.0.bias"])), w[f"{at}.2.weight"], w[f"{at}.2.bias"])


def _ffn_alternatives(w: dict, x: torch.Tensor, at: str = "ffn", base=0) -> list:
    """The FFN's usual mistakes, each plus `base` (what the output adds to the FFN)."""
    return [("ReLU instead of GELU in the FFN", base + _ffn(w, x, at, F.relu)),
            ("GELU's tanh approximation: use nn.GELU() (exact erf form)",
             base + _ffn(w, x, at, lambda h: F.gelu(h, approximate="tanh")))]


def _load_as_stated(t: Trial, obj, weights: dict, layout: str) -> None:
    """t.load, and where the weights do not fit, the layout the docstring states after the reason."""
    try:
        t.load(obj, weights)
    except Failed as e:
        raise Failed(f"{e}\n{layout}", e.misconception, e.kind) from None


def _check_ffn_part(t: Trial, obj, at: str, w: dict, x: torch.Tensor, hidden: int, d_out: int):
    """obj's submodule at `at` called on x must be the FFN with the weights loaded there."""
    out = t.drive(obj, at, x)
    t.check(out, _ffn(w, x, at), f"{part_label(obj, at)}(x)", f"must be Linear -> GELU -> Linear, widening to "
            f"{hidden} and back to {d_out}, with the weights set at {at}[0] and {at}[2]", rtol=1e-9, atol=1e-10,
            alternatives=lambda: _ffn_alternatives(w, x, at))


def _check_shortcut_part(t: Trial, obj, at: str, x: torch.Tensor, proj: torch.Tensor | None):
    """obj's submodule at `at` must be the identity (proj None) or x W_s^T with proj = W_s loaded."""
    out = t.drive(obj, at, x)
    if proj is None:
        t.check(out, x, f"{part_label(obj, at)}(x)", "the width does not change, so the shortcut is the identity",
                exact=True)
    else:
        t.check(out, x @ proj.T, f"{part_label(obj, at)}(x)", "the width changes, so the shortcut is x W_s^T "
                f"(a ProjectionShortcut, with W_s set at {at}.proj)", rtol=1e-9, atol=1e-10)


@test(1, 1, "ResidualFFN's layers: Linear(d_in, e*d_out), GELU, Linear(e*d_out, d_out)", misconception="ffn-layers")
def ffn_layers(t: Trial):
    # by behaviour: the grader's weights loaded at ffn[0], ffn[2] (and shortcut.proj), then block.ffn and
    # block.shortcut called by those names on the grader's input; the default expansion is 4
    d = t.size()
    for d_in, d_out, e in ((d, d, None), (t.size(), t.size(), t.choice([2, 3]))):
        block = t.new("ResidualFFN", d_in, d_out, *([e] if e else []), double=True)
        hidden = (e or 4) * d_out
        w = _ffn_weights(t, d_in, d_out, hidden)
        if d_in != d_out:
            w["shortcut.proj.weight"] = t.randn(d_out, d_in, dtype=F64, scale=0.4)
        _load_as_stated(t, block, w, f"ResidualFFN(d_in, d_out, expansion={e or 4}) has ffn = Sequential(Linear(d_in, "
                        f"{e or 4} * d_out), GELU(), Linear({e or 4} * d_out, d_out)); expansion defaults to 4.")
        x = t.randn(t.size(1, 5), d_in, dtype=F64)
        _check_ffn_part(t, block, "ffn", w, x, hidden, d_out)
        _check_shortcut_part(t, block, "shortcut", x, w.get("shortcut.proj.weight"))


@test(1, 2, "ResidualFFN computes shortcut(x) + ffn(x)", misconception="ffn-layers")
def ffn_forward(t: Trial):
    d = t.size()
    for d_in, d_out in ((d, d), (d, d + 2 * t.size(1, 5))):
        e = t.choice([1, 2, 3])
        block = t.new("ResidualFFN", d_in, d_out, e, double=True)
        w = _ffn_weights(t, d_in, d_out, e * d_out)
        if d_in != d_out:
            w["shortcut.proj.weight"] = t.randn(d_out, d_in, dtype=F64, scale=0.4)
        t.load(block, w)
        x = t.randn(t.size(1, 5), t.size(), d_in, dtype=F64)
        ffn = _ffn(w, x)
        shortcut = x if d_in == d_out else x @ w["shortcut.proj.weight"].T
        out = t.tensor(t.invoke(block, x).result, block.label)
        t.check(out, shortcut + ffn, f"{block.label}(x)", "forward must be residual_add(shortcut(x), ffn(x))",
                rtol=1e-9, atol=1e-10, alternatives=[
                    ("the shortcut is missing: it returns ffn(x) only", ffn, "shortcut-missing"),
                    *_ffn_alternatives(w, x, base=shortcut)])


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
         run(lambda df, xl, f: alpha + df(x0), alpha), "derivative-at-wrong-point"),
        ("derivative at the wrong point: dF was evaluated at the block's output x_(l+1), not its input x_l",
         run(lambda df, xl, f: alpha + df(alpha * xl + f(xl)), alpha), "derivative-at-wrong-point"),
        ("scaled shortcut ignored: alpha was never used (x_(l+1) = alpha x_l + F(x_l))",
         run(lambda df, xl, f: 1 + df(xl), 1.0), "scaled-shortcut-ignored"),
        ("scaled shortcut ignored in the derivative: the local factor is alpha + F'(x_l), not 1 + F'(x_l)",
         run(lambda df, xl, f: 1 + df(xl), alpha), "scaled-shortcut-ignored"),
        ("the branch derivatives were added instead of multiplied by the chain rule",
         upstream * (1 + sum(df(x0) for f, df in pairs)), "chain-rule-added"),
        ("the upstream gradient dL/dx_L was not multiplied in", run(lambda df, xl, f: alpha + df(xl), alpha) / upstream,
         "upstream-dropped"),
        ("hard-coded worked example: 7.0 is the answer for x0 = 2, F(x) = 0.1 x^2 and upstream 5 only", 7.0,
         "hard-coded-example"),
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
            rtol=1e-9, atol=1e-12,
            alternatives=lambda: _chain_variants(x0, pairs, upstream, 1.0 if alpha is None else alpha))


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
            rtol=1e-12,
            alternatives=[("hard-coded worked example: 7.0 fits one example only", 7.0, "hard-coded-example")])


@test(2, 4, "split_gradient: the identity path's and the branch's share", misconception="gradient-split")
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
                    ("hard-coded worked example: (5.0, 2.0) fits one example only", [5.0, 2.0], "hard-coded-example"),
                    ("the upstream gradient was not multiplied in", [1.0, df(x0)], "upstream-dropped")])


# ===================================================================== Part 3

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


def _encoder_layer(weights: dict, d: int, heads: int, pre: bool) -> nn.TransformerEncoderLayer:
    """nn.TransformerEncoderLayer with these weights, float64, in eval mode."""
    layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=pre).double().eval()
    layer.load_state_dict({_TO_ENCODER[k]: v for k, v in weights.items()})
    return layer


def _encoder(weights: dict, d: int, heads: int, pre: bool, causal: bool, mask_t: bool = False):
    """nn.TransformerEncoderLayer with these weights, as a function of x."""
    layer = _encoder_layer(weights, d, heads, pre)

    def run(x):
        if not causal:
            return layer(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=F64)
        return layer(x, src_mask=mask.T if mask_t else mask, is_causal=not mask_t)
    return run


def _ffn_linears(block) -> list[dict]:
    """The Linear layers under the block's ffn, in order, at any depth: ResidualFFN's Sequential,
    a whole ResidualFFN(d, d) (its identity shortcut has none) or a module of the student's own."""
    return [m for m in block.structure.get("modules", [])
            if m.get("path", "").startswith("ffn.") and m.get("base") == "Linear"]


def _load_block(t: Trial, block, weights: dict) -> None:
    """Load the canonical weights (ffn.0 and ffn.2 the FFN's two Linears) wherever the block keeps them."""
    where = dict(zip(("ffn.0", "ffn.2"), (m["path"] for m in _ffn_linears(block))))
    t.load(block, {f"{where.get(k.rpartition('.')[0], k.rpartition('.')[0])}.{k.rpartition('.')[2]}": v
                   for k, v in weights.items()})


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
    _load_block(t, block, weights)
    x = t.randn(t.size(1, 3), t.size(3, 7), d, dtype=F64)
    out = t.tensor(t.invoke(block, x, causal=causal).result, f"{block.label}(x, causal={causal})")
    pre, other = layout == "pre", "post" if layout == "pre" else "pre"
    with torch.no_grad():
        want = _encoder(weights, d, heads, pre, causal)(x)

    @torch.no_grad()
    def alternatives() -> list:     # two to four more reference layers: built only for a block that fails
        wrong = [(f"Pre/Post swapped: this is what a {other}-LN block computes",
                  _encoder(weights, d, heads, not pre, causal)(x), "pre-post-swapped"),
                 ("ln1 and ln2 are swapped: ln1 belongs to the attention sublayer, ln2 to the FFN",
                  _encoder(_swap_norms(weights), d, heads, pre, causal)(x), "layernorms-swapped")]
        if causal:
            wrong += [("missing causal mask: with causal=True position t may attend only to positions <= t",
                       _encoder(weights, d, heads, pre, False)(x), "missing-causal-mask"),
                      ("causal mask inverted: True must mark the positions above the diagonal (the future)",
                       _encoder(weights, d, heads, pre, True, mask_t=True)(x), "causal-mask-inverted")]
        return wrong

    t.check(out, want, f"{block.label}(x, causal={causal})",
            f"differs from nn.TransformerEncoderLayer(norm_first={pre}) with the same weights", rtol=0, atol=1e-6,
            alternatives=alternatives, misconception=None)


@test(4, 3, "TransformerBlock is built from attn, ln1, ln2 and ffn", misconception="block-structure")
def block_parts(t: Trial):
    # each part by behaviour: the grader's weights loaded by name, then block.attn, .ln1, .ln2 and .ffn
    # called on the grader's input and compared with nn.TransformerEncoderLayer's own parts
    d, heads = _dims(t)
    block = t.new("TransformerBlock", d, heads, norm=t.choice(["pre", "post"]), double=True)
    weights = _block_weights(t, d)
    _load_block(t, block, weights)
    layer = _encoder_layer(weights, d, heads, pre=True)
    x = t.randn(t.size(1, 3), t.size(3, 7), d, dtype=F64)
    with torch.no_grad():
        attn = layer.self_attn(x, x, x, need_weights=False)[0]
        alternatives = [("batch_first is False: the block's tensors are (B, T, d_model)",
                         layer.self_attn(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1),
                                         need_weights=False)[0].transpose(0, 1))]
    t.check(t.drive(block, "attn", x, x, x), attn, f"{block.label}.attn(x, x, x)",
            f"attn must be nn.MultiheadAttention({d}, {heads}, batch_first=True), with the weights set at "
            "attn.in_proj_weight and attn.out_proj", rtol=1e-9, atol=1e-10, alternatives=alternatives)
    for name in ("ln1", "ln2"):
        want = F.layer_norm(x, (d,), weights[f"{name}.weight"], weights[f"{name}.bias"])
        t.check(t.drive(block, name, x), want, f"{block.label}.{name}(x)",
                f"{name} must be nn.LayerNorm({d}), with the weights set at {name}.weight and {name}.bias",
                rtol=1e-9, atol=1e-10)
    ffn, out = _ffn(weights, x), t.drive(block, "ffn", x)
    if out.shape != x.shape or not torch.allclose(out, x + ffn, rtol=1e-9, atol=1e-10):  # a whole ResidualFFN(d, d)
        t.check(out, ffn, f"{block.label}.ffn(x)", f"ffn must be the FFN of Part 1, Linear({d}, {4 * d}), GELU, "
                f"Linear({4 * d}, {d}) (ResidualFFN({d}, {d}).ffn), with the weights set in its two Linear layers",
                rtol=1e-9, atol=1e-10, alternatives=lambda: _ffn_alternatives(weights, x))
    # what behaviour cannot show: a wrapped Transformer class, extra parameters (the structure report)
    wrapped = [m["path"] for m in block.structure.get("modules", [])
               if m.get("base") in ("TransformerEncoderLayer", "TransformerEncoder", "Transformer")]
    if wrapped:
        t.fail(f"{block.label} wraps nn.{block.module(wrapped[0])['base']} (at '{wrapped[0] or 'the block'}'); "
               "build the block from its parts: attn, ln1, ln2 and ffn.")
    expected = 4 * d * d + 4 * d + 4 * d + 8 * d * d + 5 * d
    if block.structure.get("parameters") != expected:
        t.fail(f"{block.label} has {block.structure.get('parameters')} parameters, expected {expected} "
               "(attn, ln1, ln2 and ffn only): remove extra layers.")


@test(4, 2, "TransformerBlock rejects an unknown norm with a ValueError naming 'pre' and 'post'",
      misconception="norm-not-validated")
def block_bad_norm(t: Trial):
    d, heads = _dims(t)
    for bad in t.rng.sample(["mid", "sandwich", "postln", "none", "", "layer"], 3):
        obs = t.new("TransformerBlock", d, heads, norm=bad, expect_error=True)
        if obs.error is None:
            t.fail(f"TransformerBlock(..., norm={bad!r}) was accepted; anything but 'pre' or 'post' must raise "
                   "ValueError (silently picking a layout hides typos).")
        if "ValueError" not in obs.error["is"]:
            t.fail(t.raised(f"TransformerBlock(..., norm={bad!r})", obs.error) + "; expected ValueError.", kind="error")
        if "pre" not in obs.error["message"] or "post" not in obs.error["message"]:
            t.fail(f"the ValueError for norm={bad!r} must name the two choices, 'pre' and 'post', so the caller "
                   f"can fix the typo; yours said: {obs.error['message']!r}")


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


@test(4, 2, "Pre-LN block with zero output projections is exactly the identity", misconception="pre-post-swapped")
def block_pre_identity(t: Trial):
    d, heads = _dims(t)
    block = t.new("TransformerBlock", d, heads, norm="pre", double=True)
    weights = _block_weights(t, d)
    for name in ("attn.out_proj.weight", "attn.out_proj.bias", "ffn.2.weight", "ffn.2.bias"):
        weights[name] = torch.zeros_like(weights[name])
    _load_block(t, block, weights)
    x = t.randn(t.size(1, 3), t.size(3, 7), d, dtype=F64)
    out = t.tensor(t.invoke(block, x).result, f"{block.label}(x)")
    t.check(out, x, f"{block.label}(x) with zero output projections",
            "a Pre-LN block only adds to the stream: with both branches' outputs zero it must return x exactly "
            "(only the branch inputs go through ln1 and ln2)", exact=True)


@test(4, 3, "residual_stream_norms: mean per-token L2 norm before and after each block",
      misconception="stream-norm-definition")
def stream_norms(t: Trial):
    d = t.size()
    specs = [spec("branch", "scale", t.uniform(0.5, 2.0)) if t.rng.random() < 0.4 else
             spec("branch", "residual", t.randn(d, d, scale=1 / math.sqrt(d)), t.randn(d, scale=0.3))
             for _ in range(t.size(3, 5))]
    blocks = [t.build(s) for s in specs]
    # (B, T, d) as Part 4 calls it, and (1, N, d) as Part 5's scaling cell does
    for x in (t.randn(t.size(1, 3), t.size(3, 7), d, scale=t.uniform(0.5, 3)),
              t.randn(1, t.size(3, 9), d, scale=t.uniform(0.5, 3))):
        what = f"residual_stream_norms({len(specs)} blocks, x of shape {tuple(x.shape)})"
        obs = t.call("residual_stream_norms", specs, x, readback=[1])
        t.check(t.tensor(obs.args_after[1], "x"), x, f"x after {what}", "residual_stream_norms must not modify x",
                exact=True)
        got = t.numbers(obs.result, what, len(specs) + 1, kinds=("list",))
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


# ===================================================================== Part 5

# A Part 5 block is ln = LayerNorm(d_in), ffn = Sequential(Linear(d_in, width), GELU, Linear(width, width)),
# plus shortcut = ProjectionShortcut(d_in, width) in residual_mlp; model[depth] is the final LayerNorm,
# model[depth + 1] the head. Every loss a test judges is computed here from the model's outputs
# (t.invoke), never taken from the list train returns, except in train_updates, which checks that list
# against a trajectory only honest full-batch SGD produces.

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
    _load_as_stated(t, model, w, LAYOUT)
    for l in range(depth):
        d = d_in if l == 0 else width
        x = t.randn(t.size(2, 5), d, dtype=F64, scale=t.uniform(0.5, 2))
        t.check(t.drive(model, f"{l}.ln", x), F.layer_norm(x, (d,), w[f"{l}.ln.weight"], w[f"{l}.ln.bias"]),
                f"{part_label(model, f'{l}.ln')}(x)", f"block {l}'s ln must be LayerNorm({d}) on the block's input",
                rtol=1e-9, atol=1e-10)
        _check_ffn_part(t, model, f"{l}.ffn", w, x, width, width)
        if shortcut:
            _check_shortcut_part(t, model, f"{l}.shortcut", x, w.get(f"{l}.shortcut.proj.weight"))
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
              **_ffn_weights(t, d, width, width, f"{l}.ffn")}
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
        ffn = lambda h: _ffn(w, h, f"{l}.ffn")
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


@test(5, 1, "zero_init=True starts every block as its shortcut")
def residual_zero_init(t: Trial):
    dims, w, x = _drawn(t, project=True)
    depth = dims[3]
    branch_out = {k for k in w if ".ffn.2." in k}
    kept = {k: v for k, v in w.items() if k not in branch_out}     # ffn[2] keeps the builder's own values
    zero = {**w, **{k: torch.zeros_like(w[k]) for k in branch_out}}
    for flag in (True, False):
        model, out, final_ln = _run(t, "residual_mlp", kept, x, *dims, zero_init=flag)
        with torch.no_grad():
            want = _forward(zero, x, depth, final_ln=final_ln)
        same = out.shape == want.shape and torch.allclose(out, want, rtol=1e-7, atol=1e-9)
        if flag and not same:
            t.fail(f"{model.label}: with zero_init=True each branch's last Linear (ffn[2]) must start with zero weight "
                   "and bias, so that every block starts as its shortcut; the output differs from that.")
        if not flag and same:
            t.fail(f"{model.label}: zero_init=False must keep PyTorch's default initialisation, yet the branches "
                   "start at zero (zero_init applied regardless of the flag).")


# ------------------------------------------------------------------ training

def _sgd_losses(w1, b1, w2, b2, X, y, steps, lr, *, momentum=0.9, zero_grad=True, step=True, after=False):
    """Full-batch SGD with momentum on Sequential(Linear, ReLU, Linear), computed here; switches for mistakes."""
    params = [p.clone().requires_grad_(True) for p in (w1, b1, w2, b2)]
    bufs, losses = [None] * 4, []
    loss_of = lambda: F.cross_entropy(F.linear(F.relu(F.linear(X, params[0], params[1])), params[2], params[3]), y)
    for _ in range(steps):
        loss = loss_of()
        if zero_grad:
            for p in params:
                p.grad = None
        loss.backward()
        with torch.no_grad():
            for i, p in enumerate(params):
                if step:
                    bufs[i] = p.grad.clone() if bufs[i] is None or momentum == 0 else momentum * bufs[i] + p.grad
                    p -= lr * bufs[i]
        losses.append(loss_of().item() if after else loss.item())
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


def teacher_problem(gen: torch.Generator, n: int, d_in: int, k: int):
    """Gaussian inputs labelled by a random linear teacher: learnable, with classes of similar size.
    (X (n, d_in) float32, y (n,)) for train, and (X_held, y_held), n more examples of the same teacher
    that train never sees."""
    X = torch.randn(2 * n, d_in, generator=gen, dtype=torch.float64).float()
    y = (X @ torch.randn(d_in, k, generator=gen, dtype=torch.float64).float()).argmax(1)
    return X[:n], y[:n], X[n:], y[n:]


def _loss(t: Trial, model, X, y, data: str = "X") -> float:
    """The mean cross-entropy of the model's logits on (X, y), computed here; finite, or the test fails."""
    out = t.tensor(t.invoke(model, X, no_grad=True).result, f"{model.label}({data})")
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
# figures quoted are the worst cases of benchmarks/part5_margins.py (in-process, as fractions), which
# reruns them. The losses on new examples are what catch a forward that memorised train's own X.
SMALL = dict(n=512, width=16, depth=2, steps=15, lr=0.1)           # d_in and k drawn per run
DEEP = dict(n=256, d_in=16, width=32, k=4, depth=16, steps=16, lr=0.1)
PLAIN_STEPS = 12      # plain_mlp at depth 16: fewer steps than DEEP's, all a stall needs
SHALLOW_STEPS = 24    # plain_mlp at depth 2, the deep plain test's control: an eighth of a deep step each
# Each bound with the worst case on each side (seeds: 300 for the small model and the reference's plain
# runs, 150 for the deep residual runs, 100 for the other runs). The small model's n is 512: with 128, a
# residual_mlp whose blocks lack the shortcut (part5-shortcut-missing, which keeps this test) did not
# generalise on 7 of 300 seeds.
SMALL_FALL = 0.7      # training loss / its start: reference <= 0.24, without the shortcut <= 0.63, without the
#                       first block's projection <= 0.67; zero_grad forgotten >= 0.75
HELD_SMALL = 0.85     # loss on new examples / its start: reference <= 0.30, without the shortcut <= 0.72;
#                       never stepped: exactly 1
DEEP_FIT = 0.55       # training loss / chance at depth 16: reference <= 0.066, first block without a shortcut
#                       (part5-no-projection, which keeps this test) <= 0.424; a projection on every shortcut >= 0.733
HELD_DEEP = 0.9       # loss on new examples / its start: reference <= 0.54, first block without a shortcut
#                       <= 0.831; never stepped (the forwards that memorise train's X): exactly 1
SHALLOW_FIT = 0.45    # plain at depth 2, training loss / chance: reference <= 0.145, without the final
#                       LayerNorm <= 0.305; zero_grad forgotten >= 19
PLAIN_STALL = 0.7     # plain at depth 16, training loss / chance: reference >= 0.878, without the final
#                       LayerNorm >= 0.857; a plain block that adds x where it can <= 0.658


def _trained(t: Trial, builder: str, size: dict, d_in: int, k: int, depth: int, steps: int,
             before: bool = False) -> tuple[str, list[float]]:
    """The label of builder(d_in, size's width, k, depth) and its losses [on X, on X_held] after `steps` steps
    of full-batch train (size's lr) on a fresh teacher problem of size's n examples; before=True: the two
    losses at the start first."""
    X, y, X_held, y_held = teacher_problem(t.gen, size["n"], d_in, k)
    model = t.new(builder, d_in, size["width"], k, depth)
    measure = lambda: [_loss(t, model, X, y), _loss(t, model, X_held, y_held, "X_held")]
    start = measure() if before else []
    _train(t, model, X, y, steps, size["lr"], size["n"], t.rng.randrange(1000))
    return model.label, start + measure()


def _generalises(t: Trial, label: str, steps: int, held: float, bound: float, start: float) -> None:
    """Fails unless `held`, the loss on new examples, fell below bound * `start` (the untrained model's)."""
    if held > bound * start:
        t.fail(f"after {steps} steps of train, {label} has loss {held:.3f} on new examples of the same problem, "
               f"which train never saw (its start: {start:.3f}); the reference's falls below {bound} of its start on "
               "every seed. A model that learned the problem, not the training set, does as well on new examples.")


@test(5, 2, "train lowers the loss of a small residual_mlp", slow=True)
def train_lowers_loss(t: Trial):
    steps = SMALL["steps"]
    d_in, k = t.size(7, 11), t.size(3, 5)
    label, (before, held_before, after, held_after) = _trained(t, "residual_mlp", SMALL, d_in, k, SMALL["depth"],
                                                               steps, before=True)
    if after > SMALL_FALL * before:
        t.fail(f"after train(..., steps={steps}) the loss of {label} on its training set went from {before:.3f} "
               f"to {after:.3f}; in the reference {steps} steps cut it to under 0.3 of its start on every seed. Check "
               "that train updates the parameters of the model it was given, with fresh gradients each step, and uses "
               "X[idx] and y[idx] of the same idx.")
    _generalises(t, label, steps, held_after, HELD_SMALL, held_before)
    t.note(f"training loss {before:.3f} -> {after:.3f}, on new examples {held_before:.3f} -> {held_after:.3f}")


def _deep_loss(t: Trial, builder: str, depth: int, steps: int) -> tuple[str, float, float]:
    """(label, training loss, chance) of builder at `depth` after `steps` steps on DEEP's problem."""
    label, (loss, _) = _trained(t, builder, DEEP, DEEP["d_in"], DEEP["k"], depth, steps)
    return label, loss, math.log(DEEP["k"])


@test(5, 2, "at depth 16 residual_mlp trains", slow=True)
def deep_residual_trains(t: Trial):
    steps, chance = DEEP["steps"], math.log(DEEP["k"])
    label, (_, held_before, loss, held) = _trained(t, "residual_mlp", DEEP, DEEP["d_in"], DEEP["k"], DEEP["depth"],
                                                   steps, before=True)
    if loss > DEEP_FIT * chance:
        t.fail(f"{label} after {steps} steps of train: loss {loss:.3f} (chance is ln {DEEP['k']} = {chance:.3f}); the "
               f"reference's stays below {DEEP_FIT * chance:.3f} on every seed. A residual stack this deep trains "
               "only if every block adds its input back unscaled (alpha=1, the identity where the width stays the "
               "same) and the branches see ln(x).")
    _generalises(t, label, steps, held, HELD_DEEP, held_before)
    t.note(f"training loss {loss:.3f}, on new examples {held:.3f} (chance {chance:.3f})")


@test(5, 2, "at depth 16 plain_mlp stays near chance", slow=True)
def deep_plain_stalls(t: Trial):
    steps = PLAIN_STEPS
    label, loss, chance = _deep_loss(t, "plain_mlp", DEEP["depth"], steps)
    # A stall says something about depth only where the same train fits the same plain network shallow.
    shallow_label, shallow, _ = _deep_loss(t, "plain_mlp", 2, SHALLOW_STEPS)
    if shallow > SHALLOW_FIT * chance:
        t.fail(f"{shallow_label} reached only loss {shallow:.3f} in {SHALLOW_STEPS} steps (chance {chance:.3f}); a "
               "two-block plain network fits this problem in the reference, so check train and plain_mlp before "
               "reading anything into the deep one.")
    if loss < PLAIN_STALL * chance:
        t.fail(f"{label} trained to loss {loss:.3f} in {steps} steps (chance {chance:.3f}); a plain stack this "
               "deep stays near chance in the reference. Does your plain block add its input back (a shortcut)?")
    t.note(f"training loss {loss:.3f} (chance {chance:.3f})")


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
