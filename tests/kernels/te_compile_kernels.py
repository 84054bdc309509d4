"""Kernels the compile tests build (for an explicit target, no GPU needed)."""

import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * scale, mask=m)


@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["x_ptr"])
def flags_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


@triton.jit
def tuple_kernel(ptrs, sizes, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(ptrs[0] + offs, mask=offs < sizes[0], other=0.0)
    b = tl.load(ptrs[1] + offs, mask=offs < sizes[1], other=0.0)
    tl.store(out_ptr + offs, a + b)


@triton.jit
def dtype_kernel(x_ptr, out_ptr, n, OUT_DTYPE: tl.constexpr, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if MODE == "double":
        x = x * 2
    tl.store(out_ptr + offs, x.to(OUT_DTYPE), mask=m)


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def negate(x):
    return -x


@triton.jit
def apply_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.jit
def annotated_kernel(x_ptr: "*fp32", out_ptr, n: tl.int64, alpha: tl.float16, flag: tl.int1,
                     BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if flag:
        x = x * alpha.to(tl.float32)
    tl.store(out_ptr + offs, x, mask=m)


@triton.jit
def mixed_kernel(x_ptr, out_ptr, n, alpha, use_alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if use_alpha:
        x = x * alpha
    tl.store(out_ptr + offs, x, mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def autotuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.heuristics({"BLOCK": lambda args: 128})
@triton.jit
def heuristic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


not_a_kernel = 42


def plain_python_function(x):
    return x


@triton.jit
def defaults_kernel(x_ptr, out_ptr, sizes=(64, 1), scale=tl.constexpr(2), MODE: tl.constexpr = "double",
                    OUT: tl.constexpr = tl.float16, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < sizes[0])
    if MODE == "double":
        x = x * scale
    tl.store(out_ptr + offs, x.to(OUT), mask=offs < sizes[0])


@triton.jit
def too_many_params(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p20, p21, p22, p23, p24, p25, p26, p27, p28, p29, p30, p31, p32, p33, p34, p35, p36, p37, p38, p39, p40, p41, p42, p43, p44, p45, p46, p47, p48, p49, p50, p51, p52, p53, p54, p55, p56, p57, p58, p59, p60, p61, p62, p63, p64, p65, p66, p67, p68, p69, p70, p71, p72, p73, p74, p75, p76, p77, p78, p79, p80, p81, p82, p83, p84, p85, p86, p87, p88, p89, p90, p91, p92, p93, p94, p95, p96):  # noqa: E501 (one line: as written, many parameters)
    pass


@triton.jit
def knob_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A multiply-add (FP fusion changes its code): compiled under the option-changing knobs."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * y + x, mask=m)
