// A long-running server that reloads its kernels (issue 40): a runtime-only program unloads and
// loads a kernel bundle 2000 times (TRITON_EMBED_RELOAD_CYCLES) while four threads launch from
// it, and its memory stays flat: at most 2 MiB of growth after the first 100 cycles, resident
// memory and, on a GPU, device memory. Every launch that finds a bundle loaded gets its exact
// kernel and arguments; a launch in the moment between an unload and the next load is refused
// (NotInBundleError) as a program without bundles refuses it. After the threads stop, one more
// unload frees everything retired (core/reclaim.h).
//   ReloadSoak.FourThreadsLaunchWhileBundlesReload   CPU: dry runs (compile-only, cuda:90)
//   ReloadSoakGpu.FourThreadsLaunchWhileBundlesReload  GPU: real launches on four streams
//   ReloadGraph.AGraphCapturedOnDevice1OutlivesItsBundle  GPU: a CUDA graph captured on device
//       1 (device 0 on a one-GPU machine) from the bundle replays its kernel after the bundle is
//       unloaded, and its entry is freed (module unloaded) once the graph is destroyed
// Under a sanitizer or compute-sanitizer the cycles run and are checked, the memory is not
// measured (their allocators and tools keep memory of their own).

#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/error.h>
#include <triton_embed/jit.h>
#include <triton_embed/runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bundle_calls.h"
#include "core/reclaim.h"
#include "resources.h"
#include "testing/testing.h"

#ifdef TE_HAVE_CUDART
#include <cuda_runtime_api.h>
#endif

namespace te = triton_embed;

namespace {

constexpr int kThreads = 4;
constexpr int64_t kMiB = 1 << 20;

int cycles() {
  const char* v = std::getenv("TRITON_EMBED_RELOAD_CYCLES");
  return v != nullptr && *v != '\0' ? std::atoi(v) : 2000;
}

bool measure_memory() { return !te_test::kSanitized && !te_test::under_cuda_tool(); }

// What a soak measures at a point: resident memory and device memory in use (bytes).
struct Memory {
  int64_t host = 0, device = 0;
};

// The launching threads' counts: each thread's launches (its own counter, so that the main
// thread can wait for every thread), and the wrong results and refused launches of all.
struct Counts {
  std::atomic<long> per_thread[kThreads] = {};
  std::atomic<long> refused{0}, wrong{0};
  long launched() const {
    long n = 0;
    for (const auto& c : per_thread) n += c.load();
    return n;
  }
};

// The main thread's side of a soak: `cycles()` unloads and loads of the bundle; after each load
// it waits until every thread has launched from the bundle (so that each cycle serves launches
// on all four threads, and unloads while they launch). The memory is read (by `read`) after
// cycle 100 and after the last.
struct Reloads {
  Memory at_100, at_end;
  template <class F>
  void run(const std::string& bundle, const Counts& counts, F read) {
    const int n = cycles();
    for (int c = 1; c <= n; ++c) {
      te::unload_bundles();
      te::load_bundle(bundle);
      for (int t = 0; t < kThreads; ++t) {
        const long before = counts.per_thread[t].load();
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (counts.per_thread[t].load() == before) {
          ASSERT_LT(std::chrono::steady_clock::now(), until) << "thread " << t << " launched "
                                                             << "nothing in cycle " << c;
          std::this_thread::yield();
        }
      }
      if (c == std::min(100, n)) at_100 = read();  // a short run (a slow tool) measures no growth
      if (c == n) at_end = read();
    }
  }
  int64_t host_growth() const { return at_end.host - at_100.host; }
  int64_t device_growth() const { return at_end.device - at_100.device; }
};

// After the threads stopped: one more unload frees every batch, entry and table retired.
void expect_all_freed(size_t freed_before) {
  te::unload_bundles();
  const te::detail::ReclaimCounts c = te::detail::reclaim_counts();
  EXPECT_EQ(c.batches, 0u);
  EXPECT_EQ(c.objects, 0u);
  EXPECT_EQ(c.graph_entries, 0u);
  // Each cycle forgot at least the two kernels' entries and tables.
  EXPECT_GE(c.freed - freed_before, static_cast<size_t>(cycles()) * 2);
}

// How many values a dry run packed (a miss returns -n - 1).
int packed(int r) { return r < 0 ? -r - 1 : r; }

TEST(ReloadSoak, FourThreadsLaunchWhileBundlesReload) {
  using te::detail::testing::dry_run;
  struct CompileOnly {  // dry runs need an explicit target; put back whatever happens
    CompileOnly() { te::set_target(te::Target{"cuda", 90, 32}); }
    ~CompileOnly() { te::set_target(std::nullopt); }
  } target;
  te::unload_bundles();
  te::load_bundle(te_bundle::bundle_path());
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const te::JitFunction tuned("te_tune_kernels", "fake_tuned_heur_kernel");
  // What each call packs, once: every launch of the soak must pack the same.
  uint64_t add_slots[8] = {}, tuned_slots[8] = {};
  const int add_n =
      packed(dry_run(add, add_slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 1024));
  const int tuned_n = packed(dry_run(tuned, tuned_slots, te_bundle::kX, te_bundle::kOut, 1000));
  const size_t freed_before = te::detail::reclaim_counts().freed;

  Counts counts;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t slots[8];
      for (long i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        const bool plain = (i + t) % 2 == 0;
        try {
          std::memset(slots, 0, sizeof(slots));
          const int n = packed(
              plain ? dry_run(add, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut, 4096, 1024)
                    : dry_run(tuned, slots, te_bundle::kX, te_bundle::kOut, 1000));
          const int want = plain ? add_n : tuned_n;
          const uint64_t* expected = plain ? add_slots : tuned_slots;
          if (n != want || std::memcmp(slots, expected, want * sizeof(uint64_t)) != 0) {
            counts.wrong.fetch_add(1);
          }
          counts.per_thread[t].fetch_add(1, std::memory_order_relaxed);
        } catch (const te::NotInBundleError&) {
          counts.refused.fetch_add(1, std::memory_order_relaxed);  // between unload and load
        }
        std::this_thread::yield();  // more threads than cores (CI has two): the reloads run too
      }
    });
  }
  Reloads reloads;
  reloads.run(te_bundle::bundle_path(), counts, [] { return Memory{te_test::rss_bytes(), 0}; });
  stop.store(true);
  for (auto& th : threads) th.join();

  EXPECT_EQ(counts.wrong.load(), 0);
  EXPECT_GE(counts.launched(), static_cast<long>(cycles()) * kThreads);
  expect_all_freed(freed_before);
  if (measure_memory()) {
    EXPECT_LE(reloads.host_growth(), 2 * kMiB)
        << "resident memory after cycle 100: " << reloads.at_100.host << " bytes, after cycle "
        << cycles() << ": " << reloads.at_end.host;
  }
  std::printf(
      "reload soak (CPU): %d cycles, %ld launches, %ld refused between unload and load; "
      "resident memory %+lld bytes after cycle 100\n",
      cycles(), counts.launched(), counts.refused.load(),
      static_cast<long long>(reloads.host_growth()));
}

#ifdef TE_HAVE_CUDART

int gpu_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

int64_t device_used() {
  size_t free_mem = 0, total = 0;
  if (cudaMemGetInfo(&free_mem, &total) != cudaSuccess) return -1;
  return static_cast<int64_t>(total - free_mem);
}

constexpr int kN = 4096;

TEST(ReloadSoakGpu, FourThreadsLaunchWhileBundlesReload) {
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  te::unload_bundles();
  te::load_bundle(te_bundle::bundle_path());
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const size_t freed_before = te::detail::reclaim_counts().freed;

  Counts counts;
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cudaSetDevice(0);
      cudaStream_t stream = nullptr;
      float *x = nullptr, *y = nullptr, *out = nullptr;
      cudaStreamCreate(&stream);
      cudaMalloc(reinterpret_cast<void**>(&x), kN * sizeof(float));
      cudaMalloc(reinterpret_cast<void**>(&y), kN * sizeof(float));
      cudaMalloc(reinterpret_cast<void**>(&out), kN * sizeof(float));
      std::vector<float> hx(kN), hy(kN), hout(kN);
      for (int i = 0; i < kN; ++i) {
        hx[i] = static_cast<float>(i + t);
        hy[i] = static_cast<float>(2 * i);
      }
      cudaMemcpy(x, hx.data(), kN * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemcpy(y, hy.data(), kN * sizeof(float), cudaMemcpyHostToDevice);
      ready.fetch_add(1);
      for (long i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        try {
          add.launch(te::Grid{kN / 1024}, stream, x, y, out, kN, 1024);
          counts.per_thread[t].fetch_add(1, std::memory_order_relaxed);
        } catch (const te::NotInBundleError&) {
          counts.refused.fetch_add(1, std::memory_order_relaxed);
        }
        if (i % 64 == 63) {  // the results, now and then
          cudaMemsetAsync(out, 0, kN * sizeof(float), stream);
          bool ok = false;
          while (!ok && !stop.load()) {
            try {
              add.launch(te::Grid{kN / 1024}, stream, x, y, out, kN, 1024);
              ok = true;
            } catch (const te::NotInBundleError&) {
            }
          }
          cudaMemcpyAsync(hout.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost, stream);
          cudaStreamSynchronize(stream);
          for (int j = 0; ok && j < kN; ++j) {
            if (hout[j] != hx[j] + hy[j]) {
              counts.wrong.fetch_add(1);
              break;
            }
          }
        }
      }
      cudaStreamSynchronize(stream);
      cudaFree(x);
      cudaFree(y);
      cudaFree(out);
      cudaStreamDestroy(stream);
    });
  }
  while (ready.load() < kThreads) std::this_thread::yield();
  Reloads reloads;
  reloads.run(te_bundle::bundle_path(), counts, [] {
    return Memory{te_test::rss_bytes(), device_used()};
  });
  stop.store(true);
  for (auto& th : threads) th.join();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  EXPECT_EQ(counts.wrong.load(), 0);
  EXPECT_GE(counts.launched(), static_cast<long>(cycles()) * kThreads);
  expect_all_freed(freed_before);
  EXPECT_GE(reloads.at_end.device, 0);
  if (measure_memory()) {
    EXPECT_LE(reloads.host_growth(), 2 * kMiB)
        << "resident memory after cycle 100: " << reloads.at_100.host << " bytes, at the end "
        << reloads.at_end.host;
  }
  if (!te_test::under_cuda_tool()) {
    EXPECT_LE(reloads.device_growth(), 2 * kMiB)
        << "device memory in use after cycle 100: " << reloads.at_100.device
        << " bytes, at the end " << reloads.at_end.device;
  }
  std::printf(
      "reload soak (GPU): %d cycles, %ld launches, %ld refused between unload and load; "
      "host memory %+lld bytes, device memory %+lld bytes after cycle 100\n",
      cycles(), counts.launched(), counts.refused.load(),
      static_cast<long long>(reloads.host_growth()),
      static_cast<long long>(reloads.device_growth()));
}

// On device 1 (the last device of a one-GPU machine, so that one GPU runs it too).
TEST(ReloadGraph, AGraphCapturedOnDevice1OutlivesItsBundle) {
  const int n = gpu_count();
  if (n == 0) GTEST_SKIP() << "no GPU";
  const int device = n >= 2 ? 1 : 0;
  std::printf("capturing on device %d of %d\n", device, n);
  ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
  te::unload_bundles();
  te::load_bundle(te_bundle::bundle_path());
  const te::JitFunction add("pykernels.vector", "add_kernel");
  float *x = nullptr, *y = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&y), kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), kN * sizeof(float)), cudaSuccess);
  std::vector<float> hx(kN), hy(kN), hout(kN);
  for (int i = 0; i < kN; ++i) {
    hx[i] = static_cast<float>(i);
    hy[i] = static_cast<float>(3 * i + 1);
  }
  ASSERT_EQ(cudaMemcpy(x, hx.data(), kN * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(y, hy.data(), kN * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  // prepare(): loaded on the device, so that the capture loads nothing.
  add.prepare(te::Grid{kN / 1024}, x, y, out, kN, 1024);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  add.launch(te::Grid{kN / 1024}, stream, x, y, out, kN, 1024);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);

  const size_t freed_before = te::detail::reclaim_counts().freed;
  te::unload_bundles();  // the entry is forgotten; the graph still holds it
  EXPECT_EQ(te::detail::reclaim_counts().graph_entries, 1u);
  EXPECT_THROW(add.launch(te::Grid{kN / 1024}, stream, x, y, out, kN, 1024),
               te::NotInBundleError);  // nothing serves a launch now

  ASSERT_EQ(cudaMemset(out, 0, kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hout.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(hout[i], hx[i] + hy[i]) << i;

  // The graph and its executable graph destroyed: CUDA lets go of the entry (on a thread of
  // its own, soon after), and the next reclaim frees it and unloads its module.
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (te::detail::reclaim_counts().graph_entries != 0 &&
         std::chrono::steady_clock::now() < until) {
    te::detail::reclaim();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(te::detail::reclaim_counts().graph_entries, 0u);
  EXPECT_GT(te::detail::reclaim_counts().freed, freed_before);

  // Loaded again, the bundle serves device 1 again.
  te::load_bundle(te_bundle::bundle_path());
  ASSERT_EQ(cudaMemset(out, 0, kN * sizeof(float)), cudaSuccess);
  add.launch(te::Grid{kN / 1024}, stream, x, y, out, kN, 1024);
  ASSERT_EQ(cudaMemcpy(hout.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(hout[i], hx[i] + hy[i]) << i;
  cudaStreamDestroy(stream);
  cudaFree(x);
  cudaFree(y);
  cudaFree(out);
  cudaSetDevice(0);
}

#endif  // TE_HAVE_CUDART

}  // namespace
