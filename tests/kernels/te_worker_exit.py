"""A kernel no compile worker process can compile (test_parallel_tuning): a worker of the
process whose pid TE_TEST_EXIT_IN_WORKERS_OF holds ends when it imports this module, before it
compiles anything, and the tuning process compiles those configs itself, as one worker would."""

import os

import triton
import triton.language as tl

from te_worker_kernels import CONFIGS, fake_bench

if os.environ.get("TE_TEST_EXIT_IN_WORKERS_OF") == str(os.getppid()):
    os._exit(3)


@triton.autotune(configs=CONFIGS, key=["n"], do_bench=fake_bench)
@triton.jit
def worker_exit_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x + 3."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0) + 3, mask=mask)
