"""What runs once per process before a notebook's code: Triton's autotuner made to work in its interpreter,
and torch's first-call work done before the monitor watches (so none of it is charged to a cell)."""
from __future__ import annotations

import os
import sys


def autotune_in_interpreter() -> None:
    """Let @triton.autotune pick a config under Triton's interpreter (TRITON_INTERPRET=1 and
    Triton imported), where Triton's own benchmarker needs a GPU driver and fails with
    "0 active drivers": each config then runs once (one that cannot run fails there) and the
    first is kept, so a grade never depends on the machine's load. On a GPU, or before Triton
    is imported, it does nothing."""
    if os.environ.get("TRITON_INTERPRET") != "1" or "triton" not in sys.modules:
        return
    from triton.runtime.autotuner import Autotuner

    def run_once(kernel_call, quantiles) -> list[float]:
        kernel_call()
        return [0.0] * len(quantiles)   # all equal: the autotuner keeps the first config

    Autotuner.do_bench = property(lambda self: self._do_bench or run_once)


def first_calls(optimizer: bool = True) -> None:
    """What torch does once per process, done before student code is watched or graded: the first attention
    call and backward set up their kernels; the first optimizer step imports torch._dynamo (1.5 s), whose
    libraries build code from strings (mpmath, typing's forward references). The grader's fork server and
    the public tests' watch (rules.py) take the optimizer step only for code that names torch.optim (names_optim): code that
    never steps one would pay 1.5 s for nothing."""
    import torch
    x = torch.ones(1, 2, 2, requires_grad=True)
    attention = torch.nn.MultiheadAttention(2, 1, batch_first=True)
    torch.autograd.backward(torch.sum(attention(x, x, x, need_weights=False)[0]))
    if optimizer:
        # The step imports Triton (through torch._dynamo), which reads TRITON_INTERPRET once: without a GPU,
        # set it first, as fused-add-norm's setup cell does, or that notebook's kernels, loaded later in
        # this process (pytest over both assignments), would not run in the interpreter.
        if "TRITON_INTERPRET" not in os.environ and "triton" not in sys.modules and not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
        p = torch.nn.Parameter(torch.ones(1))
        torch.sum(p).backward()
        torch.optim.SGD([p], lr=0.1, momentum=0.9).step()


def names_optim(sources, parse=None) -> bool:
    """Whether these cells name torch.optim in code (words in a docstring do not count). parse: ast.parse by
    default; the grader's threads pass their shared one (policy.parse, one thread at a time)."""
    import ast
    for source in sources:
        if "optim" in source:
            try:
                tree = (parse or ast.parse)(source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if any(isinstance(n, ast.Attribute) and n.attr == "optim" or isinstance(n, ast.Name) and n.id == "optim"
                   or isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torch.optim")
                   or isinstance(n, ast.Import) and any(a.name.startswith("torch.optim") for a in n.names)
                   or isinstance(n, ast.alias) and n.name == "optim" for n in ast.walk(tree)):
                return True
    return False
