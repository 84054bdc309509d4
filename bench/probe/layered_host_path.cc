#include <triton_embed/jit.h>

#include <chrono>
#include <cstdio>

#include "testing/testing.h"
namespace te = triton_embed;
using namespace te::literals;
float* x = reinterpret_cast<float*>(uintptr_t{0x10000});
float* y = reinterpret_cast<float*>(uintptr_t{0x20000});
float* o = reinterpret_cast<float*>(uintptr_t{0x30000});
__attribute__((noinline)) void loop_pos(const te::JitFunction& f, long n) {
  uint64_t s[16];
  for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, x, y, o, 4096, 1024);
}
__attribute__((noinline)) void loop_named(const te::JitFunction& f, long n) {
  uint64_t s[16];
  for (long i = 0; i < n; ++i)
    te::detail::testing::dry_run(f, s, x, y, o, "n_elements"_a = 4096, "BLOCK"_a = 1024);
}
__attribute__((noinline)) void loop_heur(const te::JitFunction& f, long n) {
  uint64_t s[16];
  for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, x, y, o, 4096, 1024);
}
__attribute__((noinline)) void loop_tuned(const te::JitFunction& f, long n) {
  uint64_t s[16];
  for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, x, o, 4096);
}
float* P(int i) { return reinterpret_cast<float*>(uintptr_t{0x100000} * (i + 1)); }
#define P8(b) P(b), P(b + 1), P(b + 2), P(b + 3), P(b + 4), P(b + 5), P(b + 6), P(b + 7)
__attribute__((noinline)) void loop_args32(const te::JitFunction& f, long n) {
  uint64_t s[40];
  for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, P8(0), P8(8), P8(16), P8(24));
}
__attribute__((noinline)) void loop_args1(const te::JitFunction& f, long n) {
  uint64_t s[40];
  for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, P(0));
}
template <class F>
void time(const char* what, F f, long n) {
  f(100);
  auto t0 = std::chrono::steady_clock::now();
  f(n);
  std::printf(
      "%s: %.1f ns\n", what,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e9 / n);
}
int main(int argc, char** argv) {
  te::RuntimeOptions opt;
  opt.python_paths.push_back(TE_ROOT "/bench");
  opt.python_paths.push_back(TE_ROOT "/tests/kernels");
  te::initialize(opt);
  te::set_target(te::Target{"cuda", 90, 32});
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  te::JitFunction add("pykernels.vector", "add_kernel"),
      heur("bench_kernels", "add_heuristics_kernel"), tuned("te_tune_kernels", "fake_tuned_kernel");
  {
    uint64_t s[16];
    te::detail::testing::dry_run(add, s, x, y, o, 4096, 1024);
    te::detail::testing::dry_run(heur, s, x, y, o, 4096, 1024);
    te::detail::testing::dry_run(tuned, s, x, o, 4096);
  }
  te::JitFunction a32("bench_kernels", "args_32"), a1("bench_kernels", "args_1");
  {
    uint64_t s[40];
    te::detail::testing::dry_run(a32, s, P8(0), P8(8), P8(16), P8(24));
    te::detail::testing::dry_run(a1, s, P(0));
  }
  time(
      "args32", [&](long k) { loop_args32(a32, k); }, n);
  time(
      "args1", [&](long k) { loop_args1(a1, k); }, n);
  time(
      "positional", [&](long k) { loop_pos(add, k); }, n);
  time(
      "named", [&](long k) { loop_named(add, k); }, n);
  time(
      "heuristics", [&](long k) { loop_heur(heur, k); }, n);
  time(
      "autotune", [&](long k) { loop_tuned(tuned, k); }, n);
}
