#pragma once

// Triton's argument specialisation in C++.
//
// Each parameter's value becomes one or more leaves (a tuple adds begin/end markers): the
// leaf's signature type ("i32", "*fp16", "constexpr", ...) and specialisation key (None, ""
// or "D", or the integer 1 that an annotated parameter keeps). The rules are those of
// Triton's binder (create_function_from_signature) and native_specialize_impl; the parity
// tests check them value by value against the installed Triton.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/internal_api.h"
#include "core/cache.h"
#include "core/kernel_state.h"
#include "triton_embed/arg_value.h"

namespace triton_embed::detail {

struct DescSlots;  // core/tensor_map.h

enum class LeafKind : uint8_t {
  kConstexpr,
  kScalar,
  kPointer,
  kTupleBegin,
  kTupleEnd,
  kTensorDesc
};

// The specialisation "key" Triton pairs with a type.
enum class SpecKey : uint8_t {
  kNone,   // None
  kEmpty,  // ""  (specialised, not divisible by 16)
  kDiv16,  // "D" (divisible by 16 / 16-byte aligned)
  kOne,    // the int 1 (an annotated or forced integer parameter given 1)
};

struct Leaf {
  LeafKind kind;
  DType dtype;  // kScalar: the type; kPointer: the element type
  SpecKey key;
  uint8_t is_const;       // kPointer: "*k" prefix
  uint32_t count;         // kTupleBegin: number of elements; kTensorDesc: rank and block shape
                          // (check_descriptor's word)
  uint32_t param;         // index of the parameter the leaf belongs to
  const ArgValue* value;  // the value (constexpr leaves: the constant)
};

struct LeafList {
  Leaf leaves[kMaxLeaves];
  uint32_t n = 0;
  uint32_t ndesc = 0;  // kTensorDesc leaves
};

// Specialises every parameter. `args` holds one value per parameter (defaults filled in).
// Throws TypeError / ValueError naming the kernel, argument and what to pass instead.
TE_INTERNAL_API void specialize(const KernelState& kernel, const ArgValue* args, LeafList& out);

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
TE_INTERNAL_API bool fast_key_and_pack(const KernelState& kernel, const ArgValue* args, Key& key,
                                       uint64_t* slots, uint32_t* nslots,
                                       DescSlots* descs = nullptr);
// The same for the first n parameters only (a positional call of a wrapped kernel, before
// its layers set the rest).
bool fast_key_and_pack_first(const KernelState& kernel, const ArgValue* args, size_t n, Key& key,
                             uint64_t* slots, uint32_t* nslots, DescSlots* descs = nullptr);

// The 64-bit pattern passed for a runtime (non-constexpr) leaf, as Triton's launcher
// converts the Python value: integers sign- or zero-extended, fp16 rounded to nearest even,
// bf16 truncated from fp32, fp32/fp64 IEEE bits, pointers as addresses. The kernel reads the
// low bytes of its parameter's size.
TE_INTERNAL_API uint64_t pack_leaf(const KernelState& kernel, const Leaf& leaf);

// ValueError: argument `param` is host memory (a CPU tensor) on a GPU launch.
[[noreturn]] void throw_host_memory(const KernelState& kernel, uint32_t param);

// Triton's signature type of a leaf: "i32", "*kfp16", "constexpr" (tuple markers: "(" ")").
TE_INTERNAL_API std::string leaf_type_name(const Leaf& leaf);

// Double to IEEE half bits exactly as CPython's PyFloat_Pack2 (round half to even); false
// when the value overflows fp16 (Python raises OverflowError there).
TE_INTERNAL_API bool double_to_half_bits(double value, uint16_t* bits);

}  // namespace triton_embed::detail
