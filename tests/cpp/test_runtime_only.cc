// A program linked to triton_embed::runtime only: no Python, no JIT layer. The public headers
// and the JitFunction API are the same; what needs the JIT says so with a typed error.

#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "alloc_counter.h"
#include "argument_error_cases.h"
#include "bundle/decisions.h"
#include "bundle/file_reader.h"
#include "bundle/validate.h"
#include "bundle_calls.h"
#include "cuda_shim.h"
#include "message_of.h"
#include "rule_calls.h"
#include "testing/testing.h"

namespace te = triton_embed;

namespace {

using te_test::message_of;

// The bundle the suite running loaded (its notices and messages name it).
std::string g_loaded;

// Makes `paths` the process's loaded bundles: every suite of this file runs in one process
// (CTest's test_runtime_only; the strict ones in runtime_only_strict), each with the bundles it
// loads, and what an earlier suite's bundles resolved is forgotten. A kernel's parameters stay
// from its first load; the first suite loads none, so that no kernel is known yet.
void use_bundles(std::initializer_list<std::string> paths) {
  te::unload_bundles();
  g_loaded.clear();
  for (const std::string& p : paths) {
    te::load_bundle(p);
    g_loaded = p;
  }
}

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

// Tuning keys nobody tuned (issue 21), from the bundle BundleJit.RecordRules wrote
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
