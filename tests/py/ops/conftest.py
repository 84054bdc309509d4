"""Fixtures of the operator parity suite.

The suite loads the operator library from the build tree (TRITON_EMBED_OPS_LIBRARY, set by
CTest) or from an installed package. CPU runs the kernels through Triton's interpreter;
CUDA runs them on the GPU when there is one.
"""

import os
import sys

import pytest
import torch

if "TE_SOURCE_DIR" in os.environ and "TRITON_EMBED_OPS_LIBRARY" in os.environ:
    sys.path.insert(0, os.path.join(os.environ["TE_SOURCE_DIR"], "python"))

import triton_embed  # noqa: E402,F401  (loads torch.ops.triton_embed)


def pytest_sessionstart(session):
    """./dev.sh versions runs this suite under each supported Triton: check it got that one."""
    import triton

    expected = os.environ.get("TE_EXPECT_TRITON")
    if expected and triton.__version__ != expected:
        raise pytest.UsageError("Triton %s imported (%s), expected %s"
                                % (triton.__version__, triton.__file__, expected))

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
ALL_DTYPES = [torch.bool] + INT_DTYPES + FLOAT_DTYPES


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def make(shape, dtype, device, low=-3, high=3, seed=0):
    """A deterministic tensor of `dtype` on `device` (bool: random bits)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        t = torch.randint(0, 2, shape, generator=g).bool()
    elif dtype.is_floating_point:
        t = torch.empty(shape).uniform_(low, high, generator=g).to(dtype)
    else:
        lo = 0 if dtype == torch.uint8 else low
        t = torch.randint(lo, high + 1, shape, generator=g).to(dtype)
    return t.to(device)


def tolerances(dtype):
    """rtol/atol fit for a result of `dtype` computed in fp32 (fp64 for fp64)."""
    return {
        torch.float16: dict(rtol=2e-3, atol=2e-3),
        torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
        torch.float32: dict(rtol=1.3e-6, atol=1e-5),
        torch.float64: dict(rtol=1e-7, atol=1e-7),
    }.get(dtype, dict(rtol=0, atol=0))


def assert_matches(actual, expected, dtype=None):
    dtype = dtype or expected.dtype
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.device == expected.device
    torch.testing.assert_close(actual, expected, **tolerances(dtype))
