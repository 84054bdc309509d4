#!/usr/bin/env bash
# The GPU test suites under NVIDIA's compute-sanitizer, on the GPU machine:
#
#   tests/gpu/compute_sanitizer.sh OUT_DIR
#
# Builds in $BUILD_DIR (default /tmp/build) with `./dev.sh build`, runs test_gpu, test_torch and
# test_autotune once without a sanitizer (which also fills the Triton cache, so the sanitized
# runs do not compile), then under memcheck, and test_gpu under racecheck (shared memory
# hazards; the other suites' kernels are test_gpu's or the ops'). Writes one log per run to
# OUT_DIR and OUT_DIR/summary.txt: each run's exit status, compute-sanitizer's error summary
# and every CUDA API error it reported. A clean run has no errors but the API errors a test
# provokes on purpose ($PROVOKED: test_gpu's Gpu.ClustersPdlAndCooperativeLaunches asks for a
# cooperative grid too large to be co-resident; test_faults' FaultsGpu loads a cubin built for
# another architecture, repeatedly, and asks the default scratch allocator for more memory
# than the device has; each checks the CudaError).
#
# $COMPUTE_SANITIZER overrides /usr/local/cuda/bin/compute-sanitizer; $TESTS the suites
# (default "test_gpu test_torch test_autotune test_tma test_faults test_soak test_reload_soak").
# The soak tests run 20,000 launches here (TRITON_EMBED_SOAK_LAUNCHES,
# TRITON_EMBED_TORCH_SOAK_LAUNCHES) and check device memory but not the resident size, which the
# injected tool's own records grow. test_reload_soak (a runtime-only program, through the tests'
# CUDA shim) reloads the bundle bundle_record writes (recorded first when missing) 2000 times
# under memcheck (about 2 minutes on an H200) and 20 times under racecheck, which it also runs
# under (each cycle there took about 2 s on an H200, with four threads' kernels under
# racecheck); TRITON_EMBED_RELOAD_CYCLES overrides both. Exits 1 when a test fails or a run reports an error that was not
# provoked on purpose.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:?usage: $0 OUT_DIR}"
BUILD="${BUILD_DIR:-/tmp/build}"
CS="${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}"
TESTS="${TESTS:-test_gpu test_torch test_autotune test_tma test_faults test_soak test_reload_soak}"
PROVOKED="${PROVOKED:-CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE .* on CUDA API call to cuLaunchKernelEx|CUDA_ERROR_NO_BINARY_FOR_GPU .* on CUDA API call to cuModuleLoadData|CUDA_ERROR_OUT_OF_MEMORY .* on CUDA API call to cuMemAllocAsync}"
export TRITON_EMBED_SOAK_LAUNCHES="${TRITON_EMBED_SOAK_LAUNCHES:-20000}"
export TRITON_EMBED_TORCH_SOAK_LAUNCHES="${TRITON_EMBED_TORCH_SOAK_LAUNCHES:-20000}"
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
[[ -x "$CS" ]] || { echo "compute-sanitizer not found at $CS" >&2; exit 2; }

echo "building in $BUILD (log: $OUT/build.log)"
if ! BUILD_DIR="$BUILD" "$ROOT/dev.sh" build >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log" >&2
  exit 2
fi

# The tests' environment, as tests/CMakeLists.txt sets it (TE_TEST_ENV). Without torch's
# caching allocator every tensor is its own cudaMalloc, so memcheck sees accesses past one.
export TRITON_CACHE_DIR="$BUILD/triton_cache"
export TRITON_EMBED_PYTHONPATH="$ROOT/tests/kernels"
export PYTHONDONTWRITEBYTECODE=1
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
export TE_BUNDLE_DIR="$BUILD/tests/bundles"
if [[ " $TESTS " == *" test_reload_soak "* && ! -f "$TE_BUNDLE_DIR/record.teb" ]]; then
  ctest --test-dir "$BUILD" -R '^bundle_record$' >"$OUT/bundle_record.log" 2>&1 ||
    { echo "recording the bundle test_reload_soak loads failed: $OUT/bundle_record.log" >&2; exit 2; }
fi

failed=0
summary="$OUT/summary.txt"
{
  echo "compute-sanitizer: $("$CS" --version | grep -i version | head -1)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
  echo
} >"$summary"

# run NAME TOOL EXE: TOOL is plain (no sanitizer), memcheck or racecheck.
run() {
  local name="$1" tool="$2" exe="$BUILD/tests/$3" log="$OUT/$1.log" rc=0
  local -a env=()
  if [[ "$3" == test_reload_soak ]]; then  # runtime-only: the driver through the tests' shim
    local cycles=2000
    [[ "$tool" == racecheck ]] && cycles=20
    env=(env "TRITON_EMBED_LIBCUDA=$BUILD/tests/libte_cuda_shim.so"
         "TRITON_EMBED_RELOAD_CYCLES=${TRITON_EMBED_RELOAD_CYCLES:-$cycles}")
  fi
  if [[ ! -x "$exe" ]]; then
    echo "$name: $exe not built" | tee -a "$summary"
    failed=1
    return
  fi
  echo "running $name"
  local start=$SECONDS
  if [[ "$tool" == plain ]]; then
    timeout 1200 "${env[@]}" "$exe" >"$log" 2>&1 || rc=$?
  else
    timeout 1800 "${env[@]}" "$CS" --tool "$tool" --error-exitcode 86 --print-limit 100000 "$exe" >"$log" 2>&1 || rc=$?
  fi
  # compute-sanitizer exits 86 on errors: a pass when every error is one provoked on purpose
  # and every test passed.
  local verdict=ok
  if [[ $rc -eq 86 ]]; then
    local errors provoked
    errors="$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log")"
    provoked="$(grep -cE "Program hit ($PROVOKED)" "$log")"
    if [[ "$errors" == "$provoked" ]] && grep -q "^\[  PASSED  \]" "$log" &&
       ! grep -q "^\[  FAILED  \]" "$log"; then
      verdict="ok ($provoked error(s), all provoked on purpose)"
    else
      verdict=FAILED
    fi
  elif [[ $rc -ne 0 ]]; then
    verdict=FAILED
  fi
  {
    echo "== $name: exit $rc, $((SECONDS - start)) s: $verdict"
    grep -E "^\[  (PASSED|FAILED) |tests? ran\.|^reload soak|^capturing on" "$log" || true
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" || true
    # API errors, each with the call and result (the same one from many launches, once).
    grep -E "Program hit .* on CUDA API call to" "$log" | sed 's/^=* *//' | sort | uniq -c || true
    echo
  } >>"$summary"
  [[ "$verdict" == ok* ]] || failed=1
}

for t in $TESTS; do run "plain_$t" plain "$t"; done
for t in $TESTS; do run "memcheck_$t" memcheck "$t"; done
[[ " $TESTS " == *" test_gpu "* ]] && run racecheck_test_gpu racecheck test_gpu
[[ " $TESTS " == *" test_reload_soak "* ]] && run racecheck_test_reload_soak racecheck test_reload_soak

cat "$summary"
exit "$failed"
