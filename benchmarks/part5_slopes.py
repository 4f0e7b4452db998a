"""How far a model's gradient is from its forward's slope, over many seeds: the margin of the deep tests' check.

    .venv/bin/python benchmarks/part5_slopes.py [--seeds 200] [--variants "plain,plain relu"]

At the first step of training and at a later one drawn from its seed, the grader's own SGD
(suites/residual_connections/specs.py: fit) compares, along a random direction and the gradient's own in each
third of the parameters, the gradient autograd gives with the loss's slope by central differences
(specs._slopes), and the deep tests fail beyond SLOPE_RTOL and SLOPE_ATOL (part5.py). This trains on the
problems of the tests that train a submission's model (DEEP's and RESIDUAL's sizes at depth 16, and SHALLOW's,
the control) the reference's blocks, honest variants of them (ReLU, GELU's tanh form, dropout, BatchNorm, a
block placed twice) and forgeries whose backward differs from their forward, and prints, per variant, the
largest |gradient - slope| / tolerance over the seeds, at the first step and at the later one: below 1 passes.
Honest variants must stay well below 1, the forgeries far above it.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from torch import nn

from autograder.suites.residual_connections import part5 as rc
from autograder.suites.residual_connections.specs import fit
from nbtest import load

ROOT = Path(__file__).resolve().parent.parent
nb = load(ROOT / "solutions" / "residual-connections" / "residual-connections.ipynb", name="part5_slopes_reference")


class Scaled(nn.Linear):
    """A head whose forward keeps its values and whose backward passes `factor` of their gradient."""

    factor = 1e-6
    honest_calls = 0      # calls before the factor applies: fit's first step and its check take 13 forwards

    def forward(self, x):
        out = super().forward(x)
        self.honest_calls -= 1
        return out if self.honest_calls >= 0 else out.detach() + self.factor * (out - out.detach())


def with_ffn(block, act=None, dropout: float = 0.0):
    """A block of the reference's class with its FFN's activation replaced, or a dropout after its FFN."""
    if act is not None:
        block.ffn[1] = act
    if dropout:
        block.ffn.append(nn.Dropout(dropout))
    return block


def model(kind: str, d_in: int, width: int, k: int, depth: int) -> nn.Sequential:
    """The variant `kind`: "plain" or "residual", then what differs from the reference."""
    base, *change = kind.split(" ", 1)
    change = change[0] if change else ""
    make = nb.plain_mlp if base == "plain" else nb.residual_mlp
    m = make(d_in, width, k, depth)
    blocks = list(m)[:depth]
    for b in blocks:
        with_ffn(b, nn.ReLU() if change == "relu" else nn.GELU(approximate="tanh") if change == "tanh" else None,
                 0.1 if change == "dropout" else 0.0)
    tail = [nn.BatchNorm1d(width) if change == "batchnorm" else m[depth], m[depth + 1]]
    if change == "placed twice":
        blocks = [blocks[0], *[blocks[1]] * (depth - 1)]
    if change.startswith("head"):
        tail[1] = Scaled(width, k)
        tail[1].factor = float(change.split()[1])
        tail[1].honest_calls = 13 if change.endswith("after step 1") else 0
    return nn.Sequential(*blocks, *tail)


VARIANTS = ["plain", "residual", "plain relu", "residual relu", "plain tanh", "plain dropout", "residual batchnorm",
            "residual placed twice", "shallow plain", "shallow plain relu", "plain head 1e-6", "plain head 0.5",
            "residual head 0.8", "plain head 1e-6 after step 1"]


def worst(kind: str, seeds: range) -> tuple[float, float]:
    """The largest |gradient - slope| / tolerance of specs._slopes over the seeds, on the sizes of the test that
    trains the variant, (at the first step, at the later one)."""
    shallow = kind.startswith("shallow ")
    kind = kind.removeprefix("shallow ")
    size = rc.SHALLOW if shallow else rc.DEEP if kind.startswith("plain") else rc.RESIDUAL
    out = [0.0, 0.0]
    for seed in seeds:
        gen = torch.Generator().manual_seed(seed)
        X, y, _, _ = rc.teacher_problem(gen, size["n"], size["d_in"], size["k"])
        torch.manual_seed(seed)
        m = model(kind, size["d_in"], size["width"], size["k"], size["depth"])
        _, slopes, _ = fit(m, X, y, size["steps"], size["lr"], seed)
        for step, r, f in slopes:
            out[step > 0] = max(out[step > 0], abs(r - f) / (rc.SLOPE_ATOL + rc.SLOPE_RTOL * max(abs(r), abs(f))))
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    args = parser.parse_args()
    torch.set_num_threads(1)        # as in a grading child
    print(f"tolerance {rc.SLOPE_ATOL} + {rc.SLOPE_RTOL} * |slope|, seeds 0..{args.seeds - 1}\n")
    print(f"{'variant':30} {'worst / tolerance, first step':>30} {'later step':>11} {'seconds':>8}")
    for kind in args.variants.split(","):
        start = time.perf_counter()
        first, later = worst(kind, range(args.seeds))
        print(f"{kind:30} {first:30.3f} {later:11.3f} {time.perf_counter() - start:8.1f}", flush=True)


if __name__ == "__main__":
    main()
