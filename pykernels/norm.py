"""LayerNorm and RMSNorm (forward and backward) over the rows of a contiguous (M, N) view.

One set of kernels serves both: RMSNorm is LayerNorm without centring, so a kernel given
``mean_ptr=None`` (and no bias) computes RMSNorm. Row kernels run one program per row; rows
that fit in ``BLOCK`` are kept in registers, wider rows loop over column blocks. Statistics
are computed in the element type of ``rstd_ptr`` (fp32, or fp64 for fp64 inputs). Weight and
bias pointers may be None. The dw/db kernel reduces over rows per column block without
atomics (deterministic).
"""

import triton
import triton.language as tl

from pykernels.heuristics import row_warps


@triton.jit
def _affine(y, w_ptr, b_ptr, offs, mask, CT: tl.constexpr):
    """y * w + b, each factor only when its pointer is given."""
    if w_ptr is not None:
        y = y * tl.load(w_ptr + offs, mask=mask, other=0).to(CT)
    if b_ptr is not None:
        y = y + tl.load(b_ptr + offs, mask=mask, other=0).to(CT)
    return y


@triton.jit
def _load_x_wdy(x_row, dy_row, w_ptr, offs, mask, CT: tl.constexpr):
    """x and w * dy (just dy without a weight) for one block of a row."""
    x = tl.load(x_row + offs, mask=mask, other=0).to(CT)
    wdy = tl.load(dy_row + offs, mask=mask, other=0).to(CT)
    if w_ptr is not None:
        wdy = wdy * tl.load(w_ptr + offs, mask=mask, other=0).to(CT)
    return x, wdy


@triton.heuristics({"num_warps": row_warps})
@triton.jit
def norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    """y = (x - mean) * rstd * w + b per row, rstd = 1 / sqrt(var + eps) (biased variance);
    stores mean and rstd. With mean_ptr None (RMSNorm): mean = 0, var = mean(x^2)."""
    CT = rstd_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    cols = tl.arange(0, BLOCK)
    if N <= BLOCK:
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0).to(CT)
        if mean_ptr is not None:
            mean = tl.sum(x, 0) / N
            x = tl.where(mask, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, 0) / N + tl.cast(eps, CT))
        y = _affine(x * rstd, w_ptr, b_ptr, cols, mask, CT)
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        mean = 0.0
        if mean_ptr is not None:
            acc = tl.zeros([BLOCK], CT)
            for start in range(0, N, BLOCK):
                offs = start + cols
                acc += tl.load(x_row + offs, mask=offs < N, other=0).to(CT)
            mean = tl.sum(acc, 0) / N
        acc = tl.zeros([BLOCK], CT)
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x = tl.load(x_row + offs, mask=mask, other=0).to(CT)
            xc = tl.where(mask, x - mean, 0.0)
            acc += xc * xc
        rstd = 1.0 / tl.sqrt(tl.sum(acc, 0) / N + tl.cast(eps, CT))
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x = tl.load(x_row + offs, mask=mask, other=0).to(CT)
            y = _affine((x - mean) * rstd, w_ptr, b_ptr, offs, mask, CT)
            tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    if mean_ptr is not None:
        tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.heuristics({"num_warps": row_warps})
@triton.jit
def norm_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, N, BLOCK: tl.constexpr):
    """dx = rstd * (w*dy - xhat * mean(w*dy * xhat) - mean(w*dy)) per row; with mean_ptr None
    (RMSNorm) xhat = x * rstd and the last term is dropped."""
    CT = rstd_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    dy_row = dy_ptr + row * N
    x_row = x_ptr + row * N
    dx_row = dx_ptr + row * N
    mean = 0.0
    if mean_ptr is not None:
        mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    cols = tl.arange(0, BLOCK)
    if N <= BLOCK:
        mask = cols < N
        x, wdy = _load_x_wdy(x_row, dy_row, w_ptr, cols, mask, CT)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        c1 = tl.sum(xhat * wdy, 0) / N
        c2 = 0.0
        if mean_ptr is not None:
            c2 = tl.sum(wdy, 0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(dx_row + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        acc1 = tl.zeros([BLOCK], CT)
        acc2 = tl.zeros([BLOCK], CT)
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x, wdy = _load_x_wdy(x_row, dy_row, w_ptr, offs, mask, CT)
            acc1 += tl.where(mask, (x - mean) * rstd, 0.0) * wdy
            acc2 += wdy
        c1 = tl.sum(acc1, 0) / N
        c2 = 0.0
        if mean_ptr is not None:
            c2 = tl.sum(acc2, 0) / N
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x, wdy = _load_x_wdy(x_row, dy_row, w_ptr, offs, mask, CT)
            dx = (wdy - ((x - mean) * rstd * c1 + c2)) * rstd
            tl.store(dx_row + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def norm_bwd_dwdb_kernel(dy_ptr, x_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, M, N,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dw[j] = sum_i dy[i, j] * xhat[i, j], db[j] = sum_i dy[i, j] for one block of columns;
    xhat = (x - mean) * rstd, or x * rstd with mean_ptr None. dw_ptr / db_ptr may be None."""
    CT = rstd_ptr.dtype.element_ty
    cols = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc_w = tl.zeros([BLOCK_M, BLOCK_N], CT)
    acc_b = tl.zeros([BLOCK_M, BLOCK_N], CT)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        row_mask = rows < M
        mask = row_mask[:, None] & col_mask[None, :]
        offs = rows.to(tl.int64)[:, None] * N + cols[None, :]
        dy = tl.load(dy_ptr + offs, mask=mask, other=0).to(CT)
        if dw_ptr is not None:
            x = tl.load(x_ptr + offs, mask=mask, other=0).to(CT)
            rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0)
            if mean_ptr is not None:
                x = x - tl.load(mean_ptr + rows, mask=row_mask, other=0)[:, None]
            acc_w += dy * (x * rstd[:, None])
        if db_ptr is not None:
            acc_b += dy
    if dw_ptr is not None:
        tl.store(dw_ptr + cols, tl.sum(acc_w, 0).to(dw_ptr.dtype.element_ty), mask=col_mask)
    if db_ptr is not None:
        tl.store(db_ptr + cols, tl.sum(acc_b, 0).to(db_ptr.dtype.element_ty), mask=col_mask)
