// Part of test_runtime_only (one process for its suites; the strict ones run in
// runtime_only_strict): bundles whose entries and tuning rules serve calls nobody listed and
// tuning keys nobody tuned (issue 21).

#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "bundle/file_reader.h"
#include "bundle/format.h"
#include "bundle/store.h"
#include "bundle/validate.h"
#include "bundle_calls.h"
#include "message_of.h"
#include "rule_calls.h"
#include "runtime_only_bundles.h"
#include "testing/testing.h"

namespace te = triton_embed;

namespace {

using te_test::message_of;

using te_runtime_only::g_loaded;
using te_runtime_only::use_bundles;

// With the bundle bundle_aot_fallback builds from tests/aot/fallback_calls.txt, for cuda:90:
// calls nobody listed resolve to the most specialised entry compiled with fewer
// assumptions, or raise NotInBundleError saying why none serves. Each test makes calls of its
// own: a key resolved once stays in the process's cache.
class RuntimeOnlyFallback : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { use_bundles({te_bundle::dir() + "/aot_fallback/fallback.teb"}); }
  void SetUp() override {
    te::set_target(te::Target::parse("cuda:90"));
    te::set_bundle_notice_callback([this](const te::BundleNotice& n) { notices.push_back(n); });
  }
  void TearDown() override {
    te::set_bundle_notice_callback(nullptr);
    te::set_target(std::nullopt);
  }
  // The signature of the entry the calling thread's last dry run resolved.
  static std::string served() {
    const te::CompiledKernel* k = te::detail::testing::last_dry_run_kernel();
    return k != nullptr ? std::string(k->signature()) : "";
  }
  static std::string bundle() { return g_loaded; }
  std::vector<te::BundleNotice> notices;
};

// The entries of fallback_calls.txt, as their signatures read.
std::string add_signature(const char* x, const char* y, const char* out, const char* n) {
  return std::string("add_kernel(x_ptr: ") + x + ", y_ptr: " + y + ", out_ptr: " + out +
         ", n_elements: " + n + ", BLOCK: constexpr = 1024)";
}
const std::string kFp16Div = add_signature("*fp16 D", "*fp16 D", "*fp16 D", "i32 D");
const std::string kPlain = add_signature("*fp32 D", "*fp32 D", "*fp32 D", "i32");
const std::string kOnlyX = add_signature("*fp32 D", "*fp32", "*fp32", "i32");
const std::string kOnlyY = add_signature("*fp32", "*fp32 D", "*fp32", "i32");
const std::string kGeneric = add_signature("*fp32", "*fp32", "*fp32", "i32");

// fp32 pointers that are not 16-byte aligned, and aligned fp16 ones.
const te::Pointer kXOdd(uintptr_t{0x10004}, te::DType::fp32);
const te::Pointer kYOdd(uintptr_t{0x20004}, te::DType::fp32);
const te::Pointer kOutOdd(uintptr_t{0x30004}, te::DType::fp32);
const te::Pointer kHalfAligned(uintptr_t{0x40000}, te::DType::fp16);

// The example: the plain entry, compiled for n = 1000 (n: i32, no divisibility),
// serves n = 4096 (i32 D) and n = 1 (a constexpr 1, packed as the runtime int 1), said once
// per key; the next launch of a key is a plain cache hit (no search, allocation or notice).
TEST_F(RuntimeOnlyFallback, APlainEntryServesDivisibleValuesAndOne) {
  using te::detail::testing::dry_run;
  const te::JitFunction add("pykernels.vector", "add_kernel");
  uint64_t slots[8] = {};
  // Its own specialisation: an exact entry, nothing said.
  EXPECT_EQ(dry_run(add, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1000, 1024), -5);
  EXPECT_EQ(served(), kPlain);
  EXPECT_TRUE(notices.empty());

  EXPECT_EQ(dry_run(add, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 1024), -5);
  EXPECT_EQ(served(), kPlain);
  EXPECT_EQ(slots[3], 4096u);
  ASSERT_EQ(notices.size(), 1u);
  const te::BundleNotice& n = notices[0];
  EXPECT_EQ(n.kernel, "pykernels.vector.add_kernel");
  EXPECT_EQ(n.asked, add_signature("*fp32 D", "*fp32 D", "*fp32 D", "i32 D"));
  EXPECT_EQ(n.served, kPlain);
  EXPECT_EQ(n.target, "cuda:90");
  EXPECT_EQ(n.entry_target, "cuda:90");
  EXPECT_EQ(n.bundle, bundle());
  EXPECT_TRUE(n.less_specialised);
  EXPECT_FALSE(n.ptx);
  EXPECT_EQ(n.message, "triton_embed: pykernels.vector.add_kernel as " + n.asked +
                           ": no kernel bundle holds this specialisation for cuda:90; bundle " +
                           bundle() + "'s cuda:90 entry " + kPlain +
                           ", compiled with fewer assumptions, serves it (add an entry for this "
                           "specialisation to launch code specialised to it; "
                           "TRITON_EMBED_BUNDLE_STRICT=1 refuses less specialised entries "
                           "instead)\n");

  // n = 1: Triton makes it a constexpr; the entry takes n as an i32, so 1 is packed for it.
  EXPECT_EQ(dry_run(add, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1, 1024), -5);
  EXPECT_EQ(served(), kPlain);
  EXPECT_EQ(slots[0], 0x10000u);
  EXPECT_EQ(slots[1], 0x20000u);
  EXPECT_EQ(slots[2], 0x30000u);
  EXPECT_EQ(slots[3], 1u);
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[1].asked, add_signature("*fp32 D", "*fp32 D", "*fp32 D", "constexpr = 1"));
  EXPECT_EQ(add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1, 1024).signature(),
            kPlain);

  // Memoised: both keys are plain cache hits now.
  for (int round = 0; round < 2; ++round) {
    uint64_t one[8] = {}, div[8] = {};
    int n_one = 0, n_div = 0;
    {
      te_test::CountAllocations allocations;
      n_one = dry_run(add, one, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1, 1024);
      n_div = dry_run(add, div, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 1024);
      EXPECT_EQ(allocations.count(), 0u);
    }
    EXPECT_EQ(n_one, 4);
    EXPECT_EQ(n_div, 4);
    EXPECT_EQ(one[3], 1u);
    EXPECT_EQ(div[3], 4096u);
    // Named arguments: the same entry, the same packing.
    using namespace te::literals;
    uint64_t named[8] = {};
    EXPECT_EQ(dry_run(add, named, te_bundle::kX, te_bundle::kY, te_bundle::kOut, "n_elements"_a = 1,
                      "BLOCK"_a = 1024),
              4);
    EXPECT_EQ(std::vector<uint64_t>(named, named + 4), std::vector<uint64_t>(one, one + 4));
  }
  EXPECT_EQ(notices.size(), 2u);
}

// Among several entries that serve a call, the one with the most assumptions; of equally
// specialised ones, the first in the bundle. Aligned pointers are served by entries compiled
// with no alignment assumption for them.
TEST_F(RuntimeOnlyFallback, TheMostSpecialisedEntryServesAndTiesGoToTheFirst) {
  using te::detail::testing::dry_run;
  const te::JitFunction add("pykernels.vector", "add_kernel");
  uint64_t slots[8] = {};
  // out unaligned: the plain entry assumes it aligned; "x aligned only" and "y aligned only"
  // keep one assumption each (x and y are both aligned here): the first listed serves.
  EXPECT_EQ(dry_run(add, slots, te_bundle::kX, te_bundle::kY, kOutOdd, 1000, 1024), -5);
  EXPECT_EQ(served(), kOnlyX);
  EXPECT_EQ(slots[2], 0x30004u);
  // x unaligned: only "y aligned only" and the generic entry serve; the first assumes more.
  EXPECT_EQ(dry_run(add, slots, kXOdd, te_bundle::kY, te_bundle::kOut, 4096, 1024), -5);
  EXPECT_EQ(served(), kOnlyY);
  EXPECT_EQ(slots[0], 0x10004u);
  EXPECT_EQ(slots[3], 4096u);
  // Nothing aligned, n = 1: the generic entry, with 1 packed for n.
  EXPECT_EQ(dry_run(add, slots, kXOdd, kYOdd, kOutOdd, 1, 1024), -5);
  EXPECT_EQ(served(), kGeneric);
  EXPECT_EQ(std::vector<uint64_t>(slots, slots + 4),
            (std::vector<uint64_t>{0x10004, 0x20004, 0x30004, 1}));
  ASSERT_EQ(notices.size(), 3u);
  EXPECT_EQ(notices[0].served, kOnlyX);
  EXPECT_EQ(notices[1].served, kOnlyY);
  EXPECT_EQ(notices[2].served, kGeneric);
}

// What the rules do not cover raises NotInBundleError, which says for the nearest entries why
// each does not serve.
TEST_F(RuntimeOnlyFallback, WhatNoEntryServesRaisesNotInBundleErrorSayingWhy) {
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const std::string b = " (" + bundle() + ")\n    does not serve this call: ";
  // n = 1000 for fp16: the fp16 entry assumes n divisible by 16.
  EXPECT_EQ(message_of<te::NotInBundleError>(
                [&] { add.compile(kHalfAligned, kHalfAligned, kHalfAligned, 1000, 1024); }),
            "pykernels.vector.add_kernel specialised as " +
                add_signature("*fp16 D", "*fp16 D", "*fp16 D", "i32") +
                " for cuda:90 is in no kernel bundle (the loaded bundles hold 5 entries of it, "
                "e.g.:\n  cuda:90: " +
                kFp16Div + b +
                "argument #3 'n_elements' is assumed divisible by 16 there (i32 D), and this "
                "call's is not\n  cuda:90: " +
                kPlain + b +
                "argument #0 'x_ptr' is *fp32 D there, *fp16 D in this call\n  cuda:90: " + kOnlyX +
                b +
                "argument #0 'x_ptr' is *fp32 D there, *fp16 D in this call)\nthis program links "
                "triton_embed::runtime only, which compiles nothing: link "
                "triton_embed::triton_embed to compile it with Triton on first use, or build a "
                "kernel bundle that holds this specialisation");
  auto why = [&](auto&& call) {
    const std::string m = message_of<te::NotInBundleError>(call);
    const size_t at = m.find(b);
    return at == std::string::npos
               ? m
               : m.substr(at + b.size(), m.find('\n', at + b.size()) - at - b.size());
  };
  // An entry that assumes alignment does not serve an unaligned pointer.
  EXPECT_EQ(why([&] { add.compile(te_bundle::kHalf, kHalfAligned, kHalfAligned, 4096, 1024); }),
            "argument #0 'x_ptr' is assumed 16-byte aligned there (*fp16 D), and this call's is "
            "not");
  // Nor does one that assumes n divisible by 16 serve n = 1.
  EXPECT_EQ(why([&] { add.compile(kHalfAligned, kHalfAligned, kHalfAligned, 1, 1024); }),
            "argument #3 'n_elements' is 1 in this call, which Triton makes a constexpr; an "
            "entry serves that only as an i32 with no divisibility assumption, and this one's is "
            "i32 D");
  // Constexprs, types and options must be the same.
  EXPECT_EQ(why([&] { add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1000, 512); }),
            "argument #4 'BLOCK' is compiled in as another constexpr value there");
  EXPECT_EQ(why([&] {
              add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, (int64_t{1} << 33) + 1,
                          1024);
            }),
            "argument #3 'n_elements' is i32 there, i64 in this call");
  EXPECT_EQ(why([&] {
              add.with_options(te::Options().num_warps(8))
                  .compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1000, 1024);
            }),
            "it is compiled with other options");
  // Another target: its entries are for cuda:90, which does not run on cuda:80.
  te::set_target(te::Target::parse("cuda:80"));
  EXPECT_EQ(why([&] { add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1000, 1024); }),
            "it is built for cuda:90, which does not run on cuda:80");
  EXPECT_TRUE(notices.empty());
}

// TRITON_EMBED_BUNDLE_STRICT=1 (runtime_only_strict): exact entries only, as before
// issue 21; the error says which entry would have served.
class RuntimeOnlyFallbackStrict : public RuntimeOnlyFallback {};

TEST_F(RuntimeOnlyFallbackStrict, OnlyExactEntriesServe) {
  using te::detail::testing::dry_run;
  const te::JitFunction add("pykernels.vector", "add_kernel");
  uint64_t slots[8] = {};
  EXPECT_EQ(dry_run(add, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1000, 1024), -5);
  EXPECT_EQ(served(), kPlain);
  for (int n : {4096, 1}) {
    const std::string m = message_of<te::NotInBundleError>(
        [&] { add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, n, 1024); });
    EXPECT_NE(m.find("(the loaded bundles hold 5 entries of it, e.g.:\n  cuda:90: " + kPlain +
                     " (" + bundle() +
                     ")\n    serves this call with fewer assumptions, but "
                     "TRITON_EMBED_BUNDLE_STRICT=1 allows exact entries only\n"),
              std::string::npos)
        << m;
  }
  EXPECT_TRUE(notices.empty());
}

// Tuning keys nobody tuned (issue 21), from the bundle BundleJitRules.Record wrote
// (rule_calls.h): each rule_*_kernel tuned at a few n, with its rule.
class RuntimeOnlyRules : public RuntimeOnlyFallback {
 protected:
  static void SetUpTestSuite() { use_bundles({te_bundle::dir() + "/rules.teb"}); }
  // The hash of the entry recorded for kernel at n, and str() of the config tuned there.
  static std::string recorded(const std::string& what) {
    static const std::map<std::string, std::string> m =
        te_bundle::read_hashes(te_rules::hashes_path());
    auto it = m.find(what);
    return it != m.end() ? it->second : "(not recorded: " + what + ")";
  }
  // Checks that kernel k at n launches what was tuned at `served` (the same config, hence the
  // same entry), and that the first launch said so, once.
  void expect_served(const char* kernel, int n, int served) {
    SCOPED_TRACE(std::string(kernel) + " n=" + std::to_string(n));
    const te::JitFunction k("te_tune_kernels", kernel);
    const std::string at = std::string(kernel) + ":" + std::to_string(served);
    notices.clear();
    for (int round = 0; round < 2; ++round) {
      EXPECT_EQ(te_rules::compile(k, n).hash(), recorded(at));
      const te::TuningResult* r = te_rules::tuning_result(k, n);
      ASSERT_NE(r, nullptr);
      EXPECT_EQ(r->best.str, recorded("best:" + at));
    }
    // Memoised: after its first launch, a launch of the key is a plain hit of the memo of
    // whole calls (no rule search, no allocation).
    const std::string mode = "mul";
    uint64_t slots[8] = {};
    te::detail::testing::dry_run(k, slots, te_bundle::kX, te_bundle::kOut, n, 8, mode);
    const uint64_t hits = te::detail::testing::call_memo_hits();
    int packed = 0;
    {
      te_test::CountAllocations allocations;
      packed = te::detail::testing::dry_run(k, slots, te_bundle::kX, te_bundle::kOut, n, 8, mode);
      EXPECT_EQ(allocations.count(), 0u);
    }
    EXPECT_GT(packed, 0);
    EXPECT_EQ(te::detail::testing::call_memo_hits(), hits + 1);
    if (n == served) {
      EXPECT_TRUE(notices.empty());
      return;
    }
    ASSERT_EQ(notices.size(), 1u);  // once per key: the second launch is a plain hit
    const te::BundleNotice& b = notices[0];
    EXPECT_TRUE(b.tuning_rule);
    EXPECT_FALSE(b.ptx);
    EXPECT_FALSE(b.less_specialised);
    EXPECT_EQ(b.kernel, std::string("te_tune_kernels.") + kernel);
    EXPECT_EQ(b.target, "cuda:90");
    EXPECT_EQ(b.entry_target, "cuda:90");
    EXPECT_EQ(b.bundle, bundle());
    const bool two_d = std::string(kernel) == "rule_2d_kernel";
    const std::string tail = two_d ? ", m=8, MODE='mul'" : "";
    EXPECT_EQ(b.asked, "n=" + std::to_string(n) + tail);
    EXPECT_EQ(b.served, "n=" + std::to_string(served) + tail);
    EXPECT_EQ(b.message, "triton_embed: te_tune_kernels." + std::string(kernel) +
                             ": no kernel bundle holds a tuned choice for tuning key " + b.asked +
                             " (cuda:90); as its tuning rule '" + b.rule + "' (bundle " + bundle() +
                             ") says, the choice tuned for " + b.served +
                             " on cuda:90 serves it: " + recorded("best:" + at) +
                             " (tune this key too to launch its own choice; "
                             "TRITON_EMBED_BUNDLE_STRICT=1 refuses keys nobody tuned instead)\n");
  }
  // Why kernel k refuses n (the part of the NotInBundleError after "does not cover it: ").
  std::string refused(const char* kernel, int n, int m = 8, const char* mode = "mul",
                      bool half = false) {
    const te::JitFunction k("te_tune_kernels", kernel);
    const std::string msg = message_of<te::NotInBundleError>([&] {
      if (half) {
        k.compile(te_bundle::kHalf, te_bundle::kHalf, n, m, mode);
      } else {
        te_rules::compile(k, n, m, mode);
      }
    });
    const std::string head = "does not cover it: ", end = "; tune this key too";
    const size_t from = msg.find(head), to = msg.find(end);
    if (from == std::string::npos || to == std::string::npos) return msg;
    return msg.substr(from + head.size(), to - from - head.size());
  }
};

TEST_F(RuntimeOnlyRules, NearestServesTheNearestTunedKeyOnALog2Scale) {
  // Tuned at 16, 256, 4096. 64 is as near 16 as 256 (log2: 4, 6, 8): ties go to the larger.
  for (auto [n, served] : {std::pair{16, 16},
                           {1, 16},
                           {7, 16},
                           {64, 256},
                           {100, 256},
                           {300, 256},
                           {1000, 256},
                           {2000, 4096},
                           {5000, 4096},
                           {9000, 4096}}) {
    expect_served("rule_nearest_kernel", n, served);
  }
  EXPECT_EQ(refused("rule_nearest_kernel", 0),
            "key argument 'n': its rule is nearest, on a log2 scale of positive values, and 0 "
            "was not tuned (tuned: 16, 256, 4096)");
}

TEST_F(RuntimeOnlyRules, BucketsServeATunedKeyOfTheSameBucket) {
  // bucket:pow2, tuned at 16, 128, 256, 4096: (64, 128] -> 128, (128, 256] -> 256, ...
  for (auto [n, served] : {std::pair{100, 128}, {129, 256}, {200, 256}, {3000, 4096}, {9, 16}}) {
    expect_served("rule_pow2_kernel", n, served);
  }
  EXPECT_EQ(refused("rule_pow2_kernel", 50),
            "key argument 'n': its rule is bucket:pow2, and no value in 50's bucket (32, 64] was "
            "tuned (tuned: 16, 128, 256, 4096)");
  // bucket:16,256,4096, tuned at each bound: (-inf, 16] -> 16, (16, 256] -> 256, ...
  for (auto [n, served] : {std::pair{7, 16}, {17, 256}, {100, 256}, {4000, 4096}}) {
    expect_served("rule_bounds_kernel", n, served);
  }
  EXPECT_EQ(refused("rule_bounds_kernel", 5000),
            "key argument 'n': its rule is bucket:16,256,4096, and 5000 is above its last bound "
            "(tuned: 16, 256, 4096)");
}

TEST_F(RuntimeOnlyRules, WhatNoRuleCoversRaisesNotInBundleErrorSayingWhy) {
  expect_served("rule_exact_kernel", 256, 256);
  const te::JitFunction exact("te_tune_kernels", "rule_exact_kernel");
  EXPECT_EQ(message_of<te::NotInBundleError>([&] { te_rules::compile(exact, 100); }),
            "te_tune_kernels.rule_exact_kernel: no kernel bundle holds the tuned configuration "
            "for tuning key n=100 (cuda:90), and its tuning rule (exact: none was declared) does "
            "not cover it: key argument 'n': its rule is exact, and 100 was not tuned (tuned: 16, "
            "256, 4096); tune this key too (list it in the calls file of `triton-embed-bundle "
            "tune`, or record a run that launches it), or declare a rule that covers it "
            "(triton_embed::set_tuning_rule, a calls file's #rule, triton-embed-bundle --rule)");
  // n=nearest, and m exact (no item names it, and there is no default): key (n, m, MODE).
  expect_served("rule_2d_kernel", 1000, 256);
  EXPECT_EQ(refused("rule_2d_kernel", 1000, 9),
            "key argument 'm': its rule is exact, and 9 was not tuned (tuned: 8)");
  // Parts no rule covers: a string, the tensor arguments' dtypes.
  EXPECT_EQ(refused("rule_2d_kernel", 1000, 8, "add"),
            "no tuned key matches it in its other parts: of the nearest, key argument 'MODE' "
            "differs (rules apply to integers only)");
  EXPECT_EQ(refused("rule_2d_kernel", 256, 8, "mul", true),
            "no tuned key matches it in its other parts: of the nearest, the dtypes of the "
            "tensor arguments (part of the tuning key) differ");
  const te::JitFunction two_d("te_tune_kernels", "rule_2d_kernel");
  EXPECT_NE(message_of<te::NotInBundleError>([&] { te_rules::compile(two_d, 1000, 9); })
                .find("and the kernel's tuning rule 'n=nearest' (bundle " + bundle() +
                      ") does not cover it"),
            std::string::npos);
}

// A runtime-only process that writes what it loaded keeps the rules, and records the choices
// tuned for their keys only: not those a rule gave other keys.
TEST_F(RuntimeOnlyRules, WritingTheLoadedBundleKeepsTheRules) {
  expect_served("rule_nearest_kernel", 150, 256);
  expect_served("rule_2d_kernel", 301, 256);
  const std::string path = te_bundle::dir() + "/rules_again.teb";
  te::write_bundle(path);
  const std::string listed =
      te::detail::bundle::describe_decisions(te::detail::bundle::Bundle::open(path));
  EXPECT_NE(listed.find("key [n], rule for keys nobody tuned: nearest\n    cuda:90 key (16, "),
            std::string::npos)
      << listed;
  EXPECT_NE(listed.find("key [n, m, MODE], rule for keys nobody tuned: n=nearest\n"),
            std::string::npos)
      << listed;
  EXPECT_EQ(listed.find("key (150, "), std::string::npos) << listed;
  EXPECT_EQ(listed.find("key (301, "), std::string::npos) << listed;
}

// TRITON_EMBED_BUNDLE_STRICT=1 (runtime_only_strict): recorded keys only.
class RuntimeOnlyRulesStrict : public RuntimeOnlyRules {};

TEST_F(RuntimeOnlyRulesStrict, OnlyRecordedKeysServe) {
  expect_served("rule_nearest_kernel", 256, 256);
  EXPECT_EQ(refused("rule_nearest_kernel", 100),
            "key argument 'n': its rule is exact, and 100 was not tuned (tuned: 16, 256, 4096) "
            "(TRITON_EMBED_BUNDLE_STRICT=1: recorded keys only)");
  EXPECT_TRUE(notices.empty());
}
}  // namespace
