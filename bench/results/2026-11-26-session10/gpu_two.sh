#!/usr/bin/env bash
# Session 10 on two GPUs (nvidia-h100-x2), the final code: build with the device's python3
# (Triton 3.6, torch 2.11), then the two-device suites (test_multi_gpu, the bundle recorded from both devices and
# replayed on both) and the Python fast path's suite (its test on cuda:1 included). Results to
# $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
nvidia-smi -L | tee "$OUT/gpus.txt"
BUILD_DIR=/tmp/build ./dev.sh build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
cd /tmp/build
ctest -R '^(test_multi_gpu|bundle_gpu_record|bundle_gpu_replay|pytest_fast)$' \
  --output-on-failure -V > "$OUT/two_gpu_ctest.txt" 2>&1
grep -E "^(\S+: )?\[( RUN|       OK|  FAILED|  SKIPPED)|tests passed|Total Test|\*\*\*| passed| failed" \
  "$OUT/two_gpu_ctest.txt" | grep -E "MultiGpu|Replay|Record|FAILED|SKIPPED|passed|failed|Total|\*\*\*" | head -60
