#!/usr/bin/env bash
# Session 9, the Python fast path (issue 25) on one GPU: build with the device's python3
# (Triton 3.6, torch 2.11), the fast-path suite verbose, then the benchmark. Results to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/bench"
BUILD_DIR=/tmp/build ./dev.sh build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
(cd /tmp/build && ctest -R "^pytest_fast$" -V > "$OUT/pytest_fast.txt" 2>&1)
grep -E "passed|failed|Error|error|FAIL" "$OUT/pytest_fast.txt" | tail -30
python3 bench/run.py --build /tmp/build --out "$OUT/bench" > "$OUT/bench.txt" 2>&1
grep -iE "python|fast|raw cuLaunch|error|Traceback" "$OUT/bench.txt" | head -40
