// Kernel bundles with the JIT layer: a process records what it compiled (write_bundle), and a
// later process that loads the bundle serves its cache misses from it without compiling.
// CTest runs the two as two processes, the second after the first (bundle_record runs
// BundleJitRecord, bundle_jit_load BundleJit); test_runtime_only's bundle tests use the same
// file.
// BundleAot checks the bundles `triton-embed-bundle build` compiled ahead of time against
// what this process compiles for the same calls (bundle_aot_jit).

#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

#include "bundle/file_reader.h"
#include "bundle/file_writer.h"
#include "bundle/format.h"
#include "bundle/kernel_table.h"
#include "bundle/validate.h"
#include "bundle_calls.h"
#include "core/kernel_state.h"
#include "core/target.h"
#include "message_of.h"
#include "rule_calls.h"
#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace tb = triton_embed::detail::bundle;
using te_bundle::compile_call;

namespace {

class BundleJit : public ::testing::Test {
 protected:
  void SetUp() override { te::set_target(te::Target::parse("cuda:90")); }
  void TearDown() override { te::set_target(std::nullopt); }
};

// The recording (bundle_record; the build records the bundle it embeds with this test too).
class BundleJitRecord : public BundleJit {};

TEST_F(BundleJitRecord, RecordWritesWhatWasCompiled) {
  const te::JitFunction add("pykernels.vector", "add_kernel");
  std::ofstream hashes(te_bundle::hashes_path());
  std::map<std::string, const te::CompiledKernel*> compiled;
  for (const char* which : te_bundle::kRecorded) {
    compiled[which] = &compile_call(add, which);
    hashes << which << " " << compiled[which]->hash() << "\n";
  }
  hashes.close();
  // An entry keyed on a Python object (a @triton.jit function as a constexpr) stays out.
  const te::JitFunction takes_fn("te_spec_kernels", "k_constexpr");
  const te::JitFunction relu("te_compile_kernels", "relu");
  takes_fn.compile(relu);
  // Wrapped kernels: their inner entries, layers, heuristic results and tuned choices.
  std::ofstream wrapped(te_bundle::wrapped_hashes_path());
  for (const te_bundle::WrappedCall& w : te_bundle::kWrapped) {
    const te::JitFunction k("te_tune_kernels", w.kernel);
    wrapped << w.which << " " << te_bundle::compile_wrapped(k, w.which).hash() << "\n";
  }
  const te::JitFunction tuned("te_tune_kernels", "fake_tuned_heur_kernel");
  for (int n : {1000, 1024}) {
    const te::TuningResult* r = tuned.tuning_result(te_bundle::kX, te_bundle::kOut, n);
    ASSERT_NE(r, nullptr);
    wrapped << "best:fake_tuned_heur_kernel:" << n << " " << r->best.str << "\n";
  }
  for (const te_bundle::HookedCall& h : te_bundle::kHooked) {
    const te::JitFunction k("te_tma_kernels", h.kernel);
    wrapped << h.which << " " << te_bundle::compile_hooked(k, h).hash() << "\n";
  }
  wrapped.close();

  te::write_bundle(te_bundle::bundle_path());
  const tb::Bundle b = tb::Bundle::open(te_bundle::bundle_path());
  const tb::ContentsView& c = b.view();
  EXPECT_EQ(c.producer.library_version, tb::library_version());
  EXPECT_FALSE(c.producer.triton_version.empty());

  auto kernel_index = [&](std::string_view module, std::string_view name) -> int {
    for (size_t i = 0; i < c.kernels.size(); ++i) {
      if (c.kernels[i].module == module && c.kernels[i].name == name) return static_cast<int>(i);
    }
    return -1;
  };
  const int ki = kernel_index("pykernels.vector", "add_kernel");
  ASSERT_GE(ki, 0);
  EXPECT_EQ(c.kernels[ki].wrapper, "");

  // The parameter table reads back as the kernel's.
  te::detail::KernelState decoded;
  tb::decode_params(c.kernels[ki].params, decoded, "test");
  ASSERT_EQ(decoded.params.size(), add.params().size());
  for (size_t i = 0; i < decoded.params.size(); ++i) {
    const te::ParamInfo& a = decoded.params[i];
    const te::ParamInfo& e = add.params()[i];
    EXPECT_EQ(a.name, e.name);
    EXPECT_EQ(a.is_constexpr, e.is_constexpr) << e.name;
    EXPECT_EQ(a.do_not_specialize, e.do_not_specialize) << e.name;
    EXPECT_EQ(a.annotation, e.annotation) << e.name;
    EXPECT_EQ(a.has_default, e.has_default) << e.name;
  }
  EXPECT_EQ(decoded.min_args, te::detail::testing::state(add)->min_args);

  // One entry per recorded call: its hash, signature, options and cubin.
  std::set<std::string> recorded;
  for (const tb::EntryView& e : c.entries) {
    if (static_cast<int>(e.kernel) != ki) continue;
    const std::string hash(e.meta.hash);
    recorded.insert(hash);
    EXPECT_EQ(e.target, 90u | 32u << 16);
    const auto it = std::find_if(compiled.begin(), compiled.end(),
                                 [&](const auto& kv) { return kv.second->hash() == hash; });
    ASSERT_NE(it, compiled.end()) << hash;
    const te::CompiledKernel& k = *it->second;
    EXPECT_EQ(e.meta.signature, k.signature());
    EXPECT_EQ(e.meta.name, k.name());
    EXPECT_EQ(e.meta.num_warps, k.num_warps());
    EXPECT_EQ(e.meta.shared, k.shared());
    EXPECT_EQ(e.meta.num_kernel_params, k.num_kernel_params());
    EXPECT_EQ(e.meta.cubin, k.cubin());
    const te::Options opts = tb::decode_options(e.options, "test");
    EXPECT_EQ(opts, it->first == "num_warps_8" ? te::Options().num_warps(8) : te::Options());
  }
  EXPECT_EQ(recorded.size(), 4u);
  const int kc = kernel_index("te_spec_kernels", "k_constexpr");
  for (const tb::EntryView& e : c.entries) EXPECT_NE(static_cast<int>(e.kernel), kc);

  // Each wrapped kernel once, with its wrapper and layers, its inner kernel's entries and its
  // decisions: a heuristic's result per key, a choice per tuning key.
  auto count = [&](int kernel, uint32_t kind) {
    size_t n = 0;
    for (const tb::RecordView& r : c.records)
      n += static_cast<int>(r.kernel) == kernel && r.kind == kind;
    return n;
  };
  auto entries_of = [&](int kernel) {
    size_t n = 0;
    for (const tb::EntryView& e : c.entries) n += static_cast<int>(e.kernel) == kernel;
    return n;
  };
  const int ht = kernel_index("te_tune_kernels", "fake_heur_tuned_kernel");
  const int th = kernel_index("te_tune_kernels", "fake_tuned_heur_kernel");
  const int counted = kernel_index("te_tune_kernels", "counted_heur_kernel");
  const int neg = kernel_index("te_tune_kernels", "fake_tuned_kernel");
  ASSERT_TRUE(ht >= 0 && th >= 0 && counted >= 0 && neg >= 0);
  EXPECT_EQ(c.kernels[ht].wrapper, "heuristics");
  EXPECT_EQ(c.kernels[th].wrapper, "autotune");
  EXPECT_EQ(c.kernels[counted].wrapper, "heuristics");
  EXPECT_FALSE(c.kernels[th].layers.empty());
  EXPECT_TRUE(c.kernels[ki].layers.empty());
  EXPECT_EQ(kernel_index("te_tune_kernels", "fake_tuned_heur_kernel[inner]"), -1);
  // fake_heur_tuned_kernel: EVEN for n = 1000 and 1024, a choice per n, and an inner entry
  // per n (1024 is divisible by 16, 1000 is not).
  EXPECT_EQ(count(ht, 1), 2u);
  EXPECT_EQ(count(ht, 2), 2u);
  EXPECT_EQ(entries_of(ht), 2u);
  // fake_tuned_heur_kernel: the heuristic (EVEN_BLOCKS, reads n and BLOCK) per key; two entries.
  EXPECT_EQ(count(th, 1), 2u);
  EXPECT_EQ(count(th, 2), 2u);
  EXPECT_EQ(entries_of(th), 2u);
  EXPECT_EQ(count(counted, 1), 2u);
  EXPECT_EQ(count(counted, 2), 0u);
  EXPECT_EQ(entries_of(counted), 2u);
  EXPECT_EQ(count(neg, 2), 1u);
  EXPECT_EQ(entries_of(neg), 1u);
  // The tuned configs' pre-hooks: as the runtime applies them, or why Python runs them.
  const std::string listed = tb::describe_decisions(b);
  EXPECT_NE(listed.find("kernel #"), std::string::npos) << listed;
  EXPECT_NE(listed.find(" te_tma_kernels.fake_tuned_subtile_scale: layers, outermost first\n"
                        "  layer 0 autotune, key [M, N]\n"
                        "    cuda:90 key (512, 256): BLOCK_M: 64, BLOCK_N: 64, SUBTILE: True, "),
            std::string::npos)
      << listed;
  EXPECT_NE(
      listed.find("; pre_hook: nargs[\"src\"].block_shape = [args[\"BLOCK_M\"], "
                  "args[\"BLOCK_N\"]]; nargs[\"dst\"].block_shape = [args[\"BLOCK_M\"], "
                  "((args[\"BLOCK_N\"] // 2) if args[\"SUBTILE\"] else args[\"BLOCK_N\"])]\n"),
      std::string::npos)
      << listed;
  EXPECT_NE(listed.find("; pre_hook in Python only (the statement Expr: "
                        "PYTHON_HOOK_CALLS.append((nargs[\"BLOCK_M\"], nargs[\"BLOCK_N\"]))"),
            std::string::npos)
      << listed;

  // For the PTX test (test_runtime_only): one call compiled for cuda:80, alone in ptx80.teb.
  te::set_target(te::Target::parse("cuda:80"));
  const te::CompiledKernel& k80 = compile_call(add, "n_not_div16");
  EXPECT_NE(k80.ptx().find("\n.target sm_80"), std::string_view::npos);
  std::ofstream(te_bundle::dir() + "/ptx80_hash.txt") << "n_not_div16 " << k80.hash() << "\n";
  te::write_bundle(te_bundle::dir() + "/all.teb");
  tb::Contents only80 = tb::Bundle::open(te_bundle::dir() + "/all.teb").contents();
  only80.records.clear();
  only80.entries.erase(
      std::remove_if(only80.entries.begin(), only80.entries.end(),
                     [](const tb::BundleEntry& e) { return e.target != (80u | 32u << 16); }),
      only80.entries.end());
  ASSERT_EQ(only80.entries.size(), 1u);
  tb::write_file(only80, te_bundle::dir() + "/ptx80.teb");
}

// Tuning rules travel with the tuned choices: each rule_*_kernel tuned at a few n (fake
// timings: the best BLOCK is the config nearest n), with its rule declared, and the listing
// shows the rules. Rules that do not parse, or name no key argument, are refused.
// It runs after the recording above, in its process: rules.teb holds what it resolves only.
class BundleJitRules : public BundleJit {
 protected:
  static void SetUpTestSuite() { te::unload_bundles(); }
};

using te_test::message_of;

TEST_F(BundleJitRules, Record) {
  EXPECT_EQ(message_of<te::ValueError>(
                [] { te::set_tuning_rule("te_tune_kernels.rule_exact_kernel", "bucket:64,16"); }),
            "set_tuning_rule(\"te_tune_kernels.rule_exact_kernel\", \"bucket:64,16\"): "
            "'bucket:64,16': the bounds must ascend");
  EXPECT_EQ(message_of<te::ValueError>(
                [] { te::set_tuning_rule("te_tune_kernels.rule_exact_kernel", "closest"); }),
            "set_tuning_rule(\"te_tune_kernels.rule_exact_kernel\", \"closest\"): 'closest' is "
            "not a rule; expected exact, nearest, bucket:pow2 or bucket:B1,B2,... (ascending "
            "upper bounds), optionally as NAME=RULE for one key argument, items separated by "
            "';'");
  EXPECT_THROW(te::set_tuning_rule("rule_exact_kernel", "nearest"), te::ValueError);
  std::ofstream hashes(te_rules::hashes_path());
  for (const te_rules::RuleKernel& rk : te_rules::kRuleKernels) {
    const te::JitFunction k("te_tune_kernels", rk.kernel);
    if (rk.rule != nullptr)
      te::set_tuning_rule(std::string("te_tune_kernels.") + rk.kernel, rk.rule);
    for (int n : rk.tuned) {
      const std::string at = std::string(rk.kernel) + ":" + std::to_string(n);
      hashes << at << " " << te_rules::compile(k, n).hash() << "\n";
      const te::TuningResult* r = te_rules::tuning_result(k, n);
      ASSERT_NE(r, nullptr) << at;
      hashes << "best:" << at << " " << r->best.str << "\n";
      // The fake timings choose the config nearest n.
      EXPECT_EQ(r->best.str.rfind("BLOCK: " + std::to_string(n) + ", num_warps: 4,", 0), 0u)
          << at << ": " << r->best.str;
    }
  }
  hashes.close();
  // A rule that names an argument that is not a key: write_bundle refuses it.
  te::set_tuning_rule("te_tune_kernels.rule_exact_kernel", "q=nearest");
  EXPECT_EQ(
      message_of<te::ValueError>([] { te::write_bundle(te_bundle::dir() + "/rules_bad.teb"); }),
      "te_tune_kernels.rule_exact_kernel: its tuning rule 'q=nearest' names 'q', which is "
      "not a key argument of its autotuner (keys: n); name one of those in "
      "set_tuning_rule (or the calls file's #rule, or --rule)");
  te::set_tuning_rule("te_tune_kernels.rule_exact_kernel", "exact");  // none
  te::write_bundle(te_rules::bundle_path());
  const std::string listed = tb::describe_decisions(tb::Bundle::open(te_rules::bundle_path()));
  EXPECT_NE(listed.find("layer 0 autotune, key [n], rule for keys nobody tuned: nearest\n"
                        "    cuda:90 key (16, 'torch.float32', 'torch.float32'): BLOCK: 16"),
            std::string::npos)
      << listed;
  EXPECT_NE(listed.find("key [n], rule for keys nobody tuned: bucket:16,256,4096\n"),
            std::string::npos);
  EXPECT_NE(listed.find("key [n, m, MODE], rule for keys nobody tuned: n=nearest\n"),
            std::string::npos);
  EXPECT_NE(listed.find("rule_exact_kernel: layers, outermost first\n  layer 0 autotune, key "
                        "[n]\n"),
            std::string::npos);
}

TEST_F(BundleJit, AnEntryOfOtherSourceIsNotUsed) {
  // The recorded bundle with the kernel's source hash changed, as if recorded from an older
  // version of the kernel: the JIT layer compiles instead of using it.
  const tb::Bundle recorded = tb::Bundle::open(te_bundle::bundle_path());
  tb::Contents c = recorded.contents();
  for (tb::Kernel& k : c.kernels) {
    ASSERT_EQ(k.source_hash.size(), 64u) << k.module << "." << k.name;  // Triton's cache_key
    k.source_hash = std::string(64, '0');
  }
  const std::string stale = te_bundle::dir() + "/stale.teb";
  tb::write_file(c, stale);
  te::load_bundle(stale);
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const long before = te::detail::testing::compile_count();
  compile_call(add, "aligned");
  EXPECT_EQ(te::detail::testing::compile_count(), before + 1);
}

TEST_F(BundleJit, LoadedBundleServesMissesWithoutCompiling) {
  const std::map<std::string, std::string> expected = te_bundle::read_hashes();
  ASSERT_EQ(expected.size(), 4u) << "run bundle_record first (" << te_bundle::hashes_path() << ")";
  te::load_bundle(te_bundle::bundle_path());
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const long before = te::detail::testing::compile_count();
  for (const char* which : te_bundle::kRecorded) {
    EXPECT_EQ(compile_call(add, which).hash(), expected.at(which)) << which;
  }
  // From the bundle, all four (but "aligned", which the test before compiled when the only
  // bundle loaded was of other source).
  EXPECT_EQ(te::detail::testing::compile_count(), before);
  // A specialisation the bundle lacks compiles as usual.
  const te::CompiledKernel& other =
      add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 512);
  EXPECT_EQ(te::detail::testing::compile_count(), before + 1);
  for (const auto& kv : expected) EXPECT_NE(other.hash(), kv.second);
  // So does one that a less specialised entry serves in a runtime-only program (n = 1, a
  // constexpr, which the n_not_div16 entry takes as a plain i32): the exact specialisation, as
  // Python compiles it.
  const te::CompiledKernel& one =
      add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 1, 1024);
  EXPECT_EQ(te::detail::testing::compile_count(), before + 2);
  EXPECT_NE(one.signature().find("n_elements: constexpr = 1"), std::string::npos)
      << one.signature();
  for (const auto& kv : expected) EXPECT_NE(one.hash(), kv.second);
}

TEST_F(BundleJit, TunedChoicesFromABundleServeTheJit) {
  using namespace triton_embed::literals;
  const std::map<std::string, std::string> expected =
      te_bundle::read_hashes(te_bundle::wrapped_hashes_path());
  ASSERT_EQ(expected.count("tuned_neg"), 1u) << "run bundle_record first";
  te::load_bundle(te_bundle::bundle_path());
  const te::JitFunction k("te_tune_kernels", "fake_tuned_kernel");
  const long python = te::detail::testing::layer_python_calls();
  const long compiles = te::detail::testing::compile_count();
  EXPECT_EQ(te_bundle::compile_wrapped(k, "tuned_neg").hash(), expected.at("tuned_neg"));
  EXPECT_EQ(te::detail::testing::layer_python_calls(), python);  // no tuning in Python
  EXPECT_EQ(te::detail::testing::compile_count(), compiles);     // the inner entry too
  const te::TuningResult* r =
      k.tuning_result(te_bundle::kX, te_bundle::kOut, 4000, "ACT"_a = "neg");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->from_cache);
  EXPECT_EQ(r->best.str,
            te_test::str_of("__import__('te_tune_kernels').fake_tuned_kernel.configs[1]"));
  // A tuning key the bundle lacks is tuned in Python, as without a bundle.
  k.compile(te_bundle::kX, te_bundle::kOut, 3000, "ACT"_a = "neg");
  EXPECT_EQ(te::detail::testing::layer_python_calls(), python + 1);
}

// unload_bundles(): what the bundle served is forgotten, and the JIT resolves it again: Triton
// compiles the kernel (the same hash) and Python tunes the key.
TEST_F(BundleJit, UnloadedBundlesLeaveTheJitToResolveAgain) {
  using namespace triton_embed::literals;
  const std::map<std::string, std::string> expected = te_bundle::read_hashes();
  const std::map<std::string, std::string> wrapped =
      te_bundle::read_hashes(te_bundle::wrapped_hashes_path());
  te::unload_bundles();
  te::load_bundle(te_bundle::bundle_path());
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const te::JitFunction k("te_tune_kernels", "fake_tuned_kernel");
  const long compiles = te::detail::testing::compile_count();
  const long python = te::detail::testing::layer_python_calls();
  EXPECT_EQ(compile_call(add, "n_not_div16").hash(), expected.at("n_not_div16"));
  EXPECT_EQ(te_bundle::compile_wrapped(k, "tuned_neg").hash(), wrapped.at("tuned_neg"));
  EXPECT_EQ(te::detail::testing::compile_count(), compiles);  // from the bundle
  EXPECT_EQ(te::detail::testing::layer_python_calls(), python);

  te::unload_bundles();
  EXPECT_EQ(k.tuning_result(te_bundle::kX, te_bundle::kOut, 4000, "ACT"_a = "neg"), nullptr);
  EXPECT_EQ(compile_call(add, "n_not_div16").hash(), expected.at("n_not_div16"));
  EXPECT_EQ(te::detail::testing::compile_count(), compiles + 1);
  EXPECT_EQ(te_bundle::compile_wrapped(k, "tuned_neg").hash(), wrapped.at("tuned_neg"));
  EXPECT_EQ(te::detail::testing::compile_count(), compiles + 2);
  EXPECT_EQ(te::detail::testing::layer_python_calls(), python + 1);  // tuned in Python
  const te::TuningResult* r =
      k.tuning_result(te_bundle::kX, te_bundle::kOut, 4000, "ACT"_a = "neg");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->best.str,
            te_test::str_of("__import__('te_tune_kernels').fake_tuned_kernel.configs[1]"));
  // What a bundle written now holds: what was resolved since.
  const std::string path = te_bundle::dir() + "/after_unload.teb";
  te::write_bundle(path);
  const tb::Bundle b = tb::Bundle::open(path);
  std::multiset<std::string> entries;
  for (const tb::EntryView& e : b.entries()) {
    entries.insert(std::string(b.kernels()[e.kernel].name) + " " + std::string(e.meta.hash));
  }
  EXPECT_EQ(entries, (std::multiset<std::string>{"add_kernel " + expected.at("n_not_div16"),
                                                 "fake_tuned_kernel " + wrapped.at("tuned_neg")}));
}

TEST_F(BundleJit, BundleErrorsSayWhichAndWhy) {
  try {
    te::load_bundle("/nonexistent/x.teb");
    FAIL() << "no BundleError";
  } catch (const te::BundleError& e) {
    EXPECT_EQ(e.reason(), te::BundleError::Reason::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.teb"), std::string::npos) << e.what();
  }
  const std::string foreign = te_bundle::dir() + "/foreign.teb";
  std::ofstream(foreign) << "not a bundle\n";
  try {
    te::load_bundle(foreign);
    FAIL() << "no BundleError";
  } catch (const te::BundleError& e) {
    EXPECT_EQ(e.reason(), te::BundleError::Reason::kForeign);
  }
}

TEST(BundleCodec, OptionsRoundTripExactly) {
  const te::Options o =
      te::Options().num_warps(8).debug(true).set("ratio", 0.1).set("arch", "sm90a");
  const std::string text = tb::encode_options(o);
  EXPECT_EQ(text, "arch=ssm90a\ndebug=b1\nnum_warps=i8\nratio=f0x1.999999999999ap-4\n");
  EXPECT_EQ(tb::decode_options(text, "t"), o);
  EXPECT_EQ(tb::encode_options(te::Options()), "");
  EXPECT_THROW(tb::decode_options("num_warps=x8\n", "t"), te::BundleError);
  EXPECT_THROW(tb::decode_options("num_warps=i8", "t"), te::BundleError);
}

TEST(BundleCodec, ParameterTablesRoundTripWithDefaults) {
  // Defaults of every plain kind come back; a default only Python holds (an object) makes
  // the parameters up to it required.
  const te::JitFunction k("te_fuzz_kernels", "f_defaults");
  const std::string bytes = tb::encode_params(*te::detail::testing::state(k));
  te::detail::KernelState d;
  tb::decode_params(bytes, d, "test");
  ASSERT_EQ(d.params.size(), k.params().size());
  EXPECT_EQ(d.min_args, te::detail::testing::state(k)->min_args);
  for (size_t i = 0; i < d.params.size(); ++i) {
    const te::detail::ArgValue& a = d.defaults[i];
    const te::detail::ArgValue& e = te::detail::testing::state(k)->defaults[i];
    EXPECT_EQ(a.kind, e.kind) << i;
    if (a.kind == te::detail::ArgKind::kStr) {
      EXPECT_EQ(std::string(a.s, a.count), std::string(e.s, e.count));
    }
  }
  EXPECT_EQ(tb::encode_params(d), bytes);  // and encode the same
  // Damage is a BundleError that names where.
  std::string cut = bytes.substr(0, bytes.size() - 3);
  try {
    tb::decode_params(cut, d, "bundle b.teb: kernel m.k");
    FAIL() << "no BundleError";
  } catch (const te::BundleError& e) {
    EXPECT_EQ(e.reason(), te::BundleError::Reason::kCorrupt);
    EXPECT_EQ(
        std::string(e.what()).rfind("bundle b.teb: kernel m.k: its parameter table is damaged", 0),
        0u)
        << e.what();
  }
}

// ---- Ahead of time ---------------------------------------------------------------------
// The bundles bundle_aot_build compiled with `triton-embed-bundle build` from tests/aot/*.txt
// (no GPU, no recording run) hold, for every call and target, the entry this library's JIT
// compiles for the C++ twin of the call: the same Triton hash, cache key (so that a launch
// finds it), options, signature and cubin, and the kernel's parameter table.

class BundleAot : public ::testing::Test {
 protected:
  // The JIT's own entries: none from the bundles the BundleJit suite loaded in this process.
  static void SetUpTestSuite() { te::unload_bundles(); }
  void TearDown() override { te::set_target(std::nullopt); }
};

int kernel_index(const tb::Bundle& b, std::string_view module, std::string_view name) {
  for (size_t i = 0; i < b.kernels().size(); ++i) {
    if (b.kernels()[i].module == module && b.kernels()[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

uint32_t code_of(const std::string& text) {
  const te::Target t = te::Target::parse(text);
  return te::detail::target_code(t.arch, t.warp_size);
}

// The cache key the JIT gave its compile `ck` of `f`.
std::vector<uint64_t> key_of(const te::JitFunction& f, const te::CompiledKernel& ck) {
  te::detail::Cache& cache = te::detail::testing::state(f)->cache;
  std::lock_guard<std::mutex> lock(cache.mu);
  for (const auto& e : cache.entries) {
    if (e->kernel.get() == &ck) return e->key_words;
  }
  ADD_FAILURE() << "no cache entry of " << ck.signature();
  return {};
}

// Expects `aot` to hold the entry the JIT compiled as `ck` (f's kernel, `options`).
void expect_entry(const tb::Bundle& aot, const te::JitFunction& f, const te::CompiledKernel& ck,
                  const te::Options& options) {
  SCOPED_TRACE(ck.target() + " " + ck.signature() + " " + options.str());
  const int ki = kernel_index(aot, f.module(), f.name());
  ASSERT_GE(ki, 0) << f.module() << "." << f.name();
  EXPECT_EQ(aot.kernels()[ki].source_hash, te::detail::testing::state(f)->source_hash);
  EXPECT_EQ(aot.kernels()[ki].params, tb::encode_params(*te::detail::testing::state(f)));
  EXPECT_EQ(aot.kernels()[ki].wrapper, "");
  const tb::EntryView* found = nullptr;
  for (const tb::EntryView& e : aot.entries()) {
    if (static_cast<int>(e.kernel) == ki && e.target == code_of(ck.target()) &&
        e.meta.hash == ck.hash()) {
      found = &e;
    }
  }
  ASSERT_NE(found, nullptr) << "no entry with hash " << ck.hash();
  EXPECT_EQ(found->key_words, key_of(f, ck));
  EXPECT_EQ(tb::decode_options(found->options, "aot"), options);
  EXPECT_EQ(found->meta.signature, ck.signature());
  EXPECT_EQ(found->meta.name, ck.name());
  EXPECT_EQ(found->meta.num_warps, ck.num_warps());
  EXPECT_EQ(found->meta.num_stages, ck.num_stages());
  EXPECT_EQ(found->meta.shared, ck.shared());
  EXPECT_EQ(found->meta.num_kernel_params, ck.num_kernel_params());
  EXPECT_EQ(found->meta.cubin, ck.cubin());
}

TEST_F(BundleAot, EveryCallAndTargetIsTheJitsEntry) {
  const tb::Bundle aot = tb::Bundle::open(te_bundle::aot_bundle_path());
  EXPECT_EQ(aot.kernels().size(), 2u);
  EXPECT_EQ(aot.entries().size(), 15u);  // 5 calls x 3 targets
  EXPECT_TRUE(aot.records().empty());
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const te::JitFunction axpy("pykernels.vector", "axpy_kernel");
  for (const char* target : te_bundle::kAotTargets) {
    te::set_target(te::Target::parse(target));
    for (const char* which : te_bundle::kRecorded) {
      const te::Options options =
          std::string(which) == "num_warps_8" ? te::Options().num_warps(8) : te::Options();
      expect_entry(aot, add, compile_call(add, which), options);
    }
    expect_entry(aot, axpy, te_bundle::compile_axpy(axpy), te_bundle::kAxpyOptions);
  }
}

TEST_F(BundleAot, Cuda90EntriesAreThoseARunRecorded) {
  // bundle_record's bundle: the same calls compiled by a JIT process for cuda:90 and recorded.
  const tb::Bundle aot = tb::Bundle::open(te_bundle::aot_bundle_path());
  const tb::Bundle rec = tb::Bundle::open(te_bundle::bundle_path());
  const int ka = kernel_index(aot, "pykernels.vector", "add_kernel");
  const int kr = kernel_index(rec, "pykernels.vector", "add_kernel");
  ASSERT_GE(ka, 0);
  ASSERT_GE(kr, 0);
  EXPECT_EQ(aot.kernels()[ka].source_hash, rec.kernels()[kr].source_hash);
  EXPECT_EQ(aot.kernels()[ka].params, rec.kernels()[kr].params);
  std::set<std::string> expected;
  for (const auto& kv : te_bundle::read_hashes()) expected.insert(kv.second);
  ASSERT_EQ(expected.size(), 4u) << "run bundle_record first (" << te_bundle::hashes_path() << ")";
  std::set<std::string> built;
  for (const tb::EntryView& a : aot.entries()) {
    if (static_cast<int>(a.kernel) != ka || a.target != code_of("cuda:90")) continue;
    built.insert(std::string(a.meta.hash));
    const tb::EntryView* r = nullptr;
    for (const tb::EntryView& e : rec.entries()) {
      if (static_cast<int>(e.kernel) == kr && e.meta.hash == a.meta.hash) r = &e;
    }
    ASSERT_NE(r, nullptr) << a.meta.hash;
    EXPECT_EQ(a.target, r->target);
    EXPECT_EQ(a.options, r->options);
    EXPECT_EQ(a.key_words, r->key_words);
    EXPECT_EQ(a.meta.signature, r->meta.signature);
    EXPECT_EQ(a.meta.cubin, r->meta.cubin);
  }
  EXPECT_EQ(built, expected);
}

TEST_F(BundleAot, ValueFormsMatchTheJit) {
  // The C++ twins of tests/aot/te_calls.txt, line by line.
  using namespace te::literals;
  const tb::Bundle aot = tb::Bundle::open(te_bundle::aot_extra_bundle_path());
  EXPECT_EQ(aot.entries().size(), 4u);
  te::set_target(te::Target::parse("cuda:90"));
  const te::JitFunction dtype_k("te_compile_kernels", "dtype_kernel");
  expect_entry(aot, dtype_k,
               dtype_k.compile(te_bundle::kX, te::Pointer(uintptr_t{0x50000}, te::DType::fp16),
                               4096, te::DType::fp16, "double", 128),
               te::Options());
  const te::JitFunction annotated("te_compile_kernels", "annotated_kernel");
  expect_entry(aot, annotated,
               annotated.compile(te_bundle::kX, te_bundle::kOut, 1000, 0.5, true, "BLOCK"_a = 256),
               te::Options());
  const te::JitFunction flags("te_compile_kernels", "flags_kernel");
  expect_entry(aot, flags, flags.compile(te_bundle::kX, te_bundle::kOut, 4096, "BLOCK"_a = 64),
               te::Options());
  te::set_target(te::Target::parse("cuda:80"));
  const te::JitFunction scale("te_compile_kernels", "scale_kernel");
  expect_entry(aot, scale, scale.compile(te_bundle::kX, te_bundle::kOut, 2.0f, 1), te::Options());
}

}  // namespace
