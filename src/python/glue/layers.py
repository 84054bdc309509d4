"""@triton.heuristics and @triton.autotune: a heuristic run on the arguments recording what it
reads, tuning as Autotuner.run does (with triton_embed's scratch allocator), pruning and a
config's pre_hook."""

import contextlib

from .triton_facts import _facts

# Aspects of an argument a heuristic read (the C++ side keys its cache on them).
ASPECT_VALUE, ASPECT_DTYPE, ASPECT_ADDRESS, ASPECT_OBJECT = 0, 1, 2, 3


class _Watched:
    """A pointer argument as a heuristic sees it: the tensor (or DevicePointer), recording
    which of its attributes the heuristic reads."""

    def __init__(self, obj, name, reads):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_reads", reads)

    def __getattr__(self, attr):
        reads = object.__getattribute__(self, "_reads")
        name = object.__getattribute__(self, "_name")
        obj = object.__getattribute__(self, "_obj")
        if attr == "dtype":
            reads.append((name, ASPECT_DTYPE))
        elif attr == "data_ptr":
            reads.append((name, ASPECT_ADDRESS))
        elif attr == "element_size":
            reads.append((name, ASPECT_DTYPE))
        else:
            reads.append((name, ASPECT_OBJECT))
        return getattr(obj, attr)

    def __repr__(self):
        return repr(object.__getattribute__(self, "_obj"))


class _RecordingArgs(dict):
    """The dict a heuristic gets: records each key read (and what of a pointer argument).
    Reading the whole dict (iteration, items(), len, copy) counts as reading every value."""

    def __init__(self, values, pointers):
        super().__init__(values)
        self.reads = []
        self.everything = False
        self._pointers = pointers

    def __getitem__(self, key):
        self.reads.append((key, ASPECT_VALUE))
        value = dict.__getitem__(self, key)
        if key in self._pointers:
            return _Watched(value, key, self.reads)
        return value

    def get(self, key, default=None):
        self.reads.append((key, ASPECT_VALUE))
        if dict.__contains__(self, key):
            return self[key]
        return default

    def __contains__(self, key):
        self.reads.append((key, ASPECT_VALUE))
        return dict.__contains__(self, key)

    def _all(self):
        self.everything = True

    def keys(self):
        self._all()
        return dict.keys(self)

    def values(self):
        self._all()
        return dict.values(self)

    def items(self):
        self._all()
        return dict.items(self)

    def __iter__(self):
        self._all()
        return dict.__iter__(self)

    def __len__(self):
        self._all()
        return dict.__len__(self)

    def copy(self):
        self._all()
        return dict(dict.items(self))


def eval_heuristic(fn, values, pointers):
    """Runs one heuristic as Triton's Heuristics.run does (on the dict of the arguments given
    so far) and returns (value, reads, read_everything)."""
    args = _RecordingArgs(values, pointers)
    value = fn(args)
    return value, args.reads, args.everything


def config_info(config):
    """What C++ keeps of a triton.Config."""
    return (
        str(config),
        [(k, v, repr(v)) for k, v in config.kwargs.items()],
        int(config.num_warps) if config.num_warps is not None else 4,
        int(config.num_stages) if config.num_stages is not None else 3,
        int(config.num_ctas) if config.num_ctas is not None else 1,
        int(config.maxnreg) if config.maxnreg is not None else 0,
        config.ir_override,
        config.pre_hook is not None,
    )


def tuning_key(tuner, args, kwargs):
    """Autotuner.run's key for these arguments."""
    nargs = dict(zip(tuner.arg_names, args))
    all_args = {**nargs, **kwargs}
    _args = {k: v for (k, v) in all_args.items() if k in tuner.arg_names}
    key = [_args[key] for key in tuner.keys if key in _args]
    for _, arg in _args.items():
        if hasattr(arg, "dtype"):
            key.append(str(arg.dtype))
    return tuple(key)


def _timings_list(timings):
    out = []
    for config, t in timings.items():
        ms = list(t) if isinstance(t, (list, tuple)) else [t]
        out.append((config_info(config), [float(x) for x in ms]))
    return out


class _Scratch:
    """Global scratch memory for one launch of Triton's launcher, from triton_embed's scratch
    allocator. The launcher drops it as soon as it has queued the launch; it is then given back
    on the launch's stream (stream-ordered: after the kernel ran), as triton_embed's own
    launches give theirs back."""

    __slots__ = ("_ptr", "_size", "_stream", "_release")

    def __init__(self, ptr, size, stream, release):
        self._ptr = ptr
        self._size = size
        self._stream = stream
        self._release = release

    def data_ptr(self):
        return self._ptr

    def __del__(self):
        self._release(self._ptr, self._size, self._stream)


class ScratchAllocator:
    """triton_embed's scratch allocator in the form triton.set_allocator takes:
    fn(size, alignment, stream) returns an object with data_ptr(). allocate(size, alignment,
    stream) and release(ptr, size, stream) are the C++ allocator's (src/python/layers.cc)."""

    def __init__(self, allocate, release):
        self._allocate = allocate
        self._release = release

    def __call__(self, size, alignment, stream):
        stream = 0 if stream is None else int(stream)
        return _Scratch(self._allocate(size, alignment, stream), size, stream, self._release)


@contextlib.contextmanager
def triton_allocator(scratch):
    """For the scope: Triton's launcher (through which the Autotuner benchmarks) takes a
    kernel's global scratch from `scratch` (a ScratchAllocator) when no allocator is set; one
    already set (a Python user's own triton.set_allocator) is kept. Nothing of ours stays set
    after. Triton 3.6 to 3.9 keep the allocator in the ContextVar
    triton.runtime._allocation._allocator, NullAllocator when none is set; a ContextVar is per
    thread (and context), so this sets and resets it for the calling thread only."""
    from triton.runtime import _allocation

    var = _allocation._allocator
    if scratch is None or not isinstance(var.get(), _allocation.NullAllocator):
        yield
        return
    token = var.set(scratch)
    try:
        yield
    finally:
        # A hook that set its own allocator meanwhile keeps it.
        if var.get() is scratch:
            var.reset(token)


def tune(tuner, args, kwargs, progress, scratch=None, precompile=None):
    """Autotuner.run up to the choice of the configuration, without the final launch: the
    same key, pruning, benchmarking (Autotuner._bench with its hooks), disk cache, listener
    and printing as the installed Triton. `scratch` (a ScratchAllocator) serves the launches'
    global scratch when no Triton allocator is set (triton_allocator). `precompile(configs)`,
    when given, compiles the pruned configs into Triton's cache before Triton's loop benchmarks
    them one at a time (each compile there then finds its kernel in the cache): it returns
    (wait, seconds), wait(i) returning once config i is compiled (its benchmark follows) and
    seconds() the time the compiles took so far; the compiles may run in other processes while
    the benchmarks do. Returns (config, key_str, timings, from_cache, seconds, compile_seconds,
    benchmark_seconds)."""
    with triton_allocator(scratch):
        return _tune(tuner, args, kwargs, progress, precompile)


def prepare_benchmarks():
    """What a first tuning does before its first benchmark (triton_embed::prepare_tuning): torch
    and Triton's benchmark imported, Triton's active driver started (its CUDA module built into
    Triton's cache on first use) with torch's CUDA state."""
    import torch  # noqa: F401
    import triton.testing  # noqa: F401
    from triton.runtime import driver

    driver.active.get_current_device()


def prunes_nothing(tuner):
    """True when the tuner's pruning keeps every config whatever the call (no
    prune_configs_by) and no disk cache may answer the tuning: its configs can be compiled
    before its key is known."""
    return tuner.early_config_prune is None and tuner.perf_model is None and not getattr(
        tuner, "cache_results", False)


def _tune(tuner, args, kwargs, progress, precompile=None):
    import builtins
    import time

    from triton import knobs

    tuner.nargs = dict(zip(tuner.arg_names, args))
    try:
        key = tuning_key(tuner, args, kwargs)
        if key in tuner.cache:
            return tuner.cache[key], str(key), [], True, 0.0, 0.0, 0.0
        used_cached_result = False
        pruned_configs = tuner.prune_configs(kwargs)
        timings_out = []
        new_listener = _facts["autotune_listener"]
        compile_seconds = 0.0
        bench_seconds = 0.0

        if new_listener and len(pruned_configs) == 1:
            tuner.cache[key] = pruned_configs[0]
            used_cached_result = True
        else:

            def benchmark():
                nonlocal compile_seconds, bench_seconds
                bench_start = time.time()
                compiles = precompile(pruned_configs) if precompile is not None else None
                timings = {}
                best, best_ms = None, float("inf")
                for i, config in enumerate(pruned_configs):
                    if compiles is not None:
                        compiles[0](i)
                    config_start = time.time()
                    t = tuner._bench(*args, config=config, **kwargs)
                    bench_seconds += time.time() - config_start
                    timings[config] = t
                    ms = t[0] if isinstance(t, (list, tuple)) else t
                    if best is None or ms < best_ms:
                        best, best_ms = config, ms
                    if compiles is not None:
                        compile_seconds = compiles[1]()
                    if progress is not None:
                        progress(str(key), i + 1, len(pruned_configs), str(best), float(best_ms),
                                 time.time() - bench_start, compile_seconds, bench_seconds)
                bench_end = time.time()
                tuner.bench_time = bench_end - bench_start
                tuner.cache[key] = builtins.min(timings, key=timings.get)
                full_nargs = {**tuner.nargs, **kwargs, **tuner.cache[key].all_kwargs()}
                tuner.pre_hook(full_nargs, reset_only=True)
                tuner.configs_timings = timings

            if tuner.cache_results:
                used_cached_result = tuner.check_disk_cache(key, pruned_configs, benchmark)
            else:
                benchmark()
            timings_out = _timings_list(getattr(tuner, "configs_timings", {}) or {})

            if new_listener and knobs.autotuning.listener is not None:
                from triton.runtime.jit import JITFunction

                jit_fn = tuner.fn
                while not isinstance(jit_fn, JITFunction):
                    jit_fn = jit_fn.fn
                knobs.autotuning.listener(
                    fn=jit_fn,
                    key=key,
                    best_config=tuner.cache[key],
                    configs_timings=tuner.configs_timings,
                    duration=getattr(tuner, "bench_time", None) if not used_cached_result else None,
                    cache_hit=used_cached_result,
                )
        config = tuner.cache[key]
        tuner.best_config = config
        if knobs.autotuning.print and not used_cached_result:
            print(
                f"Triton autotuning for function {tuner.base_fn.__name__},\nwith key as {key},\n"
                f"finished after {tuner.bench_time:.2f}s,\nbest config selected: {tuner.best_config};"
            )
        seconds = 0.0 if used_cached_result else float(getattr(tuner, "bench_time", 0.0))
        if used_cached_result:
            compile_seconds = bench_seconds = 0.0
        return (config, str(key), timings_out, used_cached_result, seconds, compile_seconds,
                bench_seconds)
    finally:
        tuner.nargs = None


def prune(tuner, args, kwargs):
    """Autotuner.warmup's configurations: those left after pruning."""
    tuner.nargs = dict(zip(tuner.arg_names, args))
    try:
        return list(tuner.prune_configs(kwargs))
    finally:
        tuner.nargs = None


def run_config_pre_hook(config, args, arg_names, kwargs):
    """Autotuner.run's call of the chosen config's pre_hook; returns the arguments it saw."""
    full_nargs = {**dict(zip(arg_names, args)), **kwargs, **config.all_kwargs()}
    config.pre_hook(full_nargs)
    return full_nargs
