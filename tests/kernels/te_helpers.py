"""Python helpers shared by the gtest suites (run in the embedded interpreter) and pytest."""

from triton.backends.compiler import GPUTarget


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, _Dtype) and other.name == self.name


class P:
    """A tensor-like object (no torch needed): Triton specialises it as a pointer to `dtype`."""

    def __init__(self, address, dtype="float32"):
        self.address = address
        self.dtype = _Dtype(dtype)

    def data_ptr(self):
        return self.address


class FakeDriver:
    """Enough of a driver for JITFunction.warmup to compile for cuda:90 without a GPU."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)
