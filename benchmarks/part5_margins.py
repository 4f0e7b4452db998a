"""The margins of Part 5's training tests over many seeds: the reference and each wrong variant.

    .venv/bin/python benchmarks/part5_margins.py [--seeds 300] [--first 1] [--tests "deep residual"]
        [--variants "reference,no projection"] [--steps 16] [--n 1024] [--small-steps 25] ...

Runs what train_lowers_loss, deep_residual_trains and deep_plain_stalls (suites/residual_connections/part5.py)
run, by their own functions (small_run, deep_residual_runs, deep_plain_runs) and with a grading's draws: each
seed is a grading seed, each run a Trial of that test, so what seed N shows here is what
`python -m autograder grade residual-connections NB --seed N` sees. The submission is the reference
solution's functions or a variant built from them (the mistakes of the part5-* samples and a few more),
served in this process by the child's own request handler (probe.serve_request): no sandbox, one thread,
as in a grading child. --steps, --lr and the other options try other problems than the tests'.
Prints one row per test and variant: the statistic each bound is applied to, its lowest and highest
value over the seeds (over every run, for deep_residual_trains, where most of its runs decide), the
bound, on how many seeds the variant passed that test, and the seeds where it did not do what it should.
The reference and the honest variants must pass on every seed, each wrong variant fail on every seed.
"""
from __future__ import annotations

import argparse
import math
import time
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from autograder.kit import Failed, Trial
from autograder.core import probe
from autograder.suites.residual_connections import part5 as rc
from autograder.suites.residual_connections.specs import SPECS
from autograder.suites.residual_connections.suite import SUITE
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


class InProcess:
    """A sandbox stand-in: each request served at once by probe.serve_request against `module`."""

    declared: dict = {}

    def __init__(self, module: types.ModuleType):
        self.module, self.objects = module, {}

    def start(self) -> None:
        pass

    def request(self, request: dict, deadline) -> dict:
        return probe.serve_request(self.module, SPECS, self.objects, request)


def submission(variant: str) -> types.ModuleType:
    """The reference notebook's namespace with the variant's builders and train in place of its own."""
    builders, train, _ = VARIANTS[variant]
    module = types.ModuleType(f"part5_margins_{variant}")
    module.__dict__.update(nb.__dict__, **builders, train=train)
    return module


def trial(test, seed: int, module: types.ModuleType) -> Trial:
    """The Trial a grading at `seed` gives `test` (a part5 test function): the same draws, call by call."""
    entry = next(t for t in SUITE.tests if t.check is test)
    return Trial(entry, seed, InProcess(module), 600.0, nb, SPECS, str)


def measure(module, seed: int, small: dict, deep: dict, plain: dict, shallow: dict, tests) -> dict:
    """Each of `tests` at one grading seed: {"passed": bool, statistic: [its value in each run]}, the
    statistics being what the bounds are applied to (nan where a run failed on its own, as a diverged one does)."""
    return {test: _statistics(test, module, seed, small, deep, plain, shallow) for test in tests}


def _statistics(test: str, module, seed: int, small: dict, deep: dict, plain: dict, shallow: dict) -> dict:
    chance = math.log(deep["k"])
    try:
        if test == "small":
            _, (b, hb, a, ha) = rc.small_run(trial(rc.train_lowers_loss, seed, module), small)
            stats = {"after / before": [a / b], "held after / before": [ha / hb]}
        elif test == "deep residual":     # most of its runs decide, as in the test
            runs = rc.deep_residual_runs(trial(rc.deep_residual_trains, seed, module), deep)
            return {"passed": rc.deep_residual_passed(runs),
                    "loss / chance": [losses[2] / chance for _, losses, _ in runs],
                    "deep held after / before": [losses[3] / losses[1] for _, losses, _ in runs]}
        else:
            _, loss, _, (hb, held) = rc.deep_plain_runs(trial(rc.deep_plain_stalls, seed, module), plain, shallow)
            stats = {"shallow held after / before": [held / hb], "deep / chance": [loss / chance]}
    except Failed:
        return {"passed": False, **{name: [math.nan] for name, (_, _, owner) in BOUNDS.items() if owner == test}}
    return {"passed": all(math.isfinite(v) and (v <= BOUNDS[name][0]) == BOUNDS[name][1]
                          for name, (v,) in stats.items()), **stats}


# statistic -> (bound, whether the test needs it below the bound, the test it belongs to)
BOUNDS = {"after / before": (rc.SMALL_FALL, True, "small"), "held after / before": (rc.HELD_SMALL, True, "small"),
          "loss / chance": (rc.DEEP_FIT, True, "deep residual"),
          "deep held after / before": (rc.HELD_DEEP, True, "deep residual"),
          "shallow held after / before": (rc.HELD_SHALLOW, True, "deep plain"),
          "deep / chance": (rc.PLAIN_STALL, False, "deep plain")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=300, help="how many grading seeds")
    parser.add_argument("--first", type=int, default=1, help="the first grading seed")
    parser.add_argument("--steps", type=int, default=rc.RESIDUAL["steps"], help="the deep residual runs' steps")
    parser.add_argument("--lr", type=float, default=rc.RESIDUAL["lr"], help="the deep and shallow runs' lr")
    parser.add_argument("--n", type=int, default=rc.RESIDUAL["n"], help="the deep residual runs' examples")
    parser.add_argument("--plain-steps", type=int, default=rc.DEEP["steps"], help="the plain depth-16 run's")
    parser.add_argument("--shallow-steps", type=int, default=rc.SHALLOW["steps"], help="the plain depth-2 control's")
    parser.add_argument("--shallow-n", type=int, default=rc.SHALLOW["n"], help="the plain depth-2 control's examples")
    parser.add_argument("--small-steps", type=int, default=rc.SMALL["steps"])
    parser.add_argument("--small-lr", type=float, default=rc.SMALL["lr"])
    parser.add_argument("--tests", default=",".join(RIGHT), help="comma-separated, from: " + ", ".join(RIGHT))
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    args = parser.parse_args()
    torch.set_num_threads(1)        # as in a grading child
    small = {**rc.SMALL, "steps": args.small_steps, "lr": args.small_lr}
    deep = {**rc.RESIDUAL, "steps": args.steps, "lr": args.lr, "n": args.n}
    plain = {**rc.DEEP, "steps": args.plain_steps, "lr": args.lr}
    shallow = {**rc.SHALLOW, "lr": args.lr, "steps": args.shallow_steps, "n": args.shallow_n}
    seeds = range(args.first, args.first + args.seeds)
    print(f"small {small}\ndeep residual {deep}\ndeep plain {plain}\nshallow plain {shallow}\n"
          f"grading seeds {seeds.start}..{seeds.stop - 1}\n")
    print(f"{'variant':24} {'test':14} {'statistic':26} {'lowest':>8} {'highest':>8} {'bound':>6}  passed  want")
    bad = 0
    for variant in args.variants.split(","):
        start, module, tests = time.perf_counter(), submission(variant), args.tests.split(",")
        runs = {seed: measure(module, seed, small, deep, plain, shallow, tests) for seed in seeds}
        for test, want in VARIANTS[variant][2].items():
            if test not in tests:
                continue
            off = [seed for seed, r in runs.items() if r[test]["passed"] != want]
            bad += bool(off)
            for name in (name for name, (_, _, owner) in BOUNDS.items() if owner == test):
                values = [v for r in runs.values() for v in r[test][name]]
                finite = [v for v in values if math.isfinite(v)] or [math.nan]
                bound, below, _ = BOUNDS[name]
                print(f"{variant:24} {test:14} {name:26} {min(finite):8.3f} {max(finite):8.3f} "
                      f"{'<=' if below else '>'}{bound:<5} {len(runs) - len(off) if want else len(off):4}/{len(runs)}"
                      f"  {'pass' if want else 'fail'}"
                      + (f"  ({len(values) - len(finite)} not finite)" if len(finite) < len(values) else ""))
            if test == "deep residual":
                print(f"{'':24} {sum(len(r[test]['loss / chance']) for r in runs.values())} runs in all")
            if off:
                print(f"{'':24} off at grading seeds {', '.join(map(str, off[:20]))}{' ...' if len(off) > 20 else ''}")
        print(f"{'':24} ({time.perf_counter() - start:.0f} s)", flush=True)
    print(f"\n{bad} variant-test pairs off their expected outcome on some seed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
