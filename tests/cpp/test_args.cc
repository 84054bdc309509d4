// args.h, dtype.h, grid.h, options.h, runtime.h (Target): how C++ values become arguments.

#include <gtest/gtest.h>
#include <triton_embed/jit.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "testing/testing.h"

namespace te = triton_embed;
using te::detail::ArgKind;
using te::detail::ArgValue;

namespace {

// Whether a member is reachable from user code (an inaccessible one fails substitution).
template <class T, class = void>
struct HasState : std::false_type {};
template <class T>
struct HasState<T, std::void_t<decltype(std::declval<const T&>().state())>> : std::true_type {};
template <class T, class = void>
struct HasInternedOptions : std::false_type {};
template <class T>
struct HasInternedOptions<T, std::void_t<decltype(std::declval<const T&>().interned_options())>>
    : std::true_type {};
template <class T, class = void>
struct HasCache : std::false_type {};
template <class T>
struct HasCache<T, std::void_t<decltype(std::declval<const T&>().cache())>> : std::true_type {};
template <class T, class = void>
struct HasVersion : std::false_type {};
template <class T>
struct HasVersion<T, std::void_t<decltype(std::declval<const T&>().version())>> : std::true_type {};
template <class T, class = void>
struct HasArgFlags : std::false_type {};
template <class T>
struct HasArgFlags<T, std::void_t<decltype(std::declval<T&>().set_arg_flags(uint8_t{0}))>>
    : std::true_type {};

template <class T>
ArgValue one(const T& v) {
  static_assert(te::detail::kArgSlots<T> == 1, "scalar types take one slot");
  ArgValue out[1];
  te::detail::fill_args(out, v);
  return out[0];
}

}  // namespace

TEST(ArgTraits, IntegersKeepTheirValue) {
  EXPECT_EQ(one(int8_t{-128}).kind, ArgKind::kInt);
  EXPECT_EQ(one(int8_t{-128}).i, -128);
  EXPECT_EQ(one(int16_t{32767}).i, 32767);
  EXPECT_EQ(one(-5).i, -5);
  EXPECT_EQ(one(uint8_t{255}).i, 255);
  EXPECT_EQ(one(int64_t{std::numeric_limits<int64_t>::min()}).i,
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(one(uint32_t{4000000000u}).i, 4000000000);
  const ArgValue small = one(uint64_t{5});
  EXPECT_EQ(small.big, 0);
  EXPECT_EQ(small.i, 5);
  const ArgValue big = one(std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(big.kind, ArgKind::kInt);
  EXPECT_EQ(big.big, 1);
  EXPECT_EQ(big.u, std::numeric_limits<uint64_t>::max());
  const ArgValue edge = one(uint64_t{1} << 63);
  EXPECT_EQ(edge.big, 1);
  EXPECT_EQ(edge.u, uint64_t{1} << 63);
  EXPECT_EQ(one(static_cast<uint64_t>(std::numeric_limits<int64_t>::max())).big, 0);
}

TEST(ArgTraits, BoolsFloatsAndNone) {
  EXPECT_EQ(one(true).kind, ArgKind::kBool);
  EXPECT_EQ(one(true).i, 1);
  EXPECT_EQ(one(false).i, 0);
  EXPECT_EQ(one(1.5f).kind, ArgKind::kFloat);
  EXPECT_EQ(one(1.5f).f, 1.5);
  EXPECT_EQ(one(2.25).f, 2.25);
  EXPECT_EQ(one(nullptr).kind, ArgKind::kNone);
  EXPECT_EQ(one(std::nullopt).kind, ArgKind::kNone);
  EXPECT_EQ(one(std::optional<int>()).kind, ArgKind::kNone);
  EXPECT_EQ(one(std::optional<int>(16)).kind, ArgKind::kInt);
  EXPECT_EQ(one(std::optional<int>(16)).i, 16);
}

TEST(ArgTraits, PointersCarryTheirElementType) {
  auto* p = reinterpret_cast<float*>(0x1000);
  EXPECT_EQ(one(p).kind, ArgKind::kPointer);
  EXPECT_EQ(one(p).dtype, te::DType::fp32);
  EXPECT_EQ(one(p).u, 0x1000u);
  EXPECT_EQ(one(reinterpret_cast<const double*>(8)).dtype, te::DType::fp64);
  EXPECT_EQ(one(reinterpret_cast<int8_t*>(8)).dtype, te::DType::i8);
  EXPECT_EQ(one(reinterpret_cast<uint8_t*>(8)).dtype, te::DType::u8);
  EXPECT_EQ(one(reinterpret_cast<int16_t*>(8)).dtype, te::DType::i16);
  EXPECT_EQ(one(reinterpret_cast<uint16_t*>(8)).dtype, te::DType::u16);
  EXPECT_EQ(one(reinterpret_cast<int32_t*>(8)).dtype, te::DType::i32);
  EXPECT_EQ(one(reinterpret_cast<uint32_t*>(8)).dtype, te::DType::u32);
  EXPECT_EQ(one(reinterpret_cast<int64_t*>(8)).dtype, te::DType::i64);
  EXPECT_EQ(one(reinterpret_cast<uint64_t*>(8)).dtype, te::DType::u64);
  EXPECT_EQ(one(reinterpret_cast<bool*>(8)).dtype, te::DType::u1);
  const ArgValue explicit_ptr = one(te::Pointer(uint64_t{0xABC0}, te::DType::bf16));
  EXPECT_EQ(explicit_ptr.kind, ArgKind::kPointer);
  EXPECT_EQ(explicit_ptr.dtype, te::DType::bf16);
  EXPECT_EQ(explicit_ptr.u, 0xABC0u);
  const ArgValue from_void = one(te::Pointer(reinterpret_cast<void*>(0x40), te::DType::fp8e4nv));
  EXPECT_EQ(from_void.u, 0x40u);
  EXPECT_EQ(from_void.dtype, te::DType::fp8e4nv);
}

TEST(ArgTraits, StringsAndDTypes) {
  const ArgValue lit = one("abc");
  EXPECT_EQ(lit.kind, ArgKind::kStr);
  EXPECT_EQ(std::string(lit.s, lit.count), "abc");
  const std::string s = "hello";
  EXPECT_EQ(std::string(one(s).s, one(s).count), "hello");
  EXPECT_EQ(one(std::string_view("xy")).count, 2u);
  EXPECT_EQ(one(te::DType::fp16).kind, ArgKind::kDType);
  EXPECT_EQ(one(te::DType::fp16).dtype, te::DType::fp16);
}

TEST(ArgTraits, ForcedScalars) {
  EXPECT_EQ(one(te::i64(5)).kind, ArgKind::kScalar);
  EXPECT_EQ(one(te::i64(5)).dtype, te::DType::i64);
  EXPECT_EQ(one(te::i64(5)).i, 5);
  EXPECT_EQ(one(te::i32(-7)).i, -7);
  EXPECT_EQ(one(te::u64(std::numeric_limits<uint64_t>::max())).big, 1);
  EXPECT_EQ(one(te::u64(std::numeric_limits<uint64_t>::max())).u,
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(one(te::fp64(1.5)).dtype, te::DType::fp64);
  EXPECT_EQ(one(te::fp64(1.5)).f, 1.5);
  EXPECT_EQ(one(te::fp16(0.5)).dtype, te::DType::fp16);
  EXPECT_EQ(one(te::u1(true)).dtype, te::DType::u1);
  EXPECT_EQ(one(te::u1(true)).i, 1);
}

TEST(ArgTraits, ConstexprAndTuplesUseNestedSlots) {
  static_assert(te::detail::kArgSlots<te::Constexpr<int>> == 2);
  static_assert(te::detail::kArgSlots<std::tuple<int, float*, std::nullptr_t>> == 4);
  static_assert(te::detail::kArgSlots<std::tuple<int, std::tuple<int, int>>, int> == 6);
  static_assert(te::detail::kArgSlots<std::pair<int, double>> == 3);
  static_assert(te::detail::kArgSlots<> == 0);

  ArgValue c[2];
  te::detail::fill_args(c, te::Constexpr(8));
  EXPECT_EQ(c[0].kind, ArgKind::kConstexpr);
  EXPECT_EQ(c[0].elems, &c[1]);
  EXPECT_EQ(c[1].kind, ArgKind::kInt);
  EXPECT_EQ(c[1].i, 8);

  ArgValue t[7];
  te::detail::fill_args(t, std::make_tuple(1, std::make_tuple(2.5, nullptr)), 7);
  EXPECT_EQ(t[0].kind, ArgKind::kTuple);
  EXPECT_EQ(t[0].count, 2u);
  EXPECT_EQ(t[1].kind, ArgKind::kInt);  // second top-level argument
  EXPECT_EQ(t[1].i, 7);
  const ArgValue* e = t[0].elems;
  EXPECT_EQ(e[0].kind, ArgKind::kInt);
  EXPECT_EQ(e[0].i, 1);
  EXPECT_EQ(e[1].kind, ArgKind::kTuple);
  EXPECT_EQ(e[1].count, 2u);
  EXPECT_EQ(e[1].elems[0].kind, ArgKind::kFloat);
  EXPECT_EQ(e[1].elems[0].f, 2.5);
  EXPECT_EQ(e[1].elems[1].kind, ArgKind::kNone);

  ArgValue pr[3];
  te::detail::fill_args(pr, std::make_pair(3, 4.0));
  EXPECT_EQ(pr[0].kind, ArgKind::kTuple);
  EXPECT_EQ(pr[0].elems[1].f, 4.0);
}

TEST(DType, NamesRoundTrip) {
  for (int i = 1; i <= static_cast<int>(te::DType::fp64); ++i) {
    const auto t = static_cast<te::DType>(i);
    EXPECT_EQ(te::dtype_from_name(te::dtype_name(t)), t) << te::dtype_name(t);
    EXPECT_EQ(te::dtype_from_name(te::dtype_tl_name(t)), t) << te::dtype_tl_name(t);
  }
  EXPECT_EQ(te::dtype_from_name("torch.float8_e4m3fn"), te::DType::fp8e4nv);
  EXPECT_EQ(te::dtype_from_name("bool"), te::DType::u1);
  EXPECT_EQ(te::dtype_from_name("triton.language.bfloat16"), te::DType::bf16);
  EXPECT_EQ(te::dtype_from_name("complex64"), te::DType::invalid);
  EXPECT_EQ(te::dtype_name(te::DType::fp8e5b16), "fp8e5b16");
  EXPECT_EQ(te::dtype_size(te::DType::bf16), 2);
  EXPECT_TRUE(te::dtype_is_scalar_arg(te::DType::fp16));
  EXPECT_FALSE(te::dtype_is_scalar_arg(te::DType::fp8e4nv));
}

TEST(Grid, AcceptsAnyIntegerTypes) {
  const int64_t n = 5000;
  const te::Grid g1{te::cdiv(n, 1024)};
  EXPECT_EQ(g1.x, 5);
  EXPECT_EQ(g1.y, 1);
  EXPECT_EQ(g1.z, 1);
  const te::Grid g3(2u, int16_t{3}, 4ull);
  EXPECT_EQ(g3.x, 2);
  EXPECT_EQ(g3.y, 3);
  EXPECT_EQ(g3.z, 4);
  EXPECT_EQ(te::cdiv(1024, 1024), 1);
  EXPECT_EQ(te::cdiv(1025, 1024), 2);
  EXPECT_EQ(te::cdiv(0, 1024), 0);
}

TEST(Options, SortedReplacedAndPrinted) {
  te::Options o;
  o.num_warps(4).num_stages(2).set("debug", true).num_warps(8).set("ptx_options", "-v");
  ASSERT_EQ(o.entries().size(), 4u);
  EXPECT_EQ(o.entries()[0].first, "debug");
  EXPECT_EQ(o.str(), "debug=True, num_stages=2, num_warps=8, ptx_options='-v'");
  te::Options same;
  same.set("ptx_options", "-v").num_stages(2).debug(true).num_warps(8);
  EXPECT_TRUE(o == same);
  EXPECT_EQ(te::detail::intern_options(o), te::detail::intern_options(same));
  EXPECT_NE(te::detail::intern_options(o), te::detail::intern_options(te::Options()));
  EXPECT_EQ(te::detail::intern_options(te::Options())->id,
            te::detail::intern_options(te::Options())->id);
  try {
    te::Options().set("", 1);
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(), "Options::set: the option name is empty");
  }
}

TEST(Target, Parses) {
  EXPECT_EQ(te::Target::parse("cuda:90").arch, 90);
  EXPECT_EQ(te::Target::parse("cuda:90").warp_size, 32);
  EXPECT_EQ(te::Target::parse("cuda:80:32").arch, 80);
  EXPECT_EQ(te::Target::parse("sm_90a").arch, 90);
  EXPECT_EQ(te::Target::parse("sm100").arch, 100);
  EXPECT_EQ(te::Target::parse("89").arch, 89);
  EXPECT_EQ(te::Target::parse("cuda:90").str(), "cuda:90");
  try {
    te::Target::parse("rocm:gfx90a");
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "invalid target 'rocm:gfx90a': expected 'cuda:<arch>' (e.g. cuda:90), "
                 "'cuda:<arch>:<warp size>', 'sm_90' or '90'");
  }
  EXPECT_THROW(te::Target::parse("cuda:"), te::ValueError);
  EXPECT_THROW(te::Target::parse("cuda:9x"), te::ValueError);
}

TEST(Half, RoundsLikeCPython) {
  uint16_t h = 0;
  ASSERT_TRUE(te::detail::testing::half_bits(0.5, &h));
  EXPECT_EQ(h, 0x3800);
  ASSERT_TRUE(te::detail::testing::half_bits(-2.0, &h));
  EXPECT_EQ(h, 0xC000);
  ASSERT_TRUE(te::detail::testing::half_bits(65504.0, &h));
  EXPECT_EQ(h, 0x7BFF);
  EXPECT_FALSE(te::detail::testing::half_bits(65520.0, &h));  // rounds past the largest half
  ASSERT_TRUE(te::detail::testing::half_bits(1.0 + 1.0 / 2048, &h));  // a tie: to even
  EXPECT_EQ(h, 0x3C00);
  ASSERT_TRUE(te::detail::testing::half_bits(1.0 + 3.0 / 2048, &h));  // a tie: to even (up)
  EXPECT_EQ(h, 0x3C02);
  ASSERT_TRUE(te::detail::testing::half_bits(5.960464477539063e-08, &h));  // smallest subnormal
  EXPECT_EQ(h, 0x0001);
  ASSERT_TRUE(te::detail::testing::half_bits(-0.0, &h));
  EXPECT_EQ(h, 0x8000);
}

// What jit.h and tensor_descriptor.h keep private (src/core/jit_internal.h and
// src/core/tensor_map.h reach it for the library's own layers).
TEST(PublicSurface, InternalsAreNotPublic) {
  static_assert(!HasState<te::JitFunction>::value, "JitFunction::state() is internal");
  static_assert(!HasInternedOptions<te::JitFunction>::value,
                "JitFunction::interned_options() is internal");
  static_assert(!HasCache<te::TensorDescriptor>::value, "TensorDescriptor::cache() is internal");
  static_assert(!HasVersion<te::TensorDescriptor>::value,
                "TensorDescriptor::version() is internal");
  static_assert(!HasArgFlags<te::TensorDescriptor>::value,
                "TensorDescriptor::set_arg_flags() is internal");
  // A JitFunction argument still passes its kernel (ArgTraits<JitFunction> is a friend), and a
  // descriptor its flags.
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const ArgValue f = one(add);
  EXPECT_EQ(f.kind, ArgKind::kJitFunction);
  EXPECT_EQ(f.ptr, te::detail::testing::state(add));
  const te::TensorDescriptor d(uint64_t{0x10000}, te::DType::fp16, {64, 64}, {64, 1}, {16, 16});
  const ArgValue a = one(d);
  EXPECT_EQ(a.kind, ArgKind::kTensorDesc);
  EXPECT_EQ(a.ptr, &d);
  EXPECT_EQ(a.flags, 0);
  EXPECT_EQ(a.dtype, te::DType::fp16);
}
