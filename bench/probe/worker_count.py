"""How the compile worker count changes a tuning (issue 39): the first launch of
tuning_kernels.tma_matmul_48 from C++ and `triton-embed-bundle tune` of the 17-key value list,
each in a new process with an empty Triton cache, on several worker counts; and how long
`import torch` takes in a new Python process while N busy processes at the lowest priority run
beside it (what the main process's import meets while the workers compile).

  python3 bench/probe/worker_count.py --build BUILD --out DIR [--workers 16,12,8] [--reps 2]"""

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

SPIN = "import os, time\nos.nice(19)\nt = time.time()\nwhile time.time() - t < 60:\n    pass\n"


def import_torch_s(spinners):
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(spinners)]
    try:
        time.sleep(0.5 if spinners else 0)
        t = time.time()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        return time.time() - t
    finally:
        for p in procs:
            p.kill()
            p.wait()


def timed_lines(cmd, env):
    """Runs cmd; returns its wall time and its stdout and stderr lines, each line prefixed with the
    seconds since the start at which it arrived."""
    import threading

    t = time.time()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []

    def read(stream, tag):
        for line in stream:
            lines.append("%7.2f %s %s" % (time.time() - t, tag, line.rstrip()))

    readers = [threading.Thread(target=read, args=(p.stdout, "out")),
               threading.Thread(target=read, args=(p.stderr, "err"))]
    for r in readers:
        r.start()
    rc = p.wait()
    for r in readers:
        r.join()
    return time.time() - t, rc, sorted(lines)


DOBENCH = """
import time
t = time.time()
import torch
x = torch.zeros(1 << 20, device="cuda")
t1 = time.time()
import triton
import triton.testing
from triton.runtime import driver
driver.active.get_current_device()
t2 = time.time()
bench = driver.active.get_benchmarker()
for i in range(3):
    s = time.time()
    bench(lambda: x.add_(1), quantiles=(0.5, 0.2, 0.8), warmup=25, rep=100)
    print("do_bench call", i, round(time.time() - s, 3))
print("torch+cuda", round(t1 - t, 3), "triton+driver", round(t2 - t1, 3))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", default="16,12,8")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rows", default="import,python,matmul,tune,serial")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cpus = len(os.sched_getaffinity(0))
    counts = [int(w) for w in a.workers.split(",")]
    rows = a.rows.split(",")
    res = {"cpus": cpus}
    if "import" in rows:
        res["import_torch"] = {}
        for n in [0, cpus // 2, cpus, 0, cpus // 2, cpus]:
            res["import_torch"].setdefault(str(n), []).append(import_torch_s(n))
        print("import torch beside N spinners:", res["import_torch"], flush=True)
    bench = os.path.join(a.build, "bench", "launch_bench")
    tool = os.path.join(a.build, "triton-embed-bundle")
    if "python" in rows:
        res["python"] = tb.run_child(["python_autotune", "4096"], tb.fresh_env())
        print("python autotune", res["python"], flush=True)
    if "matmul" in rows:
        res["matmul"] = {}
        for rep in range(a.reps):
            for w in counts:
                env = tb.fresh_env(w)
                env["TRITON_EMBED_PRINT_AUTOTUNING"] = "1"
                wall, out, err = tb.timed([bench, "tune-matmul", "4096", "132"], env)
                r = tb.last_json(out)
                r["process_s"] = wall
                res["matmul"].setdefault(str(w), []).append(r)
                print("matmul", w, "workers:", r, flush=True)
                if rep == 0:
                    with open(os.path.join(a.out, "matmul_%d.err" % w), "w") as f:
                        f.write(err)
        # One run with Python's import times: what the import costs with the workers beside it.
        for w in (counts[0], counts[-1]):
            env = tb.fresh_env(w)
            env["PYTHONPROFILEIMPORTTIME"] = "1"
            wall, out, err = tb.timed([bench, "tune-matmul", "4096", "132"], env)
            with open(os.path.join(a.out, "importtime_%d.err" % w), "w") as f:
                f.write(err)
            print("importtime run", w, tb.last_json(out), flush=True)
    if "tune" in rows:
        tmp = tempfile.mkdtemp(prefix="worker_count_")
        tune_calls, _ = tb.calls_files(tmp)
        res["tune"] = {}
        for w in counts + ([1] if "serial" in rows else []):
            env = tb.fresh_env(w)
            env["TRITON_EMBED_PRINT_AUTOTUNING"] = "1"
            wall, out, err = tb.timed([tool, "tune", "-o", os.path.join(tmp, "t%d.teb" % w),
                                       "--python-path", BENCH, tune_calls], env)
            res["tune"][str(w)] = wall
            with open(os.path.join(a.out, "tune_%d.err" % w), "w") as f:
                f.write(out + "\n----\n" + err)
            print("tune", w, "workers:", round(wall, 2), flush=True)
    if "dobench" in rows:
        env = tb.fresh_env()
        p = subprocess.run([sys.executable, "-c", DOBENCH], env=env, capture_output=True, text=True)
        res["dobench"] = p.stdout + p.stderr[-2000:]
        print(res["dobench"], flush=True)
    if "timeline" in rows:
        tmp = tempfile.mkdtemp(prefix="worker_count_")
        tune_calls, _ = tb.calls_files(tmp)
        env = tb.fresh_env(counts[0])
        env["TRITON_EMBED_PRINT_AUTOTUNING"] = "1"
        wall, rc, lines = timed_lines([tool, "tune", "-o", os.path.join(tmp, "t.teb"), "--python-path",
                                       BENCH, tune_calls], env)
        res["timeline_s"] = wall
        with open(os.path.join(a.out, "timeline.txt"), "w") as f:
            f.write("rc %d wall %.2f\n" % (rc, wall) + "\n".join(lines) + "\n")
        print("tune timeline", counts[0], "workers:", round(wall, 2), "rc", rc, flush=True)
    with open(os.path.join(a.out, "worker_count.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
