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

#include "base/internal_api.h"
#include "core/cache.h"
#include "core/kernel_state.h"
#include "triton_embed/arg_value.h"

namespace triton_embed::detail {

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

// Triton's signature type of a leaf: "i32", "*kfp16", "constexpr" (tuple markers: "(" ")").
TE_INTERNAL_API std::string leaf_type_name(const Leaf& leaf);

// ---- rules specialize() shares with the one-pass key and pack (core/pack.cc), inline for
// the launch path

inline bool int_is_one(const ArgValue& v) { return !v.big && v.i == 1; }

// Does the integer in v fit Triton scalar type t?
inline bool int_fits(DType t, const ArgValue& v) {
  if (v.big) return t == DType::u64;  // value in [2^63, 2^64)
  const int64_t x = v.i;
  switch (t) {
    case DType::u1:
      return x == 0 || x == 1;
    case DType::i8:
      return x >= INT8_MIN && x <= INT8_MAX;
    case DType::i16:
      return x >= INT16_MIN && x <= INT16_MAX;
    case DType::i32:
      return x >= INT32_MIN && x <= INT32_MAX;
    case DType::i64:
      return true;
    case DType::u8:
      return x >= 0 && x <= UINT8_MAX;
    case DType::u16:
      return x >= 0 && x <= UINT16_MAX;
    case DType::u32:
      return x >= 0 && x <= static_cast<int64_t>(UINT32_MAX);
    case DType::u64:
      return x >= 0;
    default:
      return false;
  }
}

// The key native_specialize_impl gives an integer (after the == 1 check).
inline SpecKey int_key(const ArgValue& v, bool specialize, bool align) {
  if (!specialize) return SpecKey::kNone;
  return (align && (v.u & 15u) == 0) ? SpecKey::kDiv16 : SpecKey::kEmpty;
}

inline bool contains_pointer(const ArgValue& v) {
  switch (v.kind) {
    case ArgKind::kPointer:
    case ArgKind::kTensorDesc:
      return true;
    case ArgKind::kConstexpr:
      return contains_pointer(*v.elems);
    case ArgKind::kTuple:
      for (uint32_t i = 0; i < v.count; ++i) {
        if (contains_pointer(v.elems[i])) return true;
      }
      return false;
    default:
      return false;
  }
}

}  // namespace triton_embed::detail
