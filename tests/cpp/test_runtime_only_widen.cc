// Record once, serve every shape (issue 37), in a program with no Python: te_widen_kernels'
// bundles, recorded at two shapes each and widened (widen_calls.h), serve sizes nobody ran,
// around every boundary of Triton's integer specialisation, from the most specialised entry
// that is valid for the call. Part of test_runtime_only (one process for its suites; the
// strict one runs in runtime_only_strict).

#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/cache_key.h"
#include "core/key_values.h"
#include "core/pack.h"
#include "core/specialize.h"
#include "cuda_shim.h"
#include "message_of.h"
#include "testing/testing.h"
#include "widen_calls.h"

namespace te = triton_embed;

namespace {

using te::detail::testing::dry_run;
using te_test::message_of;

// Loads `path` as the process's only bundle (an earlier suite's resolutions are forgotten).
void serve_from(const std::string& path) {
  te::unload_bundles();
  te::load_bundle(path);
}

// The signature of the entry the calling thread's last dry run resolved.
std::string served() {
  const te::CompiledKernel* k = te::detail::testing::last_dry_run_kernel();
  return k != nullptr ? std::string(k->signature()) : "";
}

std::string rows_signature(const char* n_rows, const char* n_cols, const char* stride) {
  return std::string("rows_kernel(x_ptr: *fp32 D, w_ptr: *fp32 D, out_ptr: *fp32 D, n_rows: ") +
         n_rows + ", n_cols: " + n_cols + ", stride: " + stride +
         ", eps: fp32, BLOCK: constexpr = 1024)";
}

// Row counts around each boundary of Triton's integer specialisation: 1 (a constexpr), the
// multiples of 16 ("D") and their neighbours, small and large (the largest i32).
const int64_t kRowCounts[] = {1,
                              2,
                              15,
                              16,
                              17,
                              31,
                              32,
                              33,
                              100,
                              1000,
                              4095,
                              4096,
                              4097,
                              65535,
                              65536,
                              65537,
                              1 << 20,
                              (1 << 20) + 1,
                              INT32_MAX - 15,
                              INT32_MAX};

// The entry that must serve rows_kernel at n rows of kHidden: the recorded one when n is
// recorded as is (1, or a multiple of 16: every integer "D"), else the twin with n_rows alone
// unspecialised, which keeps n_cols's and stride's assumptions.
std::string rows_entry(int64_t n) {
  if (n == 1) return rows_signature("constexpr = 1", "i32 D", "i32 D");
  if (n % 16 == 0) return rows_signature("i32 D", "i32 D", "i32 D");
  return rows_signature("i32", "i32 D", "i32 D");
}

class RuntimeOnlyWiden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { serve_from(te_widen::widened_path()); }
  void SetUp() override {
    te::set_target(te::Target::parse("cuda:90"));
    te::set_bundle_notice_callback([this](const te::BundleNotice& n) { notices.push_back(n); });
  }
  void TearDown() override {
    te::set_bundle_notice_callback(nullptr);
    te::set_target(std::nullopt);
  }
  std::vector<te::BundleNotice> notices;
};

// Reason 1 of the issue: n_rows changes its specialisation with the size. Every count is served
// by its own specialisation (the recorded entries and n_rows's twin, which keeps n_cols's and
// stride's assumptions), with the count packed as the kernel's n_rows (1: a constexpr there).
TEST_F(RuntimeOnlyWiden, RowsServeEveryCountAroundEachBoundary) {
  const te::JitFunction rows("te_widen_kernels", "rows_kernel");
  for (int64_t n : kRowCounts) {
    uint64_t slots[8] = {};
    dry_run(rows, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, n, te_widen::kHidden,
            te_widen::kHidden, 1e-6f, 1024);
    EXPECT_EQ(served(), rows_entry(n)) << n;
    EXPECT_EQ(slots[3], static_cast<uint64_t>(n == 1 ? te_widen::kHidden : n)) << n;
  }
  EXPECT_TRUE(notices.empty());  // each an exact entry
  // Other integers unlike the recording: 4097 rows of 1000 (n_cols no multiple of 16) by the
  // twin with both unspecialised... which widen made of neither entry: the one with every
  // integer unspecialised serves it, with fewer assumptions (said once). 4096 rows of 1000 has
  // n_cols's twin of the first entry, exactly; 1 row of 1000 that of the second.
  uint64_t slots[8] = {};
  dry_run(rows, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4097, 1000, 1024, 1e-6f,
          1024);
  EXPECT_EQ(served(), rows_signature("i32", "i32", "i32"));
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].asked, rows_signature("i32", "i32", "i32 D"));
  EXPECT_TRUE(notices[0].less_specialised);
  dry_run(rows, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 1000, 1024, 1e-6f,
          1024);
  EXPECT_EQ(served(), rows_signature("i32 D", "i32", "i32 D"));
  dry_run(rows, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1, 1000, 1024, 1e-6f, 1024);
  EXPECT_EQ(served(), rows_signature("constexpr = 1", "i32", "i32 D"));
  EXPECT_EQ(notices.size(), 1u);
  // Beyond 32 bits Triton passes an i64: another signature, which no entry has.
  const std::string why = message_of<te::NotInBundleError>([&] {
    dry_run(rows, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, int64_t{1} << 33,
            te_widen::kHidden, te_widen::kHidden, 1e-6f, 1024);
  });
  EXPECT_NE(why.find("n_rows: i64 D"), std::string::npos) << why;
}

// What the store's index relies on (src/core/key_values.h): an entry that serves a call
// (match_key) is of the call's serving class, so a lookup finds it in the call's bucket. Over
// every combination of the specialisations rows_kernel's three integers take (1, "D",
// neither), each key as a call and as an entry.
TEST_F(RuntimeOnlyWiden, AnEntryThatServesACallIsOfItsServingClass) {
  namespace td = te::detail;
  const te::JitFunction rows("te_widen_kernels", "rows_kernel");
  const td::KernelState& k = *td::testing::state(rows);
  struct Keyed {
    std::unique_ptr<td::LeafList> leaves = std::make_unique<td::LeafList>();
    std::unique_ptr<td::Key> key = std::make_unique<td::Key>();
    std::vector<te::ArgValue> args;
  };
  std::vector<Keyed> keyed;
  for (int64_t a : {1, 16, 17}) {
    for (int64_t b : {1, 16, 17}) {
      for (int64_t c : {1, 16, 17}) {
        Keyed x;
        x.args.resize(8);
        td::fill_args(x.args.data(), te_bundle::kX, te_bundle::kY, te_bundle::kOut, a, b, c, 1e-6f,
                      1024);
        td::specialize(k, x.args.data(), *x.leaves);
        td::build_key(k, *x.leaves, *x.key);
        keyed.push_back(std::move(x));
      }
    }
  }
  size_t served = 0;
  for (const Keyed& call : keyed) {
    for (const Keyed& entry : keyed) {
      const td::KeyMatch m =
          td::match_key(k, *call.leaves, *call.key, entry.key->w, entry.key->n, false);
      if (m.verdict == td::KeyMatch::Verdict::kRefused) continue;
      ++served;
      EXPECT_EQ(td::serving_class(call.key->w, call.key->n),
                td::serving_class(entry.key->w, entry.key->n));
    }
  }
  // Per integer, an entry's 17 (neither) serves a call's 1, 16 and 17, its 16 ("D") only 16,
  // its 1 only 1: 5 pairs of values, 5^3 of keys.
  EXPECT_EQ(served, 125u);
}

// Reason 2: a constexpr carries a size. Each batch widen was given is served at every sequence
// length; one it was not given is refused, saying which entries the bundle has.
TEST_F(RuntimeOnlyWiden, ConstexprSizesServeTheValuesWidenWasGiven) {
  const te::JitFunction rope("te_widen_kernels", "rope_kernel");
  for (int batch : {1, 2, 3, 4, 8}) {
    for (int64_t seq : {1, 7, 16, 128, 1000, 4096, 4099}) {
      uint64_t slots[8] = {};
      dry_run(rope, slots, te_widen::kHalfX, te_bundle::kX, te_bundle::kY, te_widen::kHalfOut, seq,
              batch, te_widen::kHeads, te_widen::kHeadDim, 8);
      const std::string sig = served();
      EXPECT_NE(sig.find("BATCH: constexpr = " + std::to_string(batch) + ","), std::string::npos)
          << batch << " " << seq << ": " << sig;
      EXPECT_NE(sig.find(seq % 16 == 0 ? "seq_len: i32 D," : "seq_len: i32,"), std::string::npos)
          << batch << " " << seq << ": " << sig;
      EXPECT_EQ(slots[4], static_cast<uint64_t>(seq));
    }
  }
  uint64_t slots[8] = {};
  const std::string why = message_of<te::NotInBundleError>([&] {
    dry_run(rope, slots, te_widen::kHalfX, te_bundle::kX, te_bundle::kY, te_widen::kHalfOut, 128, 5,
            te_widen::kHeads, te_widen::kHeadDim, 8);
  });
  EXPECT_NE(why.find("BATCH: constexpr = 5"), std::string::npos) << why;
  EXPECT_NE(why.find("is compiled in as another constexpr value there"), std::string::npos) << why;
}

// The same through @triton.heuristics: the heuristic (an expression the runtime evaluates) sets
// BLOCK_H from each new HEADS, and widen compiled the entry it names.
TEST_F(RuntimeOnlyWiden, HeuristicsComputedAgainForNewConstexprValues) {
  const te::JitFunction rope("te_widen_kernels", "rope_heur_kernel");
  for (const auto& [heads, block] : {std::pair<int, int>{4, 4}, {8, 8}, {12, 16}}) {
    for (int batch : {2, 4}) {
      for (int64_t seq : {128, 129}) {
        dry_run(rope, nullptr, te_widen::kHalfX, te_bundle::kX, te_bundle::kY, te_widen::kHalfOut,
                seq, batch, heads, te_widen::kHeadDim);
        const std::string sig = served();
        EXPECT_NE(sig.find("HEADS: constexpr = " + std::to_string(heads) +
                           ", HEAD_DIM: constexpr = 64, BLOCK_H: constexpr = " +
                           std::to_string(block) + ")"),
                  std::string::npos)
            << heads << " " << batch << " " << seq << ": " << sig;
      }
    }
  }
}

// Reasons 3 and 5: mm_kernel was recorded at M = 16 and 128 without a tuning rule; widen gave
// it M=nearest and compiled each chosen config with M unspecialised. Every M is served by the
// rule's config, through that entry (N and K keep their assumptions).
TEST_F(RuntimeOnlyWiden, TheRuleWidenGaveServesEveryM) {
  const te::JitFunction mm("te_widen_kernels", "mm_kernel");
  for (int64_t m : {1, 2, 15, 16, 17, 40, 50, 100, 127, 128, 129, 1000, 4096, 100000}) {
    dry_run(mm, nullptr, te_widen::kA, te_widen::kB, te_widen::kC, m, te_widen::kHidden,
            te_widen::kHidden, te_widen::kHidden, te_widen::kHidden, te_widen::kHidden);
    const std::string sig = served();
    // nearest on a log2 scale between 16 and 128 (the geometric mean, about 45.25)
    const int block = m <= 45 ? 16 : 128;
    EXPECT_NE(sig.find("BLOCK_M: constexpr = " + std::to_string(block) + ","), std::string::npos)
        << m << ": " << sig;
    // A multiple of 16 has the recorded entry's specialisation; another M, M's twin.
    EXPECT_NE(sig.find(m % 16 == 0 ? "M: i32 D, N: i32 D" : "M: i32, N: i32 D"), std::string::npos)
        << m << ": " << sig;
  }
}

// The fused-attention tutorial's pre-hook form, applied without Python in both forms: with
// host descriptors the rule's config sets their block shapes, with pointers the hook returns
// at once; every M is served (M's twins of the recorded entries).
TEST_F(RuntimeOnlyWiden, TheTutorialsPreHookRunsWithoutPythonInBothForms) {
  // The launch path up to the driver call, with maps from the stand-in driver's encoder.
  te_cuda_shim::set_encoder(
      [](const te_cuda_shim::EncodeCall&, unsigned char* out) { std::memset(out, 0, 128); });
  const te::JitFunction copy("te_widen_kernels", "copy_kernel");
  for (int64_t m : {1, 16, 17, 20, 64, 100, 256, 1000}) {
    const char* bm =
        m < 64 ? "32" : "128";  // nearest of the tuned 16 and 256 (log2; 64: a tie, to 256)
    te::TensorDescriptor src = te_widen::copy_descriptor(0x100000, m);
    te::TensorDescriptor dst = te_widen::copy_descriptor(0x200000, m);
    dry_run(copy, nullptr, src, dst, m, 64);
    std::string sig = served();
    EXPECT_NE(sig.find(std::string("src: tensordesc<fp32[") + bm + ", 64]>, dst: tensordesc<fp32[" +
                       bm + ", 64]>"),
              std::string::npos)
        << m << ": " << sig;
    EXPECT_NE(sig.find(m % 16 == 0 ? "M: i32 D" : "M: i32,"), std::string::npos)
        << m << ": " << sig;
    dry_run(copy, nullptr, te_bundle::kX, te_bundle::kOut, m, 64);
    sig = served();
    EXPECT_NE(sig.find("src: *fp32 D, dst: *fp32 D"), std::string::npos) << m << ": " << sig;
    EXPECT_NE(sig.find(std::string("BLOCK_M: constexpr = ") + bm), std::string::npos)
        << m << ": " << sig;
  }
  te_cuda_shim::set_encoder(nullptr);
}

// A recording that widened as it was written serves the integers' sizes too; its tuned kernel,
// recorded without a rule, serves its recorded keys only.
TEST_F(RuntimeOnlyWiden, ARecordingThatWidenedServesEveryCount) {
  serve_from(te_widen::recorded_widened_path());
  const te::JitFunction rows("te_widen_kernels", "rows_kernel");
  for (int64_t n : kRowCounts) {
    dry_run(rows, nullptr, te_bundle::kX, te_bundle::kY, te_bundle::kOut, n, te_widen::kHidden,
            te_widen::kHidden, 1e-6f, 1024);
    EXPECT_EQ(served(), rows_entry(n)) << n;
  }
  const te::JitFunction mm("te_widen_kernels", "mm_kernel");
  dry_run(mm, nullptr, te_widen::kA, te_widen::kB, te_widen::kC, 16, te_widen::kHidden,
          te_widen::kHidden, te_widen::kHidden, te_widen::kHidden, te_widen::kHidden);
  const std::string why = message_of<te::NotInBundleError>([&] {
    dry_run(mm, nullptr, te_widen::kA, te_widen::kB, te_widen::kC, 100, te_widen::kHidden,
            te_widen::kHidden, te_widen::kHidden, te_widen::kHidden, te_widen::kHidden);
  });
  EXPECT_NE(why.find("its tuning rule (exact: none was declared) does not cover it"),
            std::string::npos)
      << why;
  serve_from(te_widen::widened_path());
}

// TRITON_EMBED_BUNDLE_STRICT=1 (runtime_only_strict): a twin serves only the calls it is the
// very specialisation of (the code Triton compiles for them), never one with more assumptions;
// nor does the rule serve keys nobody tuned.
class RuntimeOnlyWidenStrict : public RuntimeOnlyWiden {};

TEST_F(RuntimeOnlyWidenStrict, OnlyExactSpecialisationsServe) {
  const te::JitFunction rows("te_widen_kernels", "rows_kernel");
  for (int64_t n : kRowCounts) {
    dry_run(rows, nullptr, te_bundle::kX, te_bundle::kY, te_bundle::kOut, n, te_widen::kHidden,
            te_widen::kHidden, 1e-6f, 1024);
    EXPECT_EQ(served(), rows_entry(n)) << n;
  }
  const std::string refused = message_of<te::NotInBundleError>([&] {
    dry_run(rows, nullptr, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4097, 1000, 1024, 1e-6f,
            1024);
  });
  EXPECT_NE(refused.find("TRITON_EMBED_BUNDLE_STRICT=1 allows exact entries only"),
            std::string::npos)
      << refused;
  const te::JitFunction mm("te_widen_kernels", "mm_kernel");
  const std::string why = message_of<te::NotInBundleError>([&] {
    dry_run(mm, nullptr, te_widen::kA, te_widen::kB, te_widen::kC, 100, te_widen::kHidden,
            te_widen::kHidden, te_widen::kHidden, te_widen::kHidden, te_widen::kHidden);
  });
  EXPECT_NE(why.find("TRITON_EMBED_BUNDLE_STRICT=1: recorded keys only"), std::string::npos) << why;
  EXPECT_TRUE(notices.empty());
}

}  // namespace
