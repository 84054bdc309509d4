"""softmax over the last dimension, forward and backward, against torch."""

import pytest
import torch
from conftest import FLOAT_DTYPES, assert_matches, make

ops = torch.ops.triton_embed

SHAPES = [(1,), (7,), (0, 5), (5, 0), (3, 7), (4, 128), (2, 3, 17), (3, 5000), (2, 9000)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward(shape, dtype, device):
    x = make(shape, dtype, device, low=-8, high=8)
    assert_matches(ops.softmax(x), torch.softmax(x, -1))


def test_non_contiguous_and_inf(device):
    x = make((33, 20), torch.float32, device).t()
    assert_matches(ops.softmax(x), torch.softmax(x, -1))
    y = make((4, 6000), torch.float32, device)
    y[:, ::7] = float("-inf")
    assert_matches(ops.softmax(y), torch.softmax(y, -1))


def test_large(device):
    x = make((1024, 1031), torch.float32, device)  # a million elements, odd row length
    assert_matches(ops.softmax(x), torch.softmax(x, -1))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1,), (3, 7), (2, 3, 17), (2, 5000)], ids=str)
def test_backward(shape, dtype, device):
    x = make(shape, dtype, device).requires_grad_()
    g = make(shape, dtype, device, seed=3)
    (got,) = torch.autograd.grad(ops.softmax(x), x, g)
    (expected,) = torch.autograd.grad(torch.softmax(x, -1), x, g)
    assert_matches(got, expected)
    y = torch.softmax(x.detach(), -1)
    assert_matches(ops.softmax_backward(g, y), got)


def test_gradcheck(device):
    x = make((3, 9), torch.float64, device).requires_grad_()
    assert torch.autograd.gradcheck(ops.softmax, (x,))


def test_opcheck(device):
    x = make((4, 33), torch.float32, device)
    torch.library.opcheck(ops.softmax.default, (x,))
    torch.library.opcheck(ops.softmax.default, (x.clone().requires_grad_(),))
    torch.library.opcheck(ops.softmax_backward.default, (x, torch.softmax(x, -1)))
