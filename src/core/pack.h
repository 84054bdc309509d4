#pragma once

// Packing a call's runtime values for the launch (src/core/pack.cc): the one-pass key and
// pack of the launch path's common case, and the patterns of the general path's leaves.

#include <cstddef>
#include <cstdint>

#include "base/internal_api.h"
#include "core/cache.h"
#include "core/kernel_state.h"
#include "core/specialize.h"
#include "triton_embed/arg_value.h"

namespace triton_embed::detail {

struct DescSlots;  // core/tensor_map.h

// Inserts the entry's constexpr 1s, packed as the int 1 (Entry::one_slots, ascending final
// positions), among the np packed values of a call: returns the new count. The hot path runs
// it for entries that serve a call by a less specialised signature only.
inline uint32_t insert_ones(const uint32_t* at, size_t nat, uint64_t* slots, uint32_t np) noexcept {
  const uint32_t total = np + static_cast<uint32_t>(nat);
  uint32_t src = np;
  for (uint32_t dst = total; dst-- > 0;) {
    if (nat > 0 && at[nat - 1] == dst) {
      slots[dst] = 1;
      --nat;
    } else {
      slots[dst] = slots[--src];
    }
  }
  return total;
}

// The common case in one pass: when every parameter is unannotated and every value a
// pointer, integer, bool, float or a constexpr of a few words, writes the key words
// specialize() + build_key() would write (the caller sets target and options) and the
// packed runtime values (pack_leaf()'s patterns), and returns true. Otherwise returns false
// and the caller takes the general path, which also raises the errors.
// Host tensor descriptors (checked as the general path checks them) are taken when the
// caller passes `descs`: they go there, to be packed once the entry is known
// (expand_descriptors); without it a call with one returns false.
TE_INTERNAL_API bool key_and_pack(const KernelState& kernel, const ArgValue* args, Key& key,
                                  uint64_t* slots, uint32_t* nslots, DescSlots* descs = nullptr);
// The same for the first n parameters only (a positional call of a wrapped kernel, before
// its layers set the rest).
bool key_and_pack_first(const KernelState& kernel, const ArgValue* args, size_t n, Key& key,
                        uint64_t* slots, uint32_t* nslots, DescSlots* descs = nullptr);

// The 64-bit pattern passed for a runtime (non-constexpr) leaf, as Triton's launcher
// converts the Python value: integers sign- or zero-extended, fp16 rounded to nearest even,
// bf16 truncated from fp32, fp32/fp64 IEEE bits, pointers as addresses. The kernel reads the
// low bytes of its parameter's size.
TE_INTERNAL_API uint64_t pack_leaf(const KernelState& kernel, const Leaf& leaf);

// ValueError: argument `param` is host memory (a CPU tensor) on a GPU launch.
[[noreturn]] void throw_host_memory(const KernelState& kernel, uint32_t param);

// Double to IEEE half bits exactly as CPython's PyFloat_Pack2 (round half to even); false
// when the value overflows fp16 (Python raises OverflowError there).
TE_INTERNAL_API bool double_to_half_bits(double value, uint16_t* bits);

}  // namespace triton_embed::detail
