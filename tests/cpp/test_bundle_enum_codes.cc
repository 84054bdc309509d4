// The numbers kernel bundles store for the library's enums (part of test_bundle;
// bundle/enum_codes.h), and the key words that embed the in-memory ones. Each number here is
// the format: a test that fails here is a format change (bump the version), not a test to
// update.

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "bundle/codec.h"
#include "bundle/enum_codes.h"
#include "core/cache_key.h"
#include "core/layers.h"
#include "core/memo_keys.h"
#include "core/specialize.h"
#include "triton_embed/error.h"

namespace te = triton_embed;
namespace tb = triton_embed::detail::bundle;
using Reason = te::BundleError::Reason;

namespace {

template <class E>
void expect_codes(const std::vector<std::pair<E, int>>& want) {
  ASSERT_EQ(std::size(tb::EnumCodes<E>::table), want.size());
  for (const auto& [value, code] : want) {
    SCOPED_TRACE(code);
    EXPECT_EQ(tb::to_disk(value), code);
    E back{};
    ASSERT_TRUE(tb::from_disk(static_cast<uint8_t>(code), &back));
    EXPECT_EQ(back, value);
  }
  for (int code = static_cast<int>(want.size()); code < 256; ++code) {
    E back{};
    EXPECT_FALSE(tb::from_disk(static_cast<uint8_t>(code), &back)) << code;
  }
}

TEST(BundleEnumCodes, NumbersArePinned) {
  using te::ArgKind;
  using te::DType;
  using te::detail::AnnKind;
  using te::detail::Aspect;
  using te::detail::LeafKind;
  using te::detail::SpecKey;
  expect_codes<ArgKind>({{ArgKind::kNone, 0},
                         {ArgKind::kBool, 1},
                         {ArgKind::kInt, 2},
                         {ArgKind::kFloat, 3},
                         {ArgKind::kPointer, 4},
                         {ArgKind::kStr, 5},
                         {ArgKind::kDType, 6},
                         {ArgKind::kScalar, 7},
                         {ArgKind::kConstexpr, 8},
                         {ArgKind::kTuple, 9},
                         {ArgKind::kJitFunction, 10},
                         {ArgKind::kPyObject, 11},
                         {ArgKind::kTensorDesc, 12}});
  expect_codes<DType>({{DType::invalid, 0},
                       {DType::u1, 1},
                       {DType::i8, 2},
                       {DType::i16, 3},
                       {DType::i32, 4},
                       {DType::i64, 5},
                       {DType::u8, 6},
                       {DType::u16, 7},
                       {DType::u32, 8},
                       {DType::u64, 9},
                       {DType::fp8e4nv, 10},
                       {DType::fp8e5, 11},
                       {DType::fp8e4b15, 12},
                       {DType::fp8e4b8, 13},
                       {DType::fp8e5b16, 14},
                       {DType::fp16, 15},
                       {DType::bf16, 16},
                       {DType::fp32, 17},
                       {DType::fp64, 18}});
  expect_codes<AnnKind>({{AnnKind::kNone, 0},
                         {AnnKind::kScalar, 1},
                         {AnnKind::kPointer, 2},
                         {AnnKind::kUnsupported, 3}});
  expect_codes<Aspect>({{Aspect::kValue, 0}, {Aspect::kDType, 1}, {Aspect::kAddress, 2}});
  expect_codes<LeafKind>({{LeafKind::kConstexpr, 0},
                          {LeafKind::kScalar, 1},
                          {LeafKind::kPointer, 2},
                          {LeafKind::kTupleBegin, 3},
                          {LeafKind::kTupleEnd, 4},
                          {LeafKind::kTensorDesc, 5}});
  expect_codes<SpecKey>(
      {{SpecKey::kNone, 0}, {SpecKey::kEmpty, 1}, {SpecKey::kDiv16, 2}, {SpecKey::kOne, 3}});
  // Expression programs (heuristics' expressions, pre_hooks: expr/program.h).
  using Op = te::detail::expr::Op;
  expect_codes<Op>({{Op::kNone, 0},
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
                    {Op::kArgIsDescriptor, 45}});
  using HookKind = te::detail::expr::HookAction::Kind;
  expect_codes<HookKind>(
      {{HookKind::kBlockShape, 0}, {HookKind::kZero, 1}, {HookKind::kBlockShapeTuple, 2}});
}

te::ArgValue value_of(te::ArgKind kind, te::DType dtype = te::DType::invalid) {
  te::ArgValue v{};
  v.kind = kind;
  v.dtype = dtype;
  return v;
}

// The bytes the codec writes for a value (codec.h): kind, dtype, big, flags, then the payload.
TEST(BundleEnumCodes, ValuesAreStoredWithTheFormatsNumbers) {
  te::ArgValue ptr = value_of(te::ArgKind::kPointer, te::DType::fp16);
  ptr.u = 0x1122334455667788ull;
  te::ArgValue dtype = value_of(te::ArgKind::kDType, te::DType::bf16);
  te::ArgValue str = value_of(te::ArgKind::kStr);
  str.s = "ab";
  str.count = 2;
  const te::ArgValue elems[] = {dtype, str};
  te::ArgValue tuple = value_of(te::ArgKind::kTuple);
  tuple.elems = elems;
  tuple.count = 2;
  tb::Writer w;
  w.value(ptr);
  w.value(tuple);
  w.value(value_of(te::ArgKind::kPyObject));  // stored as "needs Python"
  const std::string want(
      "\x04\x0f\x00\x00\x88\x77\x66\x55\x44\x33\x22\x11"  // pointer
      "\x09\x00\x00\x00\x02\x00\x00\x00"                  // tuple of 2
      "\x06\x10\x00\x00"                                  // dtype bf16
      "\x05\x00\x00\x00\x02\x00\x00\x00"
      "ab"     // str
      "\xff",  // needs Python
      35);
  const std::string bytes = w.take();
  EXPECT_EQ(bytes, want);

  // Read back; a number the tables do not name is refused, saying where.
  te::detail::KernelState k;
  const std::string where = "bundle b.teb: kernel m.k";
  tb::Reader r(bytes, k, where, "parameter table");
  te::ArgValue v;
  ASSERT_TRUE(r.value(v));
  EXPECT_EQ(v.kind, te::ArgKind::kPointer);
  EXPECT_EQ(v.dtype, te::DType::fp16);
  EXPECT_EQ(v.u, ptr.u);
  ASSERT_TRUE(r.value(v));
  ASSERT_EQ(v.kind, te::ArgKind::kTuple);
  ASSERT_EQ(v.count, 2u);
  EXPECT_EQ(v.elems[0].dtype, te::DType::bf16);
  EXPECT_EQ(std::string(v.elems[1].s, v.elems[1].count), "ab");
  EXPECT_FALSE(r.value(v));
  EXPECT_TRUE(r.done());
  auto refusal_of = [&](const std::string& b) {
    tb::Reader bad(b, k, where, "parameter table");
    te::ArgValue x;
    try {
      bad.value(x);
    } catch (const te::BundleError& e) {
      EXPECT_EQ(e.reason(), Reason::kCorrupt);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal_of(std::string("\x0d\x00\x00\x00", 4)),
            where +
                ": its parameter table is damaged (unknown value kind at byte 1 of 4); rebuild "
                "the bundle");
  EXPECT_EQ(refusal_of(std::string("\x02\x13\x00\x00", 4)),
            where +
                ": its parameter table is damaged (an unknown dtype at byte 2 of 4); rebuild "
                "the bundle");
  EXPECT_EQ(refusal_of(std::string("\x0b\x00\x00\x00", 4)),
            where +
                ": its parameter table is damaged (an object value where only plain data is "
                "stored at byte 4 of 4); rebuild the bundle");
}

// An entry's key words are the cache key as build_key writes it (stored as they are): runtime
// leaves five to a run word, others a word each, constexpr values after them.
TEST(BundleEnumCodes, CacheKeyWordsArePinned) {
  te::detail::KernelState k;
  te::ArgValue block = value_of(te::ArgKind::kInt);
  block.i = 1024;
  const te::ArgValue out_dtype = value_of(te::ArgKind::kDType, te::DType::fp16);
  te::detail::LeafList leaves;
  auto leaf = [&](te::detail::LeafKind kind, te::DType t, te::detail::SpecKey key,
                  const te::ArgValue* v) {
    te::detail::Leaf& l = leaves.leaves[leaves.n++];
    l = te::detail::Leaf{};
    l.kind = kind;
    l.dtype = t;
    l.key = key;
    l.value = v;
  };
  using te::detail::LeafKind;
  using te::detail::SpecKey;
  leaf(LeafKind::kPointer, te::DType::fp32, SpecKey::kDiv16, nullptr);  // *fp32 D
  leaf(LeafKind::kScalar, te::DType::i32, SpecKey::kEmpty, nullptr);    // i32
  leaf(LeafKind::kConstexpr, te::DType::invalid, SpecKey::kNone, &block);
  leaf(LeafKind::kConstexpr, te::DType::invalid, SpecKey::kNone, &out_dtype);
  te::detail::Key key;
  te::detail::build_key(k, leaves, key);
  // Run codes: 1 << 11 | pointer << 10 | const << 9 | spec key << 7 | dtype.
  const std::vector<uint64_t> want = {
      uint64_t{1} << 63 | 0x884ull << 12 | 0xD11ull,  // the run: *fp32 D, i32
      0,
      2,
      1024,  // constexpr: kInt, 1024
      0,
      0xF06,  // constexpr: kDType fp16
  };
  EXPECT_EQ(std::vector<uint64_t>(key.w, key.w + key.n), want);
}

// A heuristic record's key words end with the memo key (core/memo_keys.cc's tags, numbered there,
// and DType's numbers).
TEST(BundleEnumCodes, MemoKeyWordsArePinned) {
  te::detail::HeuristicPlan plan;
  plan.deps = {{0, te::detail::Aspect::kValue},
               {1, te::detail::Aspect::kDType},
               {2, te::detail::Aspect::kValue},
               {3, te::detail::Aspect::kValue}};
  te::detail::Frame f;
  f.np = 4;
  f.vals[0] = value_of(te::ArgKind::kInt);
  f.vals[0].i = 7;
  f.vals[1] = value_of(te::ArgKind::kPointer, te::DType::fp16);
  f.vals[2] = value_of(te::ArgKind::kStr);
  f.vals[2].s = "ab";
  f.vals[2].count = 2;
  for (uint32_t p = 0; p < 3; ++p) f.given[p] = te::detail::kPositional;
  f.given[3] = te::detail::kAbsent;
  te::detail::MemoKey key;
  te::detail::heuristic_memo_key(plan, f, key);
  const std::vector<uint64_t> want = {4,          7,       // int 7
                                      0x100 | 15,          // a pointer's dtype: fp16
                                      7 | 2 << 8, 0x6261,  // str 'ab'
                                      1};                  // absent
  EXPECT_EQ(std::vector<uint64_t>(key.w, key.w + key.n), want);
}
}  // namespace
