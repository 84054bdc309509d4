"""Sum reduction over the middle axis of a contiguous (outer, R, inner) view."""

import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr, out_ptr, R, inner, COMPUTE: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    """out[o, i] = sum_r x[o, r, i], accumulated in COMPUTE; program (o, block of i)."""
    o = tl.program_id(0).to(tl.int64)
    icols = tl.program_id(1).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    imask = icols < inner
    x_base = x_ptr + o * R * inner
    acc = tl.zeros([BLOCK_R, BLOCK_I], COMPUTE)
    for start in range(0, R, BLOCK_R):
        r = start + tl.arange(0, BLOCK_R)
        mask = (r < R)[:, None] & imask[None, :]
        offs = r.to(tl.int64)[:, None] * inner + icols[None, :]
        acc += tl.load(x_base + offs, mask=mask, other=0).to(COMPUTE)
    total = tl.sum(acc, 0)
    out = out_ptr + o * inner + icols
    if out_ptr.dtype.element_ty == tl.int1:
        tl.store(out, total != 0, mask=imask)
    else:
        tl.store(out, total.to(out_ptr.dtype.element_ty), mask=imask)
