"""Part 1 of residual-connections' hidden tests: residual_add, Residual, ProjectionShortcut and ResidualFFN."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...kit import Trial, describe, excerpt, shape_in, show
from .suite import (F64, check_ffn_part, check_shortcut_part, ffn_alternatives, ffn_of, ffn_weights, load_as_stated,
                    spec, test)


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


@test(1, 1, "ResidualFFN's layers: Linear(d_in, e*d_out), GELU, Linear(e*d_out, d_out)", misconception="ffn-layers")
def ffn_layers(t: Trial):
    # by behaviour: the grader's weights loaded at ffn[0], ffn[2] (and shortcut.proj), then block.ffn and
    # block.shortcut called by those names on the grader's input; the default expansion is 4
    d = t.size()
    for d_in, d_out, e in ((d, d, None), (t.size(), t.size(), t.choice([2, 3]))):
        block = t.new("ResidualFFN", d_in, d_out, *([e] if e else []), double=True)
        hidden = (e or 4) * d_out
        w = ffn_weights(t, d_in, d_out, hidden)
        if d_in != d_out:
            w["shortcut.proj.weight"] = t.randn(d_out, d_in, dtype=F64, scale=0.4)
        load_as_stated(t, block, w, f"ResidualFFN(d_in, d_out, expansion={e or 4}) has ffn = Sequential(Linear(d_in, "
                        f"{e or 4} * d_out), GELU(), Linear({e or 4} * d_out, d_out)); expansion defaults to 4.")
        x = t.randn(t.size(1, 5), d_in, dtype=F64)
        check_ffn_part(t, block, "ffn", w, x, hidden, d_out)
        check_shortcut_part(t, block, "shortcut", x, w.get("shortcut.proj.weight"))


@test(1, 2, "ResidualFFN computes shortcut(x) + ffn(x)", misconception="ffn-layers")
def ffn_forward(t: Trial):
    d = t.size()
    for d_in, d_out in ((d, d), (d, d + 2 * t.size(1, 5))):
        e = t.choice([1, 2, 3])
        block = t.new("ResidualFFN", d_in, d_out, e, double=True)
        w = ffn_weights(t, d_in, d_out, e * d_out)
        if d_in != d_out:
            w["shortcut.proj.weight"] = t.randn(d_out, d_in, dtype=F64, scale=0.4)
        t.load(block, w)
        x = t.randn(t.size(1, 5), t.size(), d_in, dtype=F64)
        ffn = ffn_of(w, x)
        shortcut = x if d_in == d_out else x @ w["shortcut.proj.weight"].T
        out = t.tensor(t.invoke(block, x).result, block.label)
        t.check(out, shortcut + ffn, f"{block.label}(x)", "forward must be residual_add(shortcut(x), ffn(x))",
                rtol=1e-9, atol=1e-10, alternatives=[
                    ("the shortcut is missing: it returns ffn(x) only", ffn, "shortcut-missing"),
                    *ffn_alternatives(w, x, base=shortcut)])
