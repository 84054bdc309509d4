#pragma once

// clang-format off
/*! \file
 *  \brief Torch tensors and scalars as kernel arguments (target \c triton_embed::torch, or
 *  \c triton_embed::torch_runtime without Python).
 *
 *  Including this header lets \c at::Tensor, \c std::optional<at::Tensor> and \c c10::Scalar
 *  be passed to a kernel, and adds triton_embed::launch(), which takes the device and the
 *  stream from the tensors as Python Triton does:
 *
 *  \code
 *  #include <triton_embed/torch.h>
 *
 *  static const triton_embed::JitFunction add("pykernels.vector", "add_kernel");
 *  at::Tensor out = at::empty_like(x);
 *  const int64_t n = x.numel();
 *  triton_embed::launch(add, {triton_embed::cdiv(n, 1024)}, x, y, out, n, 1024);
 *  \endcode
 *
 *  | C++ argument                      | Python value Triton sees                           |
 *  | --------------------------------- | -------------------------------------------------- |
 *  | \c at::Tensor                     | the tensor: a pointer to its dtype ('D' when \c data_ptr() is 16-byte aligned) |
 *  | empty \c std::optional<at::Tensor>, undefined \c at::Tensor | \c None                  |
 *  | \c c10::Scalar                    | \c bool, \c int or \c float, by the scalar's kind  |
 *
 *  Every dtype Python Triton accepts is mapped the same way (\c bool is \c u1, fp8 variants,
 *  signed and unsigned integers); other dtypes (complex, quantized) raise TypeError at launch.
 *
 *  triton_embed::launch() on CUDA tensors makes their device current and launches on torch's
 *  current stream for that device. On CPU tensors it runs the kernel through Triton's
 *  interpreter, on the host: that path is for correctness and debugging, not for speed.
 *  JitFunction::launch() takes tensors too, with an explicit stream and the current device,
 *  and refuses CPU tensors.
 *
 *  Two targets provide this header: \c triton_embed::torch (the JIT layer, and the torch
 *  layer's Python bridge: CPU tensors, tensors handed to Python heuristics and hooks) and
 *  \c triton_embed::torch_runtime (the runtime and libtorch, no Python: kernels come from
 *  bundles, and a CPU tensor raises NotSupportedError).
 */
// clang-format on

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "triton_embed/jit.h"

#define TRITON_EMBED_TORCH_API __attribute__((visibility("default")))

namespace triton_embed {

/*! \brief The Triton element type Python Triton gives a tensor of dtype \p t;
 *  DType::invalid for dtypes Triton cannot take (complex, quantized, ...).
 *  \code
 *  static_assert(triton_embed::triton_dtype(at::kBFloat16) == triton_embed::DType::bf16);
 *  \endcode */
constexpr DType triton_dtype(c10::ScalarType t) noexcept {
  switch (t) {
    case c10::ScalarType::Bool:
      return DType::u1;
    case c10::ScalarType::Byte:
      return DType::u8;
    case c10::ScalarType::Char:
      return DType::i8;
    case c10::ScalarType::Short:
      return DType::i16;
    case c10::ScalarType::Int:
      return DType::i32;
    case c10::ScalarType::Long:
      return DType::i64;
    case c10::ScalarType::UInt16:
      return DType::u16;
    case c10::ScalarType::UInt32:
      return DType::u32;
    case c10::ScalarType::UInt64:
      return DType::u64;
    case c10::ScalarType::Half:
      return DType::fp16;
    case c10::ScalarType::BFloat16:
      return DType::bf16;
    case c10::ScalarType::Float:
      return DType::fp32;
    case c10::ScalarType::Double:
      return DType::fp64;
    case c10::ScalarType::Float8_e4m3fn:
      return DType::fp8e4nv;
    case c10::ScalarType::Float8_e5m2:
      return DType::fp8e5;
    case c10::ScalarType::Float8_e4m3fnuz:
      return DType::fp8e4b8;
    case c10::ScalarType::Float8_e5m2fnuz:
      return DType::fp8e5b16;
    default:
      return DType::invalid;
  }
}

/*! \brief Raises NotSupportedError, prefixed with \p where, when this process cannot run CPU
 *  tensors: they go through Triton's interpreter, which needs the torch layer's Python bridge
 *  (linked by \c triton_embed::torch and \c triton_embed::ops, not by
 *  \c triton_embed::torch_runtime). For operators that check their tensors before loading a
 *  kernel, so that the error says why rather than that no bundle holds the kernel (the ops
 *  of \c ops/ do).
 *  \code
 *  if (x.is_cpu()) triton_embed::check_can_interpret("my_op");
 *  \endcode */
TRITON_EMBED_TORCH_API void check_can_interpret(std::string_view where);

// What the templates of this header call (not API): ArgTraits<c10::Scalar>::fill raises
// through throw_bad_scalar, triton_embed::launch() hands its call to torch_launch.
namespace detail {

/*! Where a tensor argument sits: its tensor and the index of the top-level argument. */
struct TensorRef {
  const at::Tensor* tensor;
  uint32_t arg;
};

[[noreturn]] TRITON_EMBED_TORCH_API void throw_bad_scalar(const c10::Scalar& s);

/*! Device resolution, device guard, stream and dispatch to the GPU or the interpreter. */
TRITON_EMBED_TORCH_API void torch_launch(const JitFunction& fn, const GridSpec& grid,
                                         ArgValue* args, size_t npos, const ArgName* names,
                                         size_t nnamed, const TensorRef* tensors, size_t ntensors);

/*! Writes t as a launch argument (an undefined tensor is None) and returns its device, read
 *  once for both. For an undefined tensor the returned device means nothing (it is the CPU):
 *  check t.defined() before using it. */
inline c10::Device fill_tensor(const at::Tensor& t, ArgValue& out) {
  out = ArgValue{};
  if (!t.defined()) {
    out.kind = ArgKind::kNone;
    return c10::Device(c10::kCPU);
  }
  const c10::Device device = t.device();
  out.kind = ArgKind::kPointer;
  out.dtype = triton_dtype(t.scalar_type());
  out.flags = static_cast<uint8_t>(kArgFromTensor | (device.is_cpu() ? kArgHostMemory : 0));
  out.u = reinterpret_cast<uintptr_t>(t.data_ptr());
  return device;
}

}  // namespace detail

template <>
struct ArgTraits<at::Tensor> {
  static constexpr size_t kNested = 0;
  static void fill(const at::Tensor& t, ArgValue& out, ArgValue*&) { detail::fill_tensor(t, out); }
};

template <>
struct ArgTraits<c10::Scalar> {
  static constexpr size_t kNested = 0;
  static void fill(const c10::Scalar& s, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    if (s.isSymbolic() || s.isComplex()) detail::throw_bad_scalar(s);
    if (s.isBoolean()) {
      out.kind = ArgKind::kBool;
      out.i = s.toBool() ? 1 : 0;
    } else if (s.isIntegral(/*includeBool=*/false)) {
      out.kind = ArgKind::kInt;
      if (s.type() == c10::ScalarType::UInt64 &&
          s.toUInt64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        out.big = 1;
        out.u = s.toUInt64();
      } else {
        out.i = s.toLong();
      }
    } else {
      out.kind = ArgKind::kFloat;
      out.f = s.toDouble();
    }
  }
};

namespace detail {

/*! TensorDescriptor::from_tensor for at::Tensor: Python's TensorDescriptor.from_tensor
 *  (data pointer, sizes, strides); flagged as host memory for a CPU tensor. */
template <>
struct TensorDescriptorSource<at::Tensor> {
  static TensorDescriptor make(const at::Tensor& t, TensorDescriptor::Dims block_shape,
                               Padding padding, bool round_f32_to_tf32) {
    const int64_t rank = t.dim();
    if (static_cast<size_t>(rank) != block_shape.size()) {
      throw ValueError("TensorDescriptor::from_tensor: the tensor has " + std::to_string(rank) +
                       " dimensions, block_shape " + std::to_string(block_shape.size()));
    }
    // The rank's range is the constructor's check (ValueError).
    TensorDescriptor d(reinterpret_cast<uintptr_t>(t.data_ptr()), triton_dtype(t.scalar_type()),
                       static_cast<int>(rank), t.sizes().data(), t.strides().data(),
                       block_shape.begin(), padding, round_f32_to_tf32);
    d.set_arg_flags(static_cast<uint8_t>(kArgFromTensor | (t.is_cpu() ? kArgHostMemory : 0)));
    return d;
  }
};

/*! Collects the tensors of a call, depth-first in argument order (the order fill_args
 *  writes them), with the index of the top-level argument each belongs to. */
template <class T, class = void>
struct TensorCollect {
  static constexpr size_t kCount = 0;
  static void collect(const T&, uint32_t, TensorRef*&) {}
};
template <class T>
struct TensorCollect<NamedArg<T>> {
  static constexpr size_t kCount = TensorCollect<std::decay_t<T>>::kCount;
  static void collect(const NamedArg<T>& a, uint32_t arg, TensorRef*& out) {
    TensorCollect<std::decay_t<T>>::collect(a.value(), arg, out);
  }
};
template <>
struct TensorCollect<at::Tensor> {
  static constexpr size_t kCount = 1;
  static void collect(const at::Tensor& t, uint32_t arg, TensorRef*& out) {
    if (t.defined()) *out++ = TensorRef{&t, arg};
  }
};
template <class T>
struct TensorCollect<std::optional<T>> {
  static constexpr size_t kCount = TensorCollect<std::decay_t<T>>::kCount;
  static void collect(const std::optional<T>& v, uint32_t arg, TensorRef*& out) {
    if (v.has_value()) TensorCollect<std::decay_t<T>>::collect(*v, arg, out);
  }
};
template <class... Ts>
struct TensorCollect<std::tuple<Ts...>> {
  static constexpr size_t kCount = (size_t{0} + ... + TensorCollect<std::decay_t<Ts>>::kCount);
  static void collect(const std::tuple<Ts...>& t, uint32_t arg, TensorRef*& out) {
    std::apply(
        [&](const auto&... e) {
          (TensorCollect<std::decay_t<decltype(e)>>::collect(e, arg, out), ...);
        },
        t);
  }
};
template <class A, class B>
struct TensorCollect<std::pair<A, B>> {
  static constexpr size_t kCount =
      TensorCollect<std::decay_t<A>>::kCount + TensorCollect<std::decay_t<B>>::kCount;
  static void collect(const std::pair<A, B>& p, uint32_t arg, TensorRef*& out) {
    TensorCollect<std::decay_t<A>>::collect(p.first, arg, out);
    TensorCollect<std::decay_t<B>>::collect(p.second, arg, out);
  }
};

template <class... Args>
inline constexpr size_t kTensorSlots = (size_t{0} + ... +
                                        TensorCollect<std::decay_t<Args>>::kCount);

template <class... Args, size_t... I>
size_t collect_tensors(TensorRef* out, std::index_sequence<I...>, const Args&... args) {
  TensorRef* p = out;
  (TensorCollect<std::decay_t<Args>>::collect(args, static_cast<uint32_t>(I), p), ...);
  return static_cast<size_t>(p - out);
}

template <class... Args>
void launch_with(const JitFunction& fn, const GridSpec& spec, const Args&... args) {
  CallStorage<Args...> s(args...);
  TensorRef tensors[kTensorSlots<Args...> + 1];
  const size_t nt = collect_tensors(tensors, std::index_sequence_for<Args...>{}, args...);
  torch_launch(fn, spec, s.vals, CallStorage<Args...>::kPositional, s.names,
               CallStorage<Args...>::kNamed, tensors, nt);
}

}  // namespace detail

/*! \brief Launches \p fn on the device of its tensor arguments, on torch's current stream
 *  for that device, as Python's \c kernel[grid](...) does. CPU tensors run the kernel
 *  through Triton's interpreter. Tensors on different devices raise ValueError naming the
 *  arguments; with no tensor argument the current CUDA device is used.
 *  \code
 *  triton_embed::launch(add, {triton_embed::cdiv(n, 1024)}, x, y, out, n, 1024);
 *  \endcode */
template <class... Args>
void launch(const JitFunction& fn, const Grid& grid, const Args&... args) {
  detail::GridSpec spec;
  spec.fixed = grid;
  detail::launch_with(fn, spec, args...);
}

/*! \brief As above, with the grid computed from the arguments by \p grid_fn.
 *  \code
 *  triton_embed::launch(add, [&](const triton_embed::Meta& m) {
 *    return triton_embed::Grid(triton_embed::cdiv(n, m["BLOCK"]));
 *  }, x, y, out, n, 1024);
 *  \endcode */
template <class F, class... Args,
          std::enable_if_t<
              std::is_invocable_r_v<Grid, const std::remove_reference_t<F>&, const Meta&>, int> = 0>
void launch(const JitFunction& fn, F&& grid_fn, const Args&... args) {
  detail::GridSpec spec;
  spec.fn = &detail::grid_thunk<F>;
  spec.ctx = static_cast<const void*>(&grid_fn);
  detail::launch_with(fn, spec, args...);
}

}  // namespace triton_embed
