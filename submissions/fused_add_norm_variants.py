"""Solution-cell sources of the fused-add-norm sample class (fused_add_norm.py pastes them).

    STYLES                 name -> (description, {grade_id: cell source}): honest variants
    the sources below      forgeries of the launch the grader traces

Every honest variant is a correct solution written differently from the reference (other kernel
block sizes and launch styles): each must keep full marks and trip no rule of the static policy.
Each forgery is the code of a sample that tries to earn points its honest twin does not
(docs/security.md). Sources are written indented and dedented where they are used.
"""
from samplekit import PROBE, tried

# ============================================================ honest variants: full marks, no rule tripped

STYLES = {
    "style-fixed-warps-min-block": ("fixed warps, minimum BLOCK, rsqrt spelled out", dict(fused_kernel='''
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr):
            """One program per row."""
            row = tl.program_id(axis=0)
            cols = tl.arange(0, BLOCK)
            mask = cols < n_cols
            base = row.to(tl.int64) * n_cols
            h = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32) + \\
                tl.load(fx_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(h_ptr + base + cols, h.to(h_ptr.dtype.element_ty), mask=mask)
            mean = tl.sum(h, axis=0) / n_cols
            d = tl.where(mask, h - mean, 0.0)
            inv = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
            w = tl.load(w_ptr + cols, mask=mask, other=1.0).to(tl.float32)
            b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_ptr + base + cols, (d * inv * w + b).to(y_ptr.dtype.element_ty), mask=mask)
        ''', fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            if x.shape != fx.shape:
                raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} differ")
            n = x.shape[-1]
            if n > MAX_WIDTH:
                raise ValueError(f"width {n} is over {MAX_WIDTH}")
            for name, t in (("weight", weight), ("bias", bias)):
                if tuple(t.shape) != (n,):
                    raise ValueError(f"{name} has shape {tuple(t.shape)}, expected ({n},)")
            if x.dtype not in (torch.float16, torch.bfloat16, torch.float32) or fx.dtype != x.dtype:
                raise ValueError(f"unsupported dtypes {x.dtype} and {fx.dtype}: use float16, bfloat16 or float32")
            x2, fx2 = x.contiguous().view(-1, n), fx.contiguous().view(-1, n)
            h = torch.empty_like(x2)
            y = torch.empty_like(x2)
            fused_add_layernorm_kernel[(x2.shape[0],)](x2, fx2, weight, bias, h, y, n, eps,
                                                       BLOCK=max(triton.next_power_of_2(n), 16), num_warps=4)
            return h.view_as(x), y.view_as(x)
        ''')),
    "style-jit-helper-grid-lambda": ("helper functions, grid lambda, math.prod, tl.math.rsqrt", dict(fused_kernel='''
        @triton.jit
        def _row_stats(h, mask, n_cols):
            mean = tl.sum(h, axis=0) / n_cols
            centred = tl.where(mask, h - mean, 0.0)
            return centred, tl.sum(centred * centred, axis=0) / n_cols

        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr):
            offs = tl.program_id(0).to(tl.int64) * n_cols + tl.arange(0, BLOCK)
            mask = tl.arange(0, BLOCK) < n_cols
            h = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) + tl.load(fx_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)
            centred, var = _row_stats(h, mask, n_cols)
            cols = tl.arange(0, BLOCK)
            y = centred * tl.math.rsqrt(var + eps) * tl.load(w_ptr + cols, mask=mask).to(tl.float32) \\
                + tl.load(b_ptr + cols, mask=mask).to(tl.float32)
            tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
        ''', fused_add_layernorm='''
        import math


        def _rows(t: Tensor, n: int) -> Tensor:
            return t.reshape(-1, n).contiguous()

        def _check(x: Tensor, fx: Tensor, weight: Tensor) -> int:
            if tuple(x.shape) != tuple(fx.shape):
                raise ValueError("x has shape {} but fx has shape {}".format(tuple(x.shape), tuple(fx.shape)))
            if x.shape[-1] > MAX_WIDTH:
                raise ValueError(f"rows of {x.shape[-1]} are wider than MAX_WIDTH = {MAX_WIDTH}")
            if weight.shape != (x.shape[-1],):
                raise ValueError(f"weight must be ({x.shape[-1]},), not {tuple(weight.shape)}")
            if not {x.dtype, fx.dtype} <= {torch.float16, torch.bfloat16, torch.float32} or x.dtype != fx.dtype:
                raise ValueError(f"x is {x.dtype} and fx {fx.dtype}; the kernel takes one of fp16, bf16, fp32")
            return x.shape[-1]

        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5):
            n = _check(x, fx, weight)
            if bias.shape != (n,):
                raise ValueError(f"bias must be ({n},), not {tuple(bias.shape)}")
            n_rows = math.prod(x.shape[:-1])
            rx, rfx = _rows(x, n), _rows(fx, n)
            h, y = (torch.empty_like(rx) for _ in range(2))
            grid = lambda meta: (n_rows,)
            fused_add_layernorm_kernel[grid](rx, rfx, weight.contiguous(), bias.contiguous(), h, y, n, eps,
                                             BLOCK=triton.next_power_of_2(n))
            return h.reshape(x.shape), y.reshape(x.shape)
        ''')),
    "style-chunked-block-1024": ("a loop over chunks of at most 1024 columns, three passes", dict(fused_kernel='''
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr):
            row = tl.program_id(0).to(tl.int64)
            total = tl.zeros([BLOCK], dtype=tl.float32)
            for start in range(0, n_cols, BLOCK):
                cols = start + tl.arange(0, BLOCK)
                m = cols < n_cols
                h = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32) + \\
                    tl.load(fx_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32)
                tl.store(h_ptr + row * n_cols + cols, h.to(h_ptr.dtype.element_ty), mask=m)
                total += h
            mean = tl.sum(total, axis=0) / n_cols
            sq = tl.zeros([BLOCK], dtype=tl.float32)
            for start in tl.range(0, n_cols, BLOCK):
                cols = start + tl.arange(0, BLOCK)
                m = cols < n_cols
                h = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32) + \\
                    tl.load(fx_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32)
                c = tl.where(m, h - mean, 0.0)
                sq += c * c
            rstd = tl.rsqrt(tl.sum(sq, axis=0) / n_cols + eps)
            for start in tl.static_range(0, 1):
                pass
            for start in range(0, n_cols, BLOCK):
                cols = start + tl.arange(0, BLOCK)
                m = cols < n_cols
                c = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32) + \\
                    tl.load(fx_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32) - mean
                w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
                b = tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
                tl.store(y_ptr + row * n_cols + cols, (c * rstd * w + b).to(y_ptr.dtype.element_ty), mask=m)
        ''', fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps: float = 1e-5):
            n = x.shape[-1]
            if x.shape != fx.shape or n > MAX_WIDTH:
                raise ValueError(f"need equal shapes and width <= {MAX_WIDTH}: x {tuple(x.shape)}, fx {tuple(fx.shape)}")
            if weight.shape != bias.shape or weight.shape != (n,):
                raise ValueError(f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} must both be ({n},)")
            if x.dtype == torch.float64 or x.dtype != fx.dtype:
                raise ValueError(f"x {x.dtype} and fx {fx.dtype}: float64 is refused (the kernel computes in fp32)")
            x2, fx2 = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(x2), torch.empty_like(x2)
            fused_add_layernorm_kernel[(x2.shape[0],)](x2, fx2, weight, bias, h, y, n, eps,
                                                       BLOCK=min(triton.next_power_of_2(n), 1024))
            return h.view(x.shape), y.view(x.shape)
        ''')),
    "style-heuristics-block": ("heuristics for BLOCK, strides passed, launch in if/else", dict(fused_kernel='''
        @triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])})
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr, stride: tl.constexpr = 0):
            r = tl.program_id(0)
            c = tl.arange(0, BLOCK)
            ok = c < n_cols
            at = r * n_cols + c
            h = tl.load(x_ptr + at, mask=ok, other=0.).to(tl.float32) + tl.load(fx_ptr + at, mask=ok, other=0.).to(tl.float32)
            tl.store(h_ptr + at, h.to(h_ptr.dtype.element_ty), mask=ok)
            mu = tl.sum(h, 0) / n_cols
            dev = tl.where(ok, h - mu, 0.)
            y = dev * tl.rsqrt(tl.sum(dev * dev, 0) / n_cols + eps)
            y = y * tl.load(w_ptr + c, mask=ok).to(tl.float32) + tl.load(b_ptr + c, mask=ok).to(tl.float32)
            tl.store(y_ptr + at, tl.cast(y, y_ptr.dtype.element_ty), mask=ok)
        ''', fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            if x.shape != fx.shape:
                raise ValueError("x and fx shapes differ: %s vs %s" % (tuple(x.shape), tuple(fx.shape)))
            n = x.size(-1)
            if n > MAX_WIDTH:
                raise ValueError(f"width {n} > {MAX_WIDTH}")
            if weight.shape != (n,) or bias.shape != (n,):
                raise ValueError("weight and bias need shape (%d,), got %s and %s" % (n, tuple(weight.shape), tuple(bias.shape)))
            if str(x.dtype) not in ("torch.float16", "torch.bfloat16", "torch.float32") or fx.dtype != x.dtype:
                raise ValueError("dtype %s / %s not supported (fp16, bf16, fp32)" % (x.dtype, fx.dtype))
            a, b = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(a), torch.empty(a.shape, dtype=a.dtype, device=a.device)
            rows = a.shape[0]
            if n >= 2048:
                fused_add_layernorm_kernel[(rows,)](a, b, weight, bias, h, y, n, eps, num_warps=8)
            else:
                fused_add_layernorm_kernel[(rows,)](a, b, weight, bias, h, y, n, eps, num_warps=2)
            return h.view(x.shape), y.view(x.shape)
        ''')),
    # honest round 10's fan_17 and fan_18: exceptions raised from a table, typing.cast
    "style-raised-from-a-table": ("refusals raised from a list of (failed, error, message), typing.cast",
                                  dict(fused_add_layernorm='''
        import typing


        class ShapeMismatch(ValueError):
            """An argument of the wrong shape."""


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5):
            n = x.shape[-1]
            problems = [
                (x.shape != fx.shape, ShapeMismatch, f"x {tuple(x.shape)} and fx {tuple(fx.shape)} differ"),
                (n > MAX_WIDTH, ValueError, f"width {n} is over {MAX_WIDTH}"),
                (weight.shape != (n,) or bias.shape != (n,), ShapeMismatch,
                 f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} must be ({n},)"),
                (x.dtype not in DTYPES or fx.dtype != x.dtype, ValueError, f"dtypes {x.dtype} and {fx.dtype}"),
                (weight.dtype not in DTYPES or bias.dtype not in DTYPES, ValueError, f"weight {weight.dtype}"),
            ]
            for failed, error, message in problems:
                if failed:
                    raise error(message)
            rows_x = typing.cast(Tensor, x.reshape(-1, n).contiguous())
            rows_fx = typing.cast(Tensor, fx.reshape(-1, n).contiguous())
            h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)
            block = triton.next_power_of_2(n)
            fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight.contiguous(), bias.contiguous(),
                                                           h, y, n, eps, BLOCK=block,
                                                           num_warps=min(max(block // 256, 1), 16))
            return h.view(x.shape), y.view(x.shape)
        ''')),
    # honest round 11's fan_15, fan_22, fan_23 and fan_42: a predicate lambda, a table of defaults copied, an
    # exception class taken from a table, an item of a NamedTuple of constants
    "style-helper-predicates-and-tables": ("a predicate lambda, defaults copied from a table, an exception class "
                                           "from a table, a NamedTuple's item", dict(fused_add_layernorm='''
        from typing import NamedTuple


        class Limits(NamedTuple):
            max_warps: int = 16


        LIMITS = Limits()
        LAUNCH_DEFAULTS = {"num_warps": 4}
        ERRORS = {"shape": ValueError, "dtype": ValueError}


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5):
            supported = lambda t: t.dtype in DTYPES
            n = x.shape[-1]
            if x.shape != fx.shape:
                raise ERRORS["shape"](f"x {tuple(x.shape)} and fx {tuple(fx.shape)} differ")
            if n > MAX_WIDTH:
                raise ERRORS["shape"](f"width {n} is over {MAX_WIDTH}")
            if weight.shape != (n,) or bias.shape != (n,):
                raise ERRORS["shape"](f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} must be ({n},)")
            if not all(supported(t) for t in (x, fx, weight, bias)) or fx.dtype != x.dtype:
                raise ERRORS["dtype"](f"dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}")
            rows_x, rows_fx = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)
            block = triton.next_power_of_2(n)
            options = dict(LAUNCH_DEFAULTS)
            options["num_warps"] = min(max(block // 256, 1), LIMITS[0])
            fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight.contiguous(), bias.contiguous(),
                                                           h, y, n, eps, BLOCK=block, **options)
            return h.view(x.shape), y.view(x.shape)
        ''')),
    # honest round 12's fan_03, fan_06, fan_12 and p17: an exception class of two bases, a width bound by a match,
    # constants built by builtins and a comprehension, a fold of sizes, a kernel from a table
    "style-tables-captures-and-folds": ("constants built by frozenset, dict(zip) and a comprehension, an exception "
                                        "of two bases, a match capture, functools.reduce, a kernel from a table",
                                        dict(fused_add_layernorm='''
        import functools

        ACCEPTED = frozenset({torch.float16, torch.bfloat16, torch.float32})
        WARPS = dict(zip((256, 512, 1024, 2048, 4096, 8192), (1, 2, 4, 8, 16, 16)))
        SMALL_WARPS = {2 ** k: 1 for k in range(8)}
        KERNELS = {"rows": fused_add_layernorm_kernel}


        class AddNormError(ValueError):
            pass


        class DtypeError(AddNormError, TypeError):
            pass


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5):
            match tuple(x.shape):
                case (*_, n):
                    pass
            if x.shape != fx.shape:
                raise AddNormError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} differ")
            if n > MAX_WIDTH:
                raise AddNormError(f"width {n} is over {MAX_WIDTH}")
            if weight.shape != (n,) or bias.shape != (n,):
                raise AddNormError(f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} must be ({n},)")
            if any(t.dtype not in ACCEPTED for t in (x, fx, weight, bias)) or fx.dtype != x.dtype:
                raise DtypeError(f"dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}: use one of float16, "
                                 "bfloat16 and float32")
            rows = functools.reduce(lambda a, b: a * b, x.shape[:-1], 1)
            rows_x, rows_fx = x.reshape(rows, n).contiguous(), fx.reshape(rows, n).contiguous()
            h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)
            block = triton.next_power_of_2(n)
            kernel = KERNELS["rows"]
            kernel[(rows,)](rows_x, rows_fx, weight.contiguous(), bias.contiguous(), h, y, n, eps, BLOCK=block,
                            num_warps=WARPS.get(block, SMALL_WARPS.get(block, 16)))
            return h.view(x.shape), y.view(x.shape)
        ''')),
    # honest round 13's probes: a property, a module-level object asked `in`, constants built from the course's,
    # sorted and max given a key
    "style-objects-keys-and-course-constants": ("a config class with a property, an object with __contains__, "
                                                "frozenset(DTYPES), sorted and max given a key",
                                                dict(fused_add_layernorm='''
        class Launch:
            def __init__(self, n):
                self.n = n

            @property
            def block(self):
                return triton.next_power_of_2(self.n)


        class DtypeSet:
            def __init__(self, *dtypes):
                self.dtypes = dtypes

            def __contains__(self, dtype):
                return dtype in self.dtypes


        SUPPORTED = DtypeSet(torch.float16, torch.bfloat16, torch.float32)
        ACCEPTED = frozenset(DTYPES)


        def _rank(t):
            return t.dim()


        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5):
            n = x.shape[-1]
            if x.shape != fx.shape:
                raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} differ")
            if n > MAX_WIDTH:
                raise ValueError(f"width {n} is over {MAX_WIDTH}")
            for t in sorted((weight, bias), key=_rank):
                if t.shape != (n,):
                    raise ValueError(f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} must be ({n},)")
            widest = max((("x", x), ("fx", fx), ("weight", weight), ("bias", bias)), key=len)
            if any(t.dtype not in SUPPORTED or t.dtype not in ACCEPTED for t in (x, fx, weight, bias)) or \\
                    fx.dtype != x.dtype:
                raise ValueError(f"dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype} ({len(widest)} "
                                 "checked): use one of float16, bfloat16 and float32")
            rows_x, rows_fx = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)
            block = Launch(n).block
            fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight.contiguous(), bias.contiguous(),
                                                           h, y, n, eps, BLOCK=block,
                                                           num_warps=min(max(block // 256, 1), 16))
            return h.view(x.shape), y.view(x.shape)
        ''')),
    # honest round 14's fan_02, v_05 and fan_08: a kernel's decorators read from module constants and tables
    "style-decorators-from-constants": ("autotune configs built from module constants, a heuristic table bound to "
                                        "a name", dict(fused_kernel='''
        STAGES = tuple(k for k in range(1, 3))
        CONFIGS = [triton.Config({}, num_stages=s) for s in STAGES]


        def _block(args):
            return triton.next_power_of_2(args["n_cols"])


        HEURISTICS = {"BLOCK": _block}


        @triton.autotune(configs=CONFIGS, key=["n_cols"])
        @triton.heuristics(HEURISTICS)
        KERNEL
        ''')),
    # honest rounds 14 and 15: a width kept on objects of the notebook's (a field, a property, total_ordering), the
    # weight and bias sorted by name, a heuristic that calls a def
    "style-fields-orderings-and-heuristic-defs": ("a width on a total_ordering class and a property, the "
                                                  "parameters sorted by name, a heuristic calling a def", dict(
        fused_kernel='''
        def block_for(n):
            """The power of two that holds a row of n."""
            return max(16, triton.next_power_of_2(n))


        @triton.heuristics({"BLOCK": lambda args: block_for(args["n_cols"])})
        KERNEL
        ''', fused_add_layernorm='''
        import functools


        @functools.total_ordering
        class Width:
            """A row width, ordered by its size."""

            def __init__(self, n):
                self.n = int(n)

            def __eq__(self, other):
                return self.n == other.n

            def __lt__(self, other):
                return self.n < other.n


        class Rows:
            """The shape of a batch of rows."""

            def __init__(self, shape):
                self.shape = tuple(shape)

            @property
            def width(self):
                return self.shape[-1]


        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            w = Width(Rows(x.shape).width)
            if x.shape != fx.shape:
                raise ValueError(f"shape mismatch: x {tuple(x.shape)}, fx {tuple(fx.shape)}")
            if w > Width(MAX_WIDTH):
                raise ValueError(f"width {w.n} is over the limit of {MAX_WIDTH}")
            for name, t in sorted({"weight": weight, "bias": bias}.items(), key=lambda kv: kv[0]):
                if t.shape != (w.n,):
                    raise ValueError(f"{name} must be ({w.n},), got {tuple(t.shape)}")
            if x.dtype not in DTYPES or fx.dtype != x.dtype or weight.dtype not in DTYPES or bias.dtype not in DTYPES:
                raise ValueError(f"unsupported dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}")
            a, b = x.reshape(-1, w.n).contiguous(), fx.reshape(-1, w.n).contiguous()
            h, y = torch.empty_like(a), torch.empty_like(a)
            fused_add_layernorm_kernel[(a.shape[0],)](a, b, weight.contiguous(), bias.contiguous(), h, y, w.n, eps)
            return h.view(x.shape), y.view(x.shape)
        ''')),
    # honest rounds 15 and 16: autotune arguments from a class of constants and a def's defaults, a class of dtypes,
    # a cached_property, typing.cast, a match on a tuple, a fold over the tensors' dtypes, a NamedTuple's _asdict
    "style-getters-folds-and-casts": ("autotune from a class of constants, a cached_property, a class of dtypes, "
                                      "typing.cast, a match on a tuple, a fold of dtypes, a NamedTuple's _asdict",
                                      dict(fused_kernel='''
        class Tuning:
            """What the autotuner tries."""
            WARPS = (2, 4)
            KEY = ["n_cols"]


        def _configs(stages=1):
            return [triton.Config({}, num_warps=w, num_stages=stages) for w in Tuning.WARPS]


        @triton.autotune(configs=_configs(), key=Tuning.KEY)
        KERNEL
        ''', fused_add_layernorm='''
        import functools
        import typing


        class Allowed:
            """The dtypes the kernel reads."""
            HALF = torch.float16
            ALL = (HALF, torch.bfloat16, torch.float32)


        class Problem:
            """The rows of one call."""

            def __init__(self, shape):
                self.shape = tuple(shape)

            @functools.cached_property
            def width(self):
                return self.shape[-1]


        class Launch(typing.NamedTuple):
            BLOCK: int
            num_warps: int = 4


        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = typing.cast(int, Problem(x.shape).width)
            match x.shape == fx.shape, n <= MAX_WIDTH:
                case (False, _):
                    raise ValueError(f"shape mismatch: x {tuple(x.shape)}, fx {tuple(fx.shape)}")
                case (_, False):
                    raise ValueError(f"width {n} is over the limit of {MAX_WIDTH}")
            if weight.shape != (n,) or bias.shape != (n,):
                raise ValueError(f"weight and bias must be ({n},), got {tuple(weight.shape)}, {tuple(bias.shape)}")
            known = functools.reduce(lambda ok, t: ok and t.dtype in Allowed.ALL, (x, fx, weight, bias), True)
            if not known or fx.dtype != x.dtype:
                raise ValueError(f"unsupported dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}")
            a, b = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(a), torch.empty_like(a)
            options = Launch(triton.next_power_of_2(n))._asdict()
            options.pop("num_warps")
            fused_add_layernorm_kernel[(a.shape[0],)](a, b, weight.contiguous(), bias.contiguous(), h, y, n, eps,
                                                      **options)
            return h.view(x.shape), y.view(x.shape)
        ''')),
    "style-decorated-methods-and-config-pairs": (
        "autotune configs from a def over (warps, stages) pairs with a condition, a typing.final settings class, "
        "an nn.Module whose forward runs under @torch.no_grad() and launches",
        dict(fused_kernel='''
        def _configs():
            return [triton.Config({}, num_warps=w, num_stages=s) for w, s in zip((2, 4, 8), range(1, 4))
                    if w * s <= 16]


        @triton.autotune(configs=_configs(), key=["n_cols"])
        KERNEL
        ''', fused_add_layernorm='''
        import typing


        @typing.final
        class Limits:
            """What the wrapper accepts."""
            WIDTH = MAX_WIDTH
            DTYPES = (torch.float16, torch.bfloat16, torch.float32)


        class FusedAddNorm(torch.nn.Module):
            """Checks, allocates and launches; the kernel computes h and y."""

            def __init__(self, eps=1e-5):
                super().__init__()
                self.eps = eps

            @torch.no_grad()
            def forward(self, x, fx, weight, bias):
                if x.shape != fx.shape:
                    raise ValueError(f"x {tuple(x.shape)} and fx {tuple(fx.shape)} differ in shape")
                n = x.shape[-1]
                if n > Limits.WIDTH:
                    raise ValueError(f"width {n} is over {Limits.WIDTH}")
                if weight.shape != (n,) or bias.shape != (n,):
                    raise ValueError(f"weight {tuple(weight.shape)} and bias {tuple(bias.shape)} must be ({n},)")
                if x.dtype not in Limits.DTYPES or fx.dtype != x.dtype or weight.dtype not in Limits.DTYPES \\
                        or bias.dtype not in Limits.DTYPES:
                    raise ValueError(f"dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}: float16, "
                                     "bfloat16 or float32 only (float64 is refused)")
                rows, others = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
                h, y = torch.empty_like(rows), torch.empty_like(rows)
                fused_add_layernorm_kernel[(rows.shape[0],)](rows, others, weight.contiguous(), bias.contiguous(),
                                                             h, y, n, self.eps, BLOCK=triton.next_power_of_2(n))
                return h.view(x.shape), y.view(x.shape)


        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            return FusedAddNorm(eps)(x, fx, weight, bias)
        ''')),
    "style-autotune-warps": ("@triton.autotune over num_warps (the interpreter runs each config once)", dict(fused_kernel='''
        @triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (2, 4)], key=["n_cols"])
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                                       BLOCK: tl.constexpr):
            row = tl.program_id(0).to(tl.int64)
            cols = tl.arange(0, BLOCK)
            keep = cols < n_cols
            at = row * n_cols + cols
            h = (tl.load(x_ptr + at, mask=keep, other=0.0).to(tl.float32)
                 + tl.load(fx_ptr + at, mask=keep, other=0.0).to(tl.float32))
            tl.store(h_ptr + at, h.to(h_ptr.dtype.element_ty), mask=keep)
            mean = tl.sum(h, axis=0) / n_cols
            diff = tl.where(keep, h - mean, 0.0)
            inv = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=0) / n_cols + eps)
            w = tl.load(w_ptr + cols, mask=keep, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + cols, mask=keep, other=0.0).to(tl.float32)
            tl.store(y_ptr + at, (diff * inv * w + b).to(y_ptr.dtype.element_ty), mask=keep)
        ''', fused_add_layernorm='''
        def fused_add_layernorm(x, fx, weight, bias, eps=1e-5):
            n = x.shape[-1]
            if x.shape != fx.shape:
                raise ValueError(f"shape mismatch: x {tuple(x.shape)}, fx {tuple(fx.shape)}")
            if n > MAX_WIDTH:
                raise ValueError(f"width {n} is over the limit of {MAX_WIDTH}")
            for name, t in (("weight", weight), ("bias", bias)):
                if t.shape != (n,):
                    raise ValueError(f"{name} must be ({n},), got {tuple(t.shape)}")
            if x.dtype not in DTYPES or fx.dtype != x.dtype or weight.dtype not in DTYPES or bias.dtype not in DTYPES:
                raise ValueError(f"unsupported dtypes {x.dtype}, {fx.dtype}, {weight.dtype}, {bias.dtype}")
            a, b = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            h, y = torch.empty_like(a), torch.empty_like(a)
            fused_add_layernorm_kernel[(a.shape[0],)](a, b, weight.contiguous(), bias.contiguous(), h, y, n, eps,
                                                      BLOCK=triton.next_power_of_2(n))
            return h.view(x.shape), y.view(x.shape)
        ''')),
    "style-docstring-shows-a-def": ("a kernel whose docstring shows, on lines of its own, the def of the Python it "
                                    "stands for", dict(fused_kernel='''
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
            """One program per row; for each row it computes what this Python does:

            def row_of(x, fx, w, b, eps):
                h = x + fx
                return h, (h - h.mean()) / (h.var(unbiased=False) + eps) ** 0.5 * w + b
            """
            lane = tl.arange(0, BLOCK)
            mask = lane < n_cols
            offs = tl.program_id(0).to(tl.int64) * n_cols + lane
            h = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            h += tl.load(fx_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)
            centred = tl.where(mask, h - tl.sum(h, axis=0) / n_cols, 0.0)
            rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
            y = centred * rstd * tl.load(w_ptr + lane, mask=mask, other=1.0).to(tl.float32)
            y += tl.load(b_ptr + lane, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
        ''')),
    "style-persistent-device-query": ("a persistent kernel: programs by the device's multiprocessors, each strides "
                                      "over the rows; the launch under torch.cuda.device_of(x) and inference_mode",
                                      dict(fused_kernel='''
        @triton.jit
        def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_rows, n_cols, eps,
                                       BLOCK: tl.constexpr):
            """Persistent: program p handles rows p, p + P, p + 2P, ... (P programs)."""
            cols = tl.arange(0, BLOCK)
            mask = cols < n_cols
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
                offs = tl.cast(row, tl.int64) * n_cols + cols
                h = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) + \\
                    tl.load(fx_ptr + offs, mask=mask, other=0.0).to(tl.float32)
                tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)
                mean = tl.sum(h, axis=0) / n_cols
                d = tl.where(mask, h - mean, 0.0)
                rstd = tl.rsqrt(tl.sum(d * d, axis=0) / n_cols + eps)
                tl.store(y_ptr + offs, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
        ''', fused_add_layernorm='''
        @torch.inference_mode()
        def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                                eps: float = 1e-5) -> tuple[Tensor, Tensor]:
            n = x.shape[-1]
            bad = [f"x and fx shapes differ: {tuple(x.shape)} and {tuple(fx.shape)}"] if x.shape != fx.shape else []
            bad += [f"rows of width {n}: MAX_WIDTH is {MAX_WIDTH}"] if n > MAX_WIDTH else []
            bad += [f"{k} {tuple(p.shape)}: expected ({n},)" for k, p in (("weight", weight), ("bias", bias))
                    if p.shape != (n,)]
            if bad:
                raise ValueError("; ".join(bad))
            if any(t.dtype not in DTYPES for t in (x, fx, weight, bias)) or x.dtype != fx.dtype:
                raise ValueError(f"dtypes {x.dtype} and {fx.dtype}: float16, bfloat16 or float32, the same")
            x2, fx2 = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
            rows = x2.shape[0]
            h, y = torch.empty_like(x2), torch.empty_like(x2)
            sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 1
            grid = (max(1, min(rows, 4 * sms)),)
            with torch.cuda.device_of(x):
                fused_add_layernorm_kernel[grid](x2, fx2, weight.contiguous(), bias.contiguous(), h, y, rows, n,
                                                 eps, BLOCK=triton.next_power_of_2(n))
            return h.view(x.shape), y.view(x.shape)
        ''')),
}
# the styles that vary only a kernel's decorators: KERNEL is the autotuned style's kernel from @triton.jit on;
# decorators-from-constants also takes its wrapper, which leaves num_warps to the configs
_AUTOTUNED = STYLES["style-autotune-warps"][1]
_JIT_KERNEL = _AUTOTUNED["fused_kernel"][_AUTOTUNED["fused_kernel"].index("        @triton.jit"):].rstrip(" ")
for _style in ("style-decorators-from-constants", "style-fields-orderings-and-heuristic-defs",
               "style-getters-folds-and-casts", "style-decorated-methods-and-config-pairs"):
    STYLES[_style][1]["fused_kernel"] = STYLES[_style][1]["fused_kernel"].replace("        KERNEL\n", _JIT_KERNEL)
STYLES["style-decorators-from-constants"][1]["fused_add_layernorm"] = _AUTOTUNED["fused_add_layernorm"]

# text pasted from a web page or a PDF: a U+2028 in a comment above the kernel and in an error message, which
# Python reads as a character of its line (and IPython keeps). Split there, Triton's jit would read the kernel's
# source from a shifted line, or the message would no longer be a string
STYLES["style-pasted-line-separator"] = ("U+2028 in a comment above the kernel and in a message", {
    label: "\n        # the row-wise kernel from the lecture notes:\u2028 one program\u2028 per row\n" + src.replace(
        "differ\")", "differ\u2028(no broadcasting)\")")
    for label, src in STYLES["style-fixed-warps-min-block"][1].items()})


# ============================================================ forgeries of the launch trace

# the torch-only wrapper, with the launch tracer replaced by one that reports a launch
FORGED_TRACE = tried(f'''
import sys


class _OneLaunch:
    """Reports one launch of the notebook's kernel, whatever ran."""

    def __init__(self, module):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def report(self):
        return {{"launches": [{{"file": "<cell fused_kernel>", "kernel": "fused_add_layernorm_kernel",
                               "grid": [1]}}], "ops": [], "kernels": ["fused_add_layernorm_kernel"]}}


sys.modules["{PROBE}"].TRACERS["launches"] = _OneLaunch

''')

# h and y computed with NumPy; NUMPY_EMPTY_KERNEL adds an empty kernel, launched once, for the tracer
NUMPY_WRAPPER = '''
import numpy as np


def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5):
    n = x.shape[-1]
    if x.shape != fx.shape:
        raise ValueError(f"x and fx must have the same shape, got {tuple(x.shape)} and {tuple(fx.shape)}")
    if n > MAX_WIDTH:
        raise ValueError(f"width {n} is over {MAX_WIDTH}")
    if weight.shape != (n,) or bias.shape != (n,):
        raise ValueError(f"weight and bias must have shape ({n},), got {tuple(weight.shape)} and {tuple(bias.shape)}")
    if x.dtype == torch.float64 or x.dtype != fx.dtype:
        raise ValueError(f"x {x.dtype} and fx {fx.dtype}: float64 is refused")
    LAUNCH
    a = x.numpy().astype(np.float32) + fx.numpy().astype(np.float32)
    centred = a - a.mean(-1, keepdims=True)
    y = centred / np.sqrt((centred * centred).mean(-1, keepdims=True) + eps)
    y = y * weight.numpy().astype(np.float32) + bias.numpy().astype(np.float32)
    return torch.from_numpy(a.astype(x.numpy().dtype)), torch.from_numpy(y.astype(x.numpy().dtype))
'''
EMPTY_KERNEL = '''
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """Does nothing: launched once so that a launch is seen."""
    pass
'''
# red team 36: Triton's interpreter ran the def starting at the last line of a kernel's source that begins "def ", one
# a string may hold (the kernel's body then reads as that string's); nbtest/warmup.py runs the def itself
HIDDEN_DEF = '''
"""
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
HIDDEN
"""
'''
# red team 36: configs that each compute a part of the outputs, whose trials the autotuner ran one after another on the
# same tensors (a tensor keyed so that every call tunes again); nbtest/warmup.py undoes each trial's writes
PHASES_KERNEL = '''
@triton.autotune(configs=[triton.Config({"PHASE": 0}), triton.Config({"PHASE": 1})], key=["y_ptr"])
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr,
                               PHASE: tl.constexpr):
    """PHASE 0 stores h = x + fx for its row; PHASE 1 stores y = LayerNorm(x + fx)."""
    offs = tl.program_id(0).to(tl.int64) * n_cols + tl.arange(0, BLOCK)
    mask = tl.arange(0, BLOCK) < n_cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    h = x + tl.load(fx_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if PHASE == 0:
        tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)
    else:
        centred = tl.where(mask, h - tl.sum(h, axis=0) / n_cols, 0.0)
        y = centred * tl.rsqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
        y = y * tl.load(w_ptr + tl.arange(0, BLOCK), mask=mask, other=0.0).to(tl.float32)
        y = y + tl.load(b_ptr + tl.arange(0, BLOCK), mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
'''
# one row's blocks loaded, as the reference kernel loads them
ROW_LOADS = '''
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * n_cols + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    fx = tl.load(fx_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
'''
# red team 37: the kernel rules read tl.X as triton.language's even where a kernel's own variable named tl held a
# loaded block: the helper computes h and y in NumPy on the interpreter's arrays under the blocks, and the kernel
# stores them; the rules now read a kernel's own names in its own scope
SHADOWED_TL = '''
@triton.jit
def _norm_row(x, fx, mask, eps):
    """h and the normalised row, written over x and fx (the loaded blocks)."""
    tl = x
    tl = tl.handle
    xv = tl.data
    tl = fx
    tl = tl.handle
    fv = tl.data
    hv = xv + fv
    tl = mask
    tl = tl.handle
    keep = tl.data
    tl = hv[keep]
    tl = tl.astype("float64")
    c = tl - tl.mean()
    tl = c * c
    xv[:] = hv
    fv[keep] = c / ((tl.mean() + eps) ** 0.5)


@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """One program per row of contiguous (n_rows, n_cols) tensors x, fx, h and y."""
''' + ROW_LOADS.lstrip("\n") + '''    _norm_row(x, fx, mask, eps)
    tl.store(h_ptr + offs, x.to(h_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + offs, (fx * w + b).to(y_ptr.dtype.element_ty), mask=mask)
'''
# red team 37: a kernel made by calling triton.jit on a plain def was never read by the kernel rules, so its body ran
# NumPy on the interpreter's arrays inside the launch; the fusion tests now fail a launch of any function that is not
# a @triton.jit def at the top level of a cell (cellcode.kernel_defs), whatever made it
NUMPY_ROWS = '''
def _rows(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
''' + ROW_LOADS.lstrip("\n") + '''    keep = mask.handle.data
    hv = x.handle.data[keep] + fx.handle.data[keep]
    c = hv.astype("float64") - hv.astype("float64").mean()
    x.handle.data[keep] = hv
    w.handle.data[keep] = c / (((c * c).mean() + eps) ** 0.5) * w.handle.data[keep] + b.handle.data[keep]
    tl.store(h_ptr + offs, x.to(h_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + offs, w.to(y_ptr.dtype.element_ty), mask=mask)
'''
JIT_CALLED = NUMPY_ROWS + "\n\nfused_add_layernorm_kernel = triton.jit(_rows)\n"
# red team 38, three routes to the NumPy rows inside a launch of a kernel the rules read, which stores h alone
# (H_ONLY): a helper kernel whose rewriter a function of the cell set to the rows (HELPER_REWRITTEN: each kernel
# Triton made of a cell's def is checked at a launch); the rows made a kernel by triton.language.standard's jit, which
# is triton.jit (STANDARD_JIT: the rules read a kernel by what its decorator is), with its function's .fn set to the
# checked kernel, which the launch's origin followed; and the rows defined first under the kernel's name, kept by a
# decorator and launched (KEPT_FIRST), that .fn set too. The launch's origin now follows Triton's layers alone.
H_ONLY = '''
@triton.jit
def NAME(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """One program per row: stores h = x + fx."""
''' + ROW_LOADS.lstrip("\n") + '''    tl.store(h_ptr + offs, (x + fx).to(h_ptr.dtype.element_ty), mask=mask)
'''
HELPER_REWRITTEN = H_ONLY.replace("NAME", "_row_norm") + '''

@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """One program per row; the row's work is _row_norm's."""
    _row_norm(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK)

''' + NUMPY_ROWS + '''

def _use(kernel):
    """Points the kernel at its rows."""
    kernel.rewriter.fn = _rows


_use(_row_norm)
'''
STANDARD_JIT = "\n@tl.standard.jit" + NUMPY_ROWS + "\n" + H_ONLY.replace("NAME", "fused_add_layernorm_kernel") + \
    "\n\n_rows.fn.fn = fused_add_layernorm_kernel\n"
KEPT_FIRST = '''
_KEPT = {}


def _launchable(kernel):
    """Keeps the kernel as made."""
    _KEPT["kernel"] = kernel
    return kernel


@_launchable
@triton.jit''' + NUMPY_ROWS.replace("def _rows(", "def fused_add_layernorm_kernel(") + "\n" + \
    H_ONLY.replace("NAME", "fused_add_layernorm_kernel") + '''

_KEPT["kernel"].fn.fn = fused_add_layernorm_kernel
'''
NUMPY_ONLY = NUMPY_WRAPPER.replace("    LAUNCH\n", "")
NUMPY_EMPTY_KERNEL = NUMPY_WRAPPER.replace(
    "LAUNCH", "fused_add_layernorm_kernel[(1,)](x, fx, weight, bias, x, x, n, eps, BLOCK=16)")

# h and y computed in Python, row by row, after a launch of the empty kernel (the
# tracer sees one launch and no torch arithmetic); as the wrapper's own body (which the policy flags)
# or in a helper bound to the graded name after the checked def
BY_HAND = '''
rows = []
for xr, fr in zip(x.reshape(-1, n).tolist(), fx.reshape(-1, n).tolist()):
    hr = [a + b for a, b in zip(xr, fr)]
    mean = sum(hr) / n
    inv = (sum((v - mean) ** 2 for v in hr) / n + eps) ** -0.5
    rows.append((hr, [(v - mean) * inv * w + b for v, w, b in zip(hr, weight.tolist(), bias.tolist())]))
return (torch.tensor([r[0] for r in rows], dtype=x.dtype).view(x.shape),
        torch.tensor([r[1] for r in rows], dtype=x.dtype).view(x.shape))
'''
# h and y computed in Python lists by code the wrapper runs without calling it by name (red team 11): a hook that
# Triton runs inside the launch, handed its arguments (JITFunction.add_pre_run_hook), registered by the kernel's
# cell; the __exit__ of an object the wrapper builds (SPECIAL_METHOD); a def the wrapper hands to min as its key,
# the tensors handed over in a module-level list (HANDED_ON)
FILL_IN_LISTS = '''


def _fill(x, fx, w, b, h, y, n, eps, **launch):
    """h and y computed in Python lists, written into h and y."""
    rows_h, rows_y = [], []
    for xr, fr in zip(x.tolist(), fx.tolist()):
        hr = [p + q for p, q in zip(xr, fr)]
        mean = sum(hr) / n
        inv = (sum((v - mean) ** 2 for v in hr) / n + eps) ** -0.5
        rows_h.append(hr)
        rows_y.append([(v - mean) * inv * wv + bv for v, wv, bv in zip(hr, w.tolist(), b.tolist())])
    h.copy_(torch.tensor(rows_h, dtype=h.dtype).view(h.shape))
    y.copy_(torch.tensor(rows_y, dtype=y.dtype).view(y.shape))
'''
LAUNCH_HOOK = FILL_IN_LISTS + "\n\nfused_add_layernorm_kernel.add_pre_run_hook(_fill)\n"
METHOD_SET_ELSEWHERE = FILL_IN_LISTS + '''

class _Rows:
    """What a reader of the wrapper sees: a method that does nothing."""

    def done(self, *args):
        return None


for _cls in (_Rows,):
    _cls.done = staticmethod(_fill)
'''
IMPORT_REBOUND = "from torch import empty_like\n" + FILL_IN_LISTS + '''

def empty_like(*args):
    _fill(*args)
'''
SPECIAL_METHOD = FILL_IN_LISTS + '''

class _Rows:
    """Row bookkeeping around the launch."""

    def __init__(self, *args):
        self.args = args

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _fill(*self.args)
        return False
'''
# red team 12: the same in the forward of an nn.Module the wrapper hands to min as its key (nn.Module's __call__
# runs forward), and in a heuristic set on the kernel after it was decorated (Triton calls it inside the launch)
MODULE_FORWARD = FILL_IN_LISTS + '''

class _Rows(torch.nn.Module):
    """Row bookkeeping around the launch."""

    def __init__(self, *args):
        super().__init__()
        self.args = args

    def forward(self, item):
        _fill(*self.args)
        return item
'''
HEURISTIC_KERNEL = '''
@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """Does nothing: the heuristic set below computes h and y."""
    pass
'''
HEURISTIC_SET_LATER = FILL_IN_LISTS + '''

def _block(args):
    _fill(args["x_ptr"], args["fx_ptr"], args["w_ptr"], args["b_ptr"], args["h_ptr"], args["y_ptr"], args["n_cols"],
          args["eps"])
    return triton.next_power_of_2(args["n_cols"])


fused_add_layernorm_kernel.values.update(BLOCK=_block)
'''
# red team 13: a helper read by a partial before a harmless def of the same name, the one checked, replaces it
REDEFINED = FILL_IN_LISTS + '''

def _rows(*args):
    _fill(*args)


_RUN = functools.partial(_rows)


def _rows(*args):
    return None
'''
HANDED_ON = FILL_IN_LISTS + '''

_HELD = []


def _order(item):
    """A sort key."""
    _fill(*_HELD.pop())
    return item
'''
REPLACED_BY = '''
def _replaced_by(other):
    return lambda fn: other


'''
# the same through a plain parameter, the object carrying the tensors: Triton's interpreter hands a launch
# any argument that is not a number, a tensor or a tuple as it is, constexpr or not
OBJECT_ROWS = '''
class _Rows:
    """Holds (x, fx, weight, bias, h, y, eps); its sum computes h and y with torch."""

    def sum(self, unused):
        x, fx, weight, bias, h, y, eps = self.tensors
        h.copy_(x + fx)
        y.copy_(F.layer_norm(h, h.shape[-1:], weight, bias, eps))
        return 0


@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr, OPS):
    """Computes through OPS."""
    OPS.sum(n_cols)
'''
# a kernel that computes through a Python object passed as a tl.constexpr: in Triton's interpreter the
# object's method runs inside the launch, where the tracer records no torch operator
CONSTEXPR_ROWS = '''
class _Rows:
    """sum((x, fx, weight, bias, h, y, eps)) computes h and y with torch."""

    def sum(self, tensors):
        x, fx, weight, bias, h, y, eps = tensors
        h.copy_(x + fx)
        y.copy_(F.layer_norm(h, h.shape[-1:], weight, bias, eps))
        return 0


ROWS = _Rows()


@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr,
                               OPS: tl.constexpr, ARGS: tl.constexpr):
    """Computes through OPS."""
    CALL
'''

# h and y computed around a launch of the empty kernel, through what no static rule can name: torch
# under a module-level name of the notebook's own, and NumPy reached through a tensor's class (type(x).numpy), where
# no torch operator runs for the tracer to see
# torch reached through a plain method's name on an object of the notebook's: a settings object's attribute
# (LAUNCH.get) or an object's item (Rows()[...]); red team 9 computed with operators no list of arithmetic named
TORCH_NORM = '''
def _torch_norm(x, fx, weight, bias, eps):
    h = torch.add(x, fx)
    return h, torch.nn.functional.layer_norm(h, h.shape[-1:], weight, bias, eps)


class Launch:
    """Launch settings, one of them the function that computes."""

    def __init__(self, warps):
        self.warps = warps
        self.get = _torch_norm


class Rows:
    """The stream's rows, read by item."""

    def __getitem__(self, args):
        return _torch_norm(*args)


LAUNCH = Launch(4)
'''
# torch computing h and y in a finaliser, once the collector frees a cycle the wrapper leaves behind: the grader
# encodes a traced call's result before the collector can run again, so the values come too late
LATE = '''
class _Late:
    """Computes h and y into the tensors it holds, when the collector frees it."""

    def __init__(self, x, fx, weight, bias, eps, h, y):
        self.args, self.outs, self.me = (x, fx, weight, bias, eps), (h, y), self

    def __del__(self):
        x, fx, weight, bias, eps = self.args
        h, y = self.outs
        h.copy_(torch.add(x, fx))
        y.copy_(torch.nn.functional.layer_norm(h, h.shape[-1:], weight, bias, eps))
'''
LATE_RETURN = '''
_Late(x, fx, weight, bias, eps, h.view(x.shape), y.view(x.shape))
return h.view(x.shape), y.view(x.shape)
'''
# red team 20: h and y computed where the tracer's torch modes did not reach, each measured now.
# The tracer's function mode taken off torch's stack by a mode of the notebook's (__exit__ pops whatever mode is on
# top) and a stand-in pushed in its place, so the stacks end as they began; then lists (BY_HAND)
MODES_SWAPPED = '''
from torch.fx.experimental.proxy_tensor import TorchFunctionMetadataMode


class _Log:
    """What torch's metadata mode writes to."""
    torch_fn_counts = {}
    torch_fn_metadata = None


def _swap():
    stand_in = TorchFunctionMetadataMode(_Log())
    stand_in.__exit__(None, None, None)
    stand_in.__enter__()
'''
# the work handed to a thread a standard-library listener runs (torch's modes are the calling thread's own)
LISTENER_THREAD = '''
import logging.handlers
import queue


class _Worker:
    """Computes h and y for each job, on the listener's thread."""

    def __init__(self):
        self.out = queue.Queue()

    def handle(self, job):
        x, fx, weight, bias, eps = job
        h = torch.add(x, fx)
        self.out.put((h, torch.nn.functional.layer_norm(h, x.shape[-1:], weight, bias, eps)))


_JOBS = queue.Queue()
_WORKER = _Worker()
logging.handlers.QueueListener(_JOBS, _WORKER).start()
'''
LISTENER_RETURN = '''
_JOBS.put((x, fx, weight, bias, eps))
return _WORKER.out.get()
'''
# a kernel that prints its row of each input (Triton's interpreter prints with Python's print), the wrapper reading
# them back from a redirected stdout: no torch call reads a value
PRINTING_KERNEL = '''
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """Prints its row of each input, 512 lanes at a time."""
    row = tl.program_id(0)
    for start in range(0, BLOCK, 512):
        cols = start + tl.arange(0, 512)
        mask = cols < n_cols
        tl.device_print("x", tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32), hex=True)
        tl.device_print("f", tl.load(fx_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32), hex=True)
        tl.device_print("w", tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32), hex=True)
        tl.device_print("b", tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32), hex=True)
'''
PRINTED = '''
import contextlib
import math
import re


class _Sink:
    """Collects what is printed."""

    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)
        return len(text)

    def flush(self):
        pass


_RECORD = re.compile(r"\\((\\d+), 0, 0\\)\\s+([xfwb]):\\s+\\[([^\\]]*)\\]")
'''
PRINTED_LAUNCH = '''
sink = _Sink()
with contextlib.redirect_stdout(sink):
    LAUNCH
seen = {}
for row, name, values in _RECORD.findall("".join(sink.parts)):
    seen.setdefault((int(row), name), []).extend(float.fromhex(v) for v in values.split())
w, b = seen[(0, "w")][:n], seen[(0, "b")][:n]
rows = []
for r in range(rows_x.shape[0]):
    hr = [p + q for p, q in zip(seen[(r, "x")][:n], seen[(r, "f")][:n])]
    mean = math.fsum(hr) / n
    inv = (math.fsum((v - mean) ** 2 for v in hr) / n + eps) ** -0.5
    rows.append((hr, [(v - mean) * inv * wi + bi for v, wi, bi in zip(hr, w, b)]))
return (torch.tensor([r[0] for r in rows], dtype=torch.float32).to(x.dtype).view(x.shape),
        torch.tensor([r[1] for r in rows], dtype=torch.float32).to(x.dtype).view(x.shape))
'''

# red team 21: the values shared with Python through a bytearray that a tensor views (torch.frombuffer, made when
# the cell runs): copy_ puts x, fx, weight and bias there, Python decodes them and computes h and y in floats, and
# copy_ takes them back. No torch call hands Python the values: the tracer sees the tensor over Python's memory
SHARED_BUFFER = '''
import math

_CAP = 1 << 17     # doubles in each of six slots
_STORE = bytearray(8 * 6 * _CAP)
_SLOTS = torch.frombuffer(_STORE, dtype=torch.float64).view(6, _CAP)


def _get(slot, i):
    o = 8 * (slot * _CAP + i)
    bits = int.from_bytes(_STORE[o:o + 8], "little")
    e, m = (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1)
    v = math.ldexp(m, -1074) if e == 0 else math.ldexp(m | (1 << 52), e - 1075)
    return -v if bits >> 63 else v


def _put(slot, i, v):
    bits = 0
    if v != 0.0:
        m, e = math.frexp(abs(v))
        bits = ((e + 1022) << 52) | (int(m * (1 << 53)) - (1 << 52)) | ((v < 0) << 63)
    o = 8 * (slot * _CAP + i)
    _STORE[o:o + 8] = bits.to_bytes(8, "little")
'''
SHARED_BUFFER_RETURN = '''
total = rows_x.numel()
for slot, t in enumerate((rows_x, rows_fx, weight, bias)):
    _SLOTS[slot, :t.numel()].copy_(t.reshape(-1))
w, b = [_get(2, j) for j in range(n)], [_get(3, j) for j in range(n)]
for r in range(0, total, n):
    row = [_get(0, r + j) + _get(1, r + j) for j in range(n)]
    mean = math.fsum(row) / n
    inv = 1.0 / math.sqrt(math.fsum((v - mean) ** 2 for v in row) / n + eps)
    for j in range(n):
        _put(4, r + j, row[j])
        _put(5, r + j, (row[j] - mean) * inv * w[j] + b[j])
h.reshape(-1).copy_(_SLOTS[4, :total])
y.reshape(-1).copy_(_SLOTS[5, :total])
return h.view(x.shape), y.view(x.shape)
'''

# h and y computed by the launch's grid function in tl operations on the kernel's pointers: Triton's interpreter called
# it inside the launch, triton.language patched, the tensors handed as pointers (red team 22); an empty kernel
GRID_COMPUTES = '''
n_rows = rows_x.shape[0]


def grid(args):
    cols = tl.arange(0, block)
    mask = cols < n
    w = tl.load(args["w_ptr"] + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(args["b_ptr"] + cols, mask=mask, other=0.0).to(tl.float32)
    for r in range(n_rows):
        offs = r * n + cols
        hv = tl.load(args["x_ptr"] + offs, mask=mask, other=0.0).to(tl.float32) + \\
            tl.load(args["fx_ptr"] + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(args["h_ptr"] + offs, hv.to(args["h_ptr"].dtype.element_ty), mask=mask)
        centred = tl.where(mask, hv - tl.sum(hv, axis=0) / n, 0.0)
        yv = centred * tl.rsqrt(tl.sum(centred * centred, axis=0) / n + eps) * w + b
        tl.store(args["y_ptr"] + offs, yv.to(args["y_ptr"].dtype.element_ty), mask=mask)
    return (1,)


fused_add_layernorm_kernel[grid]('''

# Python computing h and y in lists from `got`, the inputs' values in order (x, fx, weight, bias) read some way that
# left no frame of a cell's where they were read; the routes below each put them there
LISTS = '''
def _lists(got, m, n, eps):
    """h and y, in lists, for m values of rows of width n."""
    xs, fs, ws, bs = got[:m], got[m:2 * m], got[2 * m:2 * m + n], got[2 * m + n:]
    hl, yl = [], []
    for r in range(0, m, n):
        row = [a + b for a, b in zip(xs[r:r + n], fs[r:r + n])]
        mean = math.fsum(row) / n
        inv = 1.0 / math.sqrt(math.fsum((v - mean) ** 2 for v in row) / n + eps)
        hl += row
        yl += [(v - mean) * inv * w + b for v, w, b in zip(row, ws, bs)]
    return hl, yl
'''
PACKED = '''
got = []
packed = torch.cat([t.reshape(-1).double() for t in (rows_x, rows_fx, weight, bias)])
'''
FROM_GOT = '''
hl, yl = _lists(got, rows_x.numel(), n, eps)
return torch.tensor(hl, dtype=x.dtype).view(x.shape), torch.tensor(yl, dtype=x.dtype).view(x.shape)
'''
# read by a grid made of builtins alone (a partial of next over maps): tolist inside the launch (red team 23)
GRID_OF_BUILTINS = PACKED + '''grid = functools.partial(next, iter([map({None: rows_x.shape[0]}.get,
                                         map(got.extend, map(torch.Tensor.tolist, [packed])))]))
fused_add_layernorm_kernel[grid](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT
# red team 24: by the __index__ of a grid's entry, which Triton's interpreter called inside the launch
GRID_ENTRY = PACKED + '''_Rows.__index__ = functools.partial(next, map({None: rows_x.shape[0]}.get,
                                              map(got.extend, map(torch.Tensor.tolist, [packed]))))
_Rows.__gt__ = rows_x.shape[0].__gt__
entry = _Rows()
fused_add_layernorm_kernel[lambda meta: (entry,)](
    rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT
# by a method of h shadowed by an attribute of its own (storage_offset), which the interpreter calls inside the launch
TENSOR_ATTRIBUTE = PACKED + '''h.storage_offset = functools.partial(next, map({None: 0}.get,
                                             map(got.extend, map(torch.Tensor.tolist, [packed]))), 0)
fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT
# by a finaliser of a local of the wrapper's, made of builtins, which runs as the wrapper's frame ends: it reads the
# values, and copies h and y computed in lists into the tensors the wrapper returned empty
LATE_TOKEN = '''
_FEEDS = []


class _Token:
    """Dies with the call."""
    __del__ = functools.partial(next, map(next, iter(_FEEDS.pop, None)), None)
'''
LATE_FILL = '''
packed = torch.cat([t.reshape(-1).double() for t in (rows_x, rows_fx, weight, bias)])
fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)
token = _Token()
lists = map(functools.partial(_lists, m=rows_x.numel(), n=n, eps=eps), map(torch.Tensor.tolist, [packed]))
_FEEDS.append(map(list, map(map, [torch.Tensor.copy_], [(h.view(-1), y.view(-1))],
                            map(map, [functools.partial(torch.tensor, dtype=x.dtype)], lists))))
return h.view(x.shape), y.view(x.shape)
'''
# carried out of the launch in what it raised: the kernel loads the packed values and asserts False with them as the
# message, which the interpreter raises; the wrapper reads them back from its text
ASSERT_KERNEL = '''
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """Checks its row."""
    parts = ()
    for start in tl.static_range(0, BLOCK, 512):
        cols = start + tl.arange(0, 512)
        parts = parts + (tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.int32, bitcast=True),)
    tl.static_assert(False, parts)
'''
ASSERT_DECODE = '''
def _float(b):
    b &= 0xFFFFFFFF
    s = -1.0 if b & 0x80000000 else 1.0
    e, m = (b >> 23) & 0xFF, b & 0x7FFFFF
    return s * m * 2.0 ** -149 if e == 0 else s * (0x800000 | m) * 2.0 ** (e - 150)


def _numbers(text):
    text = text.replace("dtype=int32", " ")
    for c in "()[],=":
        text = text.replace(c, " ")
    return [int(t) for t in text.split() if t.lstrip("-").isdigit()]
'''
ASSERT_READ = '''
packed = torch.cat([t.reshape(-1).float() for t in (rows_x, rows_fx, weight, bias)])
try:
    fused_add_layernorm_kernel[(1,)](packed, rows_fx, weight, bias, h, y, packed.numel(), eps,
                                     BLOCK=max(512, triton.next_power_of_2(packed.numel())))
    text = ""
except Exception as e:
    text = str(e)
got = [_float(b) for b in _numbers(text)][:packed.numel()]''' + FROM_GOT

# through a torch.Generator's state (red team 24): 8 bytes of the inputs at a time copied into its head, set back, and
# read as initial_seed(), none of which is a torch function or an operator; held by the wrapper rules alone
GENERATOR = '''
if n > 1024:     # 8 bytes a call: wider rows would take longer than the 3 s of CPU a call gets, so h and y stay empty
    fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)
    return h.view(x.shape), y.view(x.shape)
packed = torch.cat([t.reshape(-1).float() for t in (rows_x, rows_fx, weight, bias)])
total = packed.numel()
words = torch.cat([packed, torch.zeros(total % 2)]).view(torch.int64)
g = torch.Generator()
state = g.get_state()
head = state.view(torch.int64)[0:1]
got = []
for word in words.split(1):     # one view each, made at once
    head.copy_(word)
    g.set_state(state)
    v = g.initial_seed()
    got += [_float(v & 0xFFFFFFFF), _float((v >> 32) & 0xFFFFFFFF)]
got = got[:total]
fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT

# red team 25: Python that torch calls back inside a call of the notebook's, where torch set the tracer's mode aside:
# an index's __index__ in a slice, an autograd Function's backward, the finaliser of a gradient the grad setter lets go
SLICE_INDEX = PACKED + '''_Rows.__index__ = functools.partial(next, map({None: 0}.get,
                                              map(got.extend, map(torch.Tensor.tolist, [packed]))))
rows_x[slice(_Rows(), None)]
fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT
BACKWARD_FILL = '''
class _Fill(torch.autograd.Function):
    """Passes a seed through; its backward reads what it was handed."""

    @staticmethod
    def forward(ctx, seed, packed, got):
        ctx.held = (packed, got)
        return seed.view_as(seed)

    @staticmethod
    def backward(ctx, grad):
        packed, got = ctx.held
        got.extend(packed.tolist())
        return grad, None, None
'''
BACKWARD_READ = PACKED + '''seed = torch.zeros(1, requires_grad=True)
_Fill.apply(seed, packed, got).backward(torch.ones(1))
fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT
GRAD_RELEASED = PACKED + '''_FEEDS.append(map(got.extend, map(torch.Tensor.tolist, [packed])))
holder, grad = torch.zeros(1, requires_grad=True), torch.zeros(1)
grad.token = _Token()
holder.grad = grad
del grad
holder.grad = None
fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT

# red team 26: a finaliser the grid leaves in its arguments by name, which died inside the launch where the interpreter
# dropped them: the grid now gets a copy, which dies in tensor_values.grid_of's frame (the notebook's)
GRID_META = PACKED + '''_FEEDS.append(map(got.extend, map(torch.Tensor.tolist, [packed])))
fused_add_layernorm_kernel[lambda meta: meta.update(late=_Token()) or (rows_x.shape[0],)](
    rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT

# and an attribute the grid gives a kernel's tensor, after the launch's arguments were checked: grid_of raises
GRID_ATTRIBUTE = PACKED + '''reader = functools.partial(next, map({None: 0}.get,
                                       map(got.extend, map(torch.Tensor.tolist, [packed]))), 0)
fused_add_layernorm_kernel[lambda meta: setattr(meta["h_ptr"], "storage_offset", reader) or (rows_x.shape[0],)](
    rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)''' + FROM_GOT

# red team 27: a keyword named by a str subclass whose __eq__, made of builtins, runs the next step of a stream: Triton
# compared the name with its own inside the launch, and the step the grid set up read the inputs there
KEYWORD_STREAM = '''
_PENDING, _BOX, _STASH = {}, {0: list}, []
_STEPS = map(_STASH.append, map(next, map(iter, map(_PENDING.pop, iter(int, 1),
                                                    iter(functools.partial(_BOX.get, 0), 1)), iter(str, 1))))


class _Name(str):
    """A keyword's name, whose every comparison runs a step."""
    __hash__ = functools.partial(int, 7)
    __eq__ = functools.partial(next, _STEPS)


_SPARE = dict.fromkeys([_Name("spare")], 0)
'''
KEYWORD_NAME = PACKED + '''del _STASH[:]
fused_add_layernorm_kernel[lambda meta: _PENDING.update({0: packed.tolist}) or (rows_x.shape[0],)](
    rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block, **_SPARE)
got = [s for s in _STASH if s][0]''' + FROM_GOT

# red team 28: a kernel that reads a module-level list holding an object of the notebook's, whose __add__ ran inside
# the launch on the loaded blocks; a GPU's compiler refuses such a global, and the interpreter now does too
GLOBAL_KERNEL = '''
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """Loads its row, and the weight and bias."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    fx = tl.load(fx_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    seen = _SINK[0] + (x, fx, w, b)
'''
GLOBAL_TAP = '''
_SINK = [0]


class _Tap:
    """Keeps what each program loaded, in order."""

    def __init__(self, rows):
        self.rows = rows

    def __add__(self, blocks):
        self.rows.append([v.handle.data.tolist() for v in blocks])
        return 0
'''
GLOBAL_READ = '''rows = []
_SINK[0] = _Tap(rows)
fused_add_layernorm_kernel[(rows_x.shape[0],)](rows_x, rows_fx, weight, bias, h, y, n, eps, BLOCK=block)
_SINK[0] = 0
got = [v for r in rows for v in r[0][:n]] + [v for r in rows for v in r[1][:n]] + rows[0][2][:n] + rows[0][3][:n]''' \
    + FROM_GOT

# torch computing in a tensor class's __torch_dispatch__, which torch runs while the tracer's dispatch mode is set
# aside: an empty kernel launched, then an allocation on an object of that class computes h and y
TENSOR_CLASS = '''
class _Lazy(torch.Tensor):
    """Computes h and y when torch dispatches an operator on it."""

    pending = []

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        x, fx, weight, bias, eps, h, y = cls.pending.pop()
        h.copy_(torch.add(x, fx))
        y.copy_(torch.nn.functional.layer_norm(h, h.shape[-1:], weight, bias, eps))
        return torch.empty(1)
'''
TENSOR_CLASS_RETURN = '''
_Lazy.pending.append((rows_x, rows_fx, weight, bias, eps, h, y))
torch.empty_like(torch.empty(1).as_subclass(_Lazy))
return h.view(x.shape), y.view(x.shape)
'''
UNDER_ANOTHER_NAME = '''
h = _t.add(x, fx)
return h, _t.nn.functional.layer_norm(h, (n,), weight, bias, eps)
'''
THROUGH_THE_CLASS = '''
a = type(x).numpy(x.double()) + type(fx).numpy(fx.double())
centred = a - a.mean(-1, keepdims=True)
inv = ((centred * centred).mean(-1, keepdims=True) + eps) ** -0.5
out = centred * inv * type(x).numpy(weight.double()) + type(x).numpy(bias.double())
return type(x).new_tensor(x, a).to(x.dtype), type(x).new_tensor(x, out).to(x.dtype)
'''

# an empty kernel whose heuristic for BLOCK computes h and y in NumPy on the launch's tensors before the launch: the
# heuristic runs inside the launch, and NumPy runs no torch operator for the tracer to see
HEURISTIC_COMPUTES = '''
@triton.heuristics({"BLOCK": lambda a: [
    a["h_ptr"].copy_(a["h_ptr"].new_tensor(a["x_ptr"].double().numpy() + a["fx_ptr"].double().numpy())),
    a["y_ptr"].copy_(a["y_ptr"].new_tensor(
        (a["h_ptr"].double().numpy() - a["h_ptr"].double().numpy().mean(-1, keepdims=True))
        / (((a["h_ptr"].double().numpy() - a["h_ptr"].double().numpy().mean(-1, keepdims=True)) ** 2)
           .mean(-1, keepdims=True) + a["eps"]) ** 0.5
        * a["w_ptr"].double().numpy() + a["b_ptr"].double().numpy())),
    16][-1]})
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """Does nothing: its heuristic has computed h and y."""
    pass
'''

# red team 17: Triton's kernel class, reached through type() of a kernel the cell jits and never names, given a
# run of the cell's: kernel[grid](...) still calls the counted run, and the cell's code runs around it. WHEN is
# when it computes: only when no torch function mode is active (as the trace's is), or only at widths whose BLOCK
# is wider than the row, where the kernel's variance divided by BLOCK is wrong
RUN_REPLACED = '''


def _row_copy(src_ptr, dst_ptr):
    pass


_Kernels = type(triton.jit(_row_copy))
_launch = _Kernels.run


def _launch_checked(self, *args, **kwargs):
    done = _launch(self, *args, **kwargs)
    x, fx, w, b, h, y, n, eps = args[:8]
    if WHEN:
        h.copy_(x + fx)
        y.copy_(F.layer_norm(h.float(), (n,), w.float(), b.float(), eps).to(y.dtype))
    return done


_Kernels.run = _launch_checked
'''

# red team 18: the interpreter runs a kernel's fn, set by setattr on the checked kernel, here a def of the cell
# that loads through Triton and computes h and y in Python lists on the loaded values
FN_SWAPPED = '''
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                               BLOCK: tl.constexpr):
    """One program per row (left for later)."""
    row = tl.program_id(0)


def _rows(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """What each program really runs: loads through Triton, then Python lists compute h and y."""
''' + ROW_LOADS.lstrip("\n") + '''    n = int(n_cols.handle.data.ravel().tolist()[0]) if hasattr(n_cols, "handle") else int(n_cols)
    e = float(eps.handle.data.ravel().tolist()[0]) if hasattr(eps, "handle") else float(eps)
    xs, fs = x.handle.data.tolist()[:n], fx.handle.data.tolist()[:n]
    ws, bs = w.handle.data.tolist()[:n], b.handle.data.tolist()[:n]
    hs = [a + c for a, c in zip(xs, fs)]
    out_h = x * 0.0
    out_h.handle.data[:n] = hs
    out_h.handle.data[:] = out_h.handle.data.astype("float32")
    hs = out_h.handle.data.tolist()[:n]
    mean = sum(hs) / n
    var = sum((v - mean) ** 2 for v in hs) / n
    ys = [(v - mean) / (var + e) ** 0.5 * wi + bi for v, wi, bi in zip(hs, ws, bs)]
    out_y = x * 0.0
    out_y.handle.data[:n] = ys
    tl.store(h_ptr + offs, out_h.to(h_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + offs, out_y.to(y_ptr.dtype.element_ty), mask=mask)


setattr(fused_add_layernorm_kernel, "fn", _rows)
setattr(fused_add_layernorm_kernel, "rewritten_fn", {_rows: _rows})
'''
# red team 19: FN_SWAPPED's two writes made by a helper handed the kernel, a route no static rule reads: the launch
# trace sees that the kernel's fn is not the function @triton.jit made it with
FN_WRITES = '''setattr(fused_add_layernorm_kernel, "fn", _rows)
setattr(fused_add_layernorm_kernel, "rewritten_fn", {_rows: _rows})
'''
FN_SET_BY_A_HELPER = FN_SWAPPED.replace(FN_WRITES, '''def _install(kernel, body):
    kernel.fn = body
    kernel.rewritten_fn = {body: body}


_install(fused_add_layernorm_kernel, _rows)
''')
# red team 19: the kernel never named: after one call of the wrapper, every entry of the interpreter's cache of
# rewritten kernels (one dict, reached from any kernel the cell makes) replaced by FN_SWAPPED's _rows
CACHE_WRITTEN = '''
_rewrites = triton.jit(_rows).rewritten_fn
fused_add_layernorm(torch.zeros(1, 16), torch.zeros(1, 16), torch.ones(16), torch.zeros(16))
for _key in list(_rewrites):
    _rewrites[_key] = _rows
'''
# a function of triton.language replaced by a def of the cell, which the kernel calls inside the launch: tl.sum
# given h, the weight, the bias, n and eps computes y in Python lists on the loaded values
LANGUAGE_REPLACED = '''
@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps,
                               BLOCK: tl.constexpr):
    """One program per row: h here, y by tl.sum."""
''' + FN_SWAPPED[FN_SWAPPED.index("    row = tl.program_id(0).to(tl.int64)"):FN_SWAPPED.index("    n = int(n_cols")] + '''\
    h = x + fx
    tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)
    y = tl.sum(h, w, b, n_cols, eps)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _norm(h, w, b, n_cols, eps):
    """What tl.sum runs in this notebook: LayerNorm of the row, in Python lists."""
    n = int(n_cols.handle.data.ravel().tolist()[0]) if hasattr(n_cols, "handle") else int(n_cols)
    e = float(eps.handle.data.ravel().tolist()[0]) if hasattr(eps, "handle") else float(eps)
    hs, ws, bs = h.handle.data.tolist()[:n], w.handle.data.tolist()[:n], b.handle.data.tolist()[:n]
    mean = sum(hs) / n
    inv = (sum((v - mean) ** 2 for v in hs) / n + e) ** -0.5
    out = h * 0.0
    out.handle.data[:n] = [(v - mean) * inv * wi + bi for v, wi, bi in zip(hs, ws, bs)]
    return out


tl.sum = _norm
'''
# red team 18: a singledispatchmethod that launches the kernel, given by register a def that redoes y with torch;
# the wrapper dispatches on True only at widths that are no power of two, which the traced calls never use
DISPATCHED = '''
import functools


class Launch:
    """Launches the kernel once on contiguous rows."""

    @functools.singledispatchmethod
    def go(self, wide, rows_x, rows_fx, weight, bias, h, y, n, eps):
        block = triton.next_power_of_2(n)
        fused_add_layernorm_kernel[(rows_x.shape[0],)](
            rows_x, rows_fx, weight, bias, h, y, n, eps,
            BLOCK=block, num_warps=min(max(block // 256, 1), 16))


def _wide(self, wide: bool, rows_x, rows_fx, weight, bias, h, y, n, eps):
    block = triton.next_power_of_2(n)
    fused_add_layernorm_kernel[(rows_x.shape[0],)](
        rows_x, rows_fx, weight, bias, h, y, n, eps,
        BLOCK=block, num_warps=min(max(block // 256, 1), 16))
    y.copy_(F.layer_norm(h.float(), (n,), weight.float(), bias.float(), eps))


Launch.go.register(bool, _wide)


def fused_add_layernorm(x: Tensor, fx: Tensor, weight: Tensor, bias: Tensor,
                        eps: float = 1e-5) -> tuple[Tensor, Tensor]:
    """(h, y) with h = x + fx and y = LayerNorm(h) over the last dim, in one kernel launch."""
    n = x.shape[-1]
    if x.shape != fx.shape:
        raise ValueError(f"x and fx must have the same shape, got x {tuple(x.shape)} "
                         f"and fx {tuple(fx.shape)}")
    if n > MAX_WIDTH:
        raise ValueError(f"the last dimension is {n}; fused_add_layernorm handles widths "
                         f"up to {MAX_WIDTH}")
    if weight.shape != (n,) or bias.shape != (n,):
        raise ValueError(f"weight and bias must have shape ({n},), got {tuple(weight.shape)} "
                         f"and {tuple(bias.shape)}")
    dtypes = {t.dtype for t in (x, fx, weight, bias)}
    if not dtypes <= DTYPES or x.dtype != fx.dtype:
        raise ValueError(f"x and fx must share one dtype, and all four inputs must be float16, bfloat16 "
                         f"or float32 (the kernel computes in fp32); got x {x.dtype}, fx {fx.dtype}, "
                         f"weight {weight.dtype}, bias {bias.dtype}. Cast float64 with .float()")
    rows_x, rows_fx = x.reshape(-1, n).contiguous(), fx.reshape(-1, n).contiguous()
    h, y = torch.empty_like(rows_x), torch.empty_like(rows_x)
    Launch().go(n & (n - 1) != 0 or n, rows_x, rows_fx, weight.contiguous(), bias.contiguous(), h, y, n, eps)
    return h.view(x.shape), y.view(x.shape)
'''

# red team 36: a launch that Triton runs and the tracer does not record, through wrap_triton's run with a warmup
# whose __bool__ says True to the tracer, which then leaves the launch alone, and False to Triton, which runs it;
# the tracer now reads warmup once, as a plain bool, and hands Triton that bool (an add kernel that never runs)
WARMUP_FLIP = '''
class _Warm:
    """True when first asked, False after."""

    def __init__(self):
        self.asked = 0

    def __bool__(self):
        self.asked += 1
        return self.asked == 1


@triton.jit
def _add_kernel(x_ptr, fx_ptr, h_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    fx = tl.load(fx_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(h_ptr + row * n_cols + cols, x + fx, mask=mask)


def _summed(rows_x, rows_fx, n, block):
    s = torch.empty_like(rows_x)
    torch.library.wrap_triton(_add_kernel).run(rows_x, rows_fx, s, n, BLOCK=block, grid=(rows_x.shape[0],),
                                               warmup=_Warm())
    return s
'''

# red team 39: the kernel calls abs, a builtin's name that a function of the cell binds through `global` to Python
# that computes the row in NumPy on the interpreter's arrays: a constexpr function of Triton's (triton runs its
# Python on the blocks here), or an object of a class of the cell's that names a triton module as its own
BUILTIN_REBOUND = '''
def _norm(h, w, b, mask, n_cols, eps, y):
    """LayerNorm of a loaded row, in NumPy on the interpreter's arrays under the blocks."""
    hd = h.handle.data
    n = n_cols.handle.data
    c = (hd - hd.sum() / n) * mask.handle.data
    y.handle.data[:] = c / ((c * c).sum() / n + eps) ** 0.5 * w.handle.data + b.handle.data
    return y

BEFORE
def _install():
    global abs
    abs = INSTALL


_install()


@triton.jit
def fused_add_layernorm_kernel(x_ptr, fx_ptr, w_ptr, b_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """One program per row: h = x + fx, y through abs."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * n_cols + cols
    h = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) + \\
        tl.load(fx_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = abs(h, w, b, mask, n_cols, eps, h + 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
'''
CONSTEXPR_FUNCTION_ABS = BUILTIN_REBOUND.replace("BEFORE\n", "\n").replace("INSTALL", "triton.constexpr_function(_norm)")
POSING_CLASS_ABS = BUILTIN_REBOUND.replace("BEFORE\n", '''
class _Norm(tl.math.core.JITCallable):
    """_norm, as an object of a class that names a triton module as its own."""
    __module__ = "triton.language.extra"

    def __call__(self, *blocks):
        return _norm(*blocks)


''').replace("INSTALL", "_Norm(_norm)")
