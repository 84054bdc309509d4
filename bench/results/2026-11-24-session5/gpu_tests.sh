#!/usr/bin/env bash
# GPU tests of this session (issue 10): build, the GPU suites, and the bundle record/replay
# pairs verbose (to show they ran, not skipped). Results to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
BUILD_DIR=/tmp/build ./dev.sh build > $OUT/build.txt 2>&1 || { tail -50 $OUT/build.txt; exit 1; }
cd /tmp/build
ctest -R "test_gpu|test_torch|test_autotune|test_tma|test_compile|test_errors|test_faults|bundle|runtime_only|no_bridge" \
  --output-on-failure -j4 > $OUT/ctest.txt 2>&1
tail -45 $OUT/ctest.txt
for t in bundle_gpu_replay torch_bundle_replay runtime_only_ptx; do
  ctest -R "^$t\$" -V > $OUT/$t.txt 2>&1
  grep -E "^\S+: \[( RUN|       OK|  FAILED|  SKIPPED)" $OUT/$t.txt | sed "s/^/$t /"
done
