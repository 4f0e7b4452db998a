"""Part 4 of residual-connections' hidden tests: TransformerBlock against nn.TransformerEncoderLayer with
the same weights, and residual_stream_norms.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ...kit import Trial
from .suite import F64, ffn_alternatives, ffn_of, spec, test


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
    ffn, out = ffn_of(weights, x), t.drive(block, "ffn", x)
    if out.shape != x.shape or not torch.allclose(out, x + ffn, rtol=1e-9, atol=1e-10):  # a whole ResidualFFN(d, d)
        t.check(out, ffn, f"{block.label}.ffn(x)", f"ffn must be the FFN of Part 1, Linear({d}, {4 * d}), GELU, "
                f"Linear({4 * d}, {d}) (ResidualFFN({d}, {d}).ffn), with the weights set in its two Linear layers",
                rtol=1e-9, atol=1e-10, alternatives=lambda: ffn_alternatives(weights, x))
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


@test(4, 2, "Pre-LN block with zero output projections is the identity")
def block_pre_identity(t: Trial):
    # Never with zero weights, which a block can tell apart (red team 37: a Post-LN block that returned x when
    # both were zero). The weights are block_pre's, the attention's output projection scaled by s, the FFN's last
    # Linear by c. A Pre-LN block computes z(s, c) = y + c f(y), y = x + s a, f and a what the branches give, so
    # m(s) = (z(s, c) + z(s, -c)) / 2 = x + s a, and m at s = 0, drawn through m(s1) and m(s2), is x.
    d, heads = _dims(t)
    block = t.new("TransformerBlock", d, heads, norm="pre", double=True)
    weights = _block_weights(t, d)
    x = t.randn(t.size(1, 3), t.size(3, 7), d, dtype=F64)
    s1, s2, c = t.uniform(0.5, 0.9), t.uniform(1.1, 1.5), t.uniform(0.5, 1.5)
    scaled = [{**weights, **{k: s * weights[k] for k in ("attn.out_proj.weight", "attn.out_proj.bias")},
               **{k: sign * c * weights[k] for k in ("ffn.2.weight", "ffn.2.bias")}}
              for s in (s1, s2) for sign in (1, -1)]

    def at_zero(outs: list) -> torch.Tensor:
        m1, m2 = (outs[0] + outs[1]) / 2, (outs[2] + outs[3]) / 2
        return (s2 * m1 - s1 * m2) / (s2 - s1)

    outs = []
    for w in scaled:
        _load_block(t, block, w)
        outs.append(t.tensor(t.invoke(block, x).result, f"{block.label}(x)"))
        if outs[-1].shape != x.shape:
            t.check(outs[-1], x, f"{block.label}(x)", "a block returns a tensor of its input's shape")
    with torch.no_grad():
        post = at_zero([_encoder(w, d, heads, pre=False, causal=False)(x) for w in scaled])
    t.check(at_zero(outs), x, f"{block.label}(x) at zero output projections, drawn through its outputs with the "
            f"attention's out_proj scaled by {s1:.3g} and {s2:.3g}, ffn[2] by +-{c:.3g}",
            "a Pre-LN block only adds to the stream: the output projections scale what the branches add, so with "
            "both at zero it returns x (only the branch inputs go through ln1 and ln2)", rtol=1e-9, atol=1e-9,
            alternatives=[("Pre/Post swapped: this is what a post-LN block gives", post, "pre-post-swapped")])


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
