"""Kernels whose signatures the binder fuzz test (tests/cpp/test_binder_fuzz.cc) binds random
argument lists to, with Triton's binder and with triton_embed's: every specialisation flag,
annotation, constexpr and default value mixed. They are never compiled."""

import triton
import triton.language as tl


@triton.jit
def f_plain(a, b, c, d):
    pass


@triton.jit(do_not_specialize=["b"], do_not_specialize_on_alignment=["a", "c"])
def f_flags(a, b, c, d: tl.constexpr):
    pass


@triton.jit
def f_annotated(p: "*fp32", n: tl.int32, m: tl.uint64, x: tl.float16, flag: tl.int1):
    pass


@triton.jit(do_not_specialize=[1])
def f_narrow(a: tl.int8, b: tl.uint16, c: "u8", d: tl.int64, e: tl.bfloat16):
    pass


@triton.jit
def f_defaults(a, b, c=16, d=None, E: tl.constexpr = 4, F: tl.constexpr = "mode"):
    pass


@triton.jit(do_not_specialize_on_alignment=["ptr"])
def f_pointers(ptr: "const *fp16", q: tl.pointer_type(tl.int32), r, s: "*bf16" = None):
    pass


@triton.jit
def f_tuples(t, u: tl.constexpr, v=(1, 2), w=(16, None)):
    pass


@triton.jit(do_not_specialize=["b", "c"])
def f_mixed(a, b: tl.uint32, c, D: tl.constexpr, e: tl.float32 = 1.5, f: "fp64" = 2.0):
    pass
