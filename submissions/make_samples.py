"""Write the sample class of residual-connections: notebooks and their expected scores.

    python submissions/make_samples.py            # (re)write submissions/residual-connections/
    python submissions/make_samples.py --check    # exit 1 if the committed files are stale

Every sample starts from the student release (assignments/) and fills its solution
cells the way a student would: with the reference code from solutions/ (the code
between the solution markers), or with a variant that carries one misconception,
a crash, a hang or a cheat. expected.json holds each sample's score per hidden test,
derived from the tests each sample is declared to fail below.
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
sys.path.insert(0, str(ROOT))

from autograder import suites  # noqa: E402  (after the path is set)
from autograder.extract import nbtest  # noqa: E402

ASSIGNMENT = "residual-connections"
OUT = ROOT / "submissions" / ASSIGNMENT
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
RELEASE = ROOT / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
STUB = re.compile(r"^([ \t]*)# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)", re.M)
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?", re.M | re.S)

PART = {1: ["residual_add", "residual", "projection_shortcut", "residual_ffn"],
        2: ["chain_rule_grad", "split_gradient"], 3: ["gradient_norms"],
        4: ["transformer_block", "residual_stream_norms"]}

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
    """Notebooks built from the release, with solution cells filled as a student would."""

    def __init__(self):
        self.release = json.loads(RELEASE.read_text(encoding="utf-8"))
        source = nbtest.read_notebook(SOURCE)
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

    def solved(self, parts=(1, 2, 3, 4), **cells: str) -> dict:
        """Reference code in the given parts' cells, stubs elsewhere; `cells` override single cells."""
        out = {label: self.filled(label) for part in parts for label in PART[part]}
        return self.notebook({**out, **cells})

    def body(self, label: str, index: int, *edits: tuple[str, str]) -> list[str]:
        """The solution's bodies for a cell, one of them edited: (old, new) replacements."""
        bodies = list(self.bodies[label])
        for old, new in edits:
            bodies[index] = edit(bodies[index], old, new)
        return bodies


def samples() -> dict[str, tuple[str, object, set[str]]]:
    """name -> (description, notebook dict or raw text, check names of the tests it fails)."""
    s = Samples()
    part = {p: {t.check.__name__ for t in suites.load(ASSIGNMENT).tests if t.part == p} for p in PART}
    every = set().union(*part.values())
    broadcasting = s.filled("residual_add", ["return x + fx"])
    hard_coded = {"chain_rule_grad": s.filled("chain_rule_grad", ["return 7.0"]),
                  "split_gradient": s.filled("split_gradient", ["return 5.0, 2.0"])}
    no_mask = s.filled("transformer_block", s.body("transformer_block", 1, ("if causal else None", "if False else None")))
    detached = s.filled("gradient_norms", s.body("gradient_norms", 0, (
        "xs.append(alpha * x + branch(x) if shortcut else branch(x))",
        "xs.append((alpha * x + branch(x) if shortcut else branch(x)).detach().requires_grad_(True))")))
    wrong = {"residual_add": broadcasting, **hard_coded, "transformer_block": no_mask, "gradient_norms": detached}
    fails_broadcasting = {"residual_add_no_broadcasting", "residual_add_error_message", "residual_shape_mismatch"}
    fails_hard_coded = {"chain_one_block", "chain_many_blocks", "chain_alpha", "chain_empty", "split"}
    fails_causal = {"block_pre_causal", "block_post_causal"}
    fails_detached = {"norms_decay", "norms_depth_100", "norms_random", "norms_plain"}
    fails_wrong = fails_broadcasting | fails_hard_coded | fails_causal | fails_detached
    uses_residual_add = (part[1] - {"shortcut_identity", "shortcut_projection", "ffn_layers"}) | \
        (part[4] - {"block_parts", "block_bad_norm", "stream_norms"})
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
    return {
        "full-marks": ("the reference solution", s.solved(), set()),
        "untouched-release": ("the release as handed out: every stub still raises NotImplementedError",
                              s.notebook({}), every),
        "partly-right": ("parts 1 and 2 done, parts 3 and 4 still stubs", s.solved(parts=(1, 2)), part[3] | part[4]),
        "silent-broadcasting": ("residual_add returns x + fx without checking the shapes",
                                s.solved(residual_add=broadcasting), fails_broadcasting),
        "in-place-add": ("residual_add checks the shapes, then adds in place (x += fx)",
                         s.solved(residual_add=s.filled("residual_add", s.body(
                             "residual_add", 0, ("return x + fx", "x += fx\nreturn x")))),
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
                         s.solved(**always_equal), every - {"ffn_layers", "block_parts", "block_bad_norm"}),
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
    }


def render() -> dict[str, str]:
    """file name -> content, for every file of the sample class."""
    suite = suites.load(ASSIGNMENT)
    by_check = {t.check.__name__: t for t in suite.tests}
    files, expected = {}, {}
    for name, (description, nb, fails) in samples().items():
        unknown = fails - set(by_check)
        if unknown:
            raise SystemExit(f"make_samples.py: {name}: no such hidden tests: {sorted(unknown)}")
        files[f"{name}.ipynb"] = nb if isinstance(nb, str) else json.dumps(nb, indent=1, sort_keys=True,
                                                                           ensure_ascii=False) + "\n"
        tests = {t.name: 0 if t.check.__name__ in fails else t.points for t in suite.tests}
        expected[f"{name}.ipynb"] = {"description": description, "score": sum(tests.values()), "tests": tests}
    files["expected.json"] = json.dumps({"assignment": ASSIGNMENT, "samples": expected}, indent=1) + "\n"
    return files


def stale(files: dict[str, str]) -> list[str]:
    """Files that differ from what is on disk, and sample files no longer generated."""
    out = [name for name, text in files.items()
           if not (OUT / name).is_file() or (OUT / name).read_text(encoding="utf-8") != text]
    return out + [p.name for p in OUT.glob("*.ipynb") if p.name not in files]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that the committed files are up to date")
    args = parser.parse_args()
    files = render()
    if args.check:
        problems = stale(files)
        print("\n".join(f"stale: submissions/{ASSIGNMENT}/{p}" for p in problems) or "sample class is up to date")
        return 1 if problems else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for p in OUT.glob("*.ipynb"):
        if p.name not in files:
            p.unlink()
    for name, text in files.items():
        (OUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files) - 1} notebooks and expected.json to {OUT.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
