"""Kernels that take host-side tensor descriptors (triton.tools.tensor_descriptor), used by
tests/cpp/test_tma.cc: copies of rank 1 to 3, a persistent TMA matmul, autotuned kernels whose
configs' pre-hooks set the block shapes (the runtime applies some, Python runs one), and kernels
that make their descriptors on the device (one autotuned)."""

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


# ---- config pre-hooks the runtime applies, tuned without a GPU ------------------------------

# Fake timings by config (BLOCK_M, SUBTILE): the tuner's choice is known in advance and tuning
# needs no GPU (the benchmark never launches the kernel).
FAKE_TMA_MS = {(32, False): 2.0, (64, True): 1.0, (128, False): 3.0}


def fake_tma_bench(kernel_call, quantiles=None):
    import inspect

    config = inspect.getclosurevars(kernel_call).nonlocals["config"]
    ms = FAKE_TMA_MS[(config.kwargs["BLOCK_M"], config.kwargs["SUBTILE"])]
    return [ms, ms * 0.9, ms * 1.1]


def _subtiled_block_shapes(nargs):
    """The pattern of Triton's persistent-matmul tutorial with an epilogue subtile: the output
    descriptor's block is half as wide when the config stores the tile in two halves."""
    BLOCK_M = nargs["BLOCK_M"]
    BLOCK_N = nargs["BLOCK_N"]
    nargs["src"].block_shape = [BLOCK_M, BLOCK_N]
    if nargs["SUBTILE"]:
        nargs["dst"].block_shape = [BLOCK_M, BLOCK_N // 2]
    else:
        nargs["dst"].block_shape = [BLOCK_M, BLOCK_N]


_SUBTILE_CONFIGS = [
    triton.Config({"BLOCK_M": m, "BLOCK_N": n, "SUBTILE": sub}, num_warps=w, pre_hook=_subtiled_block_shapes)
    for m, n, sub, w in [(32, 32, False, 4), (64, 64, True, 4), (128, 64, False, 8)]
]


@triton.jit
def _subtile_scale(src, dst, M, N, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   SUBTILE: tl.constexpr):
    om = tl.program_id(0) * BLOCK_M
    on = tl.program_id(1) * BLOCK_N
    tile = (src.load([om, on]) * alpha).to(src.dtype)
    if SUBTILE:
        halves = tl.permute(tl.reshape(tile, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        left, right = tl.split(halves)
        dst.store([om, on], left)
        dst.store([om, on + BLOCK_N // 2], right)
    else:
        dst.store([om, on], tile)


@triton.autotune(configs=_SUBTILE_CONFIGS, key=["M", "N"], do_bench=fake_tma_bench)
@triton.jit
def fake_tuned_subtile_scale(src, dst, M, N, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             SUBTILE: tl.constexpr):
    """dst = src * alpha with host descriptors whose block shapes each config's pre-hook sets
    (conditional on SUBTILE), tuned with fake timings: the SUBTILE config wins."""
    _subtile_scale(src, dst, M, N, alpha, BLOCK_M, BLOCK_N, SUBTILE)


@triton.autotune(configs=_SUBTILE_CONFIGS, key=["M", "N"])
@triton.jit
def tuned_subtile_scale(src, dst, M, N, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        SUBTILE: tl.constexpr):
    """fake_tuned_subtile_scale, tuned on the GPU."""
    _subtile_scale(src, dst, M, N, alpha, BLOCK_M, BLOCK_N, SUBTILE)


PYTHON_HOOK_CALLS = []  # fake_tuned_python_hook_scale: the block shapes its hook set


def _recording_block_shapes(nargs):
    """A hook outside the forms the runtime applies (it records its calls): Python runs it."""
    PYTHON_HOOK_CALLS.append((nargs["BLOCK_M"], nargs["BLOCK_N"]))
    nargs["src"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]
    nargs["dst"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "SUBTILE": False}, pre_hook=_recording_block_shapes),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "SUBTILE": True}, pre_hook=_recording_block_shapes),
    ],
    key=["M", "N"],
    do_bench=fake_tma_bench,
)
@triton.jit
def fake_tuned_python_hook_scale(src, dst, M, N, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                 SUBTILE: tl.constexpr):
    """dst = src * alpha (SUBTILE is not used: both halves' block is the whole tile)."""
    _subtile_scale(src, dst, M, N, alpha, BLOCK_M, BLOCK_N, False)
