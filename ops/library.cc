// The operator schemas of torch.ops.triton_embed. Out variants return nothing, as torch asks
// of custom operators that mutate an argument (so torch.compile can functionalise them). Kernels
// are registered per dispatch key next to their implementation (CUDA, CPU through Triton's
// interpreter, Meta, Autograd).

#include <torch/library.h>

TORCH_LIBRARY(triton_embed, m) {
  m.def("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> ()");
  m.def("mul(Tensor self, Tensor other) -> Tensor");
  m.def("mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> ()");

  m.def("softmax(Tensor self) -> Tensor");
  m.def("softmax_backward(Tensor grad_output, Tensor output) -> Tensor");

  m.def(
      "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
      "Tensor? bias=None, float eps=1e-05) -> Tensor");
  m.def(
      "layer_norm_forward(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
      "Tensor? bias=None, float eps=1e-05) -> (Tensor, Tensor, Tensor)");
  m.def(
      "layer_norm_backward(Tensor grad_output, Tensor input, SymInt[] normalized_shape, "
      "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) "
      "-> (Tensor, Tensor, Tensor)");

  m.def(
      "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
      "float? eps=None) -> Tensor");
  m.def(
      "rms_norm_forward(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
      "float? eps=None) -> (Tensor, Tensor)");
  m.def(
      "rms_norm_backward(Tensor grad_output, Tensor input, SymInt[] normalized_shape, "
      "Tensor rstd, Tensor? weight, bool[2] output_mask) -> (Tensor, Tensor)");

  m.def("sum(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
}
