"""Kernels of test_parallel_tuning's compile worker process tests (compile-only, te_tune_kernels'
fake timings): each config's compile of worker_printing_kernel prints a line (tl.static_print),
which the tuning process shows whichever process compiled it. Importing the module prints a line
too, which is not a compile's: a worker importing it for a job does not show it."""

import triton
import triton.language as tl

from te_tune_kernels import FAKE_MS, fake_bench

CONFIGS = [triton.Config({"BLOCK": b}) for b in FAKE_MS]

print("te_worker_kernels imported")


@triton.autotune(configs=CONFIGS, key=["n"], do_bench=fake_bench)
@triton.jit
def worker_printing_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x * 2; its compile prints the block size."""
    tl.static_print("te_worker_kernels compiles BLOCK", BLOCK)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) * 2, mask=mask)


@triton.autotune(configs=CONFIGS, key=["n"], do_bench=fake_bench)
@triton.jit
def worker_plain_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x - 1 (for the tests that need specialisations no other test compiled)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) - 1, mask=mask)
