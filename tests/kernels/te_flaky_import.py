"""A module whose import raises while sys._te_fail_import is set (tests/cpp/test_faults.cc)."""

import sys

import triton
import triton.language as tl

if getattr(sys, "_te_fail_import", False):
    raise RuntimeError("te_flaky_import: refusing to import while sys._te_fail_import is set")


@triton.jit
def flaky_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs, mask=offs < n)
