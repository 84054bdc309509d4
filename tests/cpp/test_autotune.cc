// named.h and autotune.h, compile-only (no GPU): named arguments bind as Python's binder does,
// heuristics give the values (and hashes) Python's Heuristics give and run Python only when
// what they read changes, and autotuned kernels pick the configuration Python's Autotuner
// picks (with a benchmark function that returns known timings without launching).

#include <triton_embed/allocator.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "argument_error_cases.h"
#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace py = pybind11;
using namespace triton_embed::literals;

namespace {

template <class T>
T* at(uint64_t addr) {
  return reinterpret_cast<T*>(addr);
}

class Autotune : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te::set_target(te::Target::parse("cuda:90"));
    te_test::Gil gil;
    te_test::install_python_helpers();
    te_test::exec("import te_tune_kernels");
  }
  static py::object warm(const char* kernel, const std::string& args,
                         const std::string& kwargs = "{}") {
    te_test::Gil gil;
    return py::module_::import("te_helpers")
        .attr("warmup_hashes")("te_tune_kernels", kernel, te_test::eval(args),
                               te_test::eval(kwargs));
  }
  static std::string warm_hash(const char* kernel, const std::string& args,
                               const std::string& kwargs = "{}") {
    te_test::Gil gil;
    return warm(kernel, args, kwargs).cast<std::string>();
  }
  static std::string py_repr(const std::string& expr) { return te_test::repr_of(expr); }
  static void py_exec(const std::string& code) { te_test::run(code); }
};

// ---- named arguments ------------------------------------------------------------------------

TEST_F(Autotune, NamedArgumentsBindAsPythonKeywords) {
  te::JitFunction scale("te_tune_kernels", "scale_kernel");
  const std::string py_add =
      warm_hash("scale_kernel", "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1000, 2.0, 128)",
                "{'MODE': 'add'}");
  // A defaulted constexpr by name, a positional one by name, names in another order, and a
  // name built at run time: all the same kernel as Python's keywords.
  EXPECT_EQ(scale.compile(at<float>(0x10000), at<float>(0x20000), 1000, 2.0, 128, "MODE"_a = "add")
                .hash(),
            py_add);
  EXPECT_EQ(scale
                .compile(at<float>(0x10000), at<float>(0x20000), 1000, 2.0, "MODE"_a = "add",
                         "BLOCK"_a = 128)
                .hash(),
            py_add);
  const std::string block_name = std::string("BL") + "OCK";
  EXPECT_EQ(scale
                .compile(at<float>(0x10000), "out_ptr"_a = at<float>(0x20000), "n"_a = 1000,
                         "scale"_a = 2.0, te::arg(block_name) = 128, "MODE"_a = std::string("add"))
                .hash(),
            py_add);
  // Named and positional calls of the same specialisation share one cache entry.
  const size_t entries = te::detail::testing::cache_size(scale);
  scale.compile(at<float>(0x10000), at<float>(0x20000), 1000, 2.0, 128, "add");
  EXPECT_EQ(te::detail::testing::cache_size(scale), entries);
  // The default still applies when the name is left out.
  EXPECT_EQ(
      scale.compile(at<float>(0x10000), at<float>(0x20000), 1000, 2.0, "BLOCK"_a = 128).hash(),
      warm_hash("scale_kernel", "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1000, 2.0, 128)"));
}

TEST_F(Autotune, NamedArgumentErrorsAreTypedAsInPython) {
  te::JitFunction scale("te_tune_kernels", "scale_kernel");
  const char* sig = "scale_kernel(x_ptr, out_ptr, n, scale, BLOCK, MODE)";
  auto expect = [&](auto&& f, const std::string& message) {
    try {
      f();
      ADD_FAILURE() << "expected TypeError: " << message;
    } catch (const te::TypeError& e) {
      EXPECT_EQ(std::string(e.what()), std::string(sig) + ": " + message);
    }
  };
  try {  // Python: KeyError
    scale.compile(at<float>(0x10000), at<float>(0x20000), 10, 2.0, 128, "MOD"_a = "add");
    ADD_FAILURE() << "expected LookupError";
  } catch (const te::LookupError& e) {
    EXPECT_EQ(std::string(e.what()), std::string(sig) +
                                         ": got an unexpected named argument 'MOD'; "
                                         "the parameters are the names in the signature");
  }
  expect([&] { scale.compile(at<float>(0x10000), at<float>(0x20000), 10, 2.0, 128, "n"_a = 5); },
         "got multiple values for argument 'n' (#2): by position and by name");
  expect(
      [&] {
        scale.compile(at<float>(0x10000), at<float>(0x20000), 10, "BLOCK"_a = 1, "BLOCK"_a = 2);
      },
      "got multiple values for argument 'BLOCK' (#4): named twice");
  expect([&] { scale.compile(at<float>(0x10000), "n"_a = 10); },
         "missing 3 required arguments: 'out_ptr', 'scale' and 'BLOCK'");
  expect([&] { scale.compile(at<float>(0x10000), at<float>(0x20000), 10, 2.0, "MODE"_a = "add"); },
         "missing 1 required argument: 'BLOCK'");
  try {  // Python takes it as an option
    scale.compile(at<float>(0x10000), at<float>(0x20000), 10, 2.0, 64, "num_warps"_a = 8);
    ADD_FAILURE() << "expected NotSupportedError";
  } catch (const te::NotSupportedError& e) {
    EXPECT_EQ(std::string(e.what()),
              std::string(sig) +
                  ": got an unexpected named argument 'num_warps': it is a Triton "
                  "option, not a parameter; set it with "
                  "with_options(triton_embed::Options().num_warps(...))");
  }
}

// Bad calls of wrapped kernels raise what Python raises, before any layer runs: no heuristic
// in Python, no tuning (no benchmark, no progress), and Python's own call fails before
// completing a benchmark. The same calls runtime-only: test_runtime_only.cc.
TEST_F(Autotune, ArgumentErrorsComeBeforeAnyLayerRuns) {
  py_exec(
      "te_tune_kernels.FAKE_BENCH_CALLS.clear()\n"
      "te_tune_kernels.MODE_HEUR_CALLS.clear()\n"
      "from te_helpers import call_error\n"
      "X, O = P(0x10000, 'float32'), P(0x30000, 'float32')");
  int progress = 0;
  te::set_tuning_callback([&](const te::TuningProgress&) { ++progress; });
  const te::JitFunction tuned("te_tune_kernels", "fake_tuned_mode_kernel");
  const te::JitFunction heur("te_tune_kernels", "heur_mode_kernel");
  const long python_calls = te::detail::testing::layer_python_calls();
  size_t n = 0;
  const te_arg_errors::Case* cases = te_arg_errors::cases(&n);
  for (size_t i = 0; i < n; ++i) {
    const te_arg_errors::Case& c = cases[i];
    const te::JitFunction& k = std::string(c.kernel) == "heur_mode_kernel" ? heur : tuned;
    EXPECT_EQ(te_arg_errors::check(c, k), "") << c.kernel << ": " << c.what;
    if (c.py_args == nullptr) continue;
    EXPECT_EQ(py_repr("call_error('te_tune_kernels', '" + std::string(c.kernel) + "', " +
                      c.py_args + ", " + c.py_kwargs + ")"),
              "('" + std::string(c.py_type) + "', 0)")
        << c.kernel << ": " << c.what;
  }
  EXPECT_EQ(progress, 0);
  EXPECT_EQ(te::detail::testing::layer_python_calls(), python_calls);
  EXPECT_EQ(py_repr("te_tune_kernels.FAKE_BENCH_CALLS"), "[]");
  // A good call of each runs its layer: what the counters above would have seen.
  tuned.compile(te_arg_errors::kX, te_arg_errors::kOut, 3000, "neg");
  heur.compile(te_arg_errors::kX, te_arg_errors::kOut, 3000, "neg");
  EXPECT_EQ(progress, 3);
  EXPECT_EQ(te::detail::testing::layer_python_calls(), python_calls + 2);
  EXPECT_EQ(py_repr("te_tune_kernels.FAKE_BENCH_CALLS"), "[64, 128, 256]");
  te::set_tuning_callback(nullptr);
}

// A plain kernel's named launch binds by its own route (names to positions, then the
// positional path); whatever it declines goes to the general binder. Both must agree with the
// positional launch and with compile() on every call, good or bad.
TEST_F(Autotune, NamedLaunchesOfAPlainKernelAgreeWithPositionalOnes) {
  te::JitFunction scale("te_tune_kernels", "scale_kernel");
  namespace tt = te::detail::testing;
  uint64_t want[16] = {}, got[16] = {};
  const int n =
      tt::dry_run(scale, want, at<float>(0x10000), at<float>(0x20000), 1000, 2.0, 128, "add");
  ASSERT_GT(n, 0);
  const te::CompiledKernel* kernel = tt::last_dry_run_kernel();
  const auto same = [&](int m, const char* what) {
    EXPECT_EQ(m, n) << what;
    EXPECT_EQ(tt::last_dry_run_kernel(), kernel) << what;
    for (int i = 0; i < n; ++i) EXPECT_EQ(got[i], want[i]) << what << ": slot " << i;
    std::fill(std::begin(got), std::end(got), 0);
  };
  const std::string block_name = std::string("BL") + "OCK";
  same(tt::dry_run(scale, got, at<float>(0x10000), at<float>(0x20000), 1000, 2.0, "BLOCK"_a = 128,
                   "MODE"_a = "add"),
       "in order");
  same(tt::dry_run(scale, got, at<float>(0x10000), at<float>(0x20000), 1000, 2.0, "MODE"_a = "add",
                   "BLOCK"_a = 128),
       "reversed");
  same(tt::dry_run(scale, got, "MODE"_a = "add", "n"_a = 1000, "x_ptr"_a = at<float>(0x10000),
                   "BLOCK"_a = 128, "scale"_a = 2.0, "out_ptr"_a = at<float>(0x20000)),
       "all named, shuffled");
  // MODE's default, against the positional call that leaves it out too.
  ASSERT_EQ(tt::dry_run(scale, want, at<float>(0x10000), at<float>(0x20000), 1000, 2.0, 128), n);
  kernel = tt::last_dry_run_kernel();
  same(tt::dry_run(scale, got, at<float>(0x10000), "scale"_a = 2.0, te::arg(block_name) = 128,
                   "out_ptr"_a = at<float>(0x20000), "n"_a = 1000),
       "run-time name, default MODE");
  // Each bad call raises what compile() raises, type and message.
  const auto agree = [&](const char* what, auto&& via_compile, auto&& via_launch) {
    std::string a = "no error", b = "no error";
    const std::type_info* ta = nullptr;
    const std::type_info* tb = nullptr;
    try {
      via_compile();
    } catch (const std::exception& e) {
      a = e.what();
      ta = &typeid(e);
    }
    try {
      via_launch();
    } catch (const std::exception& e) {
      b = e.what();
      tb = &typeid(e);
    }
    EXPECT_NE(ta, nullptr) << what;
    EXPECT_TRUE(ta != nullptr && tb != nullptr && *ta == *tb) << what << ": " << b;
    EXPECT_EQ(b, a) << what;
  };
#define TE_AGREE(what, ...) \
  agree(                    \
      what, [&] { scale.compile(__VA_ARGS__); }, [&] { tt::dry_run(scale, got, __VA_ARGS__); })
  TE_AGREE("unknown name", at<float>(0x10000), at<float>(0x20000), 10, 2.0, 128, "MOD"_a = "add");
  TE_AGREE("by position and by name", at<float>(0x10000), at<float>(0x20000), 10, 2.0, 128,
           "n"_a = 5);
  TE_AGREE("named twice", at<float>(0x10000), at<float>(0x20000), 10, "BLOCK"_a = 1, "BLOCK"_a = 2);
  TE_AGREE("missing three", at<float>(0x10000), "n"_a = 10);
  TE_AGREE("missing one", at<float>(0x10000), at<float>(0x20000), 10, 2.0, "MODE"_a = "add");
  TE_AGREE("option by name", at<float>(0x10000), at<float>(0x20000), 10, 2.0, 64,
           "num_warps"_a = 8);
  TE_AGREE("same length, other name", at<float>(0x10000), at<float>(0x20000), 10, 2.0,
           "BLOCX"_a = 64);
  TE_AGREE("all positional and one named", at<float>(0x10000), at<float>(0x20000), 10, 2.0, 64,
           "add", "MODE"_a = "add");
#undef TE_AGREE
}

// ---- heuristics -----------------------------------------------------------------------------

TEST_F(Autotune, HeuristicsGivePythonsValuesAndHash) {
  te::JitFunction heur("te_tune_kernels", "heur_kernel");
  for (int n : {1, 7, 100, 1000, 4096}) {
    SCOPED_TRACE(n);
    const std::string args =
        "(P(0x10000, 'float32'), P(0x20000, 'float32'), " + std::to_string(n) + ")";
    EXPECT_EQ(heur.compile(at<float>(0x10000), at<float>(0x20000), n).hash(),
              warm_hash("heur_kernel", args));
  }
  // A heuristic that reads a pointer's dtype keys on that dtype.
  te::JitFunction dt("te_tune_kernels", "heur_dtype_kernel");
  EXPECT_EQ(
      dt.compile(te::Pointer(0x10000, te::DType::fp16), te::Pointer(0x20000, te::DType::fp16), 64,
                 64)
          .hash(),
      warm_hash("heur_dtype_kernel", "(P(0x10000, 'float16'), P(0x20000, 'float16'), 64, 64)"));
  EXPECT_EQ(
      dt.compile(at<float>(0x10000), at<float>(0x20000), 64, 64).hash(),
      warm_hash("heur_dtype_kernel", "(P(0x10000, 'float32'), P(0x20000, 'float32'), 64, 64)"));
}

TEST_F(Autotune, HeuristicsThatSetTritonOptions) {
  // num_warps and num_stages set by heuristics compile as Python's keywords do (same hash),
  // None leaves the default, and the options are memoised like any heuristic value.
  te::JitFunction heur("te_tune_kernels", "heur_options_kernel");
  struct Case {
    int n;
    int warps;
  };
  for (const Case c : {Case{4096, 8}, Case{100, 2}, Case{1000, 4}, Case{4096, 8}, Case{100, 2}}) {
    SCOPED_TRACE(c.n);
    const std::string args =
        "(P(0x10000, 'float32'), P(0x20000, 'float32'), " + std::to_string(c.n) + ")";
    const te::CompiledKernel& k = heur.compile(at<float>(0x10000), at<float>(0x20000), c.n);
    EXPECT_EQ(k.num_warps(), c.warps);
    EXPECT_EQ(k.num_stages(), 2);
    EXPECT_EQ(k.hash(), warm_hash("heur_options_kernel", args));
  }
  // The handle's options are the base the heuristic's value replaces.
  const te::JitFunction w16 = heur.with_options(te::Options().num_warps(16).num_stages(4));
  EXPECT_EQ(w16.compile(at<float>(0x10000), at<float>(0x20000), 100).num_warps(), 2);
  EXPECT_EQ(w16.compile(at<float>(0x10000), at<float>(0x20000), 1000).num_warps(), 4);
  EXPECT_EQ(w16.compile(at<float>(0x10000), at<float>(0x20000), 1000).num_stages(), 2);

  te::JitFunction over("te_tune_kernels", "heur_options_over_tuner_kernel");
  try {
    (void)over.compile(at<float>(0x10000), at<float>(0x20000), 100);
    ADD_FAILURE() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "heur_options_over_tuner_kernel(x_ptr, out_ptr, n, BLOCK): got multiple "
                 "values for keyword argument 'num_warps': a @triton.heuristics outside "
                 "the autotuner sets it, and so does every autotune config");
  }
  te::JitFunction bad("te_tune_kernels", "heur_bad_option_kernel");
  try {
    (void)bad.compile(at<float>(0x10000), at<float>(0x20000), 100, 64);
    ADD_FAILURE() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "te_tune_kernels.heur_bad_option_kernel: heuristic 'num_warps' returned "
                 "[4] (list), but 'num_warps' is a Triton option: "
                 "return a bool, int, float, str or None");
  }
}

TEST_F(Autotune, HeuristicsRunPythonOnlyWhenWhatTheyReadChanges) {
  te::JitFunction heur("te_tune_kernels", "counted_heur_kernel");
  py_exec("te_tune_kernels.HEUR_CALLS.clear()");
  const std::string h1 = heur.compile(at<float>(0x10000), at<float>(0x20000), 300).hash();
  // Other pointers, same n: the heuristic read only n, so Python does not run again.
  const long before = te::detail::testing::layer_python_calls();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(heur.compile(at<float>(0x10000 + 16 * i), at<float>(0x40000), 300).hash(), h1);
  }
  EXPECT_EQ(te::detail::testing::layer_python_calls(), before);
  EXPECT_EQ(py_repr("te_tune_kernels.HEUR_CALLS"), "[300]");
  // A new n calls Python once; going back to the first n does not.
  heur.compile(at<float>(0x10000), at<float>(0x20000), 5000);
  heur.compile(at<float>(0x10000), at<float>(0x20000), 5000);
  heur.compile(at<float>(0x10000), at<float>(0x20000), 300);
  EXPECT_EQ(py_repr("te_tune_kernels.HEUR_CALLS"), "[300, 5000]");

  // A heuristic that reads a dtype: a new address of the same dtype stays in C++.
  te::JitFunction dt("te_tune_kernels", "heur_dtype_kernel");
  dt.compile(te::Pointer(0x10000, te::DType::fp16), te::Pointer(0x20000, te::DType::fp16), 64, 64);
  const long mid = te::detail::testing::layer_python_calls();
  dt.compile(te::Pointer(0x30000, te::DType::fp16), te::Pointer(0x20000, te::DType::fp16), 64, 64);
  EXPECT_EQ(te::detail::testing::layer_python_calls(), mid);
  dt.compile(te::Pointer(0x30000, te::DType::bf16), te::Pointer(0x20000, te::DType::fp16), 64, 64);
  EXPECT_EQ(te::detail::testing::layer_python_calls(), mid + 1);
}

// The memo of whole positional calls resolves every call as the layers do: the same compiled
// kernel and the same packed arguments as with the memo off, on heuristics of values, dtypes
// and options, on tuned kernels and on both stacking orders; a heuristic whose dependencies
// grow (branchy_heur_kernel reads m only when n > 100) invalidates what was memoised before.
TEST_F(Autotune, WholeCallMemoAgreesWithTheLayers) {
  namespace tt = te::detail::testing;
  struct Outcome {
    int np;
    uint64_t slots[8];
    std::string hash;
  };
  const auto run = [](const std::function<int(uint64_t*)>& call) {
    Outcome o{};
    o.np = call(o.slots);
    o.hash = tt::last_dry_run_kernel()->hash();
    return o;
  };
  te::JitFunction heur("te_tune_kernels", "heur_kernel"),
      dtype("te_tune_kernels", "heur_dtype_kernel"),
      options("te_tune_kernels", "heur_options_kernel"),
      tuned("te_tune_kernels", "fake_tuned_kernel"),
      heur_tuned("te_tune_kernels", "fake_heur_tuned_kernel"),
      tuned_heur("te_tune_kernels", "fake_tuned_heur_kernel"),
      branchy("te_tune_kernels", "branchy_heur_kernel");
  struct Case {
    std::string what;
    std::function<int(uint64_t*)> call;
    bool memoised;  // a repeat resolves through the memo
  };
  const std::vector<Case> cases = {
      {"heur n=300",
       [&](uint64_t* s) {
         return tt::dry_run(heur, s, at<float>(0x10000), at<float>(0x20000), 300);
       },
       true},
      {"heur n=301 unaligned",
       [&](uint64_t* s) {
         return tt::dry_run(heur, s, at<float>(0x10004), at<float>(0x20000), 301);
       },
       true},
      {"heur n=2048",
       [&](uint64_t* s) {
         return tt::dry_run(heur, s, at<float>(0x10000), at<float>(0x20000), 2048);
       },
       true},
      {"heur n=300 again, other pointers",
       [&](uint64_t* s) {
         return tt::dry_run(heur, s, at<float>(0x50000), at<float>(0x60000), 300);
       },
       true},
      {"dtype fp16",
       [&](uint64_t* s) {
         return tt::dry_run(dtype, s, te::Pointer(0x10000, te::DType::fp16),
                            te::Pointer(0x20000, te::DType::fp16), 64, 64);
       },
       true},
      {"dtype bf16",
       [&](uint64_t* s) {
         return tt::dry_run(dtype, s, te::Pointer(0x10000, te::DType::bf16),
                            te::Pointer(0x20000, te::DType::fp16), 64, 64);
       },
       true},
      {"options n=100",
       [&](uint64_t* s) {
         return tt::dry_run(options, s, at<float>(0x10000), at<float>(0x20000), 100);
       },
       true},
      {"options n=1000",
       [&](uint64_t* s) {
         return tt::dry_run(options, s, at<float>(0x10000), at<float>(0x20000), 1000);
       },
       true},
      {"options n=5000",
       [&](uint64_t* s) {
         return tt::dry_run(options, s, at<float>(0x10000), at<float>(0x20000), 5000);
       },
       true},
      {"tuned n=4096",
       [&](uint64_t* s) {
         return tt::dry_run(tuned, s, at<float>(0x10000), at<float>(0x20000), 4096);
       },
       true},
      {"tuned n=4097",
       [&](uint64_t* s) {
         return tt::dry_run(tuned, s, at<float>(0x10000), at<float>(0x20000), 4097);
       },
       true},
      {"tuned ACT=neg",
       [&](uint64_t* s) {
         return tt::dry_run(tuned, s, at<float>(0x10000), at<float>(0x20000), 4096, "neg");
       },
       true},
      {"heuristics over autotune",
       [&](uint64_t* s) {
         return tt::dry_run(heur_tuned, s, at<float>(0x10000), at<float>(0x20000), 4097);
       },
       true},
      {"autotune over heuristics",
       [&](uint64_t* s) {
         return tt::dry_run(tuned_heur, s, at<float>(0x10000), at<float>(0x20000), 4096);
       },
       true},
      {"named: not memoised",
       [&](uint64_t* s) {
         return tt::dry_run(heur, s, at<float>(0x10000), at<float>(0x20000), "n"_a = 300);
       },
       false},
      {"branchy n=50 m=500",
       [&](uint64_t* s) {
         return tt::dry_run(branchy, s, at<float>(0x10000), at<float>(0x20000), 50, 500);
       },
       true},
      {"branchy n=50 m=5",
       [&](uint64_t* s) {
         return tt::dry_run(branchy, s, at<float>(0x10000), at<float>(0x20000), 50, 5);
       },
       true},
      {"branchy n=500 m=500",
       [&](uint64_t* s) {
         return tt::dry_run(branchy, s, at<float>(0x10000), at<float>(0x20000), 500, 500);
       },
       true},
      {"branchy n=500 m=5",
       [&](uint64_t* s) {
         return tt::dry_run(branchy, s, at<float>(0x10000), at<float>(0x20000), 500, 5);
       },
       true},
      {"branchy n=500 m=500 again",
       [&](uint64_t* s) {
         return tt::dry_run(branchy, s, at<float>(0x10000), at<float>(0x20000), 500, 500);
       },
       true},
  };
  // The layers' own answers first (each call's walk, not the memo), then each call twice
  // positionally: the first may fill the memo, the second must come from it where the call
  // can be memoised.
  std::vector<Outcome> want;
  {
    const tt::WalkLayers layers;
    const uint64_t hits = tt::call_memo_hits();
    for (const Case& c : cases) want.push_back(run(c.call));
    EXPECT_EQ(tt::call_memo_hits(), hits);  // the layers' walks, none from the memo
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    for (int rep = 0; rep < 2; ++rep) {
      const uint64_t hits = tt::call_memo_hits();
      const Outcome got = run(c.call);
      EXPECT_EQ(got.hash, want[i].hash) << c.what << " (repeat " << rep << ")";
      ASSERT_EQ(got.np, want[i].np < 0 ? -want[i].np - 1 : want[i].np) << c.what;
      EXPECT_EQ(std::memcmp(got.slots, want[i].slots, sizeof(uint64_t) * got.np), 0) << c.what;
      if (rep == 1) EXPECT_EQ(tt::call_memo_hits() - hits, c.memoised ? 1u : 0u) << c.what;
    }
  }
  // BIG as the layers decide it: only n > 100 and m > 100.
  EXPECT_NE(want[17].hash, want[15].hash);
  EXPECT_EQ(want[16].hash, want[15].hash);
  EXPECT_EQ(want[18].hash, want[15].hash);
  EXPECT_EQ(want[19].hash, want[17].hash);
  // Going back to an early call after the dependencies grew: still the layers' answer.
  const Outcome back = run(cases[16].call);
  EXPECT_EQ(back.hash, want[16].hash);
}

TEST_F(Autotune, ThreadsRacingOnOneHeuristicsKey) {
  te::JitFunction heur("te_tune_kernels", "heur_kernel");
  const std::string expected =
      warm_hash("heur_kernel", "(P(0x10000, 'float32'), P(0x20000, 'float32'), 777)");
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (heur.compile(at<float>(0x10000), at<float>(0x20000), 777).hash() == expected) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 400);
}

// unload_bundles() forgets what every kernel resolved (cache entries, heuristic and tuning
// memos, the memo of whole calls) while other threads launch: each launch resolves to the
// same kernel, from the memos or asked again.
TEST_F(Autotune, ThreadsLaunchingWhileBundlesUnload) {
  te::JitFunction heur("te_tune_kernels", "heur_kernel");
  te::JitFunction tuned("te_tune_kernels", "fake_tuned_kernel");
  // Each holds what it resolved until it has read the hash (an unload on another thread frees
  // what nothing holds).
  using te::detail::testing::HoldResolved;
  auto heur_hash = [&] {
    const HoldResolved hold;
    return heur.compile(at<float>(0x10000), at<float>(0x20000), 777).hash();
  };
  auto tuned_hash = [&] {
    const HoldResolved hold;
    return tuned.compile(at<float>(0x10000), at<float>(0x30000), 3000, "ACT"_a = "neg").hash();
  };
  // Positional dry runs: a hit of the memo of whole calls, the layers walked after a forget.
  auto heur_memo_hash = [&] {
    const HoldResolved hold;
    uint64_t slots[8] = {};
    te::detail::testing::dry_run(heur, slots, at<float>(0x10000), at<float>(0x20000), 777);
    const te::CompiledKernel* k = te::detail::testing::last_dry_run_kernel();
    return k != nullptr ? k->hash() : std::string();
  };
  const std::string want_heur = heur_hash(), want_tuned = tuned_hash();
  EXPECT_EQ(heur_memo_hash(), want_heur);
  const long python = te::detail::testing::layer_python_calls();
  std::atomic<bool> done{false};
  std::atomic<int> ok{0}, runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!done.load()) {
        ok += heur_hash() == want_heur;
        ok += tuned_hash() == want_tuned;
        ok += heur_memo_hash() == want_heur;
        runs += 3;
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    te::unload_bundles();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  done = true;
  for (auto& th : threads) th.join();
  EXPECT_GT(runs.load(), 0);
  EXPECT_EQ(ok.load(), runs.load());
  // Forgotten, then asked again: the heuristic ran in Python again.
  EXPECT_GT(te::detail::testing::layer_python_calls(), python);
  EXPECT_EQ(heur_hash(), want_heur);
  EXPECT_EQ(tuned_hash(), want_tuned);
}

// ---- autotune -------------------------------------------------------------------------------

// cache_results: the disk-cache entry Triton's Autotuner writes when C++ tunes is the one
// Python's Autotuner reads for the same call, and the other way round (same key, configs and
// Config strings as the installed Triton makes them), in a fresh TRITON_CACHE_DIR. Python's
// side runs Autotuner.run with warmup=True through FakeDriver: it tunes, then compiles the
// choice without a launch.
TEST_F(Autotune, CacheResultsOnDiskAreSharedWithPython) {
  te::JitFunction cached("te_tune_kernels", "fake_cached_kernel");
  py_exec(
      "import os, tempfile\n"
      "from triton.runtime.driver import driver as _drv\n"
      "from te_helpers import FakeDriver, P\n"
      "_te_cache_saved = os.environ.get('TRITON_CACHE_DIR')\n"
      "_te_cache_tmp = tempfile.TemporaryDirectory()\n"
      "os.environ['TRITON_CACHE_DIR'] = _te_cache_tmp.name\n"
      "_te_drv_saved = _drv._active\n"
      "_drv.set_active(FakeDriver())\n"
      "_tk = te_tune_kernels.fake_cached_kernel\n"
      "def _te_python_tunes(n):\n"
      "    te_tune_kernels.FAKE_BENCH_CALLS.clear()\n"
      "    _tk.cache.clear()\n"
      "    _tk.run(P(0x10000), P(0x20000), n, grid=(1,), warmup=True)\n"
      "    return list(te_tune_kernels.FAKE_BENCH_CALLS), str(_tk.cache[(n, 'torch.float32', "
      "'torch.float32')])\n");
  struct Restore {
    ~Restore() {
      py_exec(
          "_drv._active = _te_drv_saved\n"
          "if _te_cache_saved is None: os.environ.pop('TRITON_CACHE_DIR', None)\n"
          "else: os.environ['TRITON_CACHE_DIR'] = _te_cache_saved\n"
          "_te_cache_tmp.cleanup()\n");
    }
  } restore;
  const std::string best = te_test::str_of("_tk.configs[1]");  // fake timings: BLOCK 128

  // C++ tunes first (benchmarks, writes the entry); Python then reads it without benchmarking.
  py_exec("te_tune_kernels.FAKE_BENCH_CALLS.clear()\n_tk.cache.clear()");
  cached.compile(at<float>(0x10000), at<float>(0x20000), 1000);
  const te::TuningResult* r = cached.tuning_result(at<float>(0x10000), at<float>(0x20000), 1000);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->from_cache);
  EXPECT_EQ(r->best.str, best);
  EXPECT_EQ(py_repr("te_tune_kernels.FAKE_BENCH_CALLS"), "[64, 128, 256]");
  EXPECT_EQ(py_repr("_te_python_tunes(1000)"), "([], '" + best + "')");

  // Python tunes first; C++ then reads its entry without benchmarking.
  EXPECT_EQ(py_repr("_te_python_tunes(2000)"), "([64, 128, 256], '" + best + "')");
  py_exec("te_tune_kernels.FAKE_BENCH_CALLS.clear()\n_tk.cache.clear()");
  cached.compile(at<float>(0x10000), at<float>(0x20000), 2000);
  r = cached.tuning_result(at<float>(0x10000), at<float>(0x20000), 2000);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->from_cache);
  EXPECT_EQ(r->best.str, best);
  EXPECT_EQ(py_repr("te_tune_kernels.FAKE_BENCH_CALLS"), "[]");
}

TEST_F(Autotune, TunesAsPythonsAutotunerAndRemembers) {
  te::JitFunction tuned("te_tune_kernels", "fake_tuned_kernel");
  py_exec(
      "te_tune_kernels.FAKE_BENCH_CALLS.clear()\nte_tune_kernels.fake_tuned_kernel.cache.clear()");
  const te::CompiledKernel& k = tuned.compile(at<float>(0x10000), at<float>(0x20000), 1000);
  // Fake timings: BLOCK 128 is fastest. Same kernel as Python's launch of that config.
  EXPECT_EQ(k.hash(), warm_hash("fake_tuned_kernel.fn",
                                "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1000, '', 128)",
                                "{'num_warps': 4, 'num_stages': 3}"));
  EXPECT_EQ(py_repr("te_tune_kernels.FAKE_BENCH_CALLS"), "[64, 128, 256]");
  // Python's Autotuner holds the same key and choice.
  EXPECT_EQ(py_repr("list(te_tune_kernels.fake_tuned_kernel.cache)"),
            "[(1000, 'torch.float32', 'torch.float32')]");
  const te::TuningResult* r = tuned.tuning_result(at<float>(0x10000), at<float>(0x20000), 1000);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->key, "(1000, 'torch.float32', 'torch.float32')");
  EXPECT_EQ(r->best.str, te_test::str_of("te_tune_kernels.fake_tuned_kernel.configs[1]"));
  EXPECT_EQ(te_test::str_of("te_tune_kernels.fake_tuned_kernel.configs[1].kwargs"),
            "{'BLOCK': 128}");
  ASSERT_EQ(r->best.kwargs.size(), 1u);
  EXPECT_EQ(r->best.kwargs[0].first, "BLOCK");
  EXPECT_EQ(r->best.kwargs[0].second, "128");
  ASSERT_EQ(r->timings.size(), 3u);
  EXPECT_EQ(r->timings[0].config.str,
            te_test::str_of("te_tune_kernels.fake_tuned_kernel.configs[0]"));
  EXPECT_EQ(r->timings[0].config.num_warps, 2);
  EXPECT_DOUBLE_EQ(r->timings[0].ms[0], 3.0);
  EXPECT_FALSE(r->from_cache);

  // The same key again, other pointers: no Python, no benchmark.
  const long before = te::detail::testing::layer_python_calls();
  EXPECT_EQ(&tuned.compile(at<float>(0x50000), at<float>(0x60000), 1000), &k);
  EXPECT_EQ(te::detail::testing::layer_python_calls(), before);
  // Another dtype is another key (Python appends str(arg.dtype)); so is another n.
  tuned.compile(te::Pointer(0x10000, te::DType::fp16), te::Pointer(0x20000, te::DType::fp16), 1000);
  EXPECT_EQ(te::detail::testing::layer_python_calls(), before + 1);
  EXPECT_EQ(tuned.tuning_result(at<float>(0x10000), at<float>(0x20000), 2000), nullptr);
  // A parameter before the tuned one, by name, with the tuned value filled in by the config.
  EXPECT_EQ(tuned.compile(at<float>(0x10000), at<float>(0x20000), 1000, "ACT"_a = "neg").hash(),
            warm_hash("fake_tuned_kernel.fn",
                      "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1000, 'neg', 128)",
                      "{'num_warps': 4, 'num_stages': 3}"));
  // Passing a tuned meta-parameter is Triton's conflict.
  try {
    tuned.compile(at<float>(0x10000), at<float>(0x20000), 1000, "BLOCK"_a = 64);
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "fake_tuned_kernel(x_ptr, out_ptr, n, ACT, BLOCK): Conflicting "
                 "meta-parameters: BLOCK. Make sure that you don't re-define auto-tuned "
                 "symbols.");
  }
}

TEST_F(Autotune, WarmupCompilesEveryConfigAsPython) {
  te::JitFunction tuned("te_tune_kernels", "tuned_kernel");
  const auto all = tuned.warmup(at<float>(0x10000), at<float>(0x20000), 4096, "ACT"_a = "relu");
  te_test::Gil gil;
  py::object py = warm("tuned_kernel", "(P(0x10000, 'float32'), P(0x20000, 'float32'), 4096)",
                       "{'ACT': 'relu'}");
  ASSERT_EQ(all.size(), py::len(py));
  for (size_t i = 0; i < all.size(); ++i)
    EXPECT_EQ(all[i]->hash(), py::list(py)[i].cast<std::string>());
}

// A scratch allocator that hands out fake addresses and logs every call (no GPU needed), or
// fails as told.
struct LoggingScratch : te::ScratchAllocator {
  enum class Mode { kOk, kThrow, kNull } mode = Mode::kOk;
  std::mutex mu;
  std::vector<std::string> log;
  uint64_t allocate(size_t bytes, size_t align, te::Stream s) override {
    if (mode == Mode::kThrow) throw te::OutOfResourcesError("the test's pool is empty");
    std::lock_guard<std::mutex> lock(mu);
    std::ostringstream line;
    line << "allocate " << bytes << " " << align << " " << s;
    log.push_back(line.str());
    return mode == Mode::kNull ? 0 : 0xabc000;
  }
  void release(uint64_t ptr, size_t bytes, te::Stream s) noexcept override {
    std::lock_guard<std::mutex> lock(mu);
    std::ostringstream line;
    line << "release " << std::hex << ptr << std::dec << " " << bytes << " " << s;
    log.push_back(line.str());
  }
};

// Tuning benchmarks through Triton's launcher, which takes a kernel's global scratch from
// triton.set_allocator's allocator: a C++ program set none, so for the tuning Triton gets ours
// (the scratch allocator in effect, on the launch's stream, each buffer given back once the
// launcher drops it), then none again; a Python user's own allocator is kept.
TEST_F(Autotune, TuningLendsTritonTheScratchAllocator) {
  auto scratch = std::make_shared<LoggingScratch>();
  te::set_scratch_allocator(scratch);
  const te::JitFunction probe("te_tune_kernels", "alloc_probe_kernel");
  py_exec(
      "te_tune_kernels.ALLOC_PROBE.clear()\n"
      "from triton.runtime import _allocation\n"
      "def allocator_now():\n"
      "    return type(_allocation._allocator.get()).__name__\n");
  ASSERT_EQ(py_repr("allocator_now()"), "'NullAllocator'");

  // No allocator set: ours, for each config's benchmark; none after.
  probe.compile(at<float>(0x10000), at<float>(0x20000), 1000);
  EXPECT_EQ(py_repr("te_tune_kernels.ALLOC_PROBE"),
            "[('ScratchAllocator', 11255808), ('ScratchAllocator', 11255808), "
            "('ScratchAllocator', 11255808)]");
  {
    std::lock_guard<std::mutex> lock(scratch->mu);
    ASSERT_EQ(scratch->log.size(), 6u);
    for (size_t i = 0; i < 6; i += 2) {
      EXPECT_EQ(scratch->log[i], "allocate 4096 128 0x1234");
      EXPECT_EQ(scratch->log[i + 1], "release abc000 4096 0x1234");
    }
    scratch->log.clear();
  }
  EXPECT_EQ(py_repr("allocator_now()"), "'NullAllocator'");

  // A Python user's allocator: kept during the tuning and after; ours is not asked.
  py_exec(
      "import triton\ntriton.set_allocator(te_tune_kernels.user_allocator)\n"
      "te_tune_kernels.ALLOC_PROBE.clear()");
  probe.compile(at<float>(0x10000), at<float>(0x20000), 2000);
  EXPECT_EQ(py_repr("te_tune_kernels.ALLOC_PROBE"),
            "[('function', 125243392), ('function', 125243392), ('function', 125243392)]");
  EXPECT_TRUE(scratch->log.empty());
  EXPECT_EQ(py_repr("_allocation._allocator.get() is te_tune_kernels.user_allocator"), "True");
  py_exec("triton.set_allocator(_allocation._NULL_ALLOCATOR)");

  // The allocator's own error reaches the caller with its type; a null address is refused.
  scratch->mode = LoggingScratch::Mode::kThrow;
  try {
    probe.compile(at<float>(0x10000), at<float>(0x20000), 3000);
    ADD_FAILURE() << "expected OutOfResourcesError";
  } catch (const te::OutOfResourcesError& e) {
    EXPECT_STREQ(e.what(), "the test's pool is empty");
  }
  EXPECT_EQ(py_repr("allocator_now()"), "'NullAllocator'");
  scratch->mode = LoggingScratch::Mode::kNull;
  try {
    probe.compile(at<float>(0x10000), at<float>(0x20000), 4000);
    ADD_FAILURE() << "expected OutOfResourcesError";
  } catch (const te::OutOfResourcesError& e) {
    EXPECT_STREQ(e.what(),
                 "tuning te_tune_kernels.alloc_probe_kernel: the global scratch "
                 "allocator returned a null address for 4096 bytes; an allocator that "
                 "cannot allocate must throw");
  }
  EXPECT_EQ(py_repr("allocator_now()"), "'NullAllocator'");
  scratch->mode = LoggingScratch::Mode::kOk;

  // Another thread (another Python thread state, so another context): ours there too.
  scratch->log.clear();
  std::thread([&] { probe.compile(at<float>(0x10000), at<float>(0x20000), 5000); }).join();
  EXPECT_EQ(scratch->log.size(), 6u);
  EXPECT_EQ(py_repr("allocator_now()"), "'NullAllocator'");
  te::set_scratch_allocator(nullptr);
}

TEST_F(Autotune, SingleConfigNeedsNoBenchmark) {
  // No GPU and no custom benchmark: one config is taken as it is, as Triton does.
  te::JitFunction single("te_tune_kernels", "tuned_single_kernel");
  EXPECT_EQ(single.compile(at<float>(0x10000), at<float>(0x20000), 1000).hash(),
            warm_hash("tuned_single_kernel.fn",
                      "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1000, 256)",
                      "{'num_warps': 4, 'num_stages': 2}"));
  // More than one config: compile() cannot benchmark (no grid; here maybe no GPU either), so
  // a clear error, not a Triton traceback.
  te::JitFunction tuned("te_tune_kernels", "tuned_kernel");
  try {
    tuned.compile(at<float>(0x10000), at<float>(0x20000), 1000);
    FAIL() << "expected an error";
  } catch (const te::NoDeviceError& e) {
    EXPECT_FALSE(te::cuda_available());
    EXPECT_NE(std::string(e.what()).find("te_tune_kernels.tuned_kernel: this call's tuning key has "
                                         "not been tuned, and tuning needs a GPU"),
              std::string::npos)
        << e.what();
  } catch (const te::NotSupportedError& e) {
    EXPECT_TRUE(te::cuda_available());
    EXPECT_STREQ(e.what(),
                 "te_tune_kernels.tuned_kernel: this call's tuning key has not been "
                 "tuned, and compile() has no grid to benchmark with: call "
                 "prepare(grid, args...) (or launch) to tune it");
  }
}

TEST_F(Autotune, HeuristicsAndAutotuneInEitherOrder) {
  // heuristics(autotune(jit)): EVEN from n, then the tuned BLOCK.
  te::JitFunction ht("te_tune_kernels", "fake_heur_tuned_kernel");
  EXPECT_EQ(ht.compile(at<float>(0x10000), at<float>(0x20000), 1000).hash(),
            warm_hash("fake_heur_tuned_kernel.fn.fn",
                      "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1000, 128, True)",
                      "{'num_warps': 4, 'num_stages': 3}"));
  // autotune(heuristics(jit)): the heuristic sees the tuned BLOCK.
  te::JitFunction th("te_tune_kernels", "fake_tuned_heur_kernel");
  EXPECT_EQ(th.compile(at<float>(0x10000), at<float>(0x20000), 1000).hash(),
            warm_hash("fake_tuned_heur_kernel.fn.fn",
                      "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1000, 128, False)",
                      "{'num_warps': 4, 'num_stages': 3}"));
  EXPECT_EQ(th.compile(at<float>(0x10000), at<float>(0x20000), 1024).hash(),
            warm_hash("fake_tuned_heur_kernel.fn.fn",
                      "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1024, 128, True)",
                      "{'num_warps': 4, 'num_stages': 3}"));
}

}  // namespace
