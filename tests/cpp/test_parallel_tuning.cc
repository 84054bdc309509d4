// Tuning in parallel (core/workers.h), compile-only (no GPU): a tuning compiles its configs on
// the compile workers into Triton's cache, then Triton's Autotuner benchmarks them one at a
// time (fake timings: its benchmark launches nothing), and chooses as on one worker; a config
// that does not compile is left to the benchmark; the worker count setting.

#include <sched.h>
#include <triton_embed/autotune.h>
#include <triton_embed/jit.h>
#include <triton_embed/runtime.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace tt = triton_embed::detail::testing;
namespace py = pybind11;

namespace {

template <class T>
T* at(uint64_t addr) {
  return reinterpret_cast<T*>(addr);
}

class ParallelTuning : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te::set_target(te::Target::parse("cuda:90"));
    te_test::Gil gil;
    te_test::install_python_helpers();
    // triton.compile counts the threads it runs on (the glue calls it through the module).
    te_test::exec(
        "import threading\n"
        "import te_tune_kernels\n"
        "_te_compile_threads = set()\n"
        "_te_triton_compile = triton.compile\n"
        "def _te_compile_on_thread(*args, **kwargs):\n"
        "    _te_compile_threads.add(threading.get_ident())\n"
        "    return _te_triton_compile(*args, **kwargs)\n"
        "triton.compile = _te_compile_on_thread\n");
  }
  static void TearDownTestSuite() {
    te::set_compile_workers(0);
    te::set_tuning_callback(nullptr);
    te_test::Gil gil;
    te_test::exec("triton.compile = _te_triton_compile\n");
  }
};

// The same configs timed in the same order, the same choice (the first of two equal timings),
// on one worker and on two: each config compiled once before the benchmarks (on that many
// threads), the chosen one then through the cache; the progress says how long each part took.
TEST_F(ParallelTuning, ChoosesAsOneWorkerDoes) {
  te::JitFunction k("te_tune_kernels", "parallel_tuned_kernel");
  std::mutex mu;
  std::vector<te::TuningProgress> progress;
  te::set_tuning_callback([&](const te::TuningProgress& p) {
    std::lock_guard<std::mutex> lock(mu);
    progress.push_back(p);
  });
  struct Unset {
    ~Unset() { te::set_tuning_callback(nullptr); }  // before mu and progress go
  } unset;
  const std::string timed = "[(32, 4), (64, 4), (128, 4), (128, 8), (256, 4), (512, 8)]";
  for (const size_t workers : {size_t{1}, size_t{2}}) {
    SCOPED_TRACE(workers);
    te::set_compile_workers(workers);
    ASSERT_EQ(te::compile_workers(), workers);
    te_test::run("te_tune_kernels.PARALLEL_BENCH_CALLS.clear()\n_te_compile_threads.clear()\n");
    progress.clear();
    const long warmed = tt::warm_count(), compiled = tt::compile_count();
    const int64_t n = workers == 1 ? 1000 : 1024;  // a key and a specialisation each
    k.compile(at<float>(0x10000), at<float>(0x20000), n);
    const te::TuningResult* r = k.tuning_result(at<float>(0x10000), at<float>(0x20000), n);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(te_test::repr_of("te_tune_kernels.PARALLEL_BENCH_CALLS"), timed);
    EXPECT_EQ(r->best.str, te_test::str_of("te_tune_kernels.parallel_tuned_kernel.configs[2]"));
    ASSERT_EQ(r->timings.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(r->timings[i].config.str,
                te_test::str_of("te_tune_kernels.parallel_tuned_kernel.configs[" +
                                std::to_string(i) + "]"));
    }
    EXPECT_EQ(tt::warm_count(), warmed + 6);
    EXPECT_EQ(tt::compile_count(), compiled + 1);
    EXPECT_EQ(te_test::repr_of("len(_te_compile_threads)"), workers == 1 ? "1" : "2");
    EXPECT_GT(r->compile_seconds, 0.0);
    EXPECT_GE(r->seconds, r->compile_seconds);
    ASSERT_EQ(progress.size(), 6u);
    for (size_t i = 0; i < progress.size(); ++i) {
      EXPECT_EQ(progress[i].done, i + 1);
      EXPECT_EQ(progress[i].workers, workers);
      EXPECT_DOUBLE_EQ(progress[i].compile_s, r->compile_seconds);
      EXPECT_DOUBLE_EQ(progress[i].compile_s + progress[i].benchmark_s, progress[i].elapsed_s);
    }
  }
  // A key tuned before: no compile, no benchmark.
  const long warmed = tt::warm_count();
  te_test::run("te_tune_kernels.PARALLEL_BENCH_CALLS.clear()\n");
  k.compile(at<float>(0x30000), at<float>(0x40000), 1024);
  EXPECT_EQ(tt::warm_count(), warmed);
  EXPECT_EQ(te_test::repr_of("te_tune_kernels.PARALLEL_BENCH_CALLS"), "[]");
}

// A config that does not compile fails in its worker and is left to the benchmark, which meets
// it as a serial tuning would (here the fake benchmark never compiles it): the tuning chooses.
TEST_F(ParallelTuning, AConfigThatFailsIsLeftToTheBenchmark) {
  te::set_compile_workers(2);
  te::JitFunction k("te_tune_kernels", "parallel_failing_kernel");
  const long warmed = tt::warm_count();
  k.compile(at<float>(0x10000), at<float>(0x20000), 1000);
  const te::TuningResult* r = k.tuning_result(at<float>(0x10000), at<float>(0x20000), 1000);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->best.str, te_test::str_of("te_tune_kernels.parallel_failing_kernel.configs[1]"));
  EXPECT_EQ(r->timings.size(), 2u);
  EXPECT_EQ(tt::warm_count(), warmed + 1);  // BLOCK 128 only
  // Compiling the failing config itself raises Triton's error, as before.
  EXPECT_THROW(k.warmup(at<float>(0x10000), at<float>(0x20000), 1000), te::CompileError);
}

// set_compile_workers: a count, 0 for the default (TRITON_EMBED_COMPILE_WORKERS, else the CPUs
// this process may run on), and a refusal beyond 4096. Run again with the variable set
// (compile_workers_env).
TEST(ParallelTuningEnvironment, WorkerCountSetting) {
  te::set_compile_workers(3);
  EXPECT_EQ(te::compile_workers(), 3u);
  te::set_compile_workers(0);
  size_t want = 0;
  if (const char* env = std::getenv("TRITON_EMBED_COMPILE_WORKERS")) {
    want = std::strtoul(env, nullptr, 10);
  } else {
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    want = static_cast<size_t>(CPU_COUNT(&set));
  }
  EXPECT_EQ(te::compile_workers(), want);
  EXPECT_THROW(te::set_compile_workers(5000), te::ValueError);
  EXPECT_EQ(te::compile_workers(), want);
}

}  // namespace
