#pragma once

// Helpers shared by the operators: kernel handles, dtype rules and argument checks.
// Each check raises the torch exception Python users expect (ValueError / TypeError /
// RuntimeError) with a message that names the operator and the argument.

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <string>

#include "triton_embed/torch.h"

namespace triton_embed::ops {

// Ops' Triton kernels live in pykernels/; a handle imports the module on first use (with the
// JIT layer), or reads the kernel from the loaded bundles (triton_embed::ops_runtime).
#define TE_OPS_KERNEL(var, module, name) \
  static const ::triton_embed::JitFunction var("pykernels." module, name)

// The smallest power of two >= n (n >= 1).
inline int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Before an op loads its kernel: a CPU tensor `t` (the one the op runs on) runs through
// Triton's interpreter, which a program without Python (triton_embed::ops_runtime) lacks:
// NotSupportedError says so, rather than that no bundle holds the kernel.
inline void check_can_run(const char* op, const at::Tensor& t) {
  if (t.is_cpu()) check_can_interpret(std::string("triton_embed::") + op);
}

inline bool is_float(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat || t == at::kDouble;
}

// Integer, bool and float dtypes the elementwise and reduction kernels take.
inline bool is_supported_real(at::ScalarType t) {
  switch (t) {
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble:
      return true;
    default:
      return false;
  }
}

// The type kernels compute in for results of dtype t: fp32 for half types, fp64 for double,
// the integer type itself, int32 for bool.
inline DType compute_dtype(at::ScalarType t) {
  switch (t) {
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
      return DType::fp32;
    case at::kDouble:
      return DType::fp64;
    case at::kBool:
      return DType::i32;
    default:
      return triton_dtype(t);
  }
}

// A float scalar in the precision of the compute type: fp64 for double tensors, else the
// Python-float default (fp32).
inline Scalar float_arg(double v, at::ScalarType t) { return t == at::kDouble ? fp64(v) : fp32(v); }

inline void check_dtype_supported(const char* op, const char* arg, const at::Tensor& t) {
  TORCH_CHECK_TYPE(is_supported_real(t.scalar_type()), "triton_embed::", op, ": argument '", arg,
                   "' has dtype ", t.scalar_type(),
                   ", which is not supported; use bool, an integer, float16, bfloat16, "
                   "float32 or float64 tensor");
}

inline void check_float(const char* op, const char* arg, const at::Tensor& t) {
  TORCH_CHECK_TYPE(is_float(t.scalar_type()), "triton_embed::", op, ": argument '", arg,
                   "' must be a float16, bfloat16, float32 or float64 tensor, got ",
                   t.scalar_type());
}

inline void check_device(const char* op, const char* arg, const at::Tensor& t) {
  TORCH_CHECK(t.is_cuda() || t.is_cpu() || t.is_meta(), "triton_embed::", op, ": argument '", arg,
              "' is on ", t.device(), "; the operator runs on CUDA and CPU tensors");
}

inline void check_same_device(const char* op, const char* arg, const at::Tensor& t,
                              const char* ref_arg, const at::Tensor& ref) {
  TORCH_CHECK(t.device() == ref.device(), "triton_embed::", op,
              ": expected all tensors to be on the same device, but argument '", arg, "' is on ",
              t.device(), " and argument '", ref_arg, "' is on ", ref.device());
}

}  // namespace triton_embed::ops
