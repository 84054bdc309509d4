#!/usr/bin/env bash
# One GPU-machine session, results to $OUT: build with the device's python3 (./dev.sh build,
# BUILD_DIR=/tmp/build); the CTest entries matching CTEST_RE (default: every one); the suites
# of TE_VERBOSE_TESTS again, verbose; the host path of the TMA rows on this CPU
# (launch_bench host-path-tma); Triton's autotune parity when PARITY=1; the benchmark
# (bench/run.py) unless BENCH=0.
set -uo pipefail
export PYTHONUNBUFFERED=1
REPO=$PWD
mkdir -p "$OUT/bench"
BUILD_DIR=/tmp/build ./dev.sh build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
cd /tmp/build
ctest -R "${CTEST_RE:-.}" --output-on-failure -j4 > "$OUT/ctest.txt" 2>&1
grep -E "tests passed|\*\*\*|Total Test" "$OUT/ctest.txt"
ctest -R "${TE_VERBOSE_TESTS:-^(test_errors|test_faults|test_tma|bundle_gpu_record|bundle_gpu_replay|test_multi_gpu_same_device|torch_bundle_record|torch_runtime_only|test_runtime_only|pytest_fast)$}" -V \
  > "$OUT/gpu_verbose.txt" 2>&1
grep -E "^(\S+: )?\[( RUN|       OK|  FAILED|  SKIPPED)" "$OUT/gpu_verbose.txt" | grep -E "FAILED|Memo|OnePass|Replay|Record|Hundred|Reference" | head -40
grep -E "[0-9]+ (passed|failed)" "$OUT/gpu_verbose.txt" | tail -3
TRITON_CACHE_DIR=/tmp/build/triton_cache ./bench/launch_bench host-path-tma 1000000 2>/dev/null | tail -1 | tee "$OUT/host_path_tma.json"
cd "$REPO"
if [[ "${PARITY:-0}" == 1 ]]; then
  python3 tests/gpu/tune_parity.py --cpp /tmp/build/tests/tune_parity --out "$OUT/tune_parity" > "$OUT/tune_parity.log" 2>&1
  tail -20 "$OUT/tune_parity.log"
fi
if [[ "${BENCH:-1}" == 1 ]]; then
  python3 bench/run.py --build /tmp/build --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
  tail -45 "$OUT/bench.txt"
fi
