// softmax over the last dimension, forward and backward.

#include <torch/autograd.h>
#include <torch/library.h>

#include "common.h"
#include "dispatch.h"
#include "triton_embed/ops.h"

namespace triton_embed::ops {
namespace {

constexpr int64_t kMaxBlock = 4096;  // wider rows loop over blocks of this many columns

int64_t block_for(int64_t cols) {
  return std::min(next_pow2(std::max<int64_t>(cols, 1)), kMaxBlock);
}

// The input as a (rows, cols) view with unit column stride (copied when it is not one).
at::Tensor rows_view(const at::Tensor& t) {
  at::Tensor c = t.dim() == 0 ? t.reshape({1, 1}) : t.contiguous();
  const int64_t cols = t.dim() == 0 ? 1 : t.size(-1);
  return c.view({-1, cols});
}

at::Tensor softmax_impl(const at::Tensor& self) {
  check_can_run("softmax", self);
  TE_OPS_KERNEL(kernel, "softmax", "softmax_fwd_kernel");
  check_float("softmax", "self", self);
  check_device("softmax", "self", self);
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  if (self.numel() == 0) return out;
  const at::Tensor x = rows_view(self);
  const at::Tensor y = out.view(x.sizes());
  const int64_t rows = x.size(0), cols = x.size(1);
  triton_embed::launch(kernel, {rows}, x, y, cols, x.stride(0), y.stride(0), block_for(cols),
                       compute_dtype(self.scalar_type()));
  return out;
}

at::Tensor softmax_backward_impl(const at::Tensor& grad_output, const at::Tensor& output) {
  check_can_run("softmax_backward", grad_output);
  TE_OPS_KERNEL(kernel, "softmax", "softmax_bwd_kernel");
  check_float("softmax_backward", "grad_output", grad_output);
  check_float("softmax_backward", "output", output);
  check_device("softmax_backward", "grad_output", grad_output);
  check_same_device("softmax_backward", "output", output, "grad_output", grad_output);
  TORCH_CHECK_VALUE(grad_output.sizes() == output.sizes(),
                    "triton_embed::softmax_backward: argument 'output' has shape ", output.sizes(),
                    ", but argument 'grad_output' has shape ", grad_output.sizes());
  TORCH_CHECK_TYPE(grad_output.scalar_type() == output.scalar_type(),
                   "triton_embed::softmax_backward: argument 'output' has dtype ",
                   output.scalar_type(), ", but argument 'grad_output' has dtype ",
                   grad_output.scalar_type());
  at::Tensor dx = at::empty_like(output, at::MemoryFormat::Contiguous);
  if (output.numel() == 0) return dx;
  const at::Tensor dy = rows_view(grad_output);
  const at::Tensor y = rows_view(output);
  const at::Tensor d = dx.view(y.sizes());
  const int64_t rows = y.size(0), cols = y.size(1);
  triton_embed::launch(kernel, {rows}, dy, y, d, cols, dy.stride(0), y.stride(0), d.stride(0),
                       block_for(cols), compute_dtype(output.scalar_type()));
  return dx;
}

at::Tensor softmax_meta(const at::Tensor& self) {
  check_float("softmax", "self", self);
  return at::empty_like(self, at::MemoryFormat::Contiguous);
}

at::Tensor softmax_backward_meta(const at::Tensor& grad_output, const at::Tensor& output) {
  check_float("softmax_backward", "grad_output", grad_output);
  check_float("softmax_backward", "output", output);
  TORCH_CHECK_VALUE(grad_output.sym_sizes() == output.sym_sizes(),
                    "triton_embed::softmax_backward: argument 'output' has shape ",
                    output.sym_sizes(), ", but argument 'grad_output' has shape ",
                    grad_output.sym_sizes());
  return at::empty_like(output, at::MemoryFormat::Contiguous);
}

class SoftmaxFunction : public torch::autograd::Function<SoftmaxFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x) {
    at::Tensor y;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      y = triton_embed::ops::softmax(x);
    }
    ctx->save_for_backward({y});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor y = ctx->get_saved_variables()[0];
    return {triton_embed::ops::softmax_backward(grads[0].contiguous(), y)};
  }
};

at::Tensor softmax_autograd(c10::DispatchKeySet ks, const at::Tensor& x) {
  if (!(at::GradMode::is_enabled() && x.requires_grad())) {
    TE_OP_HANDLE(op, "softmax", "", decltype(softmax_impl));
    return op.redispatch(ks & c10::after_autograd_keyset, x);
  }
  return SoftmaxFunction::apply(x);
}

// The same kernels serve CUDA tensors (GPU launch) and CPU tensors (Triton's interpreter).
void register_device_kernels(torch::Library& m) {
  m.impl("softmax", &softmax_impl);
  m.impl("softmax_backward", &softmax_backward_impl);
}

}  // namespace

TORCH_LIBRARY_IMPL(triton_embed, CUDA, m) { register_device_kernels(m); }
TORCH_LIBRARY_IMPL(triton_embed, CPU, m) { register_device_kernels(m); }
TORCH_LIBRARY_IMPL(triton_embed, Meta, m) {
  m.impl("softmax", &softmax_meta);
  m.impl("softmax_backward", &softmax_backward_meta);
}
TORCH_LIBRARY_IMPL(triton_embed, Autograd, m) { m.impl("softmax", &softmax_autograd); }

}  // namespace triton_embed::ops
