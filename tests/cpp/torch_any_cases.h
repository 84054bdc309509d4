#pragma once

// The ops on shapes nobody recorded, for the GPU tests of a bundle of generic entries
// (tests/aot/ops_any_calls.txt, built by torch_any_bundle_build before anything runs): a JIT
// process (torch_bundle_record, test_torch_bundle_record) runs softmax, layer_norm, rms_norm and
// sum on 100 random shapes and saves inputs and outputs; a runtime-only process
// (torch_runtime_only, test_torch_runtime_only) runs them from the bundle and compares.

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <triton_embed/ops.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "torch_bundle_cases.h"

namespace te_torch_any {

enum class Op { kSoftmax, kLayerNorm, kRmsNorm, kSum };

struct Case {
  Op op;
  int64_t rows, cols;
  at::ScalarType dtype;
  std::string name() const {
    static const char* const names[] = {"softmax", "layer_norm", "rms_norm", "sum"};
    return std::string(names[static_cast<int>(op)]) + "_" + std::to_string(rows) + "x" +
           std::to_string(cols) + (dtype == at::kHalf ? "_f16" : "_f32");
  }
  // The JIT compiled for this call the very specialisation of the bundle's generic entry: no
  // integer argument divisible by 16 or equal to 1 (the pointers are aligned in both). Then
  // the same cubin computes both outputs.
  bool same_cubin() const { return cols % 16 != 0 && cols != 1; }
  // The block size the op picks (BLOCK, or sum's BLOCK_R): its bundle entry's.
  int64_t block() const {
    int64_t b = 1;
    while (b < cols && b < 4096) b *= 2;
    return b;
  }
};

constexpr int kCases = 100;

// 100 shapes from a fixed seed: each op in turn, 1 to 64 rows, 9 to 6000 columns on a log
// scale (the ops' block sizes 16 to 4096; every third a multiple of 16), fp32 or fp16.
inline const std::vector<Case>& cases() {
  static const std::vector<Case> c = [] {
    std::vector<Case> out;
    std::mt19937_64 rng(2121);
    std::uniform_int_distribution<int64_t> rows(1, 64);
    std::uniform_real_distribution<double> log_cols(std::log(9.0), std::log(6000.0));
    for (int i = 0; i < kCases; ++i) {
      Case k;
      k.op = static_cast<Op>(i % 4);
      k.rows = rows(rng);
      k.cols = static_cast<int64_t>(std::exp(log_cols(rng)));
      // A third divisible by 16: served by the generic entries in place of the `i32 D` ones.
      if (i % 3 == 2) k.cols = std::max<int64_t>(16, k.cols / 16 * 16);
      k.dtype = (rng() & 1) != 0 ? at::kHalf : at::kFloat;
      out.push_back(k);
    }
    return out;
  }();
  return c;
}

// The case's inputs on the CPU (x, then weight and bias where the op takes them).
inline std::vector<at::Tensor> make_inputs(size_t index) {
  const Case& c = cases()[index];
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(4321 + index);
  std::vector<at::Tensor> in{at::randn({c.rows, c.cols}, gen).to(c.dtype)};
  if (c.op == Op::kLayerNorm || c.op == Op::kRmsNorm) {
    in.push_back(at::randn({c.cols}, gen).to(c.dtype));
  }
  if (c.op == Op::kLayerNorm) in.push_back(at::randn({c.cols}, gen).to(c.dtype));
  return in;
}

// triton_embed's op on the inputs.
inline at::Tensor run(const Case& c, const std::vector<at::Tensor>& in) {
  namespace ops = triton_embed::ops;
  switch (c.op) {
    case Op::kSoftmax:
      return ops::softmax(in[0]);
    case Op::kLayerNorm:
      return ops::layer_norm(in[0], {c.cols}, in[1], in[2]);
    case Op::kRmsNorm:
      return ops::rms_norm(in[0], {c.cols}, in[1]);
    case Op::kSum:
      return ops::sum(in[0], -1);
  }
  return {};
}

// torch's own op, computed in fp32 and returned in the case's dtype.
inline at::Tensor reference(const Case& c, const std::vector<at::Tensor>& in) {
  const at::Tensor x = in[0].to(at::kFloat);
  at::Tensor r;
  switch (c.op) {
    case Op::kSoftmax:
      r = at::softmax(x, -1);
      break;
    case Op::kLayerNorm:
      r = at::layer_norm(x, {c.cols}, in[1].to(at::kFloat), in[2].to(at::kFloat));
      break;
    case Op::kRmsNorm: {
      // eps defaults to the input dtype's machine epsilon, as in torch.
      const double eps =
          c.dtype == at::kHalf ? 0.0009765625 : std::numeric_limits<float>::epsilon();
      r = x * at::rsqrt((x * x).mean(-1, true) + eps) * in[1].to(at::kFloat);
      break;
    }
    case Op::kSum:
      r = x.sum(-1);
      break;
  }
  return r.to(c.dtype);
}

inline std::string bundle_path() { return te_torch_bundle::dir() + "/ops_any.teb"; }
inline std::string tensors_path(size_t index) {
  return te_torch_bundle::dir() + "/any_" + std::to_string(index) + ".pt";
}

}  // namespace te_torch_any
