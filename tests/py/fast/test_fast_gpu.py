"""triton_embed.jit on the GPU (skipped without one): every launch bitwise equal to the same
kernel's launch through Triton, one autotune cache for both paths, CUDA graphs, torch.compile."""

import pytest
import torch
import triton
from fast_kernels import (
    add_kernel,
    axpy_kernel,
    cast_kernel,
    failing_heuristic_kernel,
    heur_add_kernel,
    heuristic_failure,
    pruned_add_kernel,
    python_hook_calls,
    raised,
    tma_copy_2d,
    tma_tuned_python,
    tma_tuned_rows,
    tma_tuned_tile,
    tuned_add_kernel,
    tuple_kernel,
    uncompilable_kernel,
)
from paths import INTERPRET, counts

import triton_embed

# Under TRITON_INTERPRET=1 (pytest_fast_interpret) the CPU tests and test_call_patterns.py run.
pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or INTERPRET,
                                reason="needs a GPU, and kernels Triton compiles")


def data(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype).cuda()


def both(kernel, grid, make_args, **kwargs):
    """Launches kernel[grid] through Triton and through triton_embed.jit on equal fresh
    arguments; returns both argument lists after the launches."""
    a = make_args()
    kernel[grid](*a, **kwargs)
    b = make_args()
    triton_embed.jit(kernel)[grid](*b, **kwargs)
    torch.cuda.synchronize()
    return a, b


def assert_bitwise(a, b):
    for u, v in zip(a, b):
        if isinstance(u, torch.Tensor):
            assert torch.equal(u.view(torch.uint8) if u.dtype != torch.bool else u,
                               v.view(torch.uint8) if v.dtype != torch.bool else v)


@pytest.mark.parametrize("n", [1, 16, 1000, 4096, 100003])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.bfloat16])
def test_add_specialisations(n, dtype):
    def args():
        return [data(n, dtype, 1), data(n, dtype, 2), torch.empty(n, dtype=dtype, device="cuda"), n]

    a, b = both(add_kernel, (triton.cdiv(n, 256),), args, BLOCK=256)
    assert_bitwise(a, b)
    assert torch.equal(b[2], (b[0] + b[1]))


def test_unaligned_pointers_and_named_arguments():
    n = 999

    def args():
        x = data(n + 1, seed=3)[1:]  # not 16-byte aligned
        return [x, data(n, seed=4), torch.zeros(n + 4, device="cuda")[2:]]

    grid = lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)  # noqa: E731
    a, b = both(axpy_kernel, grid, args, alpha=1.5, n=n, SCALE_Y=True)
    assert_bitwise(a, b)


def test_heuristics_and_tuples_and_dtypes():
    for n in (100, 4096, 9000):
        def args(n=n):
            return [data(n, seed=5), data(n, seed=6), torch.empty(n, device="cuda"), n]
        a, b = both(heur_add_kernel, lambda m: (triton.cdiv(m["n"], m["BLOCK"]),), args)
        assert_bitwise(a, b)
    n = 500

    def targs():
        return [(data(n, seed=7), data(n, seed=8)), torch.empty(n, device="cuda"), n, (0.5, 2.0)]
    a, b = both(tuple_kernel, (1,), targs, BLOCK=512)
    assert torch.equal(a[1], b[1])

    import triton.language as tl

    def cargs():
        return [data(n, seed=9), torch.empty(n, dtype=torch.bfloat16, device="cuda"), n, tl.bfloat16]
    a, b = both(cast_kernel, (1,), cargs, BLOCK=512, num_warps=2)
    assert_bitwise(a, b)


def test_autotune_one_cache_for_both_paths():
    n = 50000
    x, y = data(n, seed=10), data(n, seed=11)
    out = torch.empty(n, device="cuda")
    grid = lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)  # noqa: E731
    triton_embed.jit(tuned_add_kernel)[grid](x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
    assert len(tuned_add_kernel.cache) >= 1
    best = tuned_add_kernel.best_config
    keys = dict(tuned_add_kernel.cache)
    out2 = torch.empty(n, device="cuda")
    tuned_add_kernel[grid](x, y, out2, n)  # Triton's path: the key tuned above, not tuned again
    torch.cuda.synchronize()
    assert dict(tuned_add_kernel.cache) == keys
    assert tuned_add_kernel.best_config is best
    assert torch.equal(out, out2)


def test_best_config_follows_each_call():
    # Autotuner.run sets best_config on every call: a key tuned before, launched again (a hit
    # of the runtime's memo of whole calls), shows its own choice again.
    fast = triton_embed.jit(pruned_add_kernel)
    grid = lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)  # noqa: E731
    for n in (1000, 50000, 1000, 1000, 50000):
        x, y, out = data(n, seed=n), data(n, seed=n + 1), torch.empty(n, device="cuda")
        fast[grid](x, y, out, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)
        assert pruned_add_kernel.best_config is pruned_add_kernel.configs[0 if n < 4096 else 1]
        pruned_add_kernel[grid](x, y, out, n)
        assert pruned_add_kernel.best_config is pruned_add_kernel.configs[0 if n < 4096 else 1]


@pytest.mark.parametrize("kernel", [tma_tuned_tile, tma_tuned_rows, tma_tuned_python])
def test_pre_hook_block_shapes_reach_the_callers_descriptors(kernel):
    # Triton's Autotuner.run hands the caller's descriptors to the config's pre_hook, so the
    # block shapes it sets stay on them, and a grid callable (called after the hook) reads
    # them: the same through triton_embed.jit, whether the runtime applies the hook (once per
    # config, or per launch) or Python runs it.
    from triton.tools.tensor_descriptor import TensorDescriptor

    def run(launch, rows, grid_reads):
        src = data((rows, 64), torch.float16, rows)
        dst = torch.zeros((rows, 64), dtype=torch.float16, device="cuda")
        descs = [TensorDescriptor.from_tensor(src, [8, 8]), TensorDescriptor.from_tensor(dst, [8, 8])]
        seen = []

        def grid(m):  # reads a descriptor: called at each launch, never translated
            seen.append(list(descs[1].block_shape))
            return (triton.cdiv(rows, m["BLOCK_M"]),)

        launch[grid if grid_reads else lambda m: (triton.cdiv(rows, m["BLOCK_M"]),)](
            descs[0], descs[1], rows)
        torch.cuda.synchronize()
        assert torch.equal(dst, src)
        shapes = [(type(d.block_shape), d.block_shape) for d in descs]
        return shapes, kernel.best_config, seen[-1:]

    fast = triton_embed.jit(kernel)
    del python_hook_calls[:]
    for i, rows in enumerate((128, 256, 128, 256, 128, 256)):  # again: memo hits
        block = [32 if rows == 128 else 64, 64]
        dst_block = tuple(block) if kernel is tma_tuned_rows else block  # its hook's tuple
        got = run(fast, rows, i >= 4)
        want = run(kernel, rows, i >= 4)
        assert got[0] == want[0] == [(list, block), (type(dst_block), dst_block)]
        assert got[1] is want[1]
        assert got[2] == want[2] == ([list(dst_block)] if i >= 4 else [])
    assert triton_embed.fast_path_stats()["triton"] == 0  # every call took the fast path
    if kernel is tma_tuned_python:  # tuning runs it too: how often is Triton's
        assert set(python_hook_calls) == {32, 64}


def test_tensor_descriptors():
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, N = 256, 128

    def args():
        src = data((M, N), torch.float16, 12)
        dst = torch.zeros((M, N), dtype=torch.float16, device="cuda")
        return [TensorDescriptor.from_tensor(src, [64, 64]), TensorDescriptor.from_tensor(dst, [64, 64]),
                src, dst]

    a = args()
    tma_copy_2d[(M // 64, N // 64)](a[0], a[1], BLOCK_M=64, BLOCK_N=64)
    b = args()
    fast = triton_embed.jit(tma_copy_2d)
    for _ in range(3):  # the same descriptors again: their encoded maps reused
        fast[(M // 64, N // 64)](b[0], b[1], BLOCK_M=64, BLOCK_N=64)
    torch.cuda.synchronize()
    assert torch.equal(a[3], b[3]) and torch.equal(b[3], b[2])


def test_tensor_descriptors_launched_again_after_changes():
    """Descriptors launched again after what can change under them changed, each launch beside
    Triton's on the same descriptors: the base tensor's storage swapped in place, a block_shape
    list changed in place (a tile of 32 rows where the kernel steps 64: half the rows copied),
    fields assigned, and new descriptors in place of freed ones."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, N = 256, 64
    src, dst = data((M, N), seed=15), torch.zeros((M, N), device="cuda")
    a, b = TensorDescriptor.from_tensor(src, [64, 64]), TensorDescriptor.from_tensor(dst, [64, 64])
    fast = triton_embed.jit(tma_copy_2d)

    def check():
        dst.zero_()
        tma_copy_2d[(M // 64, 1)](a, b, BLOCK_M=64, BLOCK_N=64)
        want = dst.clone()
        dst.zero_()
        for _ in range(3):
            fast[(M // 64, 1)](a, b, BLOCK_M=64, BLOCK_N=64)
        torch.cuda.synchronize()
        assert torch.equal(dst, want)
        return want

    assert torch.equal(check(), src)
    src.set_(data((M, N), seed=16).untyped_storage(), 0, (M, N), (N, 1))  # other memory
    assert torch.equal(check(), src)
    a.block_shape[0] = b.block_shape[0] = 32  # the lists the descriptors hold
    half = check()
    assert torch.equal(half.view(4, 64, N)[:, :32], src.view(4, 64, N)[:, :32])
    assert not half.view(4, 64, N)[:, 32:].any()
    a.block_shape = b.block_shape = [64, 64]
    assert torch.equal(check(), src)
    other = data((M, N), seed=17)
    a.base = other
    assert torch.equal(check(), other)
    for i in range(4):  # new descriptors, each freed before the next
        a = None
        a = TensorDescriptor.from_tensor(data((M, N), seed=20 + i), [64, 64])
        assert torch.equal(check(), a.base)
    assert triton_embed.fast_path_stats()["triton"] == 0


def test_current_stream_and_cuda_graphs():
    n = 4096
    x, y, out = data(n, seed=13), data(n, seed=14), torch.empty(n, device="cuda")
    fast = triton_embed.jit(add_kernel)
    fast[(16,)](x, y, out, n, BLOCK=256)  # compiled before capture
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        out.zero_()
        fast[(16,)](x, y, out, n, BLOCK=256)
    s.synchronize()
    assert torch.equal(out, x + y)
    g = torch.cuda.CUDAGraph()
    out.zero_()
    with torch.cuda.graph(g):
        fast[(16,)](x, y, out, n, BLOCK=256)
    torch.cuda.synchronize()
    out.zero_()
    x.add_(1)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_torch_compile_traces_the_view_as_the_kernel():
    n = 2048
    fast = triton_embed.jit(add_kernel)

    @torch.compile(fullgraph=True)
    def f(x, y):
        out = torch.empty_like(x)
        fast[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        return out * 2

    x, y = data(n, seed=15), data(n, seed=16)
    assert torch.equal(f(x, y), (x + y) * 2)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_the_tensors_device_not_the_current_one():
    """Tensors (and descriptors' bases) on cuda:1 launch there while cuda:0 is current."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    n = 3000
    torch.cuda.set_device(0)
    x, y = data(n, seed=17).to("cuda:1"), data(n, seed=18).to("cuda:1")
    out = torch.empty(n, device="cuda:1")
    triton_embed.jit(add_kernel)[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    src = data((128, 64), torch.float16, 19).to("cuda:1")
    dst = torch.zeros_like(src)
    triton_embed.jit(tma_copy_2d)[(2, 1)](TensorDescriptor.from_tensor(src, [64, 64]),
                                         TensorDescriptor.from_tensor(dst, [64, 64]),
                                         BLOCK_M=64, BLOCK_N=64)
    torch.cuda.synchronize(1)
    assert torch.cuda.current_device() == 0
    assert torch.equal(out, x + y)
    assert torch.equal(dst, src)


def test_pykernels_bitwise():
    """The project's own kernels (pykernels/) both ways on equal inputs: the autotuned matmul and
    attention (through their Python wrappers), and the heuristic softmax, layer norm and sum."""
    import triton.language as tl

    from pykernels import attention as attn_mod
    from pykernels import matmul as mm_mod
    from pykernels.norm import norm_fwd_kernel
    from pykernels.reduce import sum_kernel
    from pykernels.softmax import softmax_fwd_kernel

    a, b = data((192, 128), torch.float16, 20), data((128, 160), torch.float16, 21)
    ref = mm_mod.matmul(a, b)
    got = mm_mod.matmul(a, b, kernel=triton_embed.jit(mm_mod.matmul_kernel))
    torch.cuda.synchronize()
    assert torch.equal(ref, got)

    q, k, v = (data((1, 2, 128, 64), torch.float16, s) for s in (22, 23, 24))
    ref_o, ref_m = attn_mod.attention(q, k, v)
    original = attn_mod.attn_fwd_kernel
    attn_mod.attn_fwd_kernel = triton_embed.jit(original)
    try:
        got_o, got_m = attn_mod.attention(q, k, v)
    finally:
        attn_mod.attn_fwd_kernel = original
    torch.cuda.synchronize()
    assert torch.equal(ref_o, got_o) and torch.equal(ref_m, got_m)

    rows, cols, block = 64, 1000, 1024
    x = data((rows, cols), seed=25)

    def softmax_args():
        return [x, torch.empty_like(x), cols, cols, cols]

    s1, s2 = both(softmax_fwd_kernel, (rows,), softmax_args, BLOCK=block, COMPUTE=tl.float32)
    assert torch.equal(s1[1], s2[1])

    def norm_args():
        y = torch.empty_like(x)
        w, bias = data(cols, seed=26), data(cols, seed=27)
        mean = torch.empty(rows, device="cuda")
        rstd = torch.empty(rows, device="cuda")
        return [x, y, w, bias, mean, rstd, cols, 1e-5]

    n1, n2 = both(norm_fwd_kernel, (rows,), norm_args, BLOCK=block)
    assert all(torch.equal(u, w) for u, w in zip(n1[1:2] + n1[4:6], n2[1:2] + n2[4:6]))

    xs = data((4, 300, 96), seed=28)

    def sum_args():
        return [xs, torch.empty((4, 96), device="cuda"), 300, 96]

    r1, r2 = both(sum_kernel, (4, 2), sum_args, COMPUTE=tl.float32, BLOCK_R=32, BLOCK_I=64)
    assert torch.equal(r1[1], r2[1])



def test_bad_calls_raise_what_triton_raises():
    """Bad calls raise Triton's own exceptions, type and message (the library hands the calls
    it refuses to Triton's launcher, counted); a compile error and a heuristic's exception are
    the ones Python raised."""
    n = 64
    x, y, out = data(n, seed=40), data(n, seed=41), torch.empty(n, device="cuda")
    on_cpu = torch.zeros(n)
    fast = triton_embed.jit(add_kernel)
    calls = [
        lambda k: k[(1,)](x, y, out, n),  # a constexpr without a default, missing
        lambda k: k[(1,)](x, y, out, n, 64, BLOCK=64),  # given twice
        lambda k: k[(1,)](x, y, out, n, 64, 5),  # one positional argument too many
        lambda k: k[(1,)](x, y, out, n, BLOCK=64, num_warpz=4),  # no such option
        lambda k: k[(1,)](x, [y], out, n, BLOCK=64),  # an argument kind Triton refuses
        lambda k: k[(1,)](x.to(torch.complex64), y, out, n, BLOCK=64),  # no Triton dtype
        lambda k: k[(1,)](x, on_cpu, out, n, BLOCK=64),  # a CPU tensor beside CUDA ones
    ]
    for i, call in enumerate(calls):
        expected = raised(call, add_kernel)
        assert expected is not None, i
        assert raised(call, fast) == expected, i
    assert counts() == {"fast": 0, "triton": len(calls), "grid_programs": 0}

    expected = raised(lambda: uncompilable_kernel[(1,)](x, n))
    assert expected is not None and expected[0].__name__ == "CompilationError"
    assert raised(lambda: triton_embed.jit(uncompilable_kernel)[(1,)](x, n)) == expected

    with pytest.raises(type(heuristic_failure)) as info:
        triton_embed.jit(failing_heuristic_kernel)[(1,)](x, out, -1)
    assert info.value is heuristic_failure


def test_backward_and_elementwise_kernels_bitwise():
    """pykernels' backward kernels (softmax, layer norm: dx, and dw/db with None pointers) and the
    broadcasting binary kernel, both ways on equal inputs, bitwise equal."""
    import triton.language as tl

    from pykernels.elementwise import binary_kernel
    from pykernels.norm import norm_bwd_dwdb_kernel, norm_bwd_dx_kernel
    from pykernels.softmax import softmax_bwd_kernel

    rows, cols = 48, 700
    dy, y = data((rows, cols), seed=50), data((rows, cols), seed=51).softmax(-1)

    def softmax_bwd_args():
        return [dy, y, torch.empty_like(dy), cols, cols, cols, cols]

    s1, s2 = both(softmax_bwd_kernel, (rows,), softmax_bwd_args, BLOCK=1024, COMPUTE=tl.float32)
    assert_bitwise(s1, s2)

    x, w = data((rows, cols), seed=52), data(cols, seed=53)
    mean, rstd = x.mean(-1), torch.rsqrt(x.var(-1, unbiased=False) + 1e-5)

    def dx_args():
        return [dy, x, w, mean, rstd, torch.empty_like(x), cols]

    d1, d2 = both(norm_bwd_dx_kernel, (rows,), dx_args, BLOCK=1024)
    assert_bitwise(d1, d2)

    for with_mean, with_db in ((True, True), (False, False)):
        def dwdb_args(with_mean=with_mean, with_db=with_db):
            return [dy, x, mean if with_mean else None, rstd, torch.empty(cols, device="cuda"),
                    torch.empty(cols, device="cuda") if with_db else None, rows, cols]

        g1, g2 = both(norm_bwd_dwdb_kernel, (triton.cdiv(cols, 64),), dwdb_args,
                      BLOCK_M=32, BLOCK_N=64)
        assert_bitwise(g1, g2)

    a, b = data((4, 1, 6, 8), seed=54), data((1, 5, 6, 1), seed=55)
    shape = (4, 5, 6, 8)
    n = 4 * 5 * 6 * 8

    def strides(t):
        return [0 if t.shape[i] == 1 else t.stride(i) for i in range(4)]

    def binary_args(op):  # noqa: ARG001 (the op is a constexpr argument)
        return [a, b, torch.empty(shape, device="cuda"), 0.5, n, 5, 6, 8, *strides(a), *strides(b)]

    for op in (0, 1):
        u, v = both(binary_kernel, (triton.cdiv(n, 256),), lambda op=op: binary_args(op), OP=op,
                    STRIDED=True, COMPUTE=tl.float32, BLOCK=256)
        assert_bitwise(u, v)
    flat = data(n, seed=56)

    def flat_args():
        return [flat, flat, torch.empty(n, device="cuda", dtype=torch.float16), 2.0, n, 1, 1, 1,
                0, 0, 0, 0, 0, 0, 0, 0]

    u, v = both(binary_kernel, (triton.cdiv(n, 512),), flat_args, OP=0, STRIDED=False,
                COMPUTE=tl.float32, BLOCK=512)
    assert_bitwise(u, v)
