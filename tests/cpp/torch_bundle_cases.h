#pragma once

// The op calls the torch bundle tests make on a GPU: a JIT process (test_torch_bundle_record,
// linked to triton_embed::ops) runs them on fixed-seed inputs, saves inputs and outputs and
// writes the bundle of what it compiled; a runtime-only process (test_torch_runtime_only,
// linked to triton_embed::ops_runtime) loads the bundle and the inputs, runs the same calls
// and must get the same bits.

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <triton_embed/ops.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace te_torch_bundle {

struct Case {
  std::string name;
  std::vector<std::vector<int64_t>> shapes;  // of the inputs
  at::ScalarType dtype;
  std::function<at::Tensor(const std::vector<at::Tensor>&)> run;
};

inline const std::vector<Case>& cases() {
  namespace ops = triton_embed::ops;
  using V = std::vector<at::Tensor>;
  static const std::vector<Case> c = {
      {"add_f32",
       {{4096}, {4096}},
       at::kFloat,
       [](const V& in) { return ops::add(in[0], in[1], 0.5); }},
      {"add_f16_broadcast",
       {{33, 65}, {65}},
       at::kHalf,
       [](const V& in) { return ops::add(in[0], in[1]); }},
      {"softmax_f32", {{4, 1000}}, at::kFloat, [](const V& in) { return ops::softmax(in[0]); }},
      {"softmax_bf16", {{7, 129}}, at::kBFloat16, [](const V& in) { return ops::softmax(in[0]); }},
      {"layer_norm_f32",
       {{8, 512}, {512}, {512}},
       at::kFloat,
       [](const V& in) { return ops::layer_norm(in[0], {512}, in[1], in[2]); }},
      {"layer_norm_f16",
       {{3, 100}},
       at::kHalf,
       [](const V& in) { return ops::layer_norm(in[0], {100}); }},
  };
  return c;
}

// The case's inputs, on the CPU: normal values from a generator seeded by the case's index.
inline std::vector<at::Tensor> make_inputs(size_t index) {
  const Case& c = cases()[index];
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(1234 + index);
  std::vector<at::Tensor> in;
  for (const auto& shape : c.shapes) in.push_back(at::randn(shape, gen).to(c.dtype));
  return in;
}

// Where the recording process leaves the bundle and, per case, its inputs and output
// (torch::save of the inputs followed by the output).
inline std::string dir() {
  const char* d = std::getenv("TE_TORCH_BUNDLE_DIR");
  return d != nullptr ? d : "/tmp";
}
inline std::string bundle_path() { return dir() + "/ops.teb"; }
inline std::string tensors_path(const Case& c) { return dir() + "/" + c.name + ".pt"; }

// Same dtype, shape and bytes (NaNs and signed zeros included).
inline bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const at::Tensor ca = a.contiguous().cpu(), cb = b.contiguous().cpu();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

}  // namespace te_torch_bundle
