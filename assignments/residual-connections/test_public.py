"""Public tests for residual-connections: run `pytest` in this folder.

Each test takes `nb`, the code of your notebook's solution cells. These tests use
fixed inputs and give fast feedback; the graded tests are different, use inputs
drawn at grading time, and check more. Passing here is necessary, not sufficient.
"""
import contextlib
import math

import torch
import torch.nn.functional as F
from nbtest import follows_rules, names_shape, value_error
from nbtest.layers import as_layer
from torch import nn


def _linears(module: nn.Module) -> list:
    """The Linear layers inside module, in order (the FFN's two, wherever the block keeps them)."""
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


# ---------------------------------------------------------------- Part 1

def test_part1_residual_add_values_and_shape(nb):
    x = torch.arange(24.0).reshape(2, 3, 4)
    fx = torch.full((2, 3, 4), 0.5)
    out = nb.residual_add(x, fx)
    assert isinstance(out, torch.Tensor), f"residual_add must return a Tensor, got {type(out).__name__}"
    assert out.shape == x.shape, f"output shape {tuple(out.shape)}, expected {tuple(x.shape)}"
    assert torch.equal(out, x + fx), "residual_add(x, fx) must equal x + fx element by element"


def test_part1_residual_add_rejects_broadcasting(nb):
    x, fx = torch.zeros(2, 3, 1), torch.zeros(2, 3, 8)
    msg = value_error(lambda: nb.residual_add(x, fx), "residual_add(x of shape (2, 3, 1), fx of shape (2, 3, 8))")
    assert names_shape(msg, (2, 3, 1)) and names_shape(msg, (2, 3, 8)), (
        f"the ValueError must name both shapes, (2, 3, 1) and (2, 3, 8); it said: {msg!r}")


def test_part1_residual_add_rejects_other_shapes(nb):
    msg = value_error(lambda: nb.residual_add(torch.zeros(4, 768), torch.zeros(4, 3072)),
                       "residual_add(x of shape (4, 768), fx of shape (4, 3072))")
    assert names_shape(msg, (4, 768)) and names_shape(msg, (4, 3072)), (
        f"the ValueError must name both shapes, (4, 768) and (4, 3072); it said: {msg!r}")


def test_part1_residual_add_leaves_inputs_alone(nb):
    x, fx = torch.ones(3, 5), torch.full((3, 5), 2.0)
    out = nb.residual_add(x, fx)
    assert torch.equal(x, torch.ones(3, 5)) and torch.equal(fx, torch.full((3, 5), 2.0)), (
        "in-place add: residual_add changed one of its inputs (x += fx or x.add_(fx)); "
        "the stream x is still needed, return a new tensor")
    assert out.data_ptr() not in (x.data_ptr(), fx.data_ptr()), (
        "in-place add: the result shares memory with an input")


def test_part1_residual_add_gradients_reach_both(nb):
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(0), requires_grad=True)
    fx = torch.randn(2, 3, generator=torch.Generator().manual_seed(1), requires_grad=True)
    nb.residual_add(x, fx).sum().backward()
    for name, t in (("x", x), ("fx", fx)):
        assert t.grad is not None, f"no gradient reached {name}: the add was detached"
        assert torch.equal(t.grad, torch.ones(2, 3)), (
            f"d(sum)/d{name} must be all ones through an unscaled add; got {t.grad.tolist()}")


def test_part1_residual_zero_sublayer_is_identity(nb):
    lin = nn.Linear(6, 6)
    nn.init.zeros_(lin.weight)
    nn.init.zeros_(lin.bias)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(2))
    assert torch.equal(nb.Residual(lin)(x), x), (
        "Residual with a zero sublayer must return x exactly: forward is x + sublayer(x)")


def test_part1_residual_refuses_shape_change(nb):
    lin = nn.Linear(6, 1)
    value_error(lambda: nb.Residual(lin)(torch.zeros(4, 6)),
                 "Residual with a sublayer (4, 6) -> (4, 1) (forward must go through residual_add)")


def test_part1_projection_shortcut(nb):
    same = nb.ProjectionShortcut(768, 768)
    assert sum(p.numel() for p in same.parameters()) == 0, (
        "an identity shortcut (d_in == d_out) must have no parameters")
    x = torch.randn(2, 768)
    assert torch.equal(same(x), x), "ProjectionShortcut(768, 768) must return x unchanged"
    proj = nb.ProjectionShortcut(768, 3072)
    assert isinstance(getattr(proj, "proj", None), nn.Linear), "expected attribute proj = nn.Linear"
    assert proj.proj.bias is None, "the projection is x W_s: nn.Linear(d_in, d_out, bias=False)"
    assert proj(x).shape == (2, 3072), f"(2, 768) in must give (2, 3072) out, got {tuple(proj(x).shape)}"
    assert torch.allclose(proj(x), x @ proj.proj.weight.T), "ProjectionShortcut(768, 3072)(x) must be proj(x)"


def test_part1_residual_ffn_shapes(nb):
    block = nb.ResidualFFN(768, 768)
    widths = [m.out_features for m in block.ffn if isinstance(m, nn.Linear)]
    assert widths == [3072, 768], f"expected the FFN to widen to 3072 and come back to 768, got {widths}"
    x = torch.randn(2, 5, 768)
    out = block(x)
    assert out.shape == (2, 5, 768), f"(2, 5, 768) in must give (2, 5, 768) out, got {tuple(out.shape)}"
    assert torch.allclose(out, x + as_layer(block.ffn)(x), atol=1e-6), "forward must be shortcut(x) + ffn(x)"
    wide = nb.ResidualFFN(16, 32, expansion=2)
    y = torch.randn(3, 16)
    assert torch.allclose(wide(y), wide.shortcut(y) + as_layer(wide.ffn)(y), atol=1e-6), (
        "with d_in != d_out the shortcut must project x before the add")


# ---------------------------------------------------------------- Part 2

def _square_branch():
    return (lambda x: 0.1 * x ** 2, lambda x: 0.2 * x)


def test_part2_worked_example(nb):
    got = nb.chain_rule_grad(2.0, [_square_branch()], upstream=5.0)
    assert math.isclose(got, 7.0, rel_tol=1e-5), (
        f"x0 = 2, F(x) = 0.1 x^2, upstream 5: dL/dx0 = 5 * (1 + 0.2*2) = 7.0, got {got}")


def test_part2_two_blocks(nb):
    # x1 = 2.4, x2 = 2.4 + 0.576 = 2.976; dL/dx0 = 5 * (1 + 0.48) * (1 + 0.4) = 10.36
    got = nb.chain_rule_grad(2.0, [_square_branch(), _square_branch()], upstream=5.0)
    assert math.isclose(got, 10.36, rel_tol=1e-5), (
        f"two blocks: each derivative is taken at that block's own input (x0 = 2, then x1 = 2.4); "
        f"expected 10.36, got {got}")


def test_part2_math_branches_and_alpha(nb):
    branches = [(math.sin, math.cos), (math.tanh, lambda x: 1 - math.tanh(x) ** 2)]
    x0, up, alpha = 0.3, 2.0, 0.5
    x1 = alpha * x0 + math.sin(x0)
    expected = up * (alpha + math.cos(x0)) * (alpha + 1 - math.tanh(x1) ** 2)
    got = nb.chain_rule_grad(x0, branches, upstream=up, alpha=alpha)
    assert math.isclose(got, expected, rel_tol=1e-5), (
        f"scaled shortcut: each block's local derivative is alpha + F'(x_l); expected {expected}, got {got}")


def test_part2_split_gradient(nb):
    identity, branch = nb.split_gradient(2.0, lambda x: 0.2 * x, 5.0)
    assert math.isclose(identity, 5.0, rel_tol=1e-5) and math.isclose(branch, 2.0, rel_tol=1e-5), (
        f"the identity path carries upstream * 1 = 5.0 and the branch upstream * F'(x0) = 2.0; "
        f"got ({identity}, {branch})")


# ---------------------------------------------------------------- Part 3

def _zero_branch(x):
    return torch.zeros_like(x)


def test_part3_shape_and_last_entry(nb):
    norms = nb.gradient_norms(torch.ones(4), [_zero_branch] * 3)
    assert isinstance(norms, torch.Tensor) and norms.shape == (4,), (
        f"expected a tensor of shape (len(branches) + 1,) = (4,), got {getattr(norms, 'shape', norms)}")
    assert norms.dtype == torch.float64, (
        f"expected float64, got {norms.dtype}: in float32 a ratio like 0.5 ** 100 underflows to 0 when squared")
    assert math.isclose(float(norms[-1]), 1.0), "the last entry is ||dL/dx_L|| / ||dL/dx_L|| = 1"


def test_part3_scaled_shortcut_decays(nb):
    for depth in (1, 10, 40):
        norms = nb.gradient_norms(torch.ones(8), [_zero_branch] * depth, alpha=0.5)
        assert math.isclose(float(norms[0]), 0.5 ** depth, rel_tol=1e-6), (
            f"scaled shortcut 0.5 x: after {depth} blocks the gradient is 0.5**{depth} = "
            f"{0.5 ** depth:.3g}, got {float(norms[0]):.3g}")


def test_part3_identity_survives_depth_100(nb):
    norms = nb.gradient_norms(torch.ones(8), [_zero_branch] * 100)
    assert torch.allclose(norms.double(), torch.ones(101, dtype=torch.float64)), (
        "with alpha = 1 and zero branches every entry must be 1: the identity path alone carries "
        "the gradient back through 100 blocks")


def test_part3_plain_stack(nb):
    norms = nb.gradient_norms(torch.ones(5), [lambda x: 0.5 * x] * 4, shortcut=False)
    expected = torch.tensor([0.5 ** 4, 0.5 ** 3, 0.5 ** 2, 0.5, 1.0], dtype=torch.float64)
    assert torch.allclose(norms.double(), expected), (
        f"shortcut=False builds x_(l+1) = F(x_l) with no identity path; expected "
        f"{expected.tolist()}, got {norms.tolist()}")


# ---------------------------------------------------------------- Part 4

def _reference_layer(block, norm_first):
    d = block.ln1.normalized_shape[0]
    ref = nn.TransformerEncoderLayer(d, block.attn.num_heads, dim_feedforward=4 * d, dropout=0.0,
                                     activation="gelu", batch_first=True, norm_first=norm_first)
    ref.self_attn.load_state_dict(block.attn.state_dict())
    first, second = _linears(block.ffn)
    ref.linear1.load_state_dict(first.state_dict())
    ref.linear2.load_state_dict(second.state_dict())
    ref.norm1.load_state_dict(block.ln1.state_dict())
    ref.norm2.load_state_dict(block.ln2.state_dict())
    return ref.double().eval()


def test_part4_matches_encoder_layer(nb):
    x = torch.randn(2, 5, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    for norm, other in (("pre", "post"), ("post", "pre")):
        torch.manual_seed(3)
        block = nb.TransformerBlock(16, 4, norm=norm).double().eval()
        ref = _reference_layer(block, norm_first=(norm == "pre"))
        for causal in (False, True):
            got = block(x, causal=causal)
            want = ref(x, src_mask=mask if causal else None, is_causal=causal)
            assert got.shape == x.shape, f"shape {tuple(got.shape)}, expected {tuple(x.shape)}"
            err = (got - want).abs().max().item()
            assert err < 1e-6, (
                f"norm={norm!r}, causal={causal}: differs from the {norm}-LN reference by {err:.2e}. "
                f"Check the order of LayerNorm and the add (is this the {other}-LN layout?) "
                f"and, for causal, that position t attends only to positions <= t")


def test_part4_built_from_parts(nb):
    block = nb.TransformerBlock(8, 2, norm="pre")
    assert isinstance(block.attn, nn.MultiheadAttention) and block.attn.batch_first, (
        "attn must be nn.MultiheadAttention(d_model, n_heads, batch_first=True)")
    assert isinstance(block.ln1, nn.LayerNorm) and isinstance(block.ln2, nn.LayerNorm), (
        "ln1 and ln2 must be nn.LayerNorm(d_model)")
    widths = [(m.in_features, m.out_features) for m in _linears(getattr(block, "ffn", nn.Identity()))]
    assert widths == [(8, 32), (32, 8)], (
        f"ffn must be the FFN of Part 1 (Linear(8, 32), GELU, Linear(32, 8) for d_model = 8); its Linear "
        f"layers are {widths or 'missing'}")
    assert not any(isinstance(m, nn.TransformerEncoderLayer) for m in block.modules()), (
        "build the block from attn, ln1, ln2 and ffn; do not wrap nn.TransformerEncoderLayer")


def test_part4_bad_norm(nb):
    msg = value_error(lambda: nb.TransformerBlock(8, 2, norm="mid"), "TransformerBlock(8, 2, norm='mid')")
    assert "pre" in msg and "post" in msg, (
        f"the ValueError must name the two choices, 'pre' and 'post'; it said {msg!r}")


def test_part4_pre_ln_zero_outputs_is_identity(nb):
    block = nb.TransformerBlock(8, 2, norm="pre")
    with torch.no_grad():
        for lin in (block.attn.out_proj, _linears(block.ffn)[-1]):
            lin.weight.zero_()
            lin.bias.zero_()
    x = torch.randn(2, 3, 8)
    assert torch.equal(block(x), x), (
        "a Pre-LN block whose output projections are zero must return x exactly: "
        "the stream is never normalised, only the branch inputs are")


def test_part4_residual_stream_norms(nb):
    x = torch.tensor([[[3.0, 4.0], [0.0, 1.0]]])  # token norms 5 and 1, mean 3
    blocks = [nn.Identity(), _Double()]
    norms = nb.residual_stream_norms(blocks, x)
    assert isinstance(norms, list) and len(norms) == 3, (
        f"expected a list of len(blocks) + 1 = 3 floats, got {norms!r}")
    assert [round(float(v), 6) for v in norms] == [3.0, 3.0, 6.0], (
        f"the mean per-token L2 norm before the blocks and after each: expected [3, 3, 6], got {norms}")


class _Double(nn.Module):
    def forward(self, x):
        return 2 * x


# ---------------------------------------------------------------- Part 5

def _blocks(model, depth):
    return [model[l] for l in range(depth)]


def _count(module):
    return sum(p.numel() for p in module.parameters())


def test_part5_plain_mlp_structure(nb):
    model = nb.plain_mlp(64, 16, 10, 3)
    assert isinstance(model, nn.Sequential) and len(model) == 5, (
        "plain_mlp(64, 16, 10, 3) must be an nn.Sequential of 3 blocks, the final LayerNorm and the head")
    for l, block in enumerate(_blocks(model, 3)):
        d = 64 if l == 0 else 16
        assert isinstance(block.ln, nn.LayerNorm) and block.ln.normalized_shape == (d,), (
            f"block {l}: ln must be nn.LayerNorm({d}), the block's input width")
        assert [type(m).__name__ for m in block.ffn] == ["Linear", "GELU", "Linear"], (
            f"block {l}: ffn must be Linear, GELU, Linear (ResidualFFN(d_in, width, expansion=1).ffn)")
        assert not hasattr(block, "shortcut"), f"block {l} has a shortcut; a plain block is ffn(ln(x))"
    assert isinstance(model[3], nn.LayerNorm) and isinstance(model[4], nn.Linear), (
        "model[depth] must be the final LayerNorm(width), model[depth + 1] the head Linear(width, d_out)")
    per_block = lambda d: 2 * d + d * 16 + 16 + 16 * 16 + 16
    want = per_block(64) + 2 * per_block(16) + 2 * 16 + 16 * 10 + 10
    assert _count(model) == want, f"plain_mlp(64, 16, 10, 3) has {_count(model)} parameters, expected {want}"
    out = model(torch.randn(5, 64))      # each block's forward runs: an nn.ModuleList ffn has none of its own
    assert out.shape == (5, 10), f"plain_mlp(64, 16, 10, 3) maps a (5, 64) batch to {tuple(out.shape)}, not (5, 10)"


def test_part5_residual_mlp_projects_only_where_the_width_changes(nb):
    model = nb.residual_mlp(64, 16, 10, 3)
    assert isinstance(model, nn.Sequential) and len(model) == 5, (
        "residual_mlp(64, 16, 10, 3) must be an nn.Sequential of 3 blocks, the final LayerNorm and the head")
    first = model[0].shortcut.proj
    assert isinstance(first, nn.Linear) and first.bias is None and tuple(first.weight.shape) == (16, 64), (
        "no projection where the width changes: block 0 maps 64 -> 16, so its shortcut needs "
        "proj = Linear(64, 16, bias=False) (ProjectionShortcut(64, 16))")
    for l in (1, 2):
        assert _count(model[l].shortcut) == 0, (
            f"block {l} keeps the width 16: its shortcut is the identity, with no parameters")
    assert isinstance(model[3], nn.LayerNorm), "model[depth] must be the final LayerNorm(width)"


def test_part5_zero_init_blocks_are_their_shortcut(nb):
    model = nb.residual_mlp(8, 8, 3, 2, zero_init=True)
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(model[1](model[0](x)), x), (
        "with zero_init=True each branch's last Linear (ffn[2]) starts at zero, so every block returns x exactly")
    scaled = nb.residual_mlp(8, 8, 3, 1, alpha=0.5, zero_init=True)
    assert torch.allclose(scaled[0](x), 0.5 * x), (
        "with alpha=0.5 and a zero branch a block returns 0.5 * x: alpha scales the shortcut")


def test_part5_alpha_scales_the_shortcut_not_the_branch(nb):
    torch.manual_seed(1)
    model = nb.residual_mlp(6, 6, 2, 1, alpha=0.5, branch_scale=3.0)
    block, x = model[0], torch.randn(4, 6, generator=torch.Generator().manual_seed(2))
    branch = as_layer(block.ffn)(block.ln(x))
    assert torch.allclose(block(x), 0.5 * x + 3.0 * branch, atol=1e-6), (
        "a block is alpha * shortcut(x) + branch_scale * ffn(ln(x)); scaling the branch instead of the "
        "shortcut, or ignoring alpha, gives a different output")


@contextlib.contextmanager
def _one_thread():
    """Models this small train fastest on one thread: more threads only add synchronisation, which costs
    seconds on a busy machine. The caller's setting is restored."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _tiny_problem():
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(96, 6, generator=gen)
    return X, (X @ torch.randn(6, 3, generator=gen)).argmax(1)


def test_part5_train_lowers_the_loss(nb):
    X, y = _tiny_problem()
    torch.manual_seed(0)
    model = nb.residual_mlp(6, 16, 3, 2)
    before = F.cross_entropy(model(X), y).item()
    with _one_thread():     # full batch: 15 steps cut the loss to 0.04 of its start (without zero_grad: 9x up)
        losses = nb.train(model, X, y, 15, lr=0.1, batch=len(X), seed=0)
    assert isinstance(losses, list) and len(losses) == 15, f"train must return 15 losses, got {losses!r}"
    after = F.cross_entropy(model(X), y).item()
    assert after < 0.7 * before, (
        f"15 steps of train (lr=0.1, the whole set each step) took the loss from {before:.3f} to {after:.3f} "
        "only; check that train calls opt.zero_grad(), loss.backward() and opt.step() on model.parameters()")


def test_part5_full_batch_train_is_sgd_with_momentum(nb):
    X, y = _tiny_problem()
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    params = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
    velocity, want = [torch.zeros_like(p) for p in params], []
    for _ in range(4):     # SGD with momentum 0.9 by hand, as torch.optim.SGD computes it
        w1, b1, w2, b2 = params
        loss = F.cross_entropy(F.linear(F.relu(F.linear(X, w1, b1)), w2, b2), y)
        with torch.no_grad():
            for p, v, g in zip(params, velocity, torch.autograd.grad(loss, params)):
                v.mul_(0.9).add_(g)
                p.sub_(0.1 * v)
        want.append(loss.item())
    with _one_thread():
        got = nb.train(model, X, y, 4, lr=0.1, batch=200)
    assert len(got) == 4 and all(math.isclose(a, b, rel_tol=1e-5) for a, b in zip(got, want)), (
        f"with batch >= len(X) every step sees the whole set: expected the losses {want} of SGD(lr=0.1, "
        f"momentum=0.9), each taken before its step; got {got}")


def test_part5_grad_norms(nb):
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 3))
    X, y = torch.randn(7, 4, generator=torch.Generator().manual_seed(5)), torch.tensor([0, 1, 2, 0, 1, 2, 0])
    x0 = X.clone().requires_grad_(True)
    x1 = model[0](x0)
    x2 = model[1](x1)
    want = [g.norm().item() for g in torch.autograd.grad(F.cross_entropy(model[2](x2), y), (x0, x1, x2))]
    got = nb.grad_norms(model, X, y, 2)
    assert len(got) == 3 and all(math.isclose(a, b, rel_tol=1e-5) for a, b in zip(got, want)), (
        f"entry l is ||dL/dx_l||, x_l the input of model[l] (x_0 = X), L the mean cross-entropy: "
        f"expected {want}, got {got}")
    assert not X.requires_grad, "grad_norms must leave X as it was (work on a detached copy)"


def test_part5_depth_sweep(nb):
    X, y = _tiny_problem()
    with _one_thread():
        curves = nb.depth_sweep(X, y, (1, 2), {"r": nb.residual_mlp}, 3, seeds=(0, 1), width=8)
    assert set(curves) == {("r", 1), ("r", 2)} and all(len(runs) == 2 for runs in curves.values()), (
        f"expected {{(kind, depth): [one loss list per seed]}} for depths 1, 2 and seeds 0, 1; got {curves}")
    torch.manual_seed(1)
    with _one_thread():
        want = nb.train(nb.residual_mlp(6, 8, 3, 2), X, y, 3, seed=1)
    assert curves["r", 2][1] == want, (
        "seed 1, depth 2: torch.manual_seed(seed), build the model, then train(model, X, y, steps, seed=seed)")


# ---------------------------------------------------------------- the rules (the notebook's "Rules the grader checks")

def test_part1_follows_the_rules(nb):
    follows_rules(1, __file__)


def test_part2_follows_the_rules(nb):
    follows_rules(2, __file__)


def test_part3_follows_the_rules(nb):
    follows_rules(3, __file__)


def test_part4_follows_the_rules(nb):
    follows_rules(4, __file__)


def test_part5_follows_the_rules(nb):
    follows_rules(5, __file__)
