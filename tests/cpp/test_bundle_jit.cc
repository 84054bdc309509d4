// Kernel bundles with the JIT layer: a process records what it compiled (write_bundle), and a
// later process that loads the bundle serves its cache misses from it without compiling.
// CTest runs the two tests as two processes, the second after the first
// (bundle_record -> bundle_jit_load); test_runtime_only's bundle tests use the same file.

#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/detail/testing.h>
#include <triton_embed/jit.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

#include "bundle/format.h"
#include "bundle/kernel_table.h"
#include "bundle_calls.h"
#include "core/kernel_state.h"

namespace te = triton_embed;
namespace tb = triton_embed::detail::bundle;
using te_bundle::compile_call;

namespace {

class BundleJit : public ::testing::Test {
 protected:
  void SetUp() override { te::set_target(te::Target::parse("cuda:90")); }
  void TearDown() override { te::set_target(std::nullopt); }
};

TEST_F(BundleJit, RecordWritesWhatWasCompiled) {
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
  EXPECT_EQ(decoded.min_args, add.state()->min_args);

  // One entry per recorded call: its hash, signature, options and cubin.
  std::set<std::string> recorded;
  for (const tb::EntryView& e : c.entries) {
    if (static_cast<int>(e.kernel) != ki) continue;
    const std::string hash(e.hash);
    recorded.insert(hash);
    EXPECT_EQ(e.target, 90u | 32u << 16);
    const auto it = std::find_if(compiled.begin(), compiled.end(),
                                 [&](const auto& kv) { return kv.second->hash() == hash; });
    ASSERT_NE(it, compiled.end()) << hash;
    const te::CompiledKernel& k = *it->second;
    EXPECT_EQ(e.signature, k.signature());
    EXPECT_EQ(e.fn_name, k.name());
    EXPECT_EQ(e.num_warps, k.num_warps());
    EXPECT_EQ(e.shared, k.shared());
    EXPECT_EQ(e.num_kernel_params, k.num_kernel_params());
    EXPECT_EQ(e.cubin, k.cubin());
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
    for (const tb::RecordView& r : c.records) n += static_cast<int>(r.kernel) == kernel && r.kind == kind;
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

  // For the PTX test (test_runtime_only): one call compiled for cuda:80, alone in ptx80.teb.
  te::set_target(te::Target::parse("cuda:80"));
  const te::CompiledKernel& k80 = compile_call(add, "n_not_div16");
  EXPECT_NE(k80.ptx().find("\n.target sm_80"), std::string_view::npos);
  std::ofstream(te_bundle::dir() + "/ptx80_hash.txt") << "n_not_div16 " << k80.hash() << "\n";
  te::write_bundle(te_bundle::dir() + "/all.teb");
  tb::Contents only80 = tb::Bundle::open(te_bundle::dir() + "/all.teb").contents();
  only80.records.clear();
  only80.entries.erase(std::remove_if(only80.entries.begin(), only80.entries.end(),
                                      [](const tb::Entry& e) { return e.target != (80u | 32u << 16); }),
                       only80.entries.end());
  ASSERT_EQ(only80.entries.size(), 1u);
  tb::write_file(only80, te_bundle::dir() + "/ptx80.teb");
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
  const te::CompiledKernel& other = add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 512);
  EXPECT_EQ(te::detail::testing::compile_count(), before + 1);
  for (const auto& kv : expected) EXPECT_NE(other.hash(), kv.second);
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
  const te::TuningResult* r = k.tuning_result(te_bundle::kX, te_bundle::kOut, 4000, "ACT"_a = "neg");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->from_cache);
  EXPECT_EQ(r->best.str, "BLOCK: 128, num_warps: 4, num_ctas: 1, num_stages: 3, maxnreg: None");
  // A tuning key the bundle lacks is tuned in Python, as without a bundle.
  k.compile(te_bundle::kX, te_bundle::kOut, 3000, "ACT"_a = "neg");
  EXPECT_EQ(te::detail::testing::layer_python_calls(), python + 1);
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
  const te::Options o = te::Options().num_warps(8).debug(true).set("ratio", 0.1).set("arch", "sm90a");
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
  const std::string bytes = tb::encode_params(*k.state());
  te::detail::KernelState d;
  tb::decode_params(bytes, d, "test");
  ASSERT_EQ(d.params.size(), k.params().size());
  EXPECT_EQ(d.min_args, k.state()->min_args);
  for (size_t i = 0; i < d.params.size(); ++i) {
    const te::detail::ArgValue& a = d.defaults[i];
    const te::detail::ArgValue& e = k.state()->defaults[i];
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
    EXPECT_EQ(std::string(e.what()).rfind("bundle b.teb: kernel m.k: its parameter table is damaged", 0), 0u)
        << e.what();
  }
}

}  // namespace
