"""The Python side of the launch-overhead benchmark (bench/run.py runs it).

  python_bench.py launch OUT.json   Python Triton kernel[grid](...) and CompiledKernel launches,
                                   the @triton.heuristics and (after tuning) @triton.autotune
                                   vector adds of bench_kernels.py, and the ops from Python
                                   beside torch's
  python_bench.py first-launch     a new process up to its first kernel[grid](...) launch

Same kernel and arguments as launch_bench (pykernels.vector.add_kernel, n = 4096, BLOCK 1024),
same method: median over 200 batches of 200 back-to-back calls, synchronised between batches,
the paths measured interleaved batch by batch.
"""

import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # pykernels

N, BLOCK, BATCHES, PER_BATCH, WARMUP = 4096, 1024, 200, 200, 2000


def batch_times_us(fns, sync):
    """Host time per call of each function (us), batch by batch, the functions interleaved.
    A function is called PER_BATCH times a batch; a RawFloor launches PER_BATCH times."""
    batches = [fn.batch if isinstance(fn, RawFloor) else _looped(fn) for fn in fns]
    for batch in batches:
        for _ in range(WARMUP // PER_BATCH):
            batch()
    sync()
    times = [[] for _ in fns]
    for _ in range(BATCHES):
        for k, batch in enumerate(batches):
            t0 = time.perf_counter()
            batch()
            times[k].append((time.perf_counter() - t0) * 1e6 / PER_BATCH)
            sync()
    return times


def _looped(fn):
    def batch():
        for _ in range(PER_BATCH):
            fn()
    return batch


def per_call_us(fns, sync):
    """Median host time per call of each function (us), measured interleaved batch by batch."""
    return [statistics.median(t) for t in batch_times_us(fns, sync)]


def quantile(v, q):
    """The q-quantile (0..1) of v, nearest rank (launch_bench's)."""
    v = sorted(v)
    return v[int(q * (len(v) - 1) + 0.5)]


class RawFloor:
    """A Python row's raw floor: cuLaunchKernelEx in a C++ loop (bench/raw_launch.cc), in this
    process, on the CUfunction Triton loaded for the row's kernel, with the row's arguments.
    `compiled` is what Triton's kernel[grid](...) returned for them; `values` are the kernel's
    parameters in order (ints, or a descriptor's expansion from tensordesc_values)."""

    def __init__(self, compiled, grid, values):
        import torch
        from _bench_raw import RawLaunch

        md = compiled.metadata
        for scratch in ("global_scratch_size", "profile_scratch_size"):
            if getattr(md, scratch, 0):
                raise RuntimeError("%s: needs %s; the raw floor passes null scratch pointers"
                                   % (md.name, scratch))
        compiled._init_handles()
        grid = tuple(grid) + (1,) * (3 - len(grid))
        self.launch = RawLaunch(compiled.function, md.num_warps, md.shared, grid, list(values))
        self.stream = torch.cuda.current_stream().cuda_stream

    def batch(self):
        self.launch.run(self.stream, PER_BATCH)


def tensordesc_values(compiled, descriptors):
    """The kernel parameters Triton's launcher passes for these host descriptors, in order:
    each one's CUtensorMap (128 bytes, encoded by Triton's driver), shape and strides."""
    import ctypes
    import inspect

    from triton.backends.nvidia import driver

    make = driver.make_tensordesc_arg
    extra = (None,) * (len(inspect.signature(make).parameters) - 2)  # 3.9 takes a third
    values = []
    for desc, meta in zip(descriptors, compiled.metadata.tensordesc_meta):
        cu_map, *rest = make(desc, meta, *extra)
        # Triton's PyCUtensorMap object ends with the 128-byte CUtensorMap.
        values.append(ctypes.string_at(id(cu_map) + type(cu_map).__basicsize__ - 128, 128))
        values += rest
    return values


def launch(out_path):
    import torch
    from bench_kernels import add_autotune_kernel, add_heuristics_kernel

    import triton_embed  # noqa: F401  (torch.ops.triton_embed)
    from pykernels.vector import add_kernel

    x = torch.rand(N, device="cuda")
    y = torch.rand(N, device="cuda")
    o = torch.empty(N, device="cuda")
    grid = (triton_cdiv(N, BLOCK),)
    sync = torch.cuda.synchronize
    compiled = add_kernel[grid](x, y, o, N, BLOCK=BLOCK)
    runner = compiled[(grid[0], 1, 1)]
    # The autotuned add is tuned here, before any timing; its grid follows the tuned BLOCK.
    tuned_grid = lambda META: (triton_cdiv(N, META["BLOCK"]),)  # noqa: E731
    add_autotune_kernel[tuned_grid](x, y, o, N)
    sync()
    names = ["python_kernel_grid_us", "python_compiled_kernel_us", "py_op_triton_embed_add_us",
             "py_op_aten_add_us", "py_torch_add_us", "python_heuristics_kernel_grid_us",
             "python_autotune_kernel_grid_us"]
    fns = [lambda: add_kernel[grid](x, y, o, N, BLOCK=BLOCK),
           lambda: runner(x, y, o, N, BLOCK),
           lambda: torch.ops.triton_embed.add(x, y),
           lambda: torch.ops.aten.add(x, y),
           lambda: torch.add(x, y),
           lambda: add_heuristics_kernel[grid](x, y, o, N, BLOCK=BLOCK),
           lambda: add_autotune_kernel[tuned_grid](x, y, o, N)]
    results = dict(zip(names, per_call_us(fns, sync)))
    results["python_autotune_best"] = str(add_autotune_kernel.best_config)
    results.update(fast_path(x, y, o, grid, tuned_grid, sync))
    with open(out_path, "w") as f:
        json.dump(results, f)
    print(json.dumps(results))


def fast_path(x, y, o, grid, tuned_grid, sync):
    """triton_embed.jit(kernel)[grid](...) beside Triton's kernel[grid](...): the vector adds
    above, 32 pointer arguments (bench_kernels.args_32, as launch_bench's args32 row) and two
    host descriptors (bench_kernels.tma_copy, as its tma row: 256 x 64 fp32, block 64 x 64,
    the descriptors made once). The autotuned add twice: with its grid as Triton's tutorials
    write it (a lambda with triton.cdiv, which the fast path evaluates without calling it) and
    with tuned_grid (a lambda calling a Python function, called at each launch), beside Triton's
    kernel[grid] on the former. The heuristics add again with EVEN, which its heuristic sets,
    given by name (the heuristic's value wins, as in Heuristics.run). A call the fast path hands
    to Triton's launcher (bench_kernels.apply_kernel: a @triton.jit function as an argument)
    beside Triton's own kernel[grid] of it. Interleaved in one group."""
    import torch
    import triton
    from bench_kernels import (
        add_autotune_kernel,
        add_heuristics_kernel,
        apply_kernel,
        args_32,
        negate,
        tma_copy,
    )
    from triton.tools.tensor_descriptor import TensorDescriptor

    import triton_embed
    from pykernels.vector import add_kernel

    fast_add = triton_embed.jit(add_kernel)
    fast_heur = triton_embed.jit(add_heuristics_kernel)
    fast_tuned = triton_embed.jit(add_autotune_kernel)
    fast_args32 = triton_embed.jit(args_32)
    fast_tma = triton_embed.jit(tma_copy)
    fast_apply = triton_embed.jit(apply_kernel)
    ptrs = [torch.empty(1, device="cuda") for _ in range(32)]
    TM, TN, BM = 256, 64, 64
    a = torch.rand((TM, TN), device="cuda")
    b = torch.zeros((TM, TN), device="cuda")
    src = TensorDescriptor.from_tensor(a, [BM, TN])
    dst = TensorDescriptor.from_tensor(b, [BM, TN])
    tgrid = (TM // BM,)
    fast_tma[tgrid](src, dst, BM, TN)
    sync()
    if not torch.equal(a, b):
        raise RuntimeError("tma_copy through triton_embed.jit: the copy differs from its source")
    o.zero_()
    fast_add[grid](x, y, o, N, BLOCK=BLOCK)
    sync()
    if not torch.equal(o, x + y):
        raise RuntimeError("add_kernel through triton_embed.jit: wrong result")
    # The autotuned add's grid as Triton's tutorials write it (its program gives the grid
    # without calling it), and tuned_grid, which calls a Python function (called each launch).
    cdiv_grid = lambda META: (triton.cdiv(N, META["BLOCK"]),)  # noqa: E731
    fast_tuned[cdiv_grid](x, y, o, N)
    sync()
    if not torch.equal(o, x + y):
        raise RuntimeError("add_autotune_kernel through triton_embed.jit: wrong result")
    o.zero_()
    fast_heur[grid](x, y, o, N, BLOCK=BLOCK, EVEN=False)  # the heuristic's True wins
    fast_apply[grid](x, o, N, negate, BLOCK=BLOCK)
    sync()
    if not torch.equal(o, -x):
        raise RuntimeError("apply_kernel through triton_embed.jit (Triton's launcher): wrong result")
    names = ["python_fast_us", "python_fast_heuristics_us", "python_fast_autotune_us",
             "python_fast_autotune_called_grid_us", "python_autotune_kernel_grid_cdiv_us",
             "python_fast_args32_us", "python_args32_kernel_grid_us", "python_fast_tma_us",
             "python_tma_kernel_grid_us", "python_fast_heuristics_named_us",
             "python_fast_fallback_us", "python_fallback_kernel_grid_us"]
    fns = [lambda: fast_add[grid](x, y, o, N, BLOCK=BLOCK),
           lambda: fast_heur[grid](x, y, o, N, BLOCK=BLOCK),
           lambda: fast_tuned[cdiv_grid](x, y, o, N),
           lambda: fast_tuned[tuned_grid](x, y, o, N),
           lambda: add_autotune_kernel[cdiv_grid](x, y, o, N),
           lambda: fast_args32[(1,)](*ptrs),
           lambda: args_32[(1,)](*ptrs),
           lambda: fast_tma[tgrid](src, dst, BM, TN),
           lambda: tma_copy[tgrid](src, dst, BM, TN),
           lambda: fast_heur[grid](x, y, o, N, BLOCK=BLOCK, EVEN=False),
           lambda: fast_apply[grid](x, o, N, negate, BLOCK=BLOCK),
           lambda: apply_kernel[grid](x, o, N, negate, BLOCK=BLOCK)]
    # Each target row's raw floor, measured here beside it (the cubins Triton compiled for the
    # same calls, which the fast path launches too).
    xyon = [x.data_ptr(), y.data_ptr(), o.data_ptr(), N]
    tma_compiled = tma_copy[tgrid](src, dst, BM, TN)
    floors = {
        "python_fast_us": RawFloor(add_kernel[grid](x, y, o, N, BLOCK=BLOCK), grid, xyon),
        "python_fast_heuristics_us": RawFloor(
            add_heuristics_kernel[grid](x, y, o, N, BLOCK=BLOCK), grid, xyon),
        "python_fast_autotune_us": RawFloor(
            add_autotune_kernel[tuned_grid](x, y, o, N),
            tuned_grid(add_autotune_kernel.best_config.kwargs), xyon),
        "python_fast_args32_us": RawFloor(args_32[(1,)](*ptrs), (1,),
                                          [p.data_ptr() for p in ptrs]),
        "python_fast_tma_us": RawFloor(tma_compiled, tgrid,
                                       tensordesc_values(tma_compiled, [src, dst])),
    }
    check_floors(floors, x, y, o, a, b, sync)
    times = batch_times_us(fns + list(floors.values()), sync)
    results = dict(zip(names, (statistics.median(t) for t in times)))
    floor_of = {key: key for key in floors}
    floor_of["python_fast_autotune_called_grid_us"] = "python_fast_autotune_us"
    floor_of["python_fast_heuristics_named_us"] = "python_fast_heuristics_us"
    for key, floor_key in floor_of.items():
        # As launch_bench's paired(): the median over batches of the row's time over its
        # floor's (the two measured back to back), with its quartiles.
        row = times[names.index(key)]
        floor = times[len(fns) + list(floors).index(floor_key)]
        ratios = [r / f for r, f in zip(row, floor)]
        base = key[:-len("_us")]
        results[base + "_raw_us"] = statistics.median(floor)
        results[base + "_ratio"] = statistics.median(ratios)
        results[base + "_p25"] = quantile(ratios, 0.25)
        results[base + "_p75"] = quantile(ratios, 0.75)
    # The call handed to Triton's launcher against Triton's own kernel[grid] of it, batch by
    # batch, as above.
    ratios = [f / t for f, t in zip(times[names.index("python_fast_fallback_us")],
                                    times[names.index("python_fallback_kernel_grid_us")])]
    results["python_fast_fallback_raw_us"] = results["python_fallback_kernel_grid_us"]
    results["python_fast_fallback_ratio"] = statistics.median(ratios)
    results["python_fast_fallback_p25"] = quantile(ratios, 0.25)
    results["python_fast_fallback_p75"] = quantile(ratios, 0.75)
    results["python_fast_path_stats"] = triton_embed.fast_path_stats()
    return results


def check_floors(floors, x, y, o, a, b, sync):
    """The raw launches compute what the kernels should: the vector adds' sum, the TMA copy."""
    for key in ("python_fast_us", "python_fast_heuristics_us", "python_fast_autotune_us"):
        o.zero_()
        floors[key].launch.run(floors[key].stream, 1)
        sync()
        if not (o == x + y).all():
            raise RuntimeError("%s: the raw floor's launch gives a wrong sum" % key)
    b.zero_()
    floors["python_fast_tma_us"].launch.run(floors["python_fast_tma_us"].stream, 1)
    sync()
    if not (a == b).all():
        raise RuntimeError("the TMA row's raw floor: the copy differs from its source")


def triton_cdiv(a, b):
    return (a + b - 1) // b


def first_launch():
    t0 = time.perf_counter()
    import torch
    import triton  # noqa: F401

    from pykernels.vector import add_kernel

    t1 = time.perf_counter()
    x = torch.rand(N, device="cuda")
    y = torch.rand(N, device="cuda")
    o = torch.empty(N, device="cuda")
    t2 = time.perf_counter()
    add_kernel[(triton_cdiv(N, BLOCK),)](x, y, o, N, BLOCK=BLOCK)
    t3 = time.perf_counter()
    torch.cuda.synchronize()
    print(json.dumps({"import_s": t1 - t0, "first_launch_s": t3 - t2,
                      "start_to_first_launch_s": time.perf_counter() - t0}))


if __name__ == "__main__":
    if sys.argv[1] == "launch":
        launch(sys.argv[2])
    elif sys.argv[1] == "first-launch":
        first_launch()
    else:
        sys.exit("usage: python_bench.py launch OUT.json | first-launch")
