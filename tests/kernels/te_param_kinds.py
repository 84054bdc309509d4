"""Kernels whose parameters Triton binds differently between versions (core/triton_versions.h):
a *args parameter (3.8: collects extra positional arguments) and a keyword-only one (3.9: not
by position)."""

import triton
import triton.language as tl


@triton.jit
def star_kernel(x_ptr, *rest):
    tl.store(x_ptr, rest[0] + rest[1])


@triton.jit
def keyword_only_kernel(x_ptr, *, n):
    tl.store(x_ptr, n)
