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


def warmup_hashes(module, kernel, args, kwargs):
    """The hash of the kernel Python's warmup compiles for these arguments (a list of hashes
    for an autotuner, which compiles every config), for cuda:90 through FakeDriver. `kernel`
    may be a dotted path under the module, e.g. "tuned_kernel.fn"."""
    import importlib

    from triton.runtime.driver import driver

    fn = importlib.import_module(module)
    for part in kernel.split("."):
        fn = getattr(fn, part)
    previous = driver._active
    driver.set_active(FakeDriver())
    try:
        r = fn.warmup(*args, grid=(1,), **kwargs)
        return [k.hash for k in r] if isinstance(r, list) else r.hash
    finally:
        driver._active = previous


def warmup_failures(module, kernel, args, kwargs, times):
    """Runs Python's warmup of the kernel (for cuda:90 through FakeDriver) `times` times and
    returns how many raised an Exception: Triton's own path, for comparing what a failing
    compile costs there and through triton_embed."""
    import importlib

    from triton.runtime.driver import driver

    fn = getattr(importlib.import_module(module), kernel)
    previous = driver._active
    driver.set_active(FakeDriver())
    failures = 0
    try:
        for _ in range(times):
            try:
                fn.warmup(*args, grid=(1,), **kwargs)
            except Exception:
                failures += 1
    finally:
        driver._active = previous
    return failures
