// Soak: eight threads make millions of calls over mixed kernels and specialisations with bad
// calls mixed in. Every good call's result and every bad call's exact exception are checked,
// and after a warm-up the process's resident memory (and on a GPU its device memory) ends
// within 1 MiB of where it started.
//   Soak.EightThreadsMixGoodAndBadHostPathCalls   CPU: the launch host path up to the driver
//       call (dry run, cuda:90); TRITON_EMBED_SOAK_CALLS calls (default 20,000,000)
//   SoakGpu.EightThreadsMixGoodAndBadLaunches     GPU: real launches on each thread's own
//       stream; TRITON_EMBED_SOAK_LAUNCHES launches (default 10,000,000)
// Under a sanitizer the defaults are 100 times smaller and memory is not measured.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "resources.h"
#include "test_support.h"
#include "testing/testing.h"

#ifdef TE_HAVE_CUDART
#include <cuda_runtime_api.h>
#endif

namespace te = triton_embed;
using namespace triton_embed::literals;

namespace {

constexpr int kThreads = 8;

template <class T>
T* at(uint64_t addr) {
  return reinterpret_cast<T*>(addr);
}

int64_t count_from_env(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  const int64_t n = v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
  return te_test::kSanitized && (v == nullptr || *v == '\0') ? n / 100 : n;
}

// Threads meet here between the phases (warm-up, measured run), so the main thread can
// measure memory while they are idle but alive (their stacks and malloc arenas stay).
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const int gen = gen_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_, waiting_ = 0, gen_ = 0;
};

// A call and what it must give: the packed arguments of a cache hit, or an exception of
// exactly this type and message.
struct Case {
  std::string name;
  std::function<int(uint64_t*)> call;
  bool bad = false;
  int np = 0;
  uint64_t slots[32] = {};
  const std::type_info* type = nullptr;
  std::string what;
};

// Runs the case once, single-threaded, to record what it gives.
void record(Case& c) {
  uint64_t slots[32] = {};
  try {
    c.call(slots);           // may compile
    c.np = c.call(c.slots);  // a hit now
    c.bad = false;
  } catch (const std::exception& e) {
    c.bad = true;
    c.type = &typeid(e);
    c.what = e.what();
  }
}

// Empty when the call gave what `c` recorded, else what it gave.
std::string check(const Case& c) {
  uint64_t slots[32] = {};
  try {
    const int n = c.call(slots);
    if (c.bad) return c.name + ": no exception";
    if (n != c.np)
      return c.name + ": returned " + std::to_string(n) + ", not " + std::to_string(c.np);
    if (std::memcmp(slots, c.slots, sizeof(uint64_t) * static_cast<size_t>(n)) != 0) {
      return c.name + ": other packed values";
    }
    return "";
  } catch (const std::exception& e) {
    if (!c.bad) return c.name + ": threw " + e.what();
    if (typeid(e) != *c.type) return c.name + ": threw " + typeid(e).name();
    if (c.what != e.what()) return c.name + ": message " + e.what();
    return "";
  }
}

TEST(Soak, EightThreadsMixGoodAndBadHostPathCalls) {
  te::set_target(te::Target::parse("cuda:90"));
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const te::JitFunction add2 = add.with_options(te::Options().num_warps(2));
  const te::JitFunction axpy("pykernels.vector", "axpy_kernel");
  const te::JitFunction ann("te_compile_kernels", "annotated_kernel");
  const te::JitFunction tup("te_compile_kernels", "tuple_kernel");
  const te::JitFunction dt("te_compile_kernels", "dtype_kernel");
  const te::JitFunction heur("te_compile_kernels", "heuristic_kernel");
  namespace tt = te::detail::testing;
  const te::Pointer h1(uint64_t{0x40000}, te::DType::fp16), h2(uint64_t{0x50010}, te::DType::fp16);

  std::vector<Case> cases = {
      {"add aligned D",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000),
                            4096, 1024);
       }},
      {"add other addresses",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x11000), at<float>(0x21000), at<float>(0x31000),
                            8192, 1024);
       }},
      {"add misaligned",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x10004), at<float>(0x20000), at<float>(0x30008),
                            1000, 256);
       }},
      {"add n=1",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 1,
                            128);
       }},
      {"add i64 n",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000),
                            int64_t{1} << 33, 256);
       }},
      {"add fp16", [&](uint64_t* s) { return tt::dry_run(add, s, h1, h2, h1, 4096, 512); }},
      {"add num_warps=2",
       [&](uint64_t* s) {
         return tt::dry_run(add2, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000),
                            4096, 1024);
       }},
      {"add named",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000),
                            4096, "BLOCK"_a = 1024);
       }},
      {"axpy default",
       [&](uint64_t* s) {
         return tt::dry_run(axpy, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000),
                            2.5, 4096);
       }},
      {"annotated",
       [&](uint64_t* s) {
         return tt::dry_run(ann, s, at<float>(0x10000), at<float>(0x20000), int64_t{-5}, 0.1, true,
                            128);
       }},
      {"tuple",
       [&](uint64_t* s) {
         return tt::dry_run(tup, s, std::make_tuple(at<float>(0x10000), at<float>(0x20004)),
                            std::make_tuple(64, 1), at<float>(0x30000), 64);
       }},
      {"dtype and string",
       [&](uint64_t* s) {
         return tt::dry_run(dt, s, at<float>(0x10000), h1, 100, te::DType::fp16, "double", 128);
       }},
      {"heuristics",
       [&](uint64_t* s) {
         return tt::dry_run(heur, s, at<float>(0x10000), at<float>(0x20000), 4096);
       }},
      // Bad calls.
      {"wrong count",
       [&](uint64_t* s) { return tt::dry_run(add, s, at<float>(0x10000), at<float>(0x20000)); }},
      {"string for a runtime parameter",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000),
                            "abc", 1024);
       }},
      {"pointer for a constexpr",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 16,
                            at<float>(0x40000));
       }},
      {"2 for u1",
       [&](uint64_t* s) {
         return tt::dry_run(ann, s, at<float>(0x10000), at<float>(0x20000), 10, 0.5, 2, 128);
       }},
      {"fp16 overflow",
       [&](uint64_t* s) {
         return tt::dry_run(ann, s, at<float>(0x10000), at<float>(0x20000), int64_t{5}, 1e6, true,
                            128);
       }},
      {"unknown name",
       [&](uint64_t* s) {
         return tt::dry_run(add, s, at<float>(0x10000), at<float>(0x20000), at<float>(0x30000),
                            4096, "BLOK"_a = 1024);
       }},
      {"heuristics wrong count",
       [&](uint64_t* s) { return tt::dry_run(heur, s, at<float>(0x10000)); }},
  };
  std::vector<const Case*> good, bad;
  for (Case& c : cases) {
    record(c);
    (c.bad ? bad : good).push_back(&c);
  }
  // The recorded outcomes are the ones the tests of each path assert; spot-check them here.
  ASSERT_EQ(good.size(), 13u);
  ASSERT_EQ(bad.size(), 7u);
  for (const Case* c : good) ASSERT_GT(c->np, 0) << c->name;
  EXPECT_EQ(*cases[13].type, typeid(te::TypeError));
  EXPECT_EQ(cases[13].what,
            "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): expected 5 arguments, got 2");
  EXPECT_EQ(*cases[14].type, typeid(te::TypeError));
  EXPECT_EQ(*cases[15].type, typeid(te::TypeError));
  EXPECT_EQ(*cases[16].type, typeid(te::OverflowError));
  EXPECT_EQ(*cases[17].type, typeid(te::OverflowError));
  EXPECT_EQ(*cases[18].type, typeid(te::LookupError));
  EXPECT_EQ(*cases[19].type, typeid(te::TypeError));
  EXPECT_EQ(cases[0].slots[0], 0x10000u);
  EXPECT_EQ(cases[1].slots[0], 0x11000u);
  EXPECT_EQ(cases[1].slots[3] & 0xFFFFFFFFu, 8192u);

  const long compiles = tt::compile_count();
  const int64_t total = count_from_env("TRITON_EMBED_SOAK_CALLS", 20000000);
  const int64_t per_thread = total / kThreads, warmup = std::min<int64_t>(per_thread, 20000);
  Barrier barrier(kThreads + 1);
  std::vector<int64_t> errors(kThreads, 0), bad_calls(kThreads, 0);
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto run = [&](int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const bool is_bad = i % 32 == 31;
          const Case& c = is_bad ? *bad[static_cast<size_t>(i / 32 + t) % bad.size()]
                                 : *good[static_cast<size_t>(i * 5 + t) % good.size()];
          bad_calls[t] += is_bad;
          const std::string e = check(c);
          if (!e.empty() && errors[t]++ == 0) first_error[t] = e;
        }
      };
      run(warmup);
      barrier.wait();  // warmed up
      barrier.wait();  // measured
      run(per_thread);
      barrier.wait();  // done
    });
  }
  barrier.wait();
  const int64_t rss_before = te_test::kSanitized ? 0 : te_test::rss_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  barrier.wait();
  barrier.wait();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t rss_after = te_test::kSanitized ? 0 : te_test::rss_bytes();
  for (auto& th : threads) th.join();

  int64_t all_bad = 0;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], 0) << "thread " << t << ": " << first_error[t];
    all_bad += bad_calls[t];
  }
  std::printf("soak (host path): %lld calls (%lld bad) from %d threads in %.2f s, %.0f calls/s\n",
              static_cast<long long>(per_thread * kThreads), static_cast<long long>(all_bad),
              kThreads, secs, per_thread * kThreads / secs);
  EXPECT_EQ(tt::compile_count(), compiles);  // every good call after the first was a hit
  if (!te_test::kSanitized) {
    EXPECT_LE(rss_after - rss_before, te_test::kMiB)
        << "resident memory grew by " << (rss_after - rss_before) << " bytes";
  }
}

#ifdef TE_HAVE_CUDART

#define CUDA_ASSERT(call) ASSERT_EQ((call), cudaSuccess) << #call

// One kind of launch: out[off:off+n] += inc per launch (an exact accumulator), and nothing
// else in the buffer changes.
struct GpuCase {
  const char* name;
  int kernel;  // 0 add_kernel, 1 axpy_kernel (default BLOCK when block == 0)
  te::DType dtype;
  int elem;  // bytes
  int off;   // elements: 1 makes the pointers misaligned
  int n, block;
  double alpha;  // axpy
  bool options;  // num_warps=2
  double inc;
};

const GpuCase kGpuCases[] = {
    {"add fp32 aligned", 0, te::DType::fp32, 4, 0, 4096, 1024, 0, false, 1},
    {"add fp32 misaligned", 0, te::DType::fp32, 4, 1, 4093, 256, 0, false, 1},
    {"add fp32 n=1", 0, te::DType::fp32, 4, 0, 1, 128, 0, false, 1},
    {"add i32", 0, te::DType::i32, 4, 0, 4096, 256, 0, false, 1},
    {"add i64 misaligned", 0, te::DType::i64, 8, 1, 4093, 1024, 0, false, 1},
    {"add fp64", 0, te::DType::fp64, 8, 0, 4093, 512, 0, false, 1},
    {"axpy fp32 default BLOCK", 1, te::DType::fp32, 4, 0, 4096, 0, 2.0, false, 2},
    {"axpy fp64", 1, te::DType::fp64, 8, 0, 4093, 256, 0.5, false, 0.5},
    {"add fp32 num_warps=2", 0, te::DType::fp32, 4, 0, 4096, 1024, 0, true, 1},
};
constexpr int kGpuCases_n = sizeof(kGpuCases) / sizeof(kGpuCases[0]);
constexpr int kBufElems = 4096 + 1024 + 16;

double element(const std::vector<char>& h, const GpuCase& c, int i) {
  const char* p = h.data() + static_cast<size_t>(i) * c.elem;
  switch (c.dtype) {
    case te::DType::fp32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case te::DType::fp64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case te::DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
  }
}

TEST(SoakGpu, EightThreadsMixGoodAndBadLaunches) {
  if (!te::cuda_available()) GTEST_SKIP() << "no usable GPU";
  te::set_target(std::nullopt);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const te::JitFunction add2 = add.with_options(te::Options().num_warps(2));
  const te::JitFunction axpy("pykernels.vector", "axpy_kernel");
  const te::JitFunction ann("te_compile_kernels", "annotated_kernel");

  // Per thread and case: an accumulator and its input (ones), on the device.
  struct Buffers {
    void* acc = nullptr;
    void* x = nullptr;
  };
  std::vector<std::vector<Buffers>> bufs(kThreads, std::vector<Buffers>(kGpuCases_n));
  for (int t = 0; t < kThreads; ++t) {
    for (int c = 0; c < kGpuCases_n; ++c) {
      const GpuCase& gc = kGpuCases[c];
      const size_t bytes = static_cast<size_t>(kBufElems) * gc.elem;
      CUDA_ASSERT(cudaMalloc(&bufs[t][c].acc, bytes));
      CUDA_ASSERT(cudaMalloc(&bufs[t][c].x, bytes));
      CUDA_ASSERT(cudaMemset(bufs[t][c].acc, 0, bytes));
      std::vector<char> ones(bytes);
      for (int i = 0; i < kBufElems; ++i) {
        char* p = ones.data() + static_cast<size_t>(i) * gc.elem;
        if (gc.dtype == te::DType::fp32) {
          const float v = 1;
          std::memcpy(p, &v, 4);
        }
        if (gc.dtype == te::DType::fp64) {
          const double v = 1;
          std::memcpy(p, &v, 8);
        }
        if (gc.dtype == te::DType::i32) {
          const int32_t v = 1;
          std::memcpy(p, &v, 4);
        }
        if (gc.dtype == te::DType::i64) {
          const int64_t v = 1;
          std::memcpy(p, &v, 8);
        }
      }
      CUDA_ASSERT(cudaMemcpy(bufs[t][c].x, ones.data(), bytes, cudaMemcpyHostToDevice));
    }
  }
  const auto launch = [&](int t, int c, cudaStream_t s) {
    const GpuCase& gc = kGpuCases[c];
    const uint64_t acc =
        reinterpret_cast<uint64_t>(bufs[t][c].acc) + static_cast<uint64_t>(gc.off) * gc.elem;
    const uint64_t x =
        reinterpret_cast<uint64_t>(bufs[t][c].x) + static_cast<uint64_t>(gc.off) * gc.elem;
    const te::Pointer pa(acc, gc.dtype), px(x, gc.dtype);
    const int block = gc.block == 0 ? 1024 : gc.block;
    const te::Grid grid(te::cdiv(gc.n, block));
    if (gc.kernel == 0) {
      (gc.options ? add2 : add).launch(grid, s, px, pa, pa, gc.n, gc.block);
    } else if (gc.block == 0) {
      axpy.launch(grid, s, px, pa, pa, gc.alpha, gc.n);  // BLOCK from its default
    } else {
      axpy.launch(grid, s, px, pa, pa, gc.alpha, gc.n, gc.block);
    }
  };
  // Bad calls: each must throw exactly this type and message (recorded once here).
  float* any = static_cast<float*>(bufs[0][0].acc);
  const std::vector<std::function<void(cudaStream_t)>> bad_calls = {
      [&](cudaStream_t s) { add.launch({1}, s, any, any); },
      [&](cudaStream_t s) { add.launch({1}, s, any, any, any, "abc", 1024); },
      [&](cudaStream_t s) { add.launch({1}, s, any, any, any, 16, any); },
      [&](cudaStream_t s) { add.launch({-1}, s, any, any, any, 4096, 1024); },
      [&](cudaStream_t s) { ann.launch({1}, s, any, any, 10, 0.5, 2, 128); },
  };
  const std::type_info* bad_types[] = {&typeid(te::TypeError), &typeid(te::TypeError),
                                       &typeid(te::TypeError), &typeid(te::ValueError),
                                       &typeid(te::OverflowError)};
  std::vector<std::string> bad_messages;
  for (size_t b = 0; b < bad_calls.size(); ++b) {
    try {
      bad_calls[b](nullptr);
      FAIL() << "bad call " << b << " did not throw";
    } catch (const std::exception& e) {
      ASSERT_EQ(typeid(e), *bad_types[b]) << b << ": " << e.what();
      bad_messages.push_back(e.what());
    }
  }

  const int64_t total = count_from_env("TRITON_EMBED_SOAK_LAUNCHES", 10000000);
  const int64_t per_thread = total / kThreads;
  const int64_t check_every = 100000;
  Barrier barrier(kThreads + 1);
  std::vector<int64_t> errors(kThreads, 0), bad_count(kThreads, 0), checks(kThreads, 0);
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cudaSetDevice(0);
      cudaStream_t s = nullptr;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      std::vector<int64_t> count(kGpuCases_n, 0);
      std::vector<char> host(static_cast<size_t>(kBufElems) * 8);
      const auto fail = [&](const std::string& e) {
        if (errors[t]++ == 0) first_error[t] = e;
      };
      // Every accumulator holds count * inc in [off, off + n) and 0 elsewhere.
      const auto verify = [&] {
        ++checks[t];
        if (cudaStreamSynchronize(s) != cudaSuccess) return fail("cudaStreamSynchronize failed");
        for (int c = 0; c < kGpuCases_n; ++c) {
          const GpuCase& gc = kGpuCases[c];
          if (cudaMemcpy(host.data(), bufs[t][c].acc, static_cast<size_t>(kBufElems) * gc.elem,
                         cudaMemcpyDeviceToHost) != cudaSuccess) {
            return fail("cudaMemcpy failed");
          }
          for (int i = 0; i < kBufElems; ++i) {
            const double want = i >= gc.off && i < gc.off + gc.n ? count[c] * gc.inc : 0.0;
            if (element(host, gc, i) != want) {
              return fail(std::string(gc.name) + ": element " + std::to_string(i) + " is " +
                          std::to_string(element(host, gc, i)) + ", expected " +
                          std::to_string(want) + " after " + std::to_string(count[c]) +
                          " launches");
            }
          }
        }
      };
      const auto run = [&](int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          if (i % 1000 == 999) {
            const size_t b = static_cast<size_t>(i / 1000 + t) % bad_calls.size();
            ++bad_count[t];
            try {
              bad_calls[b](s);
              fail("bad call " + std::to_string(b) + " did not throw");
            } catch (const std::exception& e) {
              if (typeid(e) != *bad_types[b] || bad_messages[b] != e.what()) {
                fail("bad call " + std::to_string(b) + ": " + e.what());
              }
            }
            continue;
          }
          const int c = static_cast<int>((i * 7 + t) % kGpuCases_n);
          try {
            launch(t, c, s);
            ++count[c];
          } catch (const std::exception& e) {
            fail(std::string(kGpuCases[c].name) + ": " + e.what());
          }
          if (i % check_every == check_every - 1) verify();
        }
        verify();
      };
      run(std::min<int64_t>(per_thread, 2000));  // warm-up: compiles and loads
      barrier.wait();
      barrier.wait();
      run(per_thread);
      barrier.wait();
      cudaStreamDestroy(s);
    });
  }
  barrier.wait();
  size_t free_before = 0, free_after = 0, total_mem = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_before, &total_mem), cudaSuccess);  // no ASSERT: threads wait
  const int64_t rss_before = te_test::kSanitized ? 0 : te_test::rss_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  barrier.wait();
  barrier.wait();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(cudaMemGetInfo(&free_after, &total_mem), cudaSuccess);
  const int64_t rss_after = te_test::kSanitized ? 0 : te_test::rss_bytes();
  for (auto& th : threads) th.join();

  int64_t all_bad = 0;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], 0) << "thread " << t << ": " << first_error[t];
    EXPECT_GE(checks[t], 2);
    all_bad += bad_count[t];
  }
  const int64_t launches = per_thread * kThreads - all_bad;
  std::printf(
      "soak (GPU): %lld launches and %lld bad calls from %d threads in %.1f s (%.0f "
      "launches/s); device memory %+lld bytes, resident memory %+lld bytes\n",
      static_cast<long long>(launches), static_cast<long long>(all_bad), kThreads, secs,
      launches / secs, static_cast<long long>(free_before) - static_cast<long long>(free_after),
      static_cast<long long>(rss_after - rss_before));
  const int64_t device_growth =
      static_cast<int64_t>(free_before) - static_cast<int64_t>(free_after);
  EXPECT_LE(device_growth, te_test::kMiB);
  EXPECT_GE(device_growth, -te_test::kMiB);
  if (te_test::under_cuda_tool()) {
    std::printf("a CUDA tool is injected: resident memory not checked\n");
  } else if (!te_test::kSanitized) {
    EXPECT_LE(rss_after - rss_before, te_test::kMiB);
  }
  for (auto& row : bufs) {
    for (Buffers& b : row) {
      cudaFree(b.acc);
      cudaFree(b.x);
    }
  }
}

#endif  // TE_HAVE_CUDART

}  // namespace
