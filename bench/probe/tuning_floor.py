"""Where the time of a tuning goes (issue 39): each row of bench/tuning_bench.py run twice in new
processes, first with an empty Triton cache, then again with the cache the first run filled (the
second run compiles nothing: what is left is the benchmark, the imports and the start-up), and
the imports and Triton's driver start-up timed on their own.

  python3 bench/probe/tuning_floor.py --build BUILD --out DIR"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
import tuning_bench as tb  # noqa: E402


def env_with_cache(cache, workers=None):
    env = tb.fresh_env(workers)
    env["TRITON_CACHE_DIR"] = cache
    env["TRITON_EMBED_PRINT_AUTOTUNING"] = "1"
    return env


def timed(cmd, env):
    t = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return time.time() - t, p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    res = {"cpus": len(os.sched_getaffinity(0))}
    py = sys.executable
    snippets = {
        "import_triton": "import triton",
        "import_torch": "import torch",
        "import_torch_then_triton": "import torch, triton",
        "driver_active_empty_cache": "import torch, triton, time; t=time.time(); "
        "triton.runtime.driver.active.get_current_device(); print('T', time.time()-t)",
    }
    for name, code in snippets.items():
        cache = tempfile.mkdtemp(prefix="floor_")
        env = env_with_cache(cache)
        w, rc, out, err = timed([py, "-c", code], env)
        inner = [float(x.split()[1]) for x in out.splitlines() if x.startswith("T ")]
        res[name] = {"process_s": w, "rc": rc, "inner_s": inner[0] if inner else None}
        print(name, res[name], flush=True)

    bench = os.path.join(a.build, "bench", "launch_bench")
    tool = os.path.join(a.build, "triton-embed-bundle")
    tmp = tempfile.mkdtemp(prefix="floor_calls_")
    tune_calls, _ = tb.calls_files(tmp)
    rows = {
        "python_matmul": [py, os.path.join(BENCH, "tuning_bench.py"), "--child", "python_autotune",
                          "4096"],
        "cpp_matmul": [bench, "tune-matmul", "4096", "132"],
        "tune17": [tool, "tune", "-o", os.path.join(tmp, "t.teb"), "--python-path", BENCH,
                   tune_calls],
    }
    for name, cmd in rows.items():
        cache = tempfile.mkdtemp(prefix="floor_")
        for phase in ("cold", "warm"):
            w, rc, out, err = timed(cmd, env_with_cache(cache))
            r = {"process_s": w, "rc": rc}
            try:
                r.update(tb.last_json(out))
            except Exception:  # noqa: BLE001
                pass
            r["stderr_tail"] = err[-3000:]
            res["%s_%s" % (name, phase)] = r
            print(name, phase, {k: v for k, v in r.items() if k != "stderr_tail"}, flush=True)
            print(err[-1500:], flush=True)
    with open(os.path.join(a.out, "floor.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
