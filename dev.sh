#!/usr/bin/env bash
# Sets everything up, builds, and runs the demo or the tests.
#
#   ./dev.sh demo    build and run examples/vector_add (GPU: checks the result;
#                    no GPU: compiles for an explicit target and says so) and
#                    examples/op_demo (torch ops from C++: on the GPU, or through
#                    Triton's interpreter without one)
#   ./dev.sh test    build and run every test (gtest, pytest, packaging, compile-fail)
#   ./dev.sh sanitize  build in $BUILD-asan with ASan+UBSan and run the gtest and pytest
#                    suites there; build in $BUILD-tsan with TSan and run the thread tests
#                    (the README's "Sanitizers" section says what runs and what is suppressed)
#   ./dev.sh versions  build as for test, then run the Triton-sensitive suites (ctest label
#                    triton_version) under each other supported Triton ($TRITON_VERSIONS,
#                    default: 3.6.0 3.7.1 3.8.0), each in .venv-triton-X.Y.Z: that Triton over the
#                    default environment's packages (README: "Supported versions")
#   ./dev.sh build   only set up and build
#   ./dev.sh format [FILE...]  the formatting check (.ci/check_format: clang-format and ruff on
#                    every tracked file, or on FILEs); installs ruff
#                    ($RUFF_PIN) into the Python environment when it has none
#
# TE_PRUNE=1 (CI sets it: its disk is small): `versions` removes each .venv-triton-X.Y.Z after
# its suite, `sanitize` each sanitizer build after its tests, so that at most one of them is on
# disk at a time.
#
# Python: $PYTHON if set; else python3 when it already has torch (a CUDA build), triton
# (>= 3.6), pybind11 and pytest (nothing is installed then); else a virtual environment in
# .venv with torch==2.15.0 and triton==3.9.0 (the release torch 2.15.0 pins). googletest comes from the system (apt's libgtest-dev, installed when
# missing and apt is usable). Build directory: $BUILD_DIR (default: build).
#
# Each build is configured through its preset in CMakePresets.json (`default`, `asan`, `tsan`:
# the options live there), with -B for $BUILD_DIR, this Python and Ninja when there is one.
# The build and test presets are fixed to the presets' own directories, so this script builds
# and tests by directory (`cmake --build DIR`, `ctest --test-dir DIR`), which is what they do.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build}"
TORCH_PIN="${TORCH_PIN:-torch==2.15.0}"
TRITON_PIN="${TRITON_PIN:-triton==3.9.0}"
TRITON_VERSIONS="${TRITON_VERSIONS:-3.6.0 3.7.1 3.8.0}"
RUFF_PIN="${RUFF_PIN:-ruff==0.17.6}"
CMD="${1:-}"

log() { printf '\033[1m[dev.sh]\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

has_deps() {
  "$1" - <<'PY' 2>/dev/null
import triton, pybind11, pytest, torch
assert torch.version.cuda, "torch must be a CUDA build"
major, minor = (int("".join(c for c in p if c.isdigit()) or 0) for p in triton.__version__.split(".")[:2])
assert (major, minor) >= (3, 6), triton.__version__
PY
}

setup_python() {
  if [[ -n "${PYTHON:-}" ]]; then
    has_deps "$PYTHON" || die "PYTHON=$PYTHON lacks torch (CUDA build), triton>=3.6, pybind11 or pytest"
    return
  fi
  if command -v python3 >/dev/null && has_deps "$(command -v python3)"; then
    PYTHON="$(command -v python3)"
    log "using $PYTHON (torch, triton, pybind11 and pytest already importable: installing nothing)"
    return
  fi
  local venv="$ROOT/.venv"
  if [[ ! -x "$venv/bin/python" ]] || ! has_deps "$venv/bin/python"; then
    log "creating $venv with $TORCH_PIN and $TRITON_PIN"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    # PIP_CONSTRAINT=/dev/null: a machine-wide pip constraint file (some images cap torch
    # below the release we pin) must not pick another torch than the one named here.
    PIP_CONSTRAINT=/dev/null "$venv/bin/python" -m pip install -q "$TORCH_PIN" "$TRITON_PIN" \
      pybind11 pytest numpy scikit-build-core
  fi
  PYTHON="$venv/bin/python"
}

setup_system() {
  local gtest_found=""
  for f in /usr/lib/*/cmake/GTest/GTestConfig.cmake /usr/lib/cmake/GTest/GTestConfig.cmake \
           /usr/local/lib/cmake/GTest/GTestConfig.cmake /usr/local/lib/*/cmake/GTest/GTestConfig.cmake; do
    [[ -f "$f" ]] && gtest_found="$f"
  done
  if [[ -z "$gtest_found" ]]; then
    if command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
      log "installing googletest (apt: libgtest-dev)"
      apt-get install -y -q libgtest-dev >/dev/null || {
        apt-get update -q >/dev/null && apt-get install -y -q libgtest-dev >/dev/null; }
    else
      die "googletest not found: install libgtest-dev (or GTest's CMake package)"
    fi
  fi
  # valgrind: the benchmark's CPU part counts the launch host path's instructions with it
  # (its test is skipped without valgrind).
  if ! command -v valgrind >/dev/null && command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
    log "installing valgrind (apt)"
    timeout 300 apt-get install -y -q valgrind >/dev/null 2>&1 ||
      log "valgrind not installed: the host-path instruction count will be skipped"
  fi
  CMAKE="$(command -v cmake || true)"
  [[ -z "$CMAKE" && -x "$(dirname "$PYTHON")/cmake" ]] && CMAKE="$(dirname "$PYTHON")/cmake"
  [[ -n "$CMAKE" ]] || die "cmake (>= 3.22) not found"
  CTEST="$(dirname "$CMAKE")/ctest"
  [[ -x "$CTEST" ]] || CTEST=ctest
  GENERATOR=()
  if command -v ninja >/dev/null || [[ -x "$(dirname "$PYTHON")/ninja" ]]; then
    command -v ninja >/dev/null || export PATH="$(dirname "$PYTHON"):$PATH"
    GENERATOR=(-G Ninja)
  fi
}

build() {
  setup_python
  setup_system
  if [[ -f "$BUILD/CMakeCache.txt" ]] && ! grep -Eq "^Python_EXECUTABLE:[A-Z]+=$PYTHON\$" "$BUILD/CMakeCache.txt"; then
    log "Python changed: reconfiguring $BUILD from scratch"
    rm -rf "$BUILD"
  fi
  if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
    "$CMAKE" -S "$ROOT" --preset default -B "$BUILD" "${GENERATOR[@]}" -DPython_EXECUTABLE="$PYTHON"
  fi
  "$CMAKE" --build "$BUILD" --parallel "$(nproc)"
}

# One sanitizer build and its tests: sanitize_one DIR PRESET CTEST_ARGS... The preset (asan or
# tsan in CMakePresets.json) holds the options: the sanitizers, RelWithDebInfo, no examples,
# benchmark, packaging or compile-fail tests (they gain nothing); the ThreadSanitizer build has
# no torch layer (its thread tests do not use it).
sanitize_one() {
  local dir="$1" preset="$2"
  shift 2
  if [[ -f "$dir/CMakeCache.txt" ]] && ! grep -Eq "^Python_EXECUTABLE:[A-Z]+=$PYTHON\$" "$dir/CMakeCache.txt"; then
    log "Python changed: reconfiguring $dir from scratch"
    rm -rf "$dir"
  fi
  "$CMAKE" -S "$ROOT" --preset "$preset" -B "$dir" "${GENERATOR[@]}" \
    -DPython_EXECUTABLE="$PYTHON" >/dev/null
  "$CMAKE" --build "$dir" --parallel "$(nproc)"
  # Triton's compiler is not ours, and under the sanitizers' runtime (slow unwinding on every
  # malloc of the python it runs in) a compile takes about 30x as long: the build starts from
  # the kernels the default build's tests compiled (hard links; Triton replaces a cache file, it
  # never writes into one). Our code runs as it does with a warm cache.
  if [[ -d "$BUILD/triton_cache" ]]; then
    mkdir -p "$dir/triton_cache"
    cp -a -l -n "$BUILD/triton_cache/." "$dir/triton_cache/" 2>/dev/null ||
      cp -a -n "$BUILD/triton_cache/." "$dir/triton_cache/"
  fi
  log "running the tests of preset $preset ($dir)"
  if "$CTEST" --test-dir "$dir" --output-on-failure -j "$(nproc)" "$@"; then
    prune "$dir"
    return 0
  fi
  # LeakSanitizer's exit-time check can crash in its own stop-the-world tracer (a known
  # sanitizer-runtime flake, not a leak report: google/sanitizers#1353). Only when every
  # failure of this run is that crash after a passing test are the failed tests run once
  # more; any other failure, or a crash again, fails.
  local log="$dir/Testing/Temporary/LastTest.log" failed crashed
  failed="$(grep -c '^Test Failed\.' "$log" || true)"
  crashed="$(grep -Ec '^==[0-9]+==LeakSanitizer has encountered a fatal error' "$log" || true)"
  if [[ "$failed" -gt 0 && "$failed" == "$crashed" ]] && grep -q 'Tracer caught signal' "$log"; then
    log "LeakSanitizer's tracer crashed at exit in $failed test(s) (not a leak report): running them once more"
    "$CTEST" --test-dir "$dir" --output-on-failure --rerun-failed "$@"
    prune "$dir"
  else
    return 1
  fi
}

# prune PATH: with TE_PRUNE=1, removes PATH (a build or environment whose tests have passed).
prune() {
  if [[ "${TE_PRUNE:-0}" == 1 ]]; then
    log "TE_PRUNE=1: removing $1"
    rm -rf "$1"
  fi
}

# version_env X.Y.Z: prints the Python of .venv-triton-X.Y.Z, made when missing: a venv of the
# same base interpreter (the library links its libpython) holding only triton==X.Y.Z, whose
# site-packages come before the default environment's (a .pth file adds those after its own),
# so torch, pybind11, numpy and pytest are the default environment's and Triton is X.Y.Z.
version_env() {
  local v="$1" env="$ROOT/.venv-triton-$v"
  if ! "$env/bin/python" -c "import sys, triton; sys.exit(triton.__version__ != '$v')" 2>/dev/null; then
    log "creating $env with triton==$v"
    rm -rf "$env"
    "$PYTHON" -m venv "$env" >&2
    PIP_CONSTRAINT=/dev/null "$env/bin/python" -m pip install -q --no-deps "triton==$v" >&2
    "$PYTHON" -c 'import site; print("\n".join(site.getsitepackages()))' \
      >"$("$env/bin/python" -c 'import site; print(site.getsitepackages()[0])')/te_default_env.pth"
  fi
  echo "$env/bin/python"
}

case "$CMD" in
  demo)
    build
    log "running the demo"
    "$BUILD/examples/vector_add"
    "$BUILD/examples/op_demo"
    ;;
  test)
    build
    log "running the tests"
    "$CTEST" --test-dir "$BUILD" --output-on-failure -j "$(nproc)"
    ;;
  sanitize)
    setup_python
    setup_system
    sanitize_one "$BUILD-asan" asan
    sanitize_one "$BUILD-tsan" tsan -L threads   # the tsan test preset's filter
    ;;
  versions)
    build
    for v in $TRITON_VERSIONS; do
      py="$(version_env "$v")"
      log "running the Triton-sensitive tests with triton $v ($py)"
      TRITON_EMBED_PYTHON="$py" TE_EXPECT_TRITON="$v" "$CTEST" --test-dir "$BUILD" --output-on-failure -j "$(nproc)" \
        -L triton_version
      prune "$(dirname "$(dirname "$py")")"
    done
    ;;
  build)
    build
    ;;
  format)
    setup_python
    if ! "$PYTHON" -m ruff --version >/dev/null 2>&1 && ! command -v ruff >/dev/null; then
      log "installing $RUFF_PIN into $PYTHON's environment"
      PIP_CONSTRAINT=/dev/null "$PYTHON" -m pip install -q "$RUFF_PIN"
    fi
    PYTHON="$PYTHON" "$ROOT/.ci/check_format" "${@:2}"
    ;;
  *)
    echo "usage: $0 demo|test|sanitize|versions|build|format" >&2
    exit 2
    ;;
esac
