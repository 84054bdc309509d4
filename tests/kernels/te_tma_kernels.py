"""Kernels that take host-side tensor descriptors (triton.tools.tensor_descriptor), used by
tests/cpp/test_tma.cc: copies of rank 1 to 3, a persistent TMA matmul, an autotuned kernel whose
configs' pre-hooks set the block shapes, and kernels that make their descriptors on the device
(one autotuned)."""

import triton
import triton.language as tl


@triton.jit
def tma_copy_1d(src, dst, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK
    dst.store([off], src.load([off]))


@triton.jit
def tma_copy_2d(src, dst, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    om = tl.program_id(0) * BLOCK_M
    on = tl.program_id(1) * BLOCK_N
    dst.store([om, on], src.load([om, on]))


@triton.jit
def tma_copy_3d(src, dst, BLOCK_A: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr):
    oa = tl.program_id(0) * BLOCK_A
    ob = tl.program_id(1) * BLOCK_B
    oc = tl.program_id(2) * BLOCK_C
    dst.store([oa, ob, oc], src.load([oa, ob, oc]))


@triton.jit
def tma_scale_2d(src, dst, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A descriptor beside a runtime scalar: dst = src * alpha, tile by tile."""
    om = tl.program_id(0) * BLOCK_M
    on = tl.program_id(1) * BLOCK_N
    tile = src.load([om, on])
    dst.store([om, on], (tile * alpha).to(tile.dtype))


@triton.jit
def tma_persistent_matmul(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    """C (M x N) = A (M x K) @ B (K x N) with every tile moved by TMA; each program walks the
    output tiles pid, pid + NUM_PROGRAMS, ... (a persistent grid of NUM_PROGRAMS programs)."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(pid, tiles_m * tiles_n, NUM_PROGRAMS, flatten=True):
        om = (tile // tiles_n) * BLOCK_M
        on = (tile % tiles_n) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([om, kt * BLOCK_K])
            b = b_desc.load([kt * BLOCK_K, on])
            acc = tl.dot(a, b, acc)
        c_desc.store([om, on], acc.to(c_desc.dtype))


@triton.jit
def device_desc_scale(src_ptr, dst_ptr, M, N, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dst = src * alpha through descriptors made on the device (tl.make_tensor_descriptor),
    whose CUtensorMaps live in the global scratch memory each launch allocates."""
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    om = tl.program_id(0) * BLOCK_M
    on = tl.program_id(1) * BLOCK_N
    tile = src.load([om, on])
    dst.store([om, on], (tile * alpha).to(tile.dtype))


def _block_shapes_from_config(nargs):
    """A config pre-hook as in Triton's persistent matmul tutorial: the descriptors' block
    shapes follow the config's tile sizes."""
    nargs["src"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]
    nargs["dst"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=4, pre_hook=_block_shapes_from_config),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, pre_hook=_block_shapes_from_config),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, pre_hook=_block_shapes_from_config),
    ],
    key=["M", "N"],
)
@triton.jit
def tuned_tma_scale(src, dst, M, N, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dst = src * alpha, tile by tile, with host descriptors whose block shapes each config's
    pre-hook sets (the caller's block shape is a placeholder)."""
    om = tl.program_id(0) * BLOCK_M
    on = tl.program_id(1) * BLOCK_N
    tile = src.load([om, on])
    dst.store([om, on], (tile * alpha).to(tile.dtype))


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128}, num_warps=8),
    ],
    key=["M", "N"],
)
@triton.jit
def tuned_device_desc_scale(src_ptr, dst_ptr, M, N, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """device_desc_scale, autotuned: each config's benchmark launches through Triton's launcher,
    which takes the descriptors' global scratch from triton.set_allocator's allocator."""
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    om = tl.program_id(0) * BLOCK_M
    on = tl.program_id(1) * BLOCK_N
    tile = src.load([om, on])
    dst.store([om, on], (tile * alpha).to(tile.dtype))
