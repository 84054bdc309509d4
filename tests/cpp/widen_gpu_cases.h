#pragma once

// Record once, serve every shape, on the GPU (issue 37): kernels of the four patterns that kept
// recorded bundles from serving sizes nobody ran, recorded at two shapes each and served at more
// than twenty others by a program with no Python (test_widen_gpu.cc says which process does
// what). Each case's inputs come from a seed of its own, so that every process makes the same.
//
//   rows       te_widen_kernels.rows_kernel: integer arguments whose specialisation changes
//              with the size (n_rows "D", 1, neither)
//   rope       te_widen_kernels.rope_kernel: the batch size a constexpr (BATCH)
//   mm         te_widen_kernels.mm_kernel: autotuned on M, recorded without a rule (widen gives
//              M=nearest), each new M served by a chosen config's entry
//   attn_desc  pykernels.attention_tma.attn_fwd_kernel with host tensor descriptors: autotuned
//   attn_ptr   on N_CTX (rule declared when recording), its configs' pre-hook of the tutorial's
//              form (`if not isinstance(nargs["desc_q"], TensorDescriptor): return`), which the
//              runtime applies; attn_ptr passes the tensors (the kernel makes the descriptors)

#include <ATen/ATen.h>
#include <triton_embed/tensor_descriptor.h>
#include <triton_embed/torch.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace te_widen_gpu {

namespace te = triton_embed;

constexpr int64_t kHidden = 1024;  // rows: n_cols; mm: N and K are 256
constexpr int64_t kMmNK = 256, kHeads = 4, kHeadDim = 64, kZH = 8;

struct Case {
  std::string pattern;
  int64_t a = 0;  // rows: n_rows; rope: BATCH; mm: M; attn: N_CTX
  int64_t b = 0;  // rope: seq_len
  std::string id() const {
    return pattern + "_" + std::to_string(a) + (b ? "_" + std::to_string(b) : "");
  }
};

inline std::vector<Case> recorded_cases() {
  return {{"rows", 4096},    {"rows", 64},     {"rope", 2, 128},   {"rope", 4, 64},
          {"mm", 16},        {"mm", 256},      {"attn_desc", 128}, {"attn_desc", 512},
          {"attn_ptr", 128}, {"attn_ptr", 512}};
}

inline std::vector<Case> served_cases() {
  std::vector<Case> out;
  for (int64_t n : {1,   2,   3,   7,   15,   16,   17,   31,   33,   63,   100, 127,
                    129, 255, 257, 511, 1000, 1023, 1025, 2047, 4095, 4097, 8191}) {
    out.push_back({"rows", n});
  }
  for (int64_t batch : {1, 3, 5, 8}) {
    for (int64_t seq : {1, 5, 17, 100, 256, 1000}) out.push_back({"rope", batch, seq});
  }
  for (int64_t m : {1,   2,   5,   15,  17,   33,   64,   65,   100,  127, 128,
                    200, 255, 257, 500, 1000, 1024, 1025, 2000, 4096, 4099}) {
    out.push_back({"mm", m});
  }
  for (const char* form : {"attn_desc", "attn_ptr"}) {
    for (int64_t n : {1,   7,   16,  17,  31,  64,   65,   100,  129,  200,
                      256, 300, 511, 513, 777, 1000, 1024, 1500, 2000, 2048}) {
      out.push_back({form, n});
    }
  }
  return out;
}

// The case's inputs (from its own seed) and output buffer.
struct Inputs {
  std::vector<at::Tensor> t;
};

inline Inputs make_inputs(const Case& c) {
  at::manual_seed(static_cast<uint64_t>(std::hash<std::string>()(c.id()) & 0x7fffffff));
  const auto f32 = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  const auto f16 = at::TensorOptions().device(at::kCUDA).dtype(at::kHalf);
  Inputs in;
  if (c.pattern == "rows") {
    in.t = {at::randn({c.a, kHidden}, f32), 1 + 0.1 * at::randn({kHidden}, f32),
            at::empty({c.a, kHidden}, f32)};
  } else if (c.pattern == "rope") {
    const at::Tensor ang =
        at::arange(c.b, f32).unsqueeze(1) * 0.01 * at::arange(kHeadDim / 2, f32).unsqueeze(0);
    in.t = {at::randn({c.a, c.b, kHeads, kHeadDim}, f16), at::cos(ang).contiguous(),
            at::sin(ang).contiguous(), at::empty({c.a, c.b, kHeads, kHeadDim}, f16)};
  } else if (c.pattern == "mm") {
    in.t = {at::randn({c.a, kMmNK}, f16), at::randn({kMmNK, kMmNK}, f16) / 16,
            at::empty({c.a, kMmNK}, f16)};
  } else {
    for (int i = 0; i < 3; ++i) in.t.push_back(at::randn({kZH, c.a, kHeadDim}, f16));
    in.t.push_back(at::empty({kZH, c.a, kHeadDim}, f16));
  }
  return in;
}

// What torch computes, and how near the kernel's output must be (relative to its scale).
inline at::Tensor reference(const Case& c, const Inputs& in) {
  if (c.pattern == "rows") {
    const at::Tensor& x = in.t[0];
    return x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * in.t[1];
  }
  if (c.pattern == "rope") {
    const at::Tensor x = in.t[0].to(at::kFloat);
    const at::Tensor co = in.t[1].view({1, c.b, 1, kHeadDim / 2});
    const at::Tensor si = in.t[2].view({1, c.b, 1, kHeadDim / 2});
    const at::Tensor lo = x.slice(-1, 0, kHeadDim / 2), hi = x.slice(-1, kHeadDim / 2);
    return at::cat({lo * co - hi * si, hi * co + lo * si}, -1);
  }
  if (c.pattern == "mm") return at::matmul(in.t[0].to(at::kFloat), in.t[1].to(at::kFloat));
  const at::Tensor q = in.t[0].to(at::kFloat), k = in.t[1].to(at::kFloat);
  const at::Tensor p =
      at::softmax(at::matmul(q, k.transpose(1, 2)) / std::sqrt(double(kHeadDim)), -1);
  return at::matmul(p, in.t[2].to(at::kFloat));
}
inline double tolerance(const Case& c) { return c.pattern == "rows" ? 1e-5 : 1e-2; }

inline const at::Tensor& output(const Inputs& in) { return in.t.back(); }

// The kernel a case launches.
inline te::JitFunction kernel_of(const Case& c) {
  if (c.pattern == "rows") return te::JitFunction("te_widen_kernels", "rows_kernel");
  if (c.pattern == "rope") return te::JitFunction("te_widen_kernels", "rope_kernel");
  if (c.pattern == "mm") return te::JitFunction("te_widen_kernels", "mm_kernel");
  return te::JitFunction("pykernels.attention_tma", "attn_fwd_kernel");
}

// The attention's operands: host descriptors (any block shape: the config's pre-hook sets
// theirs), or the tensors. Calls f with them.
template <class F>
void with_attention_operands(const Case& c, const Inputs& in, F&& f) {
  if (c.pattern == "attn_ptr") {
    f(in.t[0], in.t[1], in.t[2], in.t[3]);
    return;
  }
  auto d = [](const at::Tensor& t) {
    return te::TensorDescriptor::from_tensor(t, {1, 16, kHeadDim});
  };
  f(d(in.t[0]), d(in.t[1]), d(in.t[2]), d(in.t[3]));
}

// The case's call as an application makes it (the wrapped kernel, its grid from the chosen
// config): calls f(kernel, grid, args...).
template <class F>
void call(const Case& c, const Inputs& in, F&& f) {
  const te::JitFunction k = kernel_of(c);
  const std::vector<at::Tensor>& t = in.t;
  if (c.pattern == "rows") {
    f(k, te::Grid(c.a), t[0], t[1], t[2], c.a, kHidden, kHidden, 1e-6f, int64_t{1024});
  } else if (c.pattern == "rope") {
    f(k, te::Grid(c.b), t[0], t[1], t[2], t[3], c.b, c.a, kHeads, kHeadDim, int64_t{4});
  } else if (c.pattern == "mm") {
    auto grid = [](const te::Meta& m) {
      return te::Grid(te::cdiv(m["M"], m["BLOCK_M"]), te::cdiv(m["N"], m["BLOCK_N"]));
    };
    f(k, grid, t[0], t[1], t[2], c.a, kMmNK, kMmNK, kMmNK, kMmNK, kMmNK);
  } else {
    auto grid = [](const te::Meta& m) {
      return te::Grid(te::cdiv(m["N_CTX"], m["BLOCK_M"]), m["ZH"]);
    };
    with_attention_operands(
        c, in, [&](const auto& q, const auto& kk, const auto& v, const auto& o) {
          f(k, grid, q, kk, v, o, 1.0f / std::sqrt(float(kHeadDim)), kZH, c.a, kHeadDim);
        });
  }
}

// The inner kernel's call at a tuned config (its meta-parameters by name), as the autotuner
// makes it once it chose (descriptors with the block shapes the config's pre-hook sets), or the
// plain kernel's call: calls f(grid, args...).
template <class F>
void inner_call(const Case& c, const Inputs& in,
                const std::vector<std::pair<std::string, int64_t>>& cfg, F&& f) {
  auto meta = [&](const char* name) {
    for (const auto& [n, v] : cfg) {
      if (n == name) return v;
    }
    return int64_t{0};
  };
  const std::vector<at::Tensor>& t = in.t;
  if (c.pattern == "rows") {
    f(te::Grid(c.a), t[0], t[1], t[2], c.a, kHidden, kHidden, 1e-6f, int64_t{1024});
  } else if (c.pattern == "rope") {
    f(te::Grid(c.b), t[0], t[1], t[2], t[3], c.b, c.a, kHeads, kHeadDim, int64_t{4});
  } else if (c.pattern == "mm") {
    const int64_t bm = meta("BLOCK_M"), bn = meta("BLOCK_N"), bk = meta("BLOCK_K");
    f(te::Grid(te::cdiv(c.a, bm), te::cdiv(kMmNK, bn)), t[0], t[1], t[2], c.a, kMmNK, kMmNK, kMmNK,
      kMmNK, kMmNK, bm, bn, bk);
  } else {
    const int64_t bm = meta("BLOCK_M"), bn = meta("BLOCK_N");
    const te::Grid grid(te::cdiv(c.a, bm), kZH);
    const float scale = 1.0f / std::sqrt(float(kHeadDim));
    if (c.pattern == "attn_ptr") {
      f(grid, t[0], t[1], t[2], t[3], scale, kZH, c.a, kHeadDim, bm, bn);
    } else {
      auto d = [](const at::Tensor& x, int64_t rows) {
        return te::TensorDescriptor::from_tensor(x, {1, rows, kHeadDim});
      };
      f(grid, d(t[0], bm), d(t[1], bn), d(t[2], bn), d(t[3], bm), scale, kZH, c.a, kHeadDim, bm,
        bn);
    }
  }
}

}  // namespace te_widen_gpu
