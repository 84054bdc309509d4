"""sum over one dimension against torch.sum: keepdim, dtype promotion, sizes."""

import pytest
import torch
from conftest import ALL_DTYPES, assert_matches, make

ops = torch.ops.triton_embed

CASES = [  # (shape, dim)
    ((), 0),
    ((1,), 0),
    ((7,), -1),
    ((0,), 0),
    ((3, 0), 1),
    ((0, 3), 0),
    ((5, 33), 0),
    ((5, 33), 1),
    ((2, 3, 257), 1),
    ((4, 5000), -1),
    ((3000, 3), 0),
]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_sum(case, dtype, keepdim, device):
    shape, dim = case
    x = make(shape, dtype, device)
    expected = torch.sum(x, dim, keepdim=keepdim)
    got = ops.sum(x, dim, keepdim)
    if dtype in (torch.float16, torch.bfloat16):
        # torch accumulates these in fp32 too, but may add in another order
        torch.testing.assert_close(got.float(), expected.float(), rtol=1e-2, atol=2e-2)
        assert got.dtype == expected.dtype and got.shape == expected.shape
    else:
        assert_matches(got, expected)


@pytest.mark.parametrize("src,dst", [(torch.int32, torch.float32), (torch.float16, torch.float32),
                                     (torch.float32, torch.float64), (torch.bool, torch.int32)],
                         ids=str)
def test_dtype_argument(src, dst, device):
    x = make((6, 7), src, device)
    assert_matches(ops.sum(x, 1, dtype=dst), torch.sum(x, 1, dtype=dst))


def test_non_contiguous_and_large(device):
    x = make((40, 30), torch.float64, device).t()
    assert_matches(ops.sum(x, 1), x.sum(1))
    y = make((1 << 20) + 5, torch.float64, device)
    assert_matches(ops.sum(y, 0), y.sum(0))


def test_gradients(device):
    x = make((4, 5, 6), torch.float32, device).requires_grad_()
    for dim, keepdim in [(1, False), (-1, True)]:
        got = ops.sum(x, dim, keepdim)
        g = make(got.shape, torch.float32, device, seed=2)
        (a,) = torch.autograd.grad(got, x, g)
        (e,) = torch.autograd.grad(torch.sum(x, dim, keepdim=keepdim), x, g)
        assert_matches(a, e)


def test_opcheck(device):
    x = make((4, 33), torch.float32, device)
    torch.library.opcheck(ops.sum.default, (x, 1))
    torch.library.opcheck(ops.sum.default, (x.clone().requires_grad_(), 0, True))
    torch.library.opcheck(ops.sum.default, (x.int(), 0), {"dtype": torch.float64})
