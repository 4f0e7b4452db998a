"""Assignment 2, fused-add-norm, on a machine without a GPU (CUDA is hidden from every subprocess):
the public tests pass on the reference and fail on the release, the source notebook runs,
the loader keeps kernel sources for Triton, and the benchmark says it needs CUDA."""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import nbformat
import nbtest
import pytest
import torch
from nbclient import NotebookClient

from autograder.course import ROOT

NAME = "fused-add-norm"
SOURCE_NB = ROOT / "solutions" / NAME / f"{NAME}.ipynb"
RELEASE_NB = ROOT / "assignments" / NAME / f"{NAME}.ipynb"
PUBLIC = re.findall(r"^def (test_part\d_\w+)", (SOURCE_NB.parent / "test_public.py").read_text(), re.M)
NO_CUDA = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


def public_results(folder, tmp_path) -> dict[str, tuple[str, str]]:
    """`pytest` in folder, as a student types it: {test name: (outcome, message)}."""
    report = tmp_path / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}"],
                   cwd=folder, env=NO_CUDA, capture_output=True, text=True, timeout=300)
    results = {}
    for case in ET.parse(report).iter("testcase"):
        outcome = next(iter(case), None)
        results[case.get("name")] = ("passed", "") if outcome is None else (
            outcome.tag, f"{outcome.get('message', '')}\n{outcome.text or ''}")
    return results


def test_reference_passes_every_public_test(tmp_path):
    results = public_results(SOURCE_NB.parent, tmp_path)
    assert sorted(results) == sorted(PUBLIC)
    for name, (outcome, message) in results.items():
        if name.startswith("test_part2_"):
            assert outcome == "skipped" and "needs a CUDA GPU" in message, (name, outcome, message)
        else:
            assert outcome == "passed", (name, outcome, message)


def test_release_fails_every_public_test_with_a_clear_message(tmp_path):
    results = public_results(RELEASE_NB.parent, tmp_path)
    assert sorted(results) == sorted(PUBLIC)
    for name, (outcome, message) in results.items():
        if name.startswith("test_part2_"):   # skipped before it calls the stub: no GPU here
            assert outcome == "skipped" and "needs a CUDA GPU" in message, (name, outcome, message)
            continue
        assert outcome == "failure" and "not implemented yet" in message, (name, outcome, message)
        assert "Traceback" not in message, name


def test_source_notebook_runs_top_to_bottom_on_cpu():
    nb = nbformat.read(SOURCE_NB, as_version=4)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUDA_VISIBLE_DEVICES", "")  # the kernel process inherits it
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(SOURCE_NB.parent)}}).execute()
    cells = {cell.id: cell for cell in nb.cells if cell.cell_type == "code"}
    text = {cid: "".join(o.get("text", "") for o in cell.outputs) for cid, cell in cells.items()}
    n_part1 = sum(name.startswith("test_part1_") for name in PUBLIC)
    assert f"Part 1: {n_part1} of {n_part1} public tests passed." in text["part1-tests"]
    assert "kernel [10.0, 35.0, 60.0]  torch [10.0, 35.0, 60.0]" in text["primer-demo"]
    assert "refused: x and fx must have the same shape" in text["part1-demo"]
    assert "needs a CUDA GPU" in text["part2-benchmark"]
    assert "skipped" in text["part2-tests"]
    markdown = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    for printed, quoted in [("one pass in fp32: variance off by 0.12, y off by 0.11", "| 0.12 | 0.11 |"),
                            ("two passes in fp32: variance off by 1.9e-07, y off by 3.6e-05",
                             "| $1.9 \\cdot 10^{-7}$ | $3.6 \\cdot 10^{-5}$ |"),
                            ("F.layer_norm in fp32: y off by 5.1e-05", "| | $5.1 \\cdot 10^{-5}$ |"),
                            ("your kernel: y off by 3.9e-05", "is off by $3.9 \\cdot 10^{-5}$")]:
        assert printed in text["part1-large-mean"], (printed, text["part1-large-mean"])
        assert quoted in markdown, quoted     # the text quotes what the cell prints
    for cid, cell in cells.items():
        assert not [o for o in cell.outputs if o.get("name") == "stderr" or o.output_type == "error"], cid


def test_loaded_kernel_compiles_from_its_cell_source():
    """On a CUDA grader @triton.jit builds a JITFunction, which needs the kernel's source."""
    script = ("import torch, nbtest\n"
              "torch.cuda.is_available = lambda: True  # the notebook's setup then skips the interpreter\n"
              f"kernel = nbtest.load({str(SOURCE_NB)!r}).fused_add_layernorm_kernel\n"
              "print(type(kernel).__name__)\n"
              "print(kernel.src)\n")
    env = {k: v for k, v in NO_CUDA.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("JITFunction\ndef fused_add_layernorm_kernel(x_ptr, fx_ptr,"), proc.stdout
    assert "tl.store(y_ptr + offs" in proc.stdout


def test_reference_and_release_loaded_together_keep_their_own_kernels():
    """A grader loads the reference and a submission of the same file name in one process."""
    reference = nbtest.load(SOURCE_NB, name="fan_reference")
    release = nbtest.load(RELEASE_NB, name="fan_release")
    x, fx = torch.randn(2, 3, 50, device=reference.DEVICE)
    weight, bias = torch.randn(2, 50, device=reference.DEVICE)
    h, y = reference.fused_add_layernorm(x, fx, weight, bias)
    assert torch.equal(h, x + fx)
    assert torch.allclose(y, torch.nn.functional.layer_norm(x + fx, (50,), weight, bias), atol=1e-5)
    with pytest.raises(NotImplementedError):
        release.fused_add_layernorm(x, fx, weight, bias)


def test_kernels_run_in_the_interpreter_after_nbtests_optimizer_step_in_the_same_process():
    """pytest over both assignments, residual-connections first: nbtest's monitor takes torch's first
    optimizer step, which imports Triton; fused-add-norm's kernels, loaded after it, still run on the CPU."""
    script = ("import torch, nbtest\n"
              "nbtest.first_calls(optimizer=True)\n"
              f"nb = nbtest.load({str(SOURCE_NB)!r})\n"
              "x, fx = torch.randn(2, 3, 50)\n"
              "h, y = nb.fused_add_layernorm(x, fx, torch.ones(50), torch.zeros(50))\n"
              "print(torch.allclose(y, torch.nn.functional.layer_norm(x + fx, (50,)), atol=1e-5))\n")
    env = {k: v for k, v in NO_CUDA.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "True\n", proc.stderr[-2000:]


def test_benchmark_on_cpu_says_it_needs_cuda_and_exits_0(tmp_path):
    out = tmp_path / "bench"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fused_add_norm.py"), "--out", str(out)],
                          env=NO_CUDA, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "needs a CUDA GPU" in proc.stdout
    assert not out.exists()



def test_the_public_tests_dispatch_modes_leave_torch_dynamo_unimported():
    """torch wraps a TorchDispatchMode's handler so that its first call imports torch._dynamo (2 s of CPU, half a
    public test run here); nbtest's DispatchMode, which test_public.py's dispatch modes subclass, is not wrapped."""
    script = """
import sys, torch
from torch.utils._python_dispatch import TorchDispatchMode
from nbtest.tensor_values import DispatchMode
def handler(self, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))
imported = []
for base in (DispatchMode, TorchDispatchMode):
    with type("Mode", (base,), {"__torch_dispatch__": handler})():
        torch.ones(2) + 1
    imported.append("torch._dynamo" in sys.modules)
print(imported)
"""
    proc = subprocess.run([sys.executable, "-c", script], env=NO_CUDA, capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["[False,", "True]"], proc.stdout + proc.stderr
    assert "(TorchDispatchMode)" not in (SOURCE_NB.parent / "test_public.py").read_text()

# Samples whose mistake the public tests must catch too, and the public tests each one fails.
PUBLIC_CATCHES = {"one-pass-variance": {"test_part1_large_mean_rows"},
                  # the add in the wrapper is torch arithmetic, which the public test measures as the grader does
                  "torch-side-add": {"test_part1_add_in_your_kernel"},
                  "float64-accepted": {"test_part1_refuses_float64"},
                  # Python lists around an empty kernel: the values leave the tensors
                  "by-hand-wrapper": {"test_part1_hands_python_no_values"},
                  "no-weight-check": {"test_part1_rejects_bad_input"},
                  # the same at a width that is not a power of two only, which the public test calls too; the
                  # variance over BLOCK its kernel has there is the hidden tests' to find
                  "lists-redo-odd-widths": {"test_part1_hands_python_no_values"}}


@pytest.mark.parametrize("sample", sorted(PUBLIC_CATCHES))
def test_public_tests_catch_the_mistake(sample, tmp_path):
    (tmp_path / f"{NAME}.ipynb").write_bytes((ROOT / "submissions" / NAME / f"{sample}.ipynb").read_bytes())
    for name in ("test_public.py", "contract.toml", "rules.toml"):     # the student's folder, as released
        (tmp_path / name).write_bytes((ROOT / "assignments" / NAME / name).read_bytes())
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p nbtest.plugin -q\n")
    results = public_results(tmp_path, tmp_path)
    failed = {name for name, (outcome, _) in results.items() if outcome == "failure"}
    assert failed == PUBLIC_CATCHES[sample], results
    for name in failed:
        message = results[name][1]
        assert "DID NOT RAISE" not in message, message


def test_a_reduce_with_the_kernels_own_combine_sums_as_a_tree():
    """tl.reduce(h, 0, add) with a combine function of the notebook's: Triton's interpreter folds it left to
    right in fp32, so a two-pass kernel's mean of 4096 values near 1000 was off by 0.002 to 0.005, and an
    honest kernel failed the large-mean tests that a GPU's tree reduction passes. nbtest runs it as a tree;
    the one-pass variance, E[h^2] - mean^2, through the same reduction still fails them."""
    script = '''
import json
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
import nbtest

@triton.jit
def _add(a, b):
    return a + b

@triton.jit
def norm(h_ptr, y_ptr, n_cols, TWO_PASS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * n_cols + tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    mean = tl.reduce(h, 0, _add) / n_cols
    if TWO_PASS:
        var = tl.reduce((h - mean) * (h - mean), 0, _add) / n_cols
    else:
        var = tl.reduce(h * h, 0, _add) / n_cols - mean * mean
    tl.store(y_ptr + offs, (h - mean) / tl.sqrt(var + 1e-5))

h = 1000 + torch.randn(8, 4096, generator=torch.Generator().manual_seed(0))
want = torch.nn.functional.layer_norm(h.double(), (4096,))
for two_pass in (True, False):
    y = torch.empty_like(h)
    norm[(8,)](h, y, 4096, TWO_PASS=two_pass, BLOCK=4096)
    print((y.double() - want).abs().max().item())
'''
    proc = subprocess.run([sys.executable, "-c", script], env=NO_CUDA, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    two_pass, one_pass = map(float, proc.stdout.split())
    assert two_pass < 1e-4 and one_pass > 1e-2, proc.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="the check is the interpreter's; a GPU faults by itself")
def test_a_lane_outside_the_launchs_tensors_is_stopped_before_it_reads_or_writes():
    """Triton's interpreter reads and writes raw addresses: a kernel without masks wrote past its tensors into
    the process's heap (and an address computed from id() reached any object there), and the grading child then crashed or raised something unrelated, by chance. nbtest
    checks each active lane against the storage of the launch's tensors, as a GPU's illegal-address fault
    would: a lane past a tensor stops the kernel before that load or store; a lane inside its storage
    (past a view's end) or masked off is the kernel's business."""
    import triton
    import triton.language as tl
    from nbtest.warmup import OUT_OF_BOUNDS
    from triton.runtime.interpreter import InterpreterError
    from triton.runtime import autotuner, interpreter
    nbtest.interpreter_as_on_gpu()
    patched = (interpreter.GridExecutor, interpreter.FunctionRewriter, interpreter.InterpreterBuilder,
               interpreter.ReduceOps, autotuner.Autotuner)
    before = [dict(cls.__dict__) for cls in patched]
    # a second call keeps one check and changes no class (the fork server and a notebook both call; the grader's
    # launch tracer counts a changed Triton class as the notebook's)
    nbtest.interpreter_as_on_gpu()
    assert all(cls.__dict__[k] is v for cls, was in zip(patched, before) for k, v in was.items())

    @triton.jit
    def copy(src_ptr, dst_ptr, n, MASKED: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n if MASKED else offs < BLOCK
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask, other=0.0), mask=mask)

    wide, short = torch.arange(64.0), torch.arange(39.0)
    dst = torch.zeros(39)
    with pytest.raises(InterpreterError, match=re.escape(OUT_OF_BOUNDS) + r": tl.store writes 25 of its 64 lanes"):
        copy[(1,)](wide, dst, 39, MASKED=False, BLOCK=64)
    assert torch.equal(dst, torch.zeros(39))          # stopped before the store wrote a lane
    with pytest.raises(InterpreterError, match=r"tl.load reads 25 of its 64 lanes .* the first at lane 39"):
        copy[(1,)](short, torch.zeros(64), 39, MASKED=False, BLOCK=64)
    copy[(1,)](short, dst, 39, MASKED=True, BLOCK=64)
    assert torch.equal(dst, short)
    buffer = torch.zeros(64)
    copy[(1,)](wide, buffer[:39], 39, MASKED=False, BLOCK=64)   # past the view, inside its storage: legal
    assert torch.equal(buffer, wide)

    @triton.jit
    def atomics(ptr, at, CAS: tl.constexpr):
        if CAS:
            tl.atomic_cas(ptr + at, 0.0, 1.0)
        else:
            tl.atomic_add(ptr + at + tl.arange(0, 4), 1.0)

    with pytest.raises(InterpreterError, match=re.escape(f"{OUT_OF_BOUNDS}: tl.store writes")):
        copy[(1,)](short, torch.empty(0), 2, MASKED=True, BLOCK=4)      # an empty tensor holds no lane

    @triton.jit
    def poke(ptr, at):
        tl.store(ptr + at, 1.0)

    aligned = torch.zeros(4, dtype=torch.float32)
    assert aligned.data_ptr() % 4 == 0
    with pytest.raises(InterpreterError, match=re.escape(f"{OUT_OF_BOUNDS}: tl.store writes")):
        poke[(1,)](aligned, -(aligned.data_ptr() // 4) - 1)     # 2**64 - 4: its end wraps to 0, still outside
    assert torch.equal(aligned, torch.zeros(4))
    for cas, what in ((False, "an atomic writes 1 of its 4 lanes"), (True, "tl.atomic_cas writes 1 of its 1 lanes")):
        target = torch.zeros(8)
        atomics[(1,)](target, 4, CAS=cas)
        assert target.sum() == (1 if cas else 4)
        with pytest.raises(InterpreterError, match=re.escape(f"{OUT_OF_BOUNDS}: {what}")):
            atomics[(1,)](target, 5 if not cas else 8, CAS=cas)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's grid; a GPU's launch calls it so itself")
def test_a_launchs_grid_function_runs_as_on_a_gpu_before_the_launch():
    """Triton's interpreter called a grid function inside the launch, handed its own pointers, with
    triton.language patched: a grid's tl.load and tl.store then read and wrote the tensors by address, Python doing
    the kernel's work where no kernel runs (red team 22). nbtest calls it as a GPU's launch does: before the
    launch, handed the kernel's arguments by name as given (tensors as torch's, sizes, constexprs), where
    triton.language is not running; its tuple, or list, is the grid."""
    import triton
    import triton.language as tl
    nbtest.interpreter_as_on_gpu()

    @triton.jit
    def fill(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 1.0, mask=offs < n)

    seen = []

    def grid(meta):
        seen.append({k: type(v).__name__ for k, v in meta.items()})
        return [triton.cdiv(meta["n"], meta["BLOCK"])]

    out = torch.zeros(10)
    fill[grid](out, 10, BLOCK=4)
    assert torch.equal(out, torch.ones(10)) and seen == [{"out_ptr": "Tensor", "n": "int", "BLOCK": "int"}]

    def loads(meta):      # a grid running the kernel's work: as on a GPU, tl.load outside a kernel raises
        tl.store(meta["out_ptr"], tl.load(meta["out_ptr"]) + 1)
        return (1,)

    out = torch.zeros(10)
    with pytest.raises(ValueError, match="@triton.jit"):
        fill[loads](out, 10, BLOCK=4)
    assert torch.equal(out, torch.zeros(10))


KERNELS_READING_GLOBALS = """
import triton
import triton.language as tl

WIDTH = 4
SCALE = tl.constexpr(2.0)
SINK = [0]


@triton.jit
def _twice(v):
    return v * SCALE


@triton.jit
def honest(out_ptr):
    offs = tl.arange(0, WIDTH)
    tl.store(out_ptr + offs, _twice(tl.load(out_ptr + offs)))


@triton.jit
def _taps(v):
    return SINK[0] + v


@triton.jit
def tapping(out_ptr):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, _taps(tl.load(out_ptr + offs)))


def _python(v):
    return v


IN_PYTHON = triton.constexpr_function(_python)


class _Posing(triton.runtime.jit.JITCallable):
    __module__ = "triton.language.extra"

    def __call__(self, v):
        return v


POSING = _Posing(_python)


@triton.jit
def through_a_constexpr_function(out_ptr):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, IN_PYTHON(tl.load(out_ptr + offs)))


@triton.jit
def through_a_posing_class(out_ptr):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, POSING(tl.load(out_ptr + offs)))
"""


def _kernels(tmp_path, monkeypatch, source: str, name: str):
    """source, a module of kernels, imported from a file (Triton reads a kernel's source from it)."""
    import importlib
    importlib.import_module("triton")      # first, as a notebook's setup cell does
    nbtest.interpreter_as_on_gpu()
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_a_kernel_reads_only_the_globals_a_gpu_compiler_allows(tmp_path, monkeypatch):
    """Triton's interpreter ran whatever a kernel's global held: a module-level list holding an object of the
    notebook's, added to the loaded blocks, ran its __add__ on them inside the launch (red team 28). As a GPU's
    compiler does, a kernel and the @triton.jit functions it calls read only constexpr globals, modules, kernels
    and triton.language's names (and plain numbers, as the interpreter always let them); any other raises
    Triton's NameError at the launch, before the kernel runs."""
    module = _kernels(tmp_path, monkeypatch, KERNELS_READING_GLOBALS, "nbtest_gpu_globals")
    out = torch.ones(4)
    module.honest[(1,)](out)
    assert torch.equal(out, torch.full((4,), 2.0))
    with pytest.raises(NameError, match="global variable SINK from within @jit.ed function _taps"):
        module.tapping[(1,)](out)
    # red team 39: a constexpr function runs its Python on the blocks here (on a GPU only on constexprs, as it
    # compiles), and a class of the module's own is not Triton's for naming a triton module as its own
    for kernel, name in ((module.through_a_constexpr_function, "IN_PYTHON"), (module.through_a_posing_class, "POSING")):
        with pytest.raises(NameError, match=f"global variable {name} from within"):
            kernel[(1,)](out)
    assert torch.equal(out, torch.full((4,), 2.0))


KERNELS_WITH_A_DEF_IN_A_STRING = '''
import triton
import triton.language as tl


@triton.jit
def documented(out_ptr):
    """Fills out with ones, as this Python would:

    def documented(out):
        out[:] = 1
    """
    tl.store(out_ptr + tl.arange(0, 4), 1.0)


@triton.jit
def hiding(out_ptr):
    """
    def hiding(out_ptr):
        tl.store(out_ptr + tl.arange(0, 4), 2.0)
    """
    tl.store(out_ptr + tl.arange(0, 4), 1.0)  # """
'''
KERNELS_IN_PARTS = '''
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"PART": 0}), triton.Config({"PART": 1})], key=["n"])
@triton.jit
def in_parts(h_ptr, y_ptr, n, PART: tl.constexpr):
    offs = tl.arange(0, 4)
    if PART == 0:
        tl.store(h_ptr + offs, 1.0)
    else:
        tl.store(y_ptr + offs, 1.0)
'''


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's rewrite; a GPU's compiler parses the def")
def test_a_kernel_runs_its_own_def_not_one_a_string_in_it_holds(tmp_path, monkeypatch):
    """Triton's interpreter ran the def starting at the last line of a kernel's source that begins "def ": one in a
    docstring made an honest kernel a SyntaxError, and a string holding a def, closed by a comment on the body's
    last line, ran that def in place of the body (red team 36). nbtest runs the def itself, as a GPU's compiler
    does."""
    module = _kernels(tmp_path, monkeypatch, KERNELS_WITH_A_DEF_IN_A_STRING, "nbtest_def_in_a_string")
    for kernel in (module.documented, module.hiding):
        out = torch.zeros(4)
        kernel[(1,)](out)
        assert torch.equal(out, torch.ones(4)), kernel


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's trials; a GPU's write the tensors")
def test_an_autotuners_trials_leave_only_the_kept_configs_writes(tmp_path, monkeypatch):
    """An autotuner's trials wrote the call's tensors in place, so configs that each computed a part of the outputs
    added up inside one launch (red team 36). Each trial's writes are undone; only the config kept writes."""
    module = _kernels(tmp_path, monkeypatch, KERNELS_IN_PARTS, "nbtest_in_parts")
    h, y = torch.zeros(4), torch.zeros(4)
    module.in_parts[(1,)](h, y, 4)
    assert torch.equal(h, torch.ones(4)) and torch.equal(y, torch.zeros(4))
    assert module.in_parts.best_config.kwargs == {"PART": 0}


def test_a_kernel_reaches_no_memory_through_a_pointer_of_its_own_nor_outside_a_launch():
    """Three ways past the lane check, each of which wrote a tensor the kernel was never handed (in the grading
    child, any object at an address from id(): a RuntimeError's type turned into ValueError): an argument of the
    notebook's own with a data_ptr (the interpreter hands the kernel whatever address it returns, and the check
    knew no range for it, so it checked nothing); the kernel called as a plain function, which the interpreter
    runs with no launch (before any launch nothing was checked; after one, the last launch's storages, since
    freed); and a launch nested in another's grid function, whose ranges outlived it. Each now stops at its
    store. And a fork server with TRITON_INTERPRET=1 (residual-connections', where importing triton is only a
    flag) imports Triton with the check on, so a notebook's `import triton` gets no raw interpreter."""
    script = '''
import json
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from autograder.core import sandbox
sandbox._preload([])       # the fork server's imports: Triton, checked, before any notebook's import
import triton, triton.language as tl

@triton.jit
def poke(ptr, address, value):
    tl.store(ptr + (address - ptr.to(tl.int64)) // 8, value)

@triton.jit
def poke_address(address, value):
    tl.store(tl.full((1,), address, tl.int64).to(tl.pointer_type(tl.int64), bitcast=True),
             tl.full((1,), value, tl.int64))

class Pointer:
    """Not a tensor: a pointer the interpreter takes at its word."""
    def __init__(self, t):
        self.t = t
    def data_ptr(self):
        return self.t.data_ptr()
    def untyped_storage(self):
        return self.t.untyped_storage()
    def storage_offset(self):
        return 0
    def size(self):
        return self.t.size()
    def stride(self):
        return self.t.stride()
    def new_empty(self, *args, **kwargs):
        return self
    def set_(self, *args):
        return self
    dtype = torch.int64

def attempt(name, write, tensor=False):
    target = torch.zeros(1, dtype=torch.int64)      # never handed to the kernel that writes
    try:
        write(target if tensor else target.data_ptr())
        outcome = "raised nothing"
    except Exception as e:
        outcome = "out of bounds" if "out of bounds" in repr(e) else repr(e)[:200]
    print(name, int(target.item()), outcome)

attempt("own-pointer", lambda at: poke[(1,)](Pointer(torch.zeros(4, dtype=torch.int64)), at, 7))
attempt("plain-call", lambda at: poke_address(at, 7))
freed = torch.zeros(4, dtype=torch.int64)
poke[(1,)](freed, freed.data_ptr(), 7)
attempt("plain-call-after-a-launch", lambda at: poke_address(at, 7))
def nested(target):
    def grid(meta):     # runs inside the outer launch, and launches one handed the target
        poke[(1,)](target, target.data_ptr(), 0)
        return (1,)
    poke[grid](torch.zeros(1, dtype=torch.int64), target.data_ptr(), 7)
attempt("after-a-nested-launch", nested, tensor=True)
'''
    proc = subprocess.run([sys.executable, "-c", script], env=NO_CUDA, capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcomes = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert outcomes == dict.fromkeys(["own-pointer", "plain-call", "plain-call-after-a-launch",
                                      "after-a-nested-launch"], "0 out of bounds"), proc.stdout


def test_a_kernels_first_launch_leaves_none_of_the_interpreters_globals_in_its_module(tmp_path):
    """Triton's interpreter rewrites a kernel at its first launch and copied every global of its own module that
    the kernel's module lacked into it: into the notebook's namespace, where a cell then found _interpreter, whose
    store writes any raw address unchecked (injected-retypes-error: a RuntimeError made a ValueError, 100 to its
    twin's 96), and np. Only the names the rewrite writes into the kernel's code stay; the kernel, a chained
    comparison and an assignment among its lines (the rewrite's own names), still runs."""
    script = '''
import json
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from autograder.core import sandbox
sandbox._preload([])
import triton, triton.language as tl

@triton.jit
def clamp(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    inside = (0 < x) & (x < 2)
    tl.store(x_ptr + offs, tl.where(0 <= offs < n, tl.where(inside, x, 0.0), 0.0), mask=offs < n)

x = torch.tensor([0.5, 3.0, 1.5])
clamp[(1,)](x, 3, BLOCK=4)
print(x.tolist(), sorted(name for name in ("_interpreter", "np", "GridExecutor", "interpreter_builder",
                                            "_InterpreterComparison", "interpreter_semantic") if name in globals()))
'''
    (tmp_path / "launch.py").write_text(script)       # a file: the interpreter rewrites a kernel from its source
    proc = subprocess.run([sys.executable, str(tmp_path / "launch.py")], env={**NO_CUDA, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[0] == "[0.5, 0.0, 1.5] ['_InterpreterComparison', 'interpreter_semantic']", proc.stdout


def test_the_launch_trace_names_each_call_of_the_notebook_that_hands_python_the_values():
    """The "launches" tracer records the torch calls made by code compiled as a cell (here "<cell k>"), with what
    each handed back, and nbtest.tensor_values.values_read keeps those that gave Python the values: the
    wrapper's own tolist, a function handed to apply_, a heuristic's numpy inside the launch, an object whose
    __index__ torch calls; not the sizes and allocations an honest wrapper asks for, nor Triton's interpreter reading
    the tensors inside the launch, nor a generator seeded. A generator's state set from a tensor is a call that
    gave Python the values, however it is reached (nbtest.generators). A tensor class of the cell's that torch hands
    an operator to is reported apart, and so is each place a tensor over Python's memory went: an operator, a
    launch, the result."""
    script = '''
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from autograder.core import probe
from autograder.suites.fused_add_norm import specs
from nbtest import generators
from nbtest.tensor_values import as_notebooks, values_read
generators.install()     # as the sandbox's zygote does
specs.warm_up()
cell = """
import torch, triton, triton.language as tl

@triton.jit
def _add(x_ptr, h_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * n + tl.arange(0, BLOCK)
    tl.store(h_ptr + offs, tl.load(x_ptr + offs) * 2)

@triton.heuristics({"BLOCK": lambda args: len(args["x_ptr"].numpy()) * 0 + 8})
@triton.jit
def _peeks(x_ptr, h_ptr, n, BLOCK: tl.constexpr):
    pass

def honest(x):
    rows = x.contiguous().view(-1, x.shape[-1]).unflatten(-1, (x.shape[-1],))   # a function that skips no hop
    h = torch.empty_like(rows)
    assert rows.is_contiguous() and rows.dim() == 2 and x.dtype == torch.float32 and x.numel() > 0
    _add[(rows.shape[0],)](rows, h, rows.size(1), BLOCK=8)
    return h.view(x.shape)

def lists(x):
    return torch.tensor([v * 2 for v in x.tolist()])

def callback(x):
    return x.clone().apply_(lambda v: v * 2)

def heuristic(x):
    h = torch.empty_like(x)
    _peeks[(1,)](x, h, 8)
    return h

class Rows:
    def __index__(self):
        return 8

def handed(x):
    return torch.empty(Rows())

class Lazy(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return torch.empty(1)

def subclass(x):
    return torch.empty_like(torch.empty(1).as_subclass(Lazy))

_STORE = bytearray(64)
_SLOTS = torch.frombuffer(_STORE, dtype=torch.float32)

def copied(x):
    _SLOTS[:8].copy_(x)
    return torch.empty_like(x)

def launched(x):
    h = torch.empty_like(x)
    _add[(1,)](_SLOTS, h, 8, BLOCK=8)
    return h

def returned(x):
    import numpy
    return torch.from_numpy(numpy.ones(8, dtype=numpy.float32))

def grid_of_builtins(x):
    import functools
    h, got = torch.empty_like(x), []
    _add[functools.partial(next, iter([map({None: 1}.get, map(got.extend, map(torch.Tensor.tolist, [x])))]))](
        x, h, 8, BLOCK=8)
    return h

import functools
_GOT, _AT_INDEX, _AT_DEL, _AT_KEPT = [], [], [], []

class _Entry:
    __index__ = functools.partial(next, map({None: 1}.get, map(_GOT.extend, map(torch.Tensor.tolist, _AT_INDEX))))

class _Late:
    __del__ = functools.partial(next, map(_GOT.extend, map(torch.Tensor.tolist, _AT_DEL)))

def grid_entry(x):
    h = torch.empty_like(x)
    _AT_INDEX.append(x)
    _add[(_Entry(),)](x, h, 8, BLOCK=8)
    return h

def attributed(x):
    h = torch.empty_like(x)
    h.note = 1
    _add[(1,)](x, h, 8, BLOCK=8)
    return h

def swallowed(x):
    h = torch.empty_like(x)
    try:
        _add[(1,)](x, h, 8, BLOCK=9)
    except Exception:
        pass
    return h

def late(x):
    _AT_DEL.append(x)
    token = _Late()
    return torch.empty_like(x)

class _Start:
    __index__ = functools.partial(next, map({None: 0}.get, map(_GOT.extend, map(torch.Tensor.tolist, _AT_INDEX))))

def sliced(x):
    _AT_INDEX.append(x)
    return x[slice(_Start(), None)]

class _Fill(torch.autograd.Function):
    @staticmethod
    def forward(ctx, seed, x):
        ctx.x = x
        return seed.view_as(seed)

    @staticmethod
    def backward(ctx, grad):
        _GOT.extend(ctx.x.tolist())
        return None, None

def backward(x):
    seed = torch.zeros(1, requires_grad=True)
    _Fill.apply(seed, x).backward(torch.ones(1))
    return torch.empty_like(x)

class _Token:
    __del__ = functools.partial(next, map(_GOT.extend, map(torch.Tensor.tolist, _AT_DEL)))

def released(x):
    _AT_DEL.append(x)
    holder, grad = torch.zeros(1, requires_grad=True), torch.zeros(1)
    grad.token = _Token()
    holder.grad = grad
    del grad
    holder.grad = None      # torch lets go of the gradient, and of its token, inside the setter
    return torch.empty_like(x)

class _Kept:
    __del__ = functools.partial(next, map(_GOT.extend, map(torch.Tensor.tolist, _AT_KEPT)))

def _keeps(meta):
    meta["kept"] = _Kept()
    return (1,)

def grid_keeps(x):
    h = torch.empty_like(x)
    _AT_KEPT.append(x)
    _add[_keeps](x, h, 8, BLOCK=8)
    return h

def _marks(meta):
    meta["h_ptr"].note = 1
    return (1,)

def grid_marks(x):
    h = torch.empty_like(x)
    try:
        _add[_marks](x, h, 8, BLOCK=8)
    except TypeError:
        pass
    return h

class _Key(str):
    pass

def named(x):
    h = torch.empty_like(x)
    try:
        _add[(1,)](x, h, 8, BLOCK=8, **{_Key("spare"): 0})
    except TypeError:
        pass
    return h

def seeded(x):
    import copy
    g = torch.Generator().manual_seed(1)
    state = g.get_state()
    list(map(g.set_state, [state]))
    copy.copy(g)
    return torch.empty_like(x)
"""
module = type(os)("nb")
exec(compile(cell, "<cell k>", "exec"), module.__dict__)
found = {}
names = ("honest", "lists", "callback", "heuristic", "handed", "subclass", "copied", "launched", "returned",
         "grid_of_builtins", "grid_entry", "attributed", "swallowed", "late", "seeded", "sliced", "backward",
         "released", "grid_keeps", "grid_marks", "named")
for name in names:
    with probe.TRACERS["launches"](module) as recorder:     # called as the probe calls the wrapper
        result = as_notebooks(getattr(module, name), torch.ones(8))
    report = recorder.report(result)
    found[name] = values_read(report["calls"])
    found[name + " classes"], found[name + " shared"] = report["classes"], report["shared"]
    found[name + " raised"] = report["raised"]
    found[name + " foreign"] = sorted({f for launch in report["launches"] for f in launch["foreign"]})
    found["machinery"] = report["machinery"]
kind, run = type(module._add), type(module._add).run
kind.run = lambda self, *args, **kwargs: run(self, *args, **kwargs)    # a cell's run around every launch
with probe.TRACERS["launches"](module) as recorder:
    module.honest(torch.ones(8))
found["replaced"] = recorder.report()["machinery"]
print(json.dumps(found))
'''
    proc = subprocess.run([sys.executable, "-c", script], env=NO_CUDA, capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.splitlines()[-1])
    names = [key for key in found if " " not in key and key not in ("machinery", "replaced")]
    assert found == {
        "honest": [], "lists": ["torch.Tensor.tolist"], "callback": ["torch.Tensor.apply_"],
        "heuristic": ["torch.Tensor.numpy"], "handed": ["torch.empty"], "subclass": [], "machinery": [],
        "replaced": ["InterpretedFunction"], "subclass classes": ["Lazy"],
        "copied": [], "launched": [], "returned": [],
        # a grid, or a grid's entry, or a finaliser of the call's locals, made of builtins alone has no frame of a
        # cell's: each is the notebook's all the same (tensor_values.grid_of, as_notebooks)
        "grid_of_builtins": ["torch.Tensor.tolist"], "grid_entry": ["torch.Tensor.tolist"],
        "late": ["torch.Tensor.tolist"], "seeded": ["torch.Generator.set_state", "torch.Generator.__setstate__"],
        # what torch calls back inside a call of the notebook's (an __index__, a backward, a finaliser): the mode is on
        "sliced": ["torch.Tensor.__getitem__", "torch.Tensor.tolist"], "backward": ["torch.Tensor.tolist"],
        "released": ["torch.Tensor.tolist"],
        # what a grid leaves in its arguments by name dies in grid_of's frame; a grid that marks a tensor raises
        "grid_keeps": ["torch.Tensor.tolist"], "grid_marks": [], "grid_marks raised": ["_add"],
        # a keyword named by anything but a str: Triton would compare it inside the launch
        "named": [], "named raised": ["_add"],
        "attributed": [], "swallowed": [], "attributed foreign": ["Tensor with attributes of its own (note)"],
        "swallowed raised": ["_add"],
        # the operators the cell ran (the interpreter's own copies inside a launch are not), the launch, the result
        "copied shared": ["slice", "copy_"], "launched shared": ["the launch of _add"],
        "returned shared": ["lift_fresh", "what it returned"],
        **{f"{name} classes": [] for name in names if name != "subclass"},
        **{f"{name} shared": [] for name in names if name not in ("copied", "launched", "returned")},
        **{f"{name} raised": [] for name in names if name not in ("swallowed", "grid_marks", "named")},
        **{f"{name} foreign": [] for name in names if name != "attributed"}}, found


def test_a_launch_through_tritons_higher_order_operator_is_traced_as_any_launch():
    """On CUDA, torch.library.wrap_triton launches through torch's triton_kernel_wrapper_mutation, a higher-order
    operator a torch dispatch mode must take (nbtest.tensor_values.launch_through): the tracer launches the kernel
    with its modes on, so the launch fuses as kernel[grid](...) does, and a copy of an input's values into a tensor
    over Python's memory, passed to the launch, is seen as anywhere else. Any other higher-order operator (torch.cond,
    whose branches would run with the modes aside) fails the call. Under the interpreter wrap_triton hands the kernel
    back, so the operator is called here directly, as wrap_triton's wrapper calls it on CUDA."""
    script = '''
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from autograder.core import probe
from autograder.suites.fused_add_norm import part1, specs
from nbtest.cellcode import kernel_defs
from nbtest.tensor_values import as_notebooks
specs.warm_up()
cell = """
import torch, triton, triton.language as tl
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table, triton_kernel_wrapper_mutation

@triton.jit
def _twice(x_ptr, h_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(h_ptr + offs, tl.load(x_ptr + offs) * 2, mask=offs < n)

def _launch(x, h):
    triton_kernel_wrapper_mutation(kernel_idx=kernel_side_table.add_kernel(_twice),
                                   constant_args_idx=kernel_side_table.add_constant_args({"n": 8, "BLOCK": 8}),
                                   grid=[(1, 1, 1)], tma_descriptor_metadata={}, kwargs={"x_ptr": x, "h_ptr": h})

def operator(x):
    h = torch.empty_like(x)
    _launch(x, h)
    return h

_STORE = bytearray(32)

def shared(x):
    h = torch.frombuffer(_STORE, dtype=torch.float32)
    _launch(x, h)
    return torch.empty_like(x)

def branches(x):
    return torch.cond(x.sum() > 0, lambda v: v * 2, lambda v: v, (x,))
"""
module = type(os)("nb")
exec(compile(cell, "<cell k>", "exec"), module.__dict__)
found = {}
for name in ("operator", "shared", "branches"):
    with probe.TRACERS["launches"](module) as recorder:
        try:
            result = as_notebooks(getattr(module, name), torch.ones(8))
        except Exception as e:
            result, found[name + " raised"] = None, type(e).__name__
    report = recorder.report(result)
    report["kernel_defs"] = sorted(kernel_defs((("k", cell),)))     # the grader's own reading (kit.trial)
    found[name] = part1.fused(name, report)
    found[name + " values"] = None if result is None else result.tolist()
print(json.dumps(found))
'''
    proc = subprocess.run([sys.executable, "-c", script], env=NO_CUDA, capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["operator"] is None and found["operator values"] == [2.0] * 8, found
    assert found["shared"].startswith("not your kernel: shared used a tensor whose memory Python shares"), found
    assert found["branches raised"] == "TypeError" and found["branches"] is not None, found


def test_a_triton_language_name_is_flagged_by_whose_code_it_runs():
    """The launch tracer's check of triton.language (specs._language): a name holding a cell's def or lambda, or
    what runs one when called (a partial, a bound method, a property, a cell's callable object or class), is the
    cell's; Triton's own code, and a class of a cell's whose methods are all Triton's, are not."""
    import functools

    from autograder.suites.fused_add_norm import specs
    from triton.runtime import interpreter
    cell = {}
    exec(compile("def norm(h):\n    return h\n\n\nclass Norm:\n    def __init__(self, h):\n        self.h = h\n\n\n"
                 "class Call:\n    def __call__(self, h):\n        return h\n\n\nclass Plain:\n    pass\n",
                 f"{specs.CELL}1>", "exec"), cell)
    cells = [cell["norm"], eval(compile("lambda h: h", f"{specs.CELL}2>", "eval")), functools.partial(cell["norm"]),
             cell["Call"]().__call__, property(cell["norm"]), cell["Call"](), cell["Norm"], staticmethod(cell["norm"])]
    assert all(specs._runs_a_cell(value) for value in cells)
    triton_own = [interpreter._patch_lang, functools.partial(interpreter._patch_lang), interpreter.GridExecutor,
                  cell["Plain"], cell["Plain"](), 3, None, torch.add]
    assert not any(specs._runs_a_cell(value) for value in triton_own)


def test_what_outruns_the_traces_records_fails_the_fusion_tests():
    """Past its caps the trace keeps no more names, so what it cannot hold is reported as failing (red team 20
    made 200 harmless kinds of call before the tolist that read the values): a call handed code, an operator that
    computes, and a launch whose checks fail standing in for the last one kept."""
    from autograder.suites.fused_add_norm import part1, specs
    from nbtest.tensor_values import values_read
    recorder = specs._Recorder(None, ())
    for i in range(specs.MAX_RECORDS + 5):
        recorder.call(f"torch.Tensor.view{i}", "tensor")
        recorder.op(f"view{i}", False)
    report = recorder.report()
    assert len(report["calls"]) == specs.MAX_RECORDS + 1 and values_read(report["calls"]) == [specs.UNCOUNTED]
    assert len(report["ops"]) == specs.MAX_RECORDS + 1 and report["ops"][-1] == specs.UNCOUNTED
    assert "handed the tensors' values to Python" in part1.launched("the call", report)
