#!/usr/bin/env bash
# One GPU-machine session (build, GPU tests, benchmark), results to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
REPO=$PWD
BUILD_DIR=/tmp/build ./dev.sh build > $OUT/build.txt 2>&1 || { tail -50 $OUT/build.txt; exit 1; }
cd /tmp/build
ctest -R "${CTEST_RE:-test_gpu|test_torch|test_autotune|test_specialize|test_args|test_compile}" --output-on-failure -j4 > $OUT/ctest.txt 2>&1
tail -15 $OUT/ctest.txt
cd $REPO
if [[ "${PARITY:-1}" == 1 ]]; then
  python3 tests/gpu/tune_parity.py --cpp /tmp/build/tests/tune_parity --out $OUT/tune_parity > $OUT/tune_parity.log 2>&1
  tail -20 $OUT/tune_parity.log
fi
if [[ "${BENCH:-1}" == 1 ]]; then
  python3 bench/run.py --build /tmp/build --out $OUT/bench > $OUT/bench.txt 2>&1
  tail -40 $OUT/bench.txt
fi
