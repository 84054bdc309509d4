"""One-parameter kernels covering every specialisation flag and annotation.

The specialisation parity tests bind values to these with Triton's own binder and compare
with triton_embed's C++ specialisation. They are never compiled.
"""

import triton
import triton.language as tl


@triton.jit
def k_plain(a):
    pass


@triton.jit(do_not_specialize=["a"])
def k_dns(a):
    pass


@triton.jit(do_not_specialize_on_alignment=["a"])
def k_dnsoa(a):
    pass


@triton.jit(do_not_specialize=[0], do_not_specialize_on_alignment=[0])
def k_dns_dnsoa(a):
    pass


@triton.jit
def k_constexpr(a: tl.constexpr):
    pass


@triton.jit
def k_i8(a: tl.int8):
    pass


@triton.jit
def k_i16(a: tl.int16):
    pass


@triton.jit
def k_i32(a: tl.int32):
    pass


@triton.jit
def k_i64(a: tl.int64):
    pass


@triton.jit
def k_u8(a: tl.uint8):
    pass


@triton.jit
def k_u16(a: tl.uint16):
    pass


@triton.jit
def k_u32(a: tl.uint32):
    pass


@triton.jit
def k_u64(a: tl.uint64):
    pass


@triton.jit(do_not_specialize=["a"])
def k_i32_dns(a: tl.int32):
    pass


@triton.jit(do_not_specialize_on_alignment=["a"])
def k_i64_dnsoa(a: "i64"):
    pass


@triton.jit
def k_u1(a: tl.int1):
    pass


@triton.jit
def k_fp16(a: tl.float16):
    pass


@triton.jit
def k_bf16(a: tl.bfloat16):
    pass


@triton.jit
def k_fp32(a: tl.float32):
    pass


@triton.jit
def k_fp64(a: "fp64"):
    pass


@triton.jit
def k_ptr_fp16(a: tl.pointer_type(tl.float16)):
    pass


@triton.jit
def k_ptr_str(a: "*fp32"):
    pass


@triton.jit
def k_const_ptr(a: "const *fp32"):
    pass


@triton.jit(do_not_specialize=["a"])
def k_ptr_dns(a: "*i32"):
    pass


@triton.jit(do_not_specialize_on_alignment=["a"])
def k_ptr_dnsoa(a: "*bf16"):
    pass


@triton.jit
def k_twelve(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11):
    """Twelve unannotated parameters: runtime leaves fill the cache key's packed runs."""
    pass
