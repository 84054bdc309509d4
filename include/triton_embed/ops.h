#pragma once

/*! \file
 *  \brief The operators of \c torch.ops.triton_embed, called from C++ through the dispatcher
 *  (target \c triton_embed::ops). Autograd, CPU (Triton's interpreter), CUDA and Meta work
 *  as for any torch operator. Linked to \c triton_embed::ops_runtime instead (no Python), the
 *  kernels come from kernel bundles and a CPU tensor raises NotSupportedError.
 *
 *  \code
 *  #include <triton_embed/ops.h>
 *
 *  at::Tensor z = triton_embed::ops::add(x, y);           // x + y, broadcasting and promoting
 *  at::Tensor p = triton_embed::ops::softmax(logits);     // over the last dimension
 *  at::Tensor h = triton_embed::ops::layer_norm(h0, {h0.size(-1)}, w, b);
 *  \endcode
 */

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <tuple>

#define TRITON_EMBED_OPS_API __attribute__((visibility("default")))

namespace triton_embed::ops {

/*! \brief \c self + \c alpha * \c other, with broadcasting and torch's type promotion. */
TRITON_EMBED_OPS_API at::Tensor add(const at::Tensor& self, const at::Tensor& other,
                                    const c10::Scalar& alpha = 1);
/*! \brief add() into \p out (resized as torch resizes outputs); returns \p out. */
TRITON_EMBED_OPS_API at::Tensor& add_out(at::Tensor& out, const at::Tensor& self,
                                         const at::Tensor& other, const c10::Scalar& alpha = 1);
/*! \brief \c self * \c other, with broadcasting and torch's type promotion. */
TRITON_EMBED_OPS_API at::Tensor mul(const at::Tensor& self, const at::Tensor& other);
/*! \brief mul() into \p out; returns \p out. */
TRITON_EMBED_OPS_API at::Tensor& mul_out(at::Tensor& out, const at::Tensor& self,
                                         const at::Tensor& other);

/*! \brief Softmax over the last dimension (float16, bfloat16, float32, float64). */
TRITON_EMBED_OPS_API at::Tensor softmax(const at::Tensor& self);
/*! \brief The gradient of softmax() given the gradient of and the softmax output. */
TRITON_EMBED_OPS_API at::Tensor softmax_backward(const at::Tensor& grad_output,
                                                 const at::Tensor& output);

/*! \brief Layer normalisation over the trailing \p normalized_shape dimensions, as
 *  \c torch.nn.functional.layer_norm. */
TRITON_EMBED_OPS_API at::Tensor layer_norm(const at::Tensor& input,
                                           c10::IntArrayRef normalized_shape,
                                           const std::optional<at::Tensor>& weight = std::nullopt,
                                           const std::optional<at::Tensor>& bias = std::nullopt,
                                           double eps = 1e-5);
/*! \brief Root-mean-square normalisation, as \c torch.nn.functional.rms_norm (\p eps defaults
 *  to the dtype's machine epsilon). */
TRITON_EMBED_OPS_API at::Tensor rms_norm(const at::Tensor& input, c10::IntArrayRef normalized_shape,
                                         const std::optional<at::Tensor>& weight = std::nullopt,
                                         std::optional<double> eps = std::nullopt);

/*! \brief Sum over dimension \p dim, as \c torch.sum(self, dim, keepdim, dtype=dtype). */
TRITON_EMBED_OPS_API at::Tensor sum(const at::Tensor& self, int64_t dim, bool keepdim = false,
                                    std::optional<c10::ScalarType> dtype = std::nullopt);

}  // namespace triton_embed::ops
