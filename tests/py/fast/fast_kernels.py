"""Kernels of the Python fast-path suite (triton_embed.jit), each also launched through Triton,
and what its tests share."""

import triton
import triton.language as tl

import triton_embed


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit(do_not_specialize=["n"])
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr = 256, SCALE_Y: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    if SCALE_Y:
        y = y * 2
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + y, mask=mask)


@triton.heuristics({"BLOCK": lambda args: 128 if args["n"] < 4096 else 512,
                    "EVEN": lambda args: args["n"] % (128 if args["n"] < 4096 else 512) == 0})
@triton.jit
def heur_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))
    else:
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4),
                          triton.Config({"BLOCK": 256}, num_warps=2)], key=["n"])
@triton.jit
def tuned_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _pick_by_n(configs, named_args, **kwargs):
    """Keeps one config by n (below 4096: the first): each tuning key has a known choice."""
    return [configs[0] if named_args["n"] < 4096 else configs[1]]


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4),
                          triton.Config({"BLOCK": 512}, num_warps=4)],
                 key=["n"], prune_configs_by={"early_config_prune": _pick_by_n})
@triton.jit
def pruned_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def store_int_kernel(out_ptr, v):
    tl.store(out_ptr, v)


@triton.jit
def tuple_kernel(ptrs, out_ptr, n, scales, BLOCK: tl.constexpr):
    """out = ptrs[0] * scales[0] + ptrs[1] * scales[1] (tuples of pointers and of floats)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(ptrs[0] + offs, mask=mask)
    b = tl.load(ptrs[1] + offs, mask=mask)
    tl.store(out_ptr + offs, a * scales[0] + b * scales[1], mask=mask)


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, OUT: tl.constexpr, BLOCK: tl.constexpr):
    """out = x cast to the tl.dtype OUT."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(OUT), mask=mask)


@triton_embed.jit
@triton.jit
def decorated_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def tma_copy_2d(src, dst, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    om = tl.program_id(0) * BLOCK_M
    on = tl.program_id(1) * BLOCK_N
    dst.store([om, on], src.load([om, on]))


def _pick_by_rows(configs, named_args, **kwargs):
    """Keeps one config by n_rows (up to 128: the first)."""
    return [configs[0] if named_args["n_rows"] <= 128 else configs[1]]


def _tile_blocks(nargs):
    """The pre-hook of Triton's persistent-matmul tutorial: the block shapes follow the config's
    tile (the runtime applies it in C++, once per config)."""
    nargs["src"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]
    nargs["dst"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]


def _rows_blocks(nargs):
    """A pre-hook that reads an argument (the runtime applies it in C++ at each launch); it
    assigns dst's block shape as a tuple, which dst then holds."""
    rows = min(nargs["BLOCK_M"], nargs["n_rows"] // 4)
    nargs["src"].block_shape = [rows, nargs["BLOCK_N"]]
    nargs["dst"].block_shape = (rows, nargs["BLOCK_N"])


#: The BLOCK_M of each call of _python_blocks.
python_hook_calls = []


def _python_blocks(nargs):
    """A pre-hook the runtime leaves to Python (it records its calls)."""
    python_hook_calls.append(nargs["BLOCK_M"])
    nargs["src"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]
    nargs["dst"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]


def _tma_configs(hook):
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": 64}, num_warps=4, pre_hook=hook) for m in (32, 64)]


@triton.autotune(configs=_tma_configs(_tile_blocks), key=["n_rows"],
                 prune_configs_by={"early_config_prune": _pick_by_rows})
@triton.jit
def tma_tuned_tile(src, dst, n_rows, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    om = tl.program_id(0) * BLOCK_M
    dst.store([om, 0], src.load([om, 0]))


@triton.autotune(configs=_tma_configs(_rows_blocks), key=["n_rows"],
                 prune_configs_by={"early_config_prune": _pick_by_rows})
@triton.jit
def tma_tuned_rows(src, dst, n_rows, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    om = tl.program_id(0) * BLOCK_M
    dst.store([om, 0], src.load([om, 0]))


@triton.autotune(configs=_tma_configs(_python_blocks), key=["n_rows"],
                 prune_configs_by={"early_config_prune": _pick_by_rows})
@triton.jit
def tma_tuned_python(src, dst, n_rows, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    om = tl.program_id(0) * BLOCK_M
    dst.store([om, 0], src.load([om, 0]))


class HeuristicFailure(Exception):
    """What failing_heuristic_kernel's heuristic raises (the test checks it gets this object)."""


#: The exception object failing_heuristic_kernel's heuristic raises when n is negative.
heuristic_failure = HeuristicFailure("n must not be negative")


def _block_for(args):
    if args["n"] < 0:
        raise heuristic_failure
    return 128


@triton.heuristics({"BLOCK": _block_for})
@triton.jit
def failing_heuristic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def uncompilable_kernel(x_ptr, n):
    """tl.arange of a runtime bound: Triton's compiler refuses it."""
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, offs)


def raised(call, *args):
    """What call(*args) raises, as (type, message), or None: the suite compares both paths'."""
    try:
        call(*args)
    except Exception as e:  # noqa: BLE001 (whatever each path raises)
        return type(e), str(e)
    return None
