#!/usr/bin/env bash
# Session 11 one-GPU run (the final code): build with the device's python3 (Triton 3.6, torch 2.11), every
# CTest entry, the TMA / pre-hook / bundle / two-GPU (device 0 twice) suites verbose, the
# host path of the TMA rows on this CPU (launch_bench host-path-tma), then the benchmark.
# Results to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/bench"
BUILD_DIR=/tmp/build ./dev.sh build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
cd /tmp/build
ctest --output-on-failure -j4 > "$OUT/ctest.txt" 2>&1
grep -E "tests passed|\*\*\*|Total Test" "$OUT/ctest.txt"
ctest -R "${TE_VERBOSE_TESTS:-^(test_errors|test_faults|test_tma|bundle_gpu_record|bundle_gpu_replay|test_multi_gpu_same_device|torch_any_reference|torch_any_replay|pytest_fast)$}" -V \
  > "$OUT/gpu_verbose.txt" 2>&1
grep -E "^(\S+: )?\[( RUN|       OK|  FAILED|  SKIPPED)" "$OUT/gpu_verbose.txt" | grep -E "FAILED|Memo|OnePass|Replay|Record|Hundred|Reference" | head -40
TRITON_CACHE_DIR=/tmp/build/triton_cache ./bench/launch_bench host-path-tma 1000000 2>/dev/null | tail -1 | tee "$OUT/host_path_tma.json"
cd - >/dev/null
python3 bench/run.py --build /tmp/build --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
tail -45 "$OUT/bench.txt"
grep -E "[0-9]+ (passed|failed)" "$OUT/gpu_verbose.txt" | tail -3
