"""Autotuned attention forward pass (flash-attention style) for fp16 / bf16.

q, k, v and the output o are [Z, H, N_CTX, HEAD_DIM] (any strides; the last one is usually 1).
Each program owns BLOCK_M query rows of one (z, h) pair and streams over the keys in blocks
of BLOCK_N, keeping a running row maximum and a running sum of exponentials (online softmax),
so the N_CTX x N_CTX score matrix is never formed. Scores accumulate in fp32.

M receives, for every query row, the natural-log logsumexp of its (scaled, masked) scores,
``log(sum_j exp(sm_scale * q.k_j))``, in an fp32 buffer of [Z * H, N_CTX] (row-major,
contiguous); a backward pass would use it to rebuild the probabilities.

With CAUSAL, query row i sees keys 0..i. The key loop then runs in two parts: key blocks that
lie wholly left of the query block (no mask needed), and the key blocks on the diagonal (causal
mask and key-range mask). This needs BLOCK_M to be a multiple of BLOCK_N, which every config
here satisfies. Rows and keys past N_CTX are masked, so N_CTX can be any length.
"""

import triton
import triton.language as tl

# BLOCK_M must be a multiple of BLOCK_N (the causal loop); HEAD_DIM is 16..256, a power of two.
_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 32}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=2),
]


@triton.jit
def _attn_step(acc, row_max, row_sum, q, k_base, v_base, stride_kn, stride_kk, stride_vk,
               stride_vn, start_n, offs_m, N_CTX, qk_scale, HEAD_DIM: tl.constexpr,
               BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    """One key block [start_n, start_n + BLOCK_N): updates acc, row_max (log2 units), row_sum."""
    offs_n = start_n + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    k_ptrs = k_base + offs_n.to(tl.int64)[:, None] * stride_kn + dims[None, :] * stride_kk
    v_ptrs = v_base + offs_n.to(tl.int64)[:, None] * stride_vk + dims[None, :] * stride_vn
    if MASKED:
        key_ok = offs_n < N_CTX
        k = tl.load(k_ptrs, mask=key_ok[:, None], other=0.0)
        v = tl.load(v_ptrs, mask=key_ok[:, None], other=0.0)
    else:
        k = tl.load(k_ptrs)
        v = tl.load(v_ptrs)

    s = tl.dot(q, tl.trans(k)) * qk_scale  # [BLOCK_M, BLOCK_N], log2 units
    if MASKED:
        keep = key_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, float("-inf"))

    # Every row has a finite maximum by now: the first key block a row sees always holds
    # key 0 or a key <= the row (see the loops in the kernel), so no -inf - -inf below.
    new_max = tl.maximum(row_max, tl.max(s, 1))
    p = tl.exp2(s - new_max[:, None])
    rescale = tl.exp2(row_max - new_max)
    row_sum = row_sum * rescale + tl.sum(p, 1)
    acc = acc * rescale[:, None]
    acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, new_max, row_sum


@triton.autotune(configs=_CONFIGS, key=["N_CTX", "HEAD_DIM"])
@triton.jit
def attn_fwd_kernel(Q, K, V, sm_scale, M, Out,
                    stride_qz, stride_qh, stride_qm, stride_qk,
                    stride_kz, stride_kh, stride_kn, stride_kk,
                    stride_vz, stride_vh, stride_vk, stride_vn,
                    stride_oz, stride_oh, stride_om, stride_on,
                    Z, H, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Out = softmax(sm_scale * Q K^T [causal]) V; grid: (cdiv(N_CTX, BLOCK_M), Z * H)."""
    tl.static_assert(BLOCK_M % BLOCK_N == 0, "BLOCK_M must be a multiple of BLOCK_N")
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    z = (zh // H).to(tl.int64)
    h = (zh % H).to(tl.int64)
    q_base = Q + z * stride_qz + h * stride_qh
    k_base = K + z * stride_kz + h * stride_kh
    v_base = V + z * stride_vz + h * stride_vh
    o_base = Out + z * stride_oz + h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_CTX
    q = tl.load(q_base + offs_m.to(tl.int64)[:, None] * stride_qm + dims[None, :] * stride_qk,
                mask=row_ok[:, None], other=0.0)

    qk_scale = sm_scale * 1.4426950408889634  # exp(x) == exp2(x * log2(e))
    row_max = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    if CAUSAL:
        # Key blocks wholly left of this query block: all keys < start_m * BLOCK_M < N_CTX.
        diag = start_m * BLOCK_M
        for start_n in range(0, diag, BLOCK_N):
            acc, row_max, row_sum = _attn_step(acc, row_max, row_sum, q, k_base, v_base,
                                               stride_kn, stride_kk, stride_vk, stride_vn,
                                               start_n, offs_m, N_CTX, qk_scale, HEAD_DIM,
                                               BLOCK_N, False, True)
        # The diagonal: causal mask and key-range mask.
        hi = tl.minimum(diag + BLOCK_M, N_CTX)
        for start_n in range(diag, hi, BLOCK_N):
            acc, row_max, row_sum = _attn_step(acc, row_max, row_sum, q, k_base, v_base,
                                               stride_kn, stride_kk, stride_vk, stride_vn,
                                               start_n, offs_m, N_CTX, qk_scale, HEAD_DIM,
                                               BLOCK_N, True, True)
    else:
        # Whole key blocks without a mask, then the ragged tail (if any) with one.
        full = (N_CTX // BLOCK_N) * BLOCK_N
        for start_n in range(0, full, BLOCK_N):
            acc, row_max, row_sum = _attn_step(acc, row_max, row_sum, q, k_base, v_base,
                                               stride_kn, stride_kk, stride_vk, stride_vn,
                                               start_n, offs_m, N_CTX, qk_scale, HEAD_DIM,
                                               BLOCK_N, False, False)
        for start_n in range(full, N_CTX, BLOCK_N):
            acc, row_max, row_sum = _attn_step(acc, row_max, row_sum, q, k_base, v_base,
                                               stride_kn, stride_kk, stride_vk, stride_vn,
                                               start_n, offs_m, N_CTX, qk_scale, HEAD_DIM,
                                               BLOCK_N, True, False)

    out = acc / row_sum[:, None]
    lse = (row_max + tl.log2(row_sum)) * 0.6931471805599453  # back to natural log
    tl.store(M + zh.to(tl.int64) * N_CTX + offs_m, lse, mask=row_ok)
    o_ptrs = o_base + offs_m.to(tl.int64)[:, None] * stride_om + dims[None, :] * stride_on
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None])


def attention(q, k, v, causal=True, sm_scale=None):
    """(o, m): attention of q, k, v [Z, H, N_CTX, HEAD_DIM] and its logsumexp [Z * H, N_CTX]."""
    import torch

    Z, H, N_CTX, HEAD_DIM = q.shape
    assert k.shape == q.shape and v.shape == q.shape, (q.shape, k.shape, v.shape)
    assert HEAD_DIM in (16, 32, 64, 128, 256), "HEAD_DIM must be a power of two in 16..256"
    if sm_scale is None:
        sm_scale = HEAD_DIM ** -0.5
    o = torch.empty_like(q)
    m = torch.empty((Z * H, N_CTX), device=q.device, dtype=torch.float32)
    grid = lambda META: (triton.cdiv(N_CTX, META["BLOCK_M"]), Z * H)  # noqa: E731
    attn_fwd_kernel[grid](q, k, v, sm_scale, m, o,
                          q.stride(0), q.stride(1), q.stride(2), q.stride(3),
                          k.stride(0), k.stride(1), k.stride(2), k.stride(3),
                          v.stride(0), v.stride(1), v.stride(2), v.stride(3),
                          o.stride(0), o.stride(1), o.stride(2), o.stride(3),
                          Z, H, N_CTX, HEAD_DIM=HEAD_DIM, CAUSAL=causal)
    return o, m
