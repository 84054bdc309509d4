"""Kernels of the launch-overhead benchmark: the same trivial body with 1, 4, 16 and 32 pointer
arguments (every argument is read, so each is a real kernel parameter), and the vector add of
pykernels.vector wrapped in @triton.heuristics and in @triton.autotune (same parameters, same
body), so that their launches compare like with like with the plain add_kernel's."""

import triton
import triton.language as tl


@triton.jit
def args_1(p0):
    """p0[0] = the sum of p_i[0] over the 1 argument."""
    acc = tl.load(p0)
    tl.store(p0, acc)


@triton.jit
def args_4(p0, p1, p2, p3):
    """p0[0] = the sum of p_i[0] over the 4 arguments."""
    acc = tl.load(p0)
    acc += tl.load(p1)
    acc += tl.load(p2)
    acc += tl.load(p3)
    tl.store(p0, acc)


@triton.jit
def args_16(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15):
    """p0[0] = the sum of p_i[0] over the 16 arguments."""
    acc = tl.load(p0)
    acc += tl.load(p1)
    acc += tl.load(p2)
    acc += tl.load(p3)
    acc += tl.load(p4)
    acc += tl.load(p5)
    acc += tl.load(p6)
    acc += tl.load(p7)
    acc += tl.load(p8)
    acc += tl.load(p9)
    acc += tl.load(p10)
    acc += tl.load(p11)
    acc += tl.load(p12)
    acc += tl.load(p13)
    acc += tl.load(p14)
    acc += tl.load(p15)
    tl.store(p0, acc)


@triton.jit
def args_32(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p20, p21, p22, p23, p24, p25, p26, p27, p28, p29, p30, p31):  # noqa: E501
    """p0[0] = the sum of p_i[0] over the 32 arguments."""
    acc = tl.load(p0)
    acc += tl.load(p1)
    acc += tl.load(p2)
    acc += tl.load(p3)
    acc += tl.load(p4)
    acc += tl.load(p5)
    acc += tl.load(p6)
    acc += tl.load(p7)
    acc += tl.load(p8)
    acc += tl.load(p9)
    acc += tl.load(p10)
    acc += tl.load(p11)
    acc += tl.load(p12)
    acc += tl.load(p13)
    acc += tl.load(p14)
    acc += tl.load(p15)
    acc += tl.load(p16)
    acc += tl.load(p17)
    acc += tl.load(p18)
    acc += tl.load(p19)
    acc += tl.load(p20)
    acc += tl.load(p21)
    acc += tl.load(p22)
    acc += tl.load(p23)
    acc += tl.load(p24)
    acc += tl.load(p25)
    acc += tl.load(p26)
    acc += tl.load(p27)
    acc += tl.load(p28)
    acc += tl.load(p29)
    acc += tl.load(p30)
    acc += tl.load(p31)
    tl.store(p0, acc)


@triton.jit
def negate(v):
    return -v


@triton.jit
def apply_kernel(x_ptr, out_ptr, n_elements, FN: tl.constexpr, BLOCK: tl.constexpr):
    """out = FN(x), FN a @triton.jit function given as an argument: a call the Python fast path
    hands to Triton's launcher (its fallback row)."""
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, FN(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


@triton.heuristics({"EVEN": lambda args: args["n_elements"] % args["BLOCK"] == 0})
@triton.jit
def add_heuristics_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr,
                          EVEN: tl.constexpr):
    """out = x + y, as pykernels.vector.add_kernel; EVEN (n_elements a multiple of BLOCK, set
    by the heuristic from an int argument and the caller's BLOCK) drops the mask."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 512}, num_warps=4),
        triton.Config({"BLOCK": 1024}, num_warps=8),
    ],
    key=["n_elements"],
)
@triton.jit
def add_autotune_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    """out = x + y, as pykernels.vector.add_kernel, with BLOCK and num_warps tuned on
    n_elements; grid: (cdiv(n_elements, BLOCK),)."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def tma_copy(src, dst, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The benchmark's TMA row: two host tensor descriptors, one row block per program."""
    om = tl.program_id(0) * BLOCK_M
    dst.store([om, 0], src.load([om, 0]))


def _tma_block_shapes(nargs):
    """The config pre-hook of Triton's persistent-matmul tutorial: the descriptors' block shapes
    follow the config's tile (the runtime applies it in C++)."""
    nargs["src"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]
    nargs["dst"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=w, pre_hook=_tma_block_shapes)
             for w in (4, 8)],
    key=["n_rows"],
)
@triton.jit
def tma_copy_tuned(src, dst, n_rows, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """tma_copy, autotuned, with host descriptors whose block shapes each config's pre-hook
    sets (the caller's are placeholders); every config's tile is tma_copy's (64 x 64), so the
    raw floor launches with tma_copy's encoded maps."""
    om = tl.program_id(0) * BLOCK_M
    dst.store([om, 0], src.load([om, 0]))


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, pre_hook=_tma_block_shapes)],
    key=["n_rows"],
)
@triton.jit
def tma_copy_one_config(src, dst, n_rows, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """tma_copy_tuned with its one config: the pre-hook path without a GPU to tune on (the
    host-path-tma mode of launch_bench)."""
    om = tl.program_id(0) * BLOCK_M
    dst.store([om, 0], src.load([om, 0]))
