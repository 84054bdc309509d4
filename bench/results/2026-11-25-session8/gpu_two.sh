#!/usr/bin/env bash
# Issue 22 on a two-GPU machine (nvidia-h100-x2): build with the device's python3 (Triton 3.6,
# torch 2.11), the two-device suites (test_multi_gpu on devices 0 and 1, the bundle recorded
# from both devices and replayed on both), then compute-sanitizer memcheck over the two-device
# program. Results to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
nvidia-smi -L | tee "$OUT/gpus.txt"
BUILD_DIR=/tmp/build ./dev.sh build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
cd /tmp/build
ctest -R '^(test_multi_gpu|test_multi_gpu_same_device|bundle_gpu_record|bundle_gpu_replay|test_tma|test_gpu)$' \
  --output-on-failure -V > "$OUT/two_gpu_ctest.txt" 2>&1
grep -E "^(\S+: )?\[( RUN|       OK|  FAILED|  SKIPPED)|tests passed|Total Test|\*\*\*" "$OUT/two_gpu_ctest.txt" \
  | grep -E "MultiGpu|Replay|Record|FAILED|SKIPPED|tests passed|Total|\*\*\*" | head -60
SRC=$(cd - >/dev/null && pwd)
export TRITON_CACHE_DIR=/tmp/build/triton_cache TRITON_EMBED_PYTHONPATH="$SRC/tests/kernels" PYTHONDONTWRITEBYTECODE=1
CS=/usr/local/cuda/bin/compute-sanitizer
# Everything but the autotuned matmul (whose tuning runs every config many times) first.
timeout 200 $CS --tool memcheck --error-exitcode 9 ./tests/test_multi_gpu \
  --gtest_filter='-*Autotuned*' > "$OUT/memcheck.txt" 2>&1; echo "memcheck rc=$?" | tee -a "$OUT/memcheck.txt"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.txt" | tail -5
timeout 180 $CS --tool memcheck --error-exitcode 9 ./tests/test_multi_gpu \
  --gtest_filter='*Autotuned*' > "$OUT/memcheck_autotune.txt" 2>&1; echo "memcheck autotune rc=$?" | tee -a "$OUT/memcheck_autotune.txt"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck_autotune.txt" | tail -5
