#pragma once

// The cache key of a specialised call (src/core/cache_key.cc): its words (build_key), and how
// a cache entry compiled for other words serves a call (match_key, one_slots).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/internal_api.h"
#include "core/cache.h"
#include "core/kernel_state.h"
#include "core/specialize.h"

namespace triton_embed::detail {

// Writes the cache key words for the leaves (the caller sets target and options).
TE_INTERNAL_API void build_key(const KernelState& kernel, const LeafList& leaves, Key& key);

// How a cache entry compiled for the key words `entry` (of the same kernel, target and
// options) serves a call specialised as `leaves`, whose key words are `call`. Triton's
// specialisation only adds assumptions that the compiled code may use: "D" (an integer
// divisible by 16, a pointer 16-byte aligned) and the integer 1 of an unannotated parameter
// as a constexpr. An entry serves the call when every leaf is the same but for assumptions
// the entry lacks: an entry leaf without "D" serves a call leaf with it, and an entry's plain
// i32 (no "D") serves a call's constexpr 1, which is then packed as the runtime int 1.
// Constexpr values (constexpr parameters, None, strings, ...), types, tuples and tensor
// descriptors must be the same.
struct KeyMatch {
  enum class Verdict : uint8_t { kExact, kServes, kRefused };
  Verdict verdict = Verdict::kRefused;
  uint32_t assumptions = 0;    // the entry's: "D" leaves and constexpr 1s of runtime parameters
  std::vector<uint32_t> ones;  // kServes: call leaves (constexpr 1) packed as the int 1
  std::string why;             // kRefused, when asked: why not ("argument #3 'n': ...")
  uint32_t nearness = 0;       // kRefused: how far it got (for listing the nearest first)
};
TE_INTERNAL_API KeyMatch match_key(const KernelState& kernel, const LeafList& leaves,
                                   const Key& call, const uint64_t* entry, size_t nentry,
                                   bool explain);

// Where the ones of `ones` (call leaves, ascending) go among a plain call's packed values (no
// tuple or descriptor leaves): each one's final slot, ascending.
TE_INTERNAL_API std::vector<uint32_t> one_slots(const LeafList& leaves,
                                                const std::vector<uint32_t>& ones);

}  // namespace triton_embed::detail
