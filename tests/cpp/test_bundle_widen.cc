// Recording te_widen_kernels at two shapes each (issue 37), compile-only for cuda:90: the
// bundle as it is (widened later by `triton-embed-bundle widen`, CTest bundle_widen) and, with
// set_record_widening, widened when it is written. Part of test_bundle_jit, run alone by CTest
// bundle_widen_record (widen_calls.h says which process does what).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>
#include <triton_embed/runtime.h>

#include <map>
#include <string>
#include <vector>

#include "bundle/file_reader.h"
#include "testing/testing.h"
#include "widen_calls.h"

namespace te = triton_embed;
namespace tb = triton_embed::detail::bundle;
namespace tt = triton_embed::detail::testing;

namespace {

class BundleJitWiden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { te::unload_bundles(); }
  void SetUp() override { te::set_target(te::Target::parse("cuda:90")); }
  void TearDown() override {
    te::set_target(std::nullopt);
    te::set_record_widening(false);
  }
};

// The signatures a bundle holds of kernel `name`, with each entry's hash.
std::map<std::string, std::string> entries_of(const std::string& path, const std::string& name) {
  const tb::Bundle b = tb::Bundle::open(path);
  std::map<std::string, std::string> out;
  for (const tb::EntryView& e : b.entries()) {
    if (b.kernels()[e.kernel].name == name) {
      out[std::string(e.meta.signature) + " " + std::string(e.options)] = std::string(e.meta.hash);
    }
  }
  return out;
}

std::string rows_signature(const char* n_rows, const char* n_cols, const char* stride) {
  return std::string("rows_kernel(x_ptr: *fp32 D, w_ptr: *fp32 D, out_ptr: *fp32 D, n_rows: ") +
         n_rows + ", n_cols: " + n_cols + ", stride: " + stride +
         ", eps: fp32, BLOCK: constexpr = 1024) ";
}

TEST_F(BundleJitWiden, RecordAsItIsAndWidened) {
  ::mkdir(te_widen::dir().c_str(), 0755);
  const te::JitFunction rows("te_widen_kernels", "rows_kernel");
  const te::JitFunction rope("te_widen_kernels", "rope_kernel");
  const te::JitFunction rope_heur("te_widen_kernels", "rope_heur_kernel");
  const te::JitFunction mm("te_widen_kernels", "mm_kernel");
  for (int64_t n : te_widen::kRecordedRows) te_widen::compile_rows(rows, n);
  for (int b : te_widen::kRecordedBatch) {
    te_widen::compile_rope(rope, b, te_widen::kRecordedSeq);
    te_widen::compile_rope(rope_heur, b, te_widen::kRecordedSeq);
  }
  for (int64_t m : te_widen::kRecordedM) te_widen::compile_mm(mm, m);
  te::set_tuning_rule("te_widen_kernels.copy_kernel", "M=nearest");
  const te::JitFunction copy("te_widen_kernels", "copy_kernel");
  for (int64_t m : te_widen::kRecordedCopyM) {
    // The config's pre-hook (the tutorial's form) translates: with descriptors it sets their
    // block shapes (the inner entry's descriptors are the config's), with pointers it does
    // nothing.
    const te::CompiledKernel& d = te_widen::compile_copy(copy, m, true);
    const std::string bm = m == 16 ? "32" : "128";
    EXPECT_NE(d.signature().find("src: tensordesc<fp32[" + bm + ", 64]>"), std::string::npos)
        << d.signature();
    const te::CompiledKernel& p = te_widen::compile_copy(copy, m, false);
    EXPECT_NE(p.signature().find("src: *fp32 D, dst: *fp32 D"), std::string::npos) << p.signature();
  }
  ASSERT_EQ(tt::cache_size(rows), 2u);

  // As it is: writing compiles nothing.
  const long compiles = tt::compile_count();
  te::write_bundle(te_widen::recorded_path());
  EXPECT_EQ(tt::compile_count(), compiles);
  const auto recorded = entries_of(te_widen::recorded_path(), "rows_kernel");
  EXPECT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded.count(rows_signature("i32 D", "i32 D", "i32 D")), 1u);
  EXPECT_EQ(recorded.count(rows_signature("constexpr = 1", "i32 D", "i32 D")), 1u);
  EXPECT_EQ(tt::cache_size(rows), 2u);  // the launches compiled only the recorded shapes

  // Widened: the twins are compiled when the bundle is written (none before, none on a launch).
  te::set_record_widening(true);
  te::write_bundle(te_widen::recorded_widened_path());
  EXPECT_GT(tt::compile_count(), compiles);
  const auto widened = entries_of(te_widen::recorded_widened_path(), "rows_kernel");
  // The two recorded entries, the twin with every integer unspecialised, and one per integer
  // alone (n_rows's serves both recorded entries: 1 and 4096 rows).
  EXPECT_EQ(widened.size(), 2u + 1 + 3 + 2) << ::testing::PrintToString(widened);
  for (const auto& [sig, hash] : recorded) EXPECT_EQ(widened.at(sig), hash) << sig;
  // Each twin is the JIT's own compile of the call a user makes at such a size (same hash).
  te::set_record_widening(false);
  EXPECT_EQ(widened.at(rows_signature("i32", "i32", "i32")),
            te_widen::compile_rows(rows, 1000, 1000, 1000).hash());
  EXPECT_EQ(widened.at(rows_signature("i32", "i32 D", "i32 D")),
            te_widen::compile_rows(rows, 1000).hash());
  EXPECT_EQ(widened.at(rows_signature("constexpr = 1", "i32", "i32 D")),
            te_widen::compile_rows(rows, 1, 1000).hash());
  // The autotuned kernel's chosen configs get twins with M unspecialised: the entry the JIT
  // compiles for an M the fake timings give the same config (BLOCK_M 128 for M = 100).
  const auto mm_entries = entries_of(te_widen::recorded_widened_path(), "mm_kernel");
  const te::CompiledKernel& m100 = te_widen::compile_mm(mm, 100);
  EXPECT_NE(m100.signature().find("M: i32, N: i32 D"), std::string::npos) << m100.signature();
  bool found = false;
  for (const auto& [sig, hash] : mm_entries) found = found || hash == m100.hash();
  EXPECT_TRUE(found) << m100.signature();
}

}  // namespace
