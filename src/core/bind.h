#pragma once

// Binding a call's arguments to the kernel's parameters (src/core/bind.cc): a positional
// call's count and defaults (launch, compile, interpret), and a call with named arguments or
// of a wrapped kernel bound into a Frame with the errors Python's binder raises.

#include <cstdint>
#include <cstring>

#include "base/errors.h"
#include "base/internal_api.h"
#include "core/kernel_state.h"

namespace triton_embed::detail {

// TypeError: the call passed too few or too many arguments (as Python's binder raises).
[[noreturn]] TE_INTERNAL_API void throw_arg_count(const KernelState& k, size_t nargs);

// The arguments with the Python defaults of the parameters left out filled in: `args` itself
// when every parameter was passed, else `buf` (kMaxArgs values).
inline const ArgValue* with_defaults(const KernelState& k, const ArgValue* args, size_t nargs,
                                     ArgValue* buf) {
  const size_t np = k.params.size();
  if (TE_LIKELY(nargs == np)) return args;
  if (nargs > np || nargs < k.min_args) throw_arg_count(k, nargs);
  // np <= kMaxArgs: kernels with more parameters are refused when they are loaded.
  std::memcpy(static_cast<void*>(buf), args, nargs * sizeof(ArgValue));
  for (size_t i = nargs; i < np; ++i) buf[i] = k.defaults[i];
  return buf;
}

// Binds a call into a frame (positional, then named; Python's binder errors as TypeError).
void bind_frame(const KernelState& k, const CallArgs& call, Frame& f);

// Fills k.layer_params from its layers (each layer's loader calls it once they are read).
TE_INTERNAL_API void index_layer_params(KernelState& k);

// The required parameters the frame lacks, leaving out those in `later` (a layer may still
// set them).
[[noreturn]] void throw_missing(const KernelState& k, const Frame& f, const ParamMask& later);

// a[0..n) == b[0..n), in a few word compares for the short strings parameter names are.
inline bool same_bytes(const char* a, const char* b, uint32_t n) noexcept {
  const auto word8 = [](const char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  };
  const auto word4 = [](const char* p) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    return w;
  };
  if (n >= 8) {
    // 8-byte words from the front, then the last 8 bytes (overlapping the previous word).
    for (uint32_t i = 0; i + 8 < n; i += 8) {
      if (word8(a + i) != word8(b + i)) return false;
    }
    return word8(a + n - 8) == word8(b + n - 8);
  }
  if (n >= 4) return word4(a) == word4(b) && word4(a + n - 4) == word4(b + n - 4);
  for (uint32_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace triton_embed::detail
