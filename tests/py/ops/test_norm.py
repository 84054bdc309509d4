"""layer_norm and rms_norm, forward and backward, against torch.nn.functional."""

import pytest
import torch
import torch.nn.functional as F
from conftest import FLOAT_DTYPES, assert_matches, make, tolerances

ops = torch.ops.triton_embed

CASES = [  # (input shape, normalized_shape)
    ((1, 1), (1,)),
    ((3, 7), (7,)),
    ((2, 5, 33), (33,)),
    ((2, 3, 4), (3, 4)),
    ((4, 5000), (5000,)),
    ((0, 8), (8,)),
    ((5,), (5,)),
]


def grad_tolerances(dtype, n=2):
    # Gradients sum over rows: a little more room than the forward. With one element per row
    # the gradient is a difference of two nearly equal terms (layer_norm: x - mean is exactly 0
    # here, while torch's fused path leaves ~1e-4 of rounding; rms_norm: dx ~ eps / |x|^3).
    t = {k: v * 4 for k, v in tolerances(dtype).items()}
    if n == 1:
        t["atol"] = max(t["atol"], 2e-4)
    return t


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_layer_norm(case, dtype, affine, device):
    shape, norm = case
    x = make(shape, dtype, device).requires_grad_()
    w = make(norm, dtype, device, seed=1).requires_grad_() if affine != "none" else None
    b = make(norm, dtype, device, seed=2).requires_grad_() if affine == "both" else None
    got = ops.layer_norm(x, list(norm), w, b, 1e-5)
    expected = F.layer_norm(x, norm, w, b, 1e-5)
    assert_matches(got, expected)
    if x.numel() == 0:
        return
    g = make(shape, dtype, device, seed=3)
    inputs = [t for t in (x, w, b) if t is not None]
    for a, e in zip(torch.autograd.grad(got, inputs, g), torch.autograd.grad(expected, inputs, g)):
        assert a.dtype == e.dtype and a.shape == e.shape
        torch.testing.assert_close(a, e, **grad_tolerances(dtype, norm[-1]))


@pytest.mark.parametrize("eps", [None, 1e-6])
@pytest.mark.parametrize("with_weight", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_rms_norm(case, dtype, with_weight, eps, device):
    shape, norm = case
    x = make(shape, dtype, device).requires_grad_()
    w = make(norm, dtype, device, seed=1).requires_grad_() if with_weight else None
    got = ops.rms_norm(x, list(norm), w, eps)
    expected = F.rms_norm(x, norm, w, eps)
    assert_matches(got, expected)
    if x.numel() == 0:
        return
    g = make(shape, dtype, device, seed=3)
    inputs = [t for t in (x, w) if t is not None]
    for a, e in zip(torch.autograd.grad(got, inputs, g), torch.autograd.grad(expected, inputs, g)):
        torch.testing.assert_close(a, e, **grad_tolerances(dtype, norm[-1]))


def test_non_contiguous_and_large(device):
    x = make((64, 48), torch.float32, device).t()
    assert_matches(ops.layer_norm(x, [64]), F.layer_norm(x, (64,)))
    assert_matches(ops.rms_norm(x, [64]), F.rms_norm(x, (64,)))
    y = make((1000, 1050), torch.float32, device)
    assert_matches(ops.layer_norm(y, [1050]), F.layer_norm(y, (1050,)))


def test_gradcheck(device):
    x = make((3, 6), torch.float64, device).requires_grad_()
    w = make((6,), torch.float64, device, seed=1).requires_grad_()
    b = make((6,), torch.float64, device, seed=2).requires_grad_()
    assert torch.autograd.gradcheck(lambda x, w, b: ops.layer_norm(x, [6], w, b), (x, w, b))
    assert torch.autograd.gradcheck(lambda x, w: ops.rms_norm(x, [6], w), (x, w))


def test_opcheck(device):
    x = make((4, 33), torch.float32, device)
    w = make((33,), torch.float32, device, seed=1)
    b = make((33,), torch.float32, device, seed=2)
    torch.library.opcheck(ops.layer_norm.default, (x, [33], w, b))
    torch.library.opcheck(ops.layer_norm.default, (x.clone().requires_grad_(), [33], w, None))
    torch.library.opcheck(ops.rms_norm.default, (x, [33], w))
    torch.library.opcheck(
        ops.rms_norm.default, (x.clone().requires_grad_(), [33], w.clone().requires_grad_())
    )
    y, mean, rstd = ops.layer_norm_forward(x, [33], w, b)
    torch.library.opcheck(ops.layer_norm_forward.default, (x, [33], w, b))
    torch.library.opcheck(ops.layer_norm_backward.default,
                          (torch.ones_like(x), x, [33], mean, rstd, w, b, [True, True, True]))
    torch.library.opcheck(ops.rms_norm_forward.default, (x, [33], w))
