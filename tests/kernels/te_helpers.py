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

    @property
    def itemsize(self):
        if self.name == "bool" or "8" in self.name:
            return 1
        return int("".join(c for c in self.name if c.isdigit())) // 8

    @property
    def is_floating_point(self):
        return "float" in self.name


class P:
    """A tensor-like object (no torch needed): Triton specialises it as a pointer to `dtype`."""

    def __init__(self, address, dtype="float32"):
        self.address = address
        self.dtype = _Dtype(dtype)

    def data_ptr(self):
        return self.address


def desc(address, dtype, shape, strides, block_shape, padding="zero", round_f32_to_tf32=False):
    """Triton's host TensorDescriptor (its constructor's checks run) over P(address, dtype)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    extra = {"round_f32_to_tf32": True} if round_f32_to_tf32 else {}
    return TensorDescriptor(
        P(address, dtype), list(shape), list(strides), list(block_shape), padding, **extra
    )


class FakeDriver:
    """Enough of a driver for JITFunction.warmup to compile for cuda:90 (or `arch`) without a
    GPU."""

    def __init__(self, arch=90):
        self.arch = arch

    def get_current_device(self):
        return 0

    def get_current_stream(self, device):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", self.arch, 32)


def warmup_hashes(module, kernel, args, kwargs, arch=90, fresh=False):
    """The hash of the kernel Python's warmup compiles for these arguments (a list of hashes
    for an autotuner, which compiles every config), for cuda:90 through FakeDriver. `kernel`
    may be a dotted path under the module, e.g. "tuned_kernel.fn". fresh: compile with empty
    in-memory caches (Triton's disk cache still serves)."""
    import importlib

    from triton.runtime.driver import driver

    fn = importlib.import_module(module)
    for part in kernel.split("."):
        fn = getattr(fn, part)
    previous = driver._active
    driver.set_active(FakeDriver(arch))
    # The JITFunction keeps its target per device: another arch needs fresh per-device caches.
    caches = fn.device_caches if arch != 90 or fresh else None
    if caches is not None:
        fn.device_caches = type(caches)(caches.default_factory)
    try:
        r = fn.warmup(*args, grid=(1,), **kwargs)
        return [k.hash for k in r] if isinstance(r, list) else r.hash
    finally:
        driver._active = previous
        if caches is not None:
            fn.device_caches = caches


def _capi(name, restype, *argtypes):
    import ctypes

    f = getattr(ctypes.pythonapi, name)  # PyDLL: raises the Python error the call sets
    f.restype = restype
    f.argtypes = list(argtypes) if argtypes else [ctypes.py_object]
    return f


def launcher_convert(ty, value):
    """Converts `value` as Triton's CUDA launcher converts an argument of signature type `ty`
    (the extractors of triton/backends/nvidia/driver.c in 3.8: the same C API calls), and
    raises what it raises; for a pointer it stops before asking the driver about the address.
    The errors Triton only raises at launch can so be checked without a GPU."""
    import ctypes
    import struct

    if ty.startswith("*"):
        if value is None:
            return 0
        if not isinstance(value, int):
            if not callable(getattr(value, "data_ptr", None)):
                raise TypeError("Pointer argument must be either uint64 or have data_ptr method")
            value = value.data_ptr()
        return _capi("PyLong_AsUnsignedLongLong", ctypes.c_ulonglong)(value)
    if ty in ("i1", "i8", "i16", "i32"):
        return _capi("PyLong_AsLong", ctypes.c_long)(value)
    if ty == "i64":
        return _capi("PyLong_AsLongLong", ctypes.c_longlong)(value)
    if ty in ("u1", "u8", "u16", "u32"):
        return _capi("PyLong_AsUnsignedLong", ctypes.c_ulong)(value)
    if ty == "u64":
        return _capi("PyLong_AsUnsignedLongLong", ctypes.c_ulonglong)(value)
    d = _capi("PyFloat_AsDouble", ctypes.c_double)(value)
    if ty == "fp16":
        return struct.pack("<e", d)  # PyFloat_Pack2, as the launcher packs fp16
    return d


def launcher_grid(x, y=1, z=1):
    """Parses a grid as Triton's CUDA launcher does (three C ints, PyArg_ParseTuple 'iii')."""
    import ctypes

    out = [ctypes.c_int() for _ in range(3)]
    parse = ctypes.pythonapi.PyArg_ParseTuple
    parse.restype = ctypes.c_int
    parse(ctypes.py_object((x, y, z)), b"iii", *[ctypes.byref(o) for o in out])
    return tuple(o.value for o in out)


def raised(fn, *args, **kwargs):
    """The exception class fn(*args, **kwargs) raises, or None."""
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the tests compare the class
        return type(e)
    return None


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


_INT_RANGES = {"u1": (0, 1), "i8": (-2**7, 2**7 - 1), "i16": (-2**15, 2**15 - 1),
               "i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1), "u8": (0, 2**8 - 1),
               "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1)}


def _contains_pointer(value):
    import triton.language as tl

    if isinstance(value, P):
        return True
    if isinstance(value, tuple):
        return any(_contains_pointer(v) for v in value)
    return isinstance(value, tl.constexpr) and _contains_pointer(value.value)


def predicted_launch_error(kp, value):
    """For a value Triton's binder accepts for KernelParam `kp` but its launcher (or compiler)
    rejects, the error type triton_embed raises at bind time; None where the binder's result
    must match ours (tests/cpp/test_specialize_parity.cc, test_binder_fuzz.cc)."""
    ann = kp.annotation_type
    if kp.is_constexpr:
        return "TypeError" if _contains_pointer(value) else None
    if not ann:
        return None
    if ann.startswith("*") or ann.startswith("const *"):
        if isinstance(value, P) or value is None:
            return None
        if type(value) is int:
            return "OverflowError" if value < 0 else None
        return "TypeError"
    if ann in ("fp16", "bf16", "fp32", "fp64"):
        return None if type(value) in (int, float, bool) else "TypeError"
    if type(value) in (int, bool):
        lo, hi = _INT_RANGES[ann]
        return None if lo <= int(value) <= hi else "OverflowError"
    return "TypeError"


class RunKwargs:
    """Records the keyword arguments JITFunction._pack_args gets (those JITFunction.run gives the
    backend, and those triton_embed's compile gives it), while entered."""

    def __enter__(self):
        from triton.runtime.jit import JITFunction

        self.calls = []
        self._saved = JITFunction._pack_args
        saved, calls = self._saved, self.calls

        def recording(fn, backend, kwargs, *rest):
            names = {p.name for p in fn.params}
            calls.append({k: v for k, v in kwargs.items() if k not in names})
            return saved(fn, backend, kwargs, *rest)

        JITFunction._pack_args = recording
        return self

    def __exit__(self, *exc):
        from triton.runtime.jit import JITFunction

        JITFunction._pack_args = self._saved


def call_error(module, kernel, args, kwargs):
    """What Python's kernel[grid](*args, **kwargs) raises for a wrapped kernel, as
    (exception class name, benchmarks that completed), through FakeDriver (cuda:90, no GPU).
    Every Autotuner in the chain benchmarks as triton.testing.do_bench does, calling the kernel
    before timing it, so an argument error surfaces where Python's own tuning meets it; the
    tuners' caches are emptied for the call (a cached key skips benchmarking) and restored.
    For calls Python refuses only: a good call would try to launch."""
    import importlib

    from triton.runtime.autotuner import Autotuner
    from triton.runtime.driver import driver

    fn = getattr(importlib.import_module(module), kernel)
    tuners = []
    layer = fn
    while not hasattr(layer, "params"):  # down to the JITFunction
        if isinstance(layer, Autotuner):
            tuners.append(layer)
        layer = layer.fn
    completed = []

    def calling_bench(kernel_call, quantiles=None):
        kernel_call()
        completed.append(1)
        return [1.0, 1.0, 1.0]

    # Autotuner.do_bench is a cached_property of _do_bench (Triton 3.6 to 3.9): both are
    # swapped and put back.
    missing = object()
    saved = [(t, t._do_bench, t.__dict__.get("do_bench", missing), dict(t.cache)) for t in tuners]
    previous = driver._active
    driver.set_active(FakeDriver())
    try:
        for t in tuners:
            t._do_bench = calling_bench
            t.__dict__["do_bench"] = calling_bench
            t.cache.clear()
        fn[(1,)](*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the tests compare the class
        return type(e).__name__, len(completed)
    finally:
        driver._active = previous
        for t, bench, cached, cache in saved:
            t._do_bench = bench
            if cached is missing:
                t.__dict__.pop("do_bench", None)
            else:
                t.__dict__["do_bench"] = cached
            t.cache.clear()
            t.cache.update(cache)
            t.nargs = None
    return None, len(completed)
