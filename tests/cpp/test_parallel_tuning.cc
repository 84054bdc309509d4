// Tuning in parallel (core/workers.h, python/worker_processes.h), compile-only (no GPU): a
// tuning compiles its configs into Triton's cache on the compile workers (worker processes, or
// threads), while or before Triton's Autotuner benchmarks them one at a time (fake timings: its
// benchmark launches nothing), and chooses as on one worker; a config that does not compile,
// or whose worker ends, is left to this process; what a compile prints shows here; idle
// workers end; the worker count setting.

#include <sched.h>
#include <triton_embed/autotune.h>
#include <triton_embed/jit.h>
#include <triton_embed/runtime.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
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
    // triton.compile counts the threads of this process it runs on (the glue calls it through
    // the module; a compile worker process runs its own).
    te_test::exec(
        "import os, sys, io, tempfile, threading\n"
        "import te_tune_kernels, te_worker_kernels, te_worker_exit\n"
        "from triton.runtime.cache import _base32\n"
        "_te_compile_threads = set()\n"
        "_te_triton_compile = triton.compile\n"
        "def _te_compile_on_thread(*args, **kwargs):\n"
        "    _te_compile_threads.add(threading.get_ident())\n"
        "    return _te_triton_compile(*args, **kwargs)\n"
        "triton.compile = _te_compile_on_thread\n"
        "_te_cache_dir = os.environ.get('TRITON_CACHE_DIR')\n"
        "def _te_fresh_cache():\n"
        "    os.environ['TRITON_CACHE_DIR'] = tempfile.mkdtemp(prefix='te_parallel_tuning_')\n"
        "def _te_cached_kernels():\n"
        "    d = os.environ['TRITON_CACHE_DIR']\n"
        "    return sorted(e for e in os.listdir(d)\n"
        "                  if any(f.endswith('.cubin') for f in os.listdir(os.path.join(d, "
        "e))))\n");
  }
  static void TearDownTestSuite() {
    te::set_compile_workers(0);
    te::set_tuning_callback(nullptr);
    unsetenv("TRITON_EMBED_COMPILE_PROCESSES");
    te_test::Gil gil;
    te_test::exec(
        "triton.compile = _te_triton_compile\n"
        "if _te_cache_dir is None:\n"
        "    os.environ.pop('TRITON_CACHE_DIR', None)\n"
        "else:\n"
        "    os.environ['TRITON_CACHE_DIR'] = _te_cache_dir\n");
  }
  // The next tunings compile into a new, empty Triton cache (this process's and its workers').
  static void fresh_cache() { te_test::run("_te_fresh_cache()"); }
  static std::string cached_kernels() { return te_test::repr_of("_te_cached_kernels()"); }
  // Whether Triton's cache holds the kernel of this hash (its entry's name: the hash in base32).
  static bool cached(const te::CompiledKernel& ck) {
    return te_test::repr_of("_base32('" + ck.hash() + "') in _te_cached_kernels()") == "True";
  }
  static long cached_kernel_count() {
    te_test::Gil gil;
    return static_cast<long>(py::len(te_test::eval("_te_cached_kernels()")));
  }
};

// How the configs of a tuning compile: on `workers` threads of this process, or on that many
// compile worker processes (TRITON_EMBED_COMPILE_PROCESSES=0 turns them off).
struct Mode {
  size_t workers;
  bool processes;
  int64_t n;  // a tuning key and a specialisation of its own
};
// Each mode's n is a specialisation of its own (the kernels' states live for the process: a
// specialisation compiled once is not compiled again; each test below uses others).
constexpr Mode kModes[] = {{1, false, 1000}, {2, true, 1024}, {2, false, 1}};

void set_mode(const Mode& m) {
  te::set_compile_workers(m.workers);
  if (m.processes) {
    unsetenv("TRITON_EMBED_COMPILE_PROCESSES");
  } else {
    setenv("TRITON_EMBED_COMPILE_PROCESSES", "0", 1);
  }
}

// The same configs timed in the same order, the same choice (the first of two equal timings),
// on one thread, on two worker processes and on two threads: each config compiled once before
// its benchmark (by the workers, or on that many threads of this process), into the cache in
// which the chosen one is then compiled here (a hit: no entry more); the progress says how
// long compiling and benchmarking took, and on what.
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
  for (const Mode& m : kModes) {
    SCOPED_TRACE(testing::Message() << m.workers << (m.processes ? " processes" : " threads"));
    set_mode(m);
    fresh_cache();
    te_test::run("te_tune_kernels.PARALLEL_BENCH_CALLS.clear()\n_te_compile_threads.clear()\n");
    progress.clear();
    const long warmed = tt::warm_count(), compiled = tt::compile_count();
    const tt::WorkerCounts before = tt::worker_counts();
    const te::CompiledKernel& ck = k.compile(at<float>(0x10000), at<float>(0x20000), m.n);
    const te::TuningResult* r = k.tuning_result(at<float>(0x10000), at<float>(0x20000), m.n);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(te_test::repr_of("te_tune_kernels.PARALLEL_BENCH_CALLS"), timed);
    EXPECT_EQ(r->best.str, te_test::str_of("te_tune_kernels.parallel_tuned_kernel.configs[2]"));
    ASSERT_EQ(r->timings.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(r->timings[i].config.str,
                te_test::str_of("te_tune_kernels.parallel_tuned_kernel.configs[" +
                                std::to_string(i) + "]"));
    }
    const tt::WorkerCounts after = tt::worker_counts();
    EXPECT_EQ(after.unavailable, "");
    EXPECT_EQ(tt::warm_count(), warmed + (m.processes ? 0 : 6));
    EXPECT_EQ(after.compiled, before.compiled + (m.processes ? 6 : 0));
    EXPECT_EQ(after.failed, before.failed);
    EXPECT_EQ(tt::compile_count(), compiled + 1);  // the choice, here
    // Here: the configs on that many threads, or (worker processes) the choice alone.
    EXPECT_EQ(te_test::repr_of("len(_te_compile_threads)"),
              std::to_string(m.processes ? 1 : m.workers));
    // Six kernels cached, the choice's among them: its compile here found the workers' entry.
    EXPECT_EQ(cached_kernel_count(), 6);
    EXPECT_TRUE(cached(ck)) << cached_kernels();
    EXPECT_GT(r->compile_seconds, 0.0);
    EXPECT_GT(r->benchmark_seconds, 0.0);
    EXPECT_LE(r->benchmark_seconds, r->seconds);
    ASSERT_EQ(progress.size(), 6u);
    for (size_t i = 0; i < progress.size(); ++i) {
      EXPECT_EQ(progress[i].done, i + 1);
      EXPECT_EQ(progress[i].total, 6u);
      EXPECT_EQ(progress[i].workers, m.workers);
      EXPECT_EQ(progress[i].processes, m.processes);
      EXPECT_LE(progress[i].benchmark_s, progress[i].elapsed_s);
      if (i > 0) EXPECT_GE(progress[i].benchmark_s, progress[i - 1].benchmark_s);
      if (!m.processes) {  // compiled first, then benchmarked
        EXPECT_DOUBLE_EQ(progress[i].compile_s, r->compile_seconds);
        EXPECT_LE(progress[i].compile_s + progress[i].benchmark_s, progress[i].elapsed_s + 1e-3);
      }
    }
    EXPECT_DOUBLE_EQ(progress.back().compile_s, r->compile_seconds);
  }
  // A key tuned before: no compile, no benchmark.
  const long warmed = tt::warm_count();
  const long handed = tt::worker_counts().compiled;
  te_test::run("te_tune_kernels.PARALLEL_BENCH_CALLS.clear()\n");
  k.compile(at<float>(0x30000), at<float>(0x40000), 1024);
  EXPECT_EQ(tt::warm_count(), warmed);
  EXPECT_EQ(tt::worker_counts().compiled, handed);
  EXPECT_EQ(te_test::repr_of("te_tune_kernels.PARALLEL_BENCH_CALLS"), "[]");
}

// A config that does not compile fails where it is compiled first (a thread here, or a worker
// process) and is left to the benchmark, which meets it as a serial tuning would (here the fake
// benchmark never compiles it): the tuning chooses.
TEST_F(ParallelTuning, AConfigThatFailsIsLeftToTheBenchmark) {
  te::JitFunction k("te_tune_kernels", "parallel_failing_kernel");
  for (const Mode& m : kModes) {
    if (m.workers == 1) continue;
    SCOPED_TRACE(m.processes ? "processes" : "threads");
    set_mode(m);
    const long warmed = tt::warm_count();
    const tt::WorkerCounts before = tt::worker_counts();
    k.compile(at<float>(0x10000), at<float>(0x20000), m.n);
    const te::TuningResult* r = k.tuning_result(at<float>(0x10000), at<float>(0x20000), m.n);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->best.str, te_test::str_of("te_tune_kernels.parallel_failing_kernel.configs[1]"));
    EXPECT_EQ(r->timings.size(), 2u);
    const tt::WorkerCounts after = tt::worker_counts();
    if (m.processes) {  // BLOCK 128 compiled there, BLOCK 64 failed there
      EXPECT_EQ(after.compiled, before.compiled + 1);
      EXPECT_EQ(after.failed, before.failed + 1);
      EXPECT_EQ(tt::warm_count(), warmed);
    } else {
      EXPECT_EQ(tt::warm_count(), warmed + 1);  // BLOCK 128 only
    }
    // Compiling the failing config itself raises Triton's error, as before.
    EXPECT_THROW(k.warmup(at<float>(0x10000), at<float>(0x20000), m.n), te::CompileError);
  }
}

// warmup() hands every config to the worker processes first, then compiles each here from
// Triton's cache: the entries Autotuner.warmup makes, in the configs' order.
TEST_F(ParallelTuning, WarmupCompilesInWorkerProcesses) {
  set_mode(kModes[1]);
  fresh_cache();
  te::JitFunction k("te_tune_kernels", "parallel_tuned_kernel");
  const tt::WorkerCounts before = tt::worker_counts();
  const long compiled = tt::compile_count();
  const std::vector<const te::CompiledKernel*> all =
      k.warmup(at<float>(0x10000), at<float>(0x20000), int64_t{2000});
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(tt::worker_counts().compiled, before.compiled + 6);
  EXPECT_EQ(tt::compile_count(), compiled + 6);
  EXPECT_EQ(cached_kernel_count(), 6);  // each compile here found the worker's entry
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(cached(*all[i])) << i << ": " << cached_kernels();
    EXPECT_EQ(all[i]->num_warps(), i == 3 || i == 5 ? 8 : 4) << i;
  }
}

// What a config's compile prints (tl.static_print) shows in this process's sys.stdout whichever
// process compiled it: the same lines on worker processes as on threads. The workers are new:
// each imports te_worker_kernels for its first job, and what that prints is not the compile's.
TEST_F(ParallelTuning, ACompileShowsWhatItPrintedHere) {
  te::JitFunction k("te_worker_kernels", "worker_printing_kernel");
  tt::set_worker_idle_seconds(0.05);
  for (int i = 0; i < 200 && tt::worker_counts().running != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  tt::set_worker_idle_seconds(30);
  ASSERT_EQ(tt::worker_counts().running, 0);
  std::vector<std::string> printed;
  for (const Mode& m : kModes) {
    if (m.workers == 1) continue;
    SCOPED_TRACE(m.processes ? "processes" : "threads");
    set_mode(m);
    fresh_cache();
    te_test::run(
        "te_tune_kernels.FAKE_BENCH_CALLS.clear()\n"
        "_te_stdout, sys.stdout = sys.stdout, io.StringIO()\n");
    k.compile(at<float>(0x10000), at<float>(0x20000), m.n);
    printed.push_back(te_test::repr_of(
        "sorted(l for l in sys.stdout.getvalue().splitlines() if 'te_worker_kernels' in l)"));
    te_test::run("sys.stdout = _te_stdout\n");
    EXPECT_EQ(te_test::repr_of("te_tune_kernels.FAKE_BENCH_CALLS"), "[64, 128, 256]");
  }
  ASSERT_EQ(printed.size(), 2u);
  EXPECT_EQ(printed[0], printed[1]);
  for (const char* block : {"64", "128", "256"}) {
    EXPECT_NE(printed[0].find(block), std::string::npos) << printed[0];
  }
}

// A worker process that ends (here: on importing the kernel's module) fails the configs it
// took; this process compiles each itself before its benchmark, as on threads, chooses as one
// worker does, and starts other workers for later jobs.
TEST_F(ParallelTuning, AWorkerThatEndsLeavesItsConfigsToThisProcess) {
  set_mode(kModes[1]);
  fresh_cache();
  te::JitFunction k("te_worker_exit", "worker_exit_kernel");
  te_test::run(
      "te_tune_kernels.FAKE_BENCH_CALLS.clear()\n"
      "os.environ['TE_TEST_EXIT_IN_WORKERS_OF'] = str(os.getpid())\n");
  const tt::WorkerCounts before = tt::worker_counts();
  const long compiled = tt::compile_count(), warmed = tt::warm_count();
  k.compile(at<float>(0x10000), at<float>(0x20000), int64_t{1000});
  te_test::run("del os.environ['TE_TEST_EXIT_IN_WORKERS_OF']\n");
  const te::TuningResult* r =
      k.tuning_result(at<float>(0x10000), at<float>(0x20000), int64_t{1000});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->best.str, te_test::str_of("te_worker_exit.worker_exit_kernel.configs[1]"));
  EXPECT_EQ(te_test::repr_of("te_tune_kernels.FAKE_BENCH_CALLS"), "[64, 128, 256]");
  const tt::WorkerCounts after = tt::worker_counts();
  EXPECT_EQ(after.failed, before.failed + 3);
  EXPECT_EQ(after.compiled, before.compiled);
  EXPECT_EQ(after.unavailable, "");
  EXPECT_EQ(tt::warm_count(), warmed + 3);       // each config, here
  EXPECT_EQ(tt::compile_count(), compiled + 1);  // the choice, from the cache
  EXPECT_EQ(cached_kernel_count(), 3);
  // Later jobs go to new workers.
  te::JitFunction other("te_worker_kernels", "worker_plain_kernel");
  other.warmup(at<float>(0x10000), at<float>(0x20000), int64_t{1});
  EXPECT_EQ(tt::worker_counts().compiled, after.compiled + 3);
}

// A worker idle for longer than the pool lets it ends; the next jobs start new ones.
TEST_F(ParallelTuning, IdleWorkersEnd) {
  set_mode(kModes[1]);
  fresh_cache();
  te::JitFunction k("te_worker_kernels", "worker_plain_kernel");
  tt::set_worker_idle_seconds(0.2);
  struct Restore {
    ~Restore() { tt::set_worker_idle_seconds(30); }
  } restore;
  k.warmup(at<float>(0x10000), at<float>(0x20000), int64_t{1000});
  EXPECT_GT(tt::worker_counts().running, 0);
  for (int i = 0; i < 200 && tt::worker_counts().running != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(tt::worker_counts().running, 0);
  const long started = tt::worker_counts().started;
  fresh_cache();
  k.warmup(at<float>(0x10000), at<float>(0x20000), int64_t{1024});
  EXPECT_GT(tt::worker_counts().started, started);
}

// prepare_tuning(true) returns once what a first tuning imports is imported (here, compile-only,
// Triton's driver cannot start: that is left to a tuning); a second call starts nothing again and
// returns too.
TEST_F(ParallelTuning, PrepareTuningWaitsForItsImport) {
  te_test::run("import sys\nsys.modules.pop('triton.testing', None)");
  te::prepare_tuning(true);
  EXPECT_EQ(te_test::repr_of("'triton.testing' in sys.modules and 'torch' in sys.modules"), "True");
  te_test::run("sys.modules.pop('triton.testing', None)");
  te::prepare_tuning(true);
  EXPECT_EQ(te_test::repr_of("'triton.testing' in sys.modules"), "False");
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
