"""The kernels of test_call_patterns.py, made by make() so that the test can make them twice:
once as the suite's kernels, once under Triton's interpreter (TRITON_INTERPRET's
InterpretedFunction) as the reference for a machine without a GPU."""

import types

import triton
import triton.language as tl


def make():
    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)

    @triton.jit
    def scale_by_kernel(x_ptr, out_ptr, n, s_ptr, BLOCK: tl.constexpr):
        """out = x * s[0]: s is a tensor (a 0-d one is a pointer too)."""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * tl.load(s_ptr), mask=mask)

    @triton.heuristics({"BLOCK": lambda args: 128 if args["n"] < 4096 else 512})
    @triton.jit
    def heur_scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)

    @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
    @triton.jit
    def tuned_scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)

    @triton.jit
    def twice(v):
        return v * 2

    @triton.jit
    def apply_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
        """out = FN(x): FN is a @triton.jit function given as an argument."""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=mask)), mask=mask)

    @triton.jit
    def apply_cast_kernel(x_ptr, out_ptr, n, D: tl.constexpr, FN: tl.constexpr, BLOCK: tl.constexpr):
        """out = FN(x) cast to the tl.dtype D."""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=mask)).to(D), mask=mask)

    @triton.jit
    def hooked_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)

    hooked_kernel.add_pre_run_hook(lambda *args, **kwargs: None)
    return types.SimpleNamespace(**{k: v for k, v in locals().items() if k != "types"})
