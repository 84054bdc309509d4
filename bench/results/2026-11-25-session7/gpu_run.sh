#!/usr/bin/env bash
# This session's GPU run (issue 24 part 3: config pre-hooks without Python; issue 21: tuning
# rules; issue 22: the two-GPU tests on device 0 twice): build with the
# device's python3 (Triton 3.6, torch 2.11), every CTest entry, the GPU suites that exercise
# pre-hooks verbose, then the benchmark (its pre-hook rows with the JIT and from a bundle).
# Results to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/bench"
BUILD_DIR=/tmp/build ./dev.sh build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
cd /tmp/build
ctest --output-on-failure -j4 > "$OUT/ctest.txt" 2>&1
grep -E "tests passed|\*\*\*|Total Test" "$OUT/ctest.txt"
{
  ctest -R '^(test_tma|test_torch|bundle_gpu_record|bundle_gpu_replay|test_multi_gpu|test_multi_gpu_same_device|bundle_rules_gpu_tune|bundle_rules_gpu_replay)$' -V
} > "$OUT/gpu_verbose.txt" 2>&1
grep -E "^(\S+: )?\[( RUN|       OK|  FAILED|  SKIPPED)" "$OUT/gpu_verbose.txt" | grep -iE "hook|Autotuned|Replay|Record|MultiGpu|Rule|FAILED" | head -80
cd - >/dev/null
python3 bench/run.py --build /tmp/build --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
tail -40 "$OUT/bench.txt"
