"""Autotuned attention forward (non-causal) over tensor descriptors: TMA loads and stores.

q, k, v and o are [ZH, N_CTX, HEAD_DIM] (contiguous; ZH = batch x heads). The kernel takes them
in either of two forms, as Triton's fused-attention tutorial does:
- host tensor descriptors (triton.tools.tensor_descriptor.TensorDescriptor, or
  triton_embed::TensorDescriptor from C++): the config's pre-hook sets their block shapes from
  the config's tile, and the launch passes the encoded maps;
- the tensors themselves: the kernel makes the descriptors on the device (global scratch from
  the allocator), and the pre-hook does nothing.
The pre-hook starts with the tutorial's test (`if not isinstance(...): return`), which a program
without Python applies itself (the runtime reads the argument's kind).

Each program owns BLOCK_M query rows of one (z, h) and streams over the keys in blocks of
BLOCK_N with an online softmax (scores in fp32). The descriptors are 3-D with a block of one
(z, h): rows past N_CTX read as zeros and are not written, so N_CTX can be any length.
"""

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


def _descriptor_blocks(nargs):
    BM = nargs["BLOCK_M"]
    BN = nargs["BLOCK_N"]
    HEAD_DIM = nargs["HEAD_DIM"]
    if not isinstance(nargs["desc_q"], TensorDescriptor):
        return
    nargs["desc_q"].block_shape = [1, BM, HEAD_DIM]
    nargs["desc_k"].block_shape = [1, BN, HEAD_DIM]
    nargs["desc_v"].block_shape = [1, BN, HEAD_DIM]
    nargs["desc_o"].block_shape = [1, BM, HEAD_DIM]


_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s,
                  pre_hook=_descriptor_blocks)
    for bm, bn, w, s in [(64, 32, 4, 2), (64, 64, 4, 3), (128, 32, 8, 2), (128, 64, 8, 3)]
]


@triton.jit
def _as_descriptor(t, ZH, N_CTX, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    if isinstance(t, tl.tensor_descriptor):
        return t
    else:
        return tl.make_tensor_descriptor(t, shape=[ZH, N_CTX, HEAD_DIM],
                                         strides=[N_CTX * HEAD_DIM, HEAD_DIM, 1],
                                         block_shape=[1, BLOCK, HEAD_DIM])


@triton.autotune(configs=_CONFIGS, key=["N_CTX", "HEAD_DIM"])
@triton.jit
def attn_fwd_kernel(desc_q, desc_k, desc_v, desc_o, sm_scale, ZH, N_CTX, HEAD_DIM: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """o = softmax(sm_scale * q k^T) v; grid: (cdiv(N_CTX, BLOCK_M), ZH)."""
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    desc_q = _as_descriptor(desc_q, ZH, N_CTX, HEAD_DIM, BLOCK_M)
    desc_k = _as_descriptor(desc_k, ZH, N_CTX, HEAD_DIM, BLOCK_N)
    desc_v = _as_descriptor(desc_v, ZH, N_CTX, HEAD_DIM, BLOCK_N)
    desc_o = _as_descriptor(desc_o, ZH, N_CTX, HEAD_DIM, BLOCK_M)
    q = desc_q.load([zh, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) == exp2(x * log2(e))
    row_max = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        k = desc_k.load([zh, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        v = desc_v.load([zh, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        keys = start_n + tl.arange(0, BLOCK_N)
        s = tl.where(keys[None, :] < N_CTX, s, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(s, 1))
        p = tl.exp2(s - new_max[:, None])
        rescale = tl.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * rescale[:, None])
        row_max = new_max
    out = (acc / row_sum[:, None]).to(q.dtype)
    desc_o.store([zh, start_m * BLOCK_M, 0], out.reshape(1, BLOCK_M, HEAD_DIM))
