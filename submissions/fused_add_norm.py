"""The fused-add-norm sample class: a notebook per misconception of the fused kernel and its wrapper,
the honest variants and forgeries of the launch beside them, each with the hidden tests it fails
(samplekit.py says what each name below declares).
"""
from __future__ import annotations

import textwrap

import fused_add_norm_variants as variants
from fused_add_norm_idioms import IDIOMS
from samplekit import Samples, edit, packed

PARTS = {1: ["fused_kernel", "fused_add_layernorm"]}
HONEST = {**variants.STYLES, **packed(IDIOMS)}
TWINS = {"forged-launch-trace": "torch-only-wrapper", "numpy-empty-kernel": "numpy-wrapper",
         "warmup-flip-adds": "torch-side-add",
         "run-replaced-on-odd-widths": "variance-over-block", "run-replaced-when-untraced": "torch-only-wrapper",
         "method-registered-on-odd-widths": "variance-over-block", "kernel-fn-set-computes": "by-hand-wrapper",
         "kernel-fn-set-by-a-helper-computes": "by-hand-wrapper", "rewrite-cache-written-computes": "by-hand-wrapper",
         "lists-redo-odd-widths": "variance-over-block", "language-function-replaced": "by-hand-wrapper",
         "hidden-def-fixes-variance": "variance-over-block", "autotune-configs-as-phases": "launch-per-row",
         "kernel-local-named-tl": "torch-only-wrapper", "jit-called-numpy-body": "torch-only-wrapper",
         "helper-rewriter-set-computes": "torch-only-wrapper", "standard-jit-origin-computes": "torch-only-wrapper",
         "kept-first-def-computes": "torch-only-wrapper", "constexpr-function-abs-computes": "torch-only-wrapper",
         "posing-class-abs-computes": "torch-only-wrapper",
         **dict.fromkeys(["rebound-by-assignment", "rebound-by-decorator", "special-method-computes",
                          "handed-on-computes", "module-forward-computes", "redefined-helper-computes",
                          "import-rebound-computes", "method-set-elsewhere-computes"],
                         "by-hand-wrapper"),
         **dict.fromkeys(["constexpr-method", "constexpr-item-method", "object-method", "constexpr-operator",
                          "torch-under-another-name", "numpy-through-the-class", "heuristic-computes",
                          "settings-get-computes", "item-of-an-object-computes", "launch-hook-computes",
                          "heuristic-set-later-computes", "finaliser-computes-later", "tensor-class-computes",
                          "tracer-modes-swapped", "listener-thread-computes", "kernel-prints-values",
                          "buffer-shared-computes", "grid-computes", "grid-of-builtins-reads", "grid-entry-reads",
                          "tensor-attribute-reads", "finaliser-of-builtins-reads", "assert-carries-values",
                          "generator-state-reads", "slice-index-reads", "backward-reads", "grad-release-reads",
                          "grid-meta-finaliser-reads", "grid-attribute-reads", "keyword-name-reads",
                          "kernel-global-reads"],
                         "torch-only-wrapper")}
# what the launch trace measures fails these whatever the policy says (part1.not_the_kernel, part1.launched, at any
# call of part 1: lists-redo-odd-widths and method-registered-on-odd-widths only at calls of the values tests): torch
# computing inside the kernel's launch (object-method), an object of the notebook's own handed to the kernel
# (constexpr-operator: no rule sees it; the other two, the kernel rule too), a hook of the notebook's that the launch runs
# (launch-hook-computes: no rule sees it), a kernel object changed after @triton.jit made it (kernel-fn-set-*,
# rewrite-cache-written-computes: its fn, or the interpreter's rewrite of it, no longer Triton's), a function of
# triton.language replaced by the cell's (language-function-replaced), the tensors' values handed to Python (tolist,
# numpy: the rest, whichever route the call took), and torch computing around an empty kernel, whatever reached it
# (settings-get-computes, item-of-an-object-computes, torch-under-another-name), or a tensor class of the notebook's
# that torch handed an operator to (tensor-class-computes: its __torch_dispatch__ runs where the trace is set aside).
# A finaliser that computes once the tracer has stopped (finaliser-computes-later) runs after the result is encoded:
# its values come too late. The tracer's modes taken off torch's stacks (tracer-modes-swapped) are missed when the
# call ends, and a kernel's tl.device_print goes to the child's own stdout, never to one the wrapper redirected
# (kernel-prints-values: its values tests fail), and a thread alive beside the call or started in it is counted
# (listener-thread-computes), and so is a tensor over a Python buffer that an operator, a launch or the result used
# (buffer-shared-computes: Python decoded and computed on what copy_ put there); a launch's grid function runs as on a
# GPU, before the launch on torch's tensors, where triton.language does not run (grid-computes), and what it runs is
# the notebook's, whatever it is made of (grid-of-builtins-reads: nbtest.tensor_values.grid_of), and so are its
# entries (grid-entry-reads), what the call's locals' finalisers run as its frame ends (finaliser-of-builtins-reads:
# tensor_values.as_notebooks); a tensor handed to the kernel with attributes of its own is foreign
# (tensor-attribute-reads), and a launch that raised fails a call that went on (assert-carries-values); a tensor's
# bytes copied into a generator's state, which hands them back as numbers, is a call that gives Python the values
# (generator-state-reads: nbtest.generators); and what torch calls back inside a call of the notebook's runs with the
# tracer's mode back on (slice-index-reads, backward-reads, grad-release-reads: nbtest.tensor_values.run_seen), and
# what a grid leaves in its arguments by name dies in grid_of's frame (grid-meta-finaliser-reads), and a grid that
# gives a kernel's tensor an attribute of its own raises (grid-attribute-reads), as does a launch with a keyword named
# by anything but a str (keyword-name-reads), and a kernel reading a global a GPU's compiler refuses
# (kernel-global-reads: nbtest.warmup); and a kernel Triton made of a cell's def changed since, a helper the launched
# kernel calls too (helper-rewriter-set-computes), or a launch of another def than the one the rules read under its
# name (kept-first-def-computes)
MEASURED = {"object-method", "constexpr-operator", "constexpr-method", "constexpr-item-method", "launch-hook-computes",
            "numpy-empty-kernel", "numpy-through-the-class", "heuristic-computes", "heuristic-set-later-computes",
            "rebound-by-assignment", "rebound-by-decorator", "special-method-computes", "handed-on-computes",
            "module-forward-computes", "redefined-helper-computes", "import-rebound-computes",
            "method-set-elsewhere-computes", "run-replaced-on-odd-widths", "run-replaced-when-untraced",
            "kernel-fn-set-computes", "kernel-fn-set-by-a-helper-computes", "rewrite-cache-written-computes",
            "lists-redo-odd-widths", "method-registered-on-odd-widths", "language-function-replaced",
            "settings-get-computes", "item-of-an-object-computes", "torch-under-another-name",
            "finaliser-computes-later", "tensor-class-computes", "tracer-modes-swapped", "kernel-prints-values",
            "listener-thread-computes", "buffer-shared-computes", "grid-computes", "grid-of-builtins-reads",
            "grid-entry-reads", "tensor-attribute-reads", "finaliser-of-builtins-reads", "assert-carries-values",
            "generator-state-reads", "slice-index-reads", "backward-reads", "grad-release-reads",
            "grid-meta-finaliser-reads", "grid-attribute-reads", "keyword-name-reads", "kernel-global-reads",
            "warmup-flip-adds", "hidden-def-fixes-variance", "autotune-configs-as-phases", "jit-called-numpy-body",
            "helper-rewriter-set-computes", "kept-first-def-computes", "constexpr-function-abs-computes",
            "posing-class-abs-computes"}
# the tests of the wrapper's ValueErrors, which a forgery keeping the reference's checks passes
REFUSALS = {"shape_mismatch", "too_wide", "weight_shape", "float64_refused"}
OUT_OF_REACH = {"forged-launch-trace"}   # the probe's tracers, out of the child's sys.modules (samplekit.tried)
SHOWN: dict[str, dict[str, str]] = {}
DERIVED_FROM: dict[str, str] = {}
WRITTEN: dict[str, dict[str, str]] = {}


def samples(s: Samples) -> dict[str, tuple[str, object, set[str]]]:
    """name -> (description, notebook dict, ids of the tests it fails)."""
    part1 = s.checks(1)
    kernel = lambda *edits: s.filled("fused_kernel", s.body("fused_kernel", 0, *edits))
    wrapper = lambda *edits: s.filled("fused_add_layernorm", s.body("fused_add_layernorm", 0, *edits))
    launch = ("fused_add_layernorm_kernel[(rows_x.shape[0],)](\n"
              "    rows_x, rows_fx, weight.contiguous(), bias.contiguous(), h, y, n, eps,\n"
              "    BLOCK=block, num_warps=min(max(block // 256, 1), 16))\n")
    checks, rest = s.bodies["fused_add_layernorm"][0].split("rows_x, rows_fx =")   # the ValueErrors, the rest
    odd_widths = {"not_powers_of_two", "wide_rows"}
    dtype_check = checks[checks.index("dtypes = "):]
    torch_only = s.filled("fused_add_layernorm", [checks + "h = x + fx\nreturn h, F.layer_norm(h, (n,), weight, bias, eps)\n"])
    fused = {"launches_kernel", "one_launch"}
    first, loop = s.bodies["fused_kernel"][0].split("\n", 1)
    one_program = edit(s.filled("fused_kernel", [edit(first, "row = tl.program_id(0).to(tl.int64)", "for row in "
                                                      "range(0, n_rows):") + "\n" + textwrap.indent(loop, "    ")]),
                       "y_ptr, n_cols, eps,", "y_ptr, n_rows, n_cols, eps,")
    autotuned = {label: textwrap.dedent(src).lstrip()
                 for label, src in variants.STYLES["style-autotune-warps"][1].items()}
    autotuned_one_pass = {**autotuned, "fused_kernel": edit(autotuned["fused_kernel"], "tl.sum(diff * diff, axis=0) / n_cols",
                                                            "tl.sum(h * h, axis=0) / n_cols - mean * mean")}
    return {
        # Two samples that lose the timing test only, where CUDA is there; without it they are graded like
        # full-marks (course.toml's without_cuda). On the timing test's CPU clock (tests/test_fused_timing.py)
        # the first passes it (Triton's interpreter runs programs one after another anyway) and the second fails.
        "one-program-for-all-rows": (
            "a correct kernel launched as one program that loops over the rows, grid = (1,): one core of the GPU "
            "works while the others idle",
            s.solved(fused_kernel=one_program, fused_add_layernorm=wrapper(
                ("[(rows_x.shape[0],)](", "[(1,)]("), ("h, y, n, eps,", "h, y, rows_x.shape[0], n, eps,"))),
            {"timing"}),
        "cached-outputs": (
            "the wrapper keeps each result and returns it again for a call on the same tensors (by address), "
            "whatever they hold now",
            s.solved(fused_add_layernorm=s.filled("fused_add_layernorm", [
                "key = (x.data_ptr(), fx.data_ptr(), weight.data_ptr(), bias.data_ptr(), tuple(x.shape), eps)\n"
                "if key in _RESULTS:\n    return _RESULTS[key][1]\n"
                + edit(s.bodies["fused_add_layernorm"][0], "return h.view(x.shape), y.view(x.shape)",
                       "_RESULTS[key] = ((x, fx, weight, bias), (h.view(x.shape), y.view(x.shape)))\n"
                       "return _RESULTS[key][1]")],
                before="_RESULTS = {}   # results by the inputs' addresses; the inputs are kept, so no other "
                       "tensor takes their address\n\n")),
            {"timing"}),
        "one-pass-variance": ("the kernel computes the variance in one pass, E[h^2] - mean^2",
                              s.solved(fused_kernel=kernel(
                                  ("centred = tl.where(mask, h - mean, 0.0)\nvar = tl.sum(centred * centred, axis=0) / n_cols",
                                   "centred = tl.where(mask, h - mean, 0.0)\nvar = tl.sum(h * h, axis=0) / n_cols - mean * mean"))),
                              {"large_mean"}),
        "torch-side-add": ("the wrapper adds x + fx with torch and has the kernel normalise the sum (plus zeros)",
                           s.solved(fused_add_layernorm=wrapper((
                               "rows_x, rows_fx, weight.contiguous()",
                               "rows_x + rows_fx, torch.zeros_like(rows_x), weight.contiguous()"))),
                           # torch adds before the launch: the kernel does not do all the work, both tests measure
                           {"one_launch", "launches_kernel"}),
        "float64-accepted": ("the wrapper has no dtype check: float64 inputs are computed in fp32 and returned as "
                             "float64", s.solved(fused_add_layernorm=wrapper((dtype_check, ""))), {"float64_refused"}),
        "no-weight-check": ("the wrapper does not check the shapes of weight and bias",
                            s.solved(fused_add_layernorm=wrapper((
                                checks[checks.index("if weight.shape"):checks.index("dtypes = ")], ""))),
                            {"weight_shape"}),
        "full-marks": ("the reference solution", s.solved(), set()),
        **s.honest(HONEST),
        "autotune-one-pass-variance": ("style-autotune-warps with the variance in one pass, E[h^2] - mean^2: "
                                       "autotuned and still wrong", s.solved(**autotuned_one_pass), {"large_mean"}),
        "forged-launch-trace": ("the torch-only wrapper, with the probe's launch tracer replaced (through "
                                "sys.modules) by one that reports a launch of the kernel",
                                s.solved(fused_add_layernorm=variants.FORGED_TRACE.lstrip() + torch_only),
                                fused | s.trusting()),
        # NumPy has no bfloat16: the half-precision test fails too
        "numpy-wrapper": ("the kernel is written, but the wrapper computes h and y with NumPy",
                          # numpy is outside the assignment's imports: its import holds the tests on reports
                          s.solved(fused_add_layernorm=variants.NUMPY_ONLY.lstrip()),
                          fused | {"half_precision"} | s.trusting()),
        "numpy-empty-kernel": ("the NumPy wrapper, plus an empty @triton.jit kernel launched once",
                               s.solved(fused_kernel=variants.EMPTY_KERNEL.lstrip(),
                                        fused_add_layernorm=variants.NUMPY_EMPTY_KERNEL.lstrip()),
                               fused | {"half_precision"} | s.trusting()),
        **forgeries(s, launch, fused),
        "untouched-release": ("the release as handed out: both stubs still raise NotImplementedError",
                              s.notebook({}), part1),
        "torch-only-wrapper": (
            "the kernel is written, but the wrapper checks its input and then computes h = x + fx and "
            "F.layer_norm with torch, never launching the kernel",
            s.solved(fused_add_layernorm=torch_only), fused),
        "variance-over-block": ("the kernel divides the sum of squared deviations by BLOCK instead of n",
                                s.solved(fused_kernel=kernel(("var = tl.sum(centred * centred, axis=0) / n_cols",
                                                                "var = tl.sum(centred * centred, axis=0) / BLOCK"))),
                                odd_widths),
        "run-replaced-on-odd-widths": (
            "variance-over-block's kernel, and Triton's kernel class given a run of the cell's that redoes h and y "
            "with torch at the widths where BLOCK is wider than the row: the launch is counted, and the trace's "
            "widths are powers of two",
            s.solved(fused_kernel=kernel(("var = tl.sum(centred * centred, axis=0) / n_cols",
                                          "var = tl.sum(centred * centred, axis=0) / BLOCK"))
                     + variants.RUN_REPLACED.replace("WHEN", 'n != kwargs.get("BLOCK", n)')),
            fused | s.trusting()),
        "lists-redo-odd-widths": (
            "variance-over-block's kernel, launched by the reference wrapper, which then redoes h and y in Python "
            "lists where the width is not a power of two: widths only the values tests use, whose calls the fusion "
            "tests judge too",
            s.solved(fused_kernel=kernel(("var = tl.sum(centred * centred, axis=0) / n_cols",
                                          "var = tl.sum(centred * centred, axis=0) / BLOCK")),
                     fused_add_layernorm=wrapper(("return h.view(x.shape), y.view(x.shape)\n", "if n & (n - 1):\n"
                                                  + textwrap.indent(variants.BY_HAND.lstrip(), "    ")
                                                  + "return h.view(x.shape), y.view(x.shape)\n"))),
            fused),
        "method-registered-on-odd-widths": (
            "variance-over-block's kernel, launched by a singledispatchmethod that a def registered at module level "
            "replaces where the width is no power of two, redoing y with torch",
            s.solved(fused_kernel=kernel(("var = tl.sum(centred * centred, axis=0) / n_cols",
                                          "var = tl.sum(centred * centred, axis=0) / BLOCK")),
                     fused_add_layernorm=variants.DISPATCHED.lstrip()),
            fused),
        "hidden-def-fixes-variance": (
            "variance-over-block's kernel, whose body opens with a string holding a def of the same kernel with the "
            "right variance, closed by a comment on its last line: Triton's interpreter ran the def in the string",
            s.solved(fused_kernel=kernel(
                ("var = tl.sum(centred * centred, axis=0) / n_cols", "var = tl.sum(centred * centred, axis=0) / BLOCK"),
                ("y.to(y_ptr.dtype.element_ty), mask=mask)", 'y.to(y_ptr.dtype.element_ty), mask=mask)  # """'),
                ("row = tl.program_id(0)", variants.HIDDEN_DEF.lstrip().replace(
                    "HIDDEN", textwrap.indent(s.bodies["fused_kernel"][0].rstrip("\n"), "    ")) + "row = tl.program_id(0)"))),
            odd_widths),
        "autotune-configs-as-phases": (
            "an autotuned kernel whose two configs each store one output (h, then y), keyed on a tensor so that "
            "every call tunes again: the trials of both ran on the call's tensors inside its one launch, and the "
            "config kept stores h alone",
            s.solved(fused_kernel=variants.PHASES_KERNEL.lstrip(), fused_add_layernorm=wrapper((
                "BLOCK=block, num_warps=min(max(block // 256, 1), 16))", "BLOCK=block)"))),
            # the config kept stores h: y is what torch.empty_like left, at every call that gets past the checks
            s.checks(1) - {"rules_part1", "one_launch", "launches_kernel", *REFUSALS}),
        "kernel-local-named-tl": ("a helper kernel whose variable named tl holds each loaded block in turn, reading "
                                  "the interpreter's NumPy arrays under them (tl.handle, tl.data) to compute h and y, "
                                  "which the kernel stores", s.solved(fused_kernel=variants.SHADOWED_TL.lstrip()),
                                  fused),
        "jit-called-numpy-body": ("a kernel made by calling triton.jit on a plain def that computes h and y in NumPy "
                                  "on the interpreter's arrays under the loaded blocks, and stores them",
                                  s.solved(fused_kernel=variants.JIT_CALLED.lstrip()), fused),
        "helper-rewriter-set-computes": (
            "a kernel whose helper kernel stores h alone, and a function of the cell that sets the helper's rewriter "
            "to a plain def computing h and y in NumPy: Triton's interpreter ran that def inside the launch",
            s.solved(fused_kernel=variants.HELPER_REWRITTEN.lstrip()), fused),
        "standard-jit-origin-computes": (
            "a kernel made by triton.language.standard's jit (triton.jit under another path) of a def computing h "
            "and y in NumPy, launched, with its function's .fn set to the checked kernel that stores h alone",
            s.solved(fused_kernel=variants.STANDARD_JIT.lstrip(), fused_add_layernorm=wrapper((
                "fused_add_layernorm_kernel[(rows_x.shape[0],)](", "_rows[(rows_x.shape[0],)]("))), fused),
        "kept-first-def-computes": (
            "the kernel defined twice under one name, first computing h and y in NumPy and kept by a decorator, then "
            "storing h alone; the first launched, with its function's .fn set to the second",
            s.solved(fused_kernel=variants.KEPT_FIRST.lstrip(), fused_add_layernorm=wrapper((
                "fused_add_layernorm_kernel[(rows_x.shape[0],)](", '_KEPT["kernel"][(rows_x.shape[0],)]('))),
            fused),
        # red team 39: what the launch refuses (nbtest.warmup: a GPU's compiler runs no Python on the blocks) fails
        # every call that gets past the checks
        "constexpr-function-abs-computes": (
            "a kernel storing h and calling abs for y, a builtin's name a function of the cell binds through global "
            "to triton.constexpr_function of a def computing y in NumPy on the interpreter's arrays",
            s.solved(fused_kernel=variants.CONSTEXPR_FUNCTION_ABS.lstrip()), s.checks(1) - {"rules_part1", *REFUSALS}),
        "posing-class-abs-computes": (
            "constexpr-function-abs-computes with abs an object of a JITCallable subclass of the cell's that names "
            "triton.language.extra as its module", s.solved(fused_kernel=variants.POSING_CLASS_ABS.lstrip()),
            s.checks(1) - {"rules_part1", *REFUSALS}),
        "no-mask": ("the kernel loads and stores all BLOCK lanes: no masks (it reads and writes past the rows' "
                    "end, which crashes the process or corrupts its memory)",
                    s.solved(fused_kernel=kernel((", mask=mask, other=0.0)", ")"), (", mask=mask)", ")"),
                                                 ("tl.where(mask, h - mean, 0.0)", "h - mean"))),
                    odd_widths),
        "masked-lanes-not-zeroed": ("the kernel squares h - mean in the masked lanes too (no tl.where)",
                                    s.solved(fused_kernel=kernel(("tl.where(mask, h - mean, 0.0)", "h - mean"))),
                                    odd_widths),
        "fp16-accumulation": ("the kernel sums the row in the inputs' dtype: no .to(tl.float32) after loading",
                              s.solved(fused_kernel=kernel(
                                  ("fx = tl.load(fx_ptr + offs, mask=mask, other=0.0).to(tl.float32)",
                                   "fx = tl.load(fx_ptr + offs, mask=mask, other=0.0)"),
                                  ("x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)",
                                   "x = tl.load(x_ptr + offs, mask=mask, other=0.0)"))),
                              {"half_precision"}),
        "launch-per-row": ("the wrapper launches the kernel once per row, from a Python loop",
                           s.solved(fused_add_layernorm=wrapper((launch, (
                               "for r in range(rows_x.shape[0]):\n"
                               "    fused_add_layernorm_kernel[(1,)](rows_x[r], rows_fx[r], weight, bias, h[r], y[r],\n"
                               "                                     n, eps, BLOCK=block)\n")))),
                           {"one_launch"}),
        # a library changed in the process makes what the wrapper calls the notebook's code: the fusion tests
        # are held, whatever it changed (here nothing: a method set back to itself)
        "library-method-reassigned": ("the reference, and torch.Tensor.view set back to itself in the kernel's "
                                      "cell", s.solved(fused_kernel=kernel() + "\n\ntorch.Tensor.view = "
                                                       "torch.Tensor.view\n"), fused),
        "in-place-h": ("the wrapper stores h into x's memory (h = rows_x, a view of x)",
                       s.solved(fused_add_layernorm=wrapper((
                           "h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)",
                           "h, y = rows_x, torch.empty_like(rows_x)"))),
                       {"inputs_untouched"}),
        "no-input-checks": ("the wrapper raises no ValueError: mismatched shapes, widths over 8192, weights of "
                            "the wrong shape and float64 go through",
                            s.solved(fused_add_layernorm=s.filled("fused_add_layernorm", [
                                "n = x.shape[-1]\nrows_x, rows_fx =" + rest])),
                            REFUSALS),
    }


def forgeries(s: Samples, launch: str, fused: set[str]) -> dict[str, tuple[str, object, set[str]]]:
    """Fusion shown to the launch tracer but not done by the kernel, each next to its honest twin (TWINS):
    the graded name rebound after its checked def, and a kernel computing through an object handed to it."""
    reference = s.bodies["fused_add_layernorm"][0]
    by_hand = edit(reference, "return h.view(x.shape), y.view(x.shape)\n", variants.BY_HAND.lstrip())
    helper = "def _by_hand(x, fx, weight, bias, eps=1e-5):\n" + textwrap.indent(by_hand, "    ") + "\n\n"
    empty = variants.EMPTY_KERNEL.lstrip()
    decorated = edit(s.filled("fused_add_layernorm"), "def fused_add_layernorm(", "@_replaced_by(_by_hand)\n"
                     "def fused_add_layernorm(")
    through = lambda call, ops, rows=variants.CONSTEXPR_ROWS: s.solved(
        fused_kernel=rows.lstrip().replace("CALL", call),
        fused_add_layernorm=s.filled("fused_add_layernorm", [edit(reference, launch, edit(
            launch, "BLOCK=block,", f"BLOCK=block, OPS={ops}, ARGS=(rows_x, rows_fx, weight, bias, h, y, eps),"))]))
    after_launch = lambda lines, before: s.solved(fused_kernel=empty, fused_add_layernorm=s.filled(
        "fused_add_layernorm", [edit(reference, launch, launch + lines)], before=before.lstrip() + "\n\n"))
    around_empty = lambda body, before="": s.solved(fused_kernel=empty, fused_add_layernorm=s.filled(
        "fused_add_layernorm", [edit(reference, "return h.view(x.shape), y.view(x.shape)\n", body.lstrip())],
        before=before))
    # an empty kernel (or the sample's own), the values read where the trace does not see them, and h and y computed
    # in lists (variants.LISTS)
    imports = "import functools\nimport math\n\n\n"
    read_unseen = lambda body, before="", kernel=empty: s.solved(fused_kernel=kernel, fused_add_layernorm=s.filled(
        "fused_add_layernorm", [edit(reference, launch + "return h.view(x.shape), y.view(x.shape)\n", body.lstrip())],
        before=imports + variants.LISTS.lstrip() + "\n\n" + before))
    return {
        "torch-under-another-name": ("an empty kernel launched once, then the wrapper computes h and y with torch "
                                     "bound to a module-level name of its own (_t = torch)",
                                     # torch held under another name hides its paths: the withhold rule holds
                                     # every test that rests on the child's reports
                                     around_empty(variants.UNDER_ANOTHER_NAME, "_t = torch\n\n\n"),
                                     fused | s.trusting()),
        "numpy-through-the-class": ("an empty kernel launched once, then the wrapper computes h and y in NumPy "
                                    "reached through the tensors' class (type(x).numpy): no torch operator runs",
                                    around_empty(variants.THROUGH_THE_CLASS), fused),
        # the trace sees torch's operators whatever reaches them; the policy, a plain method's name on what it
        # cannot vouch for (_Body.plain)
        "settings-get-computes": ("an empty kernel launched once, then the wrapper returns LAUNCH.get(...), a "
                                  "settings object's attribute holding a helper that computes h and y with torch",
                                  around_empty("return LAUNCH.get(x, fx, weight, bias, eps)\n",
                                               variants.TORCH_NORM.lstrip() + "\n\n"), fused),
        "item-of-an-object-computes": ("an empty kernel launched once, then the wrapper returns Rows()[...], an "
                                       "item of an object whose __getitem__ computes h and y with torch",
                                       around_empty("return Rows()[x, fx, weight, bias, eps]\n",
                                                    variants.TORCH_NORM.lstrip() + "\n\n"), fused),
        "finaliser-computes-later": ("an empty kernel launched once, and a cycle left behind whose finaliser "
                                     "computes h and y with torch into the tensors returned, when the collector "
                                     "frees it", around_empty(variants.LATE_RETURN, variants.LATE.lstrip() + "\n\n"),
                                     # its values come too late: the values tests fail; what the call did, one
                                     # launch of its kernel and no torch, is what the fusion tests ask
                                     s.checks(1) - {"rules_part1", *REFUSALS} - fused),
        "tensor-class-computes": ("an empty kernel launched once, then an allocation on a tensor of the notebook's "
                                  "class, whose __torch_dispatch__ computes h and y with torch",
                                  around_empty(variants.TENSOR_CLASS_RETURN, variants.TENSOR_CLASS.lstrip() + "\n\n"),
                                  fused),
        # red team 20: where the tracer's modes did not reach (each measured now)
        "tracer-modes-swapped": ("an empty kernel launched once, the tracer's function mode taken off torch's stack "
                                 "by a mode of the notebook's, a stand-in pushed in its place, then h and y in lists",
                                 around_empty("_swap()\n" + variants.BY_HAND, variants.MODES_SWAPPED.lstrip() + "\n\n"),
                                 fused | s.trusting()),
        "listener-thread-computes": ("an empty kernel launched once, then h and y computed with torch on the thread of "
                                     "a logging.handlers.QueueListener the notebook started",
                                     around_empty(variants.LISTENER_RETURN, variants.LISTENER_THREAD.lstrip() + "\n\n"),
                                     fused | s.trusting()),
        "kernel-prints-values": ("a kernel that prints its loaded rows with tl.device_print, and a wrapper that reads "
                                 "them from a redirected stdout and computes h and y in lists",
                                 s.solved(fused_kernel=variants.PRINTING_KERNEL.lstrip(), fused_add_layernorm=s.filled(
                                     "fused_add_layernorm", [edit(reference, launch + "return h.view(x.shape), "
                                                                  "y.view(x.shape)\n", variants.PRINTED_LAUNCH.lstrip()
                                                                  .replace("    LAUNCH\n", textwrap.indent(launch, "    ")))],
                                     before=variants.PRINTED.lstrip() + "\n\n")),
                                 s.checks(1) - {"rules_part1", *REFUSALS} | s.trusting()),
        # red team 21: a tensor over a Python buffer, measured (specs: "shared")
        "buffer-shared-computes": ("an empty kernel launched once, the inputs copied into a bytearray a tensor "
                                   "views (torch.frombuffer), h and y computed in Python floats there and copied back",
                                   around_empty(variants.SHARED_BUFFER_RETURN, variants.SHARED_BUFFER.lstrip() + "\n\n"),
                                   fused),
        "warmup-flip-adds": ("torch-side-add with the add done by a second kernel, launched through wrap_triton's "
                             "run with a warmup that says True when first asked, then False",
                             s.solved(fused_add_layernorm=s.filled("fused_add_layernorm", [edit(
                                 reference, "rows_x, rows_fx, weight.contiguous()",
                                 "_summed(rows_x, rows_fx, n, block), torch.zeros_like(rows_x), weight.contiguous()")],
                                 before=variants.WARMUP_FLIP.lstrip() + "\n\n")),
                             # Triton is handed warmup=True, as the tracer read it: the add never runs, h is not x + fx
                             s.checks(1) - {"rules_part1", *REFUSALS} - fused),
        "run-replaced-when-untraced": (
            "an empty kernel, launched by the reference wrapper, and Triton's kernel class given a run of the cell's "
            "that computes h and y with torch when no torch function mode is active: every call is traced, so it "
            "never does",
            s.solved(fused_kernel=empty + variants.RUN_REPLACED.replace("WHEN", "not F.has_torch_function_unary(x)")),
            s.checks(1) - {"rules_part1"}),
        "kernel-fn-set-computes": ("an empty kernel, launched by the reference wrapper, whose fn setattr replaces "
                                   "with a def of the cell that computes h and y in Python lists on what it loads",
                                   s.solved(fused_kernel=variants.FN_SWAPPED.lstrip()), fused),
        "language-function-replaced": (
            "a kernel that adds in tl operations and calls tl.sum for y, tl.sum replaced by a def of the cell that "
            "computes LayerNorm in Python lists on the loaded values",
            s.solved(fused_kernel=variants.LANGUAGE_REPLACED.lstrip()), fused),
        "kernel-fn-set-by-a-helper-computes": (
            "kernel-fn-set-computes with the kernel's fn set by a helper the kernel is handed",
            s.solved(fused_kernel=variants.FN_SET_BY_A_HELPER.lstrip()), fused),
        "rewrite-cache-written-computes": (
            "an empty kernel launched by the reference wrapper, and the interpreter's cache of rewritten kernels "
            "(reached through a kernel the cell makes of a def computing h and y in Python lists) given that def "
            "for every kernel, after one call of the wrapper",
            s.solved(fused_kernel=edit(variants.FN_SWAPPED.lstrip(), variants.FN_WRITES, ""),
                     fused_add_layernorm=s.filled("fused_add_layernorm", after=variants.CACHE_WRITTEN)), fused),
        "grid-computes": ("an empty kernel, launched with a grid function of the wrapper's that computes h and y in "
                          "tl operations on the kernel's pointers (Triton's interpreter called it inside the launch)",
                          s.solved(fused_kernel=empty, fused_add_layernorm=s.filled("fused_add_layernorm", [edit(
                              reference, "fused_add_layernorm_kernel[(rows_x.shape[0],)](",
                              variants.GRID_COMPUTES.lstrip())])),
                          # its grid's tl.load raises as on a GPU, at every call that gets past the checks
                          s.checks(1) - {"rules_part1", *REFUSALS}),
        "grid-of-builtins-reads": ("an empty kernel, launched with a grid made of builtins alone (a partial of next "
                                   "over maps) that hands the inputs' tolist to a list, then h and y computed in lists",
                                   read_unseen(variants.GRID_OF_BUILTINS), fused),
        # red team 24: Python that Triton runs for the notebook, made of builtins, or values carried out in an error
        "grid-entry-reads": ("grid-of-builtins-reads with the reading in the __index__ of the grid's one entry, which "
                             "Triton's interpreter called inside the launch",
                             read_unseen(variants.GRID_ENTRY, "class _Rows:\n    pass\n\n\n"), fused),
        "tensor-attribute-reads": ("grid-of-builtins-reads with the reading in h.storage_offset, an attribute of h's "
                                   "own that Triton's interpreter calls inside the launch",
                                   read_unseen(variants.TENSOR_ATTRIBUTE), fused),
        "finaliser-of-builtins-reads": ("an empty kernel launched once, and a local whose finaliser, made of builtins, "
                                        "reads the inputs as the wrapper's frame ends and copies h and y computed in "
                                        "lists into the tensors it returned",
                                        read_unseen(variants.LATE_FILL, variants.LATE_TOKEN.lstrip() + "\n\n"), fused),
        # red team 24: a generator's state set from a tensor (nbtest.generators)
        "generator-state-reads": ("an empty kernel launched once, the inputs read 8 bytes at a time through a "
                                  "torch.Generator's state (copied into its head, set back, read as initial_seed()), "
                                  "and h and y computed in lists, at widths up to 1024 (left empty wider)",
                                  read_unseen(variants.GENERATOR, variants.ASSERT_DECODE.lstrip() + "\n\n"),
                                  fused | {"wide_rows", "half_precision", "large_mean"}),
        # red team 25: Python that torch calls back inside a call of the notebook's (tensor_values.run_seen)
        "slice-index-reads": ("an empty kernel launched once, and x indexed by a slice whose start's __index__, made "
                              "of builtins, reads the inputs inside __getitem__; h and y computed in lists",
                              read_unseen(variants.SLICE_INDEX, "class _Rows:\n    pass\n\n\n"), fused),
        "backward-reads": ("an empty kernel launched once, and an autograd Function whose backward, run inside "
                           "Tensor.backward, reads the inputs; h and y computed in lists",
                           read_unseen(variants.BACKWARD_READ, variants.BACKWARD_FILL.lstrip() + "\n\n"), fused),
        "grad-release-reads": ("an empty kernel launched once, and a gradient carrying a token whose finaliser, made "
                               "of builtins, reads the inputs when the grad setter lets the gradient go; h and y "
                               "computed in lists",
                               read_unseen(variants.GRAD_RELEASED, variants.LATE_TOKEN.lstrip() + "\n\n"), fused),
        # red team 26: what a grid leaves in its arguments by name (tensor_values.grid_of hands it a copy)
        "grid-meta-finaliser-reads": ("an empty kernel launched with a grid that leaves a token in its arguments by "
                                      "name, whose finaliser, made of builtins, reads the inputs as they are dropped; "
                                      "h and y computed in lists",
                                      read_unseen(variants.GRID_META, variants.LATE_TOKEN.lstrip() + "\n\n"), fused),
        # red team 27: a keyword's name that Triton compares inside the launch (specs.counted refuses it)
        "keyword-name-reads": ("an empty kernel launched with a keyword named by a str subclass whose __eq__, made of "
                               "builtins, reads the inputs when Triton compares the name inside the launch; h and y "
                               "computed in lists", read_unseen(variants.KEYWORD_NAME,
                                                                variants.KEYWORD_STREAM.lstrip() + "\n\n"),
                               # the launch raises at every call that gets past the checks
                               s.checks(1) - {"rules_part1", *REFUSALS}),
        # red team 28: a kernel reading a global that holds an object of the notebook's (nbtest.warmup refuses it)
        "kernel-global-reads": ("a kernel that loads its row and adds it to the object a module-level list holds, "
                                "whose __add__ keeps the loaded blocks; h and y computed in lists",
                                read_unseen(variants.GLOBAL_READ, variants.GLOBAL_TAP.lstrip() + "\n\n",
                                            kernel=variants.GLOBAL_KERNEL.lstrip()),
                                # the launch raises at every call that gets past the checks
                                s.checks(1) - {"rules_part1", *REFUSALS}),
        "grid-attribute-reads": ("tensor-attribute-reads with the attribute set by the launch's grid, after the "
                                 "launch's arguments were checked", read_unseen(variants.GRID_ATTRIBUTE),
                                 # grid_of raises at every call that gets past the checks
                                 s.checks(1) - {"rules_part1", *REFUSALS}),
        "assert-carries-values": ("a kernel that loads the inputs and asserts False with them as the message; the "
                                  "wrapper reads them back from the error and computes h and y in lists",
                                  read_unseen(variants.ASSERT_READ, variants.ASSERT_DECODE.lstrip() + "\n\n",
                                              kernel=variants.ASSERT_KERNEL.lstrip()), fused),
        "launch-hook-computes": ("an empty kernel, launched by the reference wrapper, and a pre-run hook its cell "
                                 "registers, which Triton runs inside the launch: it computes h and y in Python lists",
                                 s.solved(fused_kernel=empty + variants.LAUNCH_HOOK), fused),
        # what the wrapper runs unwritten, measured where it runs: a class's special methods, a def handed on
        "special-method-computes": ("the reference wrapper around an empty kernel, then `with _Rows(...)`, whose "
                                    "__exit__ computes h and y in Python lists",
                                    after_launch("with _Rows(rows_x, rows_fx, weight, bias, h, y, n, eps):\n    pass\n",
                                                 variants.SPECIAL_METHOD), fused),
        "handed-on-computes": ("the reference wrapper around an empty kernel, then min(..., key=_order), a def that "
                               "computes h and y in Python lists on tensors handed over in a module-level list",
                               after_launch("_HELD.append((rows_x, rows_fx, weight, bias, h, y, n, eps))\n"
                                            "order = min([0], key=_order)\n", variants.HANDED_ON), fused),
        "module-forward-computes": ("the reference wrapper around an empty kernel, then min(..., key=_Rows(...)), an "
                                    "nn.Module whose forward, run by its __call__, computes h and y in Python lists",
                                    after_launch("order = min([0], key=_Rows(rows_x, rows_fx, weight, bias, h, y, n, "
                                                 "eps))\n", variants.MODULE_FORWARD), fused),
        "redefined-helper-computes": ("the reference wrapper around an empty kernel, then _RUN(...), a partial of a "
                                      "helper that computes h and y in lists, read before a harmless def of its name",
                                      after_launch("_RUN(rows_x, rows_fx, weight, bias, h, y, n, eps)\n",
                                                   "import functools\n" + variants.REDEFINED), fused),
        "import-rebound-computes": ("the reference wrapper around an empty kernel, then empty_like(...), a def "
                                    "that binds torch's imported name again and computes h and y in Python lists",
                                    after_launch("empty_like(rows_x, rows_fx, weight, bias, h, y, n, eps)\n",
                                                 variants.IMPORT_REBOUND), fused),
        "method-set-elsewhere-computes": ("the reference wrapper around an empty kernel, then _Rows().done(...), "
                                          "a method set through a loop's name to a helper that computes h and y in "
                                          "Python lists", after_launch("_Rows().done(rows_x, rows_fx, weight, bias, h, "
                                                                       "y, n, eps)\n", variants.METHOD_SET_ELSEWHERE),
                                          fused),
        "heuristic-set-later-computes": ("an empty kernel whose heuristic for BLOCK, set after it was decorated, "
                                         "computes h and y in Python lists inside the launch; the reference wrapper",
                                         s.solved(fused_kernel=variants.HEURISTIC_KERNEL.lstrip() +
                                                  variants.HEURISTIC_SET_LATER), fused),
        "heuristic-computes": ("an empty kernel whose triton.heuristics lambda for BLOCK computes h and y in NumPy "
                               "on the launch's tensors; the reference wrapper launches it",
                               s.solved(fused_kernel=variants.HEURISTIC_COMPUTES.lstrip()), fused),
        "by-hand-wrapper": ("an empty kernel launched once, then the wrapper computes h and y in Python lists",
                            s.solved(fused_kernel=empty, fused_add_layernorm=s.filled("fused_add_layernorm", [by_hand])),
                            fused),
        "rebound-by-assignment": ("the reference wrapper around an empty kernel, then fused_add_layernorm = a helper "
                                  "that computes in Python lists after launching it",
                                  s.solved(fused_kernel=empty, fused_add_layernorm=s.filled(
                                      "fused_add_layernorm", after="\n\n" + helper + "fused_add_layernorm = _by_hand\n")),
                                  fused),
        "rebound-by-decorator": ("the reference wrapper around an empty kernel, replaced by a decorator with a helper "
                                 "that computes in Python lists after launching it",
                                 s.solved(fused_kernel=empty, fused_add_layernorm=helper + variants.REPLACED_BY.lstrip()
                                          + decorated), fused),
        "constexpr-method": ("the kernel calls OPS.sum(ARGS), OPS a tl.constexpr object whose sum computes h and y "
                             "with torch, ARGS a tl.constexpr tuple of the tensors", through("OPS.sum(ARGS)", "ROWS"),
                             fused),
        "object-method": ("the kernel calls OPS.sum(n_cols), OPS a plain parameter holding an object that carries "
                          "the tensors and whose sum computes h and y with torch",
                          s.solved(fused_kernel=variants.OBJECT_ROWS.lstrip(), fused_add_layernorm=s.filled(
                              "fused_add_layernorm", [edit(reference, launch, "rows = _Rows()\nrows.tensors = "
                                                      "(rows_x, rows_fx, weight, bias, h, y, eps)\n" + edit(
                                                          launch, "BLOCK=block,", "BLOCK=block, OPS=rows,"))])),
                          fused),
        "constexpr-item-method": ("the kernel calls OPS[0].sum(ARGS), OPS a tl.constexpr tuple holding an object "
                                  "whose sum computes h and y with torch", through("OPS[0].sum(ARGS)", "(ROWS,)"),
                                  fused),
        # no rule sees it: the kernel only compares two constexpr parameters, as `if HAS_BIAS:` tests one; the
        # tracer's word that a launch was passed an object of the notebook's own type fails the fused tests
        "constexpr-operator": ("the kernel's `if OPS < ARGS:` runs OPS.__lt__, OPS a tl.constexpr object whose "
                               "__lt__ computes h and y with torch, ARGS a tl.constexpr tuple of the tensors",
                               through("if OPS < ARGS:\n        pass", "ROWS", variants.CONSTEXPR_ROWS.replace(
                                   "def sum(self, tensors):", "def __lt__(self, tensors):").replace(
                                   "sum((x, fx, weight, bias, h, y, eps))", "ROWS < (x, fx, weight, bias, h, y, eps)")),
                               fused),
    }

