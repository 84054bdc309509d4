#pragma once

/*! \file
 *  \brief Triton's element types, named as in Triton's kernel signatures.
 *
 *  A \c DType is the element type of a pointer argument (\c Pointer), the type of a forced
 *  scalar (\c i64(), \c fp64(), ...) or, passed to a \c tl.constexpr parameter, the Triton
 *  dtype object itself (\c tl.float16 for \c DType::fp16).
 *  \code
 *  kernel.launch(grid, stream, triton_embed::Pointer(dev_ptr, triton_embed::DType::bf16), n,
 *                triton_embed::DType::fp32);  // last argument: OUT_DTYPE: tl.constexpr
 *  \endcode
 */

#include <cstdint>
#include <string_view>

#include "triton_embed/detail/export.h"

namespace triton_embed {

/*! \brief Triton element types. The enumerator names are Triton's signature names. */
enum class DType : uint8_t {
  invalid = 0,
  u1,        //!< bool / tl.int1
  i8,        //!< tl.int8
  i16,       //!< tl.int16
  i32,       //!< tl.int32
  i64,       //!< tl.int64
  u8,        //!< tl.uint8
  u16,       //!< tl.uint16
  u32,       //!< tl.uint32
  u64,       //!< tl.uint64
  fp8e4nv,   //!< tl.float8e4nv (torch.float8_e4m3fn)
  fp8e5,     //!< tl.float8e5 (torch.float8_e5m2)
  fp8e4b15,  //!< tl.float8e4b15
  fp8e4b8,   //!< tl.float8e4b8 (torch.float8_e4m3fnuz)
  fp8e5b16,  //!< tl.float8e5b16 (torch.float8_e5m2fnuz)
  fp16,      //!< tl.float16
  bf16,      //!< tl.bfloat16
  fp32,      //!< tl.float32
  fp64,      //!< tl.float64
};

/*! \brief Triton's signature name of \p t (\c "fp16", \c "u1", ...); \c "invalid" for
 *  DType::invalid. */
TRITON_EMBED_API std::string_view dtype_name(DType t) noexcept;

/*! \brief The \c triton.language attribute of \p t (\c "float16", \c "int1", ...). */
TRITON_EMBED_API std::string_view dtype_tl_name(DType t) noexcept;

/*! \brief Parses a Triton signature name (\c "fp32") or a \c triton.language / torch dtype
 *  name (\c "float32", \c "bfloat16", \c "bool", \c "float8_e4m3fn"); DType::invalid if
 *  unknown. */
TRITON_EMBED_API DType dtype_from_name(std::string_view name) noexcept;

/*! \brief Size of one element in bytes (1 for u1). */
constexpr int dtype_size(DType t) noexcept {
  switch (t) {
    case DType::u1:
    case DType::i8:
    case DType::u8:
    case DType::fp8e4nv:
    case DType::fp8e5:
    case DType::fp8e4b15:
    case DType::fp8e4b8:
    case DType::fp8e5b16:
      return 1;
    case DType::i16:
    case DType::u16:
    case DType::fp16:
    case DType::bf16:
      return 2;
    case DType::i32:
    case DType::u32:
    case DType::fp32:
      return 4;
    case DType::i64:
    case DType::u64:
    case DType::fp64:
      return 8;
    default:
      return 0;
  }
}

/*! \brief True for the floating-point types (fp8 variants, fp16, bf16, fp32, fp64). */
constexpr bool dtype_is_float(DType t) noexcept { return t >= DType::fp8e4nv && t <= DType::fp64; }

/*! \brief True for the types a scalar kernel argument can have (u1, integers, fp16, bf16,
 *  fp32, fp64). */
constexpr bool dtype_is_scalar_arg(DType t) noexcept {
  return (t >= DType::u1 && t <= DType::u64) || (t >= DType::fp16 && t <= DType::fp64);
}

}  // namespace triton_embed
