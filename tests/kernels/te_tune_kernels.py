"""Small 1-D kernels for the tests of autotune, heuristics and named arguments.

Every kernel is elementwise over n elements (or a block sum), launched on the grid
``(cdiv(n, BLOCK),)``, and gives the same result whatever config the tuner picks, so the
tests can check it exactly. The module imports without torch; only the hooks that touch
tensors (reset_to_zero, restore_value, the pre_hooks) and the dtype heuristic use it, and
they run only when a tensor is passed.

Module-level lists record hook and pruning calls; tests clear them with ``clear_records()``.
"""

import triton
import triton.language as tl

CONFIG_PRE_HOOK_CALLS = []  # prehook_kernel: one entry (BLOCK, n) per call of the config's pre_hook
TUNER_HOOK_CALLS = []  # prehook_tuner_kernel: ("pre", reset_only) / ("post", raised)
PRUNE_CALLS = []  # pruned_kernel: ("prune", [BLOCK...]) / ("perf", BLOCK)


def clear_records():
    del CONFIG_PRE_HOOK_CALLS[:]
    del TUNER_HOOK_CALLS[:]
    del PRUNE_CALLS[:]


def grid_1d(n):
    """The grid of every tuned kernel here: one program per BLOCK elements."""
    return lambda META: (triton.cdiv(n, META["BLOCK"]),)


# ---- a plain kernel with a defaulted string constexpr --------------------------------------


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, MODE: tl.constexpr = "mul"):
    """out = x * scale (MODE "mul") or x + scale (MODE "add")."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if MODE == "mul":
        y = x * scale
    else:
        tl.static_assert(MODE == "add", "MODE must be 'mul' or 'add'")
        y = x + scale
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


# ---- heuristics ------------------------------------------------------------------------------


@triton.heuristics({
    "BLOCK": lambda args: triton.next_power_of_2(min(args["n"], 1024)),
    "EVEN": lambda args: args["n"] % 2 == 0,
})
@triton.jit
def heur_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """out = x * 2. EVEN (n even) only changes how it is computed, not the result."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if EVEN:
        y = x + x
    else:
        y = x * 2
    tl.store(out_ptr + offs, y, mask=mask)


def _is_half(ptr):
    """ptr.dtype is torch.float16; also true of pointer stand-ins whose dtype prints as
    'torch.float16' (torch is imported only here, so the module needs no torch)."""
    dtype = getattr(ptr, "dtype", None)
    if str(dtype) == "torch.float16":
        return True
    try:
        import torch
    except ImportError:
        return False
    return dtype == torch.float16


@triton.heuristics({"IS_HALF": lambda args: _is_half(args["x_ptr"])})
@triton.jit
def heur_dtype_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, IS_HALF: tl.constexpr):
    """out = x * 2 + 1 when x is fp16 (IS_HALF), else out = x * 2: the result shows what the
    heuristic decided. fp16 math runs in fp32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if IS_HALF:
        y = x.to(tl.float32) * 2 + 1
    else:
        y = x * 2
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


# Heuristics that set Triton options: Python passes them to the JITFunction as keywords, which
# it reads as options. None leaves the option at its default.
@triton.heuristics({
    "BLOCK": lambda args: 1024 if args["n"] >= 4096 else 128,
    "num_warps": lambda args: 8 if args["n"] >= 4096 else (None if args["n"] == 1000 else 2),
    "num_stages": lambda args: 2,
})
@triton.jit
def heur_options_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x * 2."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


# An option heuristic outside an autotuner: every Config passes num_warps too (Python raises
# TypeError when it runs the kernel).
@triton.heuristics({"num_warps": lambda args: 2})
@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def heur_options_over_tuner_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@triton.heuristics({"num_warps": lambda args: [4]})
@triton.jit
def heur_bad_option_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


# ---- autotune --------------------------------------------------------------------------------


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=4),
        triton.Config({"BLOCK": 512}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, ACT: tl.constexpr = "", BLOCK: tl.constexpr = 64):
    """out = ACT(x * 2); ACT "" (identity), "relu" or "neg". ACT precedes the tuned BLOCK and
    has a default; BLOCK's default (64) is never used, the tuner always sets it."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask, other=0) * 2
    if ACT == "relu":
        y = tl.maximum(y, 0)
    elif ACT == "neg":
        y = -y
    else:
        tl.static_assert(ACT == "", "ACT must be '', 'relu' or 'neg'")
    tl.store(out_ptr + offs, y, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4, num_stages=2)], key=["n"])
@triton.jit
def tuned_single_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x + 1; one config, so the tuner launches it without benchmarking."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) + 1, mask=mask)


_BLOCK_CONFIGS = [
    triton.Config({"BLOCK": 64}, num_warps=2),
    triton.Config({"BLOCK": 128}, num_warps=4),
    triton.Config({"BLOCK": 256}, num_warps=4),
]


# heuristics(autotune(jit)): the heuristic runs first and cannot see BLOCK.
@triton.heuristics({"EVEN": lambda args: args["n"] % 2 == 0})
@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"])
@triton.jit
def tuned_heur_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """out = (x + 1) * 3 when n is even (EVEN), else x * 3: the result shows the heuristic.
    (Add before multiply: a multiply then add may become one fma on the GPU and round
    differently from torch.)"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if EVEN:
        x = x + 1
    tl.store(out_ptr + offs, x * 3, mask=mask)


# autotune(heuristics(jit)): the heuristic runs per config and sees the tuned BLOCK.
@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"])
@triton.heuristics({"EVEN_BLOCKS": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def heur_tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN_BLOCKS: tl.constexpr):
    """out = x * 3. With EVEN_BLOCKS (n a multiple of the tuned BLOCK) loads and stores are
    unmasked; the result is the same either way."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN_BLOCKS:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 3)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) * 3, mask=mask)


# ---- autotune with side effects: reset_to_zero, restore_value --------------------------------


@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"], reset_to_zero=["acc_ptr"])
@triton.jit
def atomic_accum_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    """acc[0] += sum(x), one atomic add per program, in acc's dtype. Benchmarking launches it
    many times: reset_to_zero zeroes acc before each, so acc[0] ends as one sum(x). Use an
    integer acc (or integer-valued x) for a result that is exact in any order."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0).to(acc_ptr.dtype.element_ty)
    tl.atomic_add(acc_ptr, tl.sum(x, axis=0))


def _zero_acc(nargs):
    """A config pre-hook that zeroes the accumulator before each launch (the runtime applies
    it: nargs[name].zero_() of a tensor argument)."""
    nargs["acc_ptr"].zero_()


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=4, pre_hook=_zero_acc) for b in (64, 128, 256)],
    key=["n"],
)
@triton.jit
def zeroing_accum_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    """acc[0] = sum(x): every config's pre-hook zeroes acc, then one atomic add per program."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0).to(acc_ptr.dtype.element_ty)
    tl.atomic_add(acc_ptr, tl.sum(x, axis=0))


@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"], restore_value=["x_ptr"])
@triton.jit
def inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    """x += 1 in place. restore_value puts x back after each benchmark launch, so x ends + 1."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


# ---- hooks -----------------------------------------------------------------------------------


def _config_pre_hook(nargs):
    """The pre_hook of prehook_kernel's BLOCK=128 config: records the call and zeroes out
    (the kernel then overwrites it, so the result does not depend on the hook)."""
    CONFIG_PRE_HOOK_CALLS.append((nargs["BLOCK"], nargs["n"]))
    nargs["out_ptr"].zero_()


@triton.jit
def _double_body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) * 2, mask=mask)


prehook_kernel = triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4, pre_hook=_config_pre_hook),
        triton.Config({"BLOCK": 256}, num_warps=4),
    ],
    key=["n"],
)(_double_body)
prehook_kernel.__doc__ = """out = x * 2; the BLOCK=128 config has a pre_hook (records, zeroes out).
Triton runs a config's pre_hook before each benchmark launch of that config and before the
final launch when that config is the chosen one."""


def _tuner_pre_hook(nargs, reset_only=False):
    TUNER_HOOK_CALLS.append(("pre", bool(reset_only)))


def _tuner_post_hook(nargs, exception):
    TUNER_HOOK_CALLS.append(("post", exception is not None))


prehook_tuner_kernel = triton.autotune(
    configs=[
        triton.Config({"BLOCK": 64}, num_warps=2),
        triton.Config({"BLOCK": 256}, num_warps=4),
    ],
    key=["n"],
    pre_hook=_tuner_pre_hook,
    post_hook=_tuner_post_hook,
)(_double_body)
prehook_tuner_kernel.__doc__ = """out = x * 2 with autotune-level pre_hook / post_hook. Triton calls
them around each benchmark launch, then pre_hook(reset_only=True) once after benchmarking;
not for the final launch, and never when the tuning key is already cached."""


# ---- pruning and the disk cache --------------------------------------------------------------


def _early_prune(configs, named_args, **kwargs):
    """Drops configs whose BLOCK exceeds max(64, next_power_of_2(n)); keeps at least one."""
    limit = max(64, triton.next_power_of_2(named_args["n"]))
    kept = [c for c in configs if c.kwargs["BLOCK"] <= limit] or configs[:1]
    PRUNE_CALLS.append(("prune", [c.kwargs["BLOCK"] for c in kept]))
    return kept


def _perf_model(n, BLOCK, num_warps, **kwargs):
    """A made-up estimate: programs launched times a per-program cost."""
    PRUNE_CALLS.append(("perf", BLOCK))
    return triton.cdiv(n, BLOCK) * (1.0 + BLOCK / 1024.0)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 32}, num_warps=1),
        triton.Config({"BLOCK": 64}, num_warps=2),
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=4),
        triton.Config({"BLOCK": 512}, num_warps=8),
    ],
    key=["n"],
    prune_configs_by={"early_config_prune": _early_prune, "perf_model": _perf_model, "top_k": 2},
)
@triton.jit
def pruned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x - 1; configs pruned by n, then the 2 best by the perf model are benchmarked."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) - 1, mask=mask)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=4),
        triton.Config({"BLOCK": 1024}, num_warps=8),
    ],
    key=["n"],
    cache_results=True,
)
@triton.jit
def cached_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x * x; the tuner's timings are cached on disk (off under TRITON_INTERPRET)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, x * x, mask=mask)


# ---- tuning without a GPU (the CPU tests) ------------------------------------------------------

# Fake timings by BLOCK: the tuner's choice is known in advance. fake_bench reads the config
# the Autotuner is timing from its kernel_call closure and never launches the kernel, so
# tuning runs on a machine without a GPU; FAKE_BENCH_CALLS records the BLOCKs timed.
FAKE_MS = {64: 3.0, 128: 1.0, 256: 2.0}
FAKE_BENCH_CALLS = []


def fake_bench(kernel_call, quantiles=None):
    import inspect

    config = inspect.getclosurevars(kernel_call).nonlocals["config"]
    block = config.kwargs["BLOCK"]
    FAKE_BENCH_CALLS.append(block)
    ms = FAKE_MS[block]
    return [ms, ms * 0.9, ms * 1.1]


@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"], do_bench=fake_bench)
@triton.jit
def fake_tuned_kernel(x_ptr, out_ptr, n, ACT: tl.constexpr = "", BLOCK: tl.constexpr = 32):
    """out = x * 2 (ACT "neg": -x * 2), tuned with fake timings."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask, other=0) * 2
    if ACT == "neg":
        y = -y
    tl.store(out_ptr + offs, y, mask=mask)


@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"], do_bench=fake_bench, cache_results=True)
@triton.jit
def fake_cached_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x + 3, tuned with fake timings that Triton caches on disk (cache_results)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) + 3, mask=mask)


@triton.heuristics({"EVEN": lambda args: args["n"] % 2 == 0})
@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"], do_bench=fake_bench)
@triton.jit
def fake_heur_tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, x + EVEN, mask=mask)


@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"], do_bench=fake_bench)
@triton.heuristics({"EVEN_BLOCKS": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def fake_tuned_heur_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN_BLOCKS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, x + EVEN_BLOCKS, mask=mask)


HEUR_CALLS = []


def _counted_block(args):
    HEUR_CALLS.append(args["n"])
    return triton.next_power_of_2(min(args["n"], 1024))


@triton.heuristics({"BLOCK": _counted_block})
@triton.jit
def counted_heur_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x; HEUR_CALLS records each time Python runs the heuristic."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def _big(args):
    # Reads m only when n > 100: the heuristic's dependencies grow when n does.
    return args["n"] > 100 and args["m"] > 100


@triton.heuristics({"BIG": _big})
@triton.jit
def branchy_heur_kernel(x_ptr, out_ptr, n, m, BIG: tl.constexpr):
    """out = x + 1 when BIG (n > 100 and m > 100), else out = x."""
    offs = tl.program_id(0) * 64 + tl.arange(0, 64)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if BIG:
        x = x + 1
    tl.store(out_ptr + offs, x, mask=mask)


# ---- argument errors before any layer runs -----------------------------------------------------

# MODE is a constexpr without a default that no layer sets: a call must pass it. The tests call
# these with bad arguments and check that nothing ran (FAKE_BENCH_CALLS, MODE_HEUR_CALLS) before
# the error, with the JIT (test_autotune) and runtime-only from a bundle (test_runtime_only).
MODE_HEUR_CALLS = []


@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"], do_bench=fake_bench)
@triton.jit
def fake_tuned_mode_kernel(x_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """out = x * 2 (MODE "neg": -x * 2), tuned with fake timings."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask, other=0) * 2
    if MODE == "neg":
        y = -y
    tl.store(out_ptr + offs, y, mask=mask)


def _mode_block(args):
    MODE_HEUR_CALLS.append(args["n"])
    return triton.next_power_of_2(min(args["n"], 1024))


@triton.heuristics({"BLOCK": _mode_block})
@triton.jit
def heur_mode_kernel(x_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """out = x * 2 (MODE "neg": -x * 2), BLOCK from n."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask, other=0) * 2
    if MODE == "neg":
        y = -y
    tl.store(out_ptr + offs, y, mask=mask)


# ---- global scratch while tuning (no GPU) --------------------------------------------------------

# alloc_probe_bench asks Triton's allocator for global scratch as Triton's launcher does for a
# kernel that needs it (triton.runtime._allocation._allocator.get()(size, alignment, stream)),
# records (allocator class name, data_ptr()) in ALLOC_PROBE and drops the buffer, as the launcher
# does once it has queued the launch; then returns fake_bench's timings.
ALLOC_PROBE = []
ALLOC_PROBE_SIZE, ALLOC_PROBE_ALIGN, ALLOC_PROBE_STREAM = 4096, 128, 0x1234


def alloc_probe_bench(kernel_call, quantiles=None):
    from triton.runtime import _allocation

    allocator = _allocation._allocator.get()
    buffer = allocator(ALLOC_PROBE_SIZE, ALLOC_PROBE_ALIGN, ALLOC_PROBE_STREAM)
    ALLOC_PROBE.append((type(allocator).__name__, buffer.data_ptr()))
    del buffer
    return fake_bench(kernel_call, quantiles)


@triton.autotune(configs=_BLOCK_CONFIGS, key=["n"], do_bench=alloc_probe_bench)
@triton.jit
def alloc_probe_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0), mask=mask)


class UserBuffer:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


def user_allocator(size, alignment, stream):
    """A Python user's own triton.set_allocator allocator (fake addresses: never used)."""
    return UserBuffer(0x7770000 + size)


@triton.heuristics(
    {
        "BLOCK": lambda args: triton.next_power_of_2(args["n"]),
        "num_warps": lambda args: 4 if args["n"] < 2048 else 8,
    }
)
@triton.jit
def expr_heur_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = 3x; its heuristics are expressions a program without Python evaluates."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3, mask=mask)


# ---- tuning keys nobody tuned (issue 21) -----------------------------------------------------
#
# Autotuned with fake timings that depend on n: the best BLOCK is the config's nearest to n on
# a log2 scale, so keys tuned at different n choose different configs. A bundle records them
# at a few n with a tuning rule each (test_bundle_jit's BundleJitRules.Record, or
# `triton-embed-bundle tune`); a program without Python then resolves other n by the rule
# (test_runtime_only's RuntimeOnlyRules). n and m are not specialised, so the entry compiled
# for a config serves every n.

_RULE_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=4) for b in (16, 128, 256, 4096)]


def fake_bench_by_n(kernel_call, quantiles=None):
    """Fake timings: |log2(BLOCK) - log2(n)|, the larger BLOCK winning ties."""
    import inspect
    import math

    closure = inspect.getclosurevars(kernel_call).nonlocals
    block = closure["config"].kwargs["BLOCK"]
    n = max(int(closure["full_nargs"]["n"]), 1)
    ms = 1.0 + abs(math.log2(block) - math.log2(n)) - block * 1e-9
    return [ms, ms * 0.9, ms * 1.1]


@triton.jit
def _rule_store(x_ptr, out_ptr, n, m, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """out = x * m (MODE "mul") or x + m (MODE "add")."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if MODE == "mul":
        y = x * m
    else:
        y = x + m
    tl.store(out_ptr + offs, y, mask=mask)


# One kernel per rule (a bundle names a kernel by its function's name), each out = x * m.
@triton.autotune(configs=_RULE_CONFIGS, key=["n"], do_bench=fake_bench_by_n)
@triton.jit(do_not_specialize=["n", "m"])
def rule_nearest_kernel(x_ptr, out_ptr, n, m, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """Recorded with the rule "nearest"."""
    _rule_store(x_ptr, out_ptr, n, m, MODE, BLOCK)


@triton.autotune(configs=_RULE_CONFIGS, key=["n"], do_bench=fake_bench_by_n)
@triton.jit(do_not_specialize=["n", "m"])
def rule_pow2_kernel(x_ptr, out_ptr, n, m, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """Recorded with the rule "bucket:pow2"."""
    _rule_store(x_ptr, out_ptr, n, m, MODE, BLOCK)


@triton.autotune(configs=_RULE_CONFIGS, key=["n"], do_bench=fake_bench_by_n)
@triton.jit(do_not_specialize=["n", "m"])
def rule_bounds_kernel(x_ptr, out_ptr, n, m, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """Recorded with the rule "bucket:16,256,4096"."""
    _rule_store(x_ptr, out_ptr, n, m, MODE, BLOCK)


@triton.autotune(configs=_RULE_CONFIGS, key=["n"], do_bench=fake_bench_by_n)
@triton.jit(do_not_specialize=["n", "m"])
def rule_exact_kernel(x_ptr, out_ptr, n, m, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """Recorded with no rule: exact."""
    _rule_store(x_ptr, out_ptr, n, m, MODE, BLOCK)


@triton.autotune(configs=_RULE_CONFIGS, key=["n", "m", "MODE"], do_bench=fake_bench_by_n)
@triton.jit(do_not_specialize=["n", "m"])
def rule_2d_kernel(x_ptr, out_ptr, n, m, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """Recorded with the rule "n=nearest": m exact, MODE (a string) always exact."""
    _rule_store(x_ptr, out_ptr, n, m, MODE, BLOCK)


# ---- tuning in parallel (test_autotune's ParallelTuning) ---------------------------------------

# Fake timings by (BLOCK, num_warps), two of them equal: the first of those in config order wins,
# as in Python's loop. PARALLEL_BENCH_CALLS records the configs timed, in order.
PARALLEL_MS = {(32, 4): 3.0, (64, 4): 2.0, (128, 4): 1.0, (128, 8): 1.0, (256, 4): 1.5, (512, 8): 4.0}
PARALLEL_BENCH_CALLS = []


def parallel_bench(kernel_call, quantiles=None):
    import inspect

    config = inspect.getclosurevars(kernel_call).nonlocals["config"]
    block = (config.kwargs["BLOCK"], config.num_warps)
    PARALLEL_BENCH_CALLS.append(block)
    ms = PARALLEL_MS[block]
    return [ms, ms * 0.9, ms * 1.1]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in PARALLEL_MS],
    key=["n"],
    do_bench=parallel_bench,
)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def parallel_tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """out = x + 1, tuned with fake timings over six configs, each with a heuristic (EVEN)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) + 1, mask=mask)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=4)],
    key=["n"],
    do_bench=fake_bench,
)
@triton.jit
def parallel_failing_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A config (BLOCK 64) that does not compile: the tuning sees it as serially (here the fake
    benchmark never compiles it, and BLOCK 128 wins)."""
    tl.static_assert(BLOCK != 64, "BLOCK 64 is refused")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0), mask=mask)
