"""Runs the launch-overhead benchmark on the GPU machine and writes the report.

    python3 bench/run.py --build build --out bench/results/<date>-<gpu>

Writes results.json (every figure, the versions and the command), results.md (the table and
the targets) and results.png (a chart). Ratios are taken from one run: the C++ figures come
from one process (launch_bench gpu), the Python ones from another (python_bench.py launch),
where each Python fast-path target row has its raw floor measured beside it.
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
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError("%s exited with %d:\n%s" % (" ".join(cmd), out.returncode, out.stderr))
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


# The Python fast path's targets: (target, the row's key, limit).
PYTHON_TARGETS = [
    ("Python triton_embed.jit vector add <= 1.20x raw", "python_fast_us", 1.20),
    ("Python triton_embed.jit @triton.heuristics <= 1.25x raw", "python_fast_heuristics_us", 1.25),
    ("Python triton_embed.jit @triton.autotune (after tuning; grid lambda with triton.cdiv) "
     "<= 1.25x raw", "python_fast_autotune_us", 1.25),
    ("Python triton_embed.jit 32 arguments <= 1.40x raw", "python_fast_args32_us", 1.40),
    ("Python triton_embed.jit 2 TMA descriptors <= 1.40x raw", "python_fast_tma_us", 1.40),
    ("Python triton_embed.jit @triton.heuristics, the parameter it sets given by name "
     "<= 1.25x raw", "python_fast_heuristics_named_us", 1.25),
    # Against Triton's own kernel[grid] of the same call, not raw.
    ("Python triton_embed.jit, a call handed to Triton's launcher (a @triton.jit function as an "
     "argument; its floor: Triton's own kernel[grid]) <= 1.05x Triton's kernel[grid]",
     "python_fast_fallback_us", 1.05),
]


def targets(r):
    """The issue's targets, each with its measured value and verdict."""
    rows = []

    def add(name, value, limit, ok):
        rows.append({"target": name, "value": value, "limit": limit, "met": bool(ok)})

    # The launch-overhead targets: each row measured on its own against its raw floor
    # (launch_bench's paired(): alternating batches, the median of the per-round ratios).
    for name, pair, limit in [
        ("raw-pointer launch <= 1.10x raw cuLaunchKernelEx", "pointers", 1.10),
        ("at::Tensor launch <= 1.12x raw", "tensors", 1.12),
        ("named-argument launch <= 1.10x raw", "named", 1.10),
        ("named-argument launch <= 1.05x the same launch positional", "named_vs_positional", 1.05),
        ("@triton.heuristics launch <= 1.10x raw", "heuristics", 1.10),
        ("@triton.autotune launch after tuning (grid callable) <= 1.10x raw", "autotune", 1.10),
        ("@triton.autotune launch after tuning (fixed grid) <= 1.10x raw", "autotune_fixed_grid",
         1.10),
        ("32-argument launch <= 1.15x raw", "args32", 1.15),
        ("2 TMA descriptors <= 1.15x raw (pre-encoded maps)", "tma", 1.15),
        ("@triton.autotune, 2 TMA descriptors, config pre-hook sets the block shapes (JIT) "
         "<= 1.15x raw", "tma_pre_hook", 1.15),
    ]:
        ratio = r["pair_%s_ratio" % pair]
        add(name, ratio, limit, ratio <= limit)
    add(">= 5x faster than Python kernel[grid]", r["python_kernel_grid_us"] / r["ours_pointers_us"],
        5.0, r["python_kernel_grid_us"] / r["ours_pointers_us"] >= 5.0)
    # The Python fast path (triton_embed.jit(kernel)[grid]) against raw cuLaunchKernelEx on the
    # same cubin, measured in python_bench's own process (its RawFloor), batch by batch: the
    # median of the per-batch ratios, as paired() does.
    for name, key, limit in PYTHON_TARGETS:
        ratio_key = key[:-len("_us")] + "_ratio"
        if ratio_key in r:
            add(name, r[ratio_key], limit, r[ratio_key] <= limit)
    add("C++ op: triton_embed::ops::add <= at::add",
        r["op_triton_embed_add_us"] / r["op_at_add_us"], 1.0,
        r["op_triton_embed_add_us"] <= r["op_at_add_us"])
    add("Python op: torch.ops.triton_embed.add <= torch.ops.aten.add",
        r["py_op_triton_embed_add_us"] / r["py_op_aten_add_us"], 1.0,
        r["py_op_triton_embed_add_us"] <= r["py_op_aten_add_us"])
    for shape in ("softmax_4096x1000_fp32", "softmax_1024x8192_fp32", "layer_norm_4096x4096_fp16"):
        if f"op_{shape}_te_us" in r:
            ratio = r[f"op_{shape}_te_us"] / r[f"op_{shape}_at_us"]
            add(f"C++ op {shape} (heuristic num_warps), device time <= ATen", ratio, 1.0, ratio <= 1.0)
    if "bundle_ratio" in r:
        add("bundle (runtime only, no Python): launch <= 1.10x raw", r["bundle_ratio"], 1.10,
            r["bundle_ratio"] <= 1.10 and r["bundle_correct"])
        if "bundle_tuned_ratio" in r:
            add("bundle: autotuned kernel, choice and cubin from the bundle: launch <= 1.10x raw",
                r["bundle_tuned_ratio"], 1.10,
                r["bundle_tuned_ratio"] <= 1.10 and r["bundle_tuned_correct"])
        if "bundle_fallback_ratio" in r:
            add("bundle: a call served by a less specialised entry (recorded n = 1000, launched "
                "n = 4096), after its first launch: <= 1.10x raw", r["bundle_fallback_ratio"],
                1.10, r["bundle_fallback_ratio"] <= 1.10 and r["bundle_fallback_correct"])
        if "bundle_rule_ratio" in r:
            add("bundle: an autotuned kernel at a tuning key nobody tuned, served by its tuning "
                "rule, after its first launch: <= 1.10x raw", r["bundle_rule_ratio"], 1.10,
                r["bundle_rule_ratio"] <= 1.10 and r["bundle_rule_correct"])
        if "bundle_hook_ratio" in r:
            add("bundle: autotuned kernel with a config pre-hook on 2 TMA descriptors (applied "
                "without Python): launch <= 1.15x raw", r["bundle_hook_ratio"], 1.15,
                r["bundle_hook_ratio"] <= 1.15 and r["bundle_hook_correct"])
        add("bundle: new process, bundle load to first launch done <= 0.020 s (context excluded)",
            r["bundle_first_launch_s"], 0.020, r["bundle_first_launch_s"] <= 0.020)
        add("bundle: resident memory that loading and the first launch add <= 10 MiB",
            r["bundle_rss_added_mib"], 10.0, r["bundle_rss_added_mib"] <= 10.0)
    if "widen_launch_widened_ratio" in r:
        add("widened bundle: a launch through a widened entry (add_kernel at n = 4097, the "
            "twin with n unspecialised) <= 1.10x raw", r["widen_launch_widened_ratio"], 1.10,
            r["widen_launch_widened_ratio"] <= 1.10 and r["widen_launch_widened_correct"])
        add("widened bundle: n = 1 (a constexpr in Triton) through that twin <= 1.10x raw",
            r["widen_launch_one_ratio"], 1.10,
            r["widen_launch_one_ratio"] <= 1.10 and r["widen_launch_one_correct"])
        add("a bundle of 10,000 entries: load and first launch <= 50 ms (context excluded)",
            r["widen_large10000_load_and_first_launch_ms"], 50.0,
            r["widen_large10000_load_and_first_launch_ms"] <= 50.0
            and r["widen_large10000_correct"])
        for kind in ("exact", "less_specialised"):
            small = r["widen_large100_miss_%s_us" % kind]
            big = r["widen_large10000_miss_%s_us" % kind]
            add("a miss resolved from a bundle of 10,000 entries (%s) costs <= 2x one of 100 "
                "entries" % kind.replace("_", " "), big / small, 2.0, big <= 2.0 * small)
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
        ("python_fast_us", "Python `triton_embed.jit(kernel)[grid](...)`"),
        ("py_op_triton_embed_add_us", "Python `torch.ops.triton_embed.add`"),
        ("py_op_aten_add_us", "Python `torch.ops.aten.add`"),
        ("py_torch_add_us", "Python `torch.add`"),
    ]:
        if key in r:
            lines.append("| %s | %.2f | %.2f |" % (name, r[key], r[key] / raw))
    lines += ["", "Named arguments, `@triton.heuristics` and `@triton.autotune` (after tuning) on the "
              "same vector add, one interleaved group; each row's raw floor is `cuLaunchKernelEx` "
              "on the cubin that launch runs. C++ chose `%s`, Python `%s`."
              % (r["layers_autotune_best"], r["python_autotune_best"]), "",
              "| path | raw us | us | x raw |", "| --- | ---: | ---: | ---: |"]
    for key, raw_key, name in [
        ("layers_positional_us", "layers_raw_us", "`add_kernel`, positional"),
        ("layers_named_us", "layers_raw_us",
         "`add_kernel`, `\"n_elements\"_a = n, \"BLOCK\"_a = 1024`"),
        ("layers_heuristics_us", "layers_heuristics_raw_us", "`@triton.heuristics` (EVEN)"),
        ("layers_autotune_us", "layers_autotune_raw_us",
         "`@triton.autotune`, grid callable"),
        ("layers_autotune_fixed_grid_us", "layers_autotune_raw_us",
         "`@triton.autotune`, fixed grid"),
    ]:
        lines.append("| %s | %.2f | %.2f | %.2f |" % (name, r[raw_key], r[key], r[key] / r[raw_key]))
    for key, raw_key, name in [
            ("python_heuristics_kernel_grid_us", "layers_heuristics_raw_us",
             "Python `@triton.heuristics` `kernel[grid]`"),
            ("python_fast_heuristics_us", "layers_heuristics_raw_us",
             "Python `triton_embed.jit(@triton.heuristics kernel)[grid]`"),
            ("python_autotune_kernel_grid_us", "layers_autotune_raw_us",
             "Python `@triton.autotune` `kernel[grid]` (after tuning), grid lambda calling a "
             "Python function"),
            ("python_autotune_kernel_grid_cdiv_us", "layers_autotune_raw_us",
             "Python `@triton.autotune` `kernel[grid]` (after tuning), grid lambda with "
             "`triton.cdiv`"),
            ("python_fast_autotune_us", "layers_autotune_raw_us",
             "Python `triton_embed.jit(@triton.autotune kernel)[grid]` (after tuning), grid "
             "lambda with `triton.cdiv`"),
            ("python_fast_autotune_called_grid_us", "layers_autotune_raw_us",
             "Python `triton_embed.jit(@triton.autotune kernel)[grid]` (after tuning), grid "
             "lambda calling a Python function"),
            ("python_args32_kernel_grid_us", "args32_raw_us",
             "Python `kernel[grid]`, 32 pointer arguments (`bench_kernels.args_32`)"),
            ("python_fast_args32_us", "args32_raw_us",
             "Python `triton_embed.jit(kernel)[grid]`, 32 pointer arguments"),
            ("python_tma_kernel_grid_us", "tma_raw_us",
             "Python `kernel[grid]`, 2 host `TensorDescriptor`s (`bench_kernels.tma_copy`)"),
            ("python_fast_tma_us", "tma_raw_us",
             "Python `triton_embed.jit(kernel)[grid]`, 2 host `TensorDescriptor`s")]:
        if key in r and raw_key in r:
            lines.append("| %s | %.2f | %.2f | %.2f |" % (name, r[raw_key], r[key],
                                                          r[key] / r[raw_key]))
    lines += ["", "The Python fast path's targets, each row beside its raw floor in python_bench's own "
              "process: `cuLaunchKernelEx` in a C++ loop on the CUfunction Triton loaded for the "
              "same call (`bench/raw_launch.cc`), alternating batch by batch; the ratio is the "
              "median of the per-batch ratios.", "",
              "| row | raw us (same process) | ours us | ratio | quartiles |",
              "| --- | ---: | ---: | ---: | --- |"]
    informative = [("Python triton_embed.jit @triton.autotune (after tuning; grid lambda calling "
                    "a Python function: called at each launch), no target",
                    "python_fast_autotune_called_grid_us", None)]
    for name, key, _ in PYTHON_TARGETS + informative:
        base = key[:-len("_us")]
        if base + "_ratio" in r:
            lines.append("| %s | %.2f | %.2f | %.3f | %.3f-%.3f |" % (
                name.split(" <= ")[0], r[base + "_raw_us"], r[key], r[base + "_ratio"],
                r[base + "_p25"], r[base + "_p75"]))
    lines += ["", "| kernel arguments | raw us | ours us | ratio |", "| ---: | ---: | ---: | ---: |"]
    for n in (1, 4, 16, 32):
        a, b = r["args%d_raw_us" % n], r["args%d_ours_us" % n]
        lines.append("| %d | %.2f | %.2f | %.2f |" % (n, a, b, b / a))
    if "tma_ours_us" in r:
        lines.append("| 2 TMA descriptors (`bench_kernels.tma_copy`; raw: maps encoded once) | "
                     "%.2f | %.2f | %.2f |" % (r["tma_raw_us"], r["tma_ours_us"],
                                               r["tma_ours_us"] / r["tma_raw_us"]))
    lines += ["", "Each target row on its own: its path and its raw floor alternating batch by batch "
              "(%s rounds of two batches, the order flipped each round); the ratio is the median "
              "of the rounds' ratios, with their quartiles." % r.get("pair_rounds", 300), "",
              "| row | raw us | ours us | ratio | quartiles |", "| --- | ---: | ---: | ---: | --- |"]
    for pair, name in [("pointers", "raw pointers"), ("tensors", "`at::Tensor`"),
                       ("named", "named arguments"),
                       ("named_vs_positional", "named vs the same launch positional"),
                       ("heuristics", "`@triton.heuristics`"),
                       ("autotune", "`@triton.autotune`, grid callable"),
                       ("autotune_fixed_grid", "`@triton.autotune`, fixed grid"),
                       ("args32", "32 arguments"), ("tma", "2 TMA descriptors"),
                       ("tma_pre_hook", "`@triton.autotune`, 2 TMA descriptors, config pre-hook")]:
        p = "pair_" + pair
        if p + "_ratio" not in r:
            continue
        lines.append("| %s | %.2f | %.2f | %.3f | %.3f-%.3f |" % (
            name, r[p + "_raw_us"], r[p + "_ours_us"], r[p + "_ratio"], r[p + "_p25"],
            r[p + "_p75"]))
    if "bundle_ratio" in r:
        lines += ["", "Deployment (`bench/bundle_bench`, linked to `triton_embed::runtime` only: no "
                  "Python, no torch), launching `add_kernel` from the bundle this run recorded; "
                  "medians of three new processes: process start to a current context %.3f s "
                  "(the driver's), then loading the bundle, the kernel and the first launch "
                  "%.4f s; resident memory %.1f MiB before, %.2f MiB added; launch %.2f us "
                  "against raw %.2f us (%.3f, quartiles %.3f-%.3f); output exact: %s."
                  % (r["bundle_context_s"], r["bundle_first_launch_s"], r["bundle_rss_before_mib"],
                     r["bundle_rss_added_mib"], r["bundle_ours_us"], r["bundle_raw_us"],
                     r["bundle_ratio"], r["bundle_p25"], r["bundle_p75"], r["bundle_correct"])]
        if "bundle_tuned_ratio" in r:
            lines[-1] += (" The autotuned `add_autotune_kernel` (grid callable), its choice {%s} "
                          "and cubin from the bundle: %.2f us against raw %.2f us (%.3f, quartiles "
                          "%.3f-%.3f); output exact: %s."
                          % (r["bundle_tuned_best"], r["bundle_tuned_ours_us"],
                             r["bundle_tuned_raw_us"], r["bundle_tuned_ratio"],
                             r["bundle_tuned_p25"], r["bundle_tuned_p75"],
                             r["bundle_tuned_correct"]))
        if "bundle_fallback_ratio" in r:
            lines[-1] += (" Served by what the bundle's rules give calls nobody recorded, each "
                          "after its first launch: `add_kernel` at n = 4096 from the entry "
                          "compiled for n = 1000 (no \"divisible by 16\"), %.2f us against raw "
                          "%.2f us (%.3f, quartiles %.3f-%.3f; output exact: %s); "
                          "`add_autotune_kernel` at n = 2048 with the choice tuned at 4096 "
                          "(`n_elements=nearest`), %.2f us against raw %.2f us (%.3f, quartiles "
                          "%.3f-%.3f; output exact: %s)."
                          % (r["bundle_fallback_ours_us"], r["bundle_fallback_raw_us"],
                             r["bundle_fallback_ratio"], r["bundle_fallback_p25"],
                             r["bundle_fallback_p75"], r["bundle_fallback_correct"],
                             r["bundle_rule_ours_us"], r["bundle_rule_raw_us"],
                             r["bundle_rule_ratio"], r["bundle_rule_p25"], r["bundle_rule_p75"],
                             r["bundle_rule_correct"]))
        if "bundle_hook_ratio" in r:
            lines[-1] += (" The autotuned `tma_copy_tuned` (two host descriptors whose config "
                          "pre-hook sets their block shapes; choice, hook and cubin from the "
                          "bundle): %.2f us against raw %.2f us (%.3f, quartiles %.3f-%.3f); "
                          "output exact: %s."
                          % (r["bundle_hook_ours_us"], r["bundle_hook_raw_us"],
                             r["bundle_hook_ratio"], r["bundle_hook_p25"], r["bundle_hook_p75"],
                             r["bundle_hook_correct"]))
    if "widen_s" in r:
        lines += ["", "Widening (`triton-embed-bundle widen` on the bundle this run recorded): "
                  "%d entries added in %.1f s (%.2f s per entry: one Triton compile each), "
                  "%d -> %d bytes (%.0f bytes per entry added)."
                  % (r["widen_added"], r["widen_s"], r["widen_s_per_entry"],
                     r["widen_bytes_before"], r["widen_bytes_after"], r["widen_bytes_per_entry"]),
                  "", "| bundle entries | bytes | load + first launch (ms) | miss, exact entry "
                  "(us) | miss, entry with fewer assumptions (us) |",
                  "| ---: | ---: | ---: | ---: | ---: |"]
        for n in (100, 1000, 10000):
            p = "widen_large%d_" % n
            lines.append("| %d | %d | %.2f | %.1f | %.1f |" % (
                n, r[p + "bytes"], r[p + "load_and_first_launch_ms"], r[p + "miss_exact_us"],
                r[p + "miss_less_specialised_us"]))
        if "widen_device_add_ratio" in r:
            lines += ["", "Device time of an entry compiled with fewer assumptions (the widened "
                      "twin, at size + 1) against the specialised entry (at a multiple of 16), "
                      "the example's widened bundle; no limit, what dropping a specialisation "
                      "costs:", "", "| kernel | specialised us | twin us | ratio | twin |",
                      "| --- | ---: | ---: | ---: | --- |"]
            for k in ("add", "matmul", "rope"):
                p = "widen_device_%s_" % k
                lines.append("| %s | %.2f | %.2f | %.3f | `%s` |" % (
                    k, r[p + "specialised_us"], r[p + "twin_us"], r[p + "ratio"], r[p + "twin"]))
    if "tma_pre_hook_best" in r:
        lines += ["", "The pre-hook row's choice: `%s`." % r["tma_pre_hook_best"]]
    if "cu_ctx_get_current_us" in r:
        lines += ["", "`cuCtxGetCurrent` alone (the launch path's one driver call besides the "
                  "launch): %.3f us." % r["cu_ctx_get_current_us"]]
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
    # (label, key, colour): C++ launches in blue, Python Triton in red, the Python fast path in
    # green after its raw floor (measured in its own process), the ops and torch in grey.
    rows = [("raw cuLaunchKernelEx", "raw_us", "#57a"),
            ("triton_embed ptrs", "ours_pointers_us", "#57a"),
            ("triton_embed tensors", "ours_tensors_us", "#57a"),
            ("triton_embed named args", "layers_named_us", "#57a"),
            ("triton_embed heuristics", "layers_heuristics_us", "#57a"),
            ("triton_embed autotune", "layers_autotune_us", "#57a"),
            ("C++ te::ops::add", "op_triton_embed_add_us", "#888"),
            ("C++ at::add", "op_at_add_us", "#888"),
            ("Py CompiledKernel", "python_compiled_kernel_us", "#c55"),
            ("Py kernel[grid]", "python_kernel_grid_us", "#c55"),
            ("Py heuristics kernel[grid]", "python_heuristics_kernel_grid_us", "#c55"),
            ("Py autotune kernel[grid]", "python_autotune_kernel_grid_us", "#c55"),
            ("Py autotune kernel[grid], triton.cdiv grid", "python_autotune_kernel_grid_cdiv_us",
             "#c55"),
            ("Py kernel[grid] 32 args", "python_args32_kernel_grid_us", "#c55"),
            ("Py kernel[grid] 2 TMA descs", "python_tma_kernel_grid_us", "#c55"),
            ("Py raw cuLaunchKernelEx (same process)", "python_fast_raw_us", "#57a"),
            ("Py triton_embed.jit", "python_fast_us", "#5a5"),
            ("Py triton_embed.jit heuristics", "python_fast_heuristics_us", "#5a5"),
            ("Py triton_embed.jit autotune, triton.cdiv grid", "python_fast_autotune_us", "#5a5"),
            ("Py triton_embed.jit autotune, grid calls a function",
             "python_fast_autotune_called_grid_us", "#5a5"),
            ("Py triton_embed.jit 32 args", "python_fast_args32_us", "#5a5"),
            ("Py triton_embed.jit 2 TMA descs", "python_fast_tma_us", "#5a5"),
            ("Py te add op", "py_op_triton_embed_add_us", "#888"),
            ("Py aten add", "py_op_aten_add_us", "#888"),
            ("Py torch.add", "py_torch_add_us", "#888")]
    rows = [row for row in rows if row[1] in r]
    fig, ax = plt.subplots(figsize=(9, 8.5))
    bars = ax.barh([row[0] for row in rows][::-1], [r[row[1]] for row in rows][::-1],
                   color=[row[2] for row in rows][::-1])
    ax.bar_label(bars, fmt="%.2f", padding=3)
    ax.set_xlabel("host time per launch (us), lower is better")
    ax.set_title("Launch overhead on %s (Triton %s)" % (res["versions"]["gpu"],
                                                        res["versions"]["triton"]))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def median_runs(cmd, env, n=3):
    """The median of each number over n fresh processes of cmd (JSON lines), flags all-true."""
    runs = [run_json(cmd, env) for _ in range(n)]
    out = {}
    for k, v in runs[0].items():
        if isinstance(v, bool):
            out[k] = all(r[k] for r in runs)
        elif isinstance(v, (int, float)):
            out[k] = sorted(r[k] for r in runs)[n // 2]
        else:
            out[k] = v
    return out


def widen(build, teb, env, block_teb=None):
    """Issue 37's rows: `triton-embed-bundle widen` on the bundle launch_bench recorded (its time
    and what it adds per entry), launches through the widened entries, a bundle of 10,000
    entries, and, with the example's widened bundle, device time of the entries compiled with
    fewer assumptions against the specialised ones."""
    import re
    import time

    tool = os.path.join(build, "triton-embed-bundle")
    wb = os.path.join(build, "bench", "widen_bench")
    wide = teb[:-len(".teb")] + "_wide.teb"
    t0 = time.time()
    out = subprocess.run([tool, "widen", "-o", wide, teb], check=True, capture_output=True,
                         text=True, env=env).stdout
    res = {"widen_s": time.time() - t0}
    m = re.search(r"entries \((\d+) added, (\d+) bytes of code\).*?(\d+) -> (\d+) bytes", out)
    res.update({"widen_added": int(m.group(1)), "widen_code_bytes": int(m.group(2)),
                "widen_bytes_before": int(m.group(3)), "widen_bytes_after": int(m.group(4))})
    res["widen_s_per_entry"] = res["widen_s"] / max(res["widen_added"], 1)
    res["widen_bytes_per_entry"] = ((res["widen_bytes_after"] - res["widen_bytes_before"])
                                    / max(res["widen_added"], 1))
    res.update({"launch_" + k: v for k, v in median_runs([wb, "launch", wide], env).items()})
    for n in (100, 1000, 10000):
        res.update({"large%d_%s" % (n, k): v
                    for k, v in median_runs([wb, "large", wide, str(n)], env).items()})
    if block_teb:
        res.update({"device_" + k: v
                    for k, v in median_runs([wb, "device", wide, block_teb], env, 1).items()})
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", required=True)
    p.add_argument("--block-bundle", default=None,
                   help="the example's widened bundle (examples/deploy): device-time rows")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bench = os.path.join(a.build, "bench", "launch_bench")
    env = dict(os.environ)
    env.setdefault("TRITON_EMBED_OPS_LIBRARY", os.path.join(a.build, "ops", "libtriton_embed_ops.so"))
    # python/ (triton_embed) and the build's bench/ (_bench_raw, the Python rows' raw floor).
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), os.path.join(a.build, "bench"),
                                         env.get("PYTHONPATH", "")])

    with tempfile.TemporaryDirectory() as tmp:
        cpp = os.path.join(tmp, "cpp.json")
        py = os.path.join(tmp, "py.json")
        teb = os.path.join(tmp, "bench.teb")
        subprocess.run([bench, "gpu", cpp, teb], check=True, env=env)
        # Deployment: a runtime-only program (no Python) launching from that bundle, three
        # fresh processes; the median of each figure.
        bb = os.path.join(a.build, "bench", "bundle_bench")
        runs = [run_json([bb, teb], env) for _ in range(3)]
        flags = ("correct", "tuned_correct", "hook_correct", "fallback_correct", "rule_correct")
        bundle = {k: sorted(r[k] for r in runs)[1] for k in runs[0]
                  if k not in flags and not isinstance(runs[0][k], str)}
        bundle.update({k: v for k, v in runs[0].items() if isinstance(v, str)})
        for k in flags:
            bundle[k] = all(r.get(k, False) for r in runs)
        bundle["runs"] = runs
        wide = widen(a.build, teb, env, a.block_bundle)
        subprocess.run([sys.executable, os.path.join(HERE, "python_bench.py"), "launch", py],
                       check=True, env=env)
        results = {}
        for path in (cpp, py):
            with open(path) as f:
                results.update(json.load(f))
    results.update({"bundle_" + k: v for k, v in bundle.items() if k != "runs"})
    results.update({"widen_" + k if not k.startswith("widen_") else k: v for k, v in wide.items()})
    res = {"command": " ".join(["python3", "bench/run.py"] + sys.argv[1:]),
           "versions": versions(), "results": results, "bundle_runs": bundle["runs"],
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
