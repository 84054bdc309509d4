#pragma once

// The numbers bundles store for the library's enums, named once, here: the bundle format owns
// them, not the in-memory enums. Each table pairs every enumerator with the number a bundle
// stores for it; to_disk() gives that number, from_disk() the enumerator of a number read
// from a bundle, and false for a number the table does not name (the reader then refuses the
// bundle, kCorrupt, saying where). tests/cpp/test_bundle.cc (BundleEnumCodes.*) pins every
// number: changing one changes the format (bump its version, or the field's own).
//
// Where the numbers are stored:
//   ArgKind, DType   a value's kind and dtype (codec.h: parameter defaults, heuristic
//                    results, a choice's meta-parameters); a parameter's annotation dtype
//   AnnKind          a parameter's annotation kind (kernel_table.cc)
//   Aspect           what a heuristic read of an argument (decisions.cc: heuristic records)
// and, as the runtime computes them (below):
//   ArgKind, DType, LeafKind, SpecKey    in key words
//   expr::Op, HookAction::Kind, DType    in expression programs (expr/program.cc)
//
// Key words are stored as they are, not through these tables: an entry's cache key
// (core/cache_key.cc build_key), and the memo keys in heuristic and tuning records
// (core/memo_keys.cc) are compared word for word with the keys a call computes, on the launch
// path, so they hold the in-memory numbers of the enums they embed. The static_asserts at the
// end pin those in-memory numbers to the tables: reordering ArgKind, DType, LeafKind or
// SpecKey fails to compile here. (Such a change must translate the stored key words, or bump
// the format version; the key words' layout is core's, and changing it changes the format
// too.) Expression programs, which core encodes and decodes itself (with a format version of
// their own), are pinned the same way.

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "core/kernel_state.h"
#include "core/layers.h"
#include "core/specialize.h"
#include "expr/program.h"
#include "triton_embed/arg_value.h"
#include "triton_embed/dtype.h"

namespace triton_embed::detail::bundle {

// One enumerator and the number bundles store for it.
template <class E>
struct EnumCode {
  E value;
  uint8_t code;
};

// Each stored enum's table (a specialisation per enum).
template <class E>
struct EnumCodes;

// A value's kind. Functions, Python objects and descriptors are never stored (a default that
// holds one is stored as kNeedsPython, codec.h); their numbers are named so that a reader
// says what it met.
template <>
struct EnumCodes<ArgKind> {
  static constexpr EnumCode<ArgKind> table[] = {
      {ArgKind::kNone, 0},        {ArgKind::kBool, 1},         {ArgKind::kInt, 2},
      {ArgKind::kFloat, 3},       {ArgKind::kPointer, 4},      {ArgKind::kStr, 5},
      {ArgKind::kDType, 6},       {ArgKind::kScalar, 7},       {ArgKind::kConstexpr, 8},
      {ArgKind::kTuple, 9},       {ArgKind::kJitFunction, 10}, {ArgKind::kPyObject, 11},
      {ArgKind::kTensorDesc, 12},
  };
};

template <>
struct EnumCodes<DType> {
  static constexpr EnumCode<DType> table[] = {
      {DType::invalid, 0},   {DType::u1, 1},       {DType::i8, 2},        {DType::i16, 3},
      {DType::i32, 4},       {DType::i64, 5},      {DType::u8, 6},        {DType::u16, 7},
      {DType::u32, 8},       {DType::u64, 9},      {DType::fp8e4nv, 10},  {DType::fp8e5, 11},
      {DType::fp8e4b15, 12}, {DType::fp8e4b8, 13}, {DType::fp8e5b16, 14}, {DType::fp16, 15},
      {DType::bf16, 16},     {DType::fp32, 17},    {DType::fp64, 18},
  };
};

template <>
struct EnumCodes<AnnKind> {
  static constexpr EnumCode<AnnKind> table[] = {
      {AnnKind::kNone, 0},
      {AnnKind::kScalar, 1},
      {AnnKind::kPointer, 2},
      {AnnKind::kUnsupported, 3},
  };
};

template <>
struct EnumCodes<Aspect> {
  static constexpr EnumCode<Aspect> table[] = {
      {Aspect::kValue, 0},
      {Aspect::kDType, 1},
      {Aspect::kAddress, 2},
  };
};

// In key words only (pinned below, never converted).
template <>
struct EnumCodes<LeafKind> {
  static constexpr EnumCode<LeafKind> table[] = {
      {LeafKind::kConstexpr, 0},  {LeafKind::kScalar, 1},   {LeafKind::kPointer, 2},
      {LeafKind::kTupleBegin, 3}, {LeafKind::kTupleEnd, 4}, {LeafKind::kTensorDesc, 5},
  };
};

template <>
struct EnumCodes<SpecKey> {
  static constexpr EnumCode<SpecKey> table[] = {
      {SpecKey::kNone, 0},
      {SpecKey::kEmpty, 1},
      {SpecKey::kDiv16, 2},
      {SpecKey::kOne, 3},
  };
};

// In expression programs only (heuristics' expressions in the layers, a choice's pre_hook;
// expr/program.cc encodes them): pinned below, never converted.
template <>
struct EnumCodes<expr::Op> {
  using Op = expr::Op;
  static constexpr EnumCode<Op> table[] = {{Op::kNone, 0},
                                           {Op::kBool, 1},
                                           {Op::kInt, 2},
                                           {Op::kFloat, 3},
                                           {Op::kStr, 4},
                                           {Op::kDType, 5},
                                           {Op::kArg, 6},
                                           {Op::kArgDType, 7},
                                           {Op::kArgElementSize, 8},
                                           {Op::kArgIsNone, 9},
                                           {Op::kNeg, 10},
                                           {Op::kPos, 11},
                                           {Op::kNot, 12},
                                           {Op::kInvert, 13},
                                           {Op::kAbs, 14},
                                           {Op::kNextPow2, 15},
                                           {Op::kToInt, 16},
                                           {Op::kToFloat, 17},
                                           {Op::kToBool, 18},
                                           {Op::kArgOr, 19},
                                           {Op::kAdd, 20},
                                           {Op::kSub, 21},
                                           {Op::kMul, 22},
                                           {Op::kTrueDiv, 23},
                                           {Op::kFloorDiv, 24},
                                           {Op::kMod, 25},
                                           {Op::kPow, 26},
                                           {Op::kLShift, 27},
                                           {Op::kRShift, 28},
                                           {Op::kBitAnd, 29},
                                           {Op::kBitOr, 30},
                                           {Op::kBitXor, 31},
                                           {Op::kCdiv, 32},
                                           {Op::kMin, 33},
                                           {Op::kMax, 34},
                                           {Op::kEq, 35},
                                           {Op::kNe, 36},
                                           {Op::kLt, 37},
                                           {Op::kLe, 38},
                                           {Op::kGt, 39},
                                           {Op::kGe, 40},
                                           {Op::kIsSame, 41},
                                           {Op::kAnd, 42},
                                           {Op::kOr, 43},
                                           {Op::kIf, 44},
                                           {Op::kArgIsDescriptor, 45}};
};

template <>
struct EnumCodes<expr::HookAction::Kind> {
  using Kind = expr::HookAction::Kind;
  static constexpr EnumCode<Kind> table[] = {
      {Kind::kBlockShape, 0}, {Kind::kZero, 1}, {Kind::kBlockShapeTuple, 2}};
};

// What to_disk() gives for an enumerator its table lacks (one added without a number): no
// table names it, so no reader accepts it.
inline constexpr uint8_t kNoCode = 0xFE;

// The number bundles store for v.
template <class E>
constexpr uint8_t to_disk(E v) noexcept {
  for (const EnumCode<E>& c : EnumCodes<E>::table) {
    if (c.value == v) return c.code;
  }
  return kNoCode;
}

// The enumerator stored as `code`; false when the table names no such number.
template <class E>
constexpr bool from_disk(uint8_t code, E* out) noexcept {
  for (const EnumCode<E>& c : EnumCodes<E>::table) {
    if (c.code == code) {
      *out = c.value;
      return true;
    }
  }
  return false;
}

// Whether every enumerator of E has the in-memory number its table stores.
template <class E>
constexpr bool same_numbers_in_memory() noexcept {
  for (const EnumCode<E>& c : EnumCodes<E>::table) {
    if (static_cast<uint8_t>(c.value) != c.code) return false;
  }
  return true;
}

static_assert(same_numbers_in_memory<ArgKind>() && same_numbers_in_memory<DType>() &&
                  same_numbers_in_memory<LeafKind>() && same_numbers_in_memory<SpecKey>(),
              "bundles store cache and memo key words as the runtime computes them, with the "
              "in-memory numbers of ArgKind, DType, LeafKind and SpecKey: these must stay the "
              "numbers of src/bundle/enum_codes.h (or translate the stored key words, or bump "
              "the bundle format version)");
static_assert(same_numbers_in_memory<expr::Op>() &&
                  same_numbers_in_memory<expr::HookAction::Kind>() &&
                  std::size(EnumCodes<expr::Op>::table) == static_cast<size_t>(expr::Op::kCount),
              "bundles store expression programs as expr/program.cc encodes them, with the "
              "in-memory numbers of expr::Op and HookAction::Kind: these must stay the numbers "
              "of src/bundle/enum_codes.h (a new Op goes before kCount and into the table, with "
              "the next number; or bump the expression format)");

}  // namespace triton_embed::detail::bundle
