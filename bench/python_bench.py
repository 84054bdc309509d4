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


def per_call_us(fns, sync):
    """Median host time per call of each function (us), measured interleaved batch by batch."""
    for fn in fns:
        for _ in range(WARMUP):
            fn()
    sync()
    times = [[] for _ in fns]
    for _ in range(BATCHES):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(PER_BATCH):
                fn()
            times[k].append((time.perf_counter() - t0) * 1e6 / PER_BATCH)
            sync()
    return [statistics.median(t) for t in times]


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
    the descriptors made once). Interleaved in one group."""
    import torch
    from bench_kernels import add_autotune_kernel, add_heuristics_kernel, args_32, tma_copy
    from triton.tools.tensor_descriptor import TensorDescriptor

    import triton_embed
    from pykernels.vector import add_kernel

    fast_add = triton_embed.jit(add_kernel)
    fast_heur = triton_embed.jit(add_heuristics_kernel)
    fast_tuned = triton_embed.jit(add_autotune_kernel)
    fast_args32 = triton_embed.jit(args_32)
    fast_tma = triton_embed.jit(tma_copy)
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
    names = ["python_fast_us", "python_fast_heuristics_us", "python_fast_autotune_us",
             "python_fast_args32_us", "python_args32_kernel_grid_us", "python_fast_tma_us",
             "python_tma_kernel_grid_us"]
    fns = [lambda: fast_add[grid](x, y, o, N, BLOCK=BLOCK),
           lambda: fast_heur[grid](x, y, o, N, BLOCK=BLOCK),
           lambda: fast_tuned[tuned_grid](x, y, o, N),
           lambda: fast_args32[(1,)](*ptrs),
           lambda: args_32[(1,)](*ptrs),
           lambda: fast_tma[tgrid](src, dst, BM, TN),
           lambda: tma_copy[tgrid](src, dst, BM, TN)]
    results = dict(zip(names, per_call_us(fns, sync)))
    results["python_fast_path_stats"] = triton_embed.fast_path_stats()
    return results


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
