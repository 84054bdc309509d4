#!/usr/bin/env bash
# Deploy for every shape (README), end to end on a GPU machine: the four commands.
#
#   examples/deploy/run.sh [BUILD_DIR] [WORK_DIR]     (defaults: build, build/deploy)
#
#   record   the block with the JIT at two token counts -> WORK_DIR/block.teb
#   widen    every entry's twins, the rotary kernel at batch 1 to 8 -> WORK_DIR/block_wide.teb
#   embed    deploy_serve built with that bundle inside it
#   serve    deploy_serve --all: every token count from 1 to 4096, linked to the runtime only
#
# STEPS=record,widen or STEPS=embed,serve runs a part (default: all four).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
WORK="${2:-$BUILD/deploy}"
STEPS="${STEPS:-record,widen,embed,serve}"
mkdir -p "$WORK"
step() { [[ ",$STEPS," == *",$1,"* ]]; }

if step record; then
  echo "== record"
  TRITON_EMBED_RECORD="$WORK/block.teb" "$BUILD/examples/deploy_record"
fi
if step widen; then
  echo "== widen"
  time "$BUILD/triton-embed-bundle" widen -o "$WORK/block_wide.teb" \
    --values pykernels.rope:rope_kernel:BATCH=1,2,3,...,8 "$WORK/block.teb"
fi
if step embed; then
  echo "== embed"
  cmake -S "$ROOT" -B "$BUILD" -DTRITON_EMBED_DEPLOY_BUNDLE="$WORK/block_wide.teb" > /dev/null
  cmake --build "$BUILD" --target deploy_serve
fi
if step serve; then
  echo "== serve"
  "$BUILD/examples/deploy_serve" --all
fi
