"""Reference runs of the autotuned kernels on a GPU, for the C++ side to compare against.

    python te_tune_reference.py OUTDIR            # run every case on CUDA, write OUTDIR
    python te_tune_reference.py --check OUTDIR    # re-check the outputs stored in OUTDIR

With torch on CUDA this builds fixed inputs (torch.manual_seed(0), drawn on the CPU in a fixed
order, so they do not depend on the GPU), runs the Python autotuned kernels of
pykernels.matmul and pykernels.attention, checks the outputs against torch and writes:

  OUTDIR/<case>.pt     torch.save of a dict of CPU tensors: the inputs and the outputs
                       (matmul: a, b, c; attention: q, k, v, o, m)
  OUTDIR/results.json  versions and device, and per case: the launch arguments (scalars,
                       strides, constexprs, grid), the tuning key, best_config (kwargs,
                       num_warps, num_stages, num_ctas, maxnreg), configs_timings
                       (str(config) -> [ms at the 0.5, 0.2, 0.8 quantiles]; null for a config
                       that failed to compile), the compiled kernel's hash and name, and the
                       check against torch (max abs error, tolerances); and under
                       "tune_kernels" the result of each te_tune_kernels kernel launched
                       through Triton's own autotuner on the GPU (ok, best_config).

The hash matches a C++ compile only for the same Triton version and the same specialisation
of the arguments (pointer alignment, integer divisibility by 16, values equal to 1).
"""

import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for _p in (ROOT, HERE):
    if _p not in sys.path:
        sys.path.insert(0, _p)

# name -> (kind, parameters)
CASES = {
    "matmul_1024_leaky_relu": ("matmul", dict(M=1024, N=1024, K=1024, activation="leaky_relu")),
    "matmul_1000x600x300": ("matmul", dict(M=1000, N=600, K=300, activation="")),
    "matmul_heuristic_1024_relu": ("matmul_heuristic", dict(M=1024, N=1024, K=1024, activation="relu")),
    "attn_causal_1024": ("attention", dict(Z=2, H=4, N_CTX=1024, HEAD_DIM=64, causal=True)),
    "attn_causal_1000": ("attention", dict(Z=2, H=4, N_CTX=1000, HEAD_DIM=64, causal=True)),
}

# fp16 outputs: |got - want| <= atol + rtol * |want| elementwise, want in fp32.
TOLERANCES = {
    "matmul": dict(atol=5e-2, rtol=1e-2),  # K up to 1024 of N(0, 1) products: |c| ~ 32
    "attention_o": dict(atol=1e-2, rtol=1e-2),
    "attention_m": dict(atol=2e-3, rtol=1e-4),  # the fp32 logsumexp
}


def make_inputs(name):
    """The inputs of case `name` on the CPU: the same on every machine."""
    import torch

    kind, p = CASES[name]
    g = torch.Generator().manual_seed(0)
    if kind in ("matmul", "matmul_heuristic"):
        a = torch.randn(p["M"], p["K"], generator=g).to(torch.float16)
        b = torch.randn(p["K"], p["N"], generator=g).to(torch.float16)
        return {"a": a, "b": b}
    shape = (p["Z"], p["H"], p["N_CTX"], p["HEAD_DIM"])
    q, k, v = (torch.randn(shape, generator=g).to(torch.float16) for _ in range(3))
    return {"q": q, "k": k, "v": v}


def _activation(x, activation):
    import torch

    if activation == "leaky_relu":
        return torch.nn.functional.leaky_relu(x, 0.01)
    if activation == "relu":
        return torch.relu(x)
    assert activation == "", activation
    return x


def reference(name, inputs):
    """The torch reference outputs of case `name`, in fp32, on the inputs' device."""
    import torch

    kind, p = CASES[name]
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        if kind in ("matmul", "matmul_heuristic"):
            c = torch.matmul(inputs["a"].float(), inputs["b"].float())
            return {"c": _activation(c, p["activation"])}
        q, k, v = (inputs[x].float() for x in "qkv")
        sm_scale = p["HEAD_DIM"] ** -0.5
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=p["causal"],
                                                             scale=sm_scale)
        s = torch.matmul(q, k.transpose(-1, -2)) * sm_scale
        if p["causal"]:
            n = p["N_CTX"]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1),
                              float("-inf"))
        m = torch.logsumexp(s, dim=-1).reshape(p["Z"] * p["H"], p["N_CTX"])
        return {"o": o, "m": m}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


def check_outputs(name, inputs, outputs):
    """Compares `outputs` of case `name` with torch; returns {output: {max_abs_err, atol,
    rtol, ok}} and prints one line per output."""
    import torch

    kind = CASES[name][0]
    want = reference(name, inputs)
    report = {}
    for key, ref in want.items():
        tol = TOLERANCES["matmul" if kind.startswith("matmul") else "attention_" + key]
        got = outputs[key].to(ref.device).float()
        assert got.shape == ref.shape, (name, key, got.shape, ref.shape)
        err = (got - ref).abs()
        finite = bool(torch.isfinite(got).all())
        ok = finite and bool((err <= tol["atol"] + tol["rtol"] * ref.abs()).all())
        report[key] = dict(max_abs_err=float(err.max()), atol=tol["atol"], rtol=tol["rtol"],
                           finite=finite, ok=ok)
        print("check %-28s %s: max_abs_err=%.4g (atol %g, rtol %g) %s"
              % (name, key, report[key]["max_abs_err"], tol["atol"], tol["rtol"],
                 "ok" if ok else "FAIL"), flush=True)
    return report


# ---- reading the Autotuner -------------------------------------------------------------------


def _config_dict(config):
    return dict(kwargs=dict(config.kwargs), num_warps=config.num_warps,
                num_stages=config.num_stages, num_ctas=config.num_ctas,
                maxnreg=config.maxnreg)


def _timings(values):
    if not isinstance(values, (list, tuple)):
        values = [values]
    return [float(v) if math.isfinite(float(v)) else None for v in values]


def _tuning(tuner, cache_before, kernel):
    """best_config, configs_timings and the key this launch tuned; the kernel's hash."""
    new_keys = [k for k in tuner.cache if k not in cache_before]
    info = dict(
        key=[str(k) for k in (new_keys[0] if new_keys else ())],
        best_config=_config_dict(tuner.best_config),
        best_config_str=str(tuner.best_config),
        configs_timings={str(c): _timings(t) for c, t in getattr(tuner, "configs_timings", {}).items()},
        bench_time_s=getattr(tuner, "bench_time", None),
    )
    if kernel is not None:
        info["hash"] = getattr(kernel, "hash", None)
        info["kernel_name"] = getattr(kernel, "name", None)
        md = getattr(kernel, "metadata", None)
        if md is not None:
            info["shared"] = int(getattr(md, "shared", 0))
            info["compiled_num_warps"] = int(getattr(md, "num_warps", 0))
            info["compiled_num_stages"] = int(getattr(md, "num_stages", 0))
    return info


# ---- the cases -------------------------------------------------------------------------------


def run_case(name, device="cuda"):
    """Runs case `name`; returns (inputs, outputs, record) with CPU tensors."""
    import torch
    import triton

    from pykernels import attention as at
    from pykernels import matmul as mm

    kind, p = CASES[name]
    inputs = {k: v.to(device) for k, v in make_inputs(name).items()}
    if kind in ("matmul", "matmul_heuristic"):
        tuner = mm.matmul_kernel if kind == "matmul" else mm.matmul_heuristic_kernel
        a, b = inputs["a"], inputs["b"]
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty(M, N, device=device, dtype=a.dtype)
        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)  # noqa: E731
        before = dict(tuner.cache)
        kernel = tuner[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), ACTIVATION=p["activation"])
        torch.cuda.synchronize()
        best = tuner.best_config.kwargs
        launch = dict(kernel=tuner.base_fn.__name__, module="pykernels.matmul",
                      args=dict(M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
                                stride_bk=b.stride(0), stride_bn=b.stride(1),
                                stride_cm=c.stride(0), stride_cn=c.stride(1)),
                      constexprs=dict(ACTIVATION=p["activation"]),
                      grid=[triton.cdiv(M, best["BLOCK_M"]) * triton.cdiv(N, best["BLOCK_N"])])
        if kind == "matmul_heuristic":
            launch["constexprs"]["EVEN_K"] = K % best["BLOCK_K"] == 0
        outputs = {"c": c}
    else:
        tuner = at.attn_fwd_kernel
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        Z, H, N_CTX, D = q.shape
        sm_scale = D ** -0.5
        o = torch.empty_like(q)
        m = torch.empty(Z * H, N_CTX, device=device, dtype=torch.float32)
        grid = lambda META: (triton.cdiv(N_CTX, META["BLOCK_M"]), Z * H)  # noqa: E731
        before = dict(tuner.cache)
        kernel = tuner[grid](q, k, v, sm_scale, m, o, *q.stride(), *k.stride(), *v.stride(),
                             *o.stride(), Z, H, N_CTX, HEAD_DIM=D, CAUSAL=p["causal"])
        torch.cuda.synchronize()
        strides = {}
        for t, names in ((q, ("stride_qz", "stride_qh", "stride_qm", "stride_qk")),
                         (k, ("stride_kz", "stride_kh", "stride_kn", "stride_kk")),
                         (v, ("stride_vz", "stride_vh", "stride_vk", "stride_vn")),
                         (o, ("stride_oz", "stride_oh", "stride_om", "stride_on"))):
            strides.update(zip(names, t.stride(), strict=True))
        launch = dict(kernel="attn_fwd_kernel", module="pykernels.attention",
                      args=dict(sm_scale=sm_scale, Z=Z, H=H, N_CTX=N_CTX, **strides),
                      constexprs=dict(HEAD_DIM=D, CAUSAL=p["causal"]),
                      grid=[triton.cdiv(N_CTX, tuner.best_config.kwargs["BLOCK_M"]), Z * H])
        outputs = {"o": o, "m": m}

    record = dict(kind=kind, params=p, launch=launch, **_tuning(tuner, before, kernel))
    record["check"] = check_outputs(name, inputs, outputs)
    record["ok"] = all(r["ok"] for r in record["check"].values())
    cpu = lambda d: {k2: v2.detach().cpu() for k2, v2 in d.items()}  # noqa: E731
    return cpu(inputs), cpu(outputs), record


def check_tune_kernels(device="cuda"):
    """Runs each te_tune_kernels kernel through Triton's own launch path (real autotuning on
    the GPU) and checks its result; returns {kernel: {ok, best_config}}."""
    import torch
    import triton

    import te_tune_kernels as tk

    g = torch.Generator().manual_seed(0)
    n = 5000
    x = torch.randn(n, generator=g).to(device)
    xi = torch.randint(-50, 50, (n,), generator=g).to(torch.int32).to(device)
    grid = tk.grid_1d(n)
    out = {}

    def record(name, got, want, tuner=None):
        ok = bool(torch.equal(got, want))
        out[name] = dict(ok=ok, best_config=str(tuner.best_config) if tuner is not None else None)
        print("tune  %-34s %s %s" % (name, "ok" if ok else "FAIL", out[name]["best_config"] or ""),
              flush=True)

    y = torch.empty_like(x)
    tk.scale_kernel[(triton.cdiv(n, 256),)](x, y, n, 3.0, BLOCK=256, MODE="add")
    record("scale_kernel", y, x + 3.0)
    tk.heur_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, y, n)
    record("heur_kernel", y, x * 2)
    xh = x.half()
    yh = torch.empty_like(xh)
    tk.heur_dtype_kernel[(triton.cdiv(n, 128),)](xh, yh, n, BLOCK=128)
    record("heur_dtype_kernel fp16", yh, (xh.float() * 2 + 1).half())
    tk.tuned_kernel[grid](x, y, n, "relu")
    record("tuned_kernel ACT=relu", y, torch.relu(x * 2), tk.tuned_kernel)
    tk.tuned_single_kernel[grid](x, y, n)
    record("tuned_single_kernel", y, x + 1, tk.tuned_single_kernel)
    tk.tuned_heur_kernel[grid](x, y, n)
    record("tuned_heur_kernel", y, (x + 1) * 3, tk.tuned_heur_kernel.fn)
    tk.heur_tuned_kernel[grid](x, y, n)
    record("heur_tuned_kernel", y, x * 3, tk.heur_tuned_kernel)
    acc = torch.full((1,), 7, dtype=torch.int32, device=device)
    tk.atomic_accum_kernel[grid](xi, acc, n)
    record("atomic_accum_kernel (reset_to_zero)", acc, xi.sum().reshape(1).to(torch.int32),
           tk.atomic_accum_kernel)
    xc = x.clone()
    tk.inplace_kernel[grid](xc, n)
    record("inplace_kernel (restore_value)", xc, x + 1, tk.inplace_kernel)
    tk.clear_records()
    tk.prehook_kernel[grid](x, y, n)
    record("prehook_kernel", y, x * 2, tk.prehook_kernel)
    out["prehook_kernel"]["config_pre_hook_calls"] = len(tk.CONFIG_PRE_HOOK_CALLS)
    tk.prehook_tuner_kernel[grid](x, y, n)
    record("prehook_tuner_kernel", y, x * 2, tk.prehook_tuner_kernel)
    out["prehook_tuner_kernel"]["tuner_hook_calls"] = len(tk.TUNER_HOOK_CALLS)
    tk.pruned_kernel[grid](x, y, n)
    record("pruned_kernel", y, x - 1, tk.pruned_kernel)
    out["pruned_kernel"]["prune_calls"] = [list(c) for c in tk.PRUNE_CALLS]
    tk.cached_kernel[grid](x, y, n)
    record("cached_kernel", y, x * x, tk.cached_kernel)
    torch.cuda.synchronize()
    return out


def main(outdir):
    import torch
    import triton

    if not torch.cuda.is_available():
        sys.exit("te_tune_reference.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    results = dict(
        triton_version=triton.__version__,
        torch_version=torch.__version__,
        device=torch.cuda.get_device_name(),
        capability=list(torch.cuda.get_device_capability()),
        files={},
        cases={},
    )
    for name in CASES:
        inputs, outputs, record = run_case(name)
        path = os.path.join(outdir, name + ".pt")
        torch.save(dict(inputs, **outputs), path)
        results["files"][name] = dict(path=os.path.basename(path), inputs=sorted(inputs),
                                      outputs=sorted(outputs))
        results["cases"][name] = record
        print("case %-28s best: %s  hash=%s" % (name, record["best_config_str"], record.get("hash")),
              flush=True)
    results["tune_kernels"] = check_tune_kernels()
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(results, f, indent=2, sort_keys=True)
    bad = [n for n, r in results["cases"].items() if not r["ok"]]
    bad += [n for n, r in results["tune_kernels"].items() if not r["ok"]]
    print("wrote %s: %d cases, %s" % (outdir, len(CASES), "all ok" if not bad else "FAILED: %s" % bad))
    return 1 if bad else 0


def check_dir(outdir, device=None):
    """Re-checks the outputs stored in OUTDIR/<case>.pt against torch (on the GPU if any)."""
    import torch

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    bad = []
    for name in CASES:
        path = os.path.join(outdir, name + ".pt")
        if not os.path.exists(path):
            print("missing %s" % path)
            bad.append(name)
            continue
        saved = torch.load(path)
        inputs = {k: saved[k].to(device) for k in make_inputs(name)}
        outputs = {k: v.to(device) for k, v in saved.items() if k not in inputs}
        report = check_outputs(name, inputs, outputs)
        if not all(r["ok"] for r in report.values()):
            bad.append(name)
    return 1 if bad else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--check":
        sys.exit(check_dir(args[1]))
    if len(args) != 1 or args[0].startswith("-"):
        sys.exit(__doc__)
    sys.exit(main(args[0]))
