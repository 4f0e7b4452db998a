"""Part 2 of residual-connections' hidden tests: chain_rule_grad and split_gradient on random scalar stacks."""
from __future__ import annotations

from ...kit import Trial
from .suite import spec, test

# float32 arithmetic (a torch.tensor of the scalars) is as right as Python's floats: a product of five blocks'
# factors computed in float32 is within 1e-6 of the exact one, and each misconception's answer is far outside
PART2_RTOL = 1e-5


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
            rtol=PART2_RTOL, atol=1e-12,
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
            rtol=PART2_RTOL,
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
                rtol=PART2_RTOL, atol=1e-12, alternatives=[
                    ("the two shares are swapped: the identity path comes first", want[::-1]),
                    ("hard-coded worked example: (5.0, 2.0) fits one example only", [5.0, 2.0], "hard-coded-example"),
                    ("the upstream gradient was not multiplied in", [1.0, df(x0)], "upstream-dropped")])
