#pragma once

// The calls the bundle tests make, compile-only for cuda:90: one process records them
// (test_bundle_jit), others load the bundle (test_bundle_jit again, and test_runtime_only
// with no JIT layer) and must resolve the same calls to the same kernels. tests/aot/calls.txt
// lists the same calls for `triton-embed-bundle build`, which compiles them ahead of time
// (for kAotTargets) into aot_bundle_path().

#include <triton_embed/jit.h>
#include <triton_embed/named.h>
#include <triton_embed/tensor_descriptor.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

namespace te_bundle {

namespace te = triton_embed;

// 16-byte aligned fake device addresses (compile-only: never dereferenced), and an fp16
// pointer that is not.
inline float* const kX = reinterpret_cast<float*>(uintptr_t{0x10000});
inline float* const kY = reinterpret_cast<float*>(uintptr_t{0x20000});
inline float* const kOut = reinterpret_cast<float*>(uintptr_t{0x30000});
inline const te::Pointer kHalf(uintptr_t{0x40008}, te::DType::fp16);

// The recorded calls of pykernels.vector.add_kernel, by name.
inline const te::CompiledKernel& compile_call(const te::JitFunction& add,
                                              const std::string& which) {
  if (which == "aligned") return add.compile(kX, kY, kOut, 4096, 1024);
  if (which == "n_not_div16") return add.compile(kX, kY, kOut, 1000, 1024);
  if (which == "fp16_unaligned") return add.compile(kHalf, kHalf, kHalf, 4096, 1024);
  if (which == "num_warps_8") {
    return add.with_options(te::Options().num_warps(8)).compile(kX, kY, kOut, 4096, 1024);
  }
  std::abort();
}
inline const char* const kRecorded[] = {"aligned", "n_not_div16", "fp16_unaligned", "num_warps_8"};

// The recorded calls of wrapped kernels (te_tune_kernels: autotuned with fake timings, so
// tuning needs no GPU), by name: autotune(heuristics(jit)), heuristics(autotune(jit)), a
// heuristic alone, a tuned kernel given a constexpr by name, and the kernels of the argument
// errors (argument_error_cases.h), so that the bundle holds their parameter tables.
struct WrappedCall {
  const char* which;
  const char* kernel;
};
inline const WrappedCall kWrapped[] = {
    {"heur_tuned_1000", "fake_heur_tuned_kernel"},
    {"heur_tuned_1024", "fake_heur_tuned_kernel"},
    {"tuned_heur_1000", "fake_tuned_heur_kernel"},
    {"tuned_heur_1024", "fake_tuned_heur_kernel"},
    {"counted_300", "counted_heur_kernel"},
    {"counted_2048", "counted_heur_kernel"},
    {"tuned_neg", "fake_tuned_kernel"},
    {"tuned_mode_neg", "fake_tuned_mode_kernel"},
    {"heur_mode_neg", "heur_mode_kernel"},
    {"expr_1000", "expr_heur_kernel"},
};
inline const te::CompiledKernel& compile_wrapped(const te::JitFunction& k,
                                                 const std::string& which) {
  using namespace triton_embed::literals;
  if (which == "heur_tuned_1000" || which == "tuned_heur_1000") return k.compile(kX, kOut, 1000);
  if (which == "heur_tuned_1024" || which == "tuned_heur_1024") return k.compile(kX, kOut, 1024);
  if (which == "counted_300") return k.compile(kX, kOut, 300);
  if (which == "expr_1000") return k.compile(kX, kOut, 1000);
  if (which == "counted_2048") return k.compile(kX, kOut, 2048);
  if (which == "tuned_neg") return k.compile(kX, kOut, 4000, "ACT"_a = "neg");
  if (which == "tuned_mode_neg" || which == "heur_mode_neg")
    return k.compile(kX, kOut, 1000, "neg");
  std::abort();
}

// The recorded calls of te_tma_kernels' autotuned kernels whose configs have pre-hooks (fake
// timings: tuning needs no GPU): one whose hook the runtime applies (the chosen config's block
// shapes decide the kernel compiled), one whose hook only Python runs (descriptors given the
// chosen config's block shapes). Descriptors over fake addresses, M = 512, N = 256.
struct HookedCall {
  const char* which;
  const char* kernel;
  int64_t block;  // the block the caller's descriptors have
};
inline const HookedCall kHooked[] = {
    {"hooked_subtile", "fake_tuned_subtile_scale", 1},
    {"hooked_python", "fake_tuned_python_hook_scale", 64},
};
inline te::TensorDescriptor hooked_desc(uint64_t base, int64_t block) {
  return te::TensorDescriptor(base, te::DType::fp32, {512, 256}, {256, 1}, {block, block});
}
inline const te::CompiledKernel& compile_hooked(const te::JitFunction& k, const HookedCall& c) {
  const te::TensorDescriptor src = hooked_desc(0x10000, c.block),
                             dst = hooked_desc(0x30000, c.block);
  return k.compile(src, dst, 512, 256, 2.0);
}

// The call of pykernels.vector.axpy_kernel tests/aot/calls.txt lists: a float, a constexpr by
// name and an option.
inline const te::Options kAxpyOptions = te::Options().num_warps(2);
inline const te::CompiledKernel& compile_axpy(const te::JitFunction& axpy) {
  using namespace te::literals;
  return axpy.with_options(kAxpyOptions).compile(kX, kY, kOut, 0.5f, 4096, "BLOCK"_a = 512);
}

// The targets bundle_aot_build compiles tests/aot/calls.txt for.
inline const char* const kAotTargets[] = {"cuda:80", "cuda:90", "cuda:100"};

// Where the recording process leaves the bundle and the hashes it compiled.
inline std::string dir() {
  const char* d = std::getenv("TE_BUNDLE_DIR");
  return d != nullptr ? d : "/tmp";
}
inline std::string bundle_path() { return dir() + "/record.teb"; }
inline std::string hashes_path() { return dir() + "/record_hashes.txt"; }
// The wrapped calls' hashes, and "best:KERNEL:N str(config)" lines for the tuned choices.
inline std::string wrapped_hashes_path() { return dir() + "/record_wrapped.txt"; }
// What bundle_aot_build builds from tests/aot/calls.txt and tests/aot/te_calls.txt.
inline std::string aot_bundle_path() { return dir() + "/aot_build/aot.teb"; }
inline std::string aot_extra_bundle_path() { return dir() + "/aot_build/te_calls.teb"; }

inline std::map<std::string, std::string> read_hashes(const std::string& path = hashes_path()) {
  std::map<std::string, std::string> m;
  std::ifstream f(path);
  std::string which, value;
  while (f >> which && std::getline(f >> std::ws, value)) m[which] = value;
  return m;
}

}  // namespace te_bundle
