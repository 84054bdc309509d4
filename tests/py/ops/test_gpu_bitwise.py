"""On the GPU: each op's output is bitwise identical to launching the same Triton kernel from
Python with the same arguments (the launch parameters below mirror the C++ operators)."""

import pytest
import torch
import triton
import triton.language as tl
from conftest import make

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")

ops = torch.ops.triton_embed


def bits(t):
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64, 1: torch.int8}[t.element_size()])


def assert_bitwise(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert torch.equal(bits(a), bits(b))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_add_mul(dtype):
    from pykernels.elementwise import binary_kernel

    a = make((33, 65), dtype, "cuda", seed=1)
    b = make((65,), dtype, "cuda", seed=2)
    n = a.numel()
    for op, name, alpha in [(0, "add", 2.0), (1, "mul", 1)]:
        got = ops.add(a, b, alpha=alpha) if name == "add" else ops.mul(a, b)
        ref = torch.empty_like(got)
        # (33, 65) with b broadcast over rows coalesces to sizes (1, 1, 33, 65)
        binary_kernel[(triton.cdiv(n, 1024),)](
            a, b, ref, alpha, n, 1, 33, 65, 0, 0, 65, 1, 0, 0, 0, 1,
            OP=op, STRIDED=True, COMPUTE=tl.float32, BLOCK=1024)
        assert_bitwise(got, ref)
    x = make((1 << 20,), dtype, "cuda", seed=3)
    y = make((1 << 20,), dtype, "cuda", seed=4)
    got = ops.add(x, y)
    ref = torch.empty_like(got)
    binary_kernel[(1024,)](x, y, ref, 1, x.numel(), 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                           OP=0, STRIDED=False, COMPUTE=tl.float32, BLOCK=1024)
    assert_bitwise(got, ref)


@pytest.mark.parametrize("cols", [100, 5000])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_softmax(dtype, cols):
    from pykernels.softmax import softmax_bwd_kernel, softmax_fwd_kernel

    x = make((37, cols), dtype, "cuda", low=-8, high=8)
    block = min(triton.next_power_of_2(cols), 4096)
    got = ops.softmax(x)
    ref = torch.empty_like(x)
    softmax_fwd_kernel[(37,)](x, ref, cols, x.stride(0), ref.stride(0), BLOCK=block,
                              COMPUTE=tl.float32)
    assert_bitwise(got, ref)
    g = make((37, cols), dtype, "cuda", seed=5)
    got = ops.softmax_backward(g, ref)
    dx = torch.empty_like(x)
    softmax_bwd_kernel[(37,)](g, ref, dx, cols, g.stride(0), ref.stride(0), dx.stride(0),
                              BLOCK=block, COMPUTE=tl.float32)
    assert_bitwise(got, dx)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_norms(dtype):
    from pykernels.norm import norm_fwd_kernel

    m, n = 45, 777
    x = make((m, n), dtype, "cuda")
    w = make((n,), dtype, "cuda", seed=1)
    b = make((n,), dtype, "cuda", seed=2)
    block = triton.next_power_of_2(n)
    y, mean, rstd = ops.layer_norm_forward(x, [n], w, b, 1e-5)
    ry, rmean, rrstd = torch.empty_like(x), torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
    norm_fwd_kernel[(m,)](x, ry, w, b, rmean, rrstd, n, 1e-5, BLOCK=block)
    for got, ref in [(y, ry), (mean, rmean), (rstd, rrstd)]:
        assert_bitwise(got, ref)
    y, rstd = ops.rms_norm_forward(x, [n], None, 1e-6)
    ry, rrstd = torch.empty_like(x), torch.empty(m, device="cuda")
    norm_fwd_kernel[(m,)](x, ry, None, None, None, rrstd, n, 1e-6, BLOCK=block)  # RMSNorm
    assert_bitwise(y, ry)
    assert_bitwise(rstd, rrstd)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int32], ids=str)
def test_sum(dtype):
    from pykernels.reduce import sum_kernel

    x = make((6, 300, 70), dtype, "cuda")
    got = ops.sum(x, 1)
    ref = torch.empty_like(got)
    compute = tl.int64 if dtype == torch.int32 else tl.float32
    # outer 6, reduced 300, inner 70: BLOCK_I = 128, BLOCK_R = min(512, 4096 // 128)
    sum_kernel[(6, 1)](x, ref, 300, 70, COMPUTE=compute, BLOCK_R=32, BLOCK_I=128)
    assert_bitwise(got, ref)
