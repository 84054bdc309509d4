"""Runs the launch-overhead benchmark on the GPU machine and writes the report.

    python3 bench/run.py --build build --out bench/results/<date>-<gpu>

Writes results.json (every figure, the versions and the command), results.md (the table and
the targets) and results.png (a chart). Ratios are taken from one run: the C++ figures come
from one process (launch_bench gpu), the Python ones from another (python_bench.py launch).
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_json(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def versions():
    import torch
    import triton

    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    return {
        "gpu": torch.cuda.get_device_name(0),
        "driver": driver,
        "cuda_runtime": torch.version.cuda,
        "triton": triton.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
    }


def first_launches(bench, env):
    """Cold (empty Triton cache) and warm-disk-cache first launches, C++ and Python."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        e = dict(env, TRITON_CACHE_DIR=cache)
        out["cpp_cold"] = run_json([bench, "first-launch"], e)
        out["cpp_disk_hit"] = run_json([bench, "first-launch"], e)
    with tempfile.TemporaryDirectory() as cache:
        e = dict(env, TRITON_CACHE_DIR=cache)
        py = [sys.executable, os.path.join(HERE, "python_bench.py"), "first-launch"]
        out["python_cold"] = run_json(py, e)
        out["python_disk_hit"] = run_json(py, e)
    return out


def targets(r):
    """The issue's targets, each with its measured value and verdict."""
    rows = []

    def add(name, value, limit, ok):
        rows.append({"target": name, "value": value, "limit": limit, "met": bool(ok)})

    raw = r["raw_us"]
    add("raw-pointer launch <= 1.10x raw cuLaunchKernelEx", r["ours_pointers_us"] / raw, 1.10,
        r["ours_pointers_us"] / raw <= 1.10)
    add("at::Tensor launch <= 1.25x raw", r["ours_tensors_us"] / raw, 1.25,
        r["ours_tensors_us"] / raw <= 1.25)
    add(">= 5x faster than Python kernel[grid]", r["python_kernel_grid_us"] / r["ours_pointers_us"],
        5.0, r["python_kernel_grid_us"] / r["ours_pointers_us"] >= 5.0)
    add("C++ op: triton_embed::ops::add <= at::add",
        r["op_triton_embed_add_us"] / r["op_at_add_us"], 1.0,
        r["op_triton_embed_add_us"] <= r["op_at_add_us"])
    add("Python op: torch.ops.triton_embed.add <= torch.ops.aten.add",
        r["py_op_triton_embed_add_us"] / r["py_op_aten_add_us"], 1.0,
        r["py_op_triton_embed_add_us"] <= r["py_op_aten_add_us"])
    ratio8 = r["threads8_ours_launches_per_s"] / r["threads8_raw_launches_per_s"]
    add("8 threads: aggregate >= 0.9x raw", ratio8, 0.9, ratio8 >= 0.9)
    return rows


def markdown(res):
    r, v = res["results"], res["versions"]
    lines = [
        "# Launch overhead: %s, Triton %s, torch %s, Python %s" % (v["gpu"], v["triton"],
                                                                    v["torch"], v["python"]),
        "",
        "Driver %s, CUDA runtime %s, %s. Command: `%s`." % (v["driver"], v["cuda_runtime"],
                                                          v["date"], res["command"]),
        "Host time per launch of `pykernels.vector.add_kernel` (n = 4096, BLOCK 1024): median of",
        "200 batches of 200 back-to-back launches, synchronised between batches.",
        "",
        "| path | us per launch | x raw |",
        "| --- | ---: | ---: |",
    ]
    raw = r["raw_us"]
    for key, name in [
        ("raw_us", "raw `cuLaunchKernelEx` (C++, same cubin and arguments)"),
        ("ours_pointers_us", "triton_embed, raw pointers"),
        ("ours_tensors_us", "triton_embed, `at::Tensor` (`triton_embed::launch`)"),
        ("op_triton_embed_add_us", "C++ `triton_embed::ops::add` (dispatcher, allocates)"),
        ("op_at_add_us", "C++ `at::add` (allocates)"),
        ("python_compiled_kernel_us", "Python `CompiledKernel[grid](...)`"),
        ("python_kernel_grid_us", "Python `kernel[grid](...)`"),
        ("py_op_triton_embed_add_us", "Python `torch.ops.triton_embed.add`"),
        ("py_op_aten_add_us", "Python `torch.ops.aten.add`"),
        ("py_torch_add_us", "Python `torch.add`"),
    ]:
        lines.append("| %s | %.2f | %.2f |" % (name, r[key], r[key] / raw))
    lines += ["", "| kernel arguments | raw us | ours us | ratio |", "| ---: | ---: | ---: | ---: |"]
    for n in (1, 4, 16, 32):
        a, b = r["args%d_raw_us" % n], r["args%d_ours_us" % n]
        lines.append("| %d | %.2f | %.2f | %.2f |" % (n, a, b, b / a))
    lines += ["", "| threads (own streams) | raw launches/s | ours launches/s | ratio |",
              "| ---: | ---: | ---: | ---: |"]
    for t in (1, 2, 4, 8):
        a, b = r["threads%d_raw_launches_per_s" % t], r["threads%d_ours_launches_per_s" % t]
        lines.append("| %d | %.0f | %.0f | %.2f |" % (t, a, b, b / a))
    f = res["first_launch"]
    lines += ["", "| first call | C++ (triton_embed) | Python Triton |", "| --- | ---: | ---: |",
              "| empty Triton cache: first launch | %.3f s | %.3f s |"
              % (f["cpp_cold"]["first_launch_s"], f["python_cold"]["first_launch_s"]),
              "| warm disk cache, new process: first launch | %.3f s | %.3f s |"
              % (f["cpp_disk_hit"]["first_launch_s"], f["python_disk_hit"]["first_launch_s"]),
              "| in-memory hit (a second handle's first launch) | %.1f us | |"
              % r["first_launch_in_memory_hit_us"],
              "| start-up to first launch, warm cache | %.3f s | %.3f s |"
              % (f["cpp_disk_hit"]["main_to_first_launch_s"],
                 f["python_disk_hit"]["start_to_first_launch_s"]),
              "| of which interpreter start + `import triton` (C++) / imports (Python) | %.3f s | %.3f s |"
              % (f["cpp_disk_hit"]["interpreter_start_s"], f["python_disk_hit"]["import_s"]),
              "", "Resident memory added by the embedded interpreter and its imports: %.0f MiB."
              % r["rss_interpreter_and_imports_mib"],
              "", "| target | measured | limit | met |", "| --- | ---: | ---: | --- |"]
    for t in res["targets"]:
        lines.append("| %s | %.2f | %.2f | %s |" % (t["target"], t["value"], t["limit"],
                                                   "yes" if t["met"] else "**no**"))
    return "\n".join(lines) + "\n"


def chart(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = res["results"]
    names = ["raw cuLaunchKernelEx", "triton_embed ptrs", "triton_embed tensors",
             "C++ te::ops::add", "C++ at::add", "Py CompiledKernel", "Py kernel[grid]",
             "Py te add op", "Py aten add"]
    keys = ["raw_us", "ours_pointers_us", "ours_tensors_us", "op_triton_embed_add_us",
            "op_at_add_us", "python_compiled_kernel_us", "python_kernel_grid_us",
            "py_op_triton_embed_add_us", "py_op_aten_add_us"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bars = ax.barh(names[::-1], [r[k] for k in keys][::-1],
                   color=["#888"] * 4 + ["#c55"] * 2 + ["#57a"] * 3)
    ax.bar_label(bars, fmt="%.2f", padding=3)
    ax.set_xlabel("host time per launch (us), lower is better")
    ax.set_title("Launch overhead on %s (Triton %s)" % (res["versions"]["gpu"],
                                                        res["versions"]["triton"]))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bench = os.path.join(a.build, "bench", "launch_bench")
    env = dict(os.environ)
    env.setdefault("TRITON_EMBED_OPS_LIBRARY", os.path.join(a.build, "ops", "libtriton_embed_ops.so"))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), env.get("PYTHONPATH", "")])

    with tempfile.TemporaryDirectory() as tmp:
        cpp = os.path.join(tmp, "cpp.json")
        py = os.path.join(tmp, "py.json")
        subprocess.run([bench, "gpu", cpp], check=True, env=env)
        subprocess.run([sys.executable, os.path.join(HERE, "python_bench.py"), "launch", py],
                       check=True, env=env)
        results = {}
        for path in (cpp, py):
            with open(path) as f:
                results.update(json.load(f))
    res = {"command": " ".join(["python3", "bench/run.py"] + sys.argv[1:]),
           "versions": versions(), "results": results,
           "first_launch": first_launches(bench, env)}
    res["targets"] = targets(results)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=2)
    md = markdown(res)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    chart(res, os.path.join(a.out, "results.png"))
    print(md)


if __name__ == "__main__":
    main()
