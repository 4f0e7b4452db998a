"""Honest idioms of fused-add-norm: each entry is one solution cell, correct, in a style the static
policy once held or might hold. fused_add_norm.py packs them into a few honest samples (idioms-*) that
must keep full marks with no finding, and tests/test_policy.py checks each entry on its own.

    IDIOMS    [(idioms, grade_id, source), ...]; idioms: the names of the idioms the source uses

Sources are written indented and dedented where they are used.
"""

IDIOMS = [
    (("dict-argument-check", "zip-argument-check", "items-loop", "all-over-generator", "set-comprehension"),
     "fused_add_layernorm", '''
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
            fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight.contiguous(), bias.contiguous(),
                                                           h, y, n, eps, BLOCK=triton.next_power_of_2(n))
            return h.view(x.shape), y.view(x.shape)
        '''),
    (("tuple-argument-check", "helper-check-function", "assert-is-tensor", "grid-lambda", "int-cast"),
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
            fused_add_layernorm_kernel[grid](rows_x, rows_fx, weight.contiguous(), bias.contiguous(), h, y, n, eps,
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
]
