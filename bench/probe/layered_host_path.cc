#include <triton_embed/detail/testing.h>
#include <triton_embed/jit.h>
#include <chrono>
#include <cstdio>
namespace te = triton_embed;
using namespace te::literals;
float* x = reinterpret_cast<float*>(uintptr_t{0x10000});
float* y = reinterpret_cast<float*>(uintptr_t{0x20000});
float* o = reinterpret_cast<float*>(uintptr_t{0x30000});
__attribute__((noinline)) void loop_pos(const te::JitFunction& f, long n) { uint64_t s[16]; for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, x, y, o, 4096, 1024); }
__attribute__((noinline)) void loop_named(const te::JitFunction& f, long n) { uint64_t s[16]; for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, x, y, o, "n_elements"_a = 4096, "BLOCK"_a = 1024); }
__attribute__((noinline)) void loop_heur(const te::JitFunction& f, long n) { uint64_t s[16]; for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, x, y, o, 4096, 1024); }
__attribute__((noinline)) void loop_tuned(const te::JitFunction& f, long n) { uint64_t s[16]; for (long i = 0; i < n; ++i) te::detail::testing::dry_run(f, s, x, o, 4096); }
template <class F> void time(const char* what, F f, long n) {
  f(100);
  auto t0 = std::chrono::steady_clock::now(); f(n);
  std::printf("%s: %.1f ns\n", what, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e9 / n);
}
int main(int argc, char** argv) {
  te::RuntimeOptions opt; opt.python_paths.push_back(TE_ROOT "/bench"); opt.python_paths.push_back(TE_ROOT "/tests/kernels"); te::initialize(opt);
  te::set_target(te::Target{"cuda", 90, 32});
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  te::JitFunction add("pykernels.vector", "add_kernel"), heur("bench_kernels", "add_heuristics_kernel"), tuned("te_tune_kernels", "fake_tuned_kernel");
  { uint64_t s[16]; te::detail::testing::dry_run(add, s, x, y, o, 4096, 1024); te::detail::testing::dry_run(heur, s, x, y, o, 4096, 1024); te::detail::testing::dry_run(tuned, s, x, o, 4096); }
  time("positional", [&](long k) { loop_pos(add, k); }, n);
  time("named", [&](long k) { loop_named(add, k); }, n);
  time("heuristics", [&](long k) { loop_heur(heur, k); }, n);
  time("autotune", [&](long k) { loop_tuned(tuned, k); }, n);
}
