"""Autotuned matrix product c = act(a @ b) for fp16 / bf16 inputs.

``a`` is M x K, ``b`` is K x N, ``c`` is M x N; any strides. Products accumulate in fp32 and
are stored in ``c``'s dtype. Every load and store is masked, so M, N and K need not be
multiples of the block sizes.

Programs are launched on a 1-D grid of ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)`` and mapped to
output tiles in groups of ``GROUP_M`` tile rows: consecutive programs walk down a column of
``GROUP_M`` tiles before moving right, so the rows of ``a`` and the columns of ``b`` they read
are reused from L2.

``matmul_kernel`` is ``autotune(jit)``. ``matmul_heuristic_kernel`` is
``autotune(heuristics(jit))``: the heuristic sets ``EVEN_K`` from the block size the tuner
picked, and the kernel drops the K mask when it is true.
"""

import triton
import triton.language as tl

# Tile shapes for an H100 (sm_90, 228 KB of shared memory per SM). Shared memory per stage
# is (BLOCK_M + BLOCK_N) * BLOCK_K * 2 bytes for 16-bit inputs; the largest here,
# 128 x 256 x 64 over 3 stages, takes 144 KB.
_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=5),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=5),
]


@triton.jit
def _tile_coords(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile row, tile column) of program `pid` in the grouped order."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n  # programs that cover one band of GROUP_M tile rows
    band = pid // per_group
    row0 = band * GROUP_M
    rows_in_band = tl.minimum(tiles_m - row0, GROUP_M)  # the last band may be shorter
    local = pid - band * per_group
    return row0 + local % rows_in_band, local // rows_in_band


@triton.jit
def _activate(x, ACTIVATION: tl.constexpr):
    if ACTIVATION == "leaky_relu":
        x = tl.where(x >= 0, x, 0.01 * x)
    elif ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    else:
        tl.static_assert(ACTIVATION == "", "ACTIVATION must be '', 'relu' or 'leaky_relu'")
    return x


@triton.jit
def _matmul_body(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                 stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr,
                 EVEN_K: tl.constexpr):
    tile_m, tile_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N
    # 64-bit row / column offsets: M * stride_am may not fit in 32 bits.
    a_tile = a_ptr + rows.to(tl.int64)[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols.to(tl.int64)[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_tile, mask=row_ok[:, None], other=0.0)
            b = tl.load(b_tile, mask=col_ok[None, :], other=0.0)
        else:
            k_ok = ks < K - k0
            a = tl.load(a_tile, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            b = tl.load(b_tile, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    acc = _activate(acc, ACTIVATION)
    c_tile = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


@triton.autotune(configs=_CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    """c = ACTIVATION(a @ b); grid: (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N),)."""
    _matmul_body(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                 stride_cm, stride_cn, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ACTIVATION, False)


@triton.autotune(configs=_CONFIGS, key=["M", "N", "K"])
@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def matmul_heuristic_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                            stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                            ACTIVATION: tl.constexpr, EVEN_K: tl.constexpr):
    """As matmul_kernel; EVEN_K (K % BLOCK_K == 0, set by the heuristic) drops the K mask."""
    _matmul_body(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                 stride_cm, stride_cn, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, ACTIVATION, EVEN_K)


def matmul(a, b, activation="", out_dtype=None, kernel=None):
    """act(a @ b) with the autotuned kernel (Python-side reference runs)."""
    import torch

    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0], (a.shape, b.shape)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=out_dtype or a.dtype)
    kernel = kernel or matmul_kernel
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)  # noqa: E731
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1), ACTIVATION=activation)
    return c
