"""A kernel that fails to compile (the error tests fix it at run time)."""

import triton
import triton.language as tl


@triton.jit
def broken_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, undefined_helper(offs), mask=offs < n)


FIXED_SOURCE = '''def broken_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs.to(tl.float32), mask=offs < n)
'''
