// Kernel bundles on the GPU, as two processes. Built twice from this file:
//   test_bundle_gpu_record (TE_BUNDLE_RECORD, the JIT layer; on two devices where there are
//     two GPUs): launches an autotuned matmul,
//     an autotuned matmul with a heuristic and an autotuned TMA kernel whose config pre-hooks
//     set its descriptors' block shapes (tuned on this GPU), compiles the vector add
//     for cuda:80 only, and saves the outputs, the tuning choices and the bundle;
//   test_bundle_gpu_replay (triton_embed::runtime only: no Python at all): loads the bundle
//     (TRITON_EMBED_BUNDLE), launches the same calls and requires outputs bitwise equal to
//     the JIT's and the same choices; the vector add runs from the cuda:80 entry's PTX.
// Every test skips without a GPU. CTest: bundle_gpu_record, then bundle_gpu_replay.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>
#include <triton_embed/named.h>
#include <triton_embed/tensor_descriptor.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "device_buffer.h"

namespace te = triton_embed;
using namespace triton_embed::literals;

#define CUDA_ASSERT(call) ASSERT_EQ((call), cudaSuccess) << #call

namespace {

std::string dir() {
  const char* d = std::getenv("TE_BUNDLE_DIR");
  return std::string(d != nullptr ? d : "/tmp") + "/gpu";
}

bool have_gpu() {
  int n = 0;
  return te::cuda_available() && cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

using te_test::DeviceBuffer;
using te_test::half_of;

template <class T>
void save(const std::string& name, const std::vector<T>& v) {
  std::ofstream(dir() + "/" + name, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()),
             static_cast<std::streamsize>(v.size() * sizeof(T)));
}
template <class T>
std::vector<T> load(const std::string& name) {
  std::ifstream f(dir() + "/" + name, std::ios::binary | std::ios::ate);
  std::vector<T> v(static_cast<size_t>(f.tellg()) / sizeof(T));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  return v;
}

// The matmuls: c = a @ b (fp16 in, fp32 out) with each autotuned kernel, at two shapes.
struct MatmulCase {
  const char* kernel;
  int M, N, K;
  const char* activation;
};
const MatmulCase kMatmuls[] = {
    {"matmul_kernel", 512, 512, 256, ""},
    {"matmul_kernel", 384, 640, 320, "leaky_relu"},
    {"matmul_heuristic_kernel", 256, 384, 200, "relu"},
};
std::string case_name(const MatmulCase& c) {
  return std::string(c.kernel) + "_" + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" +
         std::to_string(c.K);
}

// Runs one case; returns c's bytes and the tuned config's str().
void run_matmul(const MatmulCase& mc, std::vector<float>& out, std::string& best) {
  const int M = mc.M, N = mc.N, K = mc.K;
  std::vector<uint16_t> ha(static_cast<size_t>(M) * K), hb(static_cast<size_t>(K) * N);
  for (size_t i = 0; i < ha.size(); ++i) ha[i] = half_of(static_cast<int>(i * 7 % 13) - 6);
  for (size_t i = 0; i < hb.size(); ++i) hb[i] = half_of(static_cast<int>(i * 5 % 11) - 5);
  DeviceBuffer<uint16_t> a(ha.size()), b(hb.size());
  DeviceBuffer<float> c(static_cast<size_t>(M) * N);
  a.upload(ha);
  b.upload(hb);
  const te::JitFunction mm("pykernels.matmul", mc.kernel);
  const te::Pointer pa(a.ptr, te::DType::fp16), pb(b.ptr, te::DType::fp16);
  const auto grid = [&](const te::Meta& m) {
    return te::Grid(te::cdiv(M, m["BLOCK_M"]) * te::cdiv(N, m["BLOCK_N"]));
  };
  mm.launch(grid, nullptr, pa, pb, c.ptr, M, N, K, K, 1, N, 1, N, 1,
            "ACTIVATION"_a = mc.activation);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  out = c.download();
  const te::TuningResult* r =
      mm.tuning_result(pa, pb, c.ptr, M, N, K, K, 1, N, 1, N, 1, "ACTIVATION"_a = mc.activation);
  ASSERT_NE(r, nullptr);
  best = r->best.str;
}

// te_tma_kernels.tuned_subtile_scale: dst = src * 2 through host descriptors whose block
// shapes each config's pre-hook sets (the runtime applies the hook, from the bundle in the
// replay); returns dst's bytes and the tuned config's str().
void run_subtile(std::vector<float>& out, std::string& best) {
  const int64_t M = 512, N = 384;
  std::vector<float> h(static_cast<size_t>(M * N));
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = static_cast<float>(static_cast<int>(i * 13 % 101) - 50);
  DeviceBuffer<float> src(h.size()), dst(h.size());
  src.upload(h);
  const te::TensorDescriptor ds(src.ptr, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const te::TensorDescriptor dd(dst.ptr, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const te::JitFunction k("te_tma_kernels", "tuned_subtile_scale");
  const auto grid = [&](const te::Meta& m) {
    return te::Grid(te::cdiv(M, m["BLOCK_M"]), te::cdiv(N, m["BLOCK_N"]));
  };
  k.launch(grid, nullptr, ds, dd, M, N, 2.0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  out = dst.download();
  for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(out[i], 2.0f * h[i]) << i;
  const te::TuningResult* r = k.tuning_result(ds, dd, M, N, 2.0);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->best.has_pre_hook);
  best = r->best.str;
}

constexpr int kAddN = 5000;

class BundleGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no GPU";
  }
};

#ifdef TE_BUNDLE_RECORD

// With two GPUs the recording itself runs on both (issue 22): a thread per device tunes and
// launches its share of the calls, and the one bundle it writes serves both devices in the
// replay. With one GPU both threads use device 0.
TEST_F(BundleGpu, Record) {
  std::system(("mkdir -p " + dir()).c_str());
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  constexpr size_t kCases = sizeof(kMatmuls) / sizeof(kMatmuls[0]);
  std::string bests[kCases + 1];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      try {
        ASSERT_EQ(cudaSetDevice(n >= 2 ? t : 0), cudaSuccess);
        for (size_t i = static_cast<size_t>(t); i < kCases; i += 2) {
          std::vector<float> out;
          ASSERT_NO_FATAL_FAILURE(run_matmul(kMatmuls[i], out, bests[i]));
          save(case_name(kMatmuls[i]) + ".bin", out);
        }
        if (t == 1) {
          std::vector<float> out;
          ASSERT_NO_FATAL_FAILURE(run_subtile(out, bests[kCases]));
          save("subtile.bin", out);
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "recording thread " << t << ": " << e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  ASSERT_FALSE(HasFatalFailure());
  std::ofstream best(dir() + "/best.txt");
  for (size_t i = 0; i < kCases; ++i) best << case_name(kMatmuls[i]) << " " << bests[i] << "\n";
  best << "subtile " << bests[kCases] << "\n";
  best.close();
  // The vector add for cuda:80 only (compile-only: its PTX serves this GPU in the replay).
  te::set_target(te::Target::parse("cuda:80"));
  const te::JitFunction add("pykernels.vector", "add_kernel");
  DeviceBuffer<float> x(kAddN), y(kAddN), out(kAddN);
  const te::CompiledKernel& k80 = add.compile(x.ptr, y.ptr, out.ptr, kAddN, 1024);
  te::set_target(std::nullopt);
  std::ofstream(dir() + "/add80.txt") << k80.hash() << "\n";
  te::write_bundle(dir() + "/gpu.teb");
}

#else  // the replay: runtime only

TEST_F(BundleGpu, ReplayIsBitwiseEqualToTheJit) {
  std::map<std::string, std::string> best;
  {
    std::ifstream f(dir() + "/best.txt");
    std::string name, text;
    while (f >> name && std::getline(f >> std::ws, text)) best[name] = text;
  }
  ASSERT_EQ(best.size(), 4u) << "run bundle_gpu_record first";
  for (const MatmulCase& mc : kMatmuls) {
    std::vector<float> out;
    std::string b;
    ASSERT_NO_FATAL_FAILURE(run_matmul(mc, out, b));
    const std::vector<float> expected = load<float>(case_name(mc) + ".bin");
    ASSERT_EQ(out.size(), expected.size()) << case_name(mc);
    EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)), 0)
        << case_name(mc) << ": not bitwise equal to the JIT's output";
    EXPECT_EQ(b, best.at(case_name(mc))) << case_name(mc);
  }
  // A config pre-hook applied from the bundle, with no Python.
  {
    std::vector<float> out;
    std::string b;
    ASSERT_NO_FATAL_FAILURE(run_subtile(out, b));
    const std::vector<float> expected = load<float>("subtile.bin");
    ASSERT_EQ(out.size(), expected.size());
    EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)), 0)
        << "tuned_subtile_scale: not bitwise equal to the JIT's output";
    EXPECT_EQ(b, best.at("subtile"));
  }
  // A shape the recording never tuned: NotInBundleError, not a guess.
  const te::JitFunction mm("pykernels.matmul", "matmul_kernel");
  DeviceBuffer<uint16_t> a(128 * 128), bb(128 * 128);
  DeviceBuffer<float> c(128 * 128);
  const te::Pointer pa(a.ptr, te::DType::fp16), pb(bb.ptr, te::DType::fp16);
  EXPECT_THROW(mm.launch(te::Grid(1), nullptr, pa, pb, c.ptr, 128, 128, 128, 128, 1, 128, 1, 128, 1,
                         "ACTIVATION"_a = ""),
               te::NotInBundleError);
}

// One bundle, two devices (issue 22): a thread per device launches the recorded calls from
// it, each output bitwise the JIT's. Two GPUs, or device 0 twice with
// TE_MULTI_GPU_SAME_DEVICE=1 (CTest sets it); skipped otherwise.
TEST_F(BundleGpu, ReplayOnTwoDevicesAtOnce) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  const char* same = std::getenv("TE_MULTI_GPU_SAME_DEVICE");
  if (n < 2 && (same == nullptr || std::string(same) != "1")) {
    GTEST_SKIP() << "needs two GPUs; TE_MULTI_GPU_SAME_DEVICE=1 runs it with device 0 twice";
  }
  const int devs[2] = {0, n >= 2 ? 1 : 0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      try {
        ASSERT_EQ(cudaSetDevice(devs[t]), cudaSuccess);
        for (int round = 0; round < 3; ++round) {
          const MatmulCase& mc = kMatmuls[(t + round) % 3];
          std::vector<float> out;
          std::string b;
          ASSERT_NO_FATAL_FAILURE(run_matmul(mc, out, b));
          const std::vector<float> expected = load<float>(case_name(mc) + ".bin");
          ASSERT_EQ(out.size(), expected.size());
          EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)), 0)
              << case_name(mc) << " on device " << devs[t];
        }
        std::vector<float> out;
        std::string b;
        ASSERT_NO_FATAL_FAILURE(run_subtile(out, b));
        const std::vector<float> expected = load<float>("subtile.bin");
        EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)), 0)
            << "tuned_subtile_scale on device " << devs[t];
      } catch (const std::exception& e) {
        ADD_FAILURE() << "device " << devs[t] << ": " << e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
}

TEST_F(BundleGpu, PtxOfAnOlderTargetRunsOnThisGpu) {
  std::ifstream f(dir() + "/add80.txt");
  std::string hash;
  ASSERT_TRUE(static_cast<bool>(f >> hash)) << "run bundle_gpu_record first";
  const te::JitFunction add("pykernels.vector", "add_kernel");
  DeviceBuffer<float> x(kAddN), y(kAddN), out(kAddN);
  std::vector<float> hx(kAddN), hy(kAddN);
  for (int i = 0; i < kAddN; ++i) {
    hx[i] = 0.25f * static_cast<float>(i % 97);
    hy[i] = 1.5f - 0.125f * static_cast<float>(i % 31);
  }
  x.upload(hx);
  y.upload(hy);
  ::testing::internal::CaptureStderr();
  add.launch({te::cdiv(kAddN, 1024)}, nullptr, x.ptr, y.ptr, out.ptr, kAddN, 1024);
  CUDA_ASSERT(cudaDeviceSynchronize());
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("using the PTX of its cuda:80 entry"), std::string::npos) << said;
  const std::vector<float> h = out.download();
  for (int i = 0; i < kAddN; ++i) ASSERT_EQ(h[i], hx[i] + hy[i]) << i;
  const te::CompiledKernel& k = add.compile(x.ptr, y.ptr, out.ptr, kAddN, 1024);
  EXPECT_EQ(k.hash(), hash);
  EXPECT_EQ(k.target(), "cuda:80");
  EXPECT_TRUE(k.cubin().empty());
}

#endif

}  // namespace
