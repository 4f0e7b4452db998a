"""Compiled functions run uncompiled where the grader and the public tests run a notebook's cells.

torch.compile (torch.compiler.compile) and torch.jit.script promise the function's own values; compiling would
install dynamo's frame-evaluation hook and start a C compiler in a process that runs beside the grader's code.
So before the first cell, in the grader's sandbox child and in the public tests' process, each is replaced by
a pass-through that hands back what it was given: no hook or compiler ever exists there.

    install()
    torch.compile(fn, fullgraph=True) is fn; torch.compile(mode="max-autotune")(fn) is fn    # @ forms alike

This module imports nothing at its top: a cell that reaches a pass-through's globals finds only this module.
"""


def passed_through(model=None, *args, **kwargs):
    """What torch.compile(model, ...) or torch.jit.script(model, ...) returns here: model itself; with no
    model (`@torch.compile(mode=...)`), a decorator that returns its function."""
    if model is None:
        return lambda fn: fn
    return model


def install() -> None:
    """torch.compile, torch.compiler.compile and torch.jit.script become passed_through (before any cell)."""
    import torch
    torch.compile = torch.jit.script = passed_through
    if hasattr(torch, "compiler") and hasattr(torch.compiler, "compile"):
        torch.compiler.compile = passed_through
