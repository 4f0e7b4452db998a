"""Honest idioms of fused-add-norm: each entry is one solution cell, correct, in a style the static
policy once held or might hold. fused_add_norm.py packs them into a few honest samples (idioms-*) that
must keep full marks with no finding, and tests/test_policy.py checks each entry on its own.

    IDIOMS    [(idioms, grade_id, source), ...]; idioms: the names of the idioms the source uses

Sources are written indented and dedented where they are used.
"""

IDIOMS = [
    # torch.library.wrap_triton, PyTorch's launcher that torch.compile can trace (h17_wrap_triton, once held)
    (("dict-argument-check", "zip-argument-check", "items-loop", "all-over-generator", "set-comprehension",
      "wrap-triton-imported"),
     "fused_add_layernorm", '''
        from torch.library import wrap_triton


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            n = x.shape[-1]
            for name, t in dict(fx=fx).items():
                if t.shape != x.shape:
                    raise ValueError(f"x {tuple(x.shape)} and {name} {tuple(t.shape)} must have the same shape")
            if n > MAX_WIDTH:
                raise ValueError(f"rows of {n} elements are wider than MAX_WIDTH = {MAX_WIDTH}")
            for name, t in zip(("weight", "bias"), (weight, bias)):
                if t.shape != (n,):
                    raise ValueError(f"{name} must have shape ({n},), got {tuple(t.shape)}")
            if not all(t.dtype in DTYPES for t in (x, fx, weight, bias)) or x.dtype != fx.dtype:
                found = {str(t.dtype) for t in (x, fx, weight, bias)}
                raise ValueError(f"x and fx share one dtype, float16, bfloat16 or float32; got {sorted(found)}")
            rows_x, rows_fx = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)
            wrap_triton(fused_add_layernorm_kernel)[(rows_x.shape[0],)](rows_x, rows_fx, weight.contiguous(),
                                                                        bias.contiguous(), h, y, n, eps,
                                                                        BLOCK=triton.next_power_of_2(n))
            return h.view(x.shape), y.view(x.shape)
        '''),
    (("tuple-argument-check", "helper-check-function", "assert-is-tensor", "grid-lambda", "int-cast",
      "wrap-triton-path"),
     "fused_add_layernorm", '''
        def _check(named: tuple, n: int) -> None:
            for name, t in named:
                assert isinstance(t, torch.Tensor), f"{name} must be a tensor"
                if t.dtype not in DTYPES:
                    raise ValueError(f"{name} is {t.dtype}: use float16, bfloat16 or float32")


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            n = int(x.shape[-1])
            if tuple(x.shape) != tuple(fx.shape):
                raise ValueError(f"shapes differ: x {tuple(x.shape)}, fx {tuple(fx.shape)}")
            if n > MAX_WIDTH:
                raise ValueError(f"width {n} is over MAX_WIDTH ({MAX_WIDTH})")
            if tuple(weight.shape) != (n,) or tuple(bias.shape) != (n,):
                raise ValueError(f"weight and bias must be ({n},): got {tuple(weight.shape)}, {tuple(bias.shape)}")
            _check((("x", x), ("fx", fx), ("weight", weight), ("bias", bias)), n)
            if x.dtype != fx.dtype:
                raise ValueError(f"x is {x.dtype} but fx is {fx.dtype}")
            rows_x, rows_fx = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)
            grid = lambda meta: (rows_x.shape[0],)
            torch.library.wrap_triton(fused_add_layernorm_kernel)[grid](rows_x, rows_fx, weight.contiguous(),
                                                                        bias.contiguous(), h, y, n, eps,
                                                                        BLOCK=triton.next_power_of_2(n))
            return h.view(x.shape), y.view(x.shape)
        '''),
    # a typing.NamedTuple result, annotated as Jupyter compiles it (classes, not strings)
    (("typing-namedtuple-result", "black-continuation-operators"), "fused_add_layernorm", '''
        from typing import NamedTuple


        class AddNorm(NamedTuple):
            h: Tensor
            y: Tensor


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> AddNorm:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            n = x.shape[-1]
            if x.shape != fx.shape:
                raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} must have the same shape")
            if n > MAX_WIDTH:
                raise ValueError(f"rows of {n} elements are wider than MAX_WIDTH = {MAX_WIDTH}")
            if weight.shape != (n,) or bias.shape != (n,):
                raise ValueError(f"weight and bias must have shape ({n},), got {tuple(weight.shape)}, "
                                 f"{tuple(bias.shape)}")
            if (
                x.dtype
                != fx.dtype
                or not {t.dtype for t in (x, fx, weight, bias)} <= DTYPES
            ):
                raise ValueError("x and fx share one dtype, float16, bfloat16 or float32; got %s and %s"
                                 % (x.dtype, fx.dtype))
            rows_x, rows_fx = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)
            fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight.contiguous(), bias.contiguous(),
                                                           h, y, n, eps, BLOCK=triton.next_power_of_2(n))
            return AddNorm(h.view(x.shape), y.view(x.shape))
        '''),
    # a sum through tl.reduce with the kernel's own combine function, and parameters annotated with the
    # types Triton reads (the interpreter once folded such a reduction left to right: the mean of a row near
    # 1000 came out off by 0.005; the policy once took tl.constexpr as the only annotation)
    (("combine-function-reduce", "kernel-type-annotations"), "fused_kernel", '''
        @triton.jit
        def _add(a, b):
            return a + b


        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols: int, eps: float,
                                       BLOCK: tl.constexpr):
            """One program per row; sums through tl.reduce(..., _add)."""
            base = tl.program_id(0).to(tl.int64) * n_cols
            lanes = tl.arange(0, BLOCK)
            keep = lanes < n_cols
            h = (tl.load(x_ptr + base + lanes, mask=keep, other=0.0).to(tl.float32)
                 + tl.load(fx_ptr + base + lanes, mask=keep, other=0.0).to(tl.float32))
            tl.store(h_ptr + base + lanes, h.to(h_ptr.dtype.element_ty), mask=keep)
            mean = tl.reduce(h, 0, _add) / n_cols
            diff = tl.where(keep, h - mean, 0.0)
            rstd = 1.0 / tl.sqrt(tl.reduce(diff * diff, 0, _add) / n_cols + eps)
            w = tl.load(w_ptr + lanes, mask=keep, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + lanes, mask=keep, other=0.0).to(tl.float32)
            tl.store(y_ptr + base + lanes, (diff * rstd * w + b).to(y_ptr.dtype.element_ty), mask=keep)
        '''),
    # Welford's (mean, M2, count) per lane, merged across the lanes by a tuple tl.reduce (Chan's formula)
    (("welford-tuple-reduce", "tl-dtype-annotation"), "fused_kernel", '''
        @triton.jit
        def welford_merge(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
            n = n_a + n_b
            delta = mean_b - mean_a
            frac_b = tl.where(n > 0, n_b / tl.where(n > 0, n, 1.0), 0.0)
            return mean_a + delta * frac_b, m2_a + m2_b + delta * delta * n_a * frac_b, n


        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols: tl.int32, eps,
                                       BLOCK: tl.constexpr):
            row = tl.program_id(0).to(tl.int64) * n_cols
            cols = tl.arange(0, BLOCK)
            m = cols < n_cols
            h = tl.load(x_ptr + row + cols, mask=m, other=0.0).to(tl.float32) + \\
                tl.load(fx_ptr + row + cols, mask=m, other=0.0).to(tl.float32)
            tl.store(h_ptr + row + cols, h.to(h_ptr.dtype.element_ty), mask=m)
            count = m.to(tl.float32)
            mean, m2, _ = tl.reduce((tl.where(m, h, 0.0), tl.zeros([BLOCK], dtype=tl.float32), count), 0,
                                    welford_merge)
            rstd = 1.0 / tl.sqrt(m2 / n_cols + eps)
            w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
            tl.store(y_ptr + row + cols, ((h - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=m)
        '''),
    # library decorators given plain data (the wrapper under torch.no_grad(), a cached helper), a warning, and
    # a helper handed the shape (each once flagged: a decorator as a rebinding, warnings.warn as a torch op,
    # the helper's parameter as a tensor)
    (("no-grad-decorator", "lru-cache-helper", "warnings-warn", "shape-helper"), "fused_add_layernorm", '''
        import functools
        import warnings


        @functools.lru_cache(maxsize=None)
        def launch_params(n: int) -> tuple[int, int]:
            block = triton.next_power_of_2(n)
            return block, min(max(block // 256, 1), 16)


        def _contiguous_strides(shape) -> tuple[int, ...]:
            strides, step = [], 1
            for size in reversed(shape):
                strides.append(step)
                step *= max(size, 1)
            return tuple(reversed(strides))


        @torch.no_grad()
        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            n = x.shape[-1]
            if x.shape != fx.shape:
                raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} must have the same shape")
            if n > MAX_WIDTH:
                raise ValueError(f"rows of {n} elements are wider than MAX_WIDTH = {MAX_WIDTH}")
            if weight.shape != (n,) or bias.shape != (n,):
                raise ValueError(f"weight and bias must have shape ({n},), got {tuple(weight.shape)}, "
                                 f"{tuple(bias.shape)}")
            if {x.dtype, fx.dtype, weight.dtype, bias.dtype} - DTYPES or x.dtype != fx.dtype:
                raise ValueError(f"x {x.dtype}, fx {fx.dtype}, weight {weight.dtype}, bias {bias.dtype}: one "
                                 "dtype for x and fx, each float16, bfloat16 or float32")
            if weight.dtype != x.dtype:
                warnings.warn(f"weight is {weight.dtype} and x {x.dtype}: the kernel reads both as fp32")
            h = torch.empty_strided(x.shape, _contiguous_strides(x.shape), dtype=x.dtype, device=x.device)
            y = torch.empty_strided(x.shape, _contiguous_strides(x.shape), dtype=x.dtype, device=x.device)
            block, warps = launch_params(n)
            fused_add_layernorm_kernel[(x.numel() // n,)](x.contiguous(), fx.contiguous(), weight.contiguous(),
                                                          bias.contiguous(), h, y, n, eps, BLOCK=block,
                                                          num_warps=warps)
            return h, y
        '''),
    (("module-class-delegate", "static-check-method", "attribute-on-self", "instance-call",
      "problems-list-check"),
     "fused_add_layernorm", '''
        class FusedAddLayerNorm(torch.nn.Module):
            """The module form: holds eps; forward(x, fx, weight, bias) checks and launches the kernel."""

            def __init__(self, eps: float = 1e-5):
                super().__init__()
                self.eps = eps

            def forward(self, x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor) -> tuple[Tensor, Tensor]:
                n = self._check(x, fx, weight, bias)
                self.rows = x.reshape(-1, n).contiguous()
                fx_rows = fx.reshape(-1, n).contiguous()
                h, y = torch.empty_like(self.rows), torch.empty_like(self.rows)
                fused_add_layernorm_kernel[(self.rows.shape[0],)](self.rows, fx_rows, weight.contiguous(),
                                                                  bias.contiguous(), h, y, n, self.eps,
                                                                  BLOCK=triton.next_power_of_2(n))
                return h.view(x.shape), y.view(x.shape)

            @staticmethod
            def _check(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor) -> int:
                n = x.shape[-1]
                problems = [f"x {tuple(x.shape)} and fx {tuple(fx.shape)} differ in shape"] * (x.shape != fx.shape)
                problems += [f"width {n} is over MAX_WIDTH = {MAX_WIDTH}"] * (n > MAX_WIDTH)
                problems += [f"{name} has shape {tuple(p.shape)}, not ({n},)"
                             for name, p in dict(weight=weight, bias=bias).items() if p.shape != (n,)]
                problems += [f"{name} is {t.dtype}, not float16, bfloat16 or float32"
                             for name, t in dict(x=x, fx=fx, weight=weight, bias=bias).items() if t.dtype not in DTYPES]
                problems += [f"x is {x.dtype} but fx is {fx.dtype}"] * (x.dtype != fx.dtype)
                if problems:
                    raise ValueError("; ".join(problems))
                return n


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch, by the module above."""
            norm = FusedAddLayerNorm(eps)
            return norm(x, fx, weight, bias)
        '''),
    (("autograd-function-apply", "setup-context", "module-level-object", "module-object-attribute"),
     "fused_add_layernorm", '''
        class FusedAddLayerNormFn(torch.autograd.Function):
            """Forward only: apply(x, fx, weight, bias, eps) launches the kernel once."""

            @staticmethod
            def forward(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float):
                n = x.shape[-1]
                x_rows, fx_rows = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
                h = torch.empty_like(x_rows)
                y = torch.empty_like(x_rows)
                fused_add_layernorm_kernel[(x_rows.shape[0],)](x_rows, fx_rows, weight.contiguous(),
                                                               bias.contiguous(), h, y, n, eps,
                                                               BLOCK=triton.next_power_of_2(n))
                return h.view(x.shape), y.view(x.shape)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.eps = inputs[-1]


        class Limits:
            """The checks, as an object built once below."""

            def __init__(self, max_width: int = MAX_WIDTH):
                self.max_width = max_width

            def width(self, x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor) -> int:
                n = x.shape[-1]
                if fx.shape != x.shape:
                    raise ValueError(f"fx is {tuple(fx.shape)}, x is {tuple(x.shape)}: one shape for both")
                if n > self.max_width:
                    raise ValueError(f"a width of {n} is more than MAX_WIDTH = {self.max_width}")
                wrong = [f"{k} {tuple(v.shape)}" for k, v in dict(weight=weight, bias=bias).items() if v.shape != (n,)]
                if wrong:
                    raise ValueError(f"weight and bias are ({n},); got {', '.join(wrong)}")
                kinds = {x.dtype, fx.dtype, weight.dtype, bias.dtype}
                if kinds - DTYPES or x.dtype != fx.dtype:
                    raise ValueError(f"dtypes {sorted(map(str, kinds))}: x and fx alike, each float16, bfloat16 "
                                     "or float32")
                return n


        LIMITS = Limits()


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch, through the Function above."""
            LIMITS.width(x, fx, weight, bias)
            return FusedAddLayerNormFn.apply(x, fx, weight, bias, eps)
        '''),
    (("module-level-dtype-table", "module-level-message-dict", "str-join-message", "str-split-message",
      "size-numel"),
     "fused_add_layernorm", '''
        _ACCEPTED = (torch.float16, torch.bfloat16, torch.float32)   # what the kernel reads and stores
        _NAMES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            n = x.shape[-1]
            problems = []
            if fx.shape != x.shape:
                problems.append(f"x is {tuple(x.shape)} but fx is {tuple(fx.shape)}")
            if n > MAX_WIDTH:
                problems.append(f"a width of {n} is past MAX_WIDTH ({MAX_WIDTH})")
            for label, param in (("weight", weight), ("bias", bias)):
                if param.shape != (n,):
                    problems.append(f"{label} is {tuple(param.shape)}, not ({n},)")
            if any(t.dtype not in _ACCEPTED for t in (x, fx, weight, bias)) or x.dtype != fx.dtype:
                accepted = ", ".join(_NAMES.get(d, str(d).split(".")[-1].rstrip()) for d in _ACCEPTED)
                problems.append(f"dtypes x {x.dtype}, fx {fx.dtype}, weight {weight.dtype}, bias {bias.dtype}: "
                                f"one dtype for x and fx, each one of {accepted} (float64 is refused)")
            if problems:
                raise ValueError("; ".join(problems))
            rows = x.shape.numel() // n
            src, res = x.contiguous(), fx.contiguous()
            h, y = torch.empty_like(src), torch.empty_like(src)
            fused_add_layernorm_kernel[(rows,)](src, res, weight.contiguous(), bias.contiguous(), h, y, n, eps,
                                                BLOCK=triton.next_power_of_2(n))
            return h, y
        '''),
    # h and y allocated in one branch of an if and taken from out= in the other (honest3-fan)
    (("out-buffers-in-a-branch", "optional-tuple-keyword-only"), "fused_add_layernorm", '''
        from typing import Optional, Tuple


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5, *,
                                out: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch; out: optional contiguous (h, y) buffers."""
            n = x.shape[-1]
            if x.shape != fx.shape or n > MAX_WIDTH:
                raise ValueError(f"x has shape {tuple(x.shape)}, fx has shape {tuple(fx.shape)}: they must be equal, "
                                 f"and the width at most MAX_WIDTH = {MAX_WIDTH}")
            for name, p in (("weight", weight), ("bias", bias)):
                if p.shape != (n,):
                    raise ValueError(f"{name} has shape {tuple(p.shape)}; expected ({n},)")
            if any(t.dtype not in DTYPES for t in (x, fx, weight, bias)) or fx.dtype != x.dtype:
                raise ValueError(f"dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}: float16, bfloat16 "
                                 "or float32, with x and fx alike")
            rows = x.numel() // n
            if out is None:
                h = torch.empty((rows, n), dtype=x.dtype, device=x.device)
                y = torch.empty((rows, n), dtype=x.dtype, device=x.device)
            else:
                h, y = out
                for name, t in (("out[0]", h), ("out[1]", y)):
                    if t.shape != x.shape or t.dtype != x.dtype or not t.is_contiguous():
                        raise ValueError(f"{name} must be a contiguous {x.dtype} tensor of shape {tuple(x.shape)}")
            x2, fx2 = x.reshape(rows, n).contiguous(), fx.reshape(rows, n).contiguous()
            fused_add_layernorm_kernel[(rows,)](x2, fx2, weight.contiguous(), bias.contiguous(), h, y, n, eps,
                                                BLOCK=triton.next_power_of_2(n))
            return h.view(x.shape), y.view(x.shape)
        '''),
    # no annotations, eps defaulting to a module-level constant and handed on as float(eps) (honest3-fan)
    (("named-constant-default", "float-of-eps", "kwargs-launch-options"), "fused_add_layernorm", '''
        DEFAULT_EPS = 1e-5


        def fused_add_layernorm(x, fx, weight, bias, eps=DEFAULT_EPS, **launch_options):
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch; launch_options go to the launch."""
            if x.shape != fx.shape:
                raise ValueError("x and fx must have the same shape, got {} and {}".format(tuple(x.shape),
                                                                                         tuple(fx.shape)))
            n = int(x.shape[-1])
            if n > MAX_WIDTH:
                raise ValueError("width {} exceeds MAX_WIDTH ({})".format(n, MAX_WIDTH))
            if tuple(weight.shape) != (n,) or tuple(bias.shape) != (n,):
                raise ValueError("weight {} and bias {}: expected ({},)".format(tuple(weight.shape),
                                                                               tuple(bias.shape), n))
            if any(t.dtype not in DTYPES for t in (x, fx, weight, bias)) or x.dtype != fx.dtype:
                raise ValueError("dtypes {}, {}: float16, bfloat16 or float32, x and fx alike".format(x.dtype,
                                                                                                     fx.dtype))
            x2, fx2 = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(x2), torch.empty_like(x2)
            launch_options.setdefault("num_warps", 4)
            fused_add_layernorm_kernel[(x2.shape[0],)](x2, fx2, weight.contiguous(), bias.contiguous(), h, y, n,
                                                       float(eps), BLOCK=triton.next_power_of_2(n), **launch_options)
            return h.reshape(x.shape), y.reshape(x.shape)
        '''),
    # torch's function forms of the tensor methods a wrapper may call (honest3-fan)
    (("torch-function-forms", "torch-is-floating-point"), "fused_add_layernorm", '''
        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            if x.shape != fx.shape:
                raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} must match")
            n = x.shape[-1]
            if n > MAX_WIDTH:
                raise ValueError(f"width {n} > MAX_WIDTH ({MAX_WIDTH})")
            if weight.shape != (n,) or bias.shape != (n,):
                raise ValueError(f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} must be ({n},)")
            for t in (x, fx, weight, bias):
                if not torch.is_floating_point(t) or t.dtype not in DTYPES:
                    raise ValueError(f"dtype {t.dtype}: only float16, bfloat16 and float32")
            if fx.dtype != x.dtype:
                raise ValueError(f"x is {x.dtype}, fx is {fx.dtype}")
            rows = torch.numel(x) // n
            x2 = torch.reshape(x, (rows, n)).contiguous()
            fx2 = torch.flatten(fx, 0, -2).contiguous() if fx.dim() > 1 else torch.reshape(fx, (1, n)).contiguous()
            h, y = torch.empty_like(x2), torch.empty_like(x2)
            fused_add_layernorm_kernel[(rows,)](x2, fx2, weight.contiguous(), bias.contiguous(), h, y, n, eps,
                                                BLOCK=triton.next_power_of_2(n))
            return torch.reshape(h, x.shape), torch.reshape(y, x.shape)
        '''),
    # a named grid function of META inside the wrapper, a keyword-only option with a default (honest3-fan)
    (("nested-grid-def", "keyword-only-num-warps"), "fused_add_layernorm", '''
        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5, *, num_warps: int | None = None) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch; num_warps overrides the default."""
            N = x.shape[-1]
            if x.shape != fx.shape:
                raise ValueError(f"x.shape {tuple(x.shape)} != fx.shape {tuple(fx.shape)}")
            elif N > MAX_WIDTH:
                raise ValueError(f"N = {N} > MAX_WIDTH = {MAX_WIDTH}")
            elif (weight.shape, bias.shape) != ((N,), (N,)):
                raise ValueError(f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} must be ({N},)")
            if not {x.dtype, weight.dtype, bias.dtype} <= DTYPES or fx.dtype != x.dtype:
                raise ValueError(f"dtypes x={x.dtype}, fx={fx.dtype}, weight={weight.dtype}, bias={bias.dtype}: "
                                 "only float16, bfloat16 and float32, x and fx alike")
            x_, fx_ = x.reshape(-1, N).contiguous(), fx.reshape(-1, N).contiguous()
            M = x_.shape[0]
            h, y = torch.empty_like(x_), torch.empty_like(x_)
            BLOCK = triton.next_power_of_2(N)
            if num_warps is None:
                num_warps = min(max(BLOCK // 256, 1), 16)

            def grid(META):
                return (M,)

            fused_add_layernorm_kernel[grid](x_, fx_, weight.contiguous(), bias.contiguous(), h, y, N, eps,
                                             BLOCK=BLOCK, num_warps=num_warps)
            return h.view(x.shape), y.view(x.shape)
        '''),
    # weight or bias None: ones and zeros allocated in their place, as F.layer_norm reads None (honest3-fan)
    (("optional-affine-ones-zeros",), "fused_add_layernorm", '''
        from typing import Optional


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch; weight None is ones, bias None zeros."""
            *lead, n = x.shape
            if fx.shape != x.shape:
                raise ValueError(f"x and fx shapes differ: {tuple(x.shape)} vs {tuple(fx.shape)}")
            if n > MAX_WIDTH:
                raise ValueError(f"the width {n} is over MAX_WIDTH {MAX_WIDTH} (rows {lead})")
            if x.dtype not in DTYPES or fx.dtype != x.dtype:
                raise ValueError(f"x is {x.dtype}, fx is {fx.dtype}: one of float16, bfloat16 and float32, the same")
            if weight is None:
                weight = torch.ones(n, dtype=x.dtype, device=x.device)
            if bias is None:
                bias = torch.zeros(n, dtype=x.dtype, device=x.device)
            for name, p in (("weight", weight), ("bias", bias)):
                if p.shape != (n,) or p.dtype not in DTYPES:
                    raise ValueError(f"{name} must be ({n},) in float16, bfloat16 or float32, got "
                                     f"{tuple(p.shape)} {p.dtype}")
            x2, fx2 = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(x2), torch.empty_like(x2)
            fused_add_layernorm_kernel[(x2.shape[0],)](x2, fx2, weight.contiguous(), bias.contiguous(), h, y, n,
                                                       eps, BLOCK=triton.next_power_of_2(n))
            return h.reshape(x.shape), y.reshape(x.shape)
        '''),
    # the launcher kernel[grid] kept in a local, then called (honest3-fan); rows by a map of a lambda (honest4-fanp33)
    (("launcher-local", "map-lambda-rows"), "fused_add_layernorm", '''
        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            if x.shape != fx.shape:
                raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} have different shapes")
            width = x.shape[-1] if x.shape[-1] <= MAX_WIDTH else None
            if width is None:
                raise ValueError(f"width {x.shape[-1]} > {MAX_WIDTH} (MAX_WIDTH)")
            if (tuple(weight.shape), tuple(bias.shape)) != ((width,), (width,)):
                raise ValueError(f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} should be ({width},)")
            if any(t.dtype not in DTYPES for t in (x, fx, weight, bias)) or x.dtype != fx.dtype:
                raise ValueError(f"dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}: float16, bfloat16 or "
                                 "float32, with x and fx alike")
            x2, fx2 = map(lambda t: t.reshape(-1, width).contiguous(), (x, fx))
            h, y = torch.empty_like(x2), torch.empty_like(x2)
            launch = fused_add_layernorm_kernel[(x2.shape[0],)]
            launch(x2, fx2, weight.contiguous(), bias.contiguous(), h, y, width, eps, BLOCK=triton.next_power_of_2(width))
            return h.reshape(x.shape), y.reshape(x.shape)
        '''),
    # the kernel under a local name; a classmethod factory; match on the dtype; a nested check def; a lambda
    # bound to a name; one buffer unbound into h and y (honest4: fan10, fanp28, fanp17, fanp23, fanp35, fanp14)
    (("kernel-alias", "classmethod-config", "match-dtype", "nested-check-def", "named-lambda", "unbind-buffer"),
     "fused_add_layernorm", '''
        class LaunchConfig:
            """BLOCK and num_warps for rows of one width."""

            def __init__(self, block: int, num_warps: int):
                self.block, self.num_warps = block, num_warps

            @classmethod
            def for_width(cls, n: int, dtype) -> "LaunchConfig":
                block = triton.next_power_of_2(n)
                match dtype:
                    case torch.float16 | torch.bfloat16:
                        return cls(block, min(max(block // 512, 1), 8))
                    case _:
                        return cls(block, min(max(block // 256, 1), 16))


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            def require(ok: bool, message: str) -> None:
                if not ok:
                    raise ValueError(message)

            n = x.shape[-1]
            require(x.shape == fx.shape, f"x.shape {tuple(x.shape)} and fx.shape {tuple(fx.shape)} must be equal")
            require(n <= MAX_WIDTH, f"the width {n} is above MAX_WIDTH ({MAX_WIDTH})")
            for name, p in (("weight", weight), ("bias", bias)):
                require(p.shape == (n,), f"{name} must be ({n},), got {tuple(p.shape)}")
            match x.dtype:
                case torch.float64:
                    raise ValueError("float64 is refused: the kernel computes in fp32")
                case dtype if dtype not in DTYPES or dtype != fx.dtype:
                    raise ValueError(f"x and fx must share float16, bfloat16 or float32, got {dtype}, {fx.dtype}")
            require(weight.dtype in DTYPES and bias.dtype in DTYPES, f"weight {weight.dtype}, bias {bias.dtype}")
            as_rows = lambda t: t.reshape(-1, n).contiguous()
            xs, fs = as_rows(x), as_rows(fx)
            h, y = torch.empty((2, *xs.shape), device=x.device, dtype=x.dtype).unbind(0)
            cfg = LaunchConfig.for_width(n, x.dtype)
            kernel = fused_add_layernorm_kernel
            kernel[(xs.shape[0],)](xs, fs, weight.contiguous(), bias.contiguous(), h, y, n, eps,
                                   BLOCK=cfg.block, num_warps=cfg.num_warps)
            return h.view(x.shape), y.view(x.shape)
        '''),
    # the launch as a functools.partial; a match on a shape's items; torch.broadcast_shapes; a tuple subclass
    # with item properties as the result (honest5: nb02, nb05, nb12, nb10)
    (("partial-launcher", "match-shape-sequence", "broadcast-shapes", "tuple-subclass-result"),
     "fused_add_layernorm", '''
        import functools


        class HY(tuple):
            """(h, y), also as .h and .y."""
            __slots__ = ()

            @property
            def h(self) -> Tensor:
                return self[0]

            @property
            def y(self) -> Tensor:
                return self[1]


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> HY:
            """(h, y): h = x + fx, y = LayerNorm(h), in one launch."""
            if x.shape != fx.shape or torch.broadcast_shapes(x.shape, fx.shape) != x.shape:
                raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} must have one shape")
            n = x.shape[-1]
            if n > MAX_WIDTH:
                raise ValueError(f"width {n} is above MAX_WIDTH ({MAX_WIDTH})")
            for label, p in (("weight", weight), ("bias", bias)):
                match tuple(p.shape):
                    case (m,) if m == n:
                        pass
                    case other:
                        raise ValueError(f"{label} has shape {other!r}, expected ({n},)")
            if x.dtype not in DTYPES or fx.dtype != x.dtype or weight.dtype not in DTYPES or bias.dtype not in DTYPES:
                raise ValueError(f"dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}: float16, bfloat16 "
                                 "or float32 (x and fx alike)")
            xs, fs = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(xs), torch.empty_like(xs)
            block = triton.next_power_of_2(n)
            launch = functools.partial(fused_add_layernorm_kernel[(xs.shape[0],)], BLOCK=block,
                                       num_warps=min(max(block // 256, 1), 16))
            launch(xs, fs, weight.contiguous(), bias.contiguous(), h, y, n, eps)
            return HY((h.view(x.shape), y.view(x.shape)))
        '''),
    # the configs from a function, as Triton's matmul tutorial writes them; a while loop over column chunks
    # (honest4: fanp37, fanp30)
    (("tutorial-config-function", "while-chunks"), "fused_kernel", '''
        def get_autotune_config():
            """The configs to try: Triton times each on a GPU; the interpreter keeps the first."""
            return [triton.Config({}, num_warps=w) for w in (1, 2, 4, 8)]


        @triton.autotune(configs=get_autotune_config(), key=["n_cols"])
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr):
            """One program per row, walked by while loops (one BLOCK per step): sum, centred squares, normalise."""
            base = tl.program_id(0).to(tl.int64) * n_cols
            offs = tl.arange(0, BLOCK)
            total = 0.0
            start = 0
            while start < n_cols:
                m = start + offs < n_cols
                h = (tl.load(x_ptr + base + start + offs, mask=m, other=0.0).to(tl.float32)
                     + tl.load(fx_ptr + base + start + offs, mask=m, other=0.0).to(tl.float32))
                tl.store(h_ptr + base + start + offs, h.to(h_ptr.dtype.element_ty), mask=m)
                total += tl.sum(h, axis=0)
                start += BLOCK
            mean = total / n_cols
            squares = 0.0
            start = 0
            while start < n_cols:
                m = start + offs < n_cols
                h = (tl.load(x_ptr + base + start + offs, mask=m, other=0.0).to(tl.float32)
                     + tl.load(fx_ptr + base + start + offs, mask=m, other=0.0).to(tl.float32))
                d = tl.where(m, h - mean, 0.0)
                squares += tl.sum(d * d, axis=0)
                start += BLOCK
            rstd = tl.rsqrt(squares / n_cols + eps)
            start = 0
            while start < n_cols:
                m = start + offs < n_cols
                h = (tl.load(x_ptr + base + start + offs, mask=m, other=0.0).to(tl.float32)
                     + tl.load(fx_ptr + base + start + offs, mask=m, other=0.0).to(tl.float32))
                w = tl.load(w_ptr + start + offs, mask=m, other=0.0).to(tl.float32)
                b = tl.load(b_ptr + start + offs, mask=m, other=0.0).to(tl.float32)
                tl.store(y_ptr + base + start + offs, ((h - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=m)
                start += BLOCK
        '''),
    # red team 39: a dtype kept in a module-level constexpr, a parameter's default read from a module-level number,
    # and heuristics of math, of a dtype compared, and of a def of several statements (honest E: c32, c78, c69,
    # c60c, c98; configs over itertools.product: tests/test_policy.py)
    (("dtype-constexpr-global", "default-from-a-constant", "math-heuristic", "dtype-heuristic",
      "if-ladder-heuristic"), "fused_kernel", '''
        import math

        ACC: tl.constexpr = tl.float32
        ROWS_PER_PROGRAM = 1


        def wide_rows(args):
            """Whether a row takes more than one 1024-wide tile."""
            n = args["n_cols"]
            if n <= 1024:
                return False
            return True


        @triton.heuristics({"WIDE": wide_rows, "LOG_N": lambda args: math.ceil(math.log2(args["n_cols"])),
                            "FP32": lambda args: args["x_ptr"].dtype == torch.float32})
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr, WIDE: tl.constexpr, LOG_N: tl.constexpr,
                                       FP32: tl.constexpr, ROWS: tl.constexpr = ROWS_PER_PROGRAM):
            """One program per row, computed in ACC; WIDE, LOG_N and FP32 describe the launch."""
            tl.static_assert(BLOCK >= 1)
            row = tl.program_id(0).to(tl.int64) * ROWS
            cols = tl.arange(0, BLOCK)
            mask = cols < n_cols
            offs = row * n_cols + cols
            h = tl.load(x_ptr + offs, mask=mask, other=0.0).to(ACC) + \\
                tl.load(fx_ptr + offs, mask=mask, other=0.0).to(ACC)
            tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)
            mean = tl.sum(h, axis=0) / n_cols
            centred = tl.where(mask, h - mean, 0.0)
            rstd = tl.rsqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
            b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(ACC)
            tl.store(y_ptr + offs, (centred * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
        '''),
]
