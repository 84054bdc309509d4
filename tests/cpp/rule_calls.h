#pragma once

// Tuning keys nobody tuned (issue 21): te_tune_kernels' rule_*_kernel, autotuned with fake
// timings that depend on n (the best BLOCK is the config's nearest to n), recorded at a few n
// with a tuning rule each, compile-only for cuda:90, by one process (test_bundle_jit's
// BundleJitRules.Record, CTest bundle_record); a program with no Python resolves other n by
// the rules (test_runtime_only's RuntimeOnlyRules), or refuses them with
// TRITON_EMBED_BUNDLE_STRICT=1 (runtime_only_strict).

#include <triton_embed/jit.h>

#include <string>
#include <vector>

#include "bundle_calls.h"

namespace te_rules {

namespace te = triton_embed;

struct RuleKernel {
  const char* kernel;
  const char* rule;  // nullptr: none declared (exact)
  std::vector<int> tuned;
};
inline const RuleKernel kRuleKernels[] = {
    {"rule_nearest_kernel", "nearest", {16, 256, 4096}},
    {"rule_pow2_kernel", "bucket:pow2", {16, 128, 256, 4096}},
    {"rule_bounds_kernel", "bucket:16,256,4096", {16, 256, 4096}},
    {"rule_exact_kernel", nullptr, {16, 256, 4096}},
    {"rule_2d_kernel", "n=nearest", {16, 256, 4096}},
};

// The call every test makes: m = 8, MODE "mul" unless given.
inline const te::CompiledKernel& compile(const te::JitFunction& k, int n, int m = 8,
                                         const char* mode = "mul") {
  return k.compile(te_bundle::kX, te_bundle::kOut, n, m, std::string(mode));
}
inline const te::TuningResult* tuning_result(const te::JitFunction& k, int n, int m = 8,
                                             const char* mode = "mul") {
  return k.tuning_result(te_bundle::kX, te_bundle::kOut, n, m, std::string(mode));
}

inline std::string bundle_path() { return te_bundle::dir() + "/rules.teb"; }
// "KERNEL:N HASH" and "best:KERNEL:N str(config)" per recorded key.
inline std::string hashes_path() { return te_bundle::dir() + "/rules_hashes.txt"; }

}  // namespace te_rules
