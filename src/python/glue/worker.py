"""Compile worker processes: Python processes that compile a kernel's calls with Triton into
Triton's disk cache while this process does something else (benchmarks the configs of a tuning,
imports torch, compiles what they finished). This process then compiles each call through
Triton as before and finds it in that cache: the compiled kernel, its hash and its cache entry
are Triton's own either way, and a call a worker could not compile (or compiled otherwise, under
another environment) is compiled here as it would have been.

src/python/worker_processes.cc starts each worker as `python -c BOOTSTRAP` (this interpreter's
executable, its environment) with two pipes: frames in on descriptor 3, frames out on 4; its
standard output and error go to a third pipe. A frame is a little-endian u32 size, then a u64
job id, then (out only) a status byte, then the payload. The first frame in holds worker_init's
payload: the modules of this package a worker needs (it loads them as this process does), the
installed Triton's facts and version. Each later frame is a job: worker_job's payload. The
worker answers READY once it started, then for each job STARTED and DONE or FAILED with a result
(worker_result reads it here). Before STARTED it writes START_MARK to its standard output and
error: what comes before the mark in either (importing the kernel's module) is dropped here,
what comes after it is the compile's (the mark orders the two within each stream, which no
reading of two pipes at two moments could). Parent side here: worker_init, worker_job,
worker_result. Worker side: serve.
"""

import os
import pickle
import struct
import sys

from .kernels import _jit_function_of
from .triton_facts import _facts

PACKAGE = "_triton_embed_glue"
# The package's modules a worker runs, each after those it imports.
WORKER_MODULES = ("triton_facts", "kernels", "compile", "worker")
READY, STARTED, DONE, FAILED = 0, 1, 2, 3
# Written to a worker's standard output and error as a job's compile starts (kStartMark in
# worker_processes.cc: the same bytes).
START_MARK = b"\x00\x1e[triton_embed: compile started]\x1e\x00"

# The program a worker starts with (python -c): reads the first frame, makes the package of its
# modules (as src/python/cpython.cc does here) and serves.
BOOTSTRAP = r"""
import importlib.machinery, os, pickle, struct, sys, types
os.closerange(5, os.sysconf("SC_OPEN_MAX"))  # none of the parent's other descriptors
os.set_inheritable(3, False)  # a program the compile starts holds neither pipe of ours
os.set_inheritable(4, False)
def _read(n):
    data = b""
    while len(data) < n:
        chunk = os.read(3, n - len(data))
        if not chunk:
            raise SystemExit(0)
        data += chunk
    return data
size, = struct.unpack("<I", _read(4))
init = pickle.loads(_read(size)[8:])
name = init["package"]
package = types.ModuleType(name)
package.__package__ = name
package.__path__ = []
package.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
sys.modules[name] = package
for module, source in init["modules"]:
    m = types.ModuleType(name + "." + module)
    m.__package__ = name
    m.__spec__ = importlib.machinery.ModuleSpec(m.__name__, None)
    sys.modules[m.__name__] = m
    setattr(package, module, m)
    exec(compile(source, "<triton_embed glue/%s.py>" % module, "exec"), m.__dict__)
package.worker.serve(init)
"""


# ---- this process's side ---------------------------------------------------------------------

def worker_init(modules, warm_driver):
    """The first frame's payload: `modules` ((name, source) of this package's modules, as the
    library holds them), of which a worker runs WORKER_MODULES. With `warm_driver` (one worker
    of a pool), the worker also builds Triton's CUDA driver module with its first job for a
    launch."""
    import triton

    wanted = dict(modules)
    return pickle.dumps({
        "package": PACKAGE,
        "modules": [(name, wanted[name]) for name in WORKER_MODULES],
        "facts": dict(_facts),
        "triton": triton.__version__,
        "warm_driver": bool(warm_driver),
        "sys_path": list(sys.path),
    }, protocol=4)


_refs = {}  # id(JITFunction) -> (JITFunction, (module, attribute) or None)


def _find_ref(fn):
    """(module, attribute) through which a worker finds fn: an attribute of fn's module whose
    @triton.jit function (under its wrappers) is fn; None where no import by name reaches it."""
    module = sys.modules.get(fn.module)
    if module is None or fn.module == "__main__" or getattr(module, "__spec__", None) is None:
        return None
    for name in [fn.__name__] + sorted(vars(module)):
        if _jit_function_of(getattr(module, name, None)) is fn:
            return fn.module, name
    return None


def _ref(fn):
    entry = _refs.get(id(fn))
    if entry is None:
        entry = _refs[id(fn)] = (fn, _find_ref(fn))
    return entry[1]


def _resolve(module, name, inner):
    """A kernel object a job names (a @triton.jit function passed as a constexpr)."""
    import importlib

    obj = getattr(importlib.import_module(module), name)
    return _jit_function_of(obj) if inner else obj


class _JobPickler(pickle.Pickler):
    """Kernel objects (a @triton.jit function given as a constexpr) go by module and name."""

    def reducer_override(self, obj):
        from triton.runtime.autotuner import Autotuner, Heuristics
        from triton.runtime.jit import JITFunction

        if not isinstance(obj, (JITFunction, Autotuner, Heuristics)):
            return NotImplemented
        fn = _jit_function_of(obj)
        ref = _ref(fn) if fn is not None else None
        if ref is None:
            raise pickle.PicklingError("a kernel no worker can import")
        inner = getattr(sys.modules[ref[0]], ref[1]) is not obj
        return _resolve, (ref[0], ref[1], inner)


def _constexprs_only(value, ty):
    """What _pack_args reads of an argument: its constexpr parts (None elsewhere)."""
    if isinstance(ty, tuple):
        return tuple(_constexprs_only(v, t) for v, t in zip(value, ty))
    return value if ty == "constexpr" else None


def worker_job(fn, bound_args, specialization, options, arch, warp_size, for_launch):
    """A job's payload: fn compiled as compile.compile would for these arguments (bound_args
    need only hold the constexpr parameters' values), or None when no worker can compile it
    (fn is not importable by name, or a value does not pickle). With `for_launch`, the worker
    also builds what Triton's launcher builds on first use in this process."""
    import io

    from triton import knobs

    from .compile import run_options

    ref = _ref(fn)
    # A stages inspection hook changes the pipeline in this process only (Triton 3.6 keeps it
    # out of the cache key): such compiles stay here.
    if ref is None or knobs.runtime.add_stages_inspection_hook is not None:
        return None
    job = {
        "module": ref[0],
        "name": ref[1],
        "cache_key": fn.cache_key,
        "bound": [_constexprs_only(v, ty) for v, (ty, _) in zip(bound_args, specialization)],
        "spec": list(specialization),
        "kwargs": run_options(fn, options),
        "arch": arch,
        "warp_size": warp_size,
        "for_launch": bool(for_launch),
    }
    buf = io.BytesIO()
    try:
        _JobPickler(buf, protocol=4).dump(job)
    except Exception:  # noqa: BLE001  a value that does not pickle: compiled here
        return None
    # This process's imports and environment (what Triton's knobs read), set before the job's
    # values are read there (they may import the kernel's module).
    return pickle.dumps((list(sys.path), dict(os.environ), buf.getvalue()), protocol=4)


def _registry(filename):
    """The warnings registry and name of the module `filename` is (a warning from it is shown
    once per place, together with those this process raised there itself)."""
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) == filename:
            return module.__dict__.setdefault("__warningregistry__", {}), name
    return None, None


def worker_result(payload):
    """Reads a worker's result: raises here the Python warnings the compile raised there (this
    process's filters and registries decide what shows); returns (hash or '', error or '')."""
    import importlib
    import warnings

    r = pickle.loads(payload)
    for module, qualname, message, filename, lineno in r.get("warnings", ()):
        try:
            category = importlib.import_module(module)
            for part in qualname.split("."):
                category = getattr(category, part)
        except Exception:  # noqa: BLE001  a category this process cannot import
            category = UserWarning
        if not (isinstance(category, type) and issubclass(category, Warning)):
            category = UserWarning
        registry, name = _registry(filename)
        warnings.warn_explicit(message, category, filename, lineno, module=name, registry=registry)
    return r.get("hash", ""), r.get("error", "")


# ---- the worker's side -----------------------------------------------------------------------

def _read(n):
    data = b""
    while len(data) < n:
        chunk = os.read(3, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _send(job_id, status, payload=b""):
    sys.stdout.flush()
    sys.stderr.flush()
    frame = struct.pack("<IQB", 9 + len(payload), job_id, status) + payload
    while frame:
        frame = frame[os.write(4, frame):]


def _mark_start():
    sys.stdout.flush()
    sys.stderr.flush()
    for fd in (1, 2):
        mark = START_MARK
        while mark:
            mark = mark[os.write(fd, mark):]


def _die_with_parent():
    """Ends this worker when the thread that started it ends (Linux), and ignores Ctrl-C (the
    parent gets it: the terminal sends it to the whole process group)."""
    import ctypes
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the parent's closed pipe ends it
    if os.getppid() == 1:
        raise SystemExit(0)


_located = {}  # (module, attribute) -> JITFunction


def _kernel(job):
    from .kernels import KernelNotFound

    key = (job["module"], job["name"])
    fn = _located.get(key)
    if fn is None:
        import importlib

        fn = _jit_function_of(getattr(importlib.import_module(key[0]), key[1], None))
        if fn is None:
            raise KernelNotFound("%s.%s is no kernel in this worker" % key)
        _located[key] = fn
    if fn.cache_key != job["cache_key"]:
        raise KernelNotFound("%s.%s differs in this worker (its source or globals)" % key)
    return fn


def _set_env(env):
    for name in [n for n in os.environ if n not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _warm_launch(kernel, warm_driver):
    """What Triton's launcher builds on first use in the launching process, built into Triton's
    cache here: the CUDA driver module (one worker) and, where Triton compiles a launcher per
    signature, that launcher. Without a CUDA driver library here the launching process builds
    them itself, as it would have."""
    from triton.backends.nvidia import driver

    try:
        if warm_driver:
            driver.CudaUtils()
        if _facts["launcher_per_signature"]:
            driver.CudaLauncher(kernel.src, kernel.metadata)
    except Exception:  # noqa: BLE001  the kernel compiled; its launcher is built where it launches
        pass


def _compile(fn, job):
    import time
    import traceback
    import warnings

    from .compile import compile_for

    start = time.time()
    result = {"pid": os.getpid()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            kernel, _ = compile_for(fn, job["bound"], job["spec"], job["kwargs"], job["arch"],
                                    job["warp_size"])
            if job["for_launch"]:
                _warm_launch(kernel, job.get("warm_driver", False))
            result["hash"] = kernel.hash
        except BaseException as exc:  # noqa: BLE001  the parent compiles it and meets the error
            result["error"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    result["warnings"] = [(w.category.__module__, w.category.__qualname__, str(w.message), w.filename,
                           w.lineno) for w in caught]
    result["seconds"] = time.time() - start
    return result


def serve(init):
    """The worker's loop: a job at a time until the parent closes the pipe."""
    import traceback

    _die_with_parent()
    try:
        # The lowest priority: the parent's own work (torch's import, the benchmarks' launches,
        # a server's threads) comes first on a CPU a worker shares.
        os.nice(19)
    except OSError:
        pass
    from .triton_facts import configure

    configure(init["facts"])
    sys.path[:] = init["sys_path"]  # this process's imports: its Triton, its kernels
    try:
        import triton

        if triton.__version__ != init["triton"]:
            raise RuntimeError("this worker imports Triton %s (%s), the parent runs Triton %s"
                               % (triton.__version__, triton.__file__, init["triton"]))
    except BaseException:  # noqa: BLE001  told to the parent, which compiles in-process
        _send(0, FAILED, traceback.format_exc().encode())
        return
    _send(0, READY)
    warm_driver = init["warm_driver"]
    while True:
        head = _read(4)
        if head is None:
            return
        (size,) = struct.unpack("<I", head)
        frame = _read(size)
        if frame is None:
            return
        (job_id,) = struct.unpack("<Q", frame[:8])
        try:
            path, env, body = pickle.loads(frame[8:])
            sys.path[:] = path
            _set_env(env)
            job = pickle.loads(body)
            fn = _kernel(job)
        except BaseException:  # noqa: BLE001
            _send(job_id, FAILED, pickle.dumps({"error": traceback.format_exc()}, protocol=4))
            continue
        _mark_start()
        _send(job_id, STARTED)
        job["warm_driver"] = job["for_launch"] and warm_driver
        warm_driver = warm_driver and not job["for_launch"]
        result = _compile(fn, job)
        _send(job_id, FAILED if "error" in result else DONE, pickle.dumps(result, protocol=4))
