#!/usr/bin/env bash
# This session's GPU run (issues 18 and 24): build with the device's python3 (Triton 3.6,
# torch 2.11), every CTest entry (GPU suites, tune parity, bundle record/replay pairs), the
# new GPU test verbose, then the benchmark. Results to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/bench"
BUILD_DIR=/tmp/build ./dev.sh build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
cd /tmp/build
ctest --output-on-failure -j4 > "$OUT/ctest.txt" 2>&1
grep -E "tests passed|\*\*\*|Total Test" "$OUT/ctest.txt"
# The GPU tests of issue 24 and the record/replay pairs, verbose: their gtest lines show they ran.
{
  ctest -R '^(test_tma|bundle_gpu_replay|torch_bundle_replay|tune_parity)$' -V
} > "$OUT/gpu_verbose.txt" 2>&1
grep -E "^(\S+: )?\[( RUN|       OK|  FAILED|  SKIPPED)" "$OUT/gpu_verbose.txt" | head -60
cd - >/dev/null
python3 bench/run.py --build /tmp/build --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
tail -45 "$OUT/bench.txt"
