// layer_norm and rms_norm over the trailing `normalized_shape` dimensions, forward and
// backward. The forward ops also return the per-row statistics the backward ops read.

#include <torch/autograd.h>
#include <torch/library.h>

#include <cfloat>
#include <vector>

#include "common.h"
#include "dispatch.h"
#include "triton_embed/ops.h"

namespace triton_embed::ops {
namespace {

constexpr int64_t kMaxBlock = 4096;
constexpr int64_t kReduceRows = 32;   // rows per step of the weight/bias gradient kernels
constexpr int64_t kReduceCols = 128;  // columns per program of those kernels

int64_t block_for(int64_t cols) {
  return std::min(next_pow2(std::max<int64_t>(cols, 1)), kMaxBlock);
}

// Statistics are kept in fp32, or fp64 for fp64 inputs.
at::ScalarType stats_dtype(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

// Rows (M) and row length (N), with the checks torch's layer_norm makes.
template <class SizeT>
std::pair<SizeT, SizeT> split_rows(const char* op, c10::ArrayRef<SizeT> sizes,
                                   c10::ArrayRef<SizeT> normalized_shape) {
  const size_t k = normalized_shape.size();
  TORCH_CHECK_VALUE(k >= 1, "triton_embed::", op,
                    ": argument 'normalized_shape' must have at least one dimension");
  bool ok = sizes.size() >= k;
  for (size_t i = 0; ok && i < k; ++i) ok = sizes[sizes.size() - k + i] == normalized_shape[i];
  TORCH_CHECK_VALUE(ok, "triton_embed::", op, ": argument 'input' of shape ", sizes,
                    " does not end with argument 'normalized_shape' ", normalized_shape);
  SizeT m = 1, n = 1;
  for (size_t i = 0; i < sizes.size() - k; ++i) m = m * sizes[i];
  for (size_t i = sizes.size() - k; i < sizes.size(); ++i) n = n * sizes[i];
  return {m, n};
}

template <class SizeT>
void check_param(const char* op, const char* arg, const std::optional<at::Tensor>& p,
                 c10::ArrayRef<SizeT> normalized_shape, c10::ArrayRef<SizeT> p_sizes,
                 const at::Tensor& input) {
  if (!p.has_value() || !p->defined()) return;
  check_float(op, arg, *p);
  TORCH_CHECK_VALUE(p_sizes == normalized_shape, "triton_embed::", op, ": argument '", arg,
                    "' has shape ", p_sizes, ", expected normalized_shape ", normalized_shape);
  if (!input.is_meta()) check_same_device(op, arg, *p, "input", input);
}

void check_norm_inputs(const char* op, const at::Tensor& input, c10::SymIntArrayRef shape,
                       const std::optional<at::Tensor>& weight,
                       const std::optional<at::Tensor>& bias) {
  check_float(op, "input", input);
  check_device(op, "input", input);
  split_rows<c10::SymInt>(op, input.sym_sizes(), shape);
  check_param<c10::SymInt>(
      op, "weight", weight, shape,
      weight.has_value() && weight->defined() ? weight->sym_sizes() : c10::SymIntArrayRef(), input);
  check_param<c10::SymInt>(
      op, "bias", bias, shape,
      bias.has_value() && bias->defined() ? bias->sym_sizes() : c10::SymIntArrayRef(), input);
}

std::optional<at::Tensor> contiguous_or_none(const std::optional<at::Tensor>& t) {
  if (!t.has_value() || !t->defined()) return std::nullopt;
  return t->contiguous();
}

at::Tensor empty_param_grad(const std::optional<at::Tensor>& p, bool wanted) {
  if (!wanted || !p.has_value() || !p->defined()) return at::Tensor();
  return at::empty_like(*p, at::MemoryFormat::Contiguous);
}

bool requires_grad(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() && t->requires_grad();
}

// ---- layer_norm ---------------------------------------------------------------------------

// RMSNorm is LayerNorm without centring: both run these two functions and the same kernels,
// which skip the centring when given no mean tensor.

// y, mean (undefined when !center) and rstd.
std::tuple<at::Tensor, at::Tensor, at::Tensor> norm_forward(const char* op, const at::Tensor& input,
                                                            c10::SymIntArrayRef shape,
                                                            const std::optional<at::Tensor>& weight,
                                                            const std::optional<at::Tensor>& bias,
                                                            double eps, bool center) {
  check_can_run(op, input);
  TE_OPS_KERNEL(kernel, "norm", "norm_fwd_kernel");
  check_norm_inputs(op, input, shape, weight, bias);
  const auto rows = split_rows<int64_t>(op, input.sizes(), C10_AS_INTARRAYREF_SLOW(shape));
  const int64_t m = rows.first, n = rows.second;
  const at::Tensor x = input.contiguous();
  at::Tensor y = at::empty_like(x);
  const auto st = input.options().dtype(stats_dtype(input.scalar_type()));
  at::Tensor mean = center ? at::empty({m}, st) : at::Tensor();
  at::Tensor rstd = at::empty({m}, st);
  if (m > 0 && n > 0) {
    triton_embed::launch(kernel, {m}, x, y, contiguous_or_none(weight), contiguous_or_none(bias),
                         mean, rstd, n, float_arg(eps, input.scalar_type()), block_for(n));
  }
  return {y, mean, rstd};
}

// dx, dw, db as `mask` asks (dw / db only with a weight / bias); mean undefined for RMSNorm.
std::tuple<at::Tensor, at::Tensor, at::Tensor> norm_backward(
    const char* op, const at::Tensor& grad_output, const at::Tensor& input,
    c10::SymIntArrayRef shape, const at::Tensor& mean, const at::Tensor& rstd,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    std::array<bool, 3> mask) {
  check_can_run(op, input);
  TE_OPS_KERNEL(dx_kernel, "norm", "norm_bwd_dx_kernel");
  TE_OPS_KERNEL(dwdb_kernel, "norm", "norm_bwd_dwdb_kernel");
  check_norm_inputs(op, input, shape, weight, bias);
  TORCH_CHECK_VALUE(grad_output.sizes() == input.sizes(), "triton_embed::", op,
                    ": argument 'grad_output' has shape ", grad_output.sizes(),
                    ", but argument 'input' has shape ", input.sizes());
  const auto rows = split_rows<int64_t>(op, input.sizes(), C10_AS_INTARRAYREF_SLOW(shape));
  const int64_t m = rows.first, n = rows.second;
  const at::Tensor x = input.contiguous(), dy = grad_output.contiguous();
  at::Tensor dx = mask[0] ? at::empty_like(x) : at::Tensor();
  at::Tensor dw = empty_param_grad(weight, mask[1]);
  at::Tensor db = empty_param_grad(bias, mask[2]);
  if (n == 0) return {dx, dw, db};
  if (dx.defined() && m > 0) {
    triton_embed::launch(dx_kernel, {m}, dy, x, contiguous_or_none(weight), mean, rstd, dx, n,
                         block_for(n));
  }
  if (dw.defined() || db.defined()) {
    triton_embed::launch(dwdb_kernel, {cdiv(n, kReduceCols)}, dy, x, mean, rstd, dw, db, m, n,
                         kReduceRows, kReduceCols);
  }
  return {dx, dw, db};
}

// ---- layer_norm ---------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_forward_impl(
    const at::Tensor& input, c10::SymIntArrayRef shape, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, double eps) {
  return norm_forward("layer_norm", input, shape, weight, bias, eps, /*center=*/true);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward_impl(
    const at::Tensor& grad_output, const at::Tensor& input, c10::SymIntArrayRef shape,
    const at::Tensor& mean, const at::Tensor& rstd, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, std::array<bool, 3> mask) {
  return norm_backward("layer_norm_backward", grad_output, input, shape, mean, rstd, weight, bias,
                       mask);
}

at::Tensor layer_norm_impl(const at::Tensor& input, c10::SymIntArrayRef shape,
                           const std::optional<at::Tensor>& weight,
                           const std::optional<at::Tensor>& bias, double eps) {
  return std::get<0>(layer_norm_forward_impl(input, shape, weight, bias, eps));
}

c10::SymInt rows_symint(const at::Tensor& input, c10::SymIntArrayRef shape) {
  return split_rows<c10::SymInt>("layer_norm", input.sym_sizes(), shape).first;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_forward_meta(
    const at::Tensor& input, c10::SymIntArrayRef shape, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, double) {
  check_norm_inputs("layer_norm", input, shape, weight, bias);
  const auto st = input.options().dtype(stats_dtype(input.scalar_type()));
  const c10::SymInt m = rows_symint(input, shape);
  return {at::empty_like(input, at::MemoryFormat::Contiguous), at::empty_symint({m}, st),
          at::empty_symint({m}, st)};
}

at::Tensor layer_norm_meta(const at::Tensor& input, c10::SymIntArrayRef shape,
                           const std::optional<at::Tensor>& weight,
                           const std::optional<at::Tensor>& bias, double eps) {
  return std::get<0>(layer_norm_forward_meta(input, shape, weight, bias, eps));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward_meta(
    const at::Tensor& grad_output, const at::Tensor& input, c10::SymIntArrayRef shape,
    const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, std::array<bool, 3> mask) {
  check_norm_inputs("layer_norm_backward", input, shape, weight, bias);
  return {mask[0] ? at::empty_like(input, at::MemoryFormat::Contiguous) : at::Tensor(),
          empty_param_grad(weight, mask[1]), empty_param_grad(bias, mask[2])};
}

class LayerNormFunction : public torch::autograd::Function<LayerNormFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                            c10::SymIntArrayRef shape, const std::optional<at::Tensor>& weight,
                            const std::optional<at::Tensor>& bias, double eps) {
    TE_OP_HANDLE(op, "layer_norm_forward", "", decltype(layer_norm_forward_impl));
    at::Tensor y, mean, rstd;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      std::tie(y, mean, rstd) = op.call(input, shape, weight, bias, eps);
    }
    ctx->save_for_backward(
        {input, mean, rstd, weight.value_or(at::Tensor()), bias.value_or(at::Tensor())});
    ctx->saved_data["shape"] = shape.vec();
    // needs_input_grad counts only the tensors present, so record what each one needs.
    ctx->saved_data["mask"] =
        std::vector<bool>{input.requires_grad(), requires_grad(weight), requires_grad(bias)};
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TE_OP_HANDLE(op, "layer_norm_backward", "", decltype(layer_norm_backward_impl));
    const auto s = ctx->get_saved_variables();
    const std::vector<c10::SymInt> shape = ctx->saved_data["shape"].toSymIntVector();
    std::optional<at::Tensor> w, b;
    if (s[3].defined()) w = s[3];
    if (s[4].defined()) b = s[4];
    const auto m = ctx->saved_data["mask"].toBoolList();
    auto [dx, dw, db] = op.call(grads[0], s[0], shape, s[1], s[2], w, b, {m[0], m[1], m[2]});
    return {dx, at::Tensor(), dw, db, at::Tensor()};
  }
};

bool any_requires_grad(const at::Tensor& x, const std::optional<at::Tensor>& a,
                       const std::optional<at::Tensor>& b = std::nullopt) {
  if (!at::GradMode::is_enabled()) return false;
  return x.requires_grad() || (a.has_value() && a->defined() && a->requires_grad()) ||
         (b.has_value() && b->defined() && b->requires_grad());
}

at::Tensor layer_norm_autograd(c10::DispatchKeySet ks, const at::Tensor& input,
                               c10::SymIntArrayRef shape, const std::optional<at::Tensor>& weight,
                               const std::optional<at::Tensor>& bias, double eps) {
  if (!any_requires_grad(input, weight, bias)) {
    TE_OP_HANDLE(op, "layer_norm", "", decltype(layer_norm_impl));
    return op.redispatch(ks & c10::after_autograd_keyset, input, shape, weight, bias, eps);
  }
  return LayerNormFunction::apply(input, shape, weight, bias, eps);
}

// ---- rms_norm -----------------------------------------------------------------------------

double rms_eps(const at::Tensor& input, std::optional<double> eps) {
  // torch uses the machine epsilon of the type it computes in.
  if (eps.has_value()) return *eps;
  return input.scalar_type() == at::kDouble ? DBL_EPSILON : FLT_EPSILON;
}

std::tuple<at::Tensor, at::Tensor> rms_norm_forward_impl(const at::Tensor& input,
                                                         c10::SymIntArrayRef shape,
                                                         const std::optional<at::Tensor>& weight,
                                                         std::optional<double> eps) {
  auto [y, mean, rstd] = norm_forward("rms_norm", input, shape, weight, std::nullopt,
                                      rms_eps(input, eps), /*center=*/false);
  return {y, rstd};
}

std::tuple<at::Tensor, at::Tensor> rms_norm_backward_impl(
    const at::Tensor& grad_output, const at::Tensor& input, c10::SymIntArrayRef shape,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, std::array<bool, 2> mask) {
  auto [dx, dw, db] = norm_backward("rms_norm_backward", grad_output, input, shape, at::Tensor(),
                                    rstd, weight, std::nullopt, {mask[0], mask[1], false});
  return {dx, dw};
}

at::Tensor rms_norm_impl(const at::Tensor& input, c10::SymIntArrayRef shape,
                         const std::optional<at::Tensor>& weight, std::optional<double> eps) {
  return std::get<0>(rms_norm_forward_impl(input, shape, weight, eps));
}

std::tuple<at::Tensor, at::Tensor> rms_norm_forward_meta(const at::Tensor& input,
                                                         c10::SymIntArrayRef shape,
                                                         const std::optional<at::Tensor>& weight,
                                                         std::optional<double>) {
  check_norm_inputs("rms_norm", input, shape, weight, std::nullopt);
  return {at::empty_like(input, at::MemoryFormat::Contiguous),
          at::empty_symint({rows_symint(input, shape)},
                           input.options().dtype(stats_dtype(input.scalar_type())))};
}

at::Tensor rms_norm_meta(const at::Tensor& input, c10::SymIntArrayRef shape,
                         const std::optional<at::Tensor>& weight, std::optional<double> eps) {
  return std::get<0>(rms_norm_forward_meta(input, shape, weight, eps));
}

std::tuple<at::Tensor, at::Tensor> rms_norm_backward_meta(
    const at::Tensor&, const at::Tensor& input, c10::SymIntArrayRef shape, const at::Tensor&,
    const std::optional<at::Tensor>& weight, std::array<bool, 2> mask) {
  check_norm_inputs("rms_norm_backward", input, shape, weight, std::nullopt);
  return {mask[0] ? at::empty_like(input, at::MemoryFormat::Contiguous) : at::Tensor(),
          empty_param_grad(weight, mask[1])};
}

class RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                            c10::SymIntArrayRef shape, const std::optional<at::Tensor>& weight,
                            std::optional<double> eps) {
    TE_OP_HANDLE(op, "rms_norm_forward", "", decltype(rms_norm_forward_impl));
    at::Tensor y, rstd;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      std::tie(y, rstd) = op.call(input, shape, weight, eps);
    }
    ctx->save_for_backward({input, rstd, weight.value_or(at::Tensor())});
    ctx->saved_data["shape"] = shape.vec();
    ctx->saved_data["mask"] = std::vector<bool>{input.requires_grad(), requires_grad(weight)};
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TE_OP_HANDLE(op, "rms_norm_backward", "", decltype(rms_norm_backward_impl));
    const auto s = ctx->get_saved_variables();
    const std::vector<c10::SymInt> shape = ctx->saved_data["shape"].toSymIntVector();
    std::optional<at::Tensor> w;
    if (s[2].defined()) w = s[2];
    const auto m = ctx->saved_data["mask"].toBoolList();
    auto [dx, dw] = op.call(grads[0], s[0], shape, s[1], w, {m[0], m[1]});
    return {dx, at::Tensor(), dw, at::Tensor()};
  }
};

at::Tensor rms_norm_autograd(c10::DispatchKeySet ks, const at::Tensor& input,
                             c10::SymIntArrayRef shape, const std::optional<at::Tensor>& weight,
                             std::optional<double> eps) {
  if (!any_requires_grad(input, weight)) {
    TE_OP_HANDLE(op, "rms_norm", "", decltype(rms_norm_impl));
    return op.redispatch(ks & c10::after_autograd_keyset, input, shape, weight, eps);
  }
  return RmsNormFunction::apply(input, shape, weight, eps);
}

}  // namespace

#define TE_NORM_IMPLS(m, suffix)                               \
  m.impl("layer_norm", &layer_norm##suffix);                   \
  m.impl("layer_norm_forward", &layer_norm_forward##suffix);   \
  m.impl("layer_norm_backward", &layer_norm_backward##suffix); \
  m.impl("rms_norm", &rms_norm##suffix);                       \
  m.impl("rms_norm_forward", &rms_norm_forward##suffix);       \
  m.impl("rms_norm_backward", &rms_norm_backward##suffix)

TORCH_LIBRARY_IMPL(triton_embed, CUDA, m) { TE_NORM_IMPLS(m, _impl); }
TORCH_LIBRARY_IMPL(triton_embed, CPU, m) { TE_NORM_IMPLS(m, _impl); }
TORCH_LIBRARY_IMPL(triton_embed, Meta, m) { TE_NORM_IMPLS(m, _meta); }
TORCH_LIBRARY_IMPL(triton_embed, Autograd, m) {
  m.impl("layer_norm", &layer_norm_autograd);
  m.impl("rms_norm", &rms_norm_autograd);
}

}  // namespace triton_embed::ops
