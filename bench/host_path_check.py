"""The CPU part of the benchmark: the launch host path (specialise, key, lookup, pack; no
driver call) for a compile-only target, measured by instruction count under callgrind so a
regression shows without a GPU, and by time for information.

Usage: host_path_check.py LAUNCH_BENCH BASELINE_JSON WORK_DIR
Fails when the instructions per call exceed the recorded baseline by more than its tolerance;
exits 77 (skipped) without valgrind.
"""

import json
import os
import re
import shutil
import subprocess
import sys

bench, baseline_path, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)

native = json.loads(subprocess.run([bench, "host-path", "200000"], check=True,
                                   capture_output=True, text=True).stdout.splitlines()[-1])

valgrind = shutil.which("valgrind")
if valgrind is None:
    print(json.dumps(native))
    print("valgrind is not installed: skipping the instruction count")
    sys.exit(77)

calls = 2000
out = os.path.join(work, "callgrind.out")
subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=" + out,
                "--collect-atstart=no", "--toggle-collect=*host_path_loop*",
                bench, "host-path", str(calls)], check=True, capture_output=True, text=True)
with open(out) as f:
    text = f.read()
m = re.search(r"^(?:totals|summary):\s+(\d+)", text, re.MULTILINE)
if m is None:
    sys.exit("no instruction total in " + out)
# host_path_loop runs 1000 warm-up calls, then `calls` measured ones; both are collected.
per_call = int(m.group(1)) / (1000 + calls)

with open(baseline_path) as f:
    baseline = json.load(f)
limit = baseline["instructions_per_call"] * baseline["tolerance"]
result = {"instructions_per_call": round(per_call, 1), "baseline": baseline["instructions_per_call"],
          "limit": round(limit, 1), "host_path_ns_per_call": round(native["host_path_ns_per_call"], 1)}
print(json.dumps(result))
with open(os.path.join(work, "host_path.json"), "w") as f:
    json.dump(result, f, indent=2)
if per_call > limit:
    sys.exit("host path regressed: %.1f instructions per call, limit %.1f (baseline %s)"
             % (per_call, limit, baseline["instructions_per_call"]))
