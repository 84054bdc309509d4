"""Tuning in parallel (issue 39): how long tuning, `triton-embed-bundle tune` and `build` take
with the configs (calls, targets) compiled on 1 thread and on every CPU, each in a new process
with an empty Triton cache, and how compiling scales with threads and with processes.

  python3 bench/tuning_bench.py --build BUILD --out DIR [--size 4096]

Rows (each against the serial path on the same machine, empty caches on both sides):
  - the first launch of tuning_kernels.tma_matmul_48 (48 configs) from C++ (launch_bench
    tune-matmul) against Triton's Autotuner in Python (kernel[grid](...)) on the same kernel,
    with the configs compiled on worker processes (the default), on as many threads, and on one;
    then both again with the program prepared before the launch (Python: torch and Triton's
    benchmark imported, Triton's driver started; C++: prepare_tuning(true), which does that);
  - `triton-embed-bundle tune` of row_softmax at 17 row lengths (17 tuning keys x 6 configs);
  - `triton-embed-bundle build` of 100 calls of row_normalize for 3 targets;
  - (--rows scaling) the 48 configs compiled by threads and by processes of Python's own pools.
Writes DIR/tuning.json and DIR/tuning.md."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

TUNE_NS = [512 * i for i in range(1, 18)]  # 17 row lengths: 17 tuning keys
BUILD_NS = [64 * i for i in range(1, 101)]  # 100 row lengths: 100 kernels per target
BUILD_TARGETS = ["cuda:80", "cuda:90", "cuda:100"]


VERBOSE = False  # --verbose: progress printed, and each run's stderr kept in tuning.json


def fresh_env(workers=None, processes=True):
    env = dict(os.environ)
    if VERBOSE:
        env["TRITON_EMBED_PRINT_AUTOTUNING"] = "1"
    env["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="tuning_bench_cache_")
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TRITON_EMBED_COMPILE_WORKERS", None)
    env.pop("TRITON_EMBED_COMPILE_PROCESSES", None)
    if workers is not None:
        env["TRITON_EMBED_COMPILE_WORKERS"] = str(workers)
    if not processes:
        env["TRITON_EMBED_COMPILE_PROCESSES"] = "0"
    return env


def timed(cmd, env):
    t = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.time() - t
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-4000:],
                                                      p.stderr[-4000:]))
    return wall, p.stdout, p.stderr


def last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in:\n" + text[-2000:])


# ---- the children (run in their own processes) ------------------------------------------------

def _matmul_setup(size):
    import torch
    import tuning_kernels as tk
    from triton.tools.tensor_descriptor import TensorDescriptor

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    descs = [TensorDescriptor.from_tensor(t, [64, 64]) for t in (a, b, c)]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return tk, descs, sms, (a, b, c)


def child_python_autotune(size, prepared=False):
    """Triton's Autotuner in Python: the first launch of tma_matmul_48. `prepared`: Triton's
    benchmark imported and its driver started before it, as prepare_tuning(true) does in C++."""
    import torch
    import triton

    tk, descs, sms, keep = _matmul_setup(size)
    if prepared:
        import triton.testing  # noqa: F401
        from triton.runtime import driver

        driver.active.get_current_device()
    kern = tk.tma_matmul_48
    grid = lambda m: (min(sms, triton.cdiv(size, m["BLOCK_M"]) * triton.cdiv(size, m["BLOCK_N"])),)  # noqa: E731
    t = time.time()
    kern[grid](*descs, size, size, size, sms)
    torch.cuda.synchronize()
    timed_configs = len(getattr(kern, "configs_timings", {}) or {})
    return {"tune_s": time.time() - t, "best": str(kern.best_config), "configs_timed": timed_configs,
            "sms": sms}


def _matmul_signature(cfg, sms):
    bn, bk, sub = cfg.kwargs["BLOCK_N"], cfg.kwargs["BLOCK_K"], cfg.kwargs["SUBTILE"]
    sig = {"a_desc": "tensordesc<fp16[128,%d]>" % bk, "b_desc": "tensordesc<fp16[%d,%d]>" % (bn, bk),
           "c_desc": "tensordesc<fp16[128,%d]>" % (bn // 2 if sub else bn), "M": "i32", "N": "i32",
           "K": "i32", "NUM_SMS": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
           "BLOCK_K": "constexpr", "SUBTILE": "constexpr"}
    names = list(sig)
    consts = {(names.index("NUM_SMS"),): sms}
    for k, v in cfg.kwargs.items():
        consts[(names.index(k),)] = v
    return sig, consts


def _compile_config(i, sms=132):
    """One config of tma_matmul_48 through triton.compile for cuda:90 (no GPU needed)."""
    import triton
    import tuning_kernels as tk
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    cfg = tk.MATMUL_CONFIGS[i]
    sig, consts = _matmul_signature(cfg, sms)
    triton.compile(ASTSource(tk.tma_matmul_48.fn, sig, consts), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
    return i


def child_compile(how, n):
    """The 48 configs compiled by n threads of this process or n processes (each starts
    Python and imports Triton and the kernels), from the moment the pool is made."""
    import concurrent.futures as cf
    import multiprocessing

    import tuning_kernels as tk

    t = time.time()
    if how == "threads":
        with cf.ThreadPoolExecutor(n) as ex:
            list(ex.map(_compile_config, range(len(tk.MATMUL_CONFIGS))))
    else:
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(n, mp_context=ctx) as ex:
            list(ex.map(_compile_config, range(len(tk.MATMUL_CONFIGS))))
    return {"compile_s": time.time() - t}


# ---- the rows ---------------------------------------------------------------------------------

def run_child(args, env):
    wall, out, _ = timed([sys.executable, os.path.abspath(__file__), "--child"] + args, env)
    r = last_json(out)
    r["process_s"] = wall
    return r


def calls_files(tmp):
    tune = os.path.join(tmp, "tune17.calls")
    with open(tune, "w") as f:
        f.write("#grid tuning_kernels:row_softmax n_rows\n")
        f.write("tuning_kernels:row_softmax *fp16 *fp16 1024 N=%s\n" % ",".join(str(n) for n in TUNE_NS))
    build = os.path.join(tmp, "build100.calls")
    with open(build, "w") as f:
        for n in BUILD_NS:
            f.write("tuning_kernels:row_normalize *fp16 *fp16 1024 %d 256\n" % n)
    return tune, build


def bundle_listing(tool, path):
    out = subprocess.run([tool, "list", path], capture_output=True, text=True, check=True).stdout
    # Entries and records without the byte counts and hashes that a compile may vary.
    return [line.split(", cubin")[0].split(": hash")[0] + line.split(", key")[-1].split(", cubin")[0]
            for line in out.splitlines() if line.strip().startswith(("entry #", "cuda:"))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs="*")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--out")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rows", default="matmul,tune,build")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    global VERBOSE
    VERBOSE = a.verbose
    if a.child is not None:
        kind = a.child[0]
        if kind == "python_autotune":
            r = child_python_autotune(int(a.child[1]), a.child[2:] == ["prepared"])
        else:
            r = child_compile(kind, int(a.child[1]))
        print(json.dumps(r), flush=True)
        return

    os.makedirs(a.out, exist_ok=True)
    cpus = len(os.sched_getaffinity(0))
    res = {"cpus": cpus, "size": a.size}
    rows = a.rows.split(",")
    bench = os.path.join(a.build, "bench", "launch_bench")
    tool = os.path.join(a.build, "triton-embed-bundle")
    tmp = tempfile.mkdtemp(prefix="tuning_bench_")

    if "matmul" in rows:
        py = run_child(["python_autotune", str(a.size)], fresh_env())
        print("python autotune", py, flush=True)
        cpp = {}
        # Worker processes (the default), the same count of threads, one worker (serial); then
        # worker processes again with both programs prepared before the first launch: Python's
        # has imported torch (as above) and Triton's benchmark, and started Triton's driver; the
        # C++ one has called prepare_tuning(true), which does the same in its interpreter.
        py_prepared = run_child(["python_autotune", str(a.size), "prepared"], fresh_env())
        print("python autotune, prepared", py_prepared, flush=True)
        runs = (("processes", cpus, True, []), ("threads", cpus, False, []), ("serial", 1, True, []),
                ("prepared", cpus, True, ["prepared"]))
        for name, workers, processes, extra in runs:
            wall, out, err = timed([bench, "tune-matmul", str(a.size), str(py["sms"])] + extra,
                                   fresh_env(workers, processes))
            cpp[name] = last_json(out)
            cpp[name]["process_s"] = wall
            if VERBOSE:
                cpp[name]["stderr"] = err[-6000:]
            print("C++ tune, %s" % name, {k: v for k, v in cpp[name].items() if k != "stderr"},
                  flush=True)
        res["matmul"] = {"python": py, "cpp_parallel": cpp["processes"], "cpp_threads": cpp["threads"],
                         "cpp_serial": cpp["serial"], "python_prepared": py_prepared,
                         "cpp_prepared": cpp["prepared"],
                         "prepared_ratio_vs_python": py_prepared["tune_s"] / cpp["prepared"]["tune_s"],
                         "ratio_vs_python": py["tune_s"] / cpp["processes"]["tune_s"],
                         "ratio_vs_serial": cpp["serial"]["tune_s"] / cpp["processes"]["tune_s"],
                         "threads_ratio_vs_python": py["tune_s"] / cpp["threads"]["tune_s"]}

    tune_calls, build_calls = calls_files(tmp)
    for row, calls, extra in (("tune", tune_calls, []),
                              ("build", build_calls, sum((["--target", t] for t in BUILD_TARGETS), []))):
        if row not in rows:
            continue
        r = {}
        for workers in (cpus, 1):
            out_path = os.path.join(tmp, "%s_%d.teb" % (row, workers))
            wall, out, err = timed([tool, row, "-o", out_path, "--python-path", HERE] + extra + [calls],
                                   fresh_env(workers))
            r[workers] = {"seconds": wall, "summary": out.strip().splitlines()[-1],
                          "tuned": [line for line in out.splitlines() if " key " in line],
                          "entries": bundle_listing(tool, out_path)}
            if VERBOSE:
                res.setdefault("stderr", {})["%s_%d" % (row, workers)] = err[-6000:]
            print(row, workers, "workers:", round(wall, 2), "s;", r[workers]["summary"], flush=True)
        res[row] = {"parallel_s": r[cpus]["seconds"], "serial_s": r[1]["seconds"],
                    "ratio": r[1]["seconds"] / r[cpus]["seconds"],
                    "same_entries": r[cpus]["entries"] == r[1]["entries"],
                    "same_choices": r[cpus]["tuned"] == r[1]["tuned"],
                    "summary": r[cpus]["summary"]}

    if "scaling" in rows:
        res["scaling"] = {}
        for how, counts in (("threads", {1, 4, 8, cpus}), ("processes", {4, cpus})):
            for n in sorted(counts):
                r = run_child([how, str(n)], fresh_env())
                res["scaling"]["%s_%d" % (how, n)] = r["compile_s"]
                print("compile 48 configs:", how, n, round(r["compile_s"], 2), "s", flush=True)

    with open(os.path.join(a.out, "tuning.json"), "w") as f:
        json.dump(res, f, indent=1)
    lines = ["# Tuning in parallel (%d CPUs)" % cpus, ""]
    if "matmul" in res:
        m = res["matmul"]
        lines += ["| tma_matmul_48 first launch (48 configs) | seconds |", "| --- | ---: |",
                  "| Triton's Autotuner in Python | %.2f |" % m["python"]["tune_s"],
                  "| triton_embed from C++, 1 compile worker | %.2f |" % m["cpp_serial"]["tune_s"],
                  "| triton_embed from C++, %d compile threads (compiling %.2f s, then benchmarking) | %.2f |"
                  % (cpus, m["cpp_threads"]["compile_s"], m["cpp_threads"]["tune_s"]),
                  "| triton_embed from C++, %d compile worker processes (compiling %.2f s, while "
                  "benchmarking) | %.2f |"
                  % (cpus, m["cpp_parallel"]["compile_s"], m["cpp_parallel"]["tune_s"]),
                  "| ratio vs Python / vs 1 worker (processes) | %.2fx / %.2fx |"
                  % (m["ratio_vs_python"], m["ratio_vs_serial"]),
                  "| ratio vs Python (threads) | %.2fx |" % m["threads_ratio_vs_python"],
                  "| both programs prepared before the launch: Triton's Autotuner in Python | %.2f |"
                  % m["python_prepared"]["tune_s"],
                  "| both programs prepared: triton_embed from C++ (prepare_tuning(true)), %d worker "
                  "processes | %.2f |" % (cpus, m["cpp_prepared"]["tune_s"]),
                  "| ratio vs Python, both prepared | %.2fx |" % m["prepared_ratio_vs_python"], ""]
    for row in ("tune", "build"):
        if row in res:
            r = res[row]
            lines += ["`%s`: %.2f s on 1 worker, %.2f s on %d: %.2fx; same entries: %s; same choices: %s (%s)"
                      % (row, r["serial_s"], r["parallel_s"], cpus, r["ratio"], r["same_entries"],
                         r["same_choices"], r["summary"]), ""]
    if "scaling" in res:
        lines += ["| compiling the 48 configs | seconds |", "| --- | ---: |"]
        lines += ["| %s | %.2f |" % (k.replace("_", ", "), v) for k, v in res["scaling"].items()]
    with open(os.path.join(a.out, "tuning.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
