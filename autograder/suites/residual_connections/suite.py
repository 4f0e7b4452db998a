"""What residual-connections' parts share: SUITE, and the FFN of Part 1 (its weights, its output
computed here, and the checks of a model's FFN and shortcut), which Parts 4 and 5 use again."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...kit import Failed, Suite, Trial, part_label

# block_parts is held by the Transformer-class rule too, besides the withhold rules that hold every test that
# reads the child's reports (kit/trial.py: REPORTS; docs/security.md)
SUITE = Suite("residual-connections", held_by={"block_parts": {"transformer-class"}})
test = SUITE.test
F64 = torch.float64


def spec(*items) -> dict:
    return {"spec": list(items)}


def ffn_weights(t: Trial, d_in: int, d_out: int, hidden: int, at: str = "ffn") -> dict[str, torch.Tensor]:
    """Float64 weights for an FFN Linear(d_in, hidden), GELU, Linear(hidden, d_out) kept at `at`."""
    return {f"{at}.0.weight": t.randn(hidden, d_in, dtype=F64, scale=1 / math.sqrt(d_in)),
            f"{at}.0.bias": t.randn(hidden, dtype=F64, scale=0.3),
            f"{at}.2.weight": t.randn(d_out, hidden, dtype=F64, scale=1 / math.sqrt(hidden)),
            f"{at}.2.bias": t.randn(d_out, dtype=F64, scale=0.3)}


def ffn_of(w: dict, x: torch.Tensor, at: str = "ffn", act=F.gelu) -> torch.Tensor:
    """The FFN with the weights at `at`, computed here (act: the activation, for the wrong variants)."""
    return F.linear(act(F.linear(x, w[f"{at}.0.weight"], w[f"{at}.0.bias"])), w[f"{at}.2.weight"], w[f"{at}.2.bias"])


def ffn_alternatives(w: dict, x: torch.Tensor, at: str = "ffn", base=0) -> list:
    """The FFN's usual mistakes, each plus `base` (what the output adds to the FFN)."""
    return [("ReLU instead of GELU in the FFN", base + ffn_of(w, x, at, F.relu)),
            ("GELU's tanh approximation: use nn.GELU() (exact erf form)",
             base + ffn_of(w, x, at, lambda h: F.gelu(h, approximate="tanh")))]


def load_as_stated(t: Trial, obj, weights: dict, layout: str) -> None:
    """t.load, and where the weights do not fit, the layout the docstring states after the reason."""
    try:
        t.load(obj, weights)
    except Failed as e:
        raise Failed(f"{e}\n{layout}", e.misconception, e.kind) from None


def check_ffn_part(t: Trial, obj, at: str, w: dict, x: torch.Tensor, hidden: int, d_out: int):
    """obj's submodule at `at` called on x must be the FFN with the weights loaded there."""
    out = t.drive(obj, at, x)
    t.check(out, ffn_of(w, x, at), f"{part_label(obj, at)}(x)", f"must be Linear -> GELU -> Linear, widening to "
            f"{hidden} and back to {d_out}, with the weights set at {at}[0] and {at}[2]", rtol=1e-9, atol=1e-10,
            alternatives=lambda: ffn_alternatives(w, x, at))


def check_shortcut_part(t: Trial, obj, at: str, x: torch.Tensor, proj: torch.Tensor | None):
    """obj's submodule at `at` must be the identity (proj None) or x W_s^T with proj = W_s loaded."""
    out = t.drive(obj, at, x)
    if proj is None:
        t.check(out, x, f"{part_label(obj, at)}(x)", "the width does not change, so the shortcut is the identity",
                exact=True)
    else:
        t.check(out, x @ proj.T, f"{part_label(obj, at)}(x)", "the width changes, so the shortcut is x W_s^T "
                f"(a ProjectionShortcut, with W_s set at {at}.proj)", rtol=1e-9, atol=1e-10)
