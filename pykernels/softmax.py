"""Row-wise softmax (forward and backward) over the last dimension of a 2-D view.

One program handles one row. Rows that fit in ``BLOCK`` are processed from registers in a
single pass; wider rows loop over column blocks. Math runs in ``COMPUTE``.
"""

import triton
import triton.language as tl

from pykernels.heuristics import row_warps


@triton.heuristics({"num_warps": row_warps})
@triton.jit
def softmax_fwd_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr,
                       COMPUTE: tl.constexpr):
    """y[row, :] = softmax(x[row, :]); a row of all -inf gives NaN, as in torch."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    cols = tl.arange(0, BLOCK)
    if n_cols <= BLOCK:
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(COMPUTE)
        e = tl.exp(x - tl.max(x, 0))
        e = tl.where(mask, e, 0.0)
        y = e / tl.sum(e, 0)
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # Online pass: per-lane running max m and sum s of exp(x - m).
        m = tl.full([BLOCK], -float("inf"), COMPUTE)
        s = tl.zeros([BLOCK], COMPUTE)
        for start in range(0, n_cols, BLOCK):
            offs = start + cols
            x = tl.load(x_row + offs, mask=offs < n_cols, other=-float("inf")).to(COMPUTE)
            m_new = tl.maximum(m, x)
            # While a lane has only seen -inf, keep its sum at 0 (avoids -inf - -inf).
            none_yet = m_new == -float("inf")
            s = s * tl.where(none_yet, 0.0, tl.exp(m - m_new)) + tl.where(none_yet, 0.0, tl.exp(x - m_new))
            m = m_new
        row_max = tl.max(m, 0)
        # Lanes with m = -inf contribute 0; if the whole row is -inf this is NaN (as torch).
        total = tl.sum(s * tl.exp(m - row_max), 0)
        for start in range(0, n_cols, BLOCK):
            offs = start + cols
            mask = offs < n_cols
            x = tl.load(x_row + offs, mask=mask, other=-float("inf")).to(COMPUTE)
            y = tl.exp(x - row_max) / total
            tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.heuristics({"num_warps": row_warps})
@triton.jit
def softmax_bwd_kernel(dy_ptr, y_ptr, dx_ptr, n_cols, dy_row_stride, y_row_stride, dx_row_stride,
                       BLOCK: tl.constexpr, COMPUTE: tl.constexpr):
    """dx[row, :] = y * (dy - sum(dy * y)) for each row."""
    row = tl.program_id(0).to(tl.int64)
    dy_row = dy_ptr + row * dy_row_stride
    y_row = y_ptr + row * y_row_stride
    dx_row = dx_ptr + row * dx_row_stride
    cols = tl.arange(0, BLOCK)
    if n_cols <= BLOCK:
        mask = cols < n_cols
        dy = tl.load(dy_row + cols, mask=mask, other=0).to(COMPUTE)
        y = tl.load(y_row + cols, mask=mask, other=0).to(COMPUTE)
        dot = tl.sum(dy * y, 0)
        tl.store(dx_row + cols, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK], COMPUTE)
        for start in range(0, n_cols, BLOCK):
            offs = start + cols
            mask = offs < n_cols
            dy = tl.load(dy_row + offs, mask=mask, other=0).to(COMPUTE)
            y = tl.load(y_row + offs, mask=mask, other=0).to(COMPUTE)
            acc += dy * y
        dot = tl.sum(acc, 0)
        for start in range(0, n_cols, BLOCK):
            offs = start + cols
            mask = offs < n_cols
            dy = tl.load(dy_row + offs, mask=mask, other=0).to(COMPUTE)
            y = tl.load(y_row + offs, mask=mask, other=0).to(COMPUTE)
            tl.store(dx_row + offs, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask)
