#!/usr/bin/env bash
# Session 9: where the Python fast path's host time goes (bench/probe/fast_path_probe.py), and
# a perf profile of it when perf is there. Results to $OUT.
set -uo pipefail
BUILD_DIR=/tmp/build ./dev.sh build > "$OUT/build.txt" 2>&1 || { tail -50 "$OUT/build.txt"; exit 1; }
export TRITON_EMBED_OPS_LIBRARY=/tmp/build/ops/libtriton_embed_ops.so PYTHONPATH=$PWD/python
python3 bench/probe/fast_path_probe.py 2>&1 | tee "$OUT/probe.txt"
if command -v perf >/dev/null; then
  perf record -q -g -o /tmp/perf.data python3 bench/probe/fast_path_probe.py >/dev/null 2>&1
  perf report -i /tmp/perf.data --stdio --no-children 2>/dev/null | grep -v "^$" | head -150 > "$OUT/perf.txt"
  head -60 "$OUT/perf.txt"
else
  echo "no perf"
fi
