// Faults: a compile that raises while other threads wait for it, a KeyboardInterrupt during a
// compile, a module that raises on import, and on a GPU a scratch allocator that fails and a
// cubin the driver cannot load. Each gives a typed error, leaks nothing (resident memory over
// many repeats; LeakSanitizer at exit in the sanitizer build), caches nothing, and the next
// good call works. The process exiting while a thread compiles is probe_exit.cc.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "resources.h"
#include "test_support.h"
#include "testing/testing.h"

#ifdef TE_HAVE_CUDART
#include <cuda_runtime_api.h>
#include <triton_embed/allocator.h>
#endif

namespace te = triton_embed;

namespace {

template <class T>
T* at(uint64_t addr) {
  return reinterpret_cast<T*>(addr);
}

// What a call gave: the kernel, or the exception's exact type and message.
struct Outcome {
  const te::CompiledKernel* kernel = nullptr;
  const std::type_info* type = nullptr;
  std::string what;
};

template <class F>
Outcome outcome_of(F&& f) {
  Outcome o;
  try {
    o.kernel = &f();
  } catch (const std::exception& e) {
    o.type = &typeid(e);
    o.what = e.what();
  }
  return o;
}

// A TAG no earlier process used, so gated_kernel's compile misses Triton's disk cache and
// reaches fault_point (which runs only while Triton generates the code).
int64_t fresh_tag() {
  static std::atomic<int64_t> next{[] {
    std::random_device rd;
    const int64_t r = (static_cast<int64_t>(rd()) << 21) ^
                      std::chrono::steady_clock::now().time_since_epoch().count();
    return (r & ((int64_t{1} << 50) - 1)) << 2;
  }()};
  return next.fetch_add(1);
}

// Sets te_fault_kernels' mode, resets its count of compiles that reached the fault point,
// and opens or closes its gate.
void set_fault(const std::string& mode, bool gate_open) {
  te_test::Gil gil;
  te_test::exec("import te_fault_kernels as _tf\n_tf.mode = '" + mode + "'\n_tf.entered = 0\n" +
                (gate_open ? "_tf.gate.set()\n" : "_tf.gate.clear()\n"));
}

long fault_entered() {
  te_test::Gil gil;
  return te_test::eval("_tf.entered").cast<long>();
}

void open_gate() {
  te_test::Gil gil;
  te_test::exec("_tf.gate.set()\n");
}

// Resident memory once Python's garbage (tracebacks hold reference cycles) is collected.
int64_t settled_rss() {
  {
    te_test::Gil gil;
    te_test::exec("import gc\ngc.collect()\n");
  }
  return te_test::rss_bytes();
}

std::string gated_signature(int64_t tag, int n) {
  return "gated_kernel(out_ptr: *i32 D, n: i32" + std::string(n % 16 == 0 ? " D" : "") +
         ", TAG: constexpr = " + std::to_string(tag) + ", BLOCK: constexpr = 128)";
}

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    te::set_target(te::Target::parse("cuda:90"));
    set_fault("", true);
  }
  void TearDown() override { set_fault("", true); }
  // Repeats (after a warm-up) that a leak check makes; fewer under a sanitizer.
  static int repeats(int n) { return te_test::kSanitized ? 3 : n; }
};

TEST_F(Faults, ConcurrentWaitersOfAFailingCompileAllGetItsCompileError) {
  constexpr int kThreads = 8;
  te::JitFunction gated("te_fault_kernels", "gated_kernel");
  const int64_t tag = fresh_tag();
  const auto compile = [&]() -> const te::CompiledKernel& {
    return gated.compile(at<int32_t>(0x10000), 1000, tag, 128);
  };
  set_fault("raise", /*gate_open=*/false);
  const long compiles = te::detail::testing::compile_count();
  const size_t cached = te::detail::testing::cache_size(gated);  // other TAGs' entries
  std::vector<Outcome> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { got[t] = outcome_of(compile); });
  }
  // One thread compiles and stops at the gate; the others wait for its compile.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!(fault_entered() == 1 && te::detail::testing::compile_waiters(gated) == kThreads - 1) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const long entered = fault_entered();
  const int waiters = te::detail::testing::compile_waiters(gated);
  open_gate();
  for (auto& th : threads) th.join();
  ASSERT_EQ(entered, 1);
  ASSERT_EQ(waiters, kThreads - 1);

  EXPECT_EQ(te::detail::testing::compile_count(), compiles + 1);  // one compile for all
  const std::string prefix = "Triton failed to compile te_fault_kernels.gated_kernel as " +
                             gated_signature(tag, 1000) + " for cuda:90:\nCompilationError: ";
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(got[t].kernel, nullptr) << t;
    ASSERT_NE(got[t].type, nullptr) << t;
    EXPECT_EQ(*got[t].type, typeid(te::CompileError)) << t << ": " << got[t].type->name();
    EXPECT_EQ(got[t].what, got[0].what) << t;
  }
  const std::string suffix = "\nte_fault_kernels: injected compile failure";
  EXPECT_EQ(got[0].what.rfind(prefix, 0), 0u) << got[0].what;
  ASSERT_GT(got[0].what.size(), suffix.size());
  EXPECT_EQ(got[0].what.substr(got[0].what.size() - suffix.size()), suffix) << got[0].what;
  EXPECT_EQ(fault_entered(), 1);

  // The failure is not cached: the next call compiles again, and fails again.
  EXPECT_EQ(te::detail::testing::cache_size(gated), cached);
  const Outcome again = outcome_of(compile);
  ASSERT_NE(again.type, nullptr);
  EXPECT_EQ(*again.type, typeid(te::CompileError));
  EXPECT_EQ(again.what, got[0].what);
  EXPECT_EQ(te::detail::testing::compile_count(), compiles + 2);
  EXPECT_EQ(te::detail::testing::cache_size(gated), cached);

  // Once the fault is gone the same key compiles, once, and is cached.
  set_fault("", true);
  const te::CompiledKernel& k = compile();
  EXPECT_EQ(k.name(), "gated_kernel");
  EXPECT_EQ(k.signature(), gated_signature(tag, 1000));
  EXPECT_EQ(&compile(), &k);
  EXPECT_EQ(te::detail::testing::compile_count(), compiles + 3);
  EXPECT_EQ(te::detail::testing::cache_size(gated), cached + 1);
}

TEST_F(Faults, FailedCompilesLeakNothing) {
  // Triton itself leaks on a failed compile (the partly built MLIR module, ~25 KB; see
  // tests/sanitizers/lsan.supp), so the same failing compile through Python's own warmup is
  // the baseline: through triton_embed it may cost no more than that, within 1 MiB.
  te::JitFunction gated("te_fault_kernels", "gated_kernel");
  const int64_t tag = fresh_tag();
  const size_t cached = te::detail::testing::cache_size(gated);  // other TAGs' entries
  set_fault("raise", true);
  int cpp_failures = 0;
  const auto fail_in_cpp = [&] {
    try {
      gated.compile(at<int32_t>(0x10000), 1000, tag, 128);
    } catch (const te::CompileError&) {
      ++cpp_failures;
    }
  };
  const auto fail_in_python = [&](int times) {
    te_test::Gil gil;
    te_test::install_python_helpers();
    return pybind11::module_::import("te_helpers")
        .attr("warmup_failures")(
            "te_fault_kernels", "gated_kernel",
            te_test::eval("(P(0x10000, 'int32'), 1000, " + std::to_string(tag) + ", 128)"),
            pybind11::dict(), times)
        .cast<int>();
  };
  for (int i = 0; i < 10; ++i) fail_in_cpp();  // warm-up: Triton's and Python's caches fill
  EXPECT_EQ(fail_in_python(10), 10);
  const int n = repeats(200);
  const int64_t start = settled_rss();
  EXPECT_EQ(fail_in_python(n), n);
  const int64_t after_python = settled_rss();
  for (int i = 0; i < n; ++i) fail_in_cpp();
  const int64_t after_cpp = settled_rss();
  EXPECT_EQ(cpp_failures, 10 + n);
  EXPECT_EQ(fault_entered(), 2 * (10 + n));  // every call compiled (nothing cached)
  EXPECT_EQ(te::detail::testing::cache_size(gated), cached);
  if (!te_test::kSanitized) {
    EXPECT_LE(after_cpp - after_python, after_python - start + te_test::kMiB)
        << n << " failed compiles: resident memory grew by " << (after_cpp - after_python)
        << " bytes through triton_embed, by " << (after_python - start)
        << " through Python's warmup";
  }
  set_fault("", true);
  EXPECT_EQ(gated.compile(at<int32_t>(0x10000), 1000, tag, 128).name(), "gated_kernel");
}

TEST_F(Faults, KeyboardInterruptDuringACompileIsAPythonError) {
  te::JitFunction gated("te_fault_kernels", "gated_kernel");
  const int64_t tag = fresh_tag();
  const auto compile = [&]() -> const te::CompiledKernel& {
    return gated.compile(at<int32_t>(0x10000), 1000, tag, 128);
  };
  const std::string where = "compiling te_fault_kernels.gated_kernel as " +
                            gated_signature(tag, 1000) + " for cuda:90 was interrupted by ";
  const long compiles = te::detail::testing::compile_count();
  const size_t cached = te::detail::testing::cache_size(gated);  // other TAGs' entries

  // Raised by the user's code that Triton runs while compiling, on another thread.
  set_fault("keyboard", true);
  Outcome raised;
  std::thread([&] { raised = outcome_of(compile); }).join();
  ASSERT_NE(raised.type, nullptr);
  EXPECT_EQ(*raised.type, typeid(te::PythonError)) << raised.type->name();
  EXPECT_EQ(raised.what, where +
                             "KeyboardInterrupt: te_fault_kernels: injected interrupt; "
                             "nothing was cached, the next call compiles again");
  EXPECT_EQ(te::detail::testing::cache_size(gated), cached);

  // Ctrl-C's path: the main thread (this one) compiles and is interrupted through Python's
  // SIGINT handler, which the test installs (the embedded interpreter leaves SIGINT to the
  // program).
  {
    te_test::Gil gil;
    te_test::exec(
        "import signal as _sig\n"
        "_te_old_sigint = _sig.signal(_sig.SIGINT, _sig.default_int_handler)\n");
  }
  set_fault("interrupt", true);
  const Outcome interrupted = outcome_of(compile);
  {
    te_test::Gil gil;
    te_test::exec("_sig.signal(_sig.SIGINT, _te_old_sigint)\n");
  }
  ASSERT_NE(interrupted.type, nullptr);
  EXPECT_EQ(*interrupted.type, typeid(te::PythonError)) << interrupted.type->name();
  EXPECT_EQ(interrupted.what,
            where + "KeyboardInterrupt; nothing was cached, the next call compiles again");
  EXPECT_EQ(te::detail::testing::cache_size(gated), cached);
  EXPECT_EQ(te::detail::testing::compile_count(), compiles + 2);

  // The library and Python carry on: the same key compiles, and is cached.
  set_fault("", true);
  const te::CompiledKernel& k = compile();
  EXPECT_EQ(k.signature(), gated_signature(tag, 1000));
  EXPECT_EQ(&compile(), &k);
  EXPECT_EQ(te::detail::testing::compile_count(), compiles + 3);
  EXPECT_EQ(te::detail::testing::cache_size(gated), cached + 1);
  te::JitFunction add("pykernels.vector", "add_kernel");
  EXPECT_EQ(add.with_options(te::Options().num_warps(1))
                .compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 4096, 1024)
                .num_warps(),
            1);
}

TEST_F(Faults, ImportFailureIsRetriedAndLeaksNothing) {
  const auto load = [](const char* module, const char* kernel) {
    Outcome o;
    try {
      te::JitFunction(module, kernel);
    } catch (const std::exception& e) {
      o.type = &typeid(e);
      o.what = e.what();
    }
    return o;
  };
  // Every load imports again (a failed import is not cached, by Python or by us) and raises
  // again, with the traceback.
  const Outcome first = load("te_raises_on_import", "k");
  ASSERT_NE(first.type, nullptr);
  EXPECT_EQ(*first.type, typeid(te::PythonError)) << first.type->name();
  EXPECT_EQ(first.what.rfind("cannot load kernel te_raises_on_import.k: importing or reading it "
                             "raised\nTraceback (most recent call last):",
                             0),
            0u)
      << first.what;
  EXPECT_NE(first.what.find("RuntimeError: te_raises_on_import: this module refuses to import"),
            std::string::npos)
      << first.what;
  const Outcome second = load("te_raises_on_import", "k");
  ASSERT_NE(second.type, nullptr);
  EXPECT_EQ(*second.type, typeid(te::PythonError));
  EXPECT_EQ(second.what, first.what);

  for (int i = 0; i < 20; ++i) load("te_raises_on_import", "k");  // warm-up
  const int64_t before = settled_rss();
  const int n = repeats(300);
  int failures = 0;
  for (int i = 0; i < n; ++i) failures += load("te_raises_on_import", "k").what == first.what;
  const int64_t after = settled_rss();
  EXPECT_EQ(failures, n);
  if (!te_test::kSanitized) {
    EXPECT_LE(after - before, te_test::kMiB) << "resident memory grew by " << (after - before)
                                             << " bytes over " << n << " failed imports";
  }

  // A module that fails once imports when the fault is gone: its kernel loads and compiles.
  {
    te_test::Gil gil;
    te_test::exec("import sys\nsys._te_fail_import = True\n");
  }
  const Outcome flaky = load("te_flaky_import", "flaky_kernel");
  {
    te_test::Gil gil;
    te_test::exec("del sys._te_fail_import\n");
  }
  ASSERT_NE(flaky.type, nullptr);
  EXPECT_EQ(*flaky.type, typeid(te::PythonError));
  EXPECT_NE(flaky.what.find("RuntimeError: te_flaky_import: refusing to import while "
                            "sys._te_fail_import is set"),
            std::string::npos)
      << flaky.what;
  te::JitFunction ok("te_flaky_import", "flaky_kernel");
  EXPECT_EQ(ok.signature(), "flaky_kernel(out_ptr, n, BLOCK: constexpr)");
  EXPECT_EQ(ok.compile(at<int32_t>(0x10000), 100, 64).name(), "flaky_kernel");
}

#ifdef TE_HAVE_CUDART

#define CUDA_ASSERT(call) ASSERT_EQ((call), cudaSuccess) << #call

// Free device memory (cudaMemGetInfo) of the current device.
int64_t device_free_bytes() {
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return -1;
  return static_cast<int64_t>(free_bytes);
}

class FaultsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!te::cuda_available()) GTEST_SKIP() << "no usable GPU";
    te::set_target(std::nullopt);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    cudaDeviceProp prop;
    ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    arch_ = prop.major * 10 + prop.minor;
    total_ = prop.totalGlobalMem;
  }
  void TearDown() override {
    te::set_scratch_allocator(nullptr);
    te::set_target(std::nullopt);
  }
  static int repeats(int n) { return te_test::kSanitized ? 3 : n; }
  int arch_ = 0;
  size_t total_ = 0;
};

// A scratch allocator that fails: it throws, or (breaking its contract) returns 0.
class FailingAllocator : public te::ScratchAllocator {
 public:
  explicit FailingAllocator(bool throws) : throws_(throws) {}
  uint64_t allocate(size_t bytes, size_t, te::Stream) override {
    allocations.fetch_add(1);
    last_bytes = bytes;
    if (throws_) throw te::OutOfResourcesError("test pool: out of scratch memory");
    return 0;
  }
  void release(uint64_t, size_t, te::Stream) noexcept override { releases.fetch_add(1); }
  std::atomic<int> allocations{0}, releases{0};
  size_t last_bytes = 0;

 private:
  bool throws_;
};

TEST_F(FaultsGpu, ScratchAllocationFailures) {
  if (arch_ < 90)
    GTEST_SKIP() << "the kernel that needs global scratch (tensor descriptors) needs sm90+";
  const int M = 128, N = 128, B = 32;
  std::vector<float> h(M * N);
  for (int i = 0; i < M * N; ++i) h[i] = static_cast<float>(i % 1000);
  float *src = nullptr, *dst = nullptr;
  CUDA_ASSERT(cudaMalloc(reinterpret_cast<void**>(&src), M * N * sizeof(float)));
  CUDA_ASSERT(cudaMalloc(reinterpret_cast<void**>(&dst), M * N * sizeof(float)));
  CUDA_ASSERT(cudaMemcpy(src, h.data(), M * N * sizeof(float), cudaMemcpyHostToDevice));
  te::JitFunction copy("te_gpu_kernels", "tma_copy_kernel");
  const te::CompiledKernel& k = copy.compile(src, dst, M, N, B, B);
  ASSERT_GT(k.global_scratch_size(), 0u);
  const te::Grid grid(M / B, N / B);
  const size_t bytes = (M / B) * (N / B) * k.global_scratch_size();
  const auto check_copy = [&](bool copied) {
    std::vector<float> out(M * N);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(out.data(), dst, M * N * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int i = 0; i < M * N; ++i) ASSERT_EQ(out[i], copied ? 2 * h[i] : 0.f) << i;
  };
  copy.launch(grid, nullptr, src, dst, M, N, B, B);  // loads the kernel (warm-up)
  check_copy(true);

  auto throwing = std::make_shared<FailingAllocator>(true);
  auto null = std::make_shared<FailingAllocator>(false);
  const std::string null_message =
      "launching te_gpu_kernels.tma_copy_kernel: the global scratch "
      "allocator returned a null address for " +
      std::to_string(bytes) + " bytes; an allocator that cannot allocate must throw";
  int wrong = 0;
  const auto fail_both = [&] {
    te::set_scratch_allocator(throwing);
    try {
      copy.launch(grid, nullptr, src, dst, M, N, B, B);
      ++wrong;
    } catch (const te::OutOfResourcesError& e) {
      wrong += std::string(e.what()) != "test pool: out of scratch memory";
    }
    te::set_scratch_allocator(null);
    try {
      copy.launch(grid, nullptr, src, dst, M, N, B, B);
      ++wrong;
    } catch (const te::OutOfResourcesError& e) {
      wrong += std::string(e.what()) != null_message;
    }
  };
  CUDA_ASSERT(cudaMemset(dst, 0, M * N * sizeof(float)));
  for (int i = 0; i < 10; ++i) fail_both();  // warm-up
  CUDA_ASSERT(cudaDeviceSynchronize());
  const int64_t rss_before = te_test::rss_bytes(), dev_before = device_free_bytes();
  const int n = repeats(500);
  for (int i = 0; i < n; ++i) fail_both();
  CUDA_ASSERT(cudaDeviceSynchronize());
  const int64_t rss_after = te_test::rss_bytes(), dev_after = device_free_bytes();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(throwing->allocations.load(), 10 + n);
  EXPECT_EQ(null->allocations.load(), 10 + n);
  EXPECT_EQ(throwing->last_bytes, bytes);
  EXPECT_EQ(throwing->releases.load(), 0);  // nothing allocated, nothing released
  EXPECT_EQ(null->releases.load(), 0);
  check_copy(false);  // no failed launch reached the GPU
  EXPECT_EQ(dev_after, dev_before);
  if (!te_test::kSanitized) EXPECT_LE(rss_after - rss_before, te_test::kMiB);

  // The default (stream-ordered) allocator asked for twice the device's memory: a CudaError
  // from cuMemAllocAsync, and nothing launched.
  te::set_scratch_allocator(nullptr);
  const uint64_t programs = 2 * total_ / k.global_scratch_size() + 1;
  const int64_t gx = static_cast<int64_t>(std::min<uint64_t>(programs, 0x7FFFFFFF));
  const int64_t gy = static_cast<int64_t>((programs + gx - 1) / gx);
  ASSERT_LE(gy, 65535);
  try {
    copy.launch(te::Grid(gx, gy), nullptr, src, dst, M, N, B, B);
    FAIL() << "expected CudaError";
  } catch (const te::CudaError& e) {
    EXPECT_EQ(typeid(e), typeid(te::CudaError));
    EXPECT_EQ(e.call(), "cuMemAllocAsync");
    EXPECT_EQ(e.name(), "CUDA_ERROR_OUT_OF_MEMORY");
    EXPECT_EQ(e.code(), 2);
    EXPECT_EQ(
        std::string(e.what()).rfind("allocating kernel scratch memory: cuMemAllocAsync failed "
                                    "with CUDA_ERROR_OUT_OF_MEMORY (2): ",
                                    0),
        0u)
        << e.what();
  }
  check_copy(false);

  // The next good launch works.
  copy.launch(grid, nullptr, src, dst, M, N, B, B);
  check_copy(true);
  CUDA_ASSERT(cudaFree(src));
  CUDA_ASSERT(cudaFree(dst));
}

TEST_F(FaultsGpu, ModuleLoadFailureIsACudaError) {
  // A cubin for another architecture (a real one, from Triton): the driver refuses to load
  // it. Same major version would load (sm_80 code runs on sm_86), so pick another major.
  const int other = arch_ / 10 == 9 ? 80 : 90;
  const int n = 4096;
  float* buf = nullptr;
  CUDA_ASSERT(cudaMalloc(reinterpret_cast<void**>(&buf), 3 * n * sizeof(float)));
  float *x = buf, *y = buf + n, *out = buf + 2 * n;
  CUDA_ASSERT(cudaMemset(buf, 0, 3 * n * sizeof(float)));
  std::vector<float> ones(n, 1.0f);
  CUDA_ASSERT(cudaMemcpy(x, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_ASSERT(cudaMemcpy(y, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  te::JitFunction add =
      te::JitFunction("pykernels.vector", "add_kernel").with_options(te::Options().num_warps(2));
  te::set_target(te::Target::parse("cuda:" + std::to_string(other)));
  const std::string hash = add.compile(x, y, out, n, 256).hash();
  const std::string prefix = "loading pykernels.vector.add_kernel (hash " + hash +
                             "): cuModuleLoadData failed with CUDA_ERROR_NO_BINARY_FOR_GPU (209): ";
  int wrong = 0;
  const auto fail_once = [&] {
    try {
      add.launch({n / 256}, nullptr, x, y, out, n, 256);
      ++wrong;
    } catch (const te::CudaError& e) {
      wrong += typeid(e) != typeid(te::CudaError) || e.call() != "cuModuleLoadData" ||
               e.code() != 209 || e.name() != "CUDA_ERROR_NO_BINARY_FOR_GPU" ||
               std::string(e.what()).rfind(prefix, 0) != 0;
    }
  };
  try {
    add.launch({n / 256}, nullptr, x, y, out, n, 256);
    FAIL() << "expected CudaError";
  } catch (const te::CudaError& e) {
    EXPECT_EQ(e.call(), "cuModuleLoadData");
    EXPECT_EQ(e.name(), "CUDA_ERROR_NO_BINARY_FOR_GPU");
    EXPECT_EQ(e.code(), 209);
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
  for (int i = 0; i < 10; ++i) fail_once();  // warm-up
  CUDA_ASSERT(cudaDeviceSynchronize());
  const int64_t rss_before = te_test::rss_bytes(), dev_before = device_free_bytes();
  const int reps = repeats(300);
  for (int i = 0; i < reps; ++i) fail_once();  // each one tries to load again
  CUDA_ASSERT(cudaDeviceSynchronize());
  const int64_t rss_after = te_test::rss_bytes(), dev_after = device_free_bytes();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(dev_after, dev_before);
  if (!te_test::kSanitized) EXPECT_LE(rss_after - rss_before, te_test::kMiB);

  // The device's own target: the next launch loads and runs.
  te::set_target(std::nullopt);
  add.launch({n / 256}, nullptr, x, y, out, n, 256);
  CUDA_ASSERT(cudaDeviceSynchronize());
  std::vector<float> got(n);
  CUDA_ASSERT(cudaMemcpy(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f) << i;
  CUDA_ASSERT(cudaFree(buf));
}

#endif  // TE_HAVE_CUDART

}  // namespace
