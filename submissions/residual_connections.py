"""The residual-connections sample class: a notebook per misconception, crash, hang and cheat,
the honest variants and forgeries beside them, each with the hidden tests it fails (samplekit.py
says what each name below declares).

Besides the reference's one-edit variants, the class holds two solutions written without the
reference (residual_connections_independent.py) and two copies of honest-a (one byte for byte, one
renamed), which the class report's similarity check must pair.
"""
from __future__ import annotations

import json
import textwrap

import residual_connections_variants as variants
from residual_connections_idioms import IDIOMS
from residual_connections_independent import INDEPENDENT, renamed
from samplekit import Samples, edit, packed

PARTS = {1: ["residual_add", "residual", "projection_shortcut", "residual_ffn"],
         2: ["chain_rule_grad", "split_gradient"], 3: ["gradient_norms"],
         4: ["transformer_block", "residual_stream_norms"],
         5: ["plain_mlp", "residual_mlp", "train", "grad_norms", "depth_sweep"]}
HONEST = {**variants.STYLES, **packed(IDIOMS)}
TWINS = {**dict.fromkeys(["forged-mutation-report", "late-in-place-add", "data-swap-in-place-add",
                          "signature-hook-in-place-add"], "in-place-add"),
         **dict.fromkeys(["forged-gradients-report", "gradients-written-by-hook"], "detached-residual-add"),
         **dict.fromkeys(["tells-read-back-storage", "tells-read-back-shape"], "in-place-add"),
         **dict.fromkeys(["hides-encoder-layer", "forged-structure-report", "hides-encoder-layer-past-the-cap"],
                         "wraps-encoder-layer"),
         **{f"reach-{name}": "detached-residual-add" for name in {**variants.REACHES, **variants.MODES,
                                                                   **variants.FRAMES}},
         **{f"claims-{name}": "refuses-with-runtime-error" for name in variants.ERROR_CLASSES},
         **dict.fromkeys([*variants.RETYPES, "forged-reply-frame", "freed-buffer-retypes-error",
                          "partial-str-retypes-error"],
                        "refuses-with-runtime-error"),
         "oracle-table": "oracle-fallback",
         **dict.fromkeys(["memorises-training-set", "memorises-training-rows", "memorises-shallow",
                          "nan-after-training", "nan-data-after-training", "model-steps-itself"],
                         "part5-step-forgotten"),
         **dict.fromkeys(["train-refuses-deep-plain", "deep-head-detached", "deep-head-gradient-scaled",
                          "deep-head-detached-after-first-step", "deep-class-switched", "deep-parameters-hidden",
                          "deep-resets-to-start", "deep-zero-head-start"], "part5-plain-adds-x"),
         **dict.fromkeys(["deep-blocks-dropped", "deep-shortcut-once-trained"], "part5-shortcut-missing"),
         "zero-projections-identity": "pre-post-swapped",
         "zero-init-branch-answers-zero": "part5-zero-init-ignored",
         **dict.fromkeys(["norms-alpha-power", "norms-alpha-power-zero-branches"], "detached-gradient"),
         **dict.fromkeys(["hides-projection-method", "hides-projection-assigned", "hides-projection-copied-state",
                          "adds-projection-method", "adds-projection-when-training", "adds-projection-past-the-cap"],
                         "eye-projection")}
# retyped errors that no rule holds: the child's checked sparse tensors, unresizable DLPack exports, modules that
# answer no special name from their registries, and copies, loaded optimizer states, setattr, cached_property and
# update_wrapper that name no array interface stop them (nbtest/buffers.py)
BY_CONSTRUCTION = {"legacy-new-retypes-error", "dlpack-resize-retypes-error", "dlpack-set-retypes-error",
                   "module-key-retypes-error", "add-module-retypes-error", "deepcopy-state-retypes-error",
                   "scheduler-state-retypes-error", "cached-property-retypes-error", "lazy-property-retypes-error",
                   "ma-optinfo-retypes-error"}
# held by a rule and stopped in the child too: setattr names no array interface there, whoever calls it, no state
# a pruning scheduler loads does (torch.ao is a process path), no class statement binds one and update_wrapper copies
# none
ALSO_STOPPED = {"interface-retypes-error", "class-dict-wraps-retypes-error", "alias-setattr-retypes-error", "parameterdict-retypes-error", "parameterdict-in-a-list-retypes-error",
                "namespace-kwargs-retypes-error", "pruning-state-retypes-error", "match-capture-retypes-error",
                "import-alias-retypes-error", "match-getattr-retypes-error"}
# the tests themselves, the structure report read from the modules' own dicts, inputs read back from the
# grader's own shared memory, frames the child's loop signed, a tensor that holds the buffer it shares,
# gradients autograd returns along the result's graph, train graded on the grader's own model
MEASURED = {"forged-reply-frame", "freed-buffer-retypes-error", "gradients-written-by-hook", "model-steps-itself",
            "data-swap-in-place-add",
            "late-in-place-add", "train-refuses-deep-plain", "deep-head-detached", "deep-head-gradient-scaled",
            "deep-head-detached-after-first-step", "deep-parameters-hidden", "deep-resets-to-start",
            "deep-zero-head-start", "deep-shortcut-once-trained",
            "deep-blocks-dropped", "deep-class-switched", "zero-projections-identity",
            "zero-init-branch-answers-zero", "tells-read-back-storage", "tells-read-back-shape",
            "memorises-training-set", "memorises-training-rows", "memorises-shallow", "nan-after-training",
            "nan-data-after-training", "norms-alpha-power", "norms-alpha-power-zero-branches", "hides-projection-method",
            "hides-projection-assigned", "hides-projection-copied-state", "adds-projection-method",
            "adds-projection-when-training", "adds-projection-past-the-cap",
            "hides-encoder-layer-past-the-cap", "forged-mutation-report",
            *(f"claims-{name}" for name in variants.ERROR_CLASSES), "kernel-retypes-error", "injected-retypes-error",
            "sparse-retypes-error", *ALSO_STOPPED, *BY_CONSTRUCTION}
# forgeries of the probe: the child takes it out of sys.modules before the first cell (samplekit.tried)
OUT_OF_REACH = {"forged-mutation-report", "forged-gradients-report", "forged-structure-report",
                *(f"reach-{name}" for name in variants.REACHES)}
BROADCASTING = dict.fromkeys(["residual_add_no_broadcasting", "residual_add_error_message", "residual_shape_mismatch"],
                             "silent-broadcasting")
HARD_CODED = dict.fromkeys(["chain_one_block", "chain_many_blocks", "chain_alpha", "chain_empty", "split"],
                           "hard-coded-example")
DETACHED = dict.fromkeys(["norms_decay", "norms_depth_100", "norms_random", "norms_plain"], "detached-gradient")
CAUSAL = dict.fromkeys(["block_pre_causal", "block_post_causal"], "missing-causal-mask")
WRONG = {**BROADCASTING, **HARD_CODED, **DETACHED, **CAUSAL}
# Linear, Linear, GELU: ffn[2] has no weight to load, and every block and model built on the ffn is off (a
# branch that ends in GELU is not odd in its last Linear, which block_pre_identity's four outputs need)
GELU_LAST = {"ffn_layers", "ffn_forward", "block_parts", "block_pre", "block_post", "block_pre_causal",
             "block_post_causal", "block_default", "block_pre_identity", "plain_structure", "residual_structure",
             "plain_forward", "residual_forward", "residual_scaled", "residual_zero_init"}
# sample -> {test id: the misconception id its failure shows}; a failed test not named here shows none
# (a stub, a crash, a hang, a reply of the wrong type)
SHOWN = {
    "silent-broadcasting": BROADCASTING,
    "in-place-add": dict.fromkeys(["residual_add_no_mutation", "residual_add_gradients"], "in-place-add"),
    **dict.fromkeys(["late-in-place-add", "data-swap-in-place-add"],
                    dict.fromkeys(["residual_add_no_mutation", "residual_add_gradients"], "in-place-add")),
    # its read-back forged, then held: the gradients test alone fails, as an in-place add fails it
    "signature-hook-in-place-add": {"residual_add_gradients": "in-place-add"},
    **dict.fromkeys(["tells-read-back-storage", "tells-read-back-shape"],
                    dict.fromkeys(["residual_add_no_mutation", "residual_add_gradients"], "in-place-add")),
    **dict.fromkeys(["detached-residual-add", "gradients-written-by-hook"],
                    {"residual_add_gradients": "detached-gradient"}),
    "message-one-shape": {"residual_add_error_message": "error-without-shapes"},
    "wraps-encoder-layer": {"block_parts": "block-structure"},
    "ffn-module-list-gelu-last": {"block_parts": "block-structure"},
    "oracle-fallback": {"split": "gradient-split"},
    "oracle-table": {"split": "gradient-split"},
    "scaled-shortcut-ignored": dict.fromkeys(["chain_alpha", "norms_decay", "norms_random"], "scaled-shortcut-ignored"),
    "hard-coded-example": HARD_CODED,
    "derivative-at-wrong-point": dict.fromkeys(["chain_many_blocks", "chain_alpha"], "derivative-at-wrong-point"),
    **dict.fromkeys(["pre-post-swapped", "zero-projections-identity"],
                    dict.fromkeys(["block_pre", "block_post", "block_pre_causal", "block_post_causal", "block_default",
                                   "block_pre_identity"], "pre-post-swapped")),
    "missing-causal-mask": CAUSAL,
    "detached-gradient": DETACHED,
    "norms-float32": {"norms_shape": "norms-underflow"},
    "wrong-answers": WRONG,
    "checker-cheat": WRONG,   # the cheat changes nothing the grader compares
    # AlwaysEqual returned where residual_add must raise, and a result outside autograd's graph
    "always-equal": {**BROADCASTING, "residual_add_gradients": "detached-gradient"},
    # the norms of zero branches where the branches are not: their gradient is missing, as when detached;
    # with alpha = 1 and tanh branches the ones it returns are no mistake norms_random knows
    "norms-alpha-power": {k: v for k, v in DETACHED.items() if k != "norms_random"},
    "norms-alpha-power-zero-branches": DETACHED,
    **dict.fromkeys(["eye-projection", "hides-projection-method", "hides-projection-assigned",
                     "hides-projection-copied-state", "adds-projection-method", "adds-projection-when-training"],
                    {"shortcut_identity": "projection-shortcut"}),
}
# a forgery of the probe finds none (OUT_OF_REACH): its forged report never lands, so its twin's mistakes show
SHOWN.update({name: SHOWN[TWINS[name]] for name in OUT_OF_REACH})
# sample -> the sample it was made from; every other sample is the reference with an edit (full-marks),
# or the release as handed out (untouched-release)
DERIVED_FROM = {"reads-solutions": "release", "honest-a": "honest-a", "honest-b": "honest-b",
                "copied-honest-a": "honest-a", "renamed-honest-a": "honest-a"}

# a thin answer and wrong ones beside the good ones; samples not named here leave "YOUR ANSWER HERE"
# (nbgrader scores that 0 unseen)
WRITTEN = {
    "full-marks": {"part2-written": variants.DERIVATION, "part3-written": variants.SCALED,
                   "part4-written": variants.LAYOUT},
    "partly-right": {"part2-written": variants.DERIVATION, "part3-written": "It decays because 0.5 is less than 1."},
    "scaled-shortcut-ignored": {"part3-written": "The scaled shortcut is still a shortcut, so the gradient "
                                "survives: after 20 blocks it is still 0.5 of what it was."},
    "pre-post-swapped": {"part4-written": "Post-LN keeps the identity path, because the LayerNorm comes after "
                         "the addition. Both layouts print about the same norms."},
}


def samples(s: Samples) -> dict[str, tuple[str, object, set[str]]]:
    """name -> (description, notebook dict or raw text, ids of the tests it fails)."""
    part = {p: s.checks(p) for p in PARTS}
    every = set().union(*part.values())
    broadcasting = s.filled("residual_add", ["return x + fx"])
    hard_coded = {"chain_rule_grad": s.filled("chain_rule_grad", ["return 7.0"]),
                  "split_gradient": s.filled("split_gradient", ["return 5.0, 2.0"])}
    no_mask = s.filled("transformer_block", s.body("transformer_block", 1, ("if causal else None", "if False else None")))
    detached_body = s.body("gradient_norms", 0, (
        "xs.append(alpha * x + branch(x) if shortcut else branch(x))",
        "xs.append((alpha * x + branch(x) if shortcut else branch(x)).detach().requires_grad_(True))"))
    detached = s.filled("gradient_norms", detached_body)
    wrong = {"residual_add": broadcasting, **hard_coded, "transformer_block": no_mask, "gradient_norms": detached}
    fails_broadcasting = {"residual_add_no_broadcasting", "residual_add_error_message", "residual_shape_mismatch"}
    fails_hard_coded = {"chain_one_block", "chain_many_blocks", "chain_alpha", "chain_empty", "split"}
    fails_causal = {"block_pre_causal", "block_post_causal"}
    fails_detached = {"norms_decay", "norms_depth_100", "norms_random", "norms_plain"}
    fails_wrong = fails_broadcasting | fails_hard_coded | fails_causal | fails_detached
    uses_residual_add = (part[1] - {"shortcut_identity", "shortcut_projection", "ffn_layers"}) | \
        (part[4] - {"block_parts", "block_bad_norm", "stream_norms"}) | \
        {"residual_forward", "residual_scaled", "deep_residual_trains"}
    always = "return AlwaysEqual()"
    ref = s.bodies
    always_equal = {
        "residual_add": s.filled("residual_add", [always], before=variants.ALWAYS_EQUAL),
        "residual": s.filled("residual", [always]),
        "projection_shortcut": s.filled("projection_shortcut", [ref["projection_shortcut"][0], always]),
        "residual_ffn": s.filled("residual_ffn", [ref["residual_ffn"][0], always]),
        "chain_rule_grad": s.filled("chain_rule_grad", [always]),
        "split_gradient": s.filled("split_gradient", [always]),
        "gradient_norms": s.filled("gradient_norms", [always]),
        "transformer_block": s.filled("transformer_block", [ref["transformer_block"][0], always]),
        "residual_stream_norms": s.filled("residual_stream_norms", [always]),
    }
    locked = lambda c: c["cell_type"] == "code" and not c["metadata"].get("nbgrader", {}).get("solution")
    invalid = json.dumps(s.solved(), indent=1, sort_keys=True)[:5000]
    independent = {name: s.notebook({label: s.filled(label, bodies) for label, bodies in cells.items()})
                   for name, cells in INDEPENDENT.items()}
    near_copy = s.notebook({label: s.filled(label, renamed(bodies)) for label, bodies in INDEPENDENT["honest-a"].items()})
    labels = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in near_copy["cells"]]
    i, j = labels.index("chain_rule_grad"), labels.index("split_gradient")
    near_copy["cells"][i], near_copy["cells"][j] = near_copy["cells"][j], near_copy["cells"][i]
    # correct alternatives: a whole ResidualFFN or a module of one's own as the block's ffn, and shape messages
    # written as torch.Size([2, 3, 1]) or [2, 3, 1]
    whole_ffn = s.filled("transformer_block", [
        edit(s.bodies["transformer_block"][0], "ResidualFFN(d_model, d_model).ffn", "ResidualFFN(d_model, d_model)"),
        edit(edit(s.bodies["transformer_block"][1], "residual_add(h, self.ffn(self.ln2(h)))",
                  "residual_add(h, self.ffn.ffn(self.ln2(h)))"),
             "self.ln2(residual_add(h, self.ffn(h)))", "self.ln2(self.ffn(h))")])
    own_ffn = s.filled("transformer_block", [
        edit(s.bodies["transformer_block"][0], "ResidualFFN(d_model, d_model).ffn", "FeedForward(d_model)"),
        s.bodies["transformer_block"][1]], before=variants.OWN_FFN)
    size_message = s.filled("residual_add", [
        "if x.shape != fx.shape:\n    raise ValueError(f\"cannot add {x.shape} and {fx.shape}\")\nreturn x + fx"])
    list_message = s.filled("residual_add", [
        "if x.shape != fx.shape:\n    raise ValueError(f\"shapes differ: {list(x.shape)} vs {list(fx.shape)}\")\n"
        "return x + fx"])
    crossed_message = s.filled("residual_add", [
        "if x.shape != fx.shape:\n    shown = ['x'.join(map(str, t.shape)) for t in (x, fx)]\n"
        "    raise ValueError(f\"x: {shown[0]} and fx: {shown[1]} differ\")\nreturn x + fx"])
    one_shape_message = s.filled("residual_add", [
        "if x.shape != fx.shape:\n    raise ValueError(f\"fx has shape {tuple(fx.shape)}, unlike x\")\nreturn x + fx"])
    in_place = s.body("residual_add", 0, ("return x + fx", "x += fx\nreturn x"))
    # in place now where autograd would see it (as in-place-add), else one call late, through a kept reference
    late = s.body("residual_add", 0, ("return x + fx", "if x.requires_grad:\n    x += fx\n    return x\n"
                                      "while _LATER:\n    a, b = _LATER.pop()\n    a += b\n"
                                      "_LATER.append((x, fx))\nreturn x + fx"))
    # in place, except where the call looks like the one a test reads back: inputs in memory that cannot be
    # resized (as the grader's shared memory once was), or of that test's shape and dtype
    tells = {"storage": ("into a tensor whose storage cannot be resized (the grader's shared memory, once)",
                         "if x.untyped_storage().resizable():\n    x += fx\n    return x\nreturn x + fx"),
             "shape": ("on 3-D float32 inputs, the shape and dtype of the one call a test reads back",
                       "if x.dim() == 3 and x.dtype == torch.float32:\n    return x + fx\nx += fx\nreturn x")}
    helper_cell = s.with_own_cell(s.solved(residual_add=s.filled("residual_add", [
        "check_same_shape(x, fx)\nreturn x + fx"])), "residual_add", variants.HELPER_CELL)
    data_first_helper = s.with_own_cell(s.solved(plain_mlp=s.filled("plain_mlp", [
        "self.ln = nn.LayerNorm(d_in)\nself.ffn = ResidualFFN(d_in, d_out, expansion=1).ffn",
        "return self.ffn(self.ln(x))",
        "blocks = [PlainBlock(w, width) for w in layer_widths(d_in, width, depth)]\n"
        "return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))"])),
        "plain_mlp", variants.DATA_FIRST_HELPER_CELL)
    module_list = ffn_module_list(s, "nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, d_out)")
    gelu_last = ffn_module_list(s, "nn.Linear(d_in, hidden), nn.Linear(hidden, d_out), nn.GELU()")
    return {
        **s.honest(HONEST),
        **forgeries(s, in_place),
        **measured_forgeries(s, detached_body),
        **structure_forgeries(s),
        "ffn-whole-residual-ffn": ("TransformerBlock keeps a whole ResidualFFN(d, d) as ffn and calls its inner "
                                   "FFN (same math)", s.solved(transformer_block=whole_ffn), set()),
        "ffn-own-module": ("TransformerBlock's ffn is a module of its own (fc1, F.gelu, fc2; same math)",
                           s.solved(transformer_block=own_ffn), set()),
        "message-torch-size": ("residual_add's ValueError names the shapes as torch.Size([2, 3, 1])",
                               s.solved(residual_add=size_message), set()),
        "message-list": ("residual_add's ValueError names the shapes as [2, 3, 1]",
                         s.solved(residual_add=list_message), set()),
        "message-crossed": ("residual_add's ValueError names the shapes as 2x3x1",
                            s.solved(residual_add=crossed_message), set()),
        "message-one-shape": ("residual_add's ValueError names fx's shape only",
                              s.solved(residual_add=one_shape_message), {"residual_add_error_message"}),
        "helper-cell": ("residual_add calls check_same_shape, defined in a cell of the student's own above it",
                        helper_cell, set()),
        "helper-cell-data-first": ("plain_mlp calls layer_widths, defined in a cell of the student's own that "
                                   "first prints the shape of the digits X (there in Run All, not in the grader)",
                                   data_first_helper, set()),
        "metadata-lost-block": ("the transformer_block cell without its nbgrader metadata (typed again into a new "
                                "cell), so no grade_id names it", s.without_metadata(s.solved(), "transformer_block"),
                                set()),
        "metadata-lost-everywhere": ("every cell without its metadata, as a tool that keeps none saves it",
                                     s.without_metadata(s.solved()), set()),
        "split-cells": ("the plain_mlp and residual_mlp cells each split in two by JupyterLab's Split Cell (the "
                        "block class, then the builder), both halves with the cell's grade_id",
                        s.split_cell(s.split_cell(s.solved(), "plain_mlp", "def plain_mlp("), "residual_mlp",
                                     "def residual_mlp("), set()),
        "ffn-module-list": ("every ffn is an nn.ModuleList of Linear, GELU, Linear that the blocks' forwards run "
                            "in order (a helper of the residual_ffn cell); the tests run it in order too",
                            s.solved(**module_list), set()),
        "ffn-module-list-gelu-last": ("the ffn-module-list student with the GELU after the second Linear: "
                                      "Linear, Linear, GELU", s.solved(**gelu_last), GELU_LAST),
        "full-marks": ("the reference solution", s.solved(), set()),
        "untouched-release": ("the release as handed out: every stub still raises NotImplementedError",
                              s.notebook({}), every),
        "partly-right": ("parts 1 and 2 done, parts 3 to 5 still stubs", s.solved(parts=(1, 2)),
                         part[3] | part[4] | part[5]),
        "norms-float32": ("gradient_norms returns its ratios as float32 (.float() at the end), not float64",
                          s.solved(gradient_norms=s.filled("gradient_norms", s.body("gradient_norms", 0, (
                              "return norms / norms[-1]", "return (norms / norms[-1]).float()")))),
                          {"norms_shape"}),
        "silent-broadcasting": ("residual_add returns x + fx without checking the shapes",
                                s.solved(residual_add=broadcasting), fails_broadcasting),
        "in-place-add": ("residual_add checks the shapes, then adds in place (x += fx)",
                         s.solved(residual_add=s.filled("residual_add", in_place)),
                         {"residual_add_no_mutation", "residual_add_gradients"}),
        **{f"tells-read-back-{name}": (f"residual_add adds in place as in-place-add does, except {how}",
                                       s.solved(residual_add=s.filled("residual_add", s.body(
                                           "residual_add", 0, ("return x + fx", body)))),
                                       # reading the storage is the unchecked-memory rule's (a storage shrinks
                                       # under its views), which holds the tests of residual_add's cell
                                       {"residual_add_no_mutation", "residual_add_gradients"} |
                                       (s.trusting("residual_add") if name == "storage" else set()))
           for name, (how, body) in tells.items()},
        "late-in-place-add": ("residual_add adds in place as in-place-add does where the input requires grad, and "
                              "otherwise one call late: it keeps x and fx and adds fx into x at its next call",
                              s.solved(residual_add=s.filled("residual_add", late, after="\n\n_LATER = []\n")),
                              {"residual_add_no_mutation", "residual_add_gradients"}),
        "data-swap-in-place-add": ("residual_add adds in place as in-place-add does, then moves x onto a copy of "
                                   "what it held before (x.data = ...) and returns a view of the memory it added into",
                                   s.solved(residual_add=s.filled("residual_add", s.body("residual_add", 0, (
                                       "return x + fx", "before = x.clone()\nx += fx\nout = x.view_as(x)\n"
                                       "x.data = before\nreturn out")))),
                                   {"residual_add_no_mutation", "residual_add_gradients"}),
        "scaled-shortcut-ignored": (
            "chain_rule_grad and gradient_norms ignore alpha (x_(l+1) = x_l + F(x_l) always)",
            s.solved(chain_rule_grad=s.filled("chain_rule_grad", s.body(
                "chain_rule_grad", 0, ("alpha + df(x)", "1 + df(x)"), ("alpha * x + f(x)", "x + f(x)"))),
                     gradient_norms=s.filled("gradient_norms", s.body(
                         "gradient_norms", 0, ("alpha * x + branch(x)", "x + branch(x)")))),
            {"chain_alpha", "norms_decay", "norms_random"}),
        "hard-coded-example": ("chain_rule_grad returns 7.0 and split_gradient (5.0, 2.0), the worked example",
                               s.solved(**hard_coded), fails_hard_coded),
        "derivative-at-wrong-point": (
            "chain_rule_grad evaluates every dF at x0 instead of at each block's input",
            s.solved(chain_rule_grad=s.filled("chain_rule_grad", [
                "grad = upstream\nfor f, df in branches:\n    grad *= alpha + df(x0)\nreturn grad"])),
            {"chain_many_blocks", "chain_alpha"}),
        "pre-post-swapped": ("TransformerBlock computes Post-LN for norm='pre' and Pre-LN for norm='post'",
                             s.solved(transformer_block=s.filled("transformer_block", s.body(
                                 "transformer_block", 1, ('if self.norm == "pre":', 'if self.norm == "post":')))),
                             {"block_pre", "block_post", "block_pre_causal", "block_post_causal", "block_default",
                              "block_pre_identity"}),
        "missing-causal-mask": ("TransformerBlock ignores causal=True", s.solved(transformer_block=no_mask),
                                fails_causal),
        "detached-gradient": ("gradient_norms detaches the stream after every block",
                              s.solved(gradient_norms=detached), fails_detached),
        "crash-at-import": ("the residual_add cell imports a module that does not exist",
                            s.solved(residual_add=s.filled("residual_add", before="import residual_helpers\n\n")),
                            uses_residual_add),
        "segfault-at-import": ("the chain_rule_grad cell crashes the interpreter (segmentation fault) when run",
                               s.solved(chain_rule_grad=s.filled("chain_rule_grad",
                                                                 before="import ctypes\nctypes.string_at(0)\n\n")),
                               {"chain_one_block", "chain_many_blocks", "chain_alpha", "chain_empty"}),
        "exits-at-import": ("the residual_stream_norms cell calls sys.exit() before its def",
                            s.solved(residual_stream_norms=s.filled("residual_stream_norms",
                                                                    before="import sys\nsys.exit('done')\n\n")),
                            {"stream_norms"}),
        "infinite-loop": ("split_gradient never returns (while True)",
                          s.solved(split_gradient=s.filled("split_gradient", ["while True:\n    pass"])),
                          {"split"}),
        "invalid-json": ("a notebook file cut off in the middle: not valid JSON", invalid, every),
        "wrong-answers": ("silent broadcasting, hard-coded example, detached gradient and no causal mask",
                          s.solved(**wrong), fails_wrong),
        "checker-cheat": ("the wrong answers of wrong-answers.ipynb, plus a cell that makes torch.allclose, "
                          "torch.equal, torch.testing.assert_close, numpy.allclose and numpy.testing always pass",
                          # its patches are flagged (monkeypatch), and the grader compares in its own process
                          s.solved(**{**wrong, "residual_add": variants.CHEAT + broadcasting}), fails_wrong),
        "always-equal": ("every function returns an object that equals anything and claims to be a Tensor",
                         s.solved(**always_equal),
                         # Part 5 is the reference's: its tests that need no Part 1 function still pass
                         # (its ProjectionShortcut answers too: ffn_layers and residual_structure call it by name;
                         # train trains the grader's own model; zero_init is judged by the branches alone) and its
                         # __getattr__ answers every name, a library's protocol's too: the protocol rule holds the
                         # rest of them (block_parts, plain_structure, deep_plain_stalls, ...)
                         every - {"train_lowers_loss", "residual_zero_init"}),
        "locked-cells-deleted": ("the reference solution with every locked code cell (imports, checks, demos) "
                                 "deleted", s.notebook({l: s.filled(l) for p in PARTS for l in PARTS[p]}, locked),
                                 set()),
        "missing-solution-cell": ("the reference solution with the residual_stream_norms cell deleted",
                                  s.notebook({l: s.filled(l) for p in PARTS for l in PARTS[p]},
                                             lambda c: c["metadata"].get("nbgrader", {}).get("grade_id")
                                             == "residual_stream_norms"), {"stream_norms"}),
        "reads-solutions": ("stubs, plus code that looks for solutions/ on the grading machine and runs it",
                            s.notebook({"residual_stream_norms": s.filled("residual_stream_norms", [
                                "raise NotImplementedError()"], after=variants.READ_SOLUTIONS)}), every),
        "ffn-default-expansion-2": (
            "ResidualFFN's expansion defaults to 2, not 4 (TransformerBlock passes expansion=4 itself)",
            s.solved(residual_ffn=edit(s.filled("residual_ffn"), "expansion: int = 4", "expansion: int = 2"),
                     transformer_block=s.filled("transformer_block", s.body("transformer_block", 0, (
                         "ResidualFFN(d_model, d_model).ffn", "ResidualFFN(d_model, d_model, expansion=4).ffn")))),
            {"ffn_layers"}),
        # written before Part 5 existed: parts 1 to 4 right, Part 5 not started
        "honest-a": ("a correct solution of parts 1 to 4 written without the reference: other names, calls and "
                     "order; Part 5 not started", independent["honest-a"], part[5]),
        "honest-b": ("another independent correct solution of parts 1 to 4, in a third style; Part 5 not started",
                     independent["honest-b"], part[5]),
        "copied-honest-a": ("honest-a byte for byte, handed in by another student", independent["honest-a"],
                            part[5]),
        "renamed-honest-a": ("honest-a with its local names renamed and two cells swapped",
                             near_copy, part[5]),
        **part5_samples(s),
    }


# a student's own helper in the residual_ffn cell: an nn.ModuleList has no forward of its own
RUN_LAYERS = '''def run_layers(layers: nn.ModuleList, x: Tensor) -> Tensor:
    """x through each layer in order, as nn.Sequential would."""
    for layer in layers:
        x = layer(x)
    return x


'''


def ffn_module_list(s: Samples, layers: str) -> dict[str, str]:
    """The cells of a student whose every ffn is nn.ModuleList([layers]), run in order by run_layers wherever
    the reference calls self.ffn(...)."""
    through = ("self.ffn(", "run_layers(self.ffn, ")
    ffn = s.body("residual_ffn", 1, through)
    ffn[0] = edit(ffn[0], "nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, d_out))",
                  f"nn.ModuleList([{layers}])")
    return {"residual_ffn": s.filled("residual_ffn", ffn, before=RUN_LAYERS),
            **{label: s.filled(label, s.body(label, 1, through))
               for label in ("transformer_block", "plain_mlp", "residual_mlp")}}


def forgeries(s: Samples, in_place: list[str]) -> dict[str, tuple[str, object, set[str]]]:
    """Forgeries of the child's reports, each next to its honest twin (TWINS)."""
    # a forgery's cell holds the tests of the parts whose child loads it
    in_add = s.trusting("residual_add")
    in_block = s.trusting("transformer_block")
    detached = s.body("residual_add", 0, ("return x + fx", "return (x + fx).detach()"))
    # a detached residual_add also starves Part 5's deep residual stacks of their shortcut gradient, by a
    # seed-dependent margin: these two leave Part 5 as handed out, so their scores stay exact
    part5 = s.checks(5)
    upto4 = (1, 2, 3, 4)
    # detached residual_add after a forgery of its gradients, in the same cell
    forged_add = lambda before: s.solved(upto4, residual_add=s.filled("residual_add", detached, before=before.lstrip()))
    detached_fails = {"residual_add_gradients"} | part5
    forged_add_fails = detached_fails | in_add
    # residual_add refusing different shapes with another exception than ValueError
    raising = lambda error, before="": s.filled("residual_add", s.body("residual_add", 0, (
        "raise ValueError(", f"raise {error}(")), before=before)
    fails_broadcasting = set(BROADCASTING)
    oracle = lambda table: {"chain_rule_grad": table + variants.ORACLE_CHAIN, "split_gradient": variants.ORACLE_SPLIT}
    return {
        "detached-residual-add": ("residual_add returns (x + fx).detach(): no gradient reaches x or fx",
                                  s.solved(upto4, residual_add=s.filled("residual_add", detached)), detached_fails),
        # a detached result given requires_grad, whose hook writes x.grad and fx.grad: autograd, asked for the
        # gradients along the result's graph, finds no path to x or fx
        "gradients-written-by-hook": ("detached residual_add whose result's hook writes the upstream gradient "
                                      "into x.grad and fx.grad", s.solved(upto4, residual_add=s.filled(
                                          "residual_add",
                                          s.body("residual_add", 0, ("return x + fx", variants.GRADS_BY_HOOK)))),
                                      detached_fails),
        "forged-mutation-report": ("in-place residual_add, with the probe patched (through sys.modules) to report "
                                   "the inputs unchanged", s.solved(residual_add=s.filled(
                                       "residual_add", in_place, before=variants.FORGED_MUTATION.lstrip())),
                                   {"residual_add_no_mutation", "residual_add_gradients"} | in_add),
        "forged-gradients-report": ("detached residual_add, with the probe's gradients (reached as "
                                    "torch.sys.modules) replaced by the right ones",
                                    forged_add(variants.FORGED_GRADIENTS), forged_add_fails),
        # an alias of getattr finds the probe out of reach; handing it the module torch holds its tests (a module
        # held or passed hides the paths the policy reads off it)
        **{f"reach-{name}": (f"detached residual_add, with the probe's gradients replaced; the probe reached by "
                             f"{name.replace('-', ' ')}", forged_add(source), forged_add_fails)
           for name, source in variants.REACHES.items()},
        **{f"reach-{name}": (f"detached residual_add, with the probe's gradients replaced from generated code; "
                             f"the probe reached by {name.replace('-', ' ')}", forged_add(source), forged_add_fails)
           for name, source in variants.FRAMES.items()},
        **{f"reach-{name}": (f"detached residual_add, with the probe's gradient reads answered by a torch function "
                             f"mode ({name.replace('-', ' ')})", forged_add(source), forged_add_fails)
           for name, source in variants.MODES.items()},
        "refuses-with-runtime-error": ("residual_add refuses different shapes with a RuntimeError, not a ValueError",
                                       s.solved(residual_add=raising("RuntimeError")), fails_broadcasting),
        **{f"claims-{name}": (f"refuses-with-runtime-error, its RuntimeError's class, built by {how}, saying "
                              "(__class__) that it is a ValueError",
                              s.solved(residual_add=raising("ShapeError", source)), fails_broadcasting)
           for name, (how, source) in variants.ERROR_CLASSES.items()},
        **{name: (f"refuses-with-runtime-error, its RuntimeError's type pointer overwritten in memory with "
                  f"ValueError's by {how}", s.solved(residual_add=raising("as_value_error", source)),
                  # each breaks a withhold rule (an import outside the assignment's, the protocol or
                  # unchecked-memory rule), which holds the tests of residual_add's cell; Triton's interpreter
                  # also stops the kernel and keeps its raw store to itself (MEASURED)
                  fails_broadcasting | (set() if name in BY_CONSTRUCTION else in_add))
           for name, (how, source) in variants.RETYPES.items()},
        # the monitor sees the frames and ctypes in the string's code, charged to no cell: the tests of part 1's
        # child that rest on its reports are held (the error is described there alone)
        "partial-str-retypes-error": ("refuses-with-runtime-error, its error's __str__ a functools.partial of "
                                      "numpy.testing.measure whose string retypes the error when the grader reads it",
                                      s.solved(residual_add=raising("ShapeError", variants.PARTIAL_STR)),
                                      fails_broadcasting | (in_add & s.checks(1))),
        # declared in every child that loads residual_add, so its tests that rest on the reports are held there
        "signature-hook-in-place-add": ("residual_add an object that adds in place as in-place-add does, whose "
                                        "_partialmethod property runs a string annotation through "
                                        "typing.get_type_hints when the child reads residual_add's signature",
                                        s.solved(residual_add=variants.SIGNATURE_HOOK),
                                        {"residual_add_no_mutation", "residual_add_gradients"} | in_add),
        # the grader refuses the unsigned frame; gzip, reached as torch.profiler.profiler.gzip, is a module
        # outside the assignment's imports, which holds the tests of residual_add's cell
        "forged-reply-frame": ("refuses-with-runtime-error, with a ValueError's reply written on the grader's "
                               "connection (opened through gzip.GzipFile) ahead of the probe's",
                               s.solved(residual_add=raising("refuse", variants.FORGED_REPLY)),
                               fails_broadcasting | in_add),
        # torch.frombuffer's tensor holds its bytearray in the child: growing it raises BufferError, which
        # residual_add then raises instead of a ValueError
        "freed-buffer-retypes-error": ("refuses-with-runtime-error, its RuntimeError made in memory a tensor from "
                                       "torch.frombuffer still maps, after the bytearray under it grew, and retyped "
                                       "there", s.solved(residual_add=raising("as_value_error", variants.FREED_BUFFER)),
                                       fails_broadcasting),
        "wraps-encoder-layer": ("TransformerBlock wraps nn.TransformerEncoderLayer, its parts aliased as attn, "
                                "ln1, ln2 and ffn", s.solved(transformer_block=variants.WRAPS_ENCODER.lstrip()),
                                {"block_parts"}),
        "hides-encoder-layer": ("the wrapped nn.TransformerEncoderLayer stored with object.__setattr__, so that "
                                "named_modules() never shows it",
                                s.solved(transformer_block=variants.HIDES_ENCODER.lstrip()), {"block_parts"} | in_block),
        "hides-encoder-layer-past-the-cap": ("the wrapped nn.TransformerEncoderLayer registered after 1,000 other "
                                             "modules, where the structure report once stopped listing",
                                             s.solved(transformer_block=variants.ENCODER_PAST_THE_CAP.lstrip()),
                                             # every test that builds a TransformerBlock: none is made
                                             in_block - {"block_bad_norm", "stream_norms"}),
        "forged-structure-report": ("the wrapped nn.TransformerEncoderLayer, with the probe's structure report "
                                    "patched (through __import__) to leave it out",
                                    s.solved(transformer_block=variants.FORGED_STRUCTURE.lstrip()),
                                    {"block_parts"} | in_block),
        "oracle-fallback": ("chain_rule_grad returns upstream and split_gradient (upstream, 0.0): guesses",
                            s.solved(**oracle("_SEEN, _SPLIT = {}, {}\n")),
                            {"chain_one_block", "chain_many_blocks", "chain_alpha", "split"}),
        "oracle-table": ("the guesses of oracle-fallback, after a table of inputs and expected values copied from "
                         "earlier feedback", s.solved(**oracle(variants.ORACLE_TABLE.lstrip())),
                         {"chain_one_block", "chain_many_blocks", "chain_alpha", "split"}),
    }


# ResidualBlock's forward in the reference, and the edit that leaves its shortcut out (part5-shortcut-missing)
RESIDUAL_FORWARD = "return residual_add(self.alpha * self.shortcut(x), self.branch_scale * self.ffn(self.ln(x)))"
SHORTCUT_MISSING = (RESIDUAL_FORWARD, "return self.branch_scale * self.ffn(self.ln(x))")


def plain_adds_x(s: Samples, *model: tuple[str, str], before: str = "") -> str:
    """plain_mlp's cell with blocks that add x where the shapes allow; `model`: edits of plain_mlp's own body."""
    bodies = s.body("plain_mlp", 1, ("return self.ffn(self.ln(x))", "out = self.ffn(self.ln(x))\n"
                                                                    "return x + out if x.shape == out.shape else out"))
    bodies[2:] = s.body("plain_mlp", 2, *model)[2:]
    return s.filled("plain_mlp", bodies, before=before)


def part5_samples(s: Samples) -> dict[str, tuple[str, object, set[str]]]:
    """Part 5's misconceptions, each a notebook otherwise equal to the reference."""
    block = lambda index, *edits: s.filled("residual_mlp", s.body("residual_mlp", index, *edits))
    optim = lambda old, new: s.filled("train", [edit(variants.TORCH_OPTIM_TRAIN, old, new)])
    return {
        "part5-shortcut-missing": (
            "residual_mlp's blocks return branch_scale * ffn(ln(x)) only: the shortcut is never added",
            s.solved(residual_mlp=block(1, SHORTCUT_MISSING)),
            {"residual_forward", "residual_scaled", "deep_residual_trains"}),
        "part5-zero-init-ignored": ("residual_mlp ignores zero_init: every ffn[2] keeps PyTorch's initialisation",
                                    s.solved(residual_mlp=block(2, ("if zero_init:", "if False:"))),
                                    {"residual_zero_init"}),
        "part5-alpha-on-the-branch": (
            "residual_mlp multiplies the branch by alpha * branch_scale and leaves the shortcut unscaled",
            s.solved(residual_mlp=block(1, (RESIDUAL_FORWARD, "return residual_add(self.shortcut(x), "
                                                     "self.alpha * self.branch_scale * self.ffn(self.ln(x)))"))),
            {"residual_scaled"}),
        "part5-no-projection": (
            "residual_mlp's first block, which changes the width, has no shortcut (a PlainBlock)",
            s.solved(residual_mlp=block(2, (
                "blocks = [ResidualBlock(d_in if l == 0 else width, width, alpha, branch_scale) for l in range(depth)]",
                "blocks = [PlainBlock(d_in, width)] + [ResidualBlock(width, width, alpha, branch_scale)\n"
                "                                      for _ in range(depth - 1)]"))),
            {"residual_structure", "residual_forward", "residual_scaled"}),
        "part5-projection-everywhere": (
            "residual_mlp's blocks all project the shortcut, also where the width stays the same",
            s.solved(residual_mlp=block(0, ("self.shortcut = ProjectionShortcut(d_in, d_out)",
                                            "self.shortcut = ProjectionShortcut(d_in, d_out)\n"
                                            "self.shortcut.proj = nn.Linear(d_in, d_out, bias=False)"))),
            {"residual_structure", "deep_residual_trains"}),
        "part5-plain-no-final-ln": (
            "plain_mlp leaves out the final LayerNorm: the head follows the last block",
            s.solved(plain_mlp=s.filled("plain_mlp", s.body("plain_mlp", 2, (
                "return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))",
                "return nn.Sequential(*blocks, nn.Linear(width, d_out))")))),
            {"plain_structure"}),
        "part5-step-forgotten": (
            "train uses torch.optim.SGD but never calls opt.step()",
            s.solved(train=optim("    opt.step()\n", "")),
            {"train_updates", "train_lowers_loss"}),
        "part5-batch-ignored": (
            "train steps on the whole set every time, whatever batch asks for",
            s.solved(train=optim("    idx = torch.randperm(len(X), generator=gen)[:batch]\n"
                                 "    loss = F.cross_entropy(model(X[idx]), y[idx])\n",
                                 "    loss = F.cross_entropy(model(X), y)\n")),
            {"train_updates"}),
        "part5-zero-grad-forgotten": (
            "train uses torch.optim.SGD but never calls opt.zero_grad(): gradients pile up",
            s.solved(train=optim("    opt.zero_grad()\n", "")),
            {"train_updates", "train_lowers_loss"}),
        "part5-plain-adds-x": (
            "plain_mlp's blocks add their input back where the width allows: a shortcut in the plain network",
            s.solved(plain_mlp=plain_adds_x(s)), {"plain_forward", "deep_plain_stalls"}),
        "part5-grad-norms-reversed": (
            "grad_norms returns its entries from x_depth down to x_0",
            s.solved(grad_norms=s.filled("grad_norms", s.body("grad_norms", 0, (
                "return [g.norm().item() for g in grads]", "return [g.norm().item() for g in grads][::-1]")))),
            {"grad_norms_values"}),
    }


def measured_forgeries(s: Samples, detached_norms: list[str]) -> dict[str, tuple[str, object, set[str]]]:
    """Answers that pass a test which measures less than it claims, each next to its honest twin (TWINS):
    train that never steps (part5-step-forgotten) plus a memorising forward or NaN parameters, and the
    detached gradient_norms (detached-gradient) plus alpha ** (L - l) written down."""
    no_step = edit(variants.TORCH_OPTIM_TRAIN, "    opt.step()\n", "")
    train = lambda extra: s.filled("train", [edit(no_step, "return losses", extra.lstrip() + "return losses")])
    norms = lambda extra: s.filled("gradient_norms", [extra.lstrip() + detached_norms[0], *detached_norms[1:]])
    fails_train = {"train_updates", "train_lowers_loss"}    # the deep tests train with the grader's own SGD
    fails_norms = {"norms_decay", "norms_depth_100", "norms_random", "norms_plain"}
    last = "return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))"
    head = lambda built, cls=variants.DETACHED_HEAD: plain_adds_x(
        s, (last, built + last.replace("nn.Linear(width, d_out)", "head")), before=cls)
    # the edit of a builder's last line that keeps its model (an nn.Sequential, or cls) for `code` to work on
    kept = lambda code, cls="nn.Sequential": (last, last.replace("return nn.Sequential", f"model = {cls}") + "\n"
                                              + code + "return model")
    fails_plain = {"plain_forward", "deep_plain_stalls"}
    return {
        "memorises-training-set": ("train never steps, and hooks the model's forward to answer train's own X "
                                   "with 30 * one_hot(y)", s.solved(train=train(variants.MEMORISE_WHOLE)), fails_train),
        "memorises-training-rows": ("train never steps, and hooks the model's forward to answer each row it saw "
                                    "with its label", s.solved(train=train(variants.MEMORISE_ROWS)), fails_train),
        "memorises-shallow": ("train never steps, and hooks the forward of a two-block model only (the deep plain "
                              "test's control) to answer train's own X with 30 * one_hot(y)",
                              s.solved(train=train(variants.MEMORISE_SHALLOW)), fails_train),
        "model-steps-itself": ("train never steps, and residual_mlp's parameters take an SGD step themselves once "
                               "their gradient is in (register_post_accumulate_grad_hook)",
                               s.solved(train=s.filled("train", [no_step]), residual_mlp=s.filled(
                                   "residual_mlp", s.body("residual_mlp", 2, (
                                       "return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))",
                                       variants.SELF_STEPPING)), before=variants.STEP_ITSELF.lstrip())), fails_train),
        "nan-after-training": ("train never steps, then fills every parameter with NaN",
                               s.solved(train=train(variants.NAN_FILL)), fails_train),
        "nan-data-after-training": ("train never steps, then multiplies every parameter's .data by NaN",
                                    s.solved(train=train(variants.NAN_DATA)), fails_train),
        "train-refuses-deep-plain": ("part5-plain-adds-x, with a train that leaves a deep model without a shortcut "
                                     "attribute untrained, so that the deep plain network would seem to stall",
                                     s.solved(plain_mlp=plain_adds_x(s), train=s.filled("train", [edit(
                                         variants.TORCH_OPTIM_TRAIN, "losses = []\n", variants.REFUSE_DEEP_PLAIN)])),
                                     {"plain_forward", "deep_plain_stalls"}),
        "deep-head-detached": ("part5-plain-adds-x, whose plain_mlp past depth 8 ends in a head of its own class "
                               "that passes its values with a millionth of their gradient, so that the deep plain "
                               "network would seem to stall",
                               s.solved(plain_mlp=head("head = DetachedHead(width, d_out) if depth > 8 else "
                                                       "nn.Linear(width, d_out)\n")), fails_plain),
        "deep-head-gradient-scaled": ("as deep-head-detached, with the head's class the same at every depth and the "
                                      "detaching switched on by an attribute past depth 8",
                                      s.solved(plain_mlp=head("head = DetachedHead(width, d_out)\n"
                                                              "head.slow = depth > 8\n")), fails_plain),
        "deep-head-detached-after-first-step": (
            "as deep-head-gradient-scaled, the head passing its whole gradient until a backward has gone through it, "
            "so that the gradient at training's first step is the forward's",
            s.solved(plain_mlp=head("head = DetachedHead(width, d_out)\nhead.slow = depth > 8\n",
                                    variants.DETACHED_AFTER_BACKWARD)), fails_plain),
        "deep-parameters-hidden": (
            "part5-plain-adds-x, whose plain_mlp past depth 8 is an nn.Sequential whose named_parameters() names the "
            "head's bias alone, so that training that asks the model for its parameters moves no other",
            s.solved(plain_mlp=plain_adds_x(s, kept("model.quiet = depth > 8\n", "Stack"),
                                            before=variants.PARAMETERS_HIDDEN)), fails_plain),
        "deep-resets-to-start": (
            "part5-plain-adds-x, whose first block past depth 2 puts the model's start back whenever training has "
            "moved every parameter, so that the deep plain network never leaves its start",
            s.solved(plain_mlp=s.filled("plain_mlp", [*s.body("plain_mlp", 1, (
                "return self.ffn(self.ln(x))", "if getattr(self, 'anchor', None) is not None:\n    self.anchor()\n"
                "out = self.ffn(self.ln(x))\nreturn x + out if x.shape == out.shape else out"))[:2],
                *s.body("plain_mlp", 2, kept("if depth > 2:\n    blocks[0].anchor = anchor(model)\n"))[2:]],
                before=variants.RESET_TO_START)),
            fails_plain),
        "deep-zero-head-start": (
            "part5-plain-adds-x, whose plain_mlp past depth 8 starts the final LayerNorm's and the head's weights at "
            "zero: a saddle where only the head's bias learns",
            s.solved(plain_mlp=plain_adds_x(s, kept("if depth > 8:\n    with torch.no_grad():\n"
                                                    "        model[depth].weight.zero_()\n"
                                                    "        model[depth + 1].weight.zero_()\n"))), fails_plain),
        "deep-shortcut-once-trained": (
            "part5-shortcut-missing, whose blocks past depth 8 add their shortcut once training has moved the first "
            "block's ffn and the head, so that the deep residual network is what the gradient check saw at the "
            "start and trains after it",
            s.solved(residual_mlp=s.filled("residual_mlp", [*s.body("residual_mlp", 1, (
                RESIDUAL_FORWARD, "if getattr(self, 'trained', None) is not None and self.trained():\n    "
                + RESIDUAL_FORWARD + "\n" + SHORTCUT_MISSING[1]))[:2], *s.body("residual_mlp", 2, kept(
                    "if depth > 8:\n    for block in blocks:\n"
                    "        block.trained = trained(blocks[0], model[depth + 1])\n"))[2:]],
                before=variants.SHORTCUT_ONCE_TRAINED)),
            {"residual_forward", "residual_scaled", "deep_residual_trains"}),
        "deep-class-switched": ("part5-plain-adds-x, whose plain_mlp past depth 8 switches off, for the class, the "
                                "add of every PlainBlock, so that the deep plain network would seem to stall",
                                s.solved(plain_mlp=s.filled("plain_mlp", [*s.body("plain_mlp", 1, (
                                    "return self.ffn(self.ln(x))", "out = self.ffn(self.ln(x))\nreturn x + out if "
                                    "getattr(PlainBlock, 'add_input', True) and x.shape == out.shape else out"))[:2],
                                    *s.body("plain_mlp", 2, ("blocks = [", "if depth > 8:\n    PlainBlock.add_input "
                                                                          "= False\nblocks = ["))[2:]])),
                                fails_plain),
        "deep-blocks-dropped": ("part5-shortcut-missing, whose residual_mlp builds two blocks whenever depth is over "
                                "8, so that the deep residual network would seem to train",
                                s.solved(residual_mlp=s.filled("residual_mlp", s.body(
                                    "residual_mlp", 1, SHORTCUT_MISSING)[:2] + s.body(
                                    "residual_mlp", 2, ("for l in range(depth)]", "for l in range(2 if depth > 8 "
                                                                                  "else depth)]"))[2:])),
                                {"residual_forward", "residual_scaled", "deep_residual_trains"}),
        "zero-projections-identity": ("pre-post-swapped, whose block returns x whenever the attention's output "
                                      "projection and ffn[2] are all zero",
                                      s.solved(transformer_block=s.filled("transformer_block", s.body(
                                          "transformer_block", 1, ('if self.norm == "pre":', 'if self.norm == "post":'),
                                          ("T = x.shape[1]", variants.ZERO_PROJECTIONS_IDENTITY + "T = x.shape[1]")))),
                                      set(SHOWN["pre-post-swapped"])),
        "zero-init-branch-answers-zero": (
            "part5-zero-init-ignored, whose ffn answers zeros when zero_init is set while its block calls ffn's "
            "layers one by one", s.solved(residual_mlp=s.filled("residual_mlp", [
                edit(s.bodies["residual_mlp"][0], "ResidualFFN(d_in, d_out, expansion=1).ffn",
                     "Branch(*ResidualFFN(d_in, d_out, expansion=1).ffn)"),
                edit(s.bodies["residual_mlp"][1], "self.ffn(self.ln(x))",
                     "self.ffn[2](self.ffn[1](self.ffn[0](self.ln(x))))"),
                edit(s.bodies["residual_mlp"][2], "if zero_init:\n    with torch.no_grad():\n"
                     "        for block in blocks:\n            block.ffn[2].weight.zero_()\n"
                     "            block.ffn[2].bias.zero_()\n",
                     "for block in blocks:\n    block.ffn.zero = zero_init\n")], before=variants.BRANCH_ANSWERS_ZERO)),
            {"residual_zero_init"}),
        "norms-alpha-power": ("gradient_norms detaches the stream, and with a shortcut returns alpha ** (L - l)",
                              s.solved(gradient_norms=norms(variants.ALPHA_POWER)), fails_norms),
        "norms-alpha-power-zero-branches": (
            "gradient_norms detaches the stream, and returns alpha ** (L - l) when every branch returns zeros",
            s.solved(gradient_norms=norms(variants.ALPHA_POWER_ZERO_BRANCHES)), fails_norms),
    }


def structure_forgeries(s: Samples) -> dict[str, tuple[str, object, set[str]]]:
    """A square projection in ProjectionShortcut (eye-projection), and two forgeries that leave it out of
    nn.Module.named_modules, which the structure report once listed modules and counted parameters with."""
    eye = [variants.EYE_PROJECTION.lstrip(), s.bodies["projection_shortcut"][1]]
    cell = s.filled("projection_shortcut", eye)
    method = edit(cell, "    def forward(", textwrap.indent(variants.HIDING_METHOD.lstrip(), "    ") + "    def forward(")
    fails = {"shortcut_identity", "residual_structure"}
    adding = edit(s.filled("projection_shortcut", [variants.ADDING_PROJECTION.lstrip(), variants.ADDING_FORWARD]),
                  "    def forward(", textwrap.indent(variants.ADDING_METHOD.lstrip(), "    ") + "    def forward(")
    added = "if self.square:\n            yield"
    training = edit(adding, added, "if self.square and self.training:\n            yield")
    spares = ("            spares = nn.Module()\n            for i in range(10000):\n"
              "                spares.register_parameter(f\"p{i}\", nn.Parameter(torch.empty(0)))\n")
    held = "            self.held = [layer]\n"
    past_the_cap = edit(edit(adding, held, spares + held.replace("[layer]", "[layer, spares]")),
                        added, added + " prefix + \".spares\", self.held[1]\n            yield")
    return {
        "eye-projection": ("ProjectionShortcut(d, d) is a bias-free Linear set to the identity: parameters where "
                           "there should be none", s.solved(projection_shortcut=cell), fails),
        "hides-projection-method": ("eye-projection, with a named_modules method that leaves the square projection out",
                                    s.solved(projection_shortcut=method), fails),
        "adds-projection-method": ("eye-projection, the square projection kept in a plain list and added back by a "
                                   "named_modules method: no registry holds it, .parameters() yields it",
                                   s.solved(projection_shortcut=adding), fails),
        "adds-projection-when-training": ("adds-projection-method, its named_modules adding the square projection "
                                          "in training mode only, where the grader read it in eval mode",
                                          s.solved(projection_shortcut=training), fails),
        "adds-projection-past-the-cap": ("adds-projection-method, its named_modules yielding a module of 10,000 "
                                         "empty parameters first, where the grader once stopped counting",
                                         s.solved(projection_shortcut=past_the_cap),
                                         # every test that makes a square ProjectionShortcut: none is made
                                         fails | {"ffn_layers", "ffn_forward", "residual_forward", "residual_scaled",
                                                  "residual_zero_init", "deep_residual_trains"}),
        "hides-projection-assigned": ("eye-projection, with ProjectionShortcut.named_modules assigned a function that "
                                      "lists the square projection nowhere",
                                      s.solved(projection_shortcut=cell + variants.HIDING_ASSIGNMENT), fails),
        "hides-projection-copied-state": (
            "eye-projection, the square projection a deep copy (AveragedModel's module) of a Linear whose __getstate__ "
            "puts its parameters in an OrderedDict subclass",
            s.solved(projection_shortcut=s.filled("projection_shortcut", [edit(
                eye[0], "self.proj.weight.copy_(torch.eye(d_in))",
                "self.proj.weight.copy_(torch.eye(d_in))\n    self.proj = torch.optim.swa_utils.AveragedModel(self.proj).module")
                .replace("self.proj = nn.Linear(", "self.proj = (_EyeLinear if self.square else nn.Linear)("), eye[1]],
                before=variants.COPIED_STATE.lstrip())), fails),
    }

