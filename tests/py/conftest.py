import os
import sys

import pytest

# The extension module built by CMake (tests/CMakeLists.txt passes its directory).
sys.path.insert(0, os.environ["TE_PYEXT_DIR"])
sys.path.insert(0, os.path.join(os.environ["TE_SOURCE_DIR"]))  # for pykernels
for p in os.environ.get("TRITON_EMBED_PYTHONPATH", "").split(":"):
    if p:
        sys.path.insert(0, p)


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class P:
    """A tensor-like object Triton specialises as a pointer (no torch needed)."""

    def __init__(self, address, dtype="float32"):
        self.address = address
        self.dtype = _Dtype(dtype)

    def data_ptr(self):
        return self.address


class FakeDriver:
    """Lets JITFunction.warmup compile for cuda:90 on a machine without a GPU."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device):
        return 0

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)


@pytest.fixture
def fake_driver():
    from triton.runtime.driver import driver

    previous = driver._active
    driver.set_active(FakeDriver())
    yield
    driver._active = previous
