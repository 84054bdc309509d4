// Two GPUs from one program (issue 22): an autotuned matmul tuned on each device, heuristics
// and named-argument launches interleaved, tensor descriptors per device and one descriptor
// moved between devices, device-made descriptors with scratch on both, a config pre-hook
// applied on both, and a CUDA graph captured on the second device after prepare(). One
// thread per device, then each thread alternating devices.
//
// It needs two GPUs and skips, saying so, with fewer. With TE_MULTI_GPU_SAME_DEVICE=1 it runs
// with device 0 as both devices (CTest: test_multi_gpu_same_device): what that still checks
// is the threads' concurrent tuning and launching, every result, and the per-context caches
// under one context.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <triton_embed/jit.h>
#include <triton_embed/named.h>
#include <triton_embed/tensor_descriptor.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device_buffer.h"

namespace te = triton_embed;
using namespace triton_embed::literals;
using te_test::DeviceBuffer;

namespace {

// The two devices the test uses, or none (skip) with why.
struct Devices {
  int d[2] = {0, 1};
  std::string skip;
};

Devices devices() {
  Devices out;
  int n = 0;
  if (!te::cuda_available() || cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    out.skip = "no GPU";
    return out;
  }
  const char* same = std::getenv("TE_MULTI_GPU_SAME_DEVICE");
  if (same != nullptr && std::string(same) == "1") {
    out.d[1] = 0;
    return out;
  }
  if (n < 2) {
    out.skip =
        "needs two GPUs (this machine has one); TE_MULTI_GPU_SAME_DEVICE=1 runs it with "
        "device 0 as both";
  }
  return out;
}

class MultiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = devices();
    if (!dev_.skip.empty()) GTEST_SKIP() << dev_.skip;
  }
  Devices dev_;
};

// c = a @ b with pykernels.matmul's autotuned matmul on the current device; checks c against
// the exact product of the small integers a and b hold. Returns the tuned config.
std::string matmul_on_current_device(int M, int N, int K, int seed) {
  const te_test::IntMatmul ops(M, N, K, seed);
  DeviceBuffer<uint16_t> a(ops.ha.size()), b(ops.hb.size());
  DeviceBuffer<float> c(static_cast<size_t>(M) * N);
  a.upload(ops.ha);
  b.upload(ops.hb);
  static const te::JitFunction mm("pykernels.matmul", "matmul_kernel");
  const te::Pointer pa(a.ptr, te::DType::fp16), pb(b.ptr, te::DType::fp16);
  const auto grid = [&](const te::Meta& m) {
    return te::Grid(te::cdiv(M, m["BLOCK_M"]) * te::cdiv(N, m["BLOCK_N"]));
  };
  mm.launch(grid, nullptr, pa, pb, c.ptr, M, N, K, K, 1, N, 1, N, 1, "ACTIVATION"_a = "");
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::string bad = ops.mismatch(c.download());
  if (!bad.empty()) {
    ADD_FAILURE() << bad;
    return {};
  }
  const te::TuningResult* r =
      mm.tuning_result(pa, pb, c.ptr, M, N, K, K, 1, N, 1, N, 1, "ACTIVATION"_a = "");
  return r != nullptr ? r->best.str : std::string("no tuning result");
}

// out = x * 2 through a heuristic kernel and a named-argument launch of a tuned one.
void heuristics_and_named_on_current_device(int n) {
  std::vector<float> hx(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) hx[i] = static_cast<float>(i % 37) - 18.0f;
  DeviceBuffer<float> x(hx.size()), out(hx.size());
  x.upload(hx);
  static const te::JitFunction heur("te_tune_kernels", "heur_kernel");
  static const te::JitFunction tuned("te_tune_kernels", "tuned_kernel");
  heur.launch({te::cdiv(n, 128)}, nullptr, x.ptr, out.ptr, n, "BLOCK"_a = 128);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> got = out.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * hx[i]) << "heur_kernel " << i;
  const auto grid = [&](const te::Meta& m) { return te::Grid(te::cdiv(n, m["BLOCK"])); };
  tuned.launch(grid, nullptr, x.ptr, out.ptr, "n"_a = n, "ACT"_a = "neg");
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  got = out.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], -2.0f * hx[i]) << "tuned_kernel " << i;
}

// dst = src * 2 through host descriptors whose block shapes the chosen config's pre-hook sets
// (applied in C++), on the current device.
void pre_hook_on_current_device() {
  const int64_t M = 256, N = 128;
  std::vector<float> h(static_cast<size_t>(M * N));
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(static_cast<int>(i % 51) - 25);
  DeviceBuffer<float> src(h.size()), dst(h.size());
  src.upload(h);
  const te::TensorDescriptor ds(src.ptr, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const te::TensorDescriptor dd(dst.ptr, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  static const te::JitFunction k("te_tma_kernels", "tuned_subtile_scale");
  k.launch(
      [&](const te::Meta& m) {
        return te::Grid(te::cdiv(M, m["BLOCK_M"]), te::cdiv(N, m["BLOCK_N"]));
      },
      nullptr, ds, dd, M, N, 2.0);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = dst.download();
  for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(got[i], 2.0f * h[i]) << "pre-hook " << i;
}

// Runs f on device d in a thread of its own, one per device, concurrently; an exception
// from f fails the test.
template <class F>
void on_both(const Devices& dev, F f) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      try {
        ASSERT_EQ(cudaSetDevice(dev.d[t]), cudaSuccess);
        f(t);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
}

TEST_F(MultiGpu, AutotunedMatmulTunesAndRunsOnEachDevice) {
  std::string best[2];
  on_both(dev_, [&](int t) { best[t] = matmul_on_current_device(256, 192, 128, t); });
  EXPECT_FALSE(best[0].empty());
  EXPECT_FALSE(best[1].empty());
  // Each thread alternating devices: the same keys, now tuned, on the other device.
  on_both(dev_, [&](int t) {
    for (int round = 0; round < 2; ++round) {
      ASSERT_EQ(cudaSetDevice(dev_.d[(t + round) % 2]), cudaSuccess);
      matmul_on_current_device(256, 192, 128, round);
    }
  });
}

TEST_F(MultiGpu, HeuristicsAndNamedArgumentsInterleaved) {
  on_both(dev_, [&](int t) {
    for (int round = 0; round < 4; ++round) {
      ASSERT_EQ(cudaSetDevice(dev_.d[(t + round) % 2]), cudaSuccess);
      heuristics_and_named_on_current_device(3000 + 1000 * t + 7 * round);
    }
  });
}

TEST_F(MultiGpu, ConfigPreHooksOnBothDevices) {
  on_both(dev_, [&](int) { pre_hook_on_current_device(); });
  on_both(dev_, [&](int t) {
    ASSERT_EQ(cudaSetDevice(dev_.d[1 - t]), cudaSuccess);
    pre_hook_on_current_device();
  });
}

// One descriptor used on both devices in turn: its base moves to the other device's memory,
// and the map it caches is encoded again for it.
TEST_F(MultiGpu, OneDescriptorFollowsItsBaseAcrossDevices) {
  const int64_t M = 128, N = 64;
  static const te::JitFunction copy("te_tma_kernels", "tma_scale_2d");
  std::vector<float> h(static_cast<size_t>(M * N));
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i % 101);
  ASSERT_EQ(cudaSetDevice(dev_.d[0]), cudaSuccess);
  DeviceBuffer<float> src0(h.size()), dst0(h.size());
  src0.upload(h);
  ASSERT_EQ(cudaSetDevice(dev_.d[1]), cudaSuccess);
  DeviceBuffer<float> src1(h.size()), dst1(h.size());
  src1.upload(h);
  te::TensorDescriptor s(src0.ptr, te::DType::fp32, {M, N}, {N, 1}, {64, 64});
  te::TensorDescriptor d(dst0.ptr, te::DType::fp32, {M, N}, {N, 1}, {64, 64});
  for (int round = 0; round < 4; ++round) {
    const int t = round % 2;
    ASSERT_EQ(cudaSetDevice(dev_.d[t]), cudaSuccess);
    s.set_base(t == 0 ? src0.ptr : src1.ptr);
    d.set_base(t == 0 ? dst0.ptr : dst1.ptr);
    copy.launch({M / 64, N / 64}, nullptr, s, d, 3.0, 64, 64);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = (t == 0 ? dst0 : dst1).download();
    for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(got[i], 3.0f * h[i]) << round << " " << i;
  }
}

// Descriptors made on the device (tl.make_tensor_descriptor): each launch takes global scratch
// for its CUtensorMaps from the default, stream-ordered allocator on the launch's device. A
// thread per device, then each thread alternating devices.
void device_made_descriptors_on_current_device(int seed) {
  const int64_t M = 256, N = 192;
  std::vector<float> h(static_cast<size_t>(M * N));
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = static_cast<float>(static_cast<int>((i * 17 + seed) % 61) - 30);
  DeviceBuffer<float> src(h.size()), dst(h.size());
  src.upload(h);
  static const te::JitFunction scale("te_tma_kernels", "device_desc_scale");
  scale.launch({M / 64, N / 64}, nullptr, src.ptr, dst.ptr, M, N, 2.0, 64, 64);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = dst.download();
  for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(got[i], 2.0f * h[i]) << "device-made " << i;
}

TEST_F(MultiGpu, DeviceMadeDescriptorsWithScratchOnBothDevices) {
  on_both(dev_, [&](int t) { device_made_descriptors_on_current_device(t); });
  on_both(dev_, [&](int t) {
    for (int round = 0; round < 4; ++round) {
      ASSERT_EQ(cudaSetDevice(dev_.d[(t + round) % 2]), cudaSuccess);
      device_made_descriptors_on_current_device(round);
    }
  });
}

// prepare() tunes, compiles and loads on the second device; a capture there then launches
// from the caches alone.
TEST_F(MultiGpu, GraphCaptureOnTheSecondDeviceAfterPrepare) {
  ASSERT_EQ(cudaSetDevice(dev_.d[1]), cudaSuccess);
  const int n = 50000;
  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = static_cast<float>(i % 13) - 6.0f;
  DeviceBuffer<float> x(hx.size()), out(hx.size());
  x.upload(hx);
  static const te::JitFunction tuned("te_tune_kernels", "tuned_kernel");
  const auto grid = [&](const te::Meta& m) { return te::Grid(te::cdiv(n, m["BLOCK"])); };
  tuned.prepare(grid, x.ptr, out.ptr, n);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  tuned.launch(grid, stream, x.ptr, out.ptr, n);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const std::vector<float> got = out.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * hx[i]) << i;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
