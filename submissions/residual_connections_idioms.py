"""Honest idioms of residual-connections: each entry is one solution cell, correct, in a style the static
policy once held or might hold. residual_connections.py packs them into a few honest samples (idioms-*) that
must keep full marks with no finding, and tests/test_policy.py checks each entry on its own.

    IDIOMS    [(idioms, grade_id, source), ...]; idioms: the names of the idioms the source uses

Sources are written indented and dedented where they are used.
"""

IDIOMS = [
    (("helper-function", "f-string-error", "zip-over-shapes", "generator-in-any"), "residual_add", '''
        def _shape_text(t: Tensor) -> str:
            return "(" + ", ".join(str(n) for n in t.shape) + ")"

        def residual_add(x: Tensor, fx: Tensor) -> Tensor:
            """x + fx, (*) and (*) -> (*)."""
            if x.dim() != fx.dim() or any(a != b for a, b in zip(x.shape, fx.shape)):
                raise ValueError(f"residual_add: x {_shape_text(x)} and fx {_shape_text(fx)} differ")
            return x + fx
        '''),
    (("forward-input-param", "class-name-in-error", "super-init-class-self"), "residual", '''
        class Residual(nn.Module):
            def __init__(self, sublayer: nn.Module):
                super(Residual, self).__init__()
                self.sublayer = sublayer

            def forward(self, input: Tensor) -> Tensor:
                out = self.sublayer(input)
                if out.shape != input.shape:
                    raise ValueError(f"{self.__class__.__name__}: the sublayer maps {tuple(input.shape)} to "
                                     f"{tuple(out.shape)}")
                return residual_add(input, out)
        '''),
    (("conditional-submodule", "nn-module-init-call", "type-name-in-repr"), "projection_shortcut", '''
        class ProjectionShortcut(nn.Module):
            def __init__(self, d_in: int, d_out: int):
                nn.Module.__init__(self)
                self.d_in, self.d_out = d_in, d_out
                if d_in != d_out:
                    self.proj = nn.Linear(d_in, d_out, bias=False)

            def forward(self, x: Tensor) -> Tensor:
                return self.proj(x) if self.d_in != self.d_out else x

            def extra_repr(self) -> str:
                return f"{type(self).__qualname__}: {self.d_in} -> {self.d_out}"
        '''),
    (("ordered-dict-sequential", "collections-import", "keyword-arguments"), "residual_ffn", '''
        from collections import OrderedDict

        class ResidualFFN(nn.Module):
            def __init__(self, d_in: int, d_out: int, expansion: int = 4):
                super().__init__()
                width = expansion * d_out
                self.shortcut = ProjectionShortcut(d_in=d_in, d_out=d_out)
                self.ffn = nn.Sequential(OrderedDict([("up", nn.Linear(d_in, width)), ("act", nn.GELU()),
                                                      ("down", nn.Linear(width, d_out))]))

            def forward(self, x: Tensor) -> Tensor:
                return residual_add(self.shortcut(x), self.ffn(x))
        '''),
    (("enumerate-loop", "augmented-assignment", "early-return"), "chain_rule_grad", '''
        def chain_rule_grad(x0: float, branches: list, upstream: float, alpha: float = 1.0) -> float:
            if not branches:
                return upstream
            x, grad = x0, upstream
            for i, (f, df) in enumerate(branches):
                grad *= alpha + df(x)
                x = alpha * x + f(x)
            return grad
        '''),
    (("lambda", "tuple-return-annotation", "math-module"), "split_gradient", '''
        def split_gradient(x0: float, dF, upstream: float) -> tuple[float, float]:
            share = lambda slope: upstream * slope
            return share(math.copysign(1.0, 1.0)), share(dF(x0))
        '''),
    (("list-comprehension-autograd", "torch-stack", "assert-statement"), "gradient_norms", '''
        def gradient_norms(x0: Tensor, branches: list, alpha: float = 1.0, shortcut: bool = True) -> Tensor:
            xs = [x0.detach().clone().requires_grad_(True)]
            for branch in branches:
                xs.append(alpha * xs[-1] + branch(xs[-1]) if shortcut else branch(xs[-1]))
            assert len(xs) == len(branches) + 1
            if len(xs) > 1 and xs[-1].requires_grad:
                grads = list(torch.autograd.grad(xs[-1].sum(), xs[:-1], allow_unused=True,
                                                 materialize_grads=True))
            else:
                grads = [torch.zeros_like(x) for x in xs[:-1]]
            norms = torch.stack([g.double().norm() for g in grads] + [torch.ones_like(xs[-1]).double().norm()])
            return norms / norms[-1]
        '''),
    (("getattr-computed-on-self", "setattr-computed-on-self", "for-over-literal-names", "fstring-attribute-name",
      "module-dict"), "transformer_block", '''
        class TransformerBlock(nn.Module):
            def __init__(self, d_model: int, n_heads: int, norm: str = "pre"):
                super().__init__()
                if norm not in ("pre", "post"):
                    raise ValueError(f"{type(self).__name__}: norm must be 'pre' or 'post', not {norm!r}")
                self.norm = norm
                self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
                for i in (1, 2):
                    setattr(self, f"ln{i}", nn.LayerNorm(d_model))
                for name in ("ffn",):
                    setattr(self, name, ResidualFFN(d_model, d_model).ffn)
                self.extras = nn.ModuleDict()

            def sublayer(self, i: int, a: Tensor, mask) -> Tensor:
                if i == 1:
                    return self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
                return getattr(self, "ffn")(a)

            def forward(self, input: Tensor, causal: bool = False) -> Tensor:
                T = input.shape[1]
                mask = torch.ones(T, T, dtype=torch.bool, device=input.device).triu(1) if causal else None
                h = input
                for i in (1, 2):
                    norm = getattr(self, f"ln{i}")
                    if self.norm == "pre":
                        h = residual_add(h, self.sublayer(i, norm(h), mask))
                    else:
                        h = norm(residual_add(h, self.sublayer(i, h, mask)))
                return h
        '''),
    (("torch-no-grad-decorator", "list-append-loop"), "residual_stream_norms", '''
        @torch.no_grad()
        def residual_stream_norms(blocks, x: Tensor) -> list:
            out = [x.norm(dim=-1).mean().item()]
            for block in blocks:
                x = block(x)
                out.append(x.norm(dim=-1).mean().item())
            return out
        '''),
    (("custom-init-loop", "isinstance-check", "einsum"), "plain_mlp", '''
        class PlainBlock(nn.Module):
            def __init__(self, d_in: int, d_out: int):
                super().__init__()
                self.ln = nn.LayerNorm(d_in)
                self.ffn = nn.Sequential(nn.Linear(d_in, d_out), nn.GELU(), nn.Linear(d_out, d_out))
                for m in self.ffn:
                    if isinstance(m, nn.Linear):
                        nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5))

            def forward(self, x: Tensor) -> Tensor:
                first, act, last = self.ffn
                h = act(torch.einsum("...i,oi->...o", self.ln(x), first.weight) + first.bias)
                return last(h)


        def plain_mlp(d_in: int, width: int, d_out: int, depth: int) -> nn.Sequential:
            layers = []
            for l in range(depth):
                layers.append(PlainBlock(width if l else d_in, width))
            layers += [nn.LayerNorm(width), nn.Linear(width, d_out)]
            return nn.Sequential(*layers)
        '''),
    (("dataclass-config", "functools-partial", "ternary-expression"), "residual_mlp", '''
        from dataclasses import dataclass
        from functools import partial

        @dataclass
        class _Scales:
            alpha: float = 1.0
            branch_scale: float = 1.0


        class ResidualBlock(nn.Module):
            def __init__(self, d_in: int, d_out: int, alpha: float = 1.0, branch_scale: float = 1.0):
                super().__init__()
                self.scales = _Scales(alpha, branch_scale)
                self.ln = nn.LayerNorm(d_in)
                self.shortcut = ProjectionShortcut(d_in, d_out)
                self.ffn = ResidualFFN(d_in, d_out, expansion=1).ffn

            @property
            def alpha(self) -> float:
                return self.scales.alpha

            def forward(self, x: Tensor) -> Tensor:
                return residual_add(self.alpha * self.shortcut(x), self.scales.branch_scale * self.ffn(self.ln(x)))


        def residual_mlp(d_in, width, d_out, depth, alpha=1.0, branch_scale=1.0, zero_init=False):
            block = partial(ResidualBlock, alpha=alpha, branch_scale=branch_scale)
            blocks = [block(d_in if l == 0 else width, width) for l in range(depth)]
            for b in blocks if zero_init else []:
                nn.init.zeros_(b.ffn[2].weight)
                nn.init.zeros_(b.ffn[2].bias)
            return nn.Sequential(*blocks, nn.LayerNorm(width), nn.Linear(width, d_out))
        '''),
    (("optimizer-step", "zero-grad", "float-of-loss", "global-seed"), "train", '''
        def train(model: nn.Module, X: Tensor, y: Tensor, steps: int, lr: float = 0.05, batch: int = 128,
                  seed: int = 0) -> list:
            torch.manual_seed(seed)     # the global generator, seeded: the same batches as a seeded Generator
            opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
            losses = []
            for _ in range(steps):
                idx = torch.randperm(len(X))[:batch]
                opt.zero_grad(set_to_none=False)
                for p in model.parameters():
                    if p.grad is None:
                        p.grad = torch.zeros_like(p)
                loss = F.cross_entropy(model(X[idx]), y[idx])
                loss.backward()
                opt.step()
                losses.append(float(loss))
            return losses
        '''),
    (("hook-free-loop", "dict-of-inputs", "walrus"), "grad_norms", '''
        def grad_norms(model: nn.Sequential, X: Tensor, y: Tensor, depth: int) -> list:
            inputs = {}
            h = X.detach().requires_grad_(True)
            for l, layer in enumerate(model):
                if l <= depth:
                    inputs[l] = h
                h = layer(h)
            if (n := len(inputs)) != depth + 1:
                raise ValueError(f"the model has {n} layers before the head, expected {depth + 1}")
            grads = torch.autograd.grad(F.cross_entropy(h, y), list(inputs.values()))
            return [g.norm().item() for g in grads]
        '''),
    # torch's anomaly mode records every op's stack through traceback, from C++ right below the cell: torch's doing
    (("anomaly-mode-scoped", "optimizer-param-groups"), "train", '''
        def train(model: nn.Module, X: Tensor, y: Tensor, steps: int, lr: float = 0.05, batch: int = 128,
                  seed: int = 0) -> list:
            opt = torch.optim.SGD([{"params": list(model.parameters())}], lr=lr, momentum=0.9)
            gen = torch.Generator().manual_seed(seed)
            losses = []
            for _ in range(steps):
                idx = torch.randperm(len(X), generator=gen)[:batch]
                with torch.autograd.detect_anomaly(check_nan=True):   # stop where a NaN first appears
                    loss = F.cross_entropy(model(X[idx]), y[idx]) * 1.0
                    opt.zero_grad()
                    loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses
        '''),
    # how Jupyter reads a cell: Black breaks long lines before an operator (a continuation line that
    # starts with `%` or `!=` is Python, not a magic), and a cell's own __future__ import is honoured
    (("black-continuation-lines", "percent-format-continuation", "not-equal-continuation",
      "future-annotations"), "residual_add", '''
        from __future__ import annotations


        def residual_add(x: Tensor, fx: Tensor) -> Tensor:
            """x + fx, (*) and (*) -> (*)."""
            if (
                x.shape
                != fx.shape
            ):
                raise ValueError(
                    "residual_add: x has shape %s but fx has shape %s"
                    % (tuple(x.shape), tuple(fx.shape))
                )
            return x + fx
        '''),
    (("namedtuple-result",), "split_gradient", '''
        import collections

        GradientSplit = collections.namedtuple("GradientSplit", ["identity", "branch"])


        def split_gradient(x0: float, dF, upstream: float) -> tuple:
            """(identity path's share, branch's share) of dL/dx0."""
            return GradientSplit(upstream * 1.0, upstream * dF(x0))
        '''),
    (("frozen-dataclass-compared-in-forward",), "residual", '''
        from dataclasses import dataclass

        @dataclass(frozen=True)
        class _Shape:
            dims: tuple

            @classmethod
            def of(cls, t: Tensor) -> "_Shape":
                return cls(tuple(t.shape))


        class Residual(nn.Module):
            def __init__(self, sublayer: nn.Module):
                super().__init__()
                self.sublayer = sublayer

            def forward(self, x: Tensor) -> Tensor:
                out = self.sublayer(x)
                if _Shape.of(out) != _Shape.of(x):      # the __eq__ dataclasses generated, run on every call
                    raise ValueError(f"Residual: the sublayer maps {_Shape.of(x).dims} to {_Shape.of(out).dims}")
                return residual_add(x, out)
        '''),
    # compiled functions, as torch's docs write them: the grader and pytest run them uncompiled
    (("torch-compile-decorator", "torch-compile-call", "torch-jit-script"), "residual_stream_norms", '''
        @torch.jit.script
        def _token_norms(x: Tensor) -> Tensor:
            return (x * x).sum(-1).sqrt()


        def _mean(t: Tensor) -> Tensor:
            return t.mean()


        _compiled_mean = torch.compile(_mean, fullgraph=True)


        @torch.compile(dynamic=True)
        @torch.no_grad()
        def residual_stream_norms(blocks, x: Tensor) -> list:
            """The mean per-token L2 norm of x before the blocks and after each: len(blocks) + 1 floats."""
            norms = [_compiled_mean(_token_norms(x)).item()]
            for block in blocks:
                x = block(x)
                norms.append(_compiled_mean(_token_norms(x)).item())
            return norms
        '''),
    # namedtuple's own API, public though it starts with an underscore: a running state updated with _replace,
    # built with _make, rows turned into dicts with _asdict for a table printed by hand
    (("namedtuple-replace-state", "namedtuple-make"), "chain_rule_grad", '''
        from collections import namedtuple

        Carry = namedtuple("Carry", "x grad")


        def chain_rule_grad(x0: float, branches: list, upstream: float, alpha: float = 1.0) -> float:
            state = Carry._make([x0, upstream])
            for f, df in branches:
                state = state._replace(x=alpha * state.x + f(state.x), grad=state.grad * (alpha + df(state.x)))
            return state.grad
        '''),
    # PyTorch's reproducibility notes: its backends' switches set to a literal are configuration, not a patch
    (("torch-backends-switches",), "depth_sweep", '''
        torch.backends.cudnn.deterministic = True   # every run of the sweep repeats exactly
        torch.backends.cudnn.benchmark = False


        def depth_sweep(X, y, depths, kinds, steps, seeds=(0,), width=64):
            results = {}
            for kind, build in kinds.items():
                for depth in depths:
                    runs = []
                    for seed in seeds:
                        torch.manual_seed(seed)
                        runs.append(train(build(X.shape[1], width, int(y.max()) + 1, depth), X, y, steps, seed=seed))
                    results[(kind, depth)] = runs
            return results
        '''),
    (("namedtuple-asdict-rows", "namedtuple-fields", "typing-namedtuple-record"), "depth_sweep", '''
        from typing import NamedTuple


        class Run(NamedTuple):
            kind: str
            depth: int
            losses: list


        def depth_sweep(X, y, depths, kinds, steps, seeds=(0,), width=64) -> dict:
            rows = []
            for kind, build in kinds.items():
                for depth in depths:
                    for seed in seeds:
                        torch.manual_seed(seed)
                        model = build(X.shape[1], width, int(y.max()) + 1, depth)
                        rows.append(Run(kind, depth, train(model, X, y, steps, seed=seed)))
            print(" | ".join(Run._fields))
            table = {}
            for row in map(Run._asdict, rows):
                table.setdefault((row["kind"], row["depth"]), []).append(row["losses"])
            return table
        '''),
    # help() on an API while writing the code that calls it, left in the solution cell (it prints the docs)
    (("help-on-a-library-class",), "transformer_block", '''
        help(nn.MultiheadAttention)      # which arguments does forward take?


        class TransformerBlock(nn.Module):
            def __init__(self, d_model: int, n_heads: int, norm: str = "pre"):
                super().__init__()
                if norm not in ("pre", "post"):
                    raise ValueError(f"norm must be 'pre' or 'post', not {norm!r}")
                self.norm = norm
                self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
                self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
                self.ffn = ResidualFFN(d_model, d_model).ffn

            def forward(self, x: Tensor, causal: bool = False) -> Tensor:
                T = x.shape[1]
                mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1) if causal else None
                attend = lambda h: self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
                if self.norm == "pre":
                    h = residual_add(x, attend(self.ln1(x)))
                    return residual_add(h, self.ffn(self.ln2(h)))
                h = self.ln1(residual_add(x, attend(x)))
                return self.ln2(residual_add(h, self.ffn(h)))
        '''),
    # a debug print of a function's locals(), left in behind a flag that defaults to off
    (("locals-debug-print",), "grad_norms", '''
        def grad_norms(model: nn.Sequential, X: Tensor, y: Tensor, depth: int, verbose: bool = False) -> list:
            h = X.detach().clone().requires_grad_(True)
            inputs = []
            for l, layer in enumerate(model):
                if l <= depth:
                    inputs.append(h)
                h = layer(h)
            loss = F.cross_entropy(h, y)
            if verbose:
                print("grad_norms:", locals())
            return [g.norm().item() for g in torch.autograd.grad(loss, inputs)]
        '''),
]
