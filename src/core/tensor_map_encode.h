#pragma once

// The arguments of one cuTensorMapEncodeTiled call (src/core/tensor_map.cc), and the seam
// through which the tests replace the driver's encoder (src/testing/: without a GPU they
// check the encoding's inputs and its cache). Internal: no public header uses it.

#include <cstdint>

#include "core/internal_api.h"

namespace triton_embed::detail {

/* The arguments as plain integers (the driver's enum values); \c strides in bytes, \c rank - 1
   of them. */
struct TensorMapEncodeCall {
  int data_type = 0;
  uint32_t rank = 0;
  uint64_t address = 0;
  uint64_t dims[5] = {};
  uint64_t strides[5] = {};
  uint32_t box[5] = {};
  uint32_t element_strides[5] = {};
  int interleave = 0, swizzle = 0, l2_promotion = 0, oob_fill = 0;
};

// Writes the 128 bytes of the map in place of the driver.
using TensorMapEncoder = void (*)(const TensorMapEncodeCall& call, unsigned char* map);

// Replaces the driver's cuTensorMapEncodeTiled (nullptr restores it).
TE_INTERNAL_API void set_tensor_map_encoder(TensorMapEncoder encoder);
// How many tensor maps have been encoded (cache misses) since the process started.
TE_INTERNAL_API uint64_t tensor_map_encodes();

}  // namespace triton_embed::detail
