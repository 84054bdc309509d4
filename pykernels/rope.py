"""Rotary position embedding whose sizes are constexprs, as LLM kernel libraries write it.

x and out are [BATCH, seq_len, HEADS, HEAD_DIM] (contiguous); cos and sin are
[seq_len, HEAD_DIM // 2] (fp32). Each head's vector is rotated by position: its first half a
and second half b become (a cos - b sin, b cos + a sin). One program per position handles every
batch and head, so BATCH and HEADS are compiled in: every batch size is another kernel, which
`triton-embed-bundle widen --values ...:BATCH=...` adds to a recorded bundle.
"""

import triton
import triton.language as tl


@triton.jit
def rope_body(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, BATCH: tl.constexpr, HEADS: tl.constexpr,
              HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr):
    """The rotation at position program_id(0), for all BATCH x HEADS vectors (BLOCK_H >= HEADS,
    a power of two)."""
    pos = tl.program_id(0)
    half: tl.constexpr = HEAD_DIM // 2
    heads = tl.arange(0, BLOCK_H)
    dims = tl.arange(0, half)
    hmask = heads[:, None] < HEADS
    c = tl.load(cos_ptr + pos * half + dims)[None, :].to(tl.float32)
    s = tl.load(sin_ptr + pos * half + dims)[None, :].to(tl.float32)
    for b in tl.static_range(BATCH):
        base = ((b * seq_len + pos) * HEADS + heads[:, None]) * HEAD_DIM
        lo = tl.load(x_ptr + base + dims[None, :], mask=hmask, other=0.0).to(tl.float32)
        hi = tl.load(x_ptr + base + half + dims[None, :], mask=hmask, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + dims[None, :], (lo * c - hi * s).to(out_ptr.dtype.element_ty),
                 mask=hmask)
        tl.store(out_ptr + base + half + dims[None, :],
                 (hi * c + lo * s).to(out_ptr.dtype.element_ty), mask=hmask)


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, BATCH: tl.constexpr,
                HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr):
    """out = rope(x); grid: (seq_len,)."""
    rope_body(x_ptr, cos_ptr, sin_ptr, out_ptr, seq_len, BATCH, HEADS, HEAD_DIM, BLOCK_H)
