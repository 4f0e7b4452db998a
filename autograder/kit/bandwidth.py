"""GPUs' peak memory bandwidth by device name, for reports of achieved GB/s.

    data_sheet_peak("NVIDIA H100 80GB HBM3")  -> 3.35e12 (bytes/s), or None for a device not listed
    copy_rate(1 << 29, 0.25)                  -> 4.29e12 (bytes/s): a copy of 512 MiB in 0.25 ms

Used by benchmarks/fused_add_norm.py and the fused-add-norm timing test; both fall back
to the rate of a measured copy on the device (copy_rate) for a device that is not in the table
(the timing test's CPU run always does).
"""
from __future__ import annotations

import re

# Peak memory bandwidth (TB/s, NVIDIA data sheets) by a pattern of torch.cuda.get_device_name(); first match wins.
PEAK_TBPS = (
    (r"\bH200\b", 4.8),
    (r"\bH100\b.*NVL", 3.9),
    (r"\bH100\b.*PCIe", 2.0),
    (r"\bH100\b", 3.35),             # SXM, named "NVIDIA H100 80GB HBM3"
    (r"\bA100\b.*SXM.*80GB", 2.039),
    (r"\bA100\b.*80GB", 1.935),      # PCIe
    (r"\bA100\b", 1.555),            # 40GB, SXM or PCIe
    (r"\bL40S\b", 0.864),
    (r"\bA10G?\b", 0.6),
    (r"\bL4\b", 0.3),
    (r"\bV100\b", 0.9),
    (r"\bT4\b", 0.32),
)


def data_sheet_peak(name: str) -> float | None:
    """The device's data-sheet peak memory bandwidth in bytes/s, or None if it is not in the table."""
    for pattern, tbps in PEAK_TBPS:
        if re.search(pattern, name):
            return tbps * 1e12
    return None


def copy_rate(n_bytes: int, ms: float) -> float:
    """Bytes/s moved by a copy of n_bytes that took ms milliseconds: it reads and writes each byte."""
    return 2 * n_bytes / (ms * 1e-3)
