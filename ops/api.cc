// The C++ entry points of the operators: each call goes through the dispatcher, so autograd,
// device dispatch and torch's tracing see them as they see torch's own operators.

#include "dispatch.h"
#include "triton_embed/ops.h"

namespace triton_embed::ops {

at::Tensor add(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  TE_OP_HANDLE(h, "add", "", at::Tensor(const at::Tensor&, const at::Tensor&, const c10::Scalar&));
  return h.call(self, other, alpha);
}

at::Tensor& add_out(at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                    const c10::Scalar& alpha) {
  TE_OP_HANDLE(h, "add", "out",
               void(const at::Tensor&, const at::Tensor&, const c10::Scalar&, at::Tensor&));
  h.call(self, other, alpha, out);
  return out;
}

at::Tensor mul(const at::Tensor& self, const at::Tensor& other) {
  TE_OP_HANDLE(h, "mul", "", at::Tensor(const at::Tensor&, const at::Tensor&));
  return h.call(self, other);
}

at::Tensor& mul_out(at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
  TE_OP_HANDLE(h, "mul", "out", void(const at::Tensor&, const at::Tensor&, at::Tensor&));
  h.call(self, other, out);
  return out;
}

at::Tensor softmax(const at::Tensor& self) {
  TE_OP_HANDLE(h, "softmax", "", at::Tensor(const at::Tensor&));
  return h.call(self);
}

at::Tensor softmax_backward(const at::Tensor& grad_output, const at::Tensor& output) {
  TE_OP_HANDLE(h, "softmax_backward", "", at::Tensor(const at::Tensor&, const at::Tensor&));
  return h.call(grad_output, output);
}

at::Tensor layer_norm(const at::Tensor& input, c10::IntArrayRef normalized_shape,
                      const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, double eps) {
  TE_OP_HANDLE(h, "layer_norm", "",
               at::Tensor(const at::Tensor&, c10::SymIntArrayRef, const std::optional<at::Tensor>&,
                          const std::optional<at::Tensor>&, double));
  return h.call(input, c10::fromIntArrayRefSlow(normalized_shape), weight, bias, eps);
}

at::Tensor rms_norm(const at::Tensor& input, c10::IntArrayRef normalized_shape,
                    const std::optional<at::Tensor>& weight, std::optional<double> eps) {
  TE_OP_HANDLE(h, "rms_norm", "",
               at::Tensor(const at::Tensor&, c10::SymIntArrayRef, const std::optional<at::Tensor>&,
                          std::optional<double>));
  return h.call(input, c10::fromIntArrayRefSlow(normalized_shape), weight, eps);
}

at::Tensor sum(const at::Tensor& self, int64_t dim, bool keepdim,
               std::optional<c10::ScalarType> dtype) {
  TE_OP_HANDLE(h, "sum", "",
               at::Tensor(const at::Tensor&, int64_t, bool, std::optional<c10::ScalarType>));
  return h.call(self, dim, keepdim, dtype);
}

}  // namespace triton_embed::ops
