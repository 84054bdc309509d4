#pragma once

/*! \file
 *  \brief Element types for CUDA's half, bfloat16 and fp8 types, so pointers to them are kernel
 *  arguments as they are: include after the CUDA headers that define the types you use.
 *  \code
 *  #include <cuda_fp16.h>
 *  #include <triton_embed/cuda_types.h>
 *  __half* x = ...;
 *  kernel.launch(grid, stream, x, n);  // *fp16
 *  \endcode
 */

#include "triton_embed/args.h"

#if defined(__CUDA_FP16_TYPES_EXIST__) || defined(__CUDA_FP16_H__)
template <>
struct triton_embed::ElementType<__half> {
  static constexpr DType value = DType::fp16;
};
#endif

#if defined(__CUDA_BF16_TYPES_EXIST__) || defined(__CUDA_BF16_H__)
template <>
struct triton_embed::ElementType<__nv_bfloat16> {
  static constexpr DType value = DType::bf16;
};
#endif

#if defined(__CUDA_FP8_TYPES_EXIST__)
template <>
struct triton_embed::ElementType<__nv_fp8_e4m3> {
  static constexpr DType value = DType::fp8e4nv;
};
template <>
struct triton_embed::ElementType<__nv_fp8_e5m2> {
  static constexpr DType value = DType::fp8e5;
};
#endif
