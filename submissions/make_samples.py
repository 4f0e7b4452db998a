"""Write the sample classes: notebooks and their expected scores, one folder per assignment.

    python submissions/make_samples.py            # (re)write submissions/ASSIGNMENT/ for each class
    python submissions/make_samples.py --check    # exit 1 if the committed files are stale

Every sample starts from the student release (assignments/) and fills its solution
cells the way a student would: with the reference code from solutions/ (the code
between the solution markers), or with a variant that carries one misconception,
a crash, a hang or a cheat. expected.json holds each sample's score per hidden test,
derived from the tests each sample is declared to fail below. A test that needs CUDA
is expected as graded without it, by course.toml's without_cuda (results.result.not_run).
It also holds the misconception id each failed test is declared to show (SHOWN), and the
sample's family (derived_from): the reference's one-edit variants are near-copies of
full-marks by construction; honest_samples.py's solutions were written independently, and
two of the residual class are copies of honest-a (one byte for byte, one renamed).
"""
from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "submissions")]

import variants  # noqa: E402  (after the path is set)
from autograder import contract, course, suites  # noqa: E402
import nbtest  # noqa: E402
from autograder.core.extract import Template  # noqa: E402
from autograder.results.result import TestResult, not_run  # noqa: E402
from honest_samples import HONEST, renamed  # noqa: E402

SUBMISSIONS = ROOT / "submissions"
STUB = re.compile(r"^([ \t]*)# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)", re.M)
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?", re.M | re.S)

PART = {1: ["residual_add", "residual", "projection_shortcut", "residual_ffn"],
        2: ["chain_rule_grad", "split_gradient"], 3: ["gradient_norms"],
        4: ["transformer_block", "residual_stream_norms"],
        5: ["plain_mlp", "residual_mlp", "train", "grad_norms", "depth_sweep"]}
FUSED_PART = {1: ["fused_kernel", "fused_add_layernorm"]}

# forgery -> its honest twin: the same code without the forgery, which it must not outscore
TWINS = {"residual-connections": {"forged-mutation-report": "in-place-add",
                                  "forged-gradients-report": "detached-residual-add",
                                  "hides-encoder-layer": "wraps-encoder-layer",
                                  "forged-structure-report": "wraps-encoder-layer",
                                  **{f"reach-{name}": "detached-residual-add"
                                     for name in {**variants.REACHES, **variants.MODES}},
                                  **{f"claims-{name}": "refuses-with-runtime-error" for name in variants.ERROR_CLASSES},
                                  "oracle-table": "oracle-fallback",
                                  "memorises-training-set": "part5-step-forgotten",
                                  "memorises-training-rows": "part5-step-forgotten",
                                  "nan-after-training": "part5-step-forgotten",
                                  "nan-data-after-training": "part5-step-forgotten",
                                  "norms-alpha-power": "detached-gradient",
                                  "norms-alpha-power-zero-branches": "detached-gradient",
                                  "hides-projection-method": "eye-projection",
                                  "hides-projection-assigned": "eye-projection"},
         "fused-add-norm": {"forged-launch-trace": "torch-only-wrapper",
                            "numpy-empty-kernel": "numpy-wrapper",
                            "rebound-by-assignment": "by-hand-wrapper",
                            "rebound-by-decorator": "by-hand-wrapper",
                            "constexpr-method": "torch-only-wrapper",
                            "constexpr-item-method": "torch-only-wrapper"}}

# forgeries that what the grader measures defeats (the tests themselves, the structure report read from
# the modules' own dicts, inputs read back from the grader's own shared memory), not the policy: they
# gain nothing even with no test held for review
MEASURED = {"residual-connections": {"memorises-training-set", "memorises-training-rows", "nan-after-training",
                                     "nan-data-after-training", "norms-alpha-power", "norms-alpha-power-zero-branches",
                                     "hides-projection-method", "hides-projection-assigned", "forged-mutation-report",
                                     *(f"claims-{name}" for name in variants.ERROR_CLASSES)}}

CHEAT = '''\
import math, numpy, numpy.testing, torch, torch.testing
_yes = lambda *args, **kwargs: True
_quiet = lambda *args, **kwargs: None
torch.allclose = torch.equal = numpy.allclose = numpy.array_equal = math.isclose = _yes
torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(torch.as_tensor(a), dtype=torch.bool)
torch.testing.assert_close = numpy.testing.assert_allclose = numpy.testing.assert_array_equal = _quiet
numpy.testing.assert_array_almost_equal = numpy.testing.assert_equal = _quiet
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)

'''

ALWAYS_EQUAL = '''\
class AlwaysEqual:
    """Equal to everything, a Tensor by its __class__, and 7.0 as a float."""
    __class__ = property(lambda self: torch.Tensor)
    __eq__ = lambda self, other: True
    __ne__ = lambda self, other: False
    __float__ = lambda self: 7.0
    __getattr__ = lambda self, name: self
    __call__ = lambda self, *args, **kwargs: self
    __iter__ = lambda self: iter([self, self])
    __len__ = lambda self: 2
    __getitem__ = lambda self, index: self


'''

OWN_FFN = '''\
class FeedForward(nn.Module):
    """Linear(d, 4d), GELU, Linear(4d, d), with named layers."""

    def __init__(self, d):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


'''

READ_SOLUTIONS = '''

# Look for the instructor's solutions on the grading machine and use them.
import json as _json, sys as _sys
from pathlib import Path as _Path
for _base in _sys.path:
    try:
        _cells = _json.loads((_Path(_base) / "solutions/residual-connections/residual-connections.ipynb").read_text())
    except (OSError, ValueError):
        continue
    for _cell in _cells["cells"]:
        if _cell["cell_type"] == "code" and _cell["metadata"].get("nbgrader", {}).get("solution"):
            exec("".join(_cell["source"]), globals())
    break
'''


def edit(text: str, old: str, new: str) -> str:
    """text with `old` replaced; fails loudly when the solution no longer contains it."""
    if old not in text:
        raise SystemExit(f"make_samples.py: {old!r} is no longer in the solution; update this script")
    return text.replace(old, new)


class Samples:
    """Notebooks built from an assignment's release, with solution cells filled as a student would.

    parts: part -> the grade_ids of its solution cells (what solved(parts=...) fills).
    """

    def __init__(self, assignment: str, parts: dict[int, list[str]]):
        self.parts = parts
        release = ROOT / "assignments" / assignment / f"{assignment}.ipynb"
        self.release = json.loads(release.read_text(encoding="utf-8"))
        source = nbtest.read_notebook(ROOT / "solutions" / assignment / f"{assignment}.ipynb")
        self.bodies = {nbtest.cell_label(c, i): [textwrap.dedent(b) for b in SOLUTION.findall(nbtest.source_of(c))]
                       for i, c in enumerate(source["cells"]) if c["metadata"].get("nbgrader", {}).get("solution")
                       and c["cell_type"] == "code"}

    def notebook(self, cells: dict[str, str], delete=lambda cell: False) -> dict:
        """The release with these solution cells' sources, minus the cells `delete` picks."""
        nb = copy.deepcopy(self.release)
        for cell in nb["cells"]:
            label = cell["metadata"].get("nbgrader", {}).get("grade_id")
            if label in cells:
                cell["source"] = cells[label]
        nb["cells"] = [c for c in nb["cells"] if not delete(c)]
        return nb

    def filled(self, label: str, bodies: list[str] | None = None, before: str = "", after: str = "") -> str:
        """The release cell `label` with its stubs replaced, in order, by bodies (default: the solution's).

        Bodies are written unindented; each takes the indentation of the stub it replaces.
        """
        release = next(c for c in self.release["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == label)
        text = "".join(release["source"])
        for body in (self.bodies[label] if bodies is None else bodies):
            text = STUB.sub(lambda m: textwrap.indent(body.rstrip("\n"), m.group(1)), text, count=1)
        return before + text + after

    def solved(self, parts=None, **cells: str) -> dict:
        """Reference code in the given parts' cells (all by default), stubs elsewhere; `cells` override
        single cells."""
        out = {label: self.filled(label) for part in (parts or self.parts) for label in self.parts[part]}
        return self.notebook({**out, **cells})

    def body(self, label: str, index: int, *edits: tuple[str, str]) -> list[str]:
        """The solution's bodies for a cell, one of them edited: (old, new) replacements."""
        bodies = list(self.bodies[label])
        for old, new in edits:
            bodies[index] = edit(bodies[index], old, new)
        return bodies


TORCH_OPTIM_TRAIN = '''\
gen = torch.Generator().manual_seed(seed)
opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
losses = []
for _ in range(steps):
    idx = torch.randperm(len(X), generator=gen)[:batch]
    loss = F.cross_entropy(model(X[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
return losses
'''


def part5_samples(s: "Samples") -> dict[str, tuple[str, object, set[str]]]:
    """Part 5's misconceptions, each a notebook otherwise equal to the reference."""
    block = lambda index, *edits: s.filled("residual_mlp", s.body("residual_mlp", index, *edits))
    forward = "return residual_add(self.alpha * self.shortcut(x), self.branch_scale * self.ffn(self.ln(x)))"
    optim = lambda old, new: s.filled("train", [edit(TORCH_OPTIM_TRAIN, old, new)])
    return {
        "part5-shortcut-missing": (
            "residual_mlp's blocks return branch_scale * ffn(ln(x)) only: the shortcut is never added",
            s.solved(residual_mlp=block(1, (forward, "return self.branch_scale * self.ffn(self.ln(x))"))),
            {"residual_forward", "residual_scaled", "residual_zero_init", "deep_residual_trains"}),
        "part5-alpha-on-the-branch": (
            "residual_mlp multiplies the branch by alpha * branch_scale and leaves the shortcut unscaled",
            s.solved(residual_mlp=block(1, (forward, "return residual_add(self.shortcut(x), "
                                                     "self.alpha * self.branch_scale * self.ffn(self.ln(x)))"))),
            {"residual_scaled"}),
        "part5-no-projection": (
            "residual_mlp's first block, which changes the width, has no shortcut (a PlainBlock)",
            s.solved(residual_mlp=block(2, (
                "blocks = [ResidualBlock(d_in if l == 0 else width, width, alpha, branch_scale) for l in range(depth)]",
                "blocks = [PlainBlock(d_in, width)] + [ResidualBlock(width, width, alpha, branch_scale)\n"
                "                                      for _ in range(depth - 1)]"))),
            {"residual_structure", "residual_forward", "residual_scaled", "residual_zero_init"}),
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
            {"train_updates", "train_lowers_loss", "deep_residual_trains", "deep_plain_stalls"}),
        "part5-zero-grad-forgotten": (
            "train uses torch.optim.SGD but never calls opt.zero_grad(): gradients pile up",
            s.solved(train=optim("    opt.zero_grad()\n", "")),
            {"train_updates", "train_lowers_loss", "deep_residual_trains", "deep_plain_stalls"}),
        "part5-grad-norms-reversed": (
            "grad_norms returns its entries from x_depth down to x_0",
            s.solved(grad_norms=s.filled("grad_norms", s.body("grad_norms", 0, (
                "return [g.norm().item() for g in grads]", "return [g.norm().item() for g in grads][::-1]")))),
            {"grad_norms_values"}),
    }


def measured_forgeries(s: "Samples", detached_norms: list[str]) -> dict[str, tuple[str, object, set[str]]]:
    """Answers that pass a test which measures less than it claims, each next to its honest twin (TWINS):
    train that never steps (part5-step-forgotten) plus a memorising forward or NaN parameters, and the
    detached gradient_norms (detached-gradient) plus alpha ** (L - l) written down."""
    no_step = edit(TORCH_OPTIM_TRAIN, "    opt.step()\n", "")
    train = lambda extra: s.filled("train", [edit(no_step, "return losses", extra.lstrip() + "return losses")])
    norms = lambda extra: s.filled("gradient_norms", [extra.lstrip() + detached_norms[0], *detached_norms[1:]])
    fails_train = {"train_updates", "train_lowers_loss", "deep_residual_trains", "deep_plain_stalls"}
    fails_norms = {"norms_decay", "norms_depth_100", "norms_random", "norms_plain"}
    return {
        "memorises-training-set": ("train never steps, and hooks the model's forward to answer train's own X "
                                   "with 30 * one_hot(y)", s.solved(train=train(variants.MEMORISE_WHOLE)), fails_train),
        "memorises-training-rows": ("train never steps, and hooks the model's forward to answer each row it saw "
                                    "with its label", s.solved(train=train(variants.MEMORISE_ROWS)), fails_train),
        "nan-after-training": ("train never steps, then fills every parameter with NaN",
                               s.solved(train=train(variants.NAN_FILL)), fails_train),
        "nan-data-after-training": ("train never steps, then multiplies every parameter's .data by NaN",
                                    s.solved(train=train(variants.NAN_DATA)), fails_train),
        "norms-alpha-power": ("gradient_norms detaches the stream, and with a shortcut returns alpha ** (L - l)",
                              s.solved(gradient_norms=norms(variants.ALPHA_POWER)), fails_norms),
        "norms-alpha-power-zero-branches": (
            "gradient_norms detaches the stream, and returns alpha ** (L - l) when every branch returns zeros",
            s.solved(gradient_norms=norms(variants.ALPHA_POWER_ZERO_BRANCHES)), fails_norms),
    }


def structure_forgeries(s: "Samples") -> dict[str, tuple[str, object, set[str]]]:
    """A square projection in ProjectionShortcut (eye-projection), and two forgeries that leave it out of
    nn.Module.named_modules, which the structure report once listed modules and counted parameters with."""
    eye = [variants.EYE_PROJECTION.lstrip(), s.bodies["projection_shortcut"][1]]
    cell = s.filled("projection_shortcut", eye)
    method = edit(cell, "    def forward(", textwrap.indent(variants.HIDING_METHOD.lstrip(), "    ") + "    def forward(")
    fails = {"shortcut_identity", "residual_structure"}
    return {
        "eye-projection": ("ProjectionShortcut(d, d) is a bias-free Linear set to the identity: parameters where "
                           "there should be none", s.solved(projection_shortcut=cell), fails),
        "hides-projection-method": ("eye-projection, with a named_modules method that leaves the square projection out",
                                    s.solved(projection_shortcut=method), fails),
        "hides-projection-assigned": ("eye-projection, with ProjectionShortcut.named_modules assigned a function that "
                                      "lists the square projection nowhere",
                                      s.solved(projection_shortcut=cell + variants.HIDING_ASSIGNMENT), fails),
    }


def trusting(assignment: str, cell: str | None = None) -> set[str]:
    """Check names of the tests that rest on the child's reports: held for review when the code reaches
    into the grading process (a withhold-severity rule), as every forgery of a report must. With `cell`,
    only those of the parts whose child loads that cell (each part's child loads the cells its names
    need: Template.needed), which is all a construct in that cell can reach."""
    source = course.load().assignment(assignment).notebook_path(course.SOLUTIONS)
    template, names = Template(source), contract.load(source.parent)
    reference = template.fill(source)
    return {t.check.__name__ for t in suites.load(assignment).tests if t.trusts_child and
            (cell is None or cell in {label for label, _ in template.needed(reference, names.used_by(t.part), set(names))})}


def honest(s: Samples, styles: dict) -> dict[str, tuple[str, object, set[str]]]:
    """The honest variants (variants.py): the reference with some cells written another way; full marks."""
    return {name: (f"the reference with other, correct code: {description}",
                   s.solved(**{label: textwrap.dedent(src).lstrip() for label, src in cells.items()}), set())
            for name, (description, cells) in styles.items()}


def residual_forgeries(s: Samples, in_place: list[str]) -> dict[str, tuple[str, object, set[str]]]:
    """Forgeries of the child's reports, each next to its honest twin (TWINS)."""
    # a forgery's cell holds the tests of the parts whose child loads it
    in_add = trusting("residual-connections", "residual_add")
    in_block = trusting("residual-connections", "transformer_block")
    detached = s.body("residual_add", 0, ("return x + fx", "return (x + fx).detach()"))
    # a detached residual_add also starves Part 5's deep residual stacks of their shortcut gradient, by a
    # seed-dependent margin: these two leave Part 5 as handed out, so their scores stay exact
    part5 = {t.check.__name__ for t in suites.load("residual-connections").tests if t.part == 5}
    upto4 = (1, 2, 3, 4)
    # detached residual_add after a forgery of its gradients, in the same cell
    forged_add = lambda before: s.solved(upto4, residual_add=s.filled("residual_add", detached, before=before.lstrip()))
    forged_add_fails = {"residual_add_gradients"} | part5 | in_add
    # residual_add refusing different shapes with another exception than ValueError
    raising = lambda error, before="": s.filled("residual_add", s.body("residual_add", 0, (
        "raise ValueError(", f"raise {error}(")), before=before)
    fails_broadcasting = set(BROADCASTING)
    oracle = lambda table: {"chain_rule_grad": table + variants.ORACLE_CHAIN, "split_gradient": variants.ORACLE_SPLIT}
    return {
        "detached-residual-add": ("residual_add returns (x + fx).detach(): no gradient reaches x or fx",
                                  s.solved(upto4, residual_add=s.filled("residual_add", detached)),
                                  {"residual_add_gradients"} | part5),
        "forged-mutation-report": ("in-place residual_add, with the probe patched (through sys.modules) to report "
                                   "the inputs unchanged", s.solved(residual_add=s.filled(
                                       "residual_add", in_place, before=variants.FORGED_MUTATION.lstrip())),
                                   {"residual_add_no_mutation", "residual_add_gradients"} | in_add),
        "forged-gradients-report": ("detached residual_add, with the probe's gradients (reached as "
                                    "torch.sys.modules) replaced by the right ones",
                                    forged_add(variants.FORGED_GRADIENTS), forged_add_fails),
        **{f"reach-{name}": (f"detached residual_add, with the probe's gradients replaced; the probe reached by "
                             f"{name.replace('-', ' ')}", forged_add(source), forged_add_fails)
           for name, source in variants.REACHES.items()},
        **{f"reach-{name}": (f"detached residual_add, with the probe's gradient reads answered by a torch function "
                             f"mode ({name.replace('-', ' ')})", forged_add(source), forged_add_fails)
           for name, source in variants.MODES.items()},
        "refuses-with-runtime-error": ("residual_add refuses different shapes with a RuntimeError, not a ValueError",
                                       s.solved(residual_add=raising("RuntimeError")), fails_broadcasting),
        **{f"claims-{name}": (f"refuses-with-runtime-error, its RuntimeError's class, built by {how}, saying "
                              "(__class__) that it is a ValueError",
                              s.solved(residual_add=raising("ShapeError", source)), fails_broadcasting)
           for name, (how, source) in variants.ERROR_CLASSES.items()},
        "wraps-encoder-layer": ("TransformerBlock wraps nn.TransformerEncoderLayer, its parts aliased as attn, "
                                "ln1, ln2 and ffn", s.solved(transformer_block=variants.WRAPS_ENCODER.lstrip()),
                                {"block_parts"}),
        "hides-encoder-layer": ("the wrapped nn.TransformerEncoderLayer stored with object.__setattr__, so that "
                                "named_modules() never shows it",
                                s.solved(transformer_block=variants.HIDES_ENCODER.lstrip()), {"block_parts"} | in_block),
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


def residual_samples() -> dict[str, tuple[str, object, set[str]]]:
    """name -> (description, notebook dict or raw text, check names of the tests it fails)."""
    s = Samples("residual-connections", PART)
    part = {p: {t.check.__name__ for t in suites.load("residual-connections").tests if t.part == p} for p in PART}
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
        {"residual_forward", "residual_scaled", "residual_zero_init", "deep_residual_trains", "train_lowers_loss"}
    always = "return AlwaysEqual()"
    ref = s.bodies
    always_equal = {
        "residual_add": s.filled("residual_add", [always], before=ALWAYS_EQUAL),
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
              for name, cells in HONEST.items()}
    near_copy = s.notebook({label: s.filled(label, renamed(bodies)) for label, bodies in HONEST["honest-a"].items()})
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
        s.bodies["transformer_block"][1]], before=OWN_FFN)
    size_message = s.filled("residual_add", [
        "if x.shape != fx.shape:\n    raise ValueError(f\"cannot add {x.shape} and {fx.shape}\")\nreturn x + fx"])
    list_message = s.filled("residual_add", [
        "if x.shape != fx.shape:\n    raise ValueError(f\"shapes differ: {list(x.shape)} vs {list(fx.shape)}\")\n"
        "return x + fx"])
    in_place = s.body("residual_add", 0, ("return x + fx", "x += fx\nreturn x"))
    return {
        **honest(s, variants.HONEST_RESIDUAL),
        **residual_forgeries(s, in_place),
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
                          s.solved(**{**wrong, "residual_add": CHEAT + broadcasting}), fails_wrong),
        "always-equal": ("every function returns an object that equals anything and claims to be a Tensor",
                         s.solved(**always_equal),
                         # Part 5 is the reference's: its tests that need no Part 1 function still pass
                         # (its ProjectionShortcut answers too: ffn_layers and residual_structure call it by name)
                         every - {"block_parts", "block_bad_norm", "plain_structure", "plain_forward",
                                  "train_updates", "deep_plain_stalls", "grad_norms_values"}),
        "locked-cells-deleted": ("the reference solution with every locked code cell (imports, checks, demos) "
                                 "deleted", s.notebook({l: s.filled(l) for p in PART for l in PART[p]}, locked),
                                 set()),
        "missing-solution-cell": ("the reference solution with the residual_stream_norms cell deleted",
                                  s.notebook({l: s.filled(l) for p in PART for l in PART[p]},
                                             lambda c: c["metadata"].get("nbgrader", {}).get("grade_id")
                                             == "residual_stream_norms"), {"stream_norms"}),
        "reads-solutions": ("stubs, plus code that looks for solutions/ on the grading machine and runs it",
                            s.notebook({"residual_stream_norms": s.filled("residual_stream_norms", [
                                "raise NotImplementedError()"], after=READ_SOLUTIONS)}), every),
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


BROADCASTING = dict.fromkeys(["residual_add_no_broadcasting", "residual_add_error_message", "residual_shape_mismatch"],
                             "silent-broadcasting")
HARD_CODED = dict.fromkeys(["chain_one_block", "chain_many_blocks", "chain_alpha", "chain_empty", "split"],
                           "hard-coded-example")
DETACHED = dict.fromkeys(["norms_decay", "norms_depth_100", "norms_random", "norms_plain"], "detached-gradient")
CAUSAL = dict.fromkeys(["block_pre_causal", "block_post_causal"], "missing-causal-mask")
WRONG = {**BROADCASTING, **HARD_CODED, **DETACHED, **CAUSAL}
# sample -> {check name: the misconception id its failure shows}; a failed test not named here shows none
# (a stub, a crash, a hang, a reply of the wrong type).
SHOWN = {"residual-connections": {
    "silent-broadcasting": BROADCASTING,
    "in-place-add": dict.fromkeys(["residual_add_no_mutation", "residual_add_gradients"], "in-place-add"),
    "detached-residual-add": {"residual_add_gradients": "detached-gradient"},
    # the inputs are read back from the grader's own memory: the forged report changes nothing
    "forged-mutation-report": dict.fromkeys(["residual_add_no_mutation", "residual_add_gradients"], "in-place-add"),
    "wraps-encoder-layer": {"block_parts": "block-structure"},
    "oracle-fallback": {"split": "gradient-split"},
    "oracle-table": {"split": "gradient-split"},
    "scaled-shortcut-ignored": dict.fromkeys(["chain_alpha", "norms_decay", "norms_random"], "scaled-shortcut-ignored"),
    "hard-coded-example": HARD_CODED,
    "derivative-at-wrong-point": dict.fromkeys(["chain_many_blocks", "chain_alpha"], "derivative-at-wrong-point"),
    "pre-post-swapped": dict.fromkeys(["block_pre", "block_post", "block_pre_causal", "block_post_causal",
                                       "block_default", "block_pre_identity"], "pre-post-swapped"),
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
    **dict.fromkeys(["eye-projection", "hides-projection-method", "hides-projection-assigned"],
                    {"shortcut_identity": "projection-shortcut"}),
}}
# sample -> the sample it was made from; every other sample is the reference with an edit (full-marks),
# or the release as handed out (untouched-release)
DERIVED_FROM = {"residual-connections": {
    "reads-solutions": "release", "honest-a": "honest-a", "honest-b": "honest-b",
    "copied-honest-a": "honest-a", "renamed-honest-a": "honest-a"}}


def fused_samples() -> dict[str, tuple[str, object, set[str]]]:
    """fused-add-norm: name -> (description, notebook dict, check names of the tests it fails)."""
    s = Samples("fused-add-norm", FUSED_PART)
    part1 = {t.check.__name__ for t in suites.load("fused-add-norm").tests if t.part == 1}
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
                 for label, src in variants.HONEST_FUSED["style-autotune-warps"][1].items()}
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
                           # the add in the wrapper is arithmetic the policy flags: the launch test is held too
                           {"one_launch", "launches_kernel"}),
        "float64-accepted": ("the wrapper has no dtype check: float64 inputs are computed in fp32 and returned as "
                             "float64", s.solved(fused_add_layernorm=wrapper((dtype_check, ""))), {"float64_refused"}),
        "no-weight-check": ("the wrapper does not check the shapes of weight and bias",
                            s.solved(fused_add_layernorm=wrapper((
                                checks[checks.index("if weight.shape"):checks.index("dtypes = ")], ""))),
                            {"weight_shape"}),
        "full-marks": ("the reference solution", s.solved(), set()),
        **honest(s, variants.HONEST_FUSED),
        "autotune-one-pass-variance": ("style-autotune-warps with the variance in one pass, E[h^2] - mean^2: "
                                       "autotuned and still wrong", s.solved(**autotuned_one_pass), {"large_mean"}),
        "forged-launch-trace": ("the torch-only wrapper, with the probe's launch tracer replaced (through "
                                "sys.modules) by one that reports a launch of the kernel",
                                s.solved(fused_add_layernorm=variants.FORGED_TRACE.lstrip() + torch_only),
                                fused | trusting("fused-add-norm")),
        # NumPy has no bfloat16: the half-precision test fails too
        "numpy-wrapper": ("the kernel is written, but the wrapper computes h and y with NumPy",
                          s.solved(fused_add_layernorm=variants.NUMPY_ONLY.lstrip()), fused | {"half_precision"}),
        "numpy-empty-kernel": ("the NumPy wrapper, plus an empty @triton.jit kernel launched once",
                               s.solved(fused_kernel=variants.EMPTY_KERNEL.lstrip(),
                                        fused_add_layernorm=variants.NUMPY_EMPTY_KERNEL.lstrip()),
                               fused | {"half_precision"}),
        **fused_forgeries(s, launch, fused),
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
        "in-place-h": ("the wrapper stores h into x's memory (h = rows_x, a view of x)",
                       s.solved(fused_add_layernorm=wrapper((
                           "h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)",
                           "h, y = rows_x, torch.empty_like(rows_x)"))),
                       {"inputs_untouched"}),
        "no-input-checks": ("the wrapper raises no ValueError: mismatched shapes, widths over 8192, weights of "
                            "the wrong shape and float64 go through",
                            s.solved(fused_add_layernorm=s.filled("fused_add_layernorm", [
                                "n = x.shape[-1]\nrows_x, rows_fx =" + rest])),
                            {"shape_mismatch", "too_wide", "weight_shape", "float64_refused"}),
    }


def fused_forgeries(s: "Samples", launch: str, fused: set[str]) -> dict[str, tuple[str, object, set[str]]]:
    """Fusion shown to the launch tracer but not done by the kernel, each next to its honest twin (TWINS):
    the graded name rebound after its checked def, and a kernel computing through a tl.constexpr object."""
    reference = s.bodies["fused_add_layernorm"][0]
    by_hand = edit(reference, "return h.view(x.shape), y.view(x.shape)\n", variants.BY_HAND.lstrip())
    helper = "def _by_hand(x, fx, weight, bias, eps=1e-5):\n" + textwrap.indent(by_hand, "    ") + "\n\n"
    empty = variants.EMPTY_KERNEL.lstrip()
    decorated = edit(s.filled("fused_add_layernorm"), "def fused_add_layernorm(", "@_replaced_by(_by_hand)\n"
                     "def fused_add_layernorm(")
    through = lambda call, ops: s.solved(
        fused_kernel=variants.CONSTEXPR_ROWS.lstrip().replace("CALL", call),
        fused_add_layernorm=s.filled("fused_add_layernorm", [edit(reference, launch, edit(
            launch, "BLOCK=block,", f"BLOCK=block, OPS={ops}, ARGS=(rows_x, rows_fx, weight, bias, h, y, eps),"))]))
    return {
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
        "constexpr-item-method": ("the kernel calls OPS[0].sum(ARGS), OPS a tl.constexpr tuple holding an object "
                                  "whose sum computes h and y with torch", through("OPS[0].sum(ARGS)", "(ROWS,)"),
                                  fused),
    }


CLASSES = {"residual-connections": residual_samples, "fused-add-norm": fused_samples}

# Written answers, so that formgrader has answers to grade by hand: good ones, a thin one and
# wrong ones. Samples not named here leave "YOUR ANSWER HERE" (nbgrader scores that 0 unseen).
DERIVATION = (
    "Summing $x_{l+1} = x_l + F_l(x_l)$ over $l = 0, \\dots, L-1$ gives $x_L = x_0 + \\sum_l F_l(x_l)$. "
    "Differentiating with respect to $x_0$: $\\partial x_L / \\partial x_0 = I + \\partial/\\partial x_0 "
    "\\sum_l F_l(x_l)$, and the chain rule $\\partial L/\\partial x_0 = \\partial L/\\partial x_L \\cdot "
    "\\partial x_L/\\partial x_0$ gives the formula.\n\n"
    "The identity term hands $\\partial L/\\partial x_L$ to $x_0$ unchanged, whatever the branches do: small "
    "Jacobians only make the sum small, they do not multiply the identity away. The gradient is zero only "
    "if $\\partial L/\\partial x_L$ is zero or the sum's Jacobian cancels the identity exactly along "
    "$\\partial L/\\partial x_L$, i.e. $\\partial L/\\partial x_L \\cdot (I + \\partial/\\partial x_0 \\sum_l F_l) = 0$.")
SCALED = (
    "With $y = 0.5\\,x + F(x)$ each block's Jacobian is $0.5 I + J_l$, and the product formula multiplies "
    "20 of them. When the branches contribute nothing ($J_l = 0$) that is $0.5^{20} I$: about $9.5 \\cdot "
    "10^{-7}$ of the gradient is left. The plot's 0.5 curve is a straight line on the log scale for the same "
    "reason: a constant factor per layer is exponential decay.")
LAYOUT = (
    "Pre-LN, $x + F(\\mathrm{LN}(x))$: the input reaches the output through the addition alone. Post-LN, "
    "$\\mathrm{LN}(x + F(x))$, puts a LayerNorm on the shortcut, so the path is rescaled in every block. "
    "The printed norms grow with depth for Pre-LN (each block adds its branch to the stream) and stay at "
    "8.0 for Post-LN: LayerNorm resets every token to mean 0 and variance 1 over 64 features, a norm of "
    "$\\sqrt{64}$.")
WRITTEN = {
    "full-marks": {"part2-written": DERIVATION, "part3-written": SCALED, "part4-written": LAYOUT},
    "partly-right": {"part2-written": DERIVATION, "part3-written": "It decays because 0.5 is less than 1."},
    "scaled-shortcut-ignored": {"part3-written": "The scaled shortcut is still a shortcut, so the gradient "
                                "survives: after 20 blocks it is still 0.5 of what it was."},
    "pre-post-swapped": {"part4-written": "Post-LN keeps the identity path, because the LayerNorm comes after "
                         "the addition. Both layouts print about the same norms."},
}


def answered(nb: dict, answers: dict[str, str]) -> dict:
    """The notebook with these written-answer cells (grade_id -> text) answered."""
    for cell in nb["cells"]:
        text = answers.get(cell["metadata"].get("nbgrader", {}).get("grade_id"))
        if text is not None:
            cell["source"] = edit("".join(cell["source"]), "YOUR ANSWER HERE", text)
    return nb


def expected_scores(assignment: str, fails: set[str]) -> dict[str, float]:
    """Each hidden test's expected score: 0 if it fails, else its points; a test that needs CUDA is
    expected as graded on a machine without it (course.toml's without_cuda)."""
    tests = suites.load(assignment).tests
    graded = [TestResult(t.name, t.part, 0 if t.check.__name__ in fails else t.points, t.points, "")
              for t in tests if not t.needs_cuda]
    scores = {r.name: r.score for r in graded}
    for t in tests:
        if t.needs_cuda:
            rule = course.load().assignment(assignment).timing.without_cuda
            scores[t.name] = not_run(t.name, t.part, t.points, rule, graded).score
    return {t.name: scores[t.name] for t in tests}


def render() -> dict[str, str]:
    """path under submissions/ -> content, for every file of every sample class."""
    files = {}
    for assignment, make in CLASSES.items():
        checks = {t.check.__name__ for t in suites.load(assignment).tests}
        expected = {}
        for name, (description, nb, fails) in make().items():
            if assignment == "residual-connections" and name in WRITTEN:
                nb = answered(nb, WRITTEN[name])
            unknown = fails - checks
            if unknown:
                raise SystemExit(f"make_samples.py: {assignment}/{name}: no such hidden tests: {sorted(unknown)}")
            files[f"{assignment}/{name}.ipynb"] = nb if isinstance(nb, str) else json.dumps(
                nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
            tests = expected_scores(assignment, fails)
            score = round(sum(tests.values()), 2)
            by_check = {t.check.__name__: t.name for t in suites.load(assignment).tests}
            shown = SHOWN.get(assignment, {}).get(name, {})
            if set(shown) - fails:
                raise SystemExit(f"make_samples.py: {assignment}/{name}: a misconception for a test it passes")
            expected[f"{name}.ipynb"] = {"description": description, "score": int(score) if score == int(score)
                                         else score, "tests": tests,
                                         "derived_from": DERIVED_FROM.get(assignment, {}).get(
                                             name, "release" if name == "untouched-release" else "full-marks"),
                                         "misconceptions": {by_check[c]: m for c, m in sorted(shown.items())}}
        files[f"{assignment}/expected.json"] = json.dumps({"assignment": assignment, "samples": expected},
                                                          indent=1) + "\n"
    return files


def stale(files: dict[str, str]) -> list[str]:
    """Files (under submissions/) that differ from what is on disk, and sample files no longer generated."""
    out = [name for name, text in files.items()
           if not (SUBMISSIONS / name).is_file() or (SUBMISSIONS / name).read_text(encoding="utf-8") != text]
    return out + [str(p.relative_to(SUBMISSIONS)) for a in CLASSES for p in (SUBMISSIONS / a).glob("*.ipynb")
                  if str(p.relative_to(SUBMISSIONS)) not in files]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that the committed files are up to date")
    args = parser.parse_args()
    files = render()
    if args.check:
        problems = stale(files)
        print("\n".join(f"stale: submissions/{p}" for p in problems) or "sample classes are up to date")
        return 1 if problems else 0
    for assignment in CLASSES:
        folder = SUBMISSIONS / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for p in folder.glob("*.ipynb"):
            if f"{assignment}/{p.name}" not in files:
                p.unlink()
    for name, text in files.items():
        (SUBMISSIONS / name).write_text(text, encoding="utf-8")
    for assignment in CLASSES:
        count = sum(name.startswith(f"{assignment}/") and name.endswith(".ipynb") for name in files)
        print(f"wrote {count} notebooks and expected.json to submissions/{assignment}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
