"""Kernels of the launch-overhead benchmark: the same trivial body with 1, 4, 16 and 32 pointer
arguments (every argument is read, so each is a real kernel parameter)."""

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
def args_32(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p20, p21, p22, p23, p24, p25, p26, p27, p28, p29, p30, p31):
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
