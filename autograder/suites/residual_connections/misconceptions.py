"""The misconceptions residual-connections' hidden tests name, by id: what each means, and where
the notebook teaches it. A failure carries its id (kit/trial.py); the class report counts them.

Not secret: the ids and these lines appear in the instructor's class report, never in feedback.
"""
from __future__ import annotations

from ...kit import Misconception

P1, P2, P3, P4 = ("Part 1: shapes and shortcuts", "Part 2: the gradient highway, derived",
                  "Part 3: gradient survival across depth", "Part 4: the Transformer block, Pre-LN and Post-LN")

MISCONCEPTIONS = {m.id: m for m in [
    Misconception("silent-broadcasting", "x + fx broadcasts mismatched shapes instead of refusing them",
                  f"{P1}, residual_add"),
    Misconception("error-without-shapes", "the ValueError does not name both shapes, so the bad call cannot be found",
                  f"{P1}, residual_add"),
    Misconception("not-x-plus-fx", "the residual add is not x + fx (one operand, a difference or a scaled sum)",
                  f"{P1}, residual_add"),
    Misconception("dtype-changed", "a .float(), .double() or torch.tensor copy changes the stream's dtype",
                  f"{P1}, residual_add"),
    Misconception("in-place-add", "x += fx writes into the stream that the shortcut must still carry",
                  f"{P1}, residual_add"),
    Misconception("detached-gradient", ".detach(), .data or a copy cuts the graph: the gradient highway is gone",
                  f"{P1}, residual_add; {P3}"),
    Misconception("shortcut-missing", "the block returns the branch alone: the identity path is gone",
                  f"{P1}, Residual and ResidualFFN"),
    Misconception("projection-shortcut", "the shortcut is the identity when d_in == d_out, else x W_s with no bias",
                  f"{P1}, ProjectionShortcut"),
    Misconception("ffn-layers", "the FFN widens to expansion * d_out through exact GELU and comes back",
                  f"{P1}, ResidualFFN"),
    Misconception("derivative-at-wrong-point", "each F_l' must be taken at the block's own input x_l",
                  f"{P2}, the chain rule through blocks"),
    Misconception("scaled-shortcut-ignored", "with x_(l+1) = alpha x_l + F(x_l) each block's factor is alpha + F'(x_l)",
                  f"{P2}, scaled shortcuts; {P3}"),
    Misconception("chain-rule-added", "the blocks' local derivatives multiply along the chain; they do not add",
                  f"{P2}, the chain rule through blocks"),
    Misconception("upstream-dropped", "the upstream gradient dL/dx_L multiplies every term", f"{P2}"),
    Misconception("hard-coded-example", "returns the worked example's numbers instead of computing them",
                  f"{P2}, the worked example"),
    Misconception("gradient-split", "the identity path passes upstream unchanged, the branch upstream * F'(x0)",
                  f"{P2}, split_gradient"),
    Misconception("norms-underflow", "ratios such as 0.5 ** 100 underflow when squared in float32: the norms "
                  "are float64", f"{P3}, gradient_norms"),
    Misconception("norms-normalisation", "entry l is ||dL/dx_l|| / ||dL/dx_L||, from x_0 to x_L",
                  f"{P3}, gradient_norms"),
    Misconception("shortcut-flag-ignored", "shortcut=False removes the identity path: x_(l+1) = F_l(x_l)",
                  f"{P3}, plain stacks"),
    Misconception("pre-post-swapped", "Pre-LN normalises the branch input and adds to the raw stream; "
                                      "Post-LN normalises the sum", f"{P4}"),
    Misconception("layernorms-swapped", "ln1 belongs to the attention sublayer, ln2 to the FFN", f"{P4}"),
    Misconception("missing-causal-mask", "with causal=True position t attends only to positions <= t",
                  f"{P4}, causal attention"),
    Misconception("causal-mask-inverted", "the mask's True entries are the future: above the diagonal",
                  f"{P4}, causal attention"),
    Misconception("block-structure", "the block is built from attn, ln1, ln2 and ffn, nothing wrapped or added",
                  f"{P4}"),
    Misconception("norm-not-validated", "an unknown norm must raise ValueError, not pick a layout silently", f"{P4}"),
    Misconception("stream-norm-definition", "the mean over tokens of each token's L2 norm over d_model",
                  f"{P4}, residual_stream_norms"),
]}
