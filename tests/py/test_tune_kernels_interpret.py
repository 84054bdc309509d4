"""The autotuned kernels (pykernels.matmul, pykernels.attention, te_tune_kernels) on the CPU,
through Triton's interpreter, against torch.

TRITON_INTERPRET=1 must be set before triton is imported, and the other tests of this
process import triton without it, so each group of checks runs in a child process: this
file run as a script (``python test_tune_kernels_interpret.py GROUP``).

Each config of each autotuned kernel is checked on its own (the jit function under the
Autotuner, called with the config's meta-parameters). The Autotuner itself is also run end to
end: the interpreter has no GPU driver for Triton's benchmarker, so the children give each
Autotuner a stand-in do_bench (``_FakeBench``) that launches every config a few times and
ranks them in the order they were benchmarked; reset_to_zero, restore_value, the hooks and
pruning then run as they do on a GPU.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNELS = os.path.join(ROOT, "tests", "kernels")
GROUPS = ("matmul", "attention", "tune")


@pytest.fixture(scope="module")
def children():
    """The three child processes, started together (they take about as long each)."""
    env = dict(os.environ)
    env["TRITON_INTERPRET"] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")  # tiny matrices: threads only contend
    env["PYTHONPATH"] = os.pathsep.join([ROOT, KERNELS] + [p for p in [env.get("PYTHONPATH")] if p])
    procs = {
        group: subprocess.Popen([sys.executable, os.path.abspath(__file__), group], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for group in GROUPS
    }
    yield procs
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("group", GROUPS)
def test_interpreted(children, group):
    proc = children[group]
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail("timed out:\n%s\n%s" % (out, err[-8000:]))
    assert proc.returncode == 0, "stdout:\n%s\nstderr:\n%s" % (out, err[-8000:])
    assert ("OK " + group) in out, out


# ---- the child process -----------------------------------------------------------------------


class _FakeBench:
    """A do_bench for the interpreter: runs kernel_call `reps` times; the k-th config
    benchmarked gets time k, so the first config the tuner tries wins."""

    def __init__(self, reps=3):
        self.reps = reps
        self.calls = 0

    def __call__(self, kernel_call, quantiles=None):
        for _ in range(self.reps):
            kernel_call()
        self.calls += 1
        t = float(self.calls)
        return [t, t, t] if quantiles else t


def _no_bench(kernel_call, quantiles=None):
    raise AssertionError("this kernel must launch without benchmarking")


def _patch_bench(tuner, bench):
    tuner._do_bench = bench
    tuner.__dict__.pop("do_bench", None)  # the cached_property, if it was read already


def _check(name, got, want, atol=0.0, rtol=0.0):
    import torch

    got = got.float()
    want = want.float()
    err = (got - want).abs().max().item() if got.numel() else 0.0
    ok = torch.allclose(got, want, atol=atol, rtol=rtol)
    print("%-60s max_err=%.3g %s" % (name, err, "ok" if ok else "FAIL"))
    if not ok:
        raise AssertionError("%s: max error %g (atol %g, rtol %g)" % (name, err, atol, rtol))


def _matmul_ref(a, b, activation):
    import torch

    c = a.float() @ b.float()
    if activation == "leaky_relu":
        c = torch.nn.functional.leaky_relu(c, 0.01)
    elif activation == "relu":
        c = torch.relu(c)
    return c


def _group_matmul():
    import torch
    import triton

    from pykernels import matmul as mm

    assert os.environ.get("TRITON_INTERPRET") == "1"
    g = torch.Generator().manual_seed(0)
    acts = ("", "leaky_relu", "relu")
    tol = {torch.float16: 2e-2, torch.bfloat16: 6e-2}
    configs = mm.matmul_kernel.configs
    assert 6 <= len(configs) <= 8
    # fp16 only: the interpreter's tl.dot multiplies bfloat16 bit patterns (it keeps bf16 as
    # uint16; triton-lang/triton#11584), so bf16 is checked by compiling and on the GPU.
    for (M, N, K), dtype in (((64, 48, 80), torch.float16), ((37, 53, 29), torch.float16),
                             ((130, 70, 150), torch.float16)):
        a = torch.randn(M, K, generator=g).to(dtype)
        b = torch.randn(K, N, generator=g).to(dtype)
        for i, cfg in enumerate(configs):
            act = acts[i % 3]
            c = torch.empty(M, N, dtype=dtype)
            grid = (triton.cdiv(M, cfg.kwargs["BLOCK_M"]) * triton.cdiv(N, cfg.kwargs["BLOCK_N"]),)
            mm.matmul_kernel.fn[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                      b.stride(1), c.stride(0), c.stride(1), ACTIVATION=act,
                                      **cfg.kwargs)
            _check("matmul %dx%dx%d %s [%s] act=%r" % (M, N, K, dtype, cfg, act), c,
                   _matmul_ref(a, b, act), atol=tol[dtype], rtol=tol[dtype])
        # Every activation through the autotuner itself (stand-in benchmark), and strided b.
        _patch_bench(mm.matmul_kernel, _FakeBench(reps=1))
        for act in acts:
            c = mm.matmul(a, b, act)
            assert c.dtype == dtype
            _check("matmul %dx%dx%d %s autotuned act=%r" % (M, N, K, dtype, act), c,
                   _matmul_ref(a, b, act), atol=tol[dtype], rtol=tol[dtype])
        bt = b.t().contiguous().t()
        _check("matmul %dx%dx%d %s column-major b" % (M, N, K, dtype), mm.matmul(a, bt),
               _matmul_ref(a, b, ""), atol=tol[dtype], rtol=tol[dtype])
        assert mm.matmul_kernel.best_config in configs

    # The grouped order with several bands, the last one short: 5 x 4 tiles in bands of 2 rows.
    M, N, K = 70, 50, 40
    a = torch.randn(M, K, generator=g).half()
    b = torch.randn(K, N, generator=g).half()
    c = torch.full((M, N), float("nan"), dtype=torch.float16)
    mm.matmul_kernel.fn[(5 * 4,)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                  c.stride(0), c.stride(1), BLOCK_M=16, BLOCK_N=16, BLOCK_K=16,
                                  GROUP_M=2, ACTIVATION="leaky_relu")
    _check("matmul 70x50x40 16x16x16 GROUP_M=2", c, _matmul_ref(a, b, "leaky_relu"), atol=2e-2, rtol=2e-2)

    # autotune(heuristics(jit)): EVEN_K from the tuned BLOCK_K, with K even and ragged.
    heur = mm.matmul_heuristic_kernel
    assert isinstance(heur, triton.runtime.autotuner.Autotuner)
    assert isinstance(heur.fn, triton.runtime.autotuner.Heuristics)
    for M, N, K in ((40, 72, 128), (37, 53, 29)):
        a = torch.randn(M, K, generator=g).half()
        b = torch.randn(K, N, generator=g).half()
        for cfg in (heur.configs[0], heur.configs[-1]):
            c = torch.empty(M, N, dtype=torch.float16)
            grid = (triton.cdiv(M, cfg.kwargs["BLOCK_M"]) * triton.cdiv(N, cfg.kwargs["BLOCK_N"]),)
            heur.fn[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                          c.stride(0), c.stride(1), ACTIVATION="relu", **cfg.kwargs)
            even_k = K % cfg.kwargs["BLOCK_K"] == 0
            _check("matmul_heuristic %dx%dx%d [%s] EVEN_K=%s" % (M, N, K, cfg, even_k),
                   c, _matmul_ref(a, b, "relu"), atol=2e-2, rtol=2e-2)
        _patch_bench(heur, _FakeBench(reps=1))
        c = mm.matmul(a, b, "leaky_relu", kernel=heur)
        _check("matmul_heuristic %dx%dx%d autotuned" % (M, N, K), c, _matmul_ref(a, b, "leaky_relu"),
               atol=2e-2, rtol=2e-2)


def _attn_ref(q, k, v, causal, sm_scale):
    import torch

    qf, kf, vf = q.float(), k.float(), v.float()
    o = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=causal, scale=sm_scale)
    s = (qf @ kf.transpose(-1, -2)) * sm_scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1).reshape(q.shape[0] * q.shape[1], q.shape[2])
    return o, lse


def _group_attention():
    import torch
    import triton

    from pykernels import attention as at

    assert os.environ.get("TRITON_INTERPRET") == "1"
    g = torch.Generator().manual_seed(0)
    configs = at.attn_fwd_kernel.configs
    assert 3 <= len(configs) <= 5
    for cfg in configs:
        assert cfg.kwargs["BLOCK_M"] % cfg.kwargs["BLOCK_N"] == 0, cfg
    tol = {torch.float16: 1e-2, torch.bfloat16: 3e-2}
    # fp16 only (the interpreter's tl.dot mishandles bfloat16; see _group_matmul).
    cases = [((1, 2, 70, 16), torch.float16), ((1, 2, 64, 32), torch.float16),
             ((2, 1, 37, 16), torch.float16)]
    for (Z, H, N_CTX, D), dtype in cases:
        q, k, v = (torch.randn(Z, H, N_CTX, D, generator=g).to(dtype) for _ in range(3))
        sm_scale = D ** -0.5
        for causal in (True, False):
            o_ref, lse_ref = _attn_ref(q, k, v, causal, sm_scale)
            for cfg in configs:
                o = torch.empty_like(q)
                m = torch.empty(Z * H, N_CTX, dtype=torch.float32)
                grid = (triton.cdiv(N_CTX, cfg.kwargs["BLOCK_M"]), Z * H)
                at.attn_fwd_kernel.fn[grid](
                    q, k, v, sm_scale, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                    Z, H, N_CTX, HEAD_DIM=D, CAUSAL=causal, **cfg.kwargs)
                name = "attn Z=%d H=%d N=%d D=%d %s causal=%s [%s]" % (Z, H, N_CTX, D, dtype, causal, cfg)
                _check(name + " o", o, o_ref, atol=tol[dtype], rtol=tol[dtype])
                _check(name + " lse", m, lse_ref, atol=1e-3, rtol=1e-3)
        # Through the autotuner (stand-in benchmark) with the default scale.
        _patch_bench(at.attn_fwd_kernel, _FakeBench(reps=1))
        o, m = at.attention(q, k, v, causal=True)
        o_ref, lse_ref = _attn_ref(q, k, v, True, sm_scale)
        _check("attn autotuned N=%d D=%d %s o" % (N_CTX, D, dtype), o, o_ref,
               atol=tol[dtype], rtol=tol[dtype])
        _check("attn autotuned N=%d D=%d %s lse" % (N_CTX, D, dtype), m, lse_ref, atol=1e-3, rtol=1e-3)
    # Non-contiguous q/k/v ([Z, N_CTX, H, D] storage viewed as [Z, H, N_CTX, D]).
    q, k, v = (torch.randn(1, 45, 2, 16, generator=g).half().transpose(1, 2) for _ in range(3))
    o, m = at.attention(q, k, v, causal=True)
    o_ref, lse_ref = _attn_ref(q, k, v, True, 0.25)
    _check("attn strided N=45 o", o, o_ref, atol=1e-2, rtol=1e-2)
    _check("attn strided N=45 lse", m, lse_ref, atol=1e-3, rtol=1e-3)


def _group_tune():
    import torch
    import triton
    from triton.runtime.autotuner import Autotuner, Heuristics

    import te_tune_kernels as tk

    assert os.environ.get("TRITON_INTERPRET") == "1"
    g = torch.Generator().manual_seed(0)

    def tuners():
        for name in dir(tk):
            obj = getattr(tk, name)
            while isinstance(obj, (Autotuner, Heuristics)):
                if isinstance(obj, Autotuner):
                    yield name, obj
                obj = obj.fn

    for name, tuner in tuners():
        _patch_bench(tuner, _no_bench if name == "tuned_single_kernel" else _FakeBench(reps=3))

    def each_config(kernel, n, make_args, want, **meta):
        """The kernel under the Autotuner, once per config, and the Autotuner itself."""
        for cfg in kernel.configs:
            args = make_args()
            kernel.fn[(triton.cdiv(n, cfg.kwargs["BLOCK"]),)](*args, **meta, **cfg.kwargs)
            got = args[-2 if len(args) > 2 else 0]
            _check("%s n=%d [%s] %s" % (kernel.base_fn.__name__, n, cfg, meta), got, want(args))

    # scale_kernel: plain jit, defaulted string constexpr.
    x = torch.randn(1000, generator=g)
    out = torch.empty_like(x)
    tk.scale_kernel[(4,)](x, out, 1000, 1.5, BLOCK=256)
    _check("scale_kernel mul (default MODE)", out, x * 1.5)
    tk.scale_kernel[(4,)](x, out, 1000, 1.5, 256, "add")
    _check("scale_kernel add (positional MODE)", out, x + 1.5)
    h = x.half()
    out_h = torch.empty_like(h)
    tk.scale_kernel[(8,)](h, out_h, 1000, 2.0, BLOCK=128, MODE="mul")
    _check("scale_kernel fp16 mul", out_h, h.float() * 2, atol=1e-3)

    # heur_kernel: BLOCK and EVEN from n.
    for n in (1000, 999, 3000, 1):
        x = torch.randn(n, generator=g)
        out = torch.full_like(x, float("nan"))
        tk.heur_kernel[tk.grid_1d(n)](x, out, n)
        _check("heur_kernel n=%d (BLOCK=%d EVEN=%s)" % (n, triton.next_power_of_2(min(n, 1024)), n % 2 == 0),
               out, x * 2)

    # heur_dtype_kernel: IS_HALF from the pointer's dtype; the +1 shows it was set.
    x = torch.randn(300, generator=g)
    out = torch.empty_like(x)
    tk.heur_dtype_kernel[(3,)](x, out, 300, BLOCK=128)
    _check("heur_dtype_kernel fp32 (IS_HALF=False)", out, x * 2)
    xh = x.half()
    out_h = torch.empty_like(xh)
    tk.heur_dtype_kernel[(3,)](xh, out_h, 300, BLOCK=128)
    _check("heur_dtype_kernel fp16 (IS_HALF=True)", out_h, xh.float() * 2 + 1, atol=2e-2)
    from te_helpers import P

    assert tk._is_half(P(0, "float16")) and not tk._is_half(P(0, "float32"))

    # tuned_kernel: ACT (defaulted, before the tuned BLOCK) by keyword, by position, default.
    n = 1000
    x = torch.randn(n, generator=g)
    acts = {"": lambda t: t * 2, "relu": lambda t: torch.relu(t * 2), "neg": lambda t: -t * 2}
    for act, ref in acts.items():
        each_config(tk.tuned_kernel, n, lambda: (x, torch.empty_like(x), n), lambda a, ref=ref: ref(x),
                    ACT=act)
    out = torch.empty_like(x)
    tk.tuned_kernel[tk.grid_1d(n)](x, out, n)
    _check("tuned_kernel autotuned ACT default", out, x * 2)
    assert tk.tuned_kernel.best_config.kwargs == {"BLOCK": 128}
    assert set(map(str, tk.tuned_kernel.configs_timings)) == set(map(str, tk.tuned_kernel.configs))
    tk.tuned_kernel[tk.grid_1d(n)](x, out, n, "relu")
    _check("tuned_kernel autotuned ACT='relu' positional", out, torch.relu(x * 2))
    tk.tuned_kernel[tk.grid_1d(n)](x, out, n, ACT="neg")
    _check("tuned_kernel autotuned ACT='neg' keyword", out, -x * 2)

    # tuned_single_kernel: one config, no benchmark (its do_bench raises).
    x = torch.randn(777, generator=g)
    out = torch.empty_like(x)
    tk.tuned_single_kernel[tk.grid_1d(777)](x, out, 777)
    _check("tuned_single_kernel (no benchmark)", out, x + 1)
    assert tk.tuned_single_kernel.best_config.kwargs == {"BLOCK": 256}

    # heuristics(autotune(jit)) and autotune(heuristics(jit)).
    assert isinstance(tk.tuned_heur_kernel, Heuristics) and isinstance(tk.tuned_heur_kernel.fn, Autotuner)
    assert isinstance(tk.heur_tuned_kernel, Autotuner) and isinstance(tk.heur_tuned_kernel.fn, Heuristics)
    for n in (1000, 999, 512, 64):
        x = torch.randn(n, generator=g)
        out = torch.full_like(x, float("nan"))
        tk.tuned_heur_kernel[tk.grid_1d(n)](x, out, n)
        _check("tuned_heur_kernel n=%d (EVEN=%s)" % (n, n % 2 == 0), out, (x + (1 if n % 2 == 0 else 0)) * 3)
        for cfg in tk.heur_tuned_kernel.configs:
            out = torch.full_like(x, float("nan"))
            tk.heur_tuned_kernel.fn[(triton.cdiv(n, cfg.kwargs["BLOCK"]),)](x, out, n, **cfg.kwargs)
            _check("heur_tuned_kernel.fn n=%d [%s] EVEN_BLOCKS=%s" % (n, cfg, n % cfg.kwargs["BLOCK"] == 0),
                   out, x * 3)
        out = torch.full_like(x, float("nan"))
        tk.heur_tuned_kernel[tk.grid_1d(n)](x, out, n)
        _check("heur_tuned_kernel n=%d autotuned" % n, out, x * 3)

    # atomic_accum_kernel: reset_to_zero. The stand-in bench launches each config 3 times.
    for n, dtype in ((1000, torch.int32), (300, torch.float32)):
        x = torch.randint(-50, 50, (n,), generator=g).to(dtype)
        for cfg in tk.atomic_accum_kernel.configs:
            acc = torch.zeros(1, dtype=dtype)
            tk.atomic_accum_kernel.fn[(triton.cdiv(n, cfg.kwargs["BLOCK"]),)](x, acc, n, **cfg.kwargs)
            _check("atomic_accum_kernel.fn n=%d %s [%s]" % (n, dtype, cfg), acc, x.sum().reshape(1))
        acc = torch.full((1,), 7, dtype=dtype)  # not zero: tuning zeroes it before the final launch
        tk.atomic_accum_kernel[tk.grid_1d(n)](x, acc, n)
        _check("atomic_accum_kernel n=%d %s autotuned (reset_to_zero)" % (n, dtype), acc, x.sum().reshape(1))
        tk.atomic_accum_kernel[tk.grid_1d(n)](x, acc, n)  # cached key: no tuning, no reset
        _check("atomic_accum_kernel n=%d %s cached (adds)" % (n, dtype), acc, 2 * x.sum().reshape(1))

    # inplace_kernel: restore_value.
    n = 1000
    x0 = torch.randn(n, generator=g)
    for cfg in tk.inplace_kernel.configs:
        x = x0.clone()
        tk.inplace_kernel.fn[(triton.cdiv(n, cfg.kwargs["BLOCK"]),)](x, n, **cfg.kwargs)
        _check("inplace_kernel.fn [%s]" % cfg, x, x0 + 1)
    x = x0.clone()
    tk.inplace_kernel[tk.grid_1d(n)](x, n)
    _check("inplace_kernel autotuned (restore_value)", x, x0 + 1)

    # prehook_kernel: the BLOCK=128 config's pre_hook; the stand-in bench picks it (first).
    tk.clear_records()
    n = 500
    x = torch.randn(n, generator=g)
    out = torch.full_like(x, float("nan"))
    tk.prehook_kernel[tk.grid_1d(n)](x, out, n)
    _check("prehook_kernel autotuned", out, x * 2)
    assert tk.prehook_kernel.best_config.kwargs == {"BLOCK": 128}
    # 3 benchmark launches of the hooked config, then the final launch.
    assert tk.CONFIG_PRE_HOOK_CALLS == [(128, n)] * 4, tk.CONFIG_PRE_HOOK_CALLS
    tk.prehook_kernel[tk.grid_1d(n)](x, out, n)  # cached: only the final launch's hook
    assert tk.CONFIG_PRE_HOOK_CALLS == [(128, n)] * 5, tk.CONFIG_PRE_HOOK_CALLS
    _check("prehook_kernel cached", out, x * 2)

    # prehook_tuner_kernel: autotune-level pre_hook / post_hook around benchmark launches only.
    tk.clear_records()
    out = torch.empty_like(x)
    tk.prehook_tuner_kernel[tk.grid_1d(n)](x, out, n)
    _check("prehook_tuner_kernel autotuned", out, x * 2)
    want = [("pre", False), ("post", False)] * (2 * 3) + [("pre", True)]
    assert tk.TUNER_HOOK_CALLS == want, tk.TUNER_HOOK_CALLS
    tk.prehook_tuner_kernel[tk.grid_1d(n)](x, out, n)
    assert tk.TUNER_HOOK_CALLS == want, "hooks ran outside tuning"

    # pruned_kernel: early prune by n, then the perf model keeps the top 2.
    tk.clear_records()
    n = 100
    x = torch.randn(n, generator=g)
    out = torch.empty_like(x)
    tk.pruned_kernel[tk.grid_1d(n)](x, out, n)
    _check("pruned_kernel n=100", out, x - 1)
    want = [("prune", [32, 64, 128]), ("perf", 32), ("perf", 64), ("perf", 128)]
    assert tk.PRUNE_CALLS == want, tk.PRUNE_CALLS
    # perf model: 128 (1.125) < 64 (2.125) < 32; 128 is benchmarked first and so wins.
    assert tk.pruned_kernel.best_config.kwargs == {"BLOCK": 128}
    assert sorted(c.kwargs["BLOCK"] for c in tk.pruned_kernel.configs_timings) == [64, 128]
    tk.clear_records()
    n = 10
    x = torch.randn(n, generator=g)
    out = torch.empty_like(x)
    tk.pruned_kernel[tk.grid_1d(n)](x, out, n)
    _check("pruned_kernel n=10", out, x - 1)
    assert tk.PRUNE_CALLS == [("prune", [32, 64])], tk.PRUNE_CALLS  # 2 left: no perf model
    for cfg in tk.pruned_kernel.configs:
        o = torch.empty_like(x)
        tk.pruned_kernel.fn[(triton.cdiv(n, cfg.kwargs["BLOCK"]),)](x, o, n, **cfg.kwargs)
        _check("pruned_kernel.fn [%s]" % cfg, o, x - 1)

    # cached_kernel: cache_results (off under the interpreter, so it tunes as usual here).
    n = 3000
    x = torch.randn(n, generator=g)
    each_config(tk.cached_kernel, n, lambda: (x, torch.empty_like(x), n), lambda a: x * x)
    out = torch.empty_like(x)
    tk.cached_kernel[tk.grid_1d(n)](x, out, n)
    _check("cached_kernel autotuned", out, x * x)
    assert len(tk.cached_kernel.configs) == 3


def _interpreter_compat():
    """Triton 3.6's interpreter turns a scalar into an int with int() on a 1-element array,
    which numpy >= 2.3 rejects, so a runtime loop bound (range(0, K, BLOCK_K)) fails there.
    Take the element instead, as Triton 3.8 does (the library's glue does the same)."""
    import triton.runtime.interpreter as interpreter

    patch = interpreter._patch_lang_tensor

    def patched(tensor, scope):
        patch(tensor, scope)  # records the original attributes for the scope to restore
        tensor.__index__ = lambda self: int(self.handle.data.reshape(-1)[0])

    interpreter._patch_lang_tensor = patched


if __name__ == "__main__":
    group = sys.argv[1]
    _interpreter_compat()
    {"matmul": _group_matmul, "attention": _group_attention, "tune": _group_tune}[group]()
    print("OK " + group)
