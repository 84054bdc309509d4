#pragma once

// A small transformer-style block built from the project's Triton kernels (pykernels/), the
// example of "Deploy for every shape" (README): the same code runs with the JIT
// (deploy_record, which records the bundle) and linked to the runtime only
// (deploy_serve, which launches from the bundle embedded in it, with no Python).
//
//   x [B, S, kHidden] -> RMSNorm (pykernels.norm.norm_fwd_kernel, @triton.heuristics)
//     -> qkv = x W_qkv (pykernels.matmul.matmul_kernel, @triton.autotune on M, N, K)
//     -> rotary embedding of q and k (pykernels.rope.rope_kernel: BATCH is a constexpr)
//     -> attention (pykernels.attention_tma.attn_fwd_kernel: host TMA descriptors whose block
//        shapes the autotune config's pre-hook sets, tuned on N_CTX)
//     -> x + o W_o (the matmul again)
// Token counts T = B x S change the matmuls' M, the attention's N_CTX and ZH, the rope's
// BATCH and seq_len: what a recorded bundle must serve at sizes nobody ran.

#include <ATen/ATen.h>
#include <triton_embed/torch.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace deploy {

namespace te = triton_embed;

constexpr int64_t kHidden = 256, kHeads = 4, kHeadDim = 64, kMaxSeq = 4096;

struct Block {
  te::JitFunction norm{"pykernels.norm", "norm_fwd_kernel"};
  te::JitFunction matmul{"pykernels.matmul", "matmul_kernel"};
  te::JitFunction rope{"pykernels.rope", "rope_kernel"};
  te::JitFunction attention{"pykernels.attention_tma", "attn_fwd_kernel"};
  at::Tensor norm_w, w_qkv, w_o, cos, sin;  // fp16 weights; fp32 rotation tables

  Block() {
    const auto f16 = at::TensorOptions().device(at::kCUDA).dtype(at::kHalf);
    at::manual_seed(20261128);
    norm_w = (1 + 0.1 * at::randn({kHidden}, f16)).to(at::kHalf);
    w_qkv = (at::randn({kHidden, 3 * kHidden}, f16) / std::sqrt(double(kHidden))).to(at::kHalf);
    w_o = (at::randn({kHidden, kHidden}, f16) / std::sqrt(double(kHidden))).to(at::kHalf);
    const auto f32 = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
    const at::Tensor pos = at::arange(kMaxSeq, f32).unsqueeze(1);
    const at::Tensor freq =
        at::pow(10000.0, -at::arange(kHeadDim / 2, f32) / double(kHeadDim / 2)).unsqueeze(0);
    cos = at::cos(pos * freq).contiguous();
    sin = at::sin(pos * freq).contiguous();
  }

  at::Tensor mm(const at::Tensor& a, const at::Tensor& b) const {
    const int64_t m = a.size(0), n = b.size(1), k = a.size(1);
    at::Tensor c = at::empty({m, n}, a.options());
    te::launch(
        matmul,
        [](const te::Meta& g) {
          return te::Grid(te::cdiv(g["M"], g["BLOCK_M"]) * te::cdiv(g["N"], g["BLOCK_N"]));
        },
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), te::arg("ACTIVATION") = std::string(""));
    return c;
  }

  // x [B, S, H, D] contiguous -> rotated by position.
  at::Tensor rotate(const at::Tensor& x) const {
    const int64_t batch = x.size(0), seq = x.size(1);
    at::Tensor out = at::empty_like(x);
    te::launch(rope, {seq}, x, cos, sin, out, seq, batch, kHeads, kHeadDim, int64_t{4});
    return out;
  }

  // x [B, S, kHidden] fp16 on the GPU -> the block's output, the same shape.
  at::Tensor forward(const at::Tensor& x) const {
    const int64_t batch = x.size(0), seq = x.size(1), tokens = batch * seq;
    const at::Tensor x2 = x.reshape({tokens, kHidden});
    at::Tensor xn = at::empty_like(x2);
    at::Tensor rstd = at::empty({tokens}, x.options().dtype(at::kFloat));
    te::launch(norm, {tokens}, x2, xn, norm_w, std::optional<at::Tensor>(),
               std::optional<at::Tensor>(), rstd, kHidden, 1e-5f, int64_t{256});
    const at::Tensor qkv = mm(xn, w_qkv).view({batch, seq, 3, kHeads, kHeadDim});
    const at::Tensor q = rotate(qkv.select(2, 0).contiguous());
    const at::Tensor k = rotate(qkv.select(2, 1).contiguous());
    auto heads = [&](const at::Tensor& t) {  // [B, S, H, D] -> [B * H, S, D]
      return t.permute({0, 2, 1, 3}).contiguous().view({batch * kHeads, seq, kHeadDim});
    };
    const at::Tensor qh = heads(q), kh = heads(k), vh = heads(qkv.select(2, 2));
    at::Tensor oh = at::empty_like(qh);
    // Any block shape: the tuned config's pre-hook sets each descriptor's.
    const te::TensorDescriptor dq = te::TensorDescriptor::from_tensor(qh, {1, 16, kHeadDim});
    const te::TensorDescriptor dk = te::TensorDescriptor::from_tensor(kh, {1, 16, kHeadDim});
    const te::TensorDescriptor dv = te::TensorDescriptor::from_tensor(vh, {1, 16, kHeadDim});
    const te::TensorDescriptor dout = te::TensorDescriptor::from_tensor(oh, {1, 16, kHeadDim});
    te::launch(
        attention,
        [](const te::Meta& g) { return te::Grid(te::cdiv(g["N_CTX"], g["BLOCK_M"]), g["ZH"]); }, dq,
        dk, dv, dout, 1.0f / std::sqrt(float(kHeadDim)), batch * kHeads, seq, kHeadDim);
    const at::Tensor o = oh.view({batch, kHeads, seq, kHeadDim}).permute({0, 2, 1, 3});
    return x + mm(o.reshape({tokens, kHidden}), w_o).view({batch, seq, kHidden});
  }

  // The same block in ATen, in fp32.
  at::Tensor reference(const at::Tensor& x) const {
    const int64_t batch = x.size(0), seq = x.size(1);
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor xn =
        (xf * at::rsqrt(xf.pow(2).mean(-1, true) + 1e-5) * norm_w.to(at::kFloat)).to(at::kHalf);
    const at::Tensor qkv = at::matmul(xn.to(at::kFloat), w_qkv.to(at::kFloat))
                               .to(at::kHalf)
                               .view({batch, seq, 3, kHeads, kHeadDim})
                               .to(at::kFloat);
    auto rot = [&](const at::Tensor& t) {
      const at::Tensor c = cos.slice(0, 0, seq).view({1, seq, 1, kHeadDim / 2});
      const at::Tensor s = sin.slice(0, 0, seq).view({1, seq, 1, kHeadDim / 2});
      const at::Tensor a = t.slice(-1, 0, kHeadDim / 2), b = t.slice(-1, kHeadDim / 2);
      return at::cat({a * c - b * s, b * c + a * s}, -1).to(at::kHalf).to(at::kFloat);
    };
    const at::Tensor q = rot(qkv.select(2, 0)).permute({0, 2, 1, 3});
    const at::Tensor k = rot(qkv.select(2, 1)).permute({0, 2, 1, 3});
    const at::Tensor v = qkv.select(2, 2).permute({0, 2, 1, 3});
    const at::Tensor p =
        at::softmax(at::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(kHeadDim)), -1);
    const at::Tensor o = at::matmul(p, v).to(at::kHalf).permute({0, 2, 1, 3});
    const at::Tensor out =
        at::matmul(o.reshape({batch * seq, kHidden}).to(at::kFloat), w_o.to(at::kFloat));
    return xf + out.view({batch, seq, kHidden});
  }
};

// The largest error of forward(x) against reference(x), relative to the reference's scale.
inline double error(const Block& block, const at::Tensor& x) {
  const at::Tensor got = block.forward(x).to(at::kFloat);
  const at::Tensor want = block.reference(x);
  return ((got - want).abs().max() / (want.abs().max() + 1e-6)).item<double>();
}

// fp16 rounding of the intermediate results: what forward may differ by.
constexpr double kTolerance = 2e-2;

// An input of B sequences of S tokens.
inline at::Tensor input(int64_t batch, int64_t seq) {
  return at::randn({batch, seq, kHidden}, at::TensorOptions().device(at::kCUDA).dtype(at::kHalf));
}

}  // namespace deploy
