"""The margins of Part 5's training tests, in-process over many seeds: the reference and each wrong variant.

    .venv/bin/python benchmarks/part5_margins.py [--seeds 300] [--steps 16] [--lr 0.1] [--tests "deep residual"]

Runs what train_lowers_loss, deep_residual_trains and deep_plain_stalls (suites/residual_connections/part5.py)
run, with their problems, steps and bounds (SMALL, DEEP and the bounds there; --steps, --lr and the
other options try others), on the reference solution's functions and on variants built from them: the
mistakes of the part5-* samples and a few more. The small run trains with the variant's train, the deep
runs with the grader's own (specs.fit), as the tests do. No sandbox: one process, one thread, as a grading child.
Prints one row per test and variant: the statistic each bound is applied to, its lowest and highest
value over the seeds, the bound, and on how many seeds the variant passed that test. The reference
and the honest variants must pass on every seed, each wrong variant fail on every seed.
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from autograder.suites.residual_connections import part5 as rc
from autograder.suites.residual_connections.specs import fit
from nbtest import load

ROOT = Path(__file__).resolve().parent.parent
nb = load(ROOT / "solutions" / "residual-connections" / "residual-connections.ipynb", name="part5_margins_reference")


class ProjectedBlock(nb.ResidualBlock):
    """part5-projection-everywhere: a Linear shortcut also where the width stays the same."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__(d_in, d_out)
        self.shortcut.proj = nn.Linear(d_in, d_out, bias=False)


class BranchOnly(nb.ResidualBlock):
    """part5-shortcut-missing: the branch alone."""

    def forward(self, x):
        return self.branch_scale * self.ffn(self.ln(x))


def stack(first, block, d_in: int, width: int, k: int, depth: int, final_ln: bool = True) -> nn.Sequential:
    return nn.Sequential(first(d_in, width), *[block(width, width) for _ in range(depth - 1)],
                         *([nn.LayerNorm(width)] if final_ln else []), nn.Linear(width, k))


def torch_optim_train(zero_grad: bool, step: bool = True, momentum: float = 0.9):
    """train with torch.optim.SGD, as a student writes it; zero_grad or the step can be forgotten, the
    momentum left out."""
    def train(model, X, y, steps, lr=0.05, batch=128, seed=0):
        gen, opt, losses = torch.Generator().manual_seed(seed), torch.optim.SGD(model.parameters(), lr, momentum), []
        for _ in range(steps):
            idx = torch.randperm(len(X), generator=gen)[:batch]
            loss = F.cross_entropy(model(X[idx]), y[idx])
            if zero_grad:
                opt.zero_grad()
            loss.backward()
            if step:
                opt.step()
            losses.append(loss.item())
        return losses
    return train


def lr_ignored(model, X, y, steps, lr=0.05, batch=128, seed=0):
    return nb.train(model, X, y, steps, batch=batch, seed=seed)


# name -> (builders {"residual_mlp": ..., "plain_mlp": ...}, train, whether each test passes)
RIGHT = {"small": True, "deep residual": True, "deep plain": True}
VARIANTS = {
    "reference": ({}, nb.train, RIGHT),
    "torch.optim train": ({}, torch_optim_train(zero_grad=True), RIGHT),
    "lr ignored (0.05)": ({}, lr_ignored, RIGHT),
    "no projection": ({"residual_mlp": lambda *a: stack(nb.PlainBlock, nb.ResidualBlock, *a)}, nb.train, RIGHT),
    "plain without final LN": ({"plain_mlp": lambda *a: stack(nb.PlainBlock, nb.PlainBlock, *a, final_ln=False)},
                               nb.train, RIGHT),
    "projection everywhere": ({"residual_mlp": lambda *a: stack(ProjectedBlock, ProjectedBlock, *a)}, nb.train,
                              {**RIGHT, "deep residual": False}),
    "shortcut missing": ({"residual_mlp": lambda *a: stack(BranchOnly, BranchOnly, *a)}, nb.train,
                         {**RIGHT, "deep residual": False}),
    "plain adds x": ({"plain_mlp": lambda *a: stack(nb.PlainBlock, nb.ResidualBlock, *a)}, nb.train,
                     {**RIGHT, "deep plain": False}),
    # a train mistake loses the small run only: the deep runs train with the grader's own SGD
    "zero_grad forgotten": ({}, torch_optim_train(zero_grad=False), {**RIGHT, "small": False}),
    "step forgotten": ({}, torch_optim_train(zero_grad=True, step=False), {**RIGHT, "small": False}),
    # wrong, and train_updates says so; the training tests measure what train achieves, which it does
    "no momentum": ({}, torch_optim_train(zero_grad=True, momentum=0.0), RIGHT),
}


def trained(variant, builder: str, seed: int, gen: torch.Generator, n: int, d_in: int, width: int, k: int,
            depth: int, steps: int, lr: float, own_train: bool = False) -> tuple[float, float, float, float]:
    """(loss before, after, held-out loss before, after) of the variant's builder trained as the test does:
    own_train, by the variant's train, else by the grader's."""
    builders, train, _ = VARIANTS[variant]
    X, y, X_held, y_held = rc.teacher_problem(gen, n, d_in, k)
    torch.manual_seed(seed)
    model = builders.get(builder, getattr(nb, builder))(d_in, width, k, depth)
    loss = lambda X, y: F.cross_entropy(model(X).double(), y).item()
    with torch.no_grad():
        before = loss(X, y), loss(X_held, y_held)
    if own_train:
        train(model, X, y, steps, lr=lr, batch=n, seed=seed % 1000)
    else:
        fit(model, X, y, steps, lr)
    with torch.no_grad():
        after = loss(X, y), loss(X_held, y_held)
    return before[0], after[0], before[1], after[1]


def measure(variant: str, seed: int, small: dict, deep: dict, tests) -> dict[str, dict[str, float]]:
    """The statistics of each of `tests` on one seed: what its bounds are applied to (nan where a run diverged)."""
    out, chance = {}, math.log(deep["k"])
    gen = torch.Generator()
    deep_run = lambda builder, depth, steps: trained(variant, builder, seed, gen, deep["n"], deep["d_in"],
                                                     deep["width"], deep["k"], depth, steps, deep["lr"])
    if "small" in tests:
        gen.manual_seed(seed)
        d_in, k = 7 + 2 * (seed % 3), 3 + 2 * (seed % 2)
        b, a, hb, ha = trained(variant, "residual_mlp", seed, gen, small["n"], d_in, small["width"], k,
                               small["depth"], small["steps"], small["lr"], own_train=True)
        out["small"] = {"after / before": a / b, "held after / before": ha / hb}
    if "deep residual" in tests:
        gen.manual_seed(seed)
        _, loss, held_before, held = deep_run("residual_mlp", deep["depth"], deep["steps"])
        out["deep residual"] = {"loss / chance": loss / chance, "deep held after / before": held / held_before}
    if "deep plain" in tests:
        gen.manual_seed(seed)
        plain = deep_run("plain_mlp", deep["depth"], deep["plain_steps"])[1]
        shallow = {**rc.SHALLOW, "steps": deep["shallow_steps"], "n": deep["shallow_n"]}
        _, _, held_before, held = trained(variant, "plain_mlp", seed, gen, shallow["n"], shallow["d_in"],
                                          shallow["width"], shallow["k"], shallow["depth"], shallow["steps"],
                                          shallow["lr"])
        out["deep plain"] = {"shallow held after / before": held / held_before, "deep / chance": plain / chance}
    return out


# statistic -> (bound, whether the test needs it below the bound)
BOUNDS = {"after / before": (rc.SMALL_FALL, True), "held after / before": (rc.HELD_SMALL, True),
          "loss / chance": (rc.DEEP_FIT, True), "deep held after / before": (rc.HELD_DEEP, True),
          "shallow held after / before": (rc.HELD_SHALLOW, True), "deep / chance": (rc.PLAIN_STALL, False)}


def passes(stats: dict[str, float]) -> bool:
    return all(math.isfinite(v) and (v <= BOUNDS[name][0]) == BOUNDS[name][1] for name, v in stats.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--steps", type=int, default=rc.DEEP["steps"], help="the deep residual run's steps")
    parser.add_argument("--lr", type=float, default=rc.DEEP["lr"], help="the deep and shallow runs' lr")
    parser.add_argument("--plain-steps", type=int, default=rc.PLAIN_STEPS, help="the plain depth-16 run's")
    parser.add_argument("--shallow-steps", type=int, default=rc.SHALLOW["steps"], help="the plain depth-2 control's")
    parser.add_argument("--shallow-n", type=int, default=rc.SHALLOW["n"], help="the plain depth-2 control's examples")
    parser.add_argument("--small-steps", type=int, default=rc.SMALL["steps"])
    parser.add_argument("--small-lr", type=float, default=rc.SMALL["lr"])
    parser.add_argument("--tests", default=",".join(RIGHT), help="comma-separated, from: " + ", ".join(RIGHT))
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    args = parser.parse_args()
    torch.set_num_threads(1)        # as in a grading child
    small = {**rc.SMALL, "steps": args.small_steps, "lr": args.small_lr}
    deep = {**rc.DEEP, "steps": args.steps, "lr": args.lr, "shallow_steps": args.shallow_steps,
            "shallow_n": args.shallow_n, "plain_steps": args.plain_steps}
    print(f"small {small}\ndeep {deep}\n{args.seeds} seeds\n")
    print(f"{'variant':24} {'test':14} {'statistic':20} {'lowest':>8} {'highest':>8} {'bound':>6}  passed  want")
    bad = 0
    for variant in args.variants.split(","):
        start = time.perf_counter()
        tests = args.tests.split(",")
        runs = [measure(variant, seed, small, deep, tests) for seed in range(args.seeds)]
        for test, want in VARIANTS[variant][2].items():
            if test not in tests:
                continue
            passed = sum(passes(r[test]) for r in runs)
            bad += passed != (len(runs) if want else 0)
            for name in runs[0][test]:
                values = [r[test][name] for r in runs]
                finite = [v for v in values if math.isfinite(v)] or [math.nan]
                bound, below = BOUNDS[name]
                print(f"{variant:24} {test:14} {name:20} {min(finite):8.3f} {max(finite):8.3f} "
                      f"{'<=' if below else '>'}{bound:<5} {passed:4}/{len(runs)}  {'pass' if want else 'fail'}"
                      + (f"  ({len(values) - len(finite)} not finite)" if len(finite) < len(values) else ""))
        print(f"{'':24} ({time.perf_counter() - start:.0f} s)", flush=True)
    print(f"\n{bad} variant-test pairs off their expected outcome on some seed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
