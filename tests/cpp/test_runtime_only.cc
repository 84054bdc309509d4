// A program linked to triton_embed::runtime only: no Python, no JIT layer. The public headers
// and the JitFunction API are the same; what needs the JIT says so with a typed error.
// The suites of bundles built ahead of time that serve calls nobody listed or tuned are in
// test_runtime_only_fallback.cc, those of widened bundles in test_runtime_only_widen.cc.

#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "argument_error_cases.h"
#include "bundle/decisions.h"
#include "bundle/file_reader.h"
#include "bundle/validate.h"
#include "bundle_calls.h"
#include "cuda_shim.h"
#include "message_of.h"
#include "rule_calls.h"
#include "runtime_only_bundles.h"
#include "testing/testing.h"

namespace te = triton_embed;

namespace {

using te_test::message_of;

using te_runtime_only::use_bundles;

class RuntimeOnly : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { use_bundles({}); }
};

TEST_F(RuntimeOnly, NotInBundleErrorIsALookupError) {
  static_assert(std::is_base_of_v<te::LookupError, te::NotInBundleError>);
  static_assert(std::is_base_of_v<te::Error, te::NotInBundleError>);
  const te::NotInBundleError e("x");
  EXPECT_NE(dynamic_cast<const te::LookupError*>(&e), nullptr);
  EXPECT_NE(dynamic_cast<const std::runtime_error*>(&e), nullptr);
}

TEST_F(RuntimeOnly, AKernelNoBundleHoldsRaisesNotInBundleError) {
  const std::string message = message_of<te::NotInBundleError>(
      [] { te::JitFunction add("pykernels.vector", "add_kernel"); });
  EXPECT_EQ(message,
            "cannot load kernel pykernels.vector.add_kernel: no kernel bundle holds it; this "
            "program links triton_embed::runtime only, which runs no Python and compiles "
            "nothing: link triton_embed::triton_embed to compile kernels with Triton on first "
            "use, or build a kernel bundle that holds it");
  // Handlers of the base classes catch it too, and a second attempt raises the same.
  EXPECT_THROW(te::JitFunction("pykernels.vector", "add_kernel"), te::LookupError);
  EXPECT_THROW(te::JitFunction("m", "k"), te::Error);
}

TEST_F(RuntimeOnly, TargetsWork) {
  te::set_target(te::Target::parse("cuda:90"));
  ASSERT_TRUE(te::explicit_target().has_value());
  EXPECT_EQ(te::explicit_target()->str(), "cuda:90");
  te::set_target(std::nullopt);
  EXPECT_FALSE(te::explicit_target().has_value());
  EXPECT_THROW(te::Target::parse("gpu"), te::ValueError);
}

TEST_F(RuntimeOnly, CudaAvailableNeverThrows) {
  const bool available = te::cuda_available();  // false without a driver or a GPU
  EXPECT_EQ(available, te::cuda_available());
}

TEST_F(RuntimeOnly, InitializeStartsNoPython) {
  te::initialize();  // nothing to do
  te::RuntimeOptions opts;
  opts.target = te::Target::parse("sm_80");
  te::initialize(opts);
  ASSERT_TRUE(te::explicit_target().has_value());
  EXPECT_EQ(te::explicit_target()->str(), "cuda:80");
  te::set_target(std::nullopt);

  const te::RuntimeInfo info = te::runtime_info();
  EXPECT_FALSE(info.jit);
  EXPECT_FALSE(info.embedded);
  EXPECT_TRUE(info.python_version.empty());
  EXPECT_TRUE(info.python_executable.empty());
  EXPECT_TRUE(info.triton_version.empty());
  EXPECT_TRUE(info.python_paths.empty());

  // No libpython in the process.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) EXPECT_EQ(line.find("libpython"), std::string::npos) << line;
}

TEST_F(RuntimeOnly, PythonOptionsRaiseNotSupportedError) {
  te::RuntimeOptions paths;
  paths.python_paths.push_back("/opt/kernels");
  paths.target = te::Target::parse("cuda:90");
  EXPECT_EQ(message_of<te::NotSupportedError>([&] { te::initialize(paths); }),
            "initialize: RuntimeOptions::python_paths is set, but this program links "
            "triton_embed::runtime only, which starts no Python: link triton_embed::triton_embed "
            "to run kernels from Python modules, or leave RuntimeOptions::python and "
            "python_paths empty");
  EXPECT_FALSE(te::explicit_target().has_value());  // nothing was applied

  te::RuntimeOptions python;
  python.python = "/usr/bin/python3";
  EXPECT_EQ(message_of<te::NotSupportedError>([&] { te::initialize(python); }),
            "initialize: RuntimeOptions::python is set, but this program links "
            "triton_embed::runtime only, which starts no Python: link triton_embed::triton_embed "
            "to run kernels from Python modules, or leave RuntimeOptions::python and "
            "python_paths empty");

  EXPECT_EQ(message_of<te::NotSupportedError>([] { te::add_python_path("/opt/kernels"); }),
            "add_python_path(\"/opt/kernels\"): this program links triton_embed::runtime only, "
            "which starts no Python: link triton_embed::triton_embed to load kernels from Python "
            "modules");
}

// With the bundle bundle_record wrote (test_runtime_only_embedded: the copy it embeds).
class RuntimeOnlyBundle : public ::testing::Test {
 protected:
#ifndef TE_EMBEDDED_BUNDLE
  static void SetUpTestSuite() { use_bundles({te_bundle::bundle_path()}); }
#endif
  void SetUp() override { te::set_target(te::Target::parse("cuda:90")); }
  void TearDown() override { te::set_target(std::nullopt); }
};

TEST_F(RuntimeOnlyBundle, KernelsLoadFromTheBundleWithTheirParameters) {
  const te::JitFunction add("pykernels.vector", "add_kernel");
  ASSERT_EQ(add.params().size(), 5u);
  const char* names[] = {"x_ptr", "y_ptr", "out_ptr", "n_elements", "BLOCK"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(add.params()[i].name, names[i]);
    EXPECT_EQ(add.params()[i].is_constexpr, i == 4) << names[i];
  }
  EXPECT_EQ(add.signature(), "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: constexpr)");
}

TEST_F(RuntimeOnlyBundle, RecordedCallsResolveToTheRecordedKernels) {
  const std::map<std::string, std::string> expected = te_bundle::read_hashes();
  ASSERT_EQ(expected.size(), 4u) << te_bundle::hashes_path();
  const te::JitFunction add("pykernels.vector", "add_kernel");
  for (const char* which : te_bundle::kRecorded) {
    const te::CompiledKernel& k = te_bundle::compile_call(add, which);
    EXPECT_EQ(k.hash(), expected.at(which)) << which;
    EXPECT_FALSE(k.cubin().empty());
    EXPECT_EQ(k.target(), "cuda:90");
  }
  // The launch path up to the driver call: a cache hit, the arguments packed as recorded.
  uint64_t slots[8] = {};
  EXPECT_EQ(te::detail::testing::dry_run(add, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut,
                                         4096, 1024),
            4);
  EXPECT_EQ(slots[0], 0x10000u);
  EXPECT_EQ(slots[3], 4096u);
}

TEST_F(RuntimeOnlyBundle, ASpecialisationNoBundleHoldsRaisesNotInBundleError) {
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const std::string m = message_of<te::NotInBundleError>(
      [&] { add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 512); });
  const std::string head =
      "pykernels.vector.add_kernel specialised as add_kernel(x_ptr: *fp32 D, y_ptr: *fp32 D, "
      "out_ptr: *fp32 D, n_elements: i32 D, BLOCK: constexpr = 512) for cuda:90 is in no kernel "
      "bundle (the loaded bundles hold 4 entries of it, e.g.:\n  cuda:90: add_kernel(";
  EXPECT_EQ(m.substr(0, head.size()), head) << m;
  EXPECT_NE(m.find(")\nthis program links triton_embed::runtime only"), std::string::npos) << m;
  // Another target: the entries of the bundle's target are what it names.
  te::set_target(te::Target::parse("cuda:80"));
  const std::string m80 = message_of<te::NotInBundleError>(
      [&] { add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 1024); });
  EXPECT_NE(m80.find(" for cuda:80 is in no kernel bundle (the loaded bundles hold 4 entries"),
            std::string::npos)
      << m80;
  // A kernel the bundle does not hold at all.
  EXPECT_EQ(message_of<te::NotInBundleError>([] { te::JitFunction("pykernels.vector", "nope"); }),
            "cannot load kernel pykernels.vector.nope: no kernel bundle holds it; this program "
            "links triton_embed::runtime only, which runs no Python and compiles nothing: link "
            "triton_embed::triton_embed to compile kernels with Triton on first use, or build a "
            "kernel bundle that holds it");
}

TEST_F(RuntimeOnlyBundle, WrappedKernelsLaunchFromTheRecordedDecisions) {
  // Heuristics' results and tuned choices come from the bundle: the recorded calls resolve to
  // the kernels the JIT compiled, with no Python to run a heuristic or tune.
  const std::map<std::string, std::string> expected =
      te_bundle::read_hashes(te_bundle::wrapped_hashes_path());
  ASSERT_EQ(expected.size(), 14u) << te_bundle::wrapped_hashes_path();
  for (const te_bundle::WrappedCall& w : te_bundle::kWrapped) {
    const te::JitFunction k("te_tune_kernels", w.kernel);
    EXPECT_EQ(te_bundle::compile_wrapped(k, w.which).hash(), expected.at(w.which)) << w.which;
  }
  const te::JitFunction tuned("te_tune_kernels", "fake_tuned_heur_kernel");
  EXPECT_EQ(tuned.wrapper(), "autotune");
  for (int n : {1000, 1024}) {
    const te::TuningResult* r = tuned.tuning_result(te_bundle::kX, te_bundle::kOut, n);
    ASSERT_NE(r, nullptr) << n;
    EXPECT_EQ(r->best.str, expected.at("best:fake_tuned_heur_kernel:" + std::to_string(n)));
    EXPECT_EQ(r->best.num_warps, 4);
    EXPECT_TRUE(r->from_cache);
  }
  // The launch path up to the driver call, twice: the second through the memo of whole calls,
  // as with the JIT (one key, one lookup: no layer walked).
  const uint64_t hits = te::detail::testing::call_memo_hits();
  for (int round = 0; round < 2; ++round) {
    uint64_t slots[8] = {};
    EXPECT_EQ(te::detail::testing::dry_run(tuned, slots, te_bundle::kX, te_bundle::kOut, 1000), 3);
    EXPECT_EQ(slots[0], 0x10000u);
    EXPECT_EQ(slots[1], 0x30000u);
    EXPECT_EQ(slots[2], 1000u);
  }
  EXPECT_EQ(te::detail::testing::call_memo_hits(), hits + 1);

  // What the recording did not see raises NotInBundleError: a tuning key, a heuristic's input.
  EXPECT_EQ(message_of<te::NotInBundleError>(
                [&] { tuned.compile(te_bundle::kX, te_bundle::kOut, 3000); }),
            "te_tune_kernels.fake_tuned_heur_kernel: no kernel bundle holds the tuned "
            "configuration for tuning key n=3000 (cuda:90), and its tuning rule (exact: none was "
            "declared) does not cover it: key argument 'n': its rule is exact, and 3000 was not "
            "tuned (tuned: 1000, 1024); tune this key too (list it in the calls file of "
            "`triton-embed-bundle tune`, or record a run that launches it), or declare a rule "
            "that covers it (triton_embed::set_tuning_rule, a calls file's #rule, "
            "triton-embed-bundle --rule)");
  const te::JitFunction counted("te_tune_kernels", "counted_heur_kernel");
  EXPECT_EQ(message_of<te::NotInBundleError>(
                [&] { counted.compile(te_bundle::kX, te_bundle::kOut, 5000); }),
            "te_tune_kernels.counted_heur_kernel: the value of heuristic 'BLOCK' for these "
            "arguments is in no kernel bundle; this program links triton_embed::runtime only, "
            "which runs no Python and compiles nothing: link triton_embed::triton_embed to "
            "compile kernels with Triton on first use, or build a kernel bundle that holds it");
}

// A heuristic that is one of the expressions the runtime evaluates is computed for arguments
// nobody recorded (as Python computes it): n = 1001 and 777 give BLOCK 1024 and num_warps 4,
// as n = 1000 did, so the kernel recorded at 1000 serves them. One outside those forms
// (counted_heur_kernel's: a statement before its return) keeps the recorded values only.
TEST_F(RuntimeOnlyBundle, HeuristicsNoRecordHoldsComeFromTheirExpressions) {
  const std::map<std::string, std::string> expected =
      te_bundle::read_hashes(te_bundle::wrapped_hashes_path());
  const te::JitFunction k("te_tune_kernels", "expr_heur_kernel");
  for (int n : {1000, 1001, 777, 513}) {
    EXPECT_EQ(k.compile(te_bundle::kX, te_bundle::kOut, n).hash(), expected.at("expr_1000")) << n;
  }
  uint64_t slots[8] = {};
  EXPECT_EQ(te::detail::testing::dry_run(k, slots, te_bundle::kX, te_bundle::kOut, 901), 3);
  EXPECT_EQ(slots[2], 901u);
  // BLOCK 4096 and num_warps 8: a specialisation the bundle does not hold.
  const std::string m =
      message_of<te::NotInBundleError>([&] { k.compile(te_bundle::kX, te_bundle::kOut, 3000); });
  EXPECT_NE(m.find("te_tune_kernels.expr_heur_kernel"), std::string::npos) << m;
  EXPECT_EQ(m.find("the value of heuristic"), std::string::npos) << m;
}

// Config pre-hooks from the bundle: one the runtime applies sets the descriptors' block
// shapes as the recording JIT did (the same kernel compiles from the recorded choice, with no
// Python); one only Python runs refuses the launch, naming the construct that stopped it.
TEST_F(RuntimeOnlyBundle, ConfigPreHooksApplyWithoutPython) {
  const std::map<std::string, std::string> expected =
      te_bundle::read_hashes(te_bundle::wrapped_hashes_path());
  for (const te_bundle::HookedCall& h : te_bundle::kHooked) {
    const te::JitFunction k("te_tma_kernels", h.kernel);
    EXPECT_EQ(te_bundle::compile_hooked(k, h).hash(), expected.at(h.which)) << h.which;
  }
  // The launch path up to the driver call (maps from a stand-in encoder): the kernel is the
  // one for the hook's blocks.
  te_cuda_shim::set_encoder(
      [](const te_cuda_shim::EncodeCall&, unsigned char* out) { std::memset(out, 0, 128); });
  const te::JitFunction subtile("te_tma_kernels", "fake_tuned_subtile_scale");
  const te::TensorDescriptor src = te_bundle::hooked_desc(0x10000, 1);
  const te::TensorDescriptor dst = te_bundle::hooked_desc(0x30000, 1);
  uint64_t slots[32] = {};
  EXPECT_EQ(te::detail::testing::dry_run(subtile, slots, src, dst, 512, 256, 2.0), 13);
  const te::CompiledKernel* ran = te::detail::testing::last_dry_run_kernel();
  ASSERT_NE(ran, nullptr);
  EXPECT_EQ(ran->hash(), expected.at("hooked_subtile"));
  EXPECT_NE(
      ran->signature().find("(src: tensordesc<fp32[64, 64]>, dst: tensordesc<fp32[64, 32]>, "),
      std::string::npos)
      << ran->signature();
  EXPECT_EQ(src.block_shape()[0], 1);  // the caller's descriptors are as they were
  const te::JitFunction python_hook("te_tma_kernels", "fake_tuned_python_hook_scale");
  const te::TensorDescriptor src64 = te_bundle::hooked_desc(0x10000, 64);
  const te::TensorDescriptor dst64 = te_bundle::hooked_desc(0x30000, 64);
  const std::string m = message_of<te::NotSupportedError>(
      [&] { te::detail::testing::dry_run(python_hook, slots, src64, dst64, 512, 256, 2.0); });
  te_cuda_shim::set_encoder(nullptr);
  EXPECT_NE(m.find("te_tma_kernels.fake_tuned_python_hook_scale: the chosen autotune config "
                   "BLOCK_M: 64, BLOCK_N: 64, SUBTILE: True, "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(" has a pre_hook that runs in Python only (the statement Expr: "
                   "PYTHON_HOOK_CALLS.append("),
            std::string::npos)
      << m;
}

// Bad calls of wrapped kernels raise what the JIT raises (test_autotune's
// ArgumentErrorsComeBeforeAnyLayerRuns, which compares them with Python), checked against the
// parameter table and layers the bundle holds before any heuristic result or tuned choice is
// looked up: n = 3000 is in no record, so a call that reached a layer would raise
// NotInBundleError, as the good calls below do.
TEST_F(RuntimeOnlyBundle, ArgumentErrorsComeBeforeTheBundlesDecisions) {
  const te::JitFunction tuned("te_tune_kernels", "fake_tuned_mode_kernel");
  const te::JitFunction heur("te_tune_kernels", "heur_mode_kernel");
  size_t n = 0;
  const te_arg_errors::Case* cases = te_arg_errors::cases(&n);
  for (size_t i = 0; i < n; ++i) {
    const te_arg_errors::Case& c = cases[i];
    const te::JitFunction& k = std::string(c.kernel) == "heur_mode_kernel" ? heur : tuned;
    EXPECT_EQ(te_arg_errors::check(c, k), "") << c.kernel << ": " << c.what;
  }
  EXPECT_THROW(tuned.compile(te_arg_errors::kX, te_arg_errors::kOut, 3000, "neg"),
               te::NotInBundleError);
  EXPECT_THROW(heur.compile(te_arg_errors::kX, te_arg_errors::kOut, 3000, "neg"),
               te::NotInBundleError);
  // The recorded calls resolve.
  EXPECT_EQ(tuned.compile(te_arg_errors::kX, te_arg_errors::kOut, 1000, "neg").target(), "cuda:90");
  EXPECT_EQ(heur.compile(te_arg_errors::kX, te_arg_errors::kOut, 1000, "neg").target(), "cuda:90");
}

// ptx80.teb (bundle_record) holds one cuda:80 entry, with its PTX for plain sm_80; no other
// bundle is loaded.
class RuntimeOnlyPtx : public RuntimeOnlyBundle {
 protected:
  static void SetUpTestSuite() { use_bundles({te_bundle::dir() + "/ptx80.teb"}); }
};

TEST_F(RuntimeOnlyPtx, PtxOfAnOlderTargetServesANewerGpu) {
  // Asked for cuda:86, the loader gives the cuda:80 entry's PTX (which the driver compiles
  // when the kernel is loaded) and says so on stderr.
  const std::map<std::string, std::string> expected =
      te_bundle::read_hashes(te_bundle::dir() + "/ptx80_hash.txt");
  ASSERT_EQ(expected.size(), 1u);
  te::set_target(te::Target::parse("cuda:86"));
  const te::JitFunction add("pykernels.vector", "add_kernel");
  ::testing::internal::CaptureStderr();
  const te::CompiledKernel& k = te_bundle::compile_call(add, "n_not_div16");
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(k.hash(), expected.at("n_not_div16"));
  EXPECT_EQ(k.target(), "cuda:80");
  EXPECT_TRUE(k.cubin().empty());
  EXPECT_NE(k.ptx().find("\n.target sm_80"), std::string_view::npos);
  EXPECT_EQ(said.rfind("triton_embed: pykernels.vector.add_kernel as add_kernel(", 0), 0u) << said;
  EXPECT_NE(said.find(": bundle " + te_bundle::dir() +
                      "/ptx80.teb has no cubin for cuda:86; using "
                      "the PTX of its cuda:80 entry, which the CUDA driver compiles for this GPU "
                      "when the kernel is loaded (add a cuda:86 entry to the bundle to launch "
                      "code built for this GPU; TRITON_EMBED_BUNDLE_PTX=0 refuses PTX instead)\n"),
            std::string::npos)
      << said;
  // n = 4096 (i32 D) on cuda:100: the same entry (n: i32, compiled with fewer assumptions)
  // serves through its PTX, said once for both reasons.
  te::set_target(te::Target::parse("cuda:100"));
  ::testing::internal::CaptureStderr();
  const te::CompiledKernel& aligned = te_bundle::compile_call(add, "aligned");
  const std::string said_less = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(aligned.hash(), expected.at("n_not_div16"));
  EXPECT_TRUE(aligned.cubin().empty());
  EXPECT_NE(
      said_less.find(": no kernel bundle holds this specialisation for cuda:100; bundle " +
                     te_bundle::dir() + "/ptx80.teb's cuda:80 entry " + std::string(k.signature()) +
                     ", compiled with fewer assumptions, serves it through its PTX, which "
                     "the CUDA driver compiles for this GPU (add an entry for this "
                     "specialisation to launch code specialised to it; "
                     "TRITON_EMBED_BUNDLE_STRICT=1 refuses less specialised entries "
                     "instead)\n"),
      std::string::npos)
      << said_less;
  // fp16: no entry serves it.
  EXPECT_THROW(te_bundle::compile_call(add, "fp16_unaligned"), te::NotInBundleError);
}

// unload_bundles(): what the bundles served is forgotten (the cache entries, the heuristics'
// results and tuned choices, the memo of whole calls), so each launch asks the bundles loaded
// after it; write_bundle() records only what was resolved since.
class RuntimeOnlyUnload : public RuntimeOnlyBundle {
 protected:
  static void SetUpTestSuite() { use_bundles({te_bundle::bundle_path()}); }
};

TEST_F(RuntimeOnlyUnload, UnloadedBundlesServeNothingUntilOneIsLoadedAgain) {
  using te::detail::testing::call_memo_hits;
  using te::detail::testing::dry_run;
  const std::map<std::string, std::string> expected = te_bundle::read_hashes();
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const te::JitFunction tuned("te_tune_kernels", "fake_tuned_heur_kernel");
  uint64_t slots[8] = {};
  auto resolve = [&] {
    EXPECT_EQ(te_bundle::compile_call(add, "aligned").hash(), expected.at("aligned"));
    // A miss (3 values packed), then a hit of the memo of whole calls.
    EXPECT_EQ(dry_run(tuned, slots, te_bundle::kX, te_bundle::kOut, 1000), -4);
    EXPECT_EQ(dry_run(tuned, slots, te_bundle::kX, te_bundle::kOut, 1000), 3);
    const te::TuningResult* r = tuned.tuning_result(te_bundle::kX, te_bundle::kOut, 1000);
    return r != nullptr ? r->best.str : std::string("(not tuned)");
  };
  const uint64_t hits = call_memo_hits();
  const std::string best = resolve();
  EXPECT_EQ(call_memo_hits(), hits + 1);

  te::unload_bundles();
  const std::string m =
      message_of<te::NotInBundleError>([&] { te_bundle::compile_call(add, "aligned"); });
  EXPECT_NE(m.find(" is in no kernel bundle (no kernel bundle is loaded (TRITON_EMBED_BUNDLE, "
                   "load_bundle()))"),
            std::string::npos)
      << m;
  EXPECT_EQ(tuned.tuning_result(te_bundle::kX, te_bundle::kOut, 1000), nullptr);
  EXPECT_THROW(dry_run(tuned, slots, te_bundle::kX, te_bundle::kOut, 1000), te::NotInBundleError);
  EXPECT_EQ(call_memo_hits(), hits + 1);  // the memoised call is gone too
  const std::string empty = te_bundle::dir() + "/unloaded.teb";
  te::write_bundle(empty);
  EXPECT_TRUE(te::detail::bundle::Bundle::open(empty).entries().empty());
  EXPECT_TRUE(te::detail::bundle::Bundle::open(empty).records().empty());

  // Loaded again, it serves again: the same kernels and choice.
  te::load_bundle(te_bundle::bundle_path());
  EXPECT_EQ(resolve(), best);
  EXPECT_EQ(call_memo_hits(), hits + 2);
  const std::string again = te_bundle::dir() + "/reloaded.teb";
  te::write_bundle(again);
  const te::detail::bundle::Bundle b = te::detail::bundle::Bundle::open(again);
  std::multiset<std::string> kernels;
  for (const auto& e : b.entries()) {
    kernels.insert(std::string(b.kernels()[e.kernel].name) + " " + std::string(e.meta.hash));
  }
  const std::map<std::string, std::string> wrapped =
      te_bundle::read_hashes(te_bundle::wrapped_hashes_path());
  EXPECT_EQ(kernels, (std::multiset<std::string>{
                         "add_kernel " + expected.at("aligned"),
                         "fake_tuned_heur_kernel " + wrapped.at("tuned_heur_1000")}));
  // Its decisions: those the bundle handed over again for the kernel launched (a kernel's are
  // handed over together: its two tuned keys), nothing of the others.
  const std::string listed = te::detail::bundle::describe_decisions(b);
  EXPECT_NE(listed.find("cuda:90 key (1000, "), std::string::npos) << listed;
  size_t choices = 0;
  for (const auto& r : b.records()) choices += r.kind == te::detail::bundle::kRecordChoice;
  EXPECT_EQ(choices, 2u) << listed;
}

// Threads launching a wrapped kernel (heuristics only: its memos and the memo of whole calls)
// while its bundle is unloaded and loaded again: each launch resolves to the recorded kernel or
// raises NotInBundleError; once unload_bundles() has returned, nothing of the bundle serves.
TEST_F(RuntimeOnlyUnload, ThreadsLaunchingWhileBundlesUnloadAndLoadAgain) {
  using te::detail::testing::dry_run;
  using te::detail::testing::last_dry_run_kernel;
  const std::map<std::string, std::string> wrapped =
      te_bundle::read_hashes(te_bundle::wrapped_hashes_path());
  const std::string want = wrapped.at("counted_300");
  use_bundles({te_bundle::bundle_path()});
  const te::JitFunction counted("te_tune_kernels", "counted_heur_kernel");
  std::atomic<bool> done{false};
  std::atomic<int> served{0}, refused{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      uint64_t slots[8] = {};
      while (!done.load()) {
        try {
          const te::detail::testing::HoldResolved hold;  // the kernel read after the dry run
          dry_run(counted, slots, te_bundle::kX, te_bundle::kOut, 300);
          const te::CompiledKernel* k = last_dry_run_kernel();
          (k != nullptr && k->hash() == want ? served : wrong)++;
        } catch (const te::NotInBundleError&) {
          ++refused;
        }
      }
    });
  }
  // At least 50 rounds, and until launches were served in some (at most 10 s).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < 50 || (served.load() < 20 && std::chrono::steady_clock::now() < until); ++i) {
    te::unload_bundles();
    te::load_bundle(te_bundle::bundle_path());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  te::unload_bundles();
  done = true;
  for (auto& th : threads) th.join();
  EXPECT_GT(served.load(), 0) << refused.load();
  EXPECT_EQ(wrong.load(), 0);
  uint64_t slots[8] = {};
  EXPECT_THROW(dry_run(counted, slots, te_bundle::kX, te_bundle::kOut, 300), te::NotInBundleError);
  te::load_bundle(te_bundle::bundle_path());
  EXPECT_EQ(dry_run(counted, slots, te_bundle::kX, te_bundle::kOut, 300), -4);
  EXPECT_EQ(last_dry_run_kernel()->hash(), want);
}

// A miss whose source answers while unload_bundles() runs (here from the notice the answer
// gives, on the launching thread): the call gets what was resolved, and nothing keeps it.
TEST_F(RuntimeOnlyUnload, WhatAMissResolvesWhileBundlesUnloadIsNotKept) {
  int notices = 0;
  te::set_bundle_notice_callback([&](const te::BundleNotice&) {
    ++notices;
    te::unload_bundles();
  });
  struct Reset {
    ~Reset() { te::set_bundle_notice_callback(nullptr); }
  } reset;
  // An entry: n = 4096 is served by fallback.teb's plain entry, said by a notice.
  use_bundles({te_bundle::dir() + "/aot_fallback/fallback.teb"});
  const te::JitFunction add("pykernels.vector", "add_kernel");
  EXPECT_FALSE(
      add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 1024).hash().empty());
  EXPECT_EQ(notices, 1);
  EXPECT_THROW(add.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 1024),
               te::NotInBundleError);
  // A tuned choice: n = 100 takes the choice tuned at 256 by its rule, said by a notice; the
  // inner entry then finds no bundle, and the choice is not kept either.
  use_bundles({te_rules::bundle_path()});
  const te::JitFunction nearest("te_tune_kernels", "rule_nearest_kernel");
  EXPECT_THROW(te_rules::compile(nearest, 100), te::NotInBundleError);
  EXPECT_EQ(notices, 2);
  EXPECT_EQ(te_rules::tuning_result(nearest, 100), nullptr);
}

// With the bundle `triton-embed-bundle build` compiled ahead of time from tests/aot/calls.txt
// for cuda:80, cuda:90 and cuda:100: the same calls resolve to its kernels, with no Python.
class RuntimeOnlyAot : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { use_bundles({te_bundle::aot_bundle_path()}); }
  void TearDown() override { te::set_target(std::nullopt); }
};

TEST_F(RuntimeOnlyAot, CallsResolveToTheBundlesKernelsForEveryTarget) {
  const std::map<std::string, std::string> recorded = te_bundle::read_hashes();
  ASSERT_EQ(recorded.size(), 4u) << te_bundle::hashes_path();
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const te::JitFunction axpy("pykernels.vector", "axpy_kernel");
  EXPECT_EQ(axpy.signature(),
            "axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n_elements, BLOCK: constexpr = 1024)");
  std::set<std::string> hashes;
  for (const char* target : te_bundle::kAotTargets) {
    te::set_target(te::Target::parse(target));
    for (const char* which : te_bundle::kRecorded) {
      const te::CompiledKernel& k = te_bundle::compile_call(add, which);
      EXPECT_EQ(k.target(), target) << which;
      EXPECT_FALSE(k.cubin().empty()) << which;
      // For cuda:90, the kernels a JIT process compiled for these calls (bundle_record).
      if (std::string(target) == "cuda:90") EXPECT_EQ(k.hash(), recorded.at(which)) << which;
      hashes.insert(k.hash());
    }
    const te::CompiledKernel& a = te_bundle::compile_axpy(axpy);
    EXPECT_EQ(a.target(), target);
    EXPECT_EQ(a.num_warps(), 2);
    EXPECT_NE(a.signature().find("BLOCK: constexpr = 512"), std::string::npos) << a.signature();
    hashes.insert(a.hash());
  }
  EXPECT_EQ(hashes.size(), 15u);  // a kernel of its own for every call and target
  // A target the bundle was not built for: a newer one runs the newest older plain target's
  // PTX (cuda:80's: cuda:90 and cuda:100 are sm_90a and sm_100a); an older one has nothing.
  te::set_target(te::Target::parse("cuda:89"));
  ::testing::internal::CaptureStderr();
  const te::CompiledKernel& ptx = te_bundle::compile_call(add, "aligned");
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ptx.target(), "cuda:80");
  EXPECT_TRUE(ptx.cubin().empty());
  te::set_target(te::Target::parse("cuda:75"));
  EXPECT_THROW(te_bundle::compile_call(add, "aligned"), te::NotInBundleError);
}

#ifdef TE_EMBEDDED_BUNDLE
// Built as test_runtime_only_embedded, which carries the recorded bundle
// (triton_embed_embed_bundle). It loads before main and before this file's static objects.
// CTest runs RuntimeOnlyBundle and these with no TRITON_EMBED_BUNDLE set
// (runtime_only_embedded_bundle), and these again with TRITON_EMBED_BUNDLE naming the same
// file (runtime_only_embedded_and_env).
const te::JitFunction kStaticAdd("pykernels.vector", "add_kernel");

TEST(RuntimeOnlyEmbedded, TheEmbeddedBundleServesStaticObjects) {
  EXPECT_EQ(kStaticAdd.signature(),
            "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: constexpr)");
}

TEST(RuntimeOnlyEmbedded, EmbeddedBundlesComeBeforeTritonEmbedBundle) {
  // A miss lists the entries of every loaded bundle, the nearest first and of equally near
  // ones the first loaded first: the embedded one's, under the name it was embedded with; the
  // file's (4 more) only with the variable, each after the embedded copy.
  const bool env = std::getenv("TRITON_EMBED_BUNDLE") != nullptr;
  te::set_target(te::Target::parse("cuda:90"));
  const std::string m = message_of<te::NotInBundleError>(
      [] { kStaticAdd.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 512); });
  te::set_target(std::nullopt);
  const std::string head = std::string("(the loaded bundles hold ") + (env ? "8" : "4") +
                           " entries of it, e.g.:\n  cuda:90: add_kernel(";
  EXPECT_NE(m.find(head), std::string::npos) << m;
  const size_t first = m.find(") (", m.find(head));
  const std::string embedded = ") (" TE_EMBEDDED_BUNDLE ")\n";
  EXPECT_EQ(m.compare(first, embedded.size(), embedded), 0) << m;
  EXPECT_EQ(m.find("/record.teb)") != std::string::npos, env) << m;
  EXPECT_LT(m.find(embedded), m.find("/record.teb)")) << m;
}
#endif

}  // namespace