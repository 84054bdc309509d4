"""Kernels of the tuning benchmark (bench/tuning_bench.py): a persistent matmul whose every tile
moves by TMA, autotuned over 48 configs whose pre-hook sets the descriptors' block shapes (the
shape of Triton's persistent-matmul tutorial: tile sizes, stages, warps and an epilogue that
stores the tile in two halves); and a row-wise kernel whose row length is a constexpr, so that
each tuning key of a value list compiles its own kernels (`triton-embed-bundle tune`, `build`)."""

import itertools

import triton
import triton.language as tl


def _matmul_blocks(nargs):
    """The descriptors' block shapes follow the config's tile; the output's block is half as
    wide when the config stores the tile in two halves."""
    BLOCK_M = nargs["BLOCK_M"]
    BLOCK_N = nargs["BLOCK_N"]
    BLOCK_K = nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [BLOCK_M, BLOCK_K]
    nargs["b_desc"].block_shape = [BLOCK_N, BLOCK_K]
    if nargs["SUBTILE"]:
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N // 2]
    else:
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N]


MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": bk, "SUBTILE": sub}, num_stages=s,
                  num_warps=w, pre_hook=_matmul_blocks)
    for bn, bk, s, w, sub in itertools.product((128, 256), (64, 128), (2, 3, 4), (4, 8), (True, False))
]


@triton.autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"])
@triton.jit
def tma_matmul_48(a_desc, b_desc, c_desc, M, N, K, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SUBTILE: tl.constexpr):
    """C (M x N) = A (M x K) @ B^T, B stored N x K; each of NUM_SMS programs walks the output
    tiles pid, pid + NUM_SMS, ..."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(pid, tiles_m * tiles_n, NUM_SMS, flatten=True):
        om = (tile // tiles_n) * BLOCK_M
        on = (tile % tiles_n) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([om, kt * BLOCK_K])
            b = b_desc.load([on, kt * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        if SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([om, on], left.to(c_desc.dtype))
            c_desc.store([om, on + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([om, on], acc.to(c_desc.dtype))


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 512, 1024) for w in (4, 8)],
    key=["n_rows", "N"],
)
@triton.jit
def row_softmax(x_ptr, out_ptr, n_rows, N: tl.constexpr, BLOCK: tl.constexpr):
    """out = softmax(x) row by row, rows of N (a constexpr: every N compiles its own kernels)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mx = tl.full((BLOCK,), float("-inf"), tl.float32)
    for start in tl.static_range(0, N, BLOCK):
        v = tl.load(x_ptr + row * N + start + cols, mask=start + cols < N, other=float("-inf"))
        mx = tl.maximum(mx, v.to(tl.float32))
    m = tl.max(mx, 0)
    total = tl.zeros((BLOCK,), tl.float32)
    for start in tl.static_range(0, N, BLOCK):
        v = tl.load(x_ptr + row * N + start + cols, mask=start + cols < N, other=float("-inf"))
        total += tl.exp(v.to(tl.float32) - m)
    s = tl.sum(total, 0)
    for start in tl.static_range(0, N, BLOCK):
        v = tl.load(x_ptr + row * N + start + cols, mask=start + cols < N, other=float("-inf"))
        y = tl.exp(v.to(tl.float32) - m) / s
        tl.store(out_ptr + row * N + start + cols, y.to(out_ptr.dtype.element_ty),
                 mask=start + cols < N)


@triton.jit
def row_normalize(x_ptr, out_ptr, n_rows, N: tl.constexpr, BLOCK: tl.constexpr):
    """out = x / max(|x|) row by row, rows of N (a constexpr: every N compiles its own kernel;
    the `build` rows compile one per call)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mx = tl.zeros((BLOCK,), tl.float32)
    for start in tl.static_range(0, N, BLOCK):
        v = tl.load(x_ptr + row * N + start + cols, mask=start + cols < N, other=0.0)
        mx = tl.maximum(mx, tl.abs(v.to(tl.float32)))
    m = tl.max(mx, 0)
    for start in tl.static_range(0, N, BLOCK):
        v = tl.load(x_ptr + row * N + start + cols, mask=start + cols < N, other=0.0)
        tl.store(out_ptr + row * N + start + cols, (v.to(tl.float32) / m).to(out_ptr.dtype.element_ty),
                 mask=start + cols < N)
