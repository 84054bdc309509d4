// The test hooks of detail/testing.h that need no Python (the rest: src/python/testing.cc).

#include "triton_embed/detail/testing.h"

#include <mutex>

#include "core/kernel_state.h"
#include "core/specialize.h"

namespace triton_embed::detail::testing {

size_t cache_size(const JitFunction& fn) {
  Cache& c = fn.state()->cache;
  std::lock_guard<std::mutex> lock(c.mu);
  return c.table.size();
}

int compile_waiters(const JitFunction& fn) {
  Cache& c = fn.state()->cache;
  std::lock_guard<std::mutex> lock(c.mu);
  return c.building.waiters();
}

bool half_bits(double value, uint16_t* bits) { return double_to_half_bits(value, bits); }

}  // namespace triton_embed::detail::testing
