"""The static policy's time on notebooks that grow: each case at n, 2n and 4n of its unit.

    .venv/bin/python benchmarks/policy_scaling.py [--n 1000]

The policy runs in the grader's own process, before any budget applies, so its time must grow in proportion to
a notebook's size. Each case is one the red teams found growing faster (red team 39: helper defs calling each
other, constants beside an autotuned kernel, reads of one table); it prints the seconds of policy.check_cells
for each size and the ratio to the size before, which stays near 2 where the time is linear.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtest import policy  # noqa: E402

SETUP = "import torch\nimport triton\nimport triton.language as tl\n"
KERNEL = ("@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    i = tl.program_id(0)\n"
          "    tl.store(x_ptr + i, tl.load(x_ptr + i))\n")
AUTOTUNED = "@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['n'])\n" + KERNEL


def helpers(n: int) -> str:
    """n helper defs, each calling the one below twice, used by a heuristic (n here counts levels / 50)."""
    levels = max(n // 50, 2)
    defs = "def block_0(n):\n    return triton.next_power_of_2(n)\n\n\n" + "".join(
        f"def block_{i}(n):\n    return max(block_{i - 1}(n), block_{i - 1}(n))\n\n\n" for i in range(1, levels))
    return defs + f'@triton.heuristics({{"BLOCK": lambda args: block_{levels - 1}(args["n"])}})\n' + KERNEL


CASES = {
    "heuristic helpers": helpers,
    "constants beside an autotuned kernel": lambda n: "".join(f"C{i} = {i}\n" for i in range(n)) + AUTOTUNED,
    "reads of one table": lambda n: "SIZES = (256, 512)\n" + "".join(
        f"b{i} = SIZES[{i % 2}].bit_length()\n" for i in range(n)) + KERNEL,
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000)
    args = p.parse_args()
    rules = policy.Policy(frozenset({"torch", "triton", "triton.language", "math"}))
    policy.check_cells([("setup", SETUP, False), ("c", KERNEL, True)], rules)      # imports, caches
    for name, build in CASES.items():
        before = None
        for n in (args.n, 2 * args.n, 4 * args.n):
            source = build(n)
            start = time.process_time()
            policy.check_cells([("setup", SETUP, False), ("c", source, True)], rules)
            took = time.process_time() - start
            ratio = f"  x{took / before:.1f}" if before else ""
            print(f"{name:<40} n={n:<6} {len(source) >> 10:>4} KiB  {took:6.2f} s{ratio}", flush=True)
            before = took
    return 0


if __name__ == "__main__":
    sys.exit(main())
