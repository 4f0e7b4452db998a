"""Fused Add & Norm on a CUDA GPU: eager PyTorch, torch.compile and the reference Triton kernel.

    .venv/bin/python benchmarks/fused_add_norm.py --out bench-out

For fp16 streams of 4096 and 16384 rows and widths 256 to 8192, times each implementation
with triton.testing.do_bench and writes fused_add_norm.csv and fused_add_norm.png to --out:
the time, the bandwidth in GB/s (the fused minimum, x and fx read and h and y written once,
divided by the time) and that bandwidth as a fraction of the device's peak. The peak is the
data-sheet figure for the device's name, or a measured device-to-device copy for a device
that is not in the table. The reference kernel is loaded from the solutions notebook with
nbtest.load, so no solution code lives here. Without CUDA it says so and exits 0.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import nbtest
import torch
import torch.nn.functional as F
from triton.testing import do_bench

from autograder.kit.bandwidth import copy_rate, data_sheet_peak

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "solutions" / "fused-add-norm" / "fused-add-norm.ipynb"
DEVICE = "cuda"
ROWS = (4096, 16384)
WIDTHS = (256, 512, 1024, 2048, 4096, 8192)
FIELDS = ("device", "rows", "width", "implementation", "ms", "gb_per_s", "fraction_of_peak",
          "peak_gb_per_s", "peak_source")


def eager(x, fx, weight, bias):
    """PyTorch as written in a model: the add, then F.layer_norm; (*, n) -> (h, y)."""
    h = x + fx
    return h, F.layer_norm(h, h.shape[-1:], weight, bias)


def peak_bandwidth(name: str) -> tuple[float, str]:
    """The device's peak memory bandwidth in bytes/s and where the figure comes from."""
    peak = data_sheet_peak(name)
    if peak:
        return peak, "data sheet"
    n_bytes = 1 << 30
    src = torch.empty(n_bytes, dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    return copy_rate(n_bytes, do_bench(lambda: dst.copy_(src))), "measured copy"


def measure(rows: int, width: int, fused) -> dict[str, float]:
    """Milliseconds per call of each implementation on fp16 (rows, width) inputs."""
    x, fx = torch.randn(2, rows, width, device=DEVICE, dtype=torch.float16)
    weight, bias = torch.randn(2, width, device=DEVICE, dtype=torch.float16)
    torch._dynamo.reset()  # compile afresh for this shape instead of hitting the recompile limit
    impls = {"eager": eager, "torch.compile": torch.compile(eager, dynamic=False), "triton": fused}
    _, expected = eager(x, fx, weight, bias)
    times = {}
    for name, fn in impls.items():
        torch.testing.assert_close(fn(x, fx, weight, bias)[1], expected, atol=2e-2, rtol=2e-2,
                                   msg=lambda m: f"{name} disagrees with eager at {rows} x {width}: {m}")
        times[name] = do_bench(lambda: fn(x, fx, weight, bias))
    return times


def plot(records: list[dict], peak: float, path: Path) -> None:
    """GB/s against width, one panel per row count, one line per implementation."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ROWS), figsize=(6 * len(ROWS), 4), sharey=True)
    for ax, rows in zip(axes, ROWS):
        for name in dict.fromkeys(r["implementation"] for r in records):
            mine = [r for r in records if r["rows"] == rows and r["implementation"] == name]
            ax.plot([r["width"] for r in mine], [r["gb_per_s"] for r in mine], marker="o", label=name)
        ax.axhline(peak / 1e9, color="gray", linestyle="--", label=f"peak ({records[0]['peak_source']})")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"width ({rows} rows, fp16)")
        ax.set_title(records[0]["device"])
    axes[0].set_ylabel("GB/s (x, fx read; h, y written)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="folder for the CSV and PNG")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmarks/fused_add_norm.py needs a CUDA GPU: it measures speed on the device. "
              "Without one, Triton's interpreter runs the kernel on the CPU to check its results "
              "(the public tests do that), but its timings say nothing about a GPU.")
        return 0

    fused = nbtest.load(NOTEBOOK, name="fused_add_norm_reference").fused_add_layernorm
    device = torch.cuda.get_device_name()
    peak, source = peak_bandwidth(device)
    records = []
    for rows in ROWS:
        for width in WIDTHS:
            moved = 4 * rows * width * 2  # fp16: read x and fx, write h and y
            for name, ms in measure(rows, width, fused).items():
                gbps = moved / ms / 1e6
                records.append({"device": device, "rows": rows, "width": width, "implementation": name,
                                "ms": round(ms, 4), "gb_per_s": round(gbps, 1),
                                "fraction_of_peak": round(gbps * 1e9 / peak, 3),
                                "peak_gb_per_s": round(peak / 1e9), "peak_source": source})
                print(f"{rows:>6} x {width:<5} {name:<14} {ms:8.4f} ms {gbps:7.0f} GB/s "
                      f"{gbps * 1e9 / peak:6.1%} of peak ({source})")

    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "fused_add_norm.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(records)
    plot(records, peak, args.out / "fused_add_norm.png")
    print(f"wrote {args.out / 'fused_add_norm.csv'} and {args.out / 'fused_add_norm.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
