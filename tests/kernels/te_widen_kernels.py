"""Kernels of the patterns that keep a recorded bundle from serving sizes nobody ran (issue 37),
for the tests of `triton-embed-bundle widen` and of recordings that widen.

- rows_kernel: integer arguments Triton specialises (n_rows, n_cols and the stride are
  "divisible by 16" at one size, not at another, and 1 becomes a constexpr).
- rope_kernel: sizes carried in constexprs (BATCH, HEADS), as rotary-embedding kernels do;
  rope_heur_kernel: the same under @triton.heuristics, which sets BLOCK_H from HEADS.
- mm_kernel: autotuned on M; the bundle records a few M, and a rule given to widen serves the
  others (the recording declares none).
- copy_kernel: autotuned, its configs' pre-hook of the fused-attention tutorial's form, called
  with host descriptors and with pointers: both served without Python.

The tuned kernel benchmarks with fake timings when TE_FAKE_BENCH is set (compile-only tests on
a machine without a GPU): the config nearest to M on a log2 scale wins.
"""

import os

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from pykernels.rope import rope_body


@triton.jit
def rows_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, stride, eps, BLOCK: tl.constexpr):
    """out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, one program per row."""
    row = tl.program_id(0)
    if row < n_rows:
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(out_ptr + row * stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty),
                 mask=mask)


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, BATCH: tl.constexpr,
                HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr):
    """pykernels.rope's rotation (x [BATCH, seq_len, HEADS, HEAD_DIM]); grid: (seq_len,)."""
    rope_body(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, BATCH, HEADS, HEAD_DIM, BLOCK_H)


@triton.heuristics({"BLOCK_H": lambda args: triton.next_power_of_2(args["HEADS"])})
@triton.jit
def rope_heur_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, BATCH: tl.constexpr,
                     HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr):
    rope_body(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, BATCH, HEADS, HEAD_DIM, BLOCK_H)


_MM_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3)
    for bm in (16, 64, 128)
]


def _bench(kernel_call, quantiles=None):
    """Triton's do_bench, or with TE_FAKE_BENCH set fake timings by M: the config whose
    BLOCK_M is nearest to M on a log2 scale wins (the larger on a tie)."""
    if not os.environ.get("TE_FAKE_BENCH"):
        return triton.testing.do_bench(kernel_call, quantiles=quantiles)
    import inspect
    import math

    closure = inspect.getclosurevars(kernel_call).nonlocals
    block = closure["config"].kwargs["BLOCK_M"]
    m = max(int(closure["full_nargs"]["M"]), 1)
    ms = 1.0 + abs(math.log2(block) - math.log2(m)) - block * 1e-9
    return [ms, ms * 0.9, ms * 1.1]


@triton.autotune(configs=_MM_CONFIGS, key=["M"], do_bench=_bench)
@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """c = a @ b for row-major a [M, K], b [K, N], c [M, N] (fp16 in, fp32 accumulate)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# The fused-attention tutorial's pre-hook form: descriptors get their block shapes from the
# config only when the call passes descriptors; with tensors the hook returns at once.
def _tutorial_form_hook(nargs):
    BM = nargs["BLOCK_M"]
    BN = nargs["BLOCK_N"]
    if TensorDescriptor is None or not isinstance(nargs["src"], TensorDescriptor):
        return
    nargs["src"].block_shape = [BM, BN]
    nargs["dst"].block_shape = [BM, BN]


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": 64}, pre_hook=_tutorial_form_hook)
             for bm in (32, 128)],
    key=["M"], do_bench=_bench)
@triton.jit
def copy_kernel(src, dst, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dst = src for [M, N] fp32 (N a multiple of BLOCK_N): host descriptors or pointers."""
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    if isinstance(src, tl.tensor_descriptor):
        dst.store([m0, n0], src.load([m0, n0]))
    else:
        rows = m0 + tl.arange(0, BLOCK_M)
        cols = n0 + tl.arange(0, BLOCK_N)
        offs = rows[:, None] * N + cols[None, :]
        mask = rows[:, None] < M
        tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)
