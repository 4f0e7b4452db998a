"""Public tests for fused-add-norm: run `pytest` in this folder.

Each test takes `nb`, the code of your notebook's setup and solution cells. Without a
GPU your kernel runs on CPU tensors in Triton's interpreter, one program after
another, so Part 1 uses small fp32 inputs. Part 2 times your kernel on a CUDA GPU
and is skipped without one. The graded tests are different: they draw shapes, eps,
weights and (on a GPU) fp16 inputs at grading time, and check more. Passing here is
necessary, not sufficient.
"""
import contextlib
import os
import sys
import threading

import pytest
import torch
import torch.nn.functional as F
import nbtest
from nbtest import follows_rules, names_shape, value_error
from nbtest.tensor_values import (DispatchMode, classes_handed, launch_through, made_by_cell, run_recorded, run_seen,
                                  shares_python_memory, values_read)
from torch._ops import HigherOrderOperator
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
MIN_SPEEDUP = 1.1   # eager time / your time; why 1.1: the notebook's Part 2


def _inputs(*shape, dtype=torch.float32, seed=0):
    """x and fx of the given shape (*, n), weight and bias of shape (n,), on DEVICE."""
    g = torch.Generator().manual_seed(seed)
    x, fx = torch.randn(2, *shape, generator=g)
    weight = 1 + 0.5 * torch.randn(shape[-1], generator=g)
    bias = torch.randn(shape[-1], generator=g)
    return [t.to(DEVICE, dtype) for t in (x, fx, weight, bias)]


def _fused(nb, x, fx, weight, bias, eps=1e-5):
    """Call the student's wrapper; check that it returns a tuple (h, y) shaped like x."""
    out = nb.fused_add_layernorm(x, fx, weight, bias, eps=eps)
    assert isinstance(out, tuple) and len(out) == 2, (
        f"fused_add_layernorm must return the tuple (h, y), got {type(out).__name__}")
    for name, t in zip("hy", out):
        assert isinstance(t, torch.Tensor) and t.shape == x.shape and t.dtype == x.dtype, (
            f"{name} must be a tensor of x's shape {tuple(x.shape)} and dtype {x.dtype}, got "
            f"{getattr(t, 'shape', type(t).__name__)} {getattr(t, 'dtype', '')}")
    return out


def _check(nb, x, fx, weight, bias, eps=1e-5, hint=""):
    """Compare the wrapper's h with x + fx and y with F.layer_norm, both computed first."""
    h_ref = x + fx
    y_ref = F.layer_norm(h_ref, x.shape[-1:], weight, bias, eps)
    h, y = _fused(nb, x, fx, weight, bias, eps)
    where = f"at width {x.shape[-1]}, shape {tuple(x.shape)}"
    assert torch.equal(h, h_ref), (
        f"h differs from x + fx {where}: h is the residual stream, returned as it is (not "
        f"normalised) for the next block to add to. {hint}")
    err = (y - y_ref).abs().max().item()
    assert torch.allclose(y, y_ref, rtol=1e-4, atol=1e-4), (
        f"y differs from F.layer_norm(x + fx) by up to {err:.3g} {where}. {hint}")


# ---------------------------------------------------------------- Part 1

def test_part1_returns_h_and_y(nb):
    _check(nb, *_inputs(4, 256))


def test_part1_widths_not_powers_of_two(nb):
    for width in (50, 768, 1000):
        block = 1 << (width - 1).bit_length()
        _check(nb, *_inputs(3, width, seed=width), hint=(
            f"BLOCK = next_power_of_2({width}) = {block} lanes, of which {width} are real: mask "
            "every load and store, zero the masked lanes before summing (h - mean) ** 2, and "
            "divide by the width (not BLOCK, not width - 1)."))


def test_part1_leading_dimensions(nb):
    _check(nb, *_inputs(2, 3, 50, seed=1), hint=(
        "A (2, 3, 50) input is 6 rows of width 50: normalise each row over the last dim only."))


def test_part1_non_contiguous_input(nb):
    x, fx, weight, bias = _inputs(6, 64, seed=2)
    x, fx = (t.T.contiguous().T for t in (x, fx))  # same values, rows no longer contiguous
    _check(nb, x, fx, weight, bias, hint=(
        "The input was non-contiguous (a transposed view): a kernel that reads row r at "
        "r * n_cols needs contiguous rows, so make them contiguous in the wrapper."))


def test_part1_eps_weight_and_bias(nb):
    x, fx, weight, bias = _inputs(4, 100, seed=3)
    _check(nb, 0.05 * x, 0.05 * fx, weight, bias, eps=0.1, hint=(
        "This input has a small variance, so eps = 0.1 matters: y must use the eps passed in, "
        "inside the square root, y = (h - mean) / sqrt(var + eps) * weight + bias."))


def test_part1_inputs_untouched(nb):
    inputs = _inputs(4, 96, seed=4)
    before = [t.clone() for t in inputs]
    h, y = _fused(nb, *inputs)
    for name, t, old in zip(("x", "fx", "weight", "bias"), inputs, before):
        assert torch.equal(t, old), (
            f"in-place: fused_add_layernorm changed {name}; the caller still needs its inputs, "
            "so store h and y in new tensors")
    for name, out in (("h", h), ("y", y)):
        assert out.data_ptr() not in (inputs[0].data_ptr(), inputs[1].data_ptr()), (
            f"in-place: {name} shares memory with x or fx")


def test_part1_rejects_bad_input(nb):
    msg = value_error(lambda: nb.fused_add_layernorm(*_inputs(2, 8193)), "rows of width 8193")
    assert "8192" in msg, f"a width over 8192 must be refused with a message naming 8192; it said: {msg!r}"
    x, _, weight, bias = _inputs(4, 50)
    msg = value_error(lambda: nb.fused_add_layernorm(x, torch.zeros(4, 51, device=DEVICE), weight, bias),
                      "x of shape (4, 50) with fx of shape (4, 51)")
    assert names_shape(msg, (4, 50)) and names_shape(msg, (4, 51)), (
        f"the ValueError for x (4, 50) and fx (4, 51) must name both shapes; it said: {msg!r}")
    x, fx, weight, bias = _inputs(4, 50)
    for w, b, bad in ((weight[:49], bias, (49,)), (weight, bias.reshape(1, 50), (1, 50))):
        msg = value_error(lambda: nb.fused_add_layernorm(x, fx, w, b), f"a weight or bias of shape {bad}")
        assert names_shape(msg, bad), (
            f"a weight or bias of shape {bad} for rows of width 50 must be refused with a message naming "
            f"{bad}; it said: {msg!r}")


def test_part1_large_mean_rows(nb):
    x, fx, weight, bias = _inputs(8, 4096, seed=7)
    x = x + 1000  # rows of mean about 1000 and variance about 2
    h, y = _fused(nb, x, fx, weight, bias)
    want = F.layer_norm((x + fx).double(), (4096,), weight.double(), bias.double(), 1e-5)
    err = (y.double() - want).abs().max().item()
    assert err < 1e-3, (
        f"on rows with mean about 1000 and variance about 2, y is off by up to {err:.3g}: compute the "
        "variance from the centred values, sum((h - mean)^2) / n, after the mean. The one-pass "
        "E[h^2] - mean^2 subtracts two fp32 numbers near 10^6 and loses most digits.")


class _TorchArithmetic(TorchFunctionMode):
    """Records the torch functions that compute on data while it is active."""
    NAMES = {"add", "__add__", "__radd__", "__iadd__", "sub", "__sub__", "mul", "__mul__", "div", "__truediv__",
             "layer_norm", "mean", "var", "sum", "sqrt", "rsqrt", "pow", "__pow__"}

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in self.NAMES:
            self.seen.append(func.__name__)
        return func(*args, **(kwargs or {}))


def test_part1_add_in_your_kernel(nb):
    inputs = _inputs(4, 64, seed=8)
    with _TorchArithmetic() as mode:
        nb.fused_add_layernorm(*inputs)
    assert not mode.seen, (
        f"the wrapper computed on the data with torch ({', '.join(sorted(set(mode.seen)))}): h = x + fx and "
        "the LayerNorm both belong in your kernel, which stores h and y; the wrapper only checks, reshapes, "
        "allocates and launches")


def test_part1_half_and_bfloat16(nb):
    for dtype, rtol, atol in ((torch.float16, 1e-2, 1e-2), (torch.bfloat16, 2 ** -6, 1e-2)):
        x, fx, weight, bias = _inputs(4, 1000, dtype=dtype, seed=9)
        h, y = _fused(nb, x, fx, weight, bias)
        # one bf16 step: Triton's interpreter casts fp32 to bf16 toward zero, torch rounds to nearest
        assert torch.allclose(h.double(), (x + fx).double(), rtol=2 ** -7, atol=0), (
            f"{dtype}: h differs from x + fx by more than one step of the dtype")
        want = F.layer_norm((x.double() + fx.double()), (1000,), weight.double(), bias.double(), 1e-5)
        err = (y.double() - want).abs().max().item()
        assert torch.allclose(y.double(), want, rtol=rtol, atol=atol), (
            f"{dtype}: y is off by up to {err:.3g}; load, convert to fp32 with .to(tl.float32), compute, and "
            "store in the output's dtype")


def test_part1_refuses_float64(nb):
    msg = value_error(lambda: nb.fused_add_layernorm(*_inputs(4, 64, dtype=torch.float64)), "float64 input")
    assert "float64" in msg, (
        f"float64 inputs must be refused with a message naming float64 (the kernel computes in fp32); "
        f"it said: {msg!r}")


def _counting(run, launches: list):
    """run, recording each call's arguments in launches."""
    def counted(*args, **kwargs):
        launches.append((args, kwargs))
        return run(*args, **kwargs)
    return counted


@contextlib.contextmanager
def _launches_counted(nb):
    """(the notebook's kernels, the list each of their launches is appended to) while the block runs."""
    from triton.runtime.jit import KernelInterface  # after the notebook chose the interpreter

    kernels, launches = [v for v in vars(nb).values() if isinstance(v, KernelInterface)], []
    for kernel in kernels:  # kernel[grid](...) calls kernel.run: count those calls
        kernel.run = _counting(kernel.run, launches)
    try:
        yield kernels, launches
    finally:
        for kernel in kernels:
            del kernel.run


def test_part1_launches_your_kernel(nb):
    with _launches_counted(nb) as (kernels, launches):
        assert kernels, "no @triton.jit kernel among the notebook's names: write the kernel first"
        _fused(nb, *_inputs(4, 64, seed=5))
    assert launches, (
        "fused_add_layernorm calls torch ops instead of your kernel: it never launched a "
        "@triton.jit kernel. Compute h and y in the kernel, launched as kernel[grid](...)")


class _ValuesToPython(TorchFunctionMode):
    """Records the torch calls your code makes, with what each handed back (nbtest.tensor_values): every call
    made outside torch's, Triton's and nbtest's own code, but for theirs inside a launch (where Triton reads the
    tensors), and those made by what torch calls back inside a call of yours (run_seen)."""
    def __init__(self, libraries: tuple[str, ...]):
        super().__init__()
        self.libraries, self.calls = libraries, []

    def yours(self, filename: str) -> bool:
        return not filename.startswith(self.libraries)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if not made_by_cell(sys._getframe(1), self.yours, _LAUNCH):
            return run_seen(self, func, types, args, kwargs)
        return run_recorded(self, func, types, args, kwargs, lambda name, kind: self.calls.append((name, kind)))


_LAUNCH = _counting(None, []).__code__   # a launch's frame: Triton's own calls start there


class _PythonMemory(DispatchMode):
    """Records the torch operators handed a tensor whose memory Python shares (nbtest.tensor_values)."""
    supports_higher_order_operators = True      # wrap_triton's launch on CUDA (launch_through)

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if isinstance(func, HigherOrderOperator):
            return launch_through(self, func, kwargs)
        if any(isinstance(a, (torch.Tensor, torch.UntypedStorage)) and shares_python_memory(a)
               for a in tree_leaves((args, kwargs or {}))):
            self.seen.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def test_part1_hands_python_no_values(nb):
    import triton  # after the notebook chose the interpreter

    # torch's, Triton's and nbtest's code, and this file's (_PythonMemory runs each operator the notebook's calls reach)
    libraries = (*(os.path.dirname(m.__file__) + os.sep for m in (torch, triton, nbtest)), __file__)
    returned = []
    with _launches_counted(nb) as (_, launches), _ValuesToPython(libraries) as mode, _PythonMemory() as memory:
        returned.append(nb.fused_add_layernorm(*_inputs(4, 64, seed=10)))
        # the grader judges every call its tests make, at every width, shape and dtype: so are these, of each kind
        for shape, dtype in [((3, 100), torch.float32), ((2, 3, 48), torch.float16)]:
            try:
                returned.append(nb.fused_add_layernorm(*_inputs(*shape, dtype=dtype, seed=10)))
            except Exception:
                pass    # a call that raises is the other tests' to explain
    read = values_read(mode.calls)
    assert not read, (
        f"the wrapper handed the tensors' values to Python ({', '.join(read)}), which computes on them where no "
        "kernel runs: ask a tensor only for its shape, strides, dtype and device, allocate h and y, and launch "
        "your kernel, whose tl operations compute on what it loads")
    handed = tree_leaves((launches, returned))
    shared = list(dict.fromkeys(memory.seen)) + ["a launch or the result"] * any(
        isinstance(a, torch.Tensor) and shares_python_memory(a) for a in handed)
    assert not shared, (
        f"the wrapper used a tensor whose memory Python shares ({', '.join(shared)}): one made over a bytearray, a "
        "numpy array or a file (torch.frombuffer, torch.from_numpy, .numpy()), which Python reads and writes with no "
        "torch call. h and y are tensors of torch's own that your kernel writes: allocate them with "
        "torch.empty_like and launch the kernel on the inputs")


class _Classes(TorchFunctionMode):
    """Records the tensor classes other than torch's own that torch hands a call to."""
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen += classes_handed(types)
        return run_seen(self, func, types, args, kwargs)


class _DispatchClasses(DispatchMode):
    """The same for the operators torch dispatches (a class's own __torch_dispatch__)."""
    supports_higher_order_operators = True

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if isinstance(func, HigherOrderOperator):
            return launch_through(self, func, kwargs)
        self.seen += classes_handed(types)
        return func(*args, **(kwargs or {}))


def test_part1_runs_where_the_grader_sees_it(nb):
    """The grader measures the wrapper with torch modes, which are each thread's own and set aside while a tensor
    class's __torch_function__ or __torch_dispatch__ runs: its wrapper runs on the caller's thread, with plain
    tensors, and leaves the modes as it found them."""
    threads = threading.active_count()
    with _Classes() as calls, _DispatchClasses() as operators:
        nb.fused_add_layernorm(*_inputs(4, 64, seed=11))
        depth = torch._C._len_torch_function_stack()
        on_top = depth > 0 and torch._C._get_function_stack_at(depth - 1) is calls
    assert on_top, (
        "the wrapper took a torch function mode off torch's stack (a mode's __exit__ pops whatever mode is on top): "
        "the grader's tracer would stop seeing what runs; leave torch's modes alone")
    classes = sorted(set(calls.seen + operators.seen))
    assert not classes, (
        f"torch handed work to a tensor class of yours ({', '.join(classes)}), whose __torch_function__ or "
        "__torch_dispatch__ runs where the grader's tracer is set aside: h and y are plain tensors your kernel "
        "writes (torch.empty_like)")
    # a thread your notebook started before the call is beside it too: the grader counts those, this test cannot
    # (Jupyter runs threads of its own where check() runs these tests)
    assert threading.active_count() <= threads, (
        "the wrapper left a thread running beside it: the grader's tracer sees only the caller's thread, so work "
        "handed to another goes uncounted; compute h and y in the kernel, launched from the wrapper")


# ---------------------------------------------------------------- Part 2

def test_part2_faster_than_eager(nb):
    if DEVICE != "cuda":   # before your code runs, so that without a GPU this is skipped, never failed
        pytest.skip("the timing test needs a CUDA GPU; the interpreter's timings mean nothing")
    _fused(nb, *_inputs(2, 64, seed=6))  # a timing means nothing for a wrapper that does not run
    from triton.testing import do_bench

    rows, width = 8192, 4096
    x, fx, weight, bias = _inputs(rows, width, dtype=torch.float16)
    h, y = _fused(nb, x, fx, weight, bias)
    assert torch.allclose(y.float(), F.layer_norm((x + fx).float(), (width,), weight.float(),
                                                  bias.float()), atol=2e-2, rtol=1e-2), (
        "wrong y in fp16: load, convert to fp32, compute, convert back on store")
    yours = do_bench(lambda: nb.fused_add_layernorm(x, fx, weight, bias))
    eager = do_bench(lambda: F.layer_norm(x + fx, (width,), weight, bias))
    moved = 4 * x.numel() * x.element_size()  # read x and fx, write h and y
    report = (f"{rows} x {width} fp16: yours {yours:.3f} ms ({moved / yours / 1e6:.0f} GB/s), "
              f"eager {eager:.3f} ms ({moved / eager / 1e6:.0f} GB/s), {eager / yours:.2f}x")
    print(report)
    assert eager / yours >= MIN_SPEEDUP, (
        f"{report}; expected at least {MIN_SPEEDUP}x. A fused kernel should move only x, fx, h and y once: "
        "look for copies in the wrapper (.float(), .clone(), torch ops on the data) and try num_warps")


# ---------------------------------------------------------------- the rules (the notebook's "Rules the grader checks")

def test_part1_follows_the_rules(nb):
    follows_rules(1, __file__)
