"""LayerNorm and RMSNorm (forward and backward) over the rows of a contiguous (M, N) view.

Row kernels run one program per row; rows that fit in ``BLOCK`` are kept in registers, wider
rows loop over column blocks. Statistics are computed in the element type of ``mean_ptr`` /
``rstd_ptr`` (fp32, or fp64 for fp64 inputs). Weight and bias pointers may be None.
The dw/db kernels reduce over rows per column block without atomics (deterministic).
"""

import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    """y = (x - mean) * rstd * w + b per row; stores mean and rstd (biased variance)."""
    CT = mean_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    cols = tl.arange(0, BLOCK)
    if N <= BLOCK:
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0).to(CT)
        mean = tl.sum(x, 0) / N
        xc = tl.where(mask, x - mean, 0.0)
        var = tl.sum(xc * xc, 0) / N
        rstd = 1.0 / tl.sqrt(var + tl.cast(eps, CT))
        y = xc * rstd
        if w_ptr is not None:
            y = y * tl.load(w_ptr + cols, mask=mask, other=0).to(CT)
        if b_ptr is not None:
            y = y + tl.load(b_ptr + cols, mask=mask, other=0).to(CT)
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
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
        var = tl.sum(acc, 0) / N
        rstd = 1.0 / tl.sqrt(var + tl.cast(eps, CT))
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x = tl.load(x_row + offs, mask=mask, other=0).to(CT)
            y = (x - mean) * rstd
            if w_ptr is not None:
                y = y * tl.load(w_ptr + offs, mask=mask, other=0).to(CT)
            if b_ptr is not None:
                y = y + tl.load(b_ptr + offs, mask=mask, other=0).to(CT)
            tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, N, BLOCK: tl.constexpr):
    """dx = rstd * (w*dy - mean(w*dy) - xhat * mean(w*dy * xhat)) per row."""
    CT = mean_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    dy_row = dy_ptr + row * N
    x_row = x_ptr + row * N
    dx_row = dx_ptr + row * N
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    cols = tl.arange(0, BLOCK)
    if N <= BLOCK:
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0).to(CT)
        wdy = tl.load(dy_row + cols, mask=mask, other=0).to(CT)
        if w_ptr is not None:
            wdy = wdy * tl.load(w_ptr + cols, mask=mask, other=0).to(CT)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        c1 = tl.sum(xhat * wdy, 0) / N
        c2 = tl.sum(wdy, 0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(dx_row + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        acc1 = tl.zeros([BLOCK], CT)
        acc2 = tl.zeros([BLOCK], CT)
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x = tl.load(x_row + offs, mask=mask, other=0).to(CT)
            wdy = tl.load(dy_row + offs, mask=mask, other=0).to(CT)
            if w_ptr is not None:
                wdy = wdy * tl.load(w_ptr + offs, mask=mask, other=0).to(CT)
            xhat = tl.where(mask, (x - mean) * rstd, 0.0)
            acc1 += xhat * wdy
            acc2 += wdy
        c1 = tl.sum(acc1, 0) / N
        c2 = tl.sum(acc2, 0) / N
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x = tl.load(x_row + offs, mask=mask, other=0).to(CT)
            wdy = tl.load(dy_row + offs, mask=mask, other=0).to(CT)
            if w_ptr is not None:
                wdy = wdy * tl.load(w_ptr + offs, mask=mask, other=0).to(CT)
            xhat = (x - mean) * rstd
            dx = (wdy - (xhat * c1 + c2)) * rstd
            tl.store(dx_row + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_bwd_dwdb_kernel(dy_ptr, x_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, M, N,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dw[j] = sum_i dy[i, j] * xhat[i, j], db[j] = sum_i dy[i, j] for one block of columns."""
    CT = mean_ptr.dtype.element_ty
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
            mean = tl.load(mean_ptr + rows, mask=row_mask, other=0)
            rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0)
            acc_w += dy * ((x - mean[:, None]) * rstd[:, None])
        if db_ptr is not None:
            acc_b += dy
    if dw_ptr is not None:
        tl.store(dw_ptr + cols, tl.sum(acc_w, 0).to(dw_ptr.dtype.element_ty), mask=col_mask)
    if db_ptr is not None:
        tl.store(db_ptr + cols, tl.sum(acc_b, 0).to(db_ptr.dtype.element_ty), mask=col_mask)


@triton.jit
def rms_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    """y = x * rstd * w per row with rstd = 1 / sqrt(mean(x^2) + eps); stores rstd."""
    CT = rstd_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    y_row = y_ptr + row * N
    cols = tl.arange(0, BLOCK)
    if N <= BLOCK:
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0).to(CT)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, 0) / N + tl.cast(eps, CT))
        y = x * rstd
        if w_ptr is not None:
            y = y * tl.load(w_ptr + cols, mask=mask, other=0).to(CT)
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK], CT)
        for start in range(0, N, BLOCK):
            offs = start + cols
            x = tl.load(x_row + offs, mask=offs < N, other=0).to(CT)
            acc += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(acc, 0) / N + tl.cast(eps, CT))
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            y = tl.load(x_row + offs, mask=mask, other=0).to(CT) * rstd
            if w_ptr is not None:
                y = y * tl.load(w_ptr + offs, mask=mask, other=0).to(CT)
            tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def rms_norm_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, N, BLOCK: tl.constexpr):
    """dx = rstd * (w*dy - x * rstd^2 * mean(w*dy * x)) per row."""
    CT = rstd_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    dy_row = dy_ptr + row * N
    x_row = x_ptr + row * N
    dx_row = dx_ptr + row * N
    rstd = tl.load(rstd_ptr + row)
    cols = tl.arange(0, BLOCK)
    if N <= BLOCK:
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0).to(CT)
        wdy = tl.load(dy_row + cols, mask=mask, other=0).to(CT)
        if w_ptr is not None:
            wdy = wdy * tl.load(w_ptr + cols, mask=mask, other=0).to(CT)
        c = tl.sum(wdy * x, 0) / N * rstd * rstd
        dx = (wdy - x * c) * rstd
        tl.store(dx_row + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK], CT)
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x = tl.load(x_row + offs, mask=mask, other=0).to(CT)
            wdy = tl.load(dy_row + offs, mask=mask, other=0).to(CT)
            if w_ptr is not None:
                wdy = wdy * tl.load(w_ptr + offs, mask=mask, other=0).to(CT)
            acc += wdy * x
        c = tl.sum(acc, 0) / N * rstd * rstd
        for start in range(0, N, BLOCK):
            offs = start + cols
            mask = offs < N
            x = tl.load(x_row + offs, mask=mask, other=0).to(CT)
            wdy = tl.load(dy_row + offs, mask=mask, other=0).to(CT)
            if w_ptr is not None:
                wdy = wdy * tl.load(w_ptr + offs, mask=mask, other=0).to(CT)
            dx = (wdy - x * c) * rstd
            tl.store(dx_row + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_bwd_dw_kernel(dy_ptr, x_ptr, rstd_ptr, dw_ptr, M, N,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dw[j] = sum_i dy[i, j] * x[i, j] * rstd[i] for one block of columns."""
    CT = rstd_ptr.dtype.element_ty
    cols = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros([BLOCK_M, BLOCK_N], CT)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        row_mask = rows < M
        mask = row_mask[:, None] & col_mask[None, :]
        offs = rows.to(tl.int64)[:, None] * N + cols[None, :]
        dy = tl.load(dy_ptr + offs, mask=mask, other=0).to(CT)
        x = tl.load(x_ptr + offs, mask=mask, other=0).to(CT)
        rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0)
        acc += dy * x * rstd[:, None]
    tl.store(dw_ptr + cols, tl.sum(acc, 0).to(dw_ptr.dtype.element_ty), mask=col_mask)
