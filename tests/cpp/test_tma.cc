// tensor_descriptor.h: host tensor descriptors. On CPU: the compiled kernel is the one
// Python's warmup compiles for the same descriptors (cuda:90, where Triton uses TMA, and
// cuda:80, where it passes base, shape and strides), Triton's checks, the parameters packed
// and the cuTensorMapEncodeTiled call (through the tests' stand-in driver,
// tests/support/cuda_shim.cc) with its cache. On a GPU: test_tma_gpu.cc.

#include <triton_embed/allocator.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/triton_versions.h"
#include "cuda_shim.h"
#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace tt = triton_embed::detail::testing;
namespace py = pybind11;
using namespace triton_embed::literals;

namespace {

// Whether the installed Triton has round_f32_to_tf32 and the flag that passes it
// (core/triton_versions.h).
bool has_tf32_rounding() {
  te_test::Gil gil;
  const std::string v = py::module_::import("triton").attr("__version__").cast<std::string>();
  const int version =
      std::stoi(v.substr(0, v.find('.'))) * 100 + std::stoi(v.substr(v.find('.') + 1));
  return te::detail::triton_versions::descriptor_round_f32_to_tf32(version);
}

class Tma : public ::testing::Test {
 protected:
  void SetUp() override {
    te::set_target(te::Target::parse("cuda:90"));
    te_test::Gil gil;
    te_test::install_python_helpers();
    te_test::exec("from te_helpers import desc, P\n");
  }
  void TearDown() override {
    te_cuda_shim::set_encoder(nullptr);
    te::set_target(te::Target::parse("cuda:90"));
  }
  static std::string python_hash(const char* kernel, const std::string& args, int arch = 90) {
    te_test::Gil gil;
    return py::module_::import("te_helpers")
        .attr("warmup_hashes")("te_tma_kernels", kernel, te_test::eval(args), py::dict(), arch)
        .cast<std::string>();
  }
  static size_t ptx_params(const te::CompiledKernel& k) {
    size_t n = 0;
    const std::string_view ptx = k.ptx();
    for (size_t at = ptx.find(".param ."); at != std::string_view::npos;
         at = ptx.find(".param .", at + 1)) {
      ++n;
    }
    return n;
  }
};

te::TensorDescriptor D(uint64_t base, te::DType t, te::TensorDescriptor::Dims shape,
                       te::TensorDescriptor::Dims strides, te::TensorDescriptor::Dims block,
                       te::Padding pad = te::Padding::kZero) {
  return te::TensorDescriptor(base, t, shape, strides, block, pad);
}

TEST_F(Tma, HashesMatchPythonForDtypesRanksAndBlocks) {
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  struct Case {
    te::DType t;
    const char* name;
    int64_t bm, bn;
  };
  for (const Case& c :
       {Case{te::DType::fp16, "float16", 16, 32}, Case{te::DType::bf16, "bfloat16", 32, 64},
        Case{te::DType::fp32, "float32", 8, 32}, Case{te::DType::fp8e4nv, "float8_e4m3fn", 32, 64},
        Case{te::DType::i8, "int8", 64, 64}}) {
    SCOPED_TRACE(c.name);
    auto src = D(0x10000, c.t, {128, 256}, {256, 1}, {c.bm, c.bn});
    auto dst = D(0x40000, c.t, {128, 256}, {256, 1}, {c.bm, c.bn});
    const te::CompiledKernel& k = copy2.compile(src, dst, c.bm, c.bn);
    const std::string blk = std::to_string(c.bm) + ", " + std::to_string(c.bn);
    EXPECT_EQ(k.hash(), python_hash("tma_copy_2d",
                                    std::string("(desc(0x10000, '") + c.name +
                                        "', [128, 256], [256, 1], [" + blk + "]), desc(0x40000, '" +
                                        c.name + "', [128, 256], [256, 1], [" + blk + "]), " +
                                        std::to_string(c.bm) + ", " + std::to_string(c.bn) + ")"));
    const std::string ty = "tensordesc<" + std::string(te::dtype_name(c.t)) + "[" + blk + "]>";
    EXPECT_EQ(k.signature(), "tma_copy_2d(src: " + ty + ", dst: " + ty +
                                 ", BLOCK_M: constexpr = " + std::to_string(c.bm) +
                                 ", BLOCK_N: constexpr = " + std::to_string(c.bn) + ")");
    // Each descriptor: the CUtensorMap, shape (2 x i32), strides (2 x i64); 2 scratch pointers.
    EXPECT_EQ(k.num_kernel_params(), 2 * 5 + 2);
    EXPECT_EQ(ptx_params(k), 12u);
  }
  te::JitFunction copy1("te_tma_kernels", "tma_copy_1d");
  EXPECT_EQ(copy1
                .compile(D(0x10000, te::DType::i8, {4096}, {1}, {256}),
                         D(0x20000, te::DType::i8, {4096}, {1}, {256}), 256)
                .hash(),
            python_hash("tma_copy_1d",
                        "(desc(0x10000, 'int8', [4096], [1], [256]), desc(0x20000, 'int8', [4096], "
                        "[1], [256]), 256)"));
  te::JitFunction copy3("te_tma_kernels", "tma_copy_3d");
  const auto& k3 =
      copy3.compile(D(0x10000, te::DType::fp32, {4, 8, 64}, {512, 64, 1}, {2, 4, 16}),
                    D(0x20000, te::DType::fp32, {4, 8, 64}, {512, 64, 1}, {2, 4, 16}), 2, 4, 16);
  EXPECT_EQ(
      k3.hash(),
      python_hash("tma_copy_3d",
                  "(desc(0x10000, 'float32', [4, 8, 64], [512, 64, 1], [2, 4, 16]), "
                  "desc(0x20000, 'float32', [4, 8, 64], [512, 64, 1], [2, 4, 16]), 2, 4, 16)"));
  EXPECT_EQ(k3.num_kernel_params(), 2 * 7 + 2);
  EXPECT_EQ(ptx_params(k3), 16u);
}

TEST_F(Tma, ShapeStridesBasePaddingAreRuntimeValuesBlockShapeIsNot) {
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  auto src = D(0x10000, te::DType::fp16, {64, 64}, {64, 1}, {16, 32});
  auto dst = D(0x20000, te::DType::fp16, {64, 64}, {64, 1}, {16, 32});
  const te::CompiledKernel& a = copy2.compile(src, dst, 16, 32);
  // Another base, shape, strides and NaN padding: the same kernel, as in Python.
  auto src2 = D(0x30010, te::DType::fp16, {100, 48}, {48, 1}, {16, 32}, te::Padding::kNan);
  EXPECT_EQ(&copy2.compile(src2, dst, 16, 32), &a);
  EXPECT_EQ(a.hash(),
            python_hash("tma_copy_2d",
                        "(desc(0x30010, 'float16', [100, 48], [48, 1], [16, 32], 'nan'), "
                        "desc(0x20000, 'float16', [64, 64], [64, 1], [16, 32]), 16, 32)"));
  // A block shape changed after creation (an autotune pre-hook's job in Python): a new key.
  src.set_block_shape({32, 64});
  dst.set_block_shape({32, 64});
  const te::CompiledKernel& b = copy2.compile(src, dst, 32, 64);
  EXPECT_NE(&b, &a);
  EXPECT_NE(b.hash(), a.hash());
  EXPECT_EQ(b.hash(),
            python_hash("tma_copy_2d",
                        "(desc(0x10000, 'float16', [64, 64], [64, 1], [32, 64]), "
                        "desc(0x20000, 'float16', [64, 64], [64, 1], [32, 64]), 32, 64)"));
  EXPECT_NE(b.signature().find("src: tensordesc<fp16[32, 64]>"), std::string::npos);
}

TEST_F(Tma, PersistentMatmulAndScalarBesideDescriptorsMatchPython) {
  te::JitFunction mm("te_tma_kernels", "tma_persistent_matmul");
  auto a = D(0x100000, te::DType::fp16, {256, 128}, {128, 1}, {64, 32});
  auto b = D(0x200000, te::DType::fp16, {128, 256}, {256, 1}, {32, 64});
  auto c = D(0x300000, te::DType::fp16, {256, 256}, {256, 1}, {64, 64});
  const auto& k = mm.compile(a, b, c, 256, 256, 128, 64, 64, 32, 132);
  EXPECT_EQ(k.hash(), python_hash("tma_persistent_matmul",
                                  "(desc(0x100000, 'float16', [256, 128], [128, 1], [64, 32]), "
                                  "desc(0x200000, 'float16', [128, 256], [256, 1], [32, 64]), "
                                  "desc(0x300000, 'float16', [256, 256], [256, 1], [64, 64]), 256, "
                                  "256, 128, 64, 64, 32, 132)"));
  EXPECT_EQ(k.num_kernel_params(), 3 * 5 + 3 + 2);
  EXPECT_EQ(ptx_params(k), 20u);
  te::JitFunction scale("te_tma_kernels", "tma_scale_2d");
  const auto& s =
      scale.compile(D(0x10000, te::DType::bf16, {64, 64}, {64, 1}, {16, 32}),
                    D(0x20000, te::DType::bf16, {64, 64}, {64, 1}, {16, 32}), 1.5, 16, 32);
  EXPECT_EQ(s.hash(),
            python_hash("tma_scale_2d",
                        "(desc(0x10000, 'bfloat16', [64, 64], [64, 1], [16, 32]), "
                        "desc(0x20000, 'bfloat16', [64, 64], [64, 1], [16, 32]), 1.5, 16, 32)"));
}

TEST_F(Tma, DeviceMadeDescriptorsCompileAsPythonsAndAskForScratch) {
  te::JitFunction scale("te_tma_kernels", "device_desc_scale");
  const te::Pointer s(0x10000, te::DType::fp16), d(0x20000, te::DType::fp16);
  const te::CompiledKernel& k = scale.compile(s, d, 256, 192, 0.75, 64, 64);
  EXPECT_EQ(k.hash(),
            python_hash("device_desc_scale",
                        "(P(0x10000, 'float16'), P(0x20000, 'float16'), 256, 192, 0.75, 64, 64)"));
  // Two 128-byte CUtensorMaps per program, 128-byte aligned, from the scratch allocator.
  EXPECT_EQ(k.global_scratch_size(), 256u);
  EXPECT_EQ(k.global_scratch_align(), 128u);
}

TEST_F(Tma, RoundF32ToTf32NeedsTriton37) {
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  te::TensorDescriptor src(uint64_t{0x10000}, te::DType::fp32, {64, 64}, {64, 1}, {16, 32},
                           te::Padding::kZero, true);
  auto dst = D(0x20000, te::DType::fp32, {64, 64}, {64, 1}, {16, 32});
  if (!has_tf32_rounding()) {
    try {
      copy2.compile(src, dst, 16, 32);
      FAIL() << "expected NotSupportedError";
    } catch (const te::NotSupportedError& e) {
      EXPECT_EQ(
          std::string(e.what()),
          "tma_copy_2d(src, dst, BLOCK_M, BLOCK_N): argument #0 'src': round_f32_to_tf32 needs "
          "Triton 3.7 or newer (installed: 3.6)");
    }
    return;
  }
  EXPECT_EQ(
      copy2.compile(src, dst, 16, 32).hash(),
      python_hash("tma_copy_2d",
                  "(desc(0x10000, 'float32', [64, 64], [64, 1], [16, 32], round_f32_to_tf32=True), "
                  "desc(0x20000, 'float32', [64, 64], [64, 1], [16, 32]), 16, 32)"));
}

// ---- the parameters packed ----------------------------------------------------------

te_cuda_shim::EncodeCall g_last_call;
int g_hook_calls = 0;

std::vector<te_cuda_shim::EncodeCall> g_calls;

void fake_encoder(const te_cuda_shim::EncodeCall& c, unsigned char* map) {
  g_last_call = c;
  g_calls.push_back(c);
  ++g_hook_calls;
  for (int i = 0; i < 128; ++i) map[i] = static_cast<unsigned char>(0xA0 + g_hook_calls + i);
}

// A map that depends only on what is encoded (FNV-1a of the call's fields), for tests where
// two descriptors with the same fields must give the same map.
void content_encoder(const te_cuda_shim::EncodeCall& c, unsigned char* map) {
  g_calls.push_back(c);
  uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&c);
  for (size_t i = 0; i < sizeof(c); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  for (int i = 0; i < 128; ++i) map[i] = static_cast<unsigned char>(h >> (8 * (i % 8)));
}

TEST_F(Tma, TmaTargetPacksTheEncodedMapThenShapeAndStrides) {
  te_cuda_shim::set_encoder(&fake_encoder);
  g_hook_calls = 0;
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  auto src = D(0x30000, te::DType::bf16, {100, 48}, {48, 1}, {16, 32});
  auto dst = D(0x50000, te::DType::bf16, {100, 48}, {48, 1}, {16, 32}, te::Padding::kNan);
  uint64_t slots[64];
  const uint64_t before = te_cuda_shim::encodes();
  const int miss = tt::dry_run(copy2, slots, src, dst, 16, 32);
  ASSERT_EQ(miss, -10 - 1);  // 10 parameters packed (scratch pointers not counted), a miss
  EXPECT_EQ(te_cuda_shim::encodes() - before, 2u);
  EXPECT_EQ(g_hook_calls, 2);
  // fill_tma_descriptor's arguments for dst: innermost dimension first, byte strides, the
  // kernel's box, bf16 (the driver's type 9), the kernel's swizzle, 128-byte L2 promotion,
  // NaN fill.
  const te_cuda_shim::EncodeCall& c = g_last_call;
  EXPECT_EQ(c.data_type, 9);
  EXPECT_EQ(c.rank, 2u);
  EXPECT_EQ(c.address, 0x50000u);
  EXPECT_EQ(c.dims[0], 48u);
  EXPECT_EQ(c.dims[1], 100u);
  EXPECT_EQ(c.strides[0], 96u);
  EXPECT_EQ(c.box[0], 32u);
  EXPECT_EQ(c.box[1], 16u);
  EXPECT_EQ(c.element_strides[0], 1u);
  EXPECT_EQ(c.element_strides[1], 1u);
  EXPECT_EQ(c.interleave, 0);
  EXPECT_EQ(c.swizzle, 2);       // 64-byte swizzle: Triton's metadata for a 32-wide bf16 box
  EXPECT_EQ(c.l2_promotion, 2);  // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  EXPECT_EQ(c.oob_fill, 1);      // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
  uint64_t first_src = 0, first_dst = 0;
  for (int i = 0; i < 8; ++i) {
    first_src |= static_cast<uint64_t>(0xA0 + 1 + i) << (8 * i);
    first_dst |= static_cast<uint64_t>(0xA0 + 2 + i) << (8 * i);
  }
  const std::vector<uint64_t> expect = {first_src, 100, 48, 48, 1, first_dst, 100, 48, 48, 1};
  EXPECT_EQ(std::vector<uint64_t>(slots, slots + 10), expect);

  // Unchanged descriptors: the cached maps, no encoding.
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 16, 32), 10);
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 16, 32), 10);
  EXPECT_EQ(g_hook_calls, 2);
  EXPECT_EQ(std::vector<uint64_t>(slots, slots + 10), expect);
  // A new base re-encodes that descriptor only; so does a new padding.
  src.set_base(uint64_t{0x70000});
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 16, 32), 10);
  EXPECT_EQ(g_hook_calls, 3);
  EXPECT_EQ(g_last_call.address, 0x70000u);
  EXPECT_EQ(g_last_call.oob_fill, 0);
  dst.set_padding(te::Padding::kZero);
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 16, 32), 10);
  EXPECT_EQ(g_hook_calls, 4);
  EXPECT_EQ(g_last_call.oob_fill, 0);
  // A new shape: re-encoded, and the appended shape follows.
  src.set_shape({64, 32}, {32, 1});
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 16, 32), 10);
  EXPECT_EQ(g_hook_calls, 5);
  EXPECT_EQ(g_last_call.dims[0], 32u);
  EXPECT_EQ(g_last_call.dims[1], 64u);
  EXPECT_EQ(g_last_call.strides[0], 64u);
  EXPECT_EQ(std::vector<uint64_t>(slots + 1, slots + 5), (std::vector<uint64_t>{64, 32, 32, 1}));
  // A copy encodes its own map.
  te::TensorDescriptor src_copy = src;
  ASSERT_EQ(tt::dry_run(copy2, slots, src_copy, dst, 16, 32), 10);
  EXPECT_EQ(g_hook_calls, 6);
}

// The one-pass path of a cache hit takes descriptors: the same key words and values as the
// general path, each descriptor packed at its place once the entry is known.
TEST_F(Tma, OnePassPathTakesDescriptorsAsTheGeneralPathDoes) {
  te_cuda_shim::set_encoder(&fake_encoder);
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  te::JitFunction scale("te_tma_kernels", "tma_scale_2d");
  const auto src = D(0x30000, te::DType::bf16, {100, 48}, {48, 1}, {16, 32});
  const auto dst = D(0x50000, te::DType::bf16, {100, 48}, {48, 1}, {16, 32}, te::Padding::kNan);
  const auto f32 = D(0x60000, te::DType::fp32, {64, 64}, {64, 1}, {32, 16});
  EXPECT_EQ(tt::fast_path_agrees_for(copy2, src, dst, 16, 32), 1);
  EXPECT_EQ(tt::fast_path_agrees_for(scale, f32, f32, 0.5, 32, 16), 1);
  EXPECT_EQ(tt::fast_path_agrees_for(scale, f32, f32, 1, 32, 16), 1);
}

// A config pre-hook that sets block shapes from the config alone is repeated by the memo of
// whole calls: a hit packs the hooked copies of the caller's descriptors, as the walk does,
// and follows the caller's changes to them.
TEST_F(Tma, TranslatedPreHooksTakeTheMemoOfWholeCalls) {
  te_cuda_shim::set_encoder(&content_encoder);
  te::JitFunction tuned("te_tma_kernels", "fake_tuned_subtile_scale");
  const int64_t M = 512, N = 256;
  auto ds = D(0x10000, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  auto dd = D(0x20000, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  uint64_t first[64], again[64], walked[64];
  // A map's encoding reads the same fields from the hooked copy and the caller's descriptor.
  const auto same_encoding = [](const te_cuda_shim::EncodeCall& a,
                                const te_cuda_shim::EncodeCall& b) {
    return std::memcmp(&a, &b, sizeof(a)) == 0;
  };
  g_calls.clear();
  const int n = std::abs(tt::dry_run(tuned, first, ds, dd, M, N, 2.0));  // tunes (fake timings)
  ASSERT_EQ(g_calls.size(), 2u);  // the walk's hooked copies of ds and dd
  const uint64_t hits = tt::call_memo_hits();
  // A hit packs the caller's own descriptors: encoded once (their own caches), the same maps.
  ASSERT_EQ(tt::dry_run(tuned, again, ds, dd, M, N, 2.0), n - 1);
  EXPECT_EQ(tt::call_memo_hits(), hits + 1);
  ASSERT_EQ(g_calls.size(), 4u);
  EXPECT_TRUE(same_encoding(g_calls[2], g_calls[0]));
  EXPECT_TRUE(same_encoding(g_calls[3], g_calls[1]));
  EXPECT_EQ(std::vector<uint64_t>(first, first + n - 1),
            std::vector<uint64_t>(again, again + n - 1));
  ASSERT_EQ(tt::dry_run(tuned, again, ds, dd, M, N, 2.0), n - 1);  // maps current: no encoding
  EXPECT_EQ(tt::call_memo_hits(), hits + 2);
  EXPECT_EQ(g_calls.size(), 4u);
  {
    const tt::WalkLayers layers;
    ASSERT_EQ(tt::dry_run(tuned, walked, ds, dd, M, N, 2.0), n - 1);
    EXPECT_EQ(tt::call_memo_hits(), hits + 2);  // the layers' walk, not the memo
  }
  EXPECT_EQ(std::vector<uint64_t>(walked, walked + n - 1),
            std::vector<uint64_t>(again, again + n - 1));
  // A new base: a hit still, src encoded again at the new address with the hook's box.
  ds.set_base(uint64_t{0x70000});
  const size_t before = g_calls.size();
  ASSERT_EQ(tt::dry_run(tuned, again, ds, dd, M, N, 2.0), n - 1);
  EXPECT_EQ(tt::call_memo_hits(), hits + 3);
  ASSERT_EQ(g_calls.size(), before + 1);
  te_cuda_shim::EncodeCall want = g_calls[0];
  want.address = 0x70000;
  EXPECT_TRUE(same_encoding(want, g_calls.back()));
  {
    const tt::WalkLayers layers;
    ASSERT_EQ(tt::dry_run(tuned, walked, ds, dd, M, N, 2.0), n - 1);
  }
  EXPECT_EQ(std::vector<uint64_t>(walked, walked + n - 1),
            std::vector<uint64_t>(again, again + n - 1));
  // The caller's descriptors keep their own block shapes.
  EXPECT_EQ(ds.block_shape()[0], 1);
  EXPECT_EQ(dd.block_shape()[1], 1);
  EXPECT_EQ(
      tt::last_dry_run_kernel()->signature().find("tensordesc<fp32[64, 64]>") != std::string::npos,
      true)
      << tt::last_dry_run_kernel()->signature();
}

// A launch checks a descriptor's fields and reuses its encoded map only while they are the
// ones it checked and encoded: every setter (and assignment) makes the next launch look again.
TEST_F(Tma, ChangedFieldsAreCheckedAndEncodedAgain) {
  te_cuda_shim::set_encoder(&fake_encoder);
  g_hook_calls = 0;
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  auto src = D(0x30000, te::DType::fp16, {128, 64}, {64, 1}, {32, 32});
  auto dst = D(0x50000, te::DType::fp16, {128, 64}, {64, 1}, {32, 32});
  uint64_t slots[64];
  tt::dry_run(copy2, slots, src, dst, 32, 32);
  ASSERT_EQ(g_hook_calls, 2);
  const auto expect_value_error = [&](const char* rule) {
    try {
      tt::dry_run(copy2, slots, src, dst, 32, 32);
      ADD_FAILURE() << "expected ValueError: " << rule;
    } catch (const te::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
    }
  };
  src.set_base(uint64_t{0x30008});
  expect_value_error("is not 16-byte aligned");
  src.set_base(uint64_t{0x30000});  // the fields it had: checked again, the map still current
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 32, 32), 10);
  EXPECT_EQ(g_hook_calls, 2);
  src.set_shape({128, 64}, {60, 1});
  expect_value_error("is not a multiple of 16 bytes");
  src = D(0x30000, te::DType::fp16, {128, 64}, {64, 1}, {32, 32});
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 32, 32), 10);
  EXPECT_EQ(g_hook_calls, 2);
  src = D(0x30000, te::DType::i8, {128, 64}, {64, 1}, {32, 32}, te::Padding::kZero);
  src.set_padding(te::Padding::kNan);
  expect_value_error("NaN padding needs a floating-point element type");
  src = D(0x90000, te::DType::fp16, {128, 64}, {64, 1}, {32, 32});
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 32, 32), 10);  // assigned: a new base, encoded
  EXPECT_EQ(g_hook_calls, 3);
  EXPECT_EQ(g_last_call.address, 0x90000u);
  // Block shapes are part of the specialisation: checked at the next launch.
  dst.set_block_shape({32, 24});
  expect_value_error("is not a power of 2");
}

TEST_F(Tma, Fp32Tf32AndIntegerElementTypesOnEncoding) {
  te_cuda_shim::set_encoder(&fake_encoder);
  te::JitFunction copy1("te_tma_kernels", "tma_copy_1d");
  uint64_t slots[64];
  auto a = D(0x10000, te::DType::i8, {4096}, {1}, {256});
  tt::dry_run(copy1, slots, a, a, 256);
  EXPECT_EQ(g_last_call.data_type, 0);  // CU_TENSOR_MAP_DATA_TYPE_UINT8
  EXPECT_EQ(g_last_call.rank, 1u);
  EXPECT_EQ(g_last_call.dims[0], 4096u);
  EXPECT_EQ(g_last_call.box[0], 256u);
  EXPECT_EQ(std::vector<uint64_t>(slots + 1, slots + 3), (std::vector<uint64_t>{4096, 1}));
  auto f = D(0x10000, te::DType::fp32, {4096}, {1}, {256});
  tt::dry_run(copy1, slots, f, f, 256);
  EXPECT_EQ(g_last_call.data_type, 7);  // CU_TENSOR_MAP_DATA_TYPE_FLOAT32
  if (has_tf32_rounding()) {
    f.set_round_f32_to_tf32(true);
    tt::dry_run(copy1, slots, f, f, 256);
    EXPECT_EQ(g_last_call.data_type, 11);  // CU_TENSOR_MAP_DATA_TYPE_TFLOAT32
  }
}

TEST_F(Tma, WithoutDriverTheEncodingRaisesNoDeviceError) {
  if (te::cuda_available()) GTEST_SKIP() << "a GPU is usable here";
  te::JitFunction copy1("te_tma_kernels", "tma_copy_1d");
  auto a = D(0x10000, te::DType::fp16, {4096}, {1}, {64});
  uint64_t slots[64];
  const uint64_t before = te_cuda_shim::encodes();
  EXPECT_THROW(tt::dry_run(copy1, slots, a, a, 64), te::NoDeviceError);
  EXPECT_THROW(copy1.launch({64}, nullptr, a, a, 64), te::NoDeviceError);
  EXPECT_EQ(te_cuda_shim::encodes() - before, 1u);  // tried once, cached nothing
  EXPECT_THROW(tt::dry_run(copy1, slots, a, a, 64), te::NoDeviceError);
}

TEST_F(Tma, WithoutTmaTritonPassesBaseShapeStridesAndFlags) {
  // Before sm_90 Triton does not lower descriptors to TMA: its launcher passes base, shape
  // and strides (i64), padding == "nan" (and from 3.7 round_f32_to_tf32), then shape (i32) and
  // strides (i64) again.
  te::set_target(te::Target::parse("cuda:80"));
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  auto src = D(0x10000, te::DType::fp16, {100, 48}, {48, 1}, {16, 32}, te::Padding::kNan);
  auto dst = D(0x20000, te::DType::fp16, {64, 64}, {64, 1}, {16, 32});
  const auto& k = copy2.compile(src, dst, 16, 32);
  EXPECT_EQ(k.hash(), python_hash("tma_copy_2d",
                                  "(desc(0x10000, 'float16', [100, 48], [48, 1], [16, 32], 'nan'), "
                                  "desc(0x20000, 'float16', [64, 64], [64, 1], [16, 32]), 16, 32)",
                                  80));
  const bool v37 = has_tf32_rounding();
  const int per = v37 ? 11 : 10;
  EXPECT_EQ(k.num_kernel_params(), 2 * per + 2);
  EXPECT_EQ(ptx_params(k), static_cast<size_t>(2 * per + 2));
  uint64_t slots[64];
  const uint64_t before = te_cuda_shim::encodes();
  ASSERT_EQ(tt::dry_run(copy2, slots, src, dst, 16, 32), 2 * per);
  EXPECT_EQ(te_cuda_shim::encodes(), before);
  std::vector<uint64_t> expect = {0x10000, 100, 48, 48, 1, 1};
  if (v37) expect.push_back(0);
  for (uint64_t v : {100, 48, 48, 1}) expect.push_back(v);
  for (uint64_t v : {0x20000, 64, 64, 64, 1, 0}) expect.push_back(v);
  if (v37) expect.push_back(0);
  for (uint64_t v : {64, 64, 64, 1}) expect.push_back(v);
  EXPECT_EQ(std::vector<uint64_t>(slots, slots + 2 * per), expect);
}

// ---- Triton's checks ----------------------------------------------------------------

template <class E, class... Args>
std::string error_of(const te::JitFunction& fn, const Args&... args) {
  try {
    fn.compile(args...);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "no exception";
}

TEST_F(Tma, EveryCheckRaisesItsError) {
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  const std::string at = "tma_copy_2d(src, dst, BLOCK_M, BLOCK_N): argument #0 'src': ";
  auto ok = D(0x20000, te::DType::fp16, {64, 64}, {64, 1}, {16, 32});
  EXPECT_EQ(error_of<te::ValueError>(
                copy2, D(0x10008, te::DType::fp16, {64, 64}, {64, 1}, {16, 32}), ok, 16, 32),
            at + "the tensor descriptor's base address 0x10008 is not 16-byte aligned (Triton: "
                 "base must be "
                 "16-byte aligned)");
  EXPECT_EQ(error_of<te::ValueError>(
                copy2, D(0x10000, te::DType::fp16, {64, 64}, {64, 1}, {16, 24}), ok, 16, 24),
            at + "block_shape [16, 24]: element 1 (24) is not a power of 2");
  EXPECT_EQ(error_of<te::ValueError>(
                copy2, D(0x10000, te::DType::fp16, {64, 64}, {64, 1}, {2048, 1024}), ok, 16, 32),
            at + "block_shape [2048, 1024] has more than 1048576 elements (Triton's maximum tensor "
                 "numel)");
  EXPECT_EQ(error_of<te::ValueError>(
                copy2, D(0x10000, te::DType::fp16, {64, 60}, {60, 1}, {16, 32}), ok, 16, 32),
            at + "strides [60, 1]: stride 0 (60 elements of 2 bytes) is not a multiple of 16 bytes "
                 "(Triton: "
                 "strides must be 16-byte aligned)");
  EXPECT_EQ(error_of<te::ValueError>(copy2, D(0x10000, te::DType::fp16, {0, 64}, {64, 1}, {16, 32}),
                                     ok, 16, 32),
            at + "shape [0, 64]: dimension 0 is not positive (Triton: shape must be positive)");
  EXPECT_EQ(
      error_of<te::ValueError>(copy2, D(0x10000, te::DType::fp16, {64, 64}, {64, 2}, {16, 32}), ok,
                               16, 32),
      at +
          "strides [64, 2]: the last stride must be 1 (Triton: last dimension must be contiguous)");
  EXPECT_EQ(error_of<te::ValueError>(
                copy2, D(0x10000, te::DType::i8, {64, 64}, {64, 1}, {16, 32}, te::Padding::kNan),
                D(0x20000, te::DType::i8, {64, 64}, {64, 1}, {16, 32}), 16, 32),
            at + "NaN padding needs a floating-point element type, got i8");
  EXPECT_EQ(error_of<te::TypeError>(
                copy2, D(0x10000, te::DType::invalid, {64, 64}, {64, 1}, {16, 32}), ok, 16, 32),
            at + "the tensor descriptor has no element type; pass a DType");
  if (has_tf32_rounding()) {
    te::TensorDescriptor tf(uint64_t{0x10000}, te::DType::fp16, {64, 64}, {64, 1}, {16, 32},
                            te::Padding::kZero, true);
    EXPECT_EQ(error_of<te::ValueError>(copy2, tf, ok, 16, 32),
              at + "round_f32_to_tf32 needs an fp32 tensor, got fp16");
  }
  // The second argument is named when it is the bad one.
  EXPECT_EQ(error_of<te::ValueError>(
                copy2, ok, D(0x10000, te::DType::fp16, {64, 64}, {64, 2}, {16, 32}), 16, 32),
            "tma_copy_2d(src, dst, BLOCK_M, BLOCK_N): argument #1 'dst': strides [64, 2]: the last "
            "stride must "
            "be 1 (Triton: last dimension must be contiguous)");
  // A descriptor for a constexpr parameter, and inside a tuple.
  EXPECT_EQ(error_of<te::TypeError>(copy2, ok, ok, ok, 32),
            "tma_copy_2d(src, dst, BLOCK_M, BLOCK_N): argument #2 'BLOCK_M': a tensor descriptor "
            "cannot be "
            "passed to a tl.constexpr parameter");
  te::JitFunction scale("te_tma_kernels", "tma_scale_2d");
  EXPECT_EQ(error_of<te::NotSupportedError>(scale, ok, ok, std::make_tuple(ok), 16, 32),
            "tma_scale_2d(src, dst, alpha, BLOCK_M, BLOCK_N): argument #2 'alpha': a tensor "
            "descriptor inside "
            "a tuple; pass it as an argument of its own");
}

// What the layers tell a call's observer (the Python fast path leaves it on the caller's
// objects, as Autotuner.run does): the choice, and the block shapes the translated pre-hook
// set, alike from the walk and from a hit of the memo of whole calls.
TEST_F(Tma, TheLayersTellTheCallsObserverTheChoiceAndTheHooksBlockShapes) {
  te_cuda_shim::set_encoder(&content_encoder);
  te::JitFunction tuned("te_tma_kernels", "fake_tuned_subtile_scale");
  const int64_t M = 384, N = 128;  // a key no other test tunes
  const auto ds = D(0x10000, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const auto dd = D(0x20000, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  struct Seen {
    std::vector<std::pair<uint32_t, const void*>> chosen;
    std::vector<std::pair<uint32_t, std::vector<int64_t>>> blocks;
    std::vector<bool> tuples;  // each block assigned as a tuple (this hook assigns lists)
  };
  Seen seen;
  te::detail::CallObserver observer;
  observer.chose = [](void* ctx, uint32_t layer, const void* choice) {
    static_cast<Seen*>(ctx)->chosen.emplace_back(layer, choice);
  };
  observer.hooked = [](void* ctx, uint32_t param, const int64_t* block, uint32_t rank, bool tuple) {
    static_cast<Seen*>(ctx)->blocks.emplace_back(param, std::vector<int64_t>(block, block + rank));
    static_cast<Seen*>(ctx)->tuples.push_back(tuple);
  };
  observer.ctx = &seen;
  uint64_t slots[64];
  const std::vector<std::pair<uint32_t, std::vector<int64_t>>> hooked = {{0, {64, 64}},
                                                                         {1, {64, 32}}};
  // The walk (it tunes: the SUBTILE config wins).
  ASSERT_NE(tt::dry_run_observed(tuned, observer, slots, ds, dd, M, N, 2.0), 0);
  ASSERT_EQ(seen.chosen.size(), 1u);
  EXPECT_EQ(seen.chosen[0].first, 0u);
  const void* choice = seen.chosen[0].second;
  ASSERT_NE(choice, nullptr);
  EXPECT_EQ(seen.blocks, hooked);
  EXPECT_EQ(seen.tuples, std::vector<bool>(2, false));
  // A hit of the memo of whole calls tells the same.
  const uint64_t hits = tt::call_memo_hits();
  seen = Seen();
  ASSERT_GT(tt::dry_run_observed(tuned, observer, slots, ds, dd, M, N, 3.0), 0);
  EXPECT_EQ(tt::call_memo_hits(), hits + 1);
  ASSERT_EQ(seen.chosen.size(), 1u);
  EXPECT_EQ(seen.chosen[0], std::make_pair(0u, choice));
  EXPECT_EQ(seen.blocks, hooked);
  // A named call walks the layers again: the same.
  seen = Seen();
  ASSERT_GT(tt::dry_run_observed(tuned, observer, slots, ds, dd, M, N, "alpha"_a = 2.0), 0);
  EXPECT_EQ(tt::call_memo_hits(), hits + 1);
  ASSERT_EQ(seen.chosen.size(), 1u);
  EXPECT_EQ(seen.chosen[0], std::make_pair(0u, choice));
  EXPECT_EQ(seen.blocks, hooked);
  // A call without an observer takes the same memo entry.
  ASSERT_GT(tt::dry_run(tuned, slots, ds, dd, M, N, 2.0), 0);
  EXPECT_EQ(tt::call_memo_hits(), hits + 2);
}

// A config pre-hook in the forms the runtime applies (the persistent-matmul tutorial's, with
// the output block conditional on a meta-parameter) runs in C++, for compiles as for launches:
// the kernel compiled for the chosen config is the one Python's warmup compiles after Python's
// hook set the descriptors' block shapes, the caller's descriptors stay as they are, and no
// Python runs for the hook.
TEST_F(Tma, TranslatedPreHooksSetTheBlockShapesAsPythonsHookDoes) {
  te::JitFunction tuned("te_tma_kernels", "fake_tuned_subtile_scale");
  const int64_t M = 512, N = 256;
  te::TensorDescriptor ds(uint64_t{0x10000}, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  te::TensorDescriptor dd(uint64_t{0x20000}, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const te::CompiledKernel& k = tuned.compile(ds, dd, M, N, 2.0);  // tunes (fake timings)
  const te::TuningResult* r = tuned.tuning_result(ds, dd, M, N, 2.0);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->best.has_pre_hook);
  EXPECT_NE(r->best.str.find("SUBTILE: True"), std::string::npos) << r->best.str;
  EXPECT_EQ(ds.block_shape()[0], 1);
  EXPECT_EQ(dd.block_shape()[1], 1);
  EXPECT_NE(k.signature().find("tensordesc<fp32[64, 32]>"), std::string::npos) << k.signature();
  std::string want;
  {
    te_test::Gil gil;
    te_test::exec(
        "import te_tma_kernels\n"
        "_k = te_tma_kernels.fake_tuned_subtile_scale\n"
        "_cfg = _k.best_config\n"
        "_s = desc(0x10000, 'float32', [512, 256], [256, 1], [1, 1])\n"
        "_d = desc(0x20000, 'float32', [512, 256], [256, 1], [1, 1])\n"
        "_cfg.pre_hook({'src': _s, 'dst': _d, 'M': 512, 'N': 256, 'alpha': 2.0,\n"
        "               **_cfg.all_kwargs()})\n"
        "_args = [_s, _d, 512, 256, 2.0]\n"
        "_kw = {k: v for k, v in _cfg.all_kwargs().items() if v is not None}\n");
    EXPECT_EQ(te_test::eval("repr(list(_s.block_shape)) + repr(list(_d.block_shape))")
                  .cast<std::string>(),
              "[64, 64][64, 32]");
    want = py::module_::import("te_helpers")
               .attr("warmup_hashes")("te_tma_kernels", "fake_tuned_subtile_scale.fn",
                                      te_test::eval("_args"), te_test::eval("_kw"))
               .cast<std::string>();
  }
  EXPECT_EQ(k.hash(), want);
  // Again, from the tuned choice: the hook applies in C++, Python is not asked.
  const long python_calls = tt::layer_python_calls();
  EXPECT_EQ(tuned.compile(ds, dd, M, N, 2.0).hash(), want);
  EXPECT_EQ(tuned.compile(ds, dd, M, N, 3.0).hash(), want);
  EXPECT_EQ(tt::layer_python_calls(), python_calls);
}

// A hook outside those forms runs in Python at launch only, as before; the runtime says so
// when it records the kernel (test_runtime_only: a program without Python refuses it).
TEST_F(Tma, PreHooksOutsideTheFormsStayInPython) {
  te::JitFunction tuned("te_tma_kernels", "fake_tuned_python_hook_scale");
  const int64_t M = 512, N = 256;
  te::TensorDescriptor ds(uint64_t{0x10000}, te::DType::fp32, {M, N}, {N, 1}, {64, 64});
  te::TensorDescriptor dd(uint64_t{0x20000}, te::DType::fp32, {M, N}, {N, 1}, {64, 64});
  const long python_calls = tt::layer_python_calls();
  const te::CompiledKernel& k = tuned.compile(ds, dd, M, N, 2.0);  // tunes; no launch: no hook
  EXPECT_NE(k.signature().find("tensordesc<fp32[64, 64]>"), std::string::npos) << k.signature();
  te_test::Gil gil;
  te_test::exec("import te_tma_kernels\n");
  EXPECT_EQ(te_test::eval("len(te_tma_kernels.PYTHON_HOOK_CALLS)").cast<int>(), 0);
  EXPECT_GT(tt::layer_python_calls(), python_calls);  // the tuning
}

TEST(TmaDescriptor, ConstructionChecksRankAndLengths) {
  auto what = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const te::ValueError& e) {
      return e.what();
    }
    return "no exception";
  };
  EXPECT_EQ(
      what([] {
        te::TensorDescriptor(uint64_t{0}, te::DType::fp16, {64, 64}, {64}, {16, 16});
      }),
      "TensorDescriptor: shape, strides and block_shape must have the same length, got 2, 1 and 2");
  EXPECT_EQ(what([] { te::TensorDescriptor(uint64_t{0}, te::DType::fp16, {}, {}, {}); }),
            "TensorDescriptor: the rank must be 1 to 5, got a shape of 0 dimensions");
  EXPECT_EQ(what([] {
              te::TensorDescriptor(uint64_t{0}, te::DType::fp16, {2, 2, 2, 2, 2, 2},
                                   {32, 16, 8, 4, 2, 1}, {2, 2, 2, 2, 2, 2});
            }),
            "TensorDescriptor: the rank must be 1 to 5, got a shape of 6 dimensions");
  te::TensorDescriptor d(uint64_t{0x100}, te::DType::fp16, {64, 64}, {64, 1}, {16, 16});
  EXPECT_EQ(what([&] { d.set_block_shape({16}); }),
            "TensorDescriptor::set_block_shape: the descriptor has rank 2, got 1 block dimensions");
  d.set_block_shape({32, 8});
  EXPECT_EQ(d.block_shape()[0], 32);
  EXPECT_EQ(d.block_shape()[1], 8);
  te::detail::ArgValue v[1];
  te::detail::fill_args(v, d);
  EXPECT_EQ(v[0].kind, te::detail::ArgKind::kTensorDesc);
  EXPECT_EQ(v[0].dtype, te::DType::fp16);
  EXPECT_EQ(v[0].ptr, &d);
}
}  // namespace
