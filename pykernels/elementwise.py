"""Element-wise binary kernels with broadcasting over up to four dimensions.

The output is contiguous; each input is addressed either flat (``STRIDED`` False) or
through per-dimension element strides (a stride of 0 broadcasts that dimension).
Arithmetic runs in ``COMPUTE`` and the result is cast to the output's element type.
"""

import triton
import triton.language as tl


@triton.jit
def binary_kernel(a_ptr, b_ptr, out_ptr, alpha, n, s1, s2, s3, as0, as1, as2, as3, bs0, bs1, bs2, bs3,
                  OP: tl.constexpr, STRIDED: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """OP 0: out = a + alpha * b; OP 1: out = a * b (strided/broadcast inputs when STRIDED)."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if STRIDED:
        # Unravel the flat output index into (i0, i1, i2, i3) of shape (s0, s1, s2, s3).
        i3 = offs % s3
        rest = offs // s3
        i2 = rest % s2
        rest = rest // s2
        i1 = rest % s1
        i0 = rest // s1
        a_offs = i0 * as0 + i1 * as1 + i2 * as2 + i3 * as3
        b_offs = i0 * bs0 + i1 * bs1 + i2 * bs2 + i3 * bs3
    else:
        a_offs = offs
        b_offs = offs
    a = tl.load(a_ptr + a_offs, mask=mask).to(COMPUTE)
    b = tl.load(b_ptr + b_offs, mask=mask).to(COMPUTE)
    if OP == 0:
        r = a + tl.cast(alpha, COMPUTE) * b
    else:
        r = a * b
    if out_ptr.dtype.element_ty == tl.int1:
        tl.store(out_ptr + offs, r != 0, mask=mask)
    else:
        tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=mask)
