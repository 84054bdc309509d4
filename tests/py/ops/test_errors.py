"""Bad input raises torch-style errors that name the operator and the argument."""

import re

import pytest
import torch
from conftest import make

ops = torch.ops.triton_embed


def raises(exc, pattern):
    return pytest.raises(exc, match=re.escape(pattern))


def test_unsupported_dtype(device):
    c = torch.zeros(3, dtype=torch.complex64, device=device)
    f = make((3,), torch.float32, device)
    with raises(TypeError, "triton_embed::add: argument 'self' has dtype ComplexFloat"):
        ops.add(c, f)
    with raises(TypeError, "triton_embed::mul: argument 'other' has dtype ComplexFloat"):
        ops.mul(f, c)
    with raises(TypeError, "triton_embed::softmax: argument 'self' must be a float16, bfloat16, "
                           "float32 or float64 tensor, got Int"):
        ops.softmax(torch.zeros(3, 4, dtype=torch.int32, device=device))
    with raises(TypeError, "triton_embed::layer_norm: argument 'input' must be a float16"):
        ops.layer_norm(torch.zeros(2, 4, dtype=torch.int64, device=device), [4])
    with raises(TypeError, "triton_embed::rms_norm: argument 'weight' must be a float16"):
        ops.rms_norm(make((2, 4), torch.float32, device), [4],
                     torch.ones(4, dtype=torch.int32, device=device))
    with raises(TypeError, "triton_embed::sum: argument 'dtype' is ComplexFloat"):
        ops.sum(f, 0, dtype=torch.complex64)


def test_shapes(device):
    a = make((4, 3), torch.float32, device)
    with raises(RuntimeError, "triton_embed::add: argument 'other' of shape [4] cannot be "
                              "broadcast to argument 'self' of shape [4, 3]"):
        ops.add(a, make((4,), torch.float32, device))
    with raises(ValueError, "triton_embed::layer_norm: argument 'input' of shape [4, 3] does not "
                            "end with argument 'normalized_shape' [4]"):
        ops.layer_norm(a, [4])
    with raises(ValueError, "triton_embed::layer_norm: argument 'weight' has shape [4], expected "
                            "normalized_shape [3]"):
        ops.layer_norm(a, [3], make((4,), torch.float32, device))
    with raises(ValueError, "triton_embed::layer_norm: argument 'bias' has shape [2, 3]"):
        ops.layer_norm(a, [3], None, make((2, 3), torch.float32, device))
    with raises(ValueError, "triton_embed::rms_norm: argument 'normalized_shape' must have at "
                            "least one dimension"):
        ops.rms_norm(a, [])
    with raises(ValueError, "triton_embed::softmax_backward: argument 'output' has shape [4, 3], "
                            "but argument 'grad_output' has shape [3, 4]"):
        ops.softmax_backward(make((3, 4), torch.float32, device), a)
    with raises(IndexError, "Dimension out of range"):
        ops.sum(a, 2)


def test_out_dtype(device):
    a = make((4, 3), torch.float32, device)
    with raises(RuntimeError, "triton_embed::add: result type Float can't be cast to the desired "
                              "output type Int of argument 'out'"):
        ops.add.out(a, a, out=torch.empty(4, 3, dtype=torch.int32, device=device))


def test_alpha(device):
    i = torch.ones(3, dtype=torch.int32, device=device)
    with raises(RuntimeError, "triton_embed::add: for integral input tensors, argument 'alpha' "
                              "must not be a floating point number"):
        ops.add(i, i, alpha=0.5)
    b = torch.ones(3, dtype=torch.bool, device=device)
    with raises(RuntimeError, "triton_embed::add: argument 'alpha' must be a bool or an integer "
                              "for bool tensors"):
        ops.add(b, b, alpha=1.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_mixed_devices():
    a = torch.ones(4, 3, device="cuda")
    b = torch.ones(4, 3)
    with raises(RuntimeError, "triton_embed::add: expected all tensors to be on the same device, "
                              "but argument 'other' is on cpu and argument 'self' is on cuda:0"):
        ops.add(a, b)
    with raises(RuntimeError, "triton_embed::layer_norm: expected all tensors to be on the same "
                              "device, but argument 'weight' is on cpu"):
        ops.layer_norm(a, [3], torch.ones(3))
    with raises(RuntimeError, "triton_embed::mul: expected all tensors to be on the same device, "
                              "but argument 'out' is on cpu"):
        ops.mul.out(a, a, out=torch.empty(4, 3))


def test_meta_device_errors_match():
    # Meta (fake) kernels check dtypes as the real kernels do.
    m = torch.empty(3, 4, dtype=torch.int32, device="meta")
    with raises(TypeError, "triton_embed::softmax: argument 'self' must be a float16"):
        ops.softmax(m)
    assert ops.add(m, m.float()).dtype == torch.float32
    assert ops.add(m, m.float()).device.type == "meta"
