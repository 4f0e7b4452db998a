"""Objects the residual-connections tests hand to a submission, built from plain data.

A spec is [KIND, *params]; SPECS[KIND](*params) builds the object. The grader
builds the same objects for the reference, and the sandbox child builds them
for the student's functions, so both see identical branches. Imported in the
child before any student code: the torch and math functions used are bound here.

    ["pair", family, a, b]      (F, dF) for the scalar stack of Part 2: float -> float, math only
    ["derivative", family, a, b]   dF alone
    ["branch", kind, *tensors]  an nn.Module x -> F(x) for Parts 1, 3 and 4 (see Branch)
    ["mlp", W1, b1, W2, b2]     Part 5: a trainable Sequential(Linear, ReLU, Linear) with these weights
    ["stack", shortcut, W, b, ..., Wh, bh]
                                Part 5: Sequential(fixed TanhBlocks, a Linear head) for grad_norms
    ["residual_mlp", d_in, width, d_out, depth]
                                Part 5: the contract's residual_mlp, the grader's own, for train to train
    ["trainer"]                 Part 5: the grader's own train (`fit`), for the tests that judge a model
    ["initialise"]              Part 5: PyTorch's start for a model's Linears and LayerNorms, before those tests
    ["layer_outputs"], ["layers"]
                                Part 5: how a model built at one depth compares with the builder's at another
"""
from __future__ import annotations

import math

import torch
from torch import nn

_sin, _cos, _tanh, _exp, _log1p = math.sin, math.cos, math.tanh, math.exp, math.log1p
_t_tanh, _t_zeros_like, _linear = torch.tanh, torch.zeros_like, torch.nn.functional.linear
_cross_entropy, _grad, _no_grad = torch.nn.functional.cross_entropy, torch.autograd.grad, torch.no_grad
_equal, _dict_values, _dict_items, _Module = torch.equal, dict.values, dict.items, nn.Module
_Linear, _LayerNorm, _reset_linear, _reset_norm = nn.Linear, nn.LayerNorm, nn.Linear.reset_parameters, \
    nn.LayerNorm.reset_parameters
_clone, _mul_, _add_, _item = torch.Tensor.clone, torch.Tensor.mul_, torch.Tensor.add_, torch.Tensor.item
_copy_, _zeros_like, _randn, _Generator = torch.Tensor.copy_, torch.zeros_like, torch.randn, torch.Generator
_sum, _mul, _div, _allclose, _f64 = torch.sum, torch.mul, torch.div, torch.allclose, torch.float64
_rng_state, _set_rng_state, _manual_seed = torch.get_rng_state, torch.set_rng_state, torch.manual_seed
_Tensor = torch.Tensor
_state_dict, _load_state_dict = nn.Module.state_dict, nn.Module.load_state_dict
_object_attribute = object.__getattribute__


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + _exp(-z))


# family -> (F, dF) as functions of (a, b, x); smooth on the whole real line
MATH = {
    "sin": (lambda a, b, x: a * _sin(b * x), lambda a, b, x: a * b * _cos(b * x)),
    "tanh": (lambda a, b, x: a * _tanh(b * x), lambda a, b, x: a * b * (1.0 - _tanh(b * x) ** 2)),
    "square": (lambda a, b, x: a * x * x + b * x, lambda a, b, x: 2.0 * a * x + b),
    "bump": (lambda a, b, x: a * _exp(-b * x * x), lambda a, b, x: -2.0 * a * b * x * _exp(-b * x * x)),
    "softplus": (lambda a, b, x: a * _log1p(_exp(b * x)), lambda a, b, x: a * b * _sigmoid(b * x)),
}


def pair(family: str, a: float, b: float):
    """(F, dF) for one block of the scalar stack."""
    f, df = MATH[family]
    return (lambda x: f(a, b, x)), (lambda x: df(a, b, x))


def derivative(family: str, a: float, b: float):
    return pair(family, a, b)[1]


class Branch(nn.Module):
    """A branch or block, (*, d) -> (*, d) (or (*, d_out) for "linear"):

        zero             0 (ignores its input)
        scale c          c * x
        linear W b       x W^T + b
        tanh W b         tanh(x W^T + b)
        residual W b     x + tanh(x W^T + b)
    """

    def __init__(self, kind: str, *params):
        super().__init__()
        self.kind = kind
        self.c = params[0] if kind == "scale" else None
        for name, value in zip(("weight", "bias"), params if kind in ("linear", "tanh", "residual") else ()):
            self.register_buffer(name, value)

    def forward(self, x):
        if self.kind == "zero":
            return _t_zeros_like(x)
        if self.kind == "scale":
            return self.c * x
        z = _linear(x, self.weight, self.bias)
        if self.kind == "linear":
            return z
        if self.kind == "tanh":
            return _t_tanh(z)
        return x + _t_tanh(z)


def _linear_layer(weight, bias) -> nn.Linear:
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        layer.weight.copy_(weight)
        layer.bias.copy_(bias)
    return layer


def mlp(w1, b1, w2, b2) -> nn.Sequential:
    """(*, d) -> (*, k): Linear(d, h), ReLU, Linear(h, k), trainable, so that train is graded on a
    model the grader built (a wrong builder costs only the builder tests)."""
    return nn.Sequential(_linear_layer(w1, b1), nn.ReLU(), _linear_layer(w2, b2))


class TanhBlock(nn.Module):
    """(*, d) -> (*, d): x + tanh(x W^T + b), or tanh(x W^T + b) without the shortcut."""

    def __init__(self, weight, bias, shortcut: bool):
        super().__init__()
        self.shortcut = shortcut
        self.register_buffer("weight", weight)
        self.register_buffer("bias", bias)

    def forward(self, x):
        z = _t_tanh(_linear(x, self.weight, self.bias))
        return x + z if self.shortcut else z


def stack(shortcut: bool, *tensors) -> nn.Sequential:
    """TanhBlocks from (W, b) pairs, then a Linear head (the last pair)."""
    *blocks, wh, bh = tensors
    pairs = zip(blocks[0::2], blocks[1::2])
    return nn.Sequential(*(TanhBlock(w, b, shortcut) for w, b in pairs), _linear_layer(wh, bh))


class PreLNBlock(nn.Module):
    """(*, d_in) -> (*, d_out): shortcut(x) + ffn(ln(x)), the reference's ResidualBlock with alpha = branch_scale = 1:
    ln = LayerNorm(d_in), shortcut a Linear(d_in, d_out) without bias where the width changes (else x itself),
    ffn = Sequential(Linear(d_in, d_out), GELU, Linear(d_out, d_out))."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.ln = nn.LayerNorm(d_in)
        self.shortcut = nn.Identity() if d_in == d_out else nn.Linear(d_in, d_out, bias=False)
        self.ffn = nn.Sequential(nn.Linear(d_in, d_out), nn.GELU(), nn.Linear(d_out, d_out))

    def forward(self, x):
        return self.shortcut(x) + self.ffn(self.ln(x))


def residual_mlp(d_in: int, width: int, d_out: int, depth: int) -> nn.Sequential:
    """(B, d_in) -> (B, d_out): depth PreLNBlocks, a final LayerNorm and a Linear head, laid out as residual_mlp's
    contract, with PyTorch's default initialisation drawn in the child: train is graded on a model the
    grader built, which only what train does to it can make learn."""
    blocks = [PreLNBlock(d_in if l == 0 else width, width) for l in range(depth)]
    return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))


# The step of fit's central differences, along a unit direction in a third of the parameters: at 1e-2 the curvature
# of a deep plain stack along its gradient moved the slope by over 1%, at 1e-4 float32's rounding of the loss moved a
# small one by 1e-3 (benchmarks/part5_slopes.py gives the margin this leaves)
H = 1e-3


def fit(model, X, y, steps: int, lr: float, seed: int) -> list:
    """The contract's train on the whole set at every step (batch = len(X)), written by the grader: SGD with
    momentum 0.9 on the mean cross-entropy of model(X). The tests that judge a model's training (does a deep
    residual_mlp train, does a deep plain_mlp stall) train it so, and judge the submission's train on its own: a
    train that told the grader's models apart could otherwise decide how a model trains. model: an nn.Module
    (n, d_in) -> (n, k); X (n, d_in); y (n,). [the loss before each step's update, [[step, *pair] for each pair of
    _slopes at the first step and at a later one drawn from seed]]. A model cannot tell which later step is checked
    before its backward has run: one whose backward leaves its forward at most steps is caught at most draws. The
    later check leaves out the gradient's own direction in the first third: once a plain stack has stalled, its
    loss can curve there so sharply along its tiny gradient that a central difference misses the slope (by 5 times
    the tolerance on 1 seed of 100). A model that fakes a stall keeps its gradient from the layers near the head.
    The third item is the first step at which the model's forward or backward changed one of its own parameters
    (putting back its start, say), or -1: SGD alone moves them."""
    params = [p for p in _own_parameters(model) if p.requires_grad]
    velocity, losses, slopes, changed = [None] * len(params), [], [], -1
    checked = {0, 1 + seed % (steps - 1)} if steps > 1 else {0}
    for step in range(steps):
        rng, before = _rng_state(), [_clone(p.detach()) for p in params]
        loss = _cross_entropy(model(X), y)
        losses.append(_item(loss))
        grads = _grad(loss, params, allow_unused=True)
        if changed < 0 and not all(_equal(p, b) for p, b in zip(params, before)):
            changed = step
        if step in checked:
            slopes += [[step, *pair] for pair in _slopes(model, X, y, params, grads, rng, seed + step,
                                                         range(3) if step == 0 else range(1, 3))]
        with _no_grad():
            for i, (p, g) in enumerate(zip(params, grads)):
                if g is not None:      # torch.optim.SGD's momentum: v = 0.9 v + g (v = g at first), p -= lr v
                    velocity[i] = _clone(g) if velocity[i] is None else _add_(_mul_(velocity[i], 0.9), g)
                    _add_(p, velocity[i], alpha=-lr)
    return [losses, slopes, changed]


def initialise(model, seed: int) -> None:
    """Every nn.Linear and nn.LayerNorm of model (subclasses too) initialised as PyTorch initialises it, from
    torch's RNG seeded with seed, but those of a block's shortcut. The deep tests judge what depth does to an
    architecture at PyTorch's default start: a start of the builder's own (a zero head at depth 16, branches that
    begin as the identity) could make a plain stack stall or one without its shortcut train. A shortcut keeps its
    start, which is part of what it computes: a square projection set to the identity computes x (a mistake that
    shortcut_identity judges), where PyTorch's start would make it a random projection."""
    _manual_seed(seed)
    for m in _own_modules(model, leave_out="shortcut"):
        if isinstance(m, _Linear):
            _reset_linear(m)
        elif isinstance(m, _LayerNorm):
            _reset_norm(m)


def _own_modules(model, leave_out: str = "") -> list:
    """model and its submodules, each once, in nn.Module.modules' order, from each module's own _modules dict; with
    leave_out, none registered under that name, nor theirs."""
    found, seen, stack = [], set(), [model]
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        found.append(m)
        stack.extend(reversed([c for name, c in _dict_items(_modules(m)) if isinstance(c, _Module)
                               and name != leave_out]))
    return found


def _own_parameters(model) -> list:
    """Every parameter of model and its submodules, each once, in nn.Module.parameters' order, read from each
    module's own _parameters and _modules dicts: a class that overrides parameters() or named_parameters() leaves
    none out of the grader's training."""
    found = {id(p): p for m in _own_modules(model) for p in _dict_values(_object_attribute(m, "_parameters"))
             if isinstance(p, _Tensor)}
    return list(found.values())


def _dot(a, b) -> float:
    return _item(_sum(_mul(a, b), dtype=_f64))


def _slopes(model, X, y, params: list, grads: tuple, rng, seed: int, along_gradient=range(3)) -> list:
    """[[the gradient's component along v, the loss's slope along v from the forward alone], ...]: does the
    model's backward give the gradient of what its forward computes? v is a unit direction in one third of the
    parameters (in their order), a random one and, in the thirds along_gradient names where the gradient there is
    not zero, its own; the slope is (L(p + H v) - L(p - H v)) / 2H, each loss computed as training computes it,
    with the RNG as the gradient's forward found it (a dropout draws the same masks), and the parameters put back
    exactly after."""
    gen, out = _Generator().manual_seed(seed), []
    grads = [_zeros_like(p) if g is None else g for p, g in zip(params, grads)]
    for third in range(3):
        at = list(range(third * len(params) // 3, (third + 1) * len(params) // 3))
        if not at:
            continue
        saved = [_clone(params[i].detach()) for i in at]
        drawn = [_randn(params[i].shape, generator=gen, dtype=params[i].dtype) for i in at]
        for v in (drawn, [grads[i] for i in at]) if third in along_gradient else (drawn,):
            norm = sum(_dot(d, d) for d in v) ** 0.5
            if norm == 0:
                continue
            v = [_div(d, norm) for d in v]
            losses = []
            for sign in (1, -1):
                with _no_grad():
                    for i, d in zip(at, v):
                        _add_(params[i], d, alpha=sign * H)
                _set_rng_state(rng)
                losses.append(_item(_cross_entropy(model(X), y)))
                with _no_grad():
                    for i, s in zip(at, saved):
                        _copy_(params[i], s)
            out.append([sum(_dot(grads[i], d) for i, d in zip(at, v)), (losses[0] - losses[1]) / (2 * H)])
    return out


def _modules(m) -> dict:
    """What nn.Sequential's forward runs, in order, a module placed twice counted twice (children() counts it once)."""
    return _object_attribute(m, "_modules")


def layer_outputs(model, X, seed: int) -> list:
    """[[what each of model's layers was handed, what it returned], ...] on X, the layers applied in order, each
    with torch's RNG seeded with seed (a dropout draws the same masks at every call compared); [] where they do
    not apply in order. Taken from the shallow model before the deep one is built, so that nothing the deep
    builder changes (a class attribute, a global) reaches what layers compares with."""
    try:
        h, out = X, []
        for layer in _modules(model).values():
            _manual_seed(seed)
            y = layer(h)
            out.append([h, y])
            h = y
        return out
    except Exception:
        return []


def layers(model, shallow, X, depth: int, shallow_depth: int, seen: list, seed: int) -> list:
    """How model, a builder's at `depth`, compares with shallow, the same builder's at `shallow_depth`: [the
    number of model's layers (the modules an nn.Sequential runs, in order), of shallow's, whether model(X) is its
    layers applied in order, the positions of model's layers that, given the weights of any one of shallow's
    layers, compute otherwise than that layer did before model was built (seen: layer_outputs of shallow,
    with seed)]; [] where model's layers do not apply in order at all (a layout other than the contract's, which the
    structure tests judge)."""
    try:
        mine, theirs = list(_modules(model).values()), list(_modules(shallow).values())
        rng, h = _rng_state(), X
        for layer in mine:
            h = layer(h)
        _set_rng_state(rng)
        whole = model(X)
    except Exception:
        return []
    chain = type(whole) is type(h) and whole.shape == h.shape and _allclose(whole, h, rtol=1e-5, atol=1e-6)
    return [len(mine), len(theirs), bool(chain),
            [i for i, layer in enumerate(mine)
             if not any(_same(layer, twin, *pair, seed) for twin, pair in zip(theirs, seen))]]


def _same(layer, twin, x, y, seed: int) -> bool:
    """Whether layer, given twin's weights, computes y on x, as twin did; its own weights and buffers are put back
    exactly after. Not on a copy: torch refuses to deep-copy a layer that keeps a tensor of its last forward's
    graph (an output kept to look at later), which is no mistake."""
    try:
        if type(twin) is not type(layer):
            return False
        own = {k: _clone(v) if isinstance(v, _Tensor) else v for k, v in _state_dict(layer).items()}
        try:
            _load_state_dict(layer, _state_dict(twin))
            _manual_seed(seed)
            out = layer(x)
        finally:
            _load_state_dict(layer, own)
        return out.shape == y.shape and _allclose(out, y, rtol=1e-5, atol=1e-6)
    except Exception:
        return False


SPECS = {"pair": pair, "derivative": derivative, "branch": Branch, "mlp": mlp, "stack": stack,
         "residual_mlp": residual_mlp, "trainer": lambda: fit, "initialise": lambda: initialise,
         "layer_outputs": lambda: layer_outputs, "layers": lambda: layers}


def warm_up() -> None:
    """Run in the fork server once, so that children do not each pay torch's first-call costs, nor have the
    monitor see them: nbtest.first_calls, which the public tests' monitor runs too. The first optimizer step
    (1.5 s) the fork server takes only before a child whose code names torch.optim (Zygote.spawn)."""
    import nbtest
    nbtest.first_calls(optimizer=False)
