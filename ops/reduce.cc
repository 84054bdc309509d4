// sum over one dimension, with keepdim and torch's dtype rules (integers and bool sum to
// int64 unless a dtype is given).

#include <ATen/WrapDimUtils.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "common.h"
#include "dispatch.h"
#include "triton_embed/ops.h"

namespace triton_embed::ops {
namespace {

at::ScalarType result_dtype(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype.has_value()) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                      : self.scalar_type();
}

// The accumulation type: fp32 for half types and fp32, fp64 for fp64, int64 for integers.
DType accumulate_dtype(at::ScalarType out) {
  if (out == at::kDouble) return DType::fp64;
  if (is_float(out)) return DType::fp32;
  return DType::i64;
}

int64_t check_sum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  check_dtype_supported("sum", "self", self);
  if (dtype.has_value()) {
    TORCH_CHECK_TYPE(is_supported_real(*dtype), "triton_embed::sum: argument 'dtype' is ", *dtype,
                     ", which is not supported; use bool, an integer, float16, "
                     "bfloat16, float32 or float64");
  }
  return at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
}

template <class SizeT>
std::vector<SizeT> out_shape(c10::ArrayRef<SizeT> sizes, int64_t dim, bool keepdim) {
  std::vector<SizeT> shape(sizes.begin(), sizes.end());
  if (shape.empty()) return shape;  // a 0-dim tensor sums to itself
  if (keepdim) {
    shape[dim] = 1;
  } else {
    shape.erase(shape.begin() + dim);
  }
  return shape;
}

at::Tensor sum_impl(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  check_can_run("sum", self);
  TE_OPS_KERNEL(kernel, "reduce", "sum_kernel");
  check_device("sum", "self", self);
  const int64_t d = check_sum(self, dim, dtype);
  const at::ScalarType out_dtype = result_dtype(self, dtype);
  at::Tensor out =
      at::empty(out_shape<int64_t>(self.sizes(), d, keepdim), self.options().dtype(out_dtype));
  if (out.numel() == 0) return out;
  const at::Tensor x = self.contiguous();
  int64_t outer = 1, reduced = 1, inner = 1;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i < d) outer *= self.size(i);
    if (i == d) reduced = self.size(i);
    if (i > d) inner *= self.size(i);
  }
  // Rows reduce along BLOCK_R elements at a time; with an inner extent, programs take a tile
  // of inner columns each.
  int64_t block_i = inner == 1 ? 1 : std::min<int64_t>(next_pow2(inner), 128);
  while (cdiv(inner, block_i) > 65535 && block_i < 4096) block_i *= 2;  // grid y limit
  TORCH_CHECK(cdiv(inner, block_i) <= 65535, "triton_embed::sum: argument 'self' has ", inner,
              " elements after dimension ", d, "; at most ", int64_t{65535} * 4096,
              " are supported");
  const int64_t block_r = std::max<int64_t>(
      1, std::min<int64_t>(next_pow2(std::max<int64_t>(reduced, 1)), 4096 / block_i));
  triton_embed::launch(kernel, {outer, cdiv(inner, block_i)}, x, out, reduced, inner,
                       accumulate_dtype(out_dtype), block_r, block_i);
  return out;
}

at::Tensor sum_meta(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  const int64_t d = check_sum(self, dim, dtype);
  return at::empty_symint(out_shape<c10::SymInt>(self.sym_sizes(), d, keepdim),
                          self.options().dtype(result_dtype(self, dtype)));
}

class SumFunction : public torch::autograd::Function<SumFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& self,
                            int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype) {
    ctx->saved_data["sizes"] = self.sym_sizes().vec();
    ctx->saved_data["dtype"] = self.scalar_type();
    ctx->saved_data["dim"] = at::maybe_wrap_dim(dim, self.dim(), true);
    ctx->saved_data["keepdim"] = keepdim || self.dim() == 0;
    at::AutoDispatchBelowADInplaceOrView guard;
    return triton_embed::ops::sum(self, dim, keepdim, dtype);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const std::vector<c10::SymInt> sizes = ctx->saved_data["sizes"].toSymIntVector();
    at::Tensor g = grads[0];
    if (!ctx->saved_data["keepdim"].toBool()) g = g.unsqueeze(ctx->saved_data["dim"].toInt());
    g = g.expand_symint(sizes).to(ctx->saved_data["dtype"].toScalarType());
    return {g, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor sum_autograd(c10::DispatchKeySet ks, const at::Tensor& self, int64_t dim, bool keepdim,
                        std::optional<at::ScalarType> dtype) {
  if (!(at::GradMode::is_enabled() && self.requires_grad())) {
    TE_OP_HANDLE(op, "sum", "", decltype(sum_impl));
    return op.redispatch(ks & c10::after_autograd_keyset, self, dim, keepdim, dtype);
  }
  return SumFunction::apply(self, dim, keepdim, dtype);
}

}  // namespace

TORCH_LIBRARY_IMPL(triton_embed, CUDA, m) { m.impl("sum", &sum_impl); }
TORCH_LIBRARY_IMPL(triton_embed, CPU, m) { m.impl("sum", &sum_impl); }
TORCH_LIBRARY_IMPL(triton_embed, Meta, m) { m.impl("sum", &sum_meta); }
TORCH_LIBRARY_IMPL(triton_embed, Autograd, m) { m.impl("sum", &sum_autograd); }

}  // namespace triton_embed::ops
