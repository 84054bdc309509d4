#pragma once

// clang-format off
/*! \file
 *  \brief How C++ values become Triton kernel arguments.
 *
 *  The default mapping of each C++ type is the one Triton applies to the matching Python
 *  value, so the same call from C++ and from Python compiles the same kernel:
 *
 *  | C++ argument                                   | Python value Triton sees       |
 *  | ---------------------------------------------- | ------------------------------ |
 *  | any integer type (\c int, \c int64_t, \c uint64_t, ...) | \c int (i32 / i64 / u64 by value, 1 becomes constexpr, 'D' when divisible by 16) |
 *  | \c float, \c double                            | \c float (fp32)                |
 *  | \c bool                                        | \c bool (u1)                   |
 *  | \c T* for an arithmetic \c T, \c Pointer       | a tensor with that element type ('D' when 16-byte aligned) |
 *  | \c nullptr, \c std::nullopt, empty \c std::optional | \c None                   |
 *  | \c const \c char*, \c std::string(_view)       | \c str (constexpr parameters only) |
 *  | \c DType                                       | a \c tl.dtype (constexpr parameters only) |
 *  | \c std::tuple, \c std::pair                    | \c tuple                       |
 *  | \c Constexpr(v)                                | \c tl.constexpr(v)             |
 *  | \c i32(v), \c i64(v), \c u64(v), \c fp64(v), ... | the value with that Triton type (as an annotation would) |
 *  | another \c JitFunction                         | the \c JITFunction (constexpr) |
 *
 *  Unsupported types fail to compile with a message that says what to use. Extend the
 *  mapping by specialising \c triton_embed::ArgTraits (the torch layer does so for
 *  \c at::Tensor).
 *  \code
 *  float* x; const float* y; float* out; int n = 4096;
 *  add.launch({triton_embed::cdiv(n, 1024)}, stream, x, y, out, n, 1024);
 *  add.launch(grid, stream, triton_embed::Pointer(raw, triton_embed::DType::bf16), y, out,
 *             triton_embed::i64(n), 1024);
 *  \endcode
 */
// clang-format on

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "triton_embed/arg_value.h"
#include "triton_embed/dtype.h"

namespace triton_embed {

/*! \brief A raw device pointer with an explicit element type.
 *  \code
 *  triton_embed::Pointer p(cu_deviceptr_value, triton_embed::DType::fp16);
 *  \endcode
 */
struct Pointer {
  uint64_t address = 0;
  DType dtype = DType::invalid;
  constexpr Pointer() = default;
  constexpr Pointer(uint64_t addr, DType t) : address(addr), dtype(t) {}
  Pointer(const volatile void* p, DType t) : address(reinterpret_cast<uintptr_t>(p)), dtype(t) {}
};

/*! \brief A scalar with a forced Triton type, as a parameter annotation would give it.
 *  Build one with \c i8() ... \c u64(), \c fp16(), \c bf16(), \c fp32(), \c fp64(), \c u1().
 *  \code
 *  kernel.launch(grid, stream, x, triton_embed::i64(n), triton_embed::fp64(alpha));
 *  \endcode
 */
struct Scalar {
  DType type = DType::invalid;
  bool big = false;  //!< integer above INT64_MAX, held in \c u
  union {
    int64_t i;
    uint64_t u;
    double f;
  };
  constexpr Scalar() : i(0) {}
};

namespace detail {
template <class T>
inline Scalar make_int_scalar(DType t, T v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                "triton_embed: integer scalar wrappers take an integer value");
  Scalar s;
  s.type = t;
  if constexpr (std::is_unsigned_v<T>) {
    if (static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      s.big = true;
      s.u = static_cast<uint64_t>(v);
      return s;
    }
  }
  s.i = static_cast<int64_t>(v);
  return s;
}
inline Scalar make_float_scalar(DType t, double v) {
  Scalar s;
  s.type = t;
  s.f = v;
  return s;
}
}  // namespace detail

/*! \brief Forced integer types (checked against the type's range at launch). */
template <class T>
inline Scalar i8(T v) {
  return detail::make_int_scalar(DType::i8, v);
}
template <class T>
inline Scalar i16(T v) {
  return detail::make_int_scalar(DType::i16, v);
}
template <class T>
inline Scalar i32(T v) {
  return detail::make_int_scalar(DType::i32, v);
}
template <class T>
inline Scalar i64(T v) {
  return detail::make_int_scalar(DType::i64, v);
}
template <class T>
inline Scalar u8(T v) {
  return detail::make_int_scalar(DType::u8, v);
}
template <class T>
inline Scalar u16(T v) {
  return detail::make_int_scalar(DType::u16, v);
}
template <class T>
inline Scalar u32(T v) {
  return detail::make_int_scalar(DType::u32, v);
}
template <class T>
inline Scalar u64(T v) {
  return detail::make_int_scalar(DType::u64, v);
}
/*! \brief A forced u1 (bool) scalar. */
inline Scalar u1(bool v) { return detail::make_int_scalar(DType::u1, static_cast<int>(v)); }
/*! \brief Forced floating-point types (converted as Triton's launcher converts). */
inline Scalar fp16(double v) { return detail::make_float_scalar(DType::fp16, v); }
inline Scalar bf16(double v) { return detail::make_float_scalar(DType::bf16, v); }
inline Scalar fp32(double v) { return detail::make_float_scalar(DType::fp32, v); }
inline Scalar fp64(double v) { return detail::make_float_scalar(DType::fp64, v); }

/*! \brief Passes \p value as \c tl.constexpr(value): a compile-time constant even for a
 *  runtime parameter.
 *  \code
 *  kernel.launch(grid, stream, x, triton_embed::Constexpr(8));
 *  \endcode
 */
template <class T>
struct Constexpr {
  T value;
  constexpr explicit Constexpr(T v) : value(std::move(v)) {}
};
template <class T>
Constexpr(T) -> Constexpr<T>;

template <class T, class Enable = void>
struct ArgTraits;

namespace detail {

template <class T>
inline constexpr bool dependent_false = false;

template <class T>
constexpr DType arithmetic_dtype() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>)
    return DType::u1;
  else if constexpr (std::is_same_v<U, float>)
    return DType::fp32;
  else if constexpr (std::is_same_v<U, double>)
    return DType::fp64;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 1)
    return DType::i8;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 2)
    return DType::i16;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 4)
    return DType::i32;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 8)
    return DType::i64;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 1)
    return DType::u8;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 2)
    return DType::u16;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 4)
    return DType::u32;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 8)
    return DType::u64;
  else
    return DType::invalid;
}

}  // namespace detail

/*! \brief The Triton element type of a \c T* argument. Arithmetic types are mapped; specialise
 *  it for your own element types (\c <triton_embed/cuda_types.h> does so for \c __half,
 *  \c __nv_bfloat16 and the fp8 types).
 *  \code
 *  template <> struct triton_embed::ElementType<my_half> { static constexpr DType value =
 * DType::fp16; }; \endcode */
template <class T, class Enable = void>
struct ElementType {
  static constexpr DType value = detail::arithmetic_dtype<T>();
};

namespace detail {

template <class T>
constexpr DType dtype_of() {
  return ElementType<std::remove_cv_t<T>>::value;
}

template <class T>
inline constexpr bool is_char_type_v =
    std::is_same_v<std::remove_cv_t<T>, char> || std::is_same_v<std::remove_cv_t<T>, wchar_t> ||
    std::is_same_v<std::remove_cv_t<T>, char16_t> || std::is_same_v<std::remove_cv_t<T>, char32_t>
#if defined(__cpp_char8_t)
    || std::is_same_v<std::remove_cv_t<T>, char8_t>
#endif
    ;

inline ArgValue make_int_value(int64_t v) {
  ArgValue a{};
  a.kind = ArgKind::kInt;
  a.i = v;
  return a;
}

/*! Number of extra ArgValue slots an argument of type T needs (tuples, wrappers). */
template <class T>
constexpr size_t nested_slots() {
  return ArgTraits<std::decay_t<T>>::kNested;
}

}  // namespace detail

/*! \brief Maps a C++ type to a kernel argument. Disabled by default: an unsupported type
 *  fails to compile with a message saying what to use.
 *
 *  A specialisation provides \c kNested (extra slots for nested values) and
 *  \code
 *  static void fill(const T& v, ArgValue& out, ArgValue*& nested);
 *  \endcode
 */
template <class T, class Enable>
struct ArgTraits {
  static_assert(detail::dependent_false<T>,
                "triton_embed: this C++ type cannot be passed to a Triton kernel. Use an "
                "integer or floating-point scalar, bool, a pointer to an arithmetic type or "
                "triton_embed::Pointer(ptr, DType) for device memory, triton_embed::i64()/"
                "fp64()/... to force a scalar type, std::tuple for Triton tuples, "
                "nullptr/std::nullopt for None, a string or triton_embed::DType for "
                "tl.constexpr parameters (include <triton_embed/torch.h> for at::Tensor), "
                "or specialise triton_embed::ArgTraits for your type.");
  static constexpr size_t kNested = 0;
};

template <>
struct ArgTraits<bool> {
  static constexpr size_t kNested = 0;
  static void fill(bool v, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kBool;
    out.i = v ? 1 : 0;
  }
};

template <class T>
struct ArgTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                     !detail::is_char_type_v<T>>> {
  static constexpr size_t kNested = 0;
  static void fill(T v, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kInt;
    if constexpr (std::is_unsigned_v<T>) {
      if (static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        out.big = 1;
        out.u = static_cast<uint64_t>(v);
        return;
      }
    }
    out.i = static_cast<int64_t>(v);
  }
};

template <class T>
struct ArgTraits<T, std::enable_if_t<detail::is_char_type_v<T>>> {
  static_assert(detail::dependent_false<T>,
                "triton_embed: a character type is ambiguous as a kernel argument. Use "
                "int8_t / uint8_t for an integer or a string for a tl.constexpr.");
  static constexpr size_t kNested = 0;
};

template <class T>
struct ArgTraits<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static_assert(!std::is_same_v<T, long double>,
                "triton_embed: long double has no Triton type; use double (passed as fp32 "
                "like a Python float) or triton_embed::fp64(v).");
  static constexpr size_t kNested = 0;
  static void fill(T v, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kFloat;
    out.f = static_cast<double>(v);
  }
};

template <class T>
struct ArgTraits<T*, std::enable_if_t<!detail::is_char_type_v<T>>> {
  static_assert(!std::is_void_v<std::remove_cv_t<T>>,
                "triton_embed: a void* has no element type. Pass "
                "triton_embed::Pointer(ptr, triton_embed::DType::fp32) (or the right DType), "
                "or a typed pointer such as float*.");
  static_assert(std::is_void_v<std::remove_cv_t<T>> || detail::dtype_of<T>() != DType::invalid,
                "triton_embed: only pointers to arithmetic types map to a Triton element "
                "type. Use triton_embed::Pointer(ptr, DType) for other element types "
                "(include <triton_embed/cuda_types.h> for __half, __nv_bfloat16, fp8).");
  static constexpr size_t kNested = 0;
  static void fill(const T* p, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kPointer;
    out.dtype = detail::dtype_of<T>();
    out.u = reinterpret_cast<uintptr_t>(p);
  }
};

template <>
struct ArgTraits<Pointer> {
  static constexpr size_t kNested = 0;
  static void fill(const Pointer& p, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kPointer;
    out.dtype = p.dtype;
    out.u = p.address;
  }
};

template <>
struct ArgTraits<Scalar> {
  static constexpr size_t kNested = 0;
  static void fill(const Scalar& s, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kScalar;
    out.dtype = s.type;
    out.big = s.big ? 1 : 0;
    out.u = s.u;
  }
};

template <>
struct ArgTraits<DType> {
  static constexpr size_t kNested = 0;
  static void fill(DType t, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kDType;
    out.dtype = t;
  }
};

template <>
struct ArgTraits<std::nullptr_t> {
  static constexpr size_t kNested = 0;
  static void fill(std::nullptr_t, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kNone;
  }
};

template <>
struct ArgTraits<std::nullopt_t> {
  static constexpr size_t kNested = 0;
  static void fill(std::nullopt_t, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kNone;
  }
};

template <class T>
struct ArgTraits<std::optional<T>> {
  static constexpr size_t kNested = detail::nested_slots<T>();
  static void fill(const std::optional<T>& v, ArgValue& out, ArgValue*& nested) {
    if (v.has_value()) {
      ArgTraits<std::decay_t<T>>::fill(*v, out, nested);
    } else {
      out = ArgValue{};
      out.kind = ArgKind::kNone;
    }
  }
};

namespace detail {
inline void fill_str(const char* s, size_t n, ArgValue& out) {
  out = ArgValue{};
  out.kind = ArgKind::kStr;
  out.s = s;
  out.count = static_cast<uint32_t>(n);
}
}  // namespace detail

template <>
struct ArgTraits<const char*> {
  static constexpr size_t kNested = 0;
  static void fill(const char* s, ArgValue& out, ArgValue*&) {
    detail::fill_str(s, std::strlen(s), out);
  }
};
template <>
struct ArgTraits<char*> : ArgTraits<const char*> {};

template <>
struct ArgTraits<std::string_view> {
  static constexpr size_t kNested = 0;
  static void fill(std::string_view s, ArgValue& out, ArgValue*&) {
    detail::fill_str(s.data(), s.size(), out);
  }
};

template <>
struct ArgTraits<std::string> {
  static constexpr size_t kNested = 0;
  static void fill(const std::string& s, ArgValue& out, ArgValue*&) {
    detail::fill_str(s.data(), s.size(), out);
  }
};

template <class T>
struct ArgTraits<Constexpr<T>> {
  static constexpr size_t kNested = 1 + detail::nested_slots<T>();
  static void fill(const Constexpr<T>& c, ArgValue& out, ArgValue*& nested) {
    ArgValue* inner = nested++;
    ArgTraits<std::decay_t<T>>::fill(c.value, *inner, nested);
    out = ArgValue{};
    out.kind = ArgKind::kConstexpr;
    out.elems = inner;
  }
};

namespace detail {
template <class Tuple, size_t... I>
void fill_tuple(const Tuple& t, ArgValue& out, ArgValue*& nested, std::index_sequence<I...>) {
  constexpr size_t n = sizeof...(I);
  ArgValue* elems = nested;
  nested += n;
  (ArgTraits<std::decay_t<std::tuple_element_t<I, Tuple>>>::fill(std::get<I>(t), elems[I], nested),
   ...);
  out = ArgValue{};
  out.kind = ArgKind::kTuple;
  out.count = static_cast<uint32_t>(n);
  out.elems = elems;
}
}  // namespace detail

template <class... Ts>
struct ArgTraits<std::tuple<Ts...>> {
  static constexpr size_t kNested = (sizeof...(Ts) + ... + detail::nested_slots<Ts>());
  static void fill(const std::tuple<Ts...>& t, ArgValue& out, ArgValue*& nested) {
    detail::fill_tuple(t, out, nested, std::index_sequence_for<Ts...>{});
  }
};

template <class A, class B>
struct ArgTraits<std::pair<A, B>> {
  static constexpr size_t kNested = 2 + detail::nested_slots<A>() + detail::nested_slots<B>();
  static void fill(const std::pair<A, B>& t, ArgValue& out, ArgValue*& nested) {
    detail::fill_tuple(t, out, nested, std::index_sequence<0, 1>{});
  }
};

namespace detail {

/*! Total ArgValue slots for a call: one per argument plus their nested values. */
template <class... Args>
inline constexpr size_t kArgSlots = (sizeof...(Args) + ... + nested_slots<Args>());

/*! Fills \p vals[0..sizeof...(Args)) with the arguments; nested values follow them. */
template <class... Args>
inline void fill_args(ArgValue* vals, const Args&... args) {
  ArgValue* nested = vals + sizeof...(Args);
  ArgValue* out = vals;
  (ArgTraits<std::decay_t<Args>>::fill(args, *out++, nested), ...);
}

}  // namespace detail
}  // namespace triton_embed
