// add and mul: broadcasting, torch's type promotion, strided inputs, out= variants.
//
// The kernel reads inputs through up to four (coalesced) dimensions of strides, so
// broadcast and non-contiguous inputs are read in place; layouts that do not coalesce to four
// dimensions are copied to contiguous memory first.

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <array>

#include "common.h"
#include "dispatch.h"
#include "triton_embed/ops.h"

namespace triton_embed::ops {
namespace {

enum class Op : int { kAdd = 0, kMul = 1 };

const char* op_name(Op op) { return op == Op::kAdd ? "add" : "mul"; }

// Output shape and strides of both inputs over it, coalesced to at most four dimensions.
struct Layout {
  std::array<int64_t, 4> size{1, 1, 1, 1};
  std::array<int64_t, 4> a{0, 0, 0, 0};
  std::array<int64_t, 4> b{0, 0, 0, 0};
  bool strided = true;
};

bool coalesce(at::IntArrayRef shape, at::IntArrayRef sa, at::IntArrayRef sb, Layout& out) {
  int64_t size[64], a[64], b[64];
  int n = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    // Merge into the previous (outer) dimension when both inputs step through it evenly.
    if (n > 0 && a[n - 1] == sa[d] * shape[d] && b[n - 1] == sb[d] * shape[d]) {
      size[n - 1] *= shape[d];
      a[n - 1] = sa[d];
      b[n - 1] = sb[d];
      continue;
    }
    size[n] = shape[d];
    a[n] = sa[d];
    b[n] = sb[d];
    ++n;
  }
  if (n > 4) return false;
  const int off = 4 - n;
  for (int i = 0; i < n; ++i) {
    out.size[off + i] = size[i];
    out.a[off + i] = a[i];
    out.b[off + i] = b[i];
  }
  out.strided = !(n == 0 || (n == 1 && a[0] == 1 && b[0] == 1));
  return true;
}

// Brings a 0-dim CPU tensor to the other operand's device, as torch does for scalars.
at::Tensor on_device(const at::Tensor& t, const at::Tensor& other) {
  if (t.device() != other.device() && t.dim() == 0 && t.is_cpu() && !other.is_meta()) {
    return t.to(other.device());
  }
  return t;
}

void check_inputs(Op op, const at::Tensor& a, const at::Tensor& b) {
  const char* name = op_name(op);
  check_dtype_supported(name, "self", a);
  check_dtype_supported(name, "other", b);
  check_device(name, "self", a);
  check_device(name, "other", b);
  const bool scalar_ok = (a.dim() == 0 && a.is_cpu()) || (b.dim() == 0 && b.is_cpu());
  if (!scalar_ok) check_same_device(name, "other", b, "self", a);
}

// The broadcast shape of self and other, or a RuntimeError naming both.
std::vector<int64_t> broadcast_shape(Op op, at::IntArrayRef a, at::IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TORCH_CHECK(sa == sb || sa == 1 || sb == 1, "triton_embed::", op_name(op),
                ": argument 'other' of shape ", b,
                " cannot be broadcast to argument 'self' of "
                "shape ",
                a, " (", sb, " vs ", sa, " in dimension ", i, " of the result)");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

void check_alpha(at::ScalarType result, const c10::Scalar& alpha) {
  TORCH_CHECK_TYPE(!alpha.isComplex(),
                   "triton_embed::add: argument 'alpha' is complex, which is "
                   "not supported");
  if (result == at::kBool) {
    TORCH_CHECK(alpha.isBoolean() || alpha.isIntegral(true),
                "triton_embed::add: argument 'alpha' must be a bool or an integer for bool "
                "tensors, got ",
                alpha.type());
  } else if (at::isIntegralType(result, /*includeBool=*/false)) {
    TORCH_CHECK(!alpha.isFloatingPoint(),
                "triton_embed::add: for integral input tensors, argument 'alpha' must not be a "
                "floating point number");
  }
}

void check_out_dtype(Op op, at::ScalarType result, const at::Tensor& out) {
  TORCH_CHECK(at::canCast(result, out.scalar_type()), "triton_embed::", op_name(op),
              ": result type ", result, " can't be cast to the desired output type ",
              out.scalar_type(), " of argument 'out'");
}

// Writes op(a, b) into `out`, contiguous with the broadcast shape (its dtype may differ from
// `result`: values are computed in result's compute type and cast).
void run(Op op, const at::Tensor& a_in, const at::Tensor& b_in, const c10::Scalar& alpha,
         at::ScalarType result, const at::Tensor& out) {
  check_can_run(op_name(op), out);
  TE_OPS_KERNEL(kernel, "elementwise", "binary_kernel");
  const int64_t n = out.numel();
  if (n == 0) return;
  // Contiguous inputs of the output's shape (the common case) go straight to the flat path;
  // others are broadcast views read through their strides.
  const bool flat = a_in.sizes() == out.sizes() && b_in.sizes() == out.sizes() &&
                    a_in.device() == out.device() && b_in.device() == out.device() &&
                    a_in.is_contiguous() && b_in.is_contiguous();
  at::Tensor a = flat ? a_in : on_device(a_in, out).expand(out.sizes());
  at::Tensor b = flat ? b_in : on_device(b_in, out).expand(out.sizes());
  Layout l;
  l.strided = !flat;
  if (!flat && !coalesce(out.sizes(), a.strides(), b.strides(), l)) {
    a = a.contiguous();
    b = b.contiguous();
    l = Layout{};
    l.strided = false;
  }
  constexpr int64_t kBlock = 1024;
  const DType compute = compute_dtype(result);
  const Grid grid(cdiv(n, kBlock));
  // alpha: integers and bools as Python ints (an int 1 is specialised as a constant, as in
  // Python); floats in the precision of the compute type.
  auto go = [&](const auto& alpha_arg) {
    triton_embed::launch(kernel, grid, a, b, out, alpha_arg, n, l.size[1], l.size[2], l.size[3],
                         l.a[0], l.a[1], l.a[2], l.a[3], l.b[0], l.b[1], l.b[2], l.b[3],
                         static_cast<int>(op), l.strided, compute, kBlock);
  };
  if (op == Op::kMul) {
    go(1);
  } else if (dtype_is_float(compute)) {
    go(float_arg(alpha.toDouble(), result));
  } else {
    go(alpha.toLong());
  }
}

at::Tensor binary(Op op, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha) {
  check_inputs(op, a, b);
  const at::ScalarType result = at::result_type(a, b);
  if (op == Op::kAdd) check_alpha(result, alpha);
  const at::Tensor& dev = (a.dim() == 0 && a.is_cpu()) ? b : a;
  at::Tensor out = a.sizes() == b.sizes() ? at::empty(a.sizes(), dev.options().dtype(result))
                                          : at::empty(broadcast_shape(op, a.sizes(), b.sizes()),
                                                      dev.options().dtype(result));
  run(op, a, b, alpha, result, out);
  return out;
}

void binary_out(Op op, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha,
                at::Tensor& out) {
  const char* name = op_name(op);
  check_inputs(op, a, b);
  check_dtype_supported(name, "out", out);
  const at::Tensor& dev = (a.dim() == 0 && a.is_cpu()) ? b : a;
  check_same_device(name, "out", out, dev.is_same(a) ? "self" : "other", dev);
  const at::ScalarType result = at::result_type(a, b);
  if (op == Op::kAdd) check_alpha(result, alpha);
  check_out_dtype(op, result, out);
  at::native::resize_output(out, broadcast_shape(op, a.sizes(), b.sizes()));
  const bool direct = out.is_contiguous() && at::has_internal_overlap(out) == at::MemOverlap::No &&
                      at::get_overlap_status(out, a) != at::MemOverlapStatus::Partial &&
                      at::get_overlap_status(out, b) != at::MemOverlapStatus::Partial &&
                      (!out.is_alias_of(a) || a.sizes() == out.sizes()) &&
                      (!out.is_alias_of(b) || b.sizes() == out.sizes());
  if (direct) {
    run(op, a, b, alpha, result, out);
  } else {
    at::Tensor tmp =
        at::empty(out.sizes(), out.options().memory_format(at::MemoryFormat::Contiguous));
    run(op, a, b, alpha, result, tmp);
    out.copy_(tmp);
  }
}

// ---- Meta (shapes and dtypes only; symbolic sizes welcome) --------------------------------

at::Tensor binary_meta(Op op, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha) {
  check_dtype_supported(op_name(op), "self", a);
  check_dtype_supported(op_name(op), "other", b);
  const at::ScalarType result = at::result_type(a, b);
  if (op == Op::kAdd) check_alpha(result, alpha);
  return at::empty_symint(at::infer_size_symint(a.sym_sizes(), b.sym_sizes()),
                          a.options().dtype(result));
}

void binary_out_meta(Op op, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha,
                     at::Tensor& out) {
  const at::ScalarType result = at::result_type(a, b);
  if (op == Op::kAdd) check_alpha(result, alpha);
  check_out_dtype(op, result, out);
  at::native::resize_output_symint(out, at::infer_size_symint(a.sym_sizes(), b.sym_sizes()));
}

// ---- Autograd ---------------------------------------------------------------------------

at::Tensor reduce_grad(const at::Tensor& g, const c10::IValue& sizes, const c10::IValue& dtype) {
  std::vector<c10::SymInt> shape = sizes.toSymIntVector();
  return at::sum_to(g, c10::SymIntArrayRef(shape)).to(dtype.toScalarType());
}

class AddFunction : public torch::autograd::Function<AddFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a,
                            const at::Tensor& b, const c10::Scalar& alpha) {
    ctx->saved_data["a_sizes"] = a.sym_sizes().vec();
    ctx->saved_data["b_sizes"] = b.sym_sizes().vec();
    ctx->saved_data["a_dtype"] = a.scalar_type();
    ctx->saved_data["b_dtype"] = b.scalar_type();
    ctx->saved_data["alpha"] = alpha;
    at::AutoDispatchBelowADInplaceOrView guard;
    return triton_embed::ops::add(a, b, alpha);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor& g = grads[0];
    at::Tensor ga, gb;
    if (ctx->needs_input_grad(0))
      ga = reduce_grad(g, ctx->saved_data["a_sizes"], ctx->saved_data["a_dtype"]);
    if (ctx->needs_input_grad(1)) {
      const c10::Scalar alpha = ctx->saved_data["alpha"].toScalar();
      at::Tensor scaled = (alpha.isIntegral(true) && alpha.toLong() == 1) ? g : g * alpha;
      gb = reduce_grad(scaled, ctx->saved_data["b_sizes"], ctx->saved_data["b_dtype"]);
    }
    return {ga, gb, at::Tensor()};
  }
};

class MulFunction : public torch::autograd::Function<MulFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a,
                            const at::Tensor& b) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["a_dtype"] = a.scalar_type();
    ctx->saved_data["b_dtype"] = b.scalar_type();
    at::AutoDispatchBelowADInplaceOrView guard;
    return triton_embed::ops::mul(a, b);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& a = saved[0];
    const at::Tensor& b = saved[1];
    const at::Tensor& g = grads[0];
    at::Tensor ga, gb;
    if (ctx->needs_input_grad(0)) {
      ga = reduce_grad(triton_embed::ops::mul(g, b), c10::IValue(a.sym_sizes().vec()),
                       ctx->saved_data["a_dtype"]);
    }
    if (ctx->needs_input_grad(1)) {
      gb = reduce_grad(triton_embed::ops::mul(g, a), c10::IValue(b.sym_sizes().vec()),
                       ctx->saved_data["b_dtype"]);
    }
    return {ga, gb};
  }
};

bool needs_grad(const at::Tensor& a, const at::Tensor& b) {
  return at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
}

// Without gradients the autograd kernels pass the call on to the backend kernel with the
// keys below autograd (a redispatch, as ATen's own autograd kernels do: no second lookup).
at::Tensor add_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b,
                        const c10::Scalar& alpha) {
  if (!needs_grad(a, b)) {
    TE_OP_HANDLE(op, "add", "",
                 at::Tensor(const at::Tensor&, const at::Tensor&, const c10::Scalar&));
    return op.redispatch(ks & c10::after_autograd_keyset, a, b, alpha);
  }
  return AddFunction::apply(a, b, alpha);
}

at::Tensor mul_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b) {
  if (!needs_grad(a, b)) {
    TE_OP_HANDLE(op, "mul", "", at::Tensor(const at::Tensor&, const at::Tensor&));
    return op.redispatch(ks & c10::after_autograd_keyset, a, b);
  }
  return MulFunction::apply(a, b);
}

at::Tensor add_impl(const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha) {
  return binary(Op::kAdd, a, b, alpha);
}
void add_out_impl(const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha,
                  at::Tensor& out) {
  binary_out(Op::kAdd, a, b, alpha, out);
}
at::Tensor mul_impl(const at::Tensor& a, const at::Tensor& b) { return binary(Op::kMul, a, b, 1); }
void mul_out_impl(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  binary_out(Op::kMul, a, b, 1, out);
}
at::Tensor add_meta(const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha) {
  return binary_meta(Op::kAdd, a, b, alpha);
}
void add_out_meta(const at::Tensor& a, const at::Tensor& b, const c10::Scalar& alpha,
                  at::Tensor& out) {
  binary_out_meta(Op::kAdd, a, b, alpha, out);
}
at::Tensor mul_meta(const at::Tensor& a, const at::Tensor& b) {
  return binary_meta(Op::kMul, a, b, 1);
}
void mul_out_meta(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  binary_out_meta(Op::kMul, a, b, 1, out);
}

// The same kernels serve CUDA tensors (GPU launch) and CPU tensors (Triton's interpreter).
void register_device_kernels(torch::Library& m) {
  m.impl("add", &add_impl);
  m.impl("add.out", &add_out_impl);
  m.impl("mul", &mul_impl);
  m.impl("mul.out", &mul_out_impl);
}

}  // namespace

TORCH_LIBRARY_IMPL(triton_embed, CUDA, m) { register_device_kernels(m); }
TORCH_LIBRARY_IMPL(triton_embed, CPU, m) { register_device_kernels(m); }
TORCH_LIBRARY_IMPL(triton_embed, Meta, m) {
  m.impl("add", &add_meta);
  m.impl("add.out", &add_out_meta);
  m.impl("mul", &mul_meta);
  m.impl("mul.out", &mul_out_meta);
}
TORCH_LIBRARY_IMPL(triton_embed, Autograd, m) {
  m.impl("add", &add_autograd);
  m.impl("mul", &mul_autograd);
}

}  // namespace triton_embed::ops
