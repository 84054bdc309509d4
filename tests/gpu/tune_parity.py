"""Autotune parity between C++ (triton_embed) and Python Triton, on the GPU.

    python tune_parity.py --cpp BUILD/tests/tune_parity --out DIR   # CTest's tune_parity
    python tune_parity.py --cpp ... --out DIR --cpu-smoke            # no GPU: the I/O path only

Exits 77 (skipped) without a CUDA GPU, 0 when every check passes, 1 otherwise, and writes
DIR/report.json (every check with its values) beside the files the two sides exchange.

1. Autotuned kernels (pykernels.matmul.matmul_kernel with ACTIVATION "leaky_relu" at 1024^3
   and "" at 1000x600x300; pykernels.attention.attn_fwd_kernel, causal, N_CTX 1024 and 1000).
   Fixed inputs come from tests/kernels/te_tune_reference.py (torch.manual_seed(0) on the CPU)
   and reach C++ as raw row-major files. C++ launches each kernel with triton_embed::launch,
   which tunes the new key with the kernel's own Autotuner, and writes its output, the key,
   the best configuration, every configuration's timings and the compiled kernel's hash.
   GPU timings are noisy, so two tunings may choose differently; the checks are therefore
   about C++'s own tuning:
     - selection: Triton's rule (Autotuner.run's ``builtins.min(timings, key=timings.get)``,
       the same in Triton 3.6 and 3.8; the check fails if the installed Autotuner no longer
       spells it so) applied to C++'s recorded timings gives C++'s best configuration, and
       every configuration was timed;
     - key: C++'s tuning key is the key Autotuner.run builds for the same arguments;
     - launch: Python launches that very configuration (the inner JITFunction with the
       config's meta-parameters and options, the same grid) on the same inputs: the same
       kernel hash, and outputs bitwise equal to C++'s;
     - torch: C++'s outputs match torch within te_tune_reference's tolerances.
2. cache_results round trip (te_tune_kernels.cached_kernel, a fresh TRITON_CACHE_DIR each way):
     - C++ then Python: a C++ process tunes (timings written to Triton's disk cache); a new
       Python process launches the kernel and picks the same configuration with no call of
       the Autotuner's do_bench, holding exactly C++'s timings;
     - Python then C++: a Python process tunes; a new C++ process gets
       TuningResult::from_cache, the same configuration and exactly Python's timings.
"""

import argparse
import ast
import builtins
import inspect
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNELS = os.path.join(ROOT, "tests", "kernels")
for _p in (ROOT, KERNELS):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import te_tune_reference as ref  # noqa: E402

GPU_CASES = ["matmul_1024_leaky_relu", "matmul_1000x600x300", "attn_causal_1024",
             "attn_causal_1000"]
# Small shapes for --cpu-smoke (the interpreter is slow); added to te_tune_reference's table.
SMOKE_CASES = {
    "smoke_matmul_96x80x40": ("matmul", dict(M=96, N=80, K=40, activation="leaky_relu")),
    "smoke_attn_causal_40": ("attention", dict(Z=1, H=2, N_CTX=40, HEAD_DIM=16, causal=True)),
}
CACHED_N = 5000
SELECTION_RULE = "builtins.min(timings, key=timings.get)"


def log(msg):
    print("tune_parity: " + msg, flush=True)


# ---- files exchanged with C++ ------------------------------------------------------------------


def write_case(outdir, name):
    """DIR/NAME.args and DIR/NAME.<input>.bin; returns the CPU inputs."""
    kind, p = ref.CASES[name]
    inputs = ref.make_inputs(name)
    lines = ["kind=" + ("matmul" if kind.startswith("matmul") else "attention")]
    if kind == "matmul":
        lines += ["M=%d" % p["M"], "N=%d" % p["N"], "K=%d" % p["K"], "activation=" + p["activation"]]
    else:
        lines += ["Z=%d" % p["Z"], "H=%d" % p["H"], "N_CTX=%d" % p["N_CTX"],
                  "HEAD_DIM=%d" % p["HEAD_DIM"], "causal=%d" % int(p["causal"]),
                  "sm_scale=" + repr(sm_scale(p))]
    with open(os.path.join(outdir, name + ".args"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for key, t in inputs.items():
        write_bin(os.path.join(outdir, "%s.%s.bin" % (name, key)), t)
    return inputs


def sm_scale(p):
    return p["HEAD_DIM"] ** -0.5  # as te_tune_reference.run_case


def write_bin(path, t):
    t.contiguous().view(-1).view(bits_dtype(t.dtype)).numpy().tofile(path)


def bits_dtype(dtype):
    import torch

    return {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
            torch.float64: torch.int64}[dtype]


def read_output(outdir, desc):
    """A C++ output file as a CPU tensor."""
    import numpy as np
    import torch

    dtype = {"Half": torch.float16, "Float": torch.float32, "BFloat16": torch.bfloat16}[desc["dtype"]]
    raw = np.fromfile(os.path.join(outdir, desc["file"]), dtype=np.uint8)
    return torch.from_numpy(raw).view(dtype).reshape(desc["shape"])


def bitwise(a, b):
    """(equal, number of differing elements) of two tensors, compared bit for bit."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, -1
    diff = a.contiguous().view(bits_dtype(a.dtype)) != b.contiguous().view(bits_dtype(b.dtype))
    n = int(diff.sum())
    return n == 0, n


# ---- one autotuned case ----------------------------------------------------------------------


def tuner_of(kind):
    from pykernels import attention, matmul

    return matmul.matmul_kernel if kind == "matmul" else attention.attn_fwd_kernel


def launch_args(kind, p, inputs, outputs):
    """The positional arguments and constexpr keywords of the case's launch (as
    te_tune_reference.run_case passes them), and its grid for a config's kwargs."""
    import triton

    if kind == "matmul":
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        M, K = a.shape
        N = b.shape[1]
        args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                c.stride(0), c.stride(1))
        return args, dict(ACTIVATION=p["activation"]), \
            lambda kw: (triton.cdiv(M, kw["BLOCK_M"]) * triton.cdiv(N, kw["BLOCK_N"]),)
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    o, m = outputs["o"], outputs["m"]
    Z, H, N_CTX, D = q.shape
    args = (q, k, v, sm_scale(p), m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), Z, H,
            N_CTX)
    return args, dict(HEAD_DIM=D, CAUSAL=p["causal"]), \
        lambda kw: (triton.cdiv(N_CTX, kw["BLOCK_M"]), Z * H)


def new_outputs(kind, p, device):
    import torch

    if kind == "matmul":
        return {"c": torch.full((p["M"], p["N"]), float("nan"), dtype=torch.float16, device=device)}
    shape = (p["Z"], p["H"], p["N_CTX"], p["HEAD_DIM"])
    return {"o": torch.full(shape, float("nan"), dtype=torch.float16, device=device),
            "m": torch.full((p["Z"] * p["H"], p["N_CTX"]), float("nan"), dtype=torch.float32,
                            device=device)}


def python_key(tuner, args, kwargs):
    """The key Autotuner.run builds for these arguments (its own code, restated)."""
    nargs = dict(zip(tuner.arg_names, args, strict=False))
    all_args = {**nargs, **kwargs}
    _args = {k: v for (k, v) in all_args.items() if k in tuner.arg_names}
    key = [_args[k] for k in tuner.keys if k in _args]
    key += [str(v.dtype) for v in _args.values() if hasattr(v, "dtype")]
    return str(tuple(key))


def selection_rule_in_source():
    """True when the installed Autotuner picks its config with SELECTION_RULE."""
    from triton.runtime.autotuner import Autotuner

    src = inspect.getsource(Autotuner.run) + inspect.getsource(Autotuner.check_disk_cache)
    return SELECTION_RULE in src


def check_case(outdir, name, cpu_inputs, smoke):
    import torch

    kind, p = ref.CASES[name]
    device = "cpu" if smoke else "cuda"
    with open(os.path.join(outdir, name + ".cpp.json")) as f:
        cpp = json.load(f)
    cpp_out = {k: read_output(outdir, d) for k, d in cpp["outputs"].items()}
    inputs = {k: v.to(device) for k, v in cpu_inputs.items()}
    rec = {"cpp": {k: cpp.get(k) for k in ("key", "best", "from_cache", "seconds", "hash",
                                           "kernel_name", "grid", "tuned")}}
    checks = {}
    # C++'s outputs against torch.
    report = ref.check_outputs(name, inputs, {k: v.to(device) for k, v in cpp_out.items()})
    checks["cpp_vs_torch"] = all(r["ok"] for r in report.values())
    rec["cpp_vs_torch"] = report
    tuner = tuner_of(kind)
    py_outputs = new_outputs(kind, p, device)
    args, constexprs, grid_of = launch_args(kind, p, inputs, py_outputs)
    # The launch arguments C++ passed are Python's.
    names = tuner.arg_names
    py_scalars = {n: a for n, a in zip(names, args, strict=False) if not hasattr(a, "dtype")}
    checks["same_arguments"] = (py_scalars == cpp["args"] and constexprs == cpp["constexprs"])
    if not checks["same_arguments"]:
        rec["arguments"] = dict(python=py_scalars, cpp=cpp["args"], python_constexprs=constexprs,
                                cpp_constexprs=cpp["constexprs"])
    if smoke:
        rec["checks"] = checks
        return rec

    # Selection: Triton's rule on C++'s timings gives C++'s best config.
    by_str = {str(c): c for c in tuner.configs}
    timings = {}
    for config_str, ms in cpp["timings"]:
        timings[by_str[config_str]] = [float(x) for x in ms]
    checks["selection_rule_in_triton_source"] = selection_rule_in_source()
    # No pruning on these kernels: every config, in order, as Autotuner.run benchmarks them.
    unpruned = tuner.early_config_prune is None and tuner.perf_model is None
    checks["every_config_timed"] = (not unpruned) or [str(c) for c in timings] == list(by_str)
    chosen = builtins.min(timings, key=timings.get) if timings else None
    checks["selection"] = chosen is not None and str(chosen) == cpp["best"]["str"]
    rec["rule_choice"] = str(chosen)
    checks["not_from_cache"] = cpp["from_cache"] is False
    # The key.
    rec["python_key"] = python_key(tuner, args, constexprs)
    checks["key"] = rec["python_key"] == cpp["key"]

    # Python launches C++'s config: the inner JITFunction with its meta-parameters and options.
    config = by_str[cpp["best"]["str"]]
    cpp_kwargs = {k: ast.literal_eval(v) for k, v in cpp["best"]["kwargs"].items()}
    checks["best_kwargs"] = cpp_kwargs == dict(config.kwargs) and all(
        cpp["best"][k] == (getattr(config, k) or 0)
        for k in ("num_warps", "num_stages", "num_ctas", "maxnreg"))
    grid = grid_of(config.kwargs)
    checks["grid"] = list(grid) == cpp["grid"]
    kernel = tuner.fn[grid](*args, **constexprs, **config.all_kwargs())
    torch.cuda.synchronize()
    rec["python_hash"] = kernel.hash
    checks["hash"] = kernel.hash == cpp["hash"]
    rec["bitwise"] = {}
    for key, out in py_outputs.items():
        same, ndiff = bitwise(out.cpu(), cpp_out[key])
        rec["bitwise"][key] = dict(equal=same, differing_elements=ndiff)
        checks["bitwise_" + key] = same
    report = ref.check_outputs(name, inputs, py_outputs)
    checks["python_vs_torch"] = all(r["ok"] for r in report.values())
    rec["checks"] = checks
    return rec


# ---- the cache_results round trip ------------------------------------------------------------


def cache_python(outdir, tag, n):
    """A fresh Python process's launch of te_tune_kernels.cached_kernel: writes
    DIR/cached_TAG.py.json with the choice, the timings it holds and its do_bench calls."""
    import torch
    import triton

    import te_tune_kernels as tk

    tuner = tk.cached_kernel
    calls = []
    bench = tuner.do_bench  # Triton's benchmarker (a cached_property: shadowed below)

    def counting_bench(kernel_call, quantiles=None):
        calls.append(1)
        return bench(kernel_call, quantiles=quantiles)

    tuner.do_bench = counting_bench
    torch.manual_seed(0)
    x = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    tuner[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, out, n)
    torch.cuda.synchronize()
    timings = getattr(tuner, "configs_timings", None) or {}
    result = dict(
        tag=tag, n=n, do_bench_calls=len(calls), best=str(tuner.best_config),
        timings=[[str(c), [float(v) for v in (t if isinstance(t, (list, tuple)) else [t])]]
                 for c, t in timings.items()],
        bench_time_set=hasattr(tuner, "bench_time"),
        output_ok=bool(torch.equal(out, x * x)),
        key=python_key(tuner, (x, out, n), {}),
        cache_dir=os.environ.get("TRITON_CACHE_DIR"),
    )
    with open(os.path.join(outdir, "cached_%s.py.json" % tag), "w") as f:
        json.dump(result, f, indent=2)
    log("python cached %s: %s (do_bench calls %d)" % (tag, result["best"], len(calls)))
    return 0


def run(cmd, env, timeout):
    log("$ " + " ".join(cmd))
    r = subprocess.run(cmd, env=env, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s exited with %d" % (cmd[0], r.returncode))


def same_timings(a, b):
    return [[s, list(ms)] for s, ms in a] == [[s, list(ms)] for s, ms in b]


def cache_roundtrip(outdir, cpp_exe, env):
    out = {}
    py = [sys.executable, os.path.abspath(__file__), "cache-python", outdir]
    cpp = [cpp_exe, "cached", outdir]
    for first in ("cpp_first", "python_first"):
        cache = os.path.join(outdir, "triton_cache_" + first)
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)
        e = dict(env, TRITON_CACHE_DIR=cache)
        steps = [cpp, py] if first == "cpp_first" else [py, cpp]
        for cmd in steps:
            run(cmd + [first, str(CACHED_N)], e, timeout=600)
        with open(os.path.join(outdir, "cached_%s.cpp.json" % first)) as f:
            c = json.load(f)
        with open(os.path.join(outdir, "cached_%s.py.json" % first)) as f:
            p = json.load(f)
        autotune_files = [os.path.join(d, x) for d, _, fs in os.walk(cache) for x in fs
                          if x.endswith(".autotune.json")]
        checks = dict(outputs=c["output_ok"] and p["output_ok"], same_best=c["best"]["str"] == p["best"],
                      same_key=c["key"] == p["key"], one_disk_entry=len(autotune_files) == 1)
        if first == "cpp_first":
            checks.update(cpp_benchmarked=not c["from_cache"] and len(c["timings"]) >= 2,
                          python_did_not_benchmark=p["do_bench_calls"] == 0,
                          python_holds_cpp_timings=same_timings(p["timings"], c["timings"]))
        else:
            checks.update(python_benchmarked=p["do_bench_calls"] >= 2,
                          cpp_from_cache=c["from_cache"] is True,
                          cpp_holds_python_timings=same_timings(c["timings"], p["timings"]))
        out[first] = dict(cpp=c, python=p, autotune_files=autotune_files, checks=checks)
        log("cache round trip %s: %s" % (first, "ok" if all(checks.values()) else
                                          "FAILED %s" % [k for k, v in checks.items() if not v]))
    return out


# ---- main ----------------------------------------------------------------------------------------


def versions():
    import torch
    import triton

    v = dict(triton=triton.__version__, torch=torch.__version__, python=sys.version.split()[0])
    if torch.cuda.is_available():
        v.update(device=torch.cuda.get_device_name(), capability=list(torch.cuda.get_device_capability()))
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpp", required=True, help="the tune_parity executable")
    ap.add_argument("--out", default=os.environ.get("TE_TUNE_PARITY_OUT"),
                    help="output directory (default: $TE_TUNE_PARITY_OUT)")
    ap.add_argument("--cases", help="comma-separated subset of " + ",".join(GPU_CASES))
    ap.add_argument("--no-cache-roundtrip", action="store_true")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="small cases through Triton's interpreter, C++ outputs checked "
                         "against torch only (no tuning, no GPU)")
    a = ap.parse_args()
    if not a.out:
        ap.error("--out or TE_TUNE_PARITY_OUT is required")
    import torch

    if not a.cpu_smoke and not torch.cuda.is_available():
        log("no CUDA GPU: skipped")
        return 77
    outdir = os.path.abspath(a.out)
    os.makedirs(outdir, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["TRITON_EMBED_PYTHONPATH"] = os.pathsep.join(
        x for x in (KERNELS, env.get("TRITON_EMBED_PYTHONPATH")) if x)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (ROOT, KERNELS, env.get("PYTHONPATH")) if x)

    if a.cpu_smoke:
        ref.CASES.update(SMOKE_CASES)
        names = list(SMOKE_CASES)
    else:
        names = a.cases.split(",") if a.cases else GPU_CASES
    report = dict(versions=versions(), cases={}, cpu_smoke=a.cpu_smoke)
    inputs = {name: write_case(outdir, name) for name in names}
    run([a.cpp, "cases", outdir, "cpu" if a.cpu_smoke else "cuda"] + names, env, timeout=1200)
    for name in names:
        rec = check_case(outdir, name, inputs[name], a.cpu_smoke)
        report["cases"][name] = rec
        bad = [k for k, v in rec["checks"].items() if not v]
        log("%-24s best %s: %s" % (name, (rec["cpp"].get("best") or {}).get("str"),
                                   "ok" if not bad else "FAILED %s" % bad))
    if not a.cpu_smoke and not a.no_cache_roundtrip:
        report["cache_roundtrip"] = cache_roundtrip(outdir, a.cpp, env)
    ok = all(all(r["checks"].values()) for r in report["cases"].values()) and all(
        all(r["checks"].values()) for r in report.get("cache_roundtrip", {}).values())
    report["ok"] = ok
    with open(os.path.join(outdir, "report.json"), "w") as f:
        json.dump(report, f, indent=2, default=str)
    log("wrote %s: %s" % (os.path.join(outdir, "report.json"), "all ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "cache-python":
        sys.exit(cache_python(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    sys.exit(main())
