#pragma once

// What a compiled kernel's metadata says of one tensordesc parameter (Triton's
// metadata.tensordesc_meta): what the launch encodes a descriptor's tensor map from, and what a
// bundle entry stores of it (src/bundle/format.h). Absent when Triton did not lower the
// descriptor to TMA (targets before sm_90): the launcher then passes base, shape, strides and
// flags instead of a map.

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace triton_embed::detail {

struct TmaMeta {
  bool present = false;
  int32_t swizzle = 0;    // CUtensorMapSwizzle
  int32_t elem_size = 0;  // bytes
  int32_t elem_type = 0;  // Triton's device-side TMA type (mapped to the driver's on encoding)
  int32_t rank = 0;       // 0..5
  uint32_t box[5] = {};   // block_size, outermost first
  bool fp4_padded = false;
};

inline bool operator==(const TmaMeta& a, const TmaMeta& b) {
  return a.present == b.present && a.swizzle == b.swizzle && a.elem_size == b.elem_size &&
         a.elem_type == b.elem_type && a.rank == b.rank && a.fp4_padded == b.fp4_padded &&
         std::equal(std::begin(a.box), std::end(a.box), std::begin(b.box));
}
inline bool operator!=(const TmaMeta& a, const TmaMeta& b) { return !(a == b); }

}  // namespace triton_embed::detail
