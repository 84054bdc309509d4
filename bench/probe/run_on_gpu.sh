set -uo pipefail
export PYTHONUNBUFFERED=1
BUILD_DIR=/tmp/build ./dev.sh build > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
PYLIB=$(python3 -c "import sysconfig;print(sysconfig.get_config_var('LIBDIR'))")
PYVER=$(python3 -c "import sys;print(f'{sys.version_info[0]}.{sys.version_info[1]}')")
g++ -O2 -std=c++17 -DTE_ROOT="\"$PWD\"" -Iinclude bench/probe/layered_host_path.cc -o /tmp/hl -L/tmp/build -ltriton_embed -L$PYLIB -lpython$PYVER -Wl,-rpath,/tmp/build:$PYLIB && TRITON_EMBED_PYTHON=$(which python3) /tmp/hl 2000000 | tee $OUT/hl.txt
python3 bench/run.py --build /tmp/build --out $OUT/bench > $OUT/bench.txt 2>&1; tail -22 $OUT/bench.txt
