# The A/B of ab.txt: launch_bench paired rows, df21eab (exported with `git archive df21eab | tar -x -C _base`) vs the working tree.
set -uo pipefail; export PYTHONUNBUFFERED=1
(cd _base && BUILD_DIR=/tmp/build_base ./dev.sh build > $OUT/build_base.log 2>&1) || { tail -20 $OUT/build_base.log; exit 1; }
BUILD_DIR=/tmp/build ./dev.sh build > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
for round in 1 2; do
  for side in base new; do
    if [ $side = base ]; then d=_base; b=/tmp/build_base; else d=.; b=/tmp/build; fi
    (cd $d && TRITON_EMBED_OPS_LIBRARY=$b/ops/libtriton_embed_ops.so $b/bench/launch_bench gpu $OUT/$side$round.json /tmp/$side$round.teb > $OUT/$side$round.log 2>&1) || tail -5 $OUT/$side$round.log
    python3 -c "
import json,sys; r=json.load(open('$OUT/$side$round.json'))
print('$side$round', ' '.join('%s=%.3f' % (k[5:-6], v) for k, v in sorted(r.items()) if k.startswith('pair_') and k.endswith('_ratio')))"
  done
done
for side in base new; do
  if [ $side = base ]; then d=_base; b=/tmp/build_base; else d=.; b=/tmp/build; fi
  (cd $d && TRITON_EMBED_OPS_LIBRARY=$b/ops/libtriton_embed_ops.so PYTHONPATH=$PWD/python python3 bench/python_bench.py launch $OUT/py_$side.json > $OUT/py_$side.log 2>&1) || tail -5 $OUT/py_$side.log
  python3 -c "
import json; r=json.load(open('$OUT/py_$side.json'))
print('py_$side', ' '.join('%s=%.2f' % (k, v) for k, v in sorted(r.items()) if k.startswith('python_') and isinstance(v, float)))"
done
