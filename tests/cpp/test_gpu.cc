// Launching on the GPU. Every test skips without a usable GPU.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#include <triton_embed/allocator.h>
#include <triton_embed/cuda_types.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "device_buffer.h"
#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace py = pybind11;

#define CUDA_ASSERT(call) ASSERT_EQ((call), cudaSuccess) << #call

namespace {

using te_test::DeviceBuffer;

uint16_t to_half(float f) {
  uint16_t h = 0;
  te::detail::testing::half_bits(f, &h);
  return h;
}

TEST(CudaTypes, PointersToCudaTypesHaveTheirDtype) {  // runs without a GPU too
  te::detail::ArgValue v[4];
  te::detail::fill_args(
      v, reinterpret_cast<__half*>(0x100), reinterpret_cast<const __nv_bfloat16*>(0x200),
      reinterpret_cast<__nv_fp8_e4m3*>(0x300), reinterpret_cast<__nv_fp8_e5m2*>(0x400));
  EXPECT_EQ(v[0].dtype, te::DType::fp16);
  EXPECT_EQ(v[1].dtype, te::DType::bf16);
  EXPECT_EQ(v[2].dtype, te::DType::fp8e4nv);
  EXPECT_EQ(v[3].dtype, te::DType::fp8e5);
  EXPECT_EQ(v[3].u, 0x400u);
}

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!te::cuda_available()) GTEST_SKIP() << "no usable GPU";
    te::set_target(std::nullopt);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    cudaDeviceProp prop;
    ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    arch_ = prop.major * 10 + prop.minor;
  }
  int arch_ = 0;
};

TEST_F(Gpu, VectorAddMatchesCpuAndPythonTriton) {
  const int n = 98432;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = std::sin(0.01f * i);
    hy[i] = 0.25f * i;
  }
  DeviceBuffer<float> x(n), y(n), out(n), out_py(n);
  x.upload(hx);
  y.upload(hy);
  te::JitFunction add("pykernels.vector", "add_kernel");
  add.launch({te::cdiv(n, 1024)}, nullptr, x.ptr, y.ptr, out.ptr, n, 1024);
  CUDA_ASSERT(cudaDeviceSynchronize());
  const auto got = out.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], hx[i] + hy[i]) << i;

  const te::CompiledKernel& k = add.compile(x.ptr, y.ptr, out.ptr, n, 1024);
  EXPECT_EQ(k.target(), "cuda:" + std::to_string(arch_));
  // The same launch from Python Triton (its own JIT path, real driver) on the same buffers.
  std::string py_hash;
  {
    te_test::Gil gil;
    te_test::install_python_helpers();
    char code[512];
    std::snprintf(code, sizeof(code),
                  "from pykernels.vector import add_kernel\n"
                  "_ck = add_kernel[(%d,)](P(%llu, 'float32'), P(%llu, 'float32'), P(%llu, "
                  "'float32'), %d, BLOCK=1024)\n",
                  static_cast<int>(te::cdiv(n, 1024)),
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(x.ptr)),
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(y.ptr)),
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(out_py.ptr)), n);
    te_test::exec(code);
    py_hash = te_test::eval("_ck.hash").cast<std::string>();
  }
  CUDA_ASSERT(cudaDeviceSynchronize());
  EXPECT_EQ(k.hash(), py_hash);
  const auto got_py = out_py.download();
  EXPECT_EQ(std::memcmp(got.data(), got_py.data(), n * sizeof(float)), 0);
}

TEST_F(Gpu, GridCallableAndThreeDimensionalGrids) {
  const int n = 5000;
  DeviceBuffer<float> x(n), y(n), out(n);
  x.upload(std::vector<float>(n, 1.5f));
  y.upload(std::vector<float>(n, 2.0f));
  te::JitFunction add("pykernels.vector", "add_kernel");
  int calls = 0;
  add.launch(
      [&](const te::Meta& meta) {
        ++calls;
        return te::Grid(te::cdiv(meta["n_elements"], meta["BLOCK"]));
      },
      nullptr, x.ptr, y.ptr, out.ptr, n, 512);
  CUDA_ASSERT(cudaDeviceSynchronize());
  EXPECT_EQ(calls, 1);
  for (float v : out.download()) ASSERT_EQ(v, 3.5f);

  te::JitFunction g3("te_gpu_kernels", "grid3d_kernel");
  DeviceBuffer<int32_t> idx(4 * 3 * 2);
  g3.launch(te::Grid(4, 3, 2), nullptr, idx.ptr, 4, 3);
  CUDA_ASSERT(cudaDeviceSynchronize());
  const auto h = idx.download();
  for (int z = 0; z < 2; ++z)
    for (int yy = 0; yy < 3; ++yy)
      for (int xx = 0; xx < 4; ++xx) EXPECT_EQ(h[(z * 3 + yy) * 4 + xx], xx + 10 * yy + 100 * z);
}

TEST_F(Gpu, ScalarsReachTheKernel) {
  const int n = 1000;
  DeviceBuffer<float> out(n), x(n), out2(n);
  te::JitFunction fill("te_gpu_kernels", "fill_kernel");
  fill.launch({te::cdiv(n, 256)}, nullptr, out.ptr, 2.5, n, 256);
  CUDA_ASSERT(cudaDeviceSynchronize());
  for (float v : out.download()) ASSERT_EQ(v, 2.5f);

  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = static_cast<float>(i);
  x.upload(hx);
  te::JitFunction ann("te_compile_kernels", "annotated_kernel");  // n: i64, alpha: fp16, flag: u1
  ann.launch({te::cdiv(n, 128)}, nullptr, x.ptr, out2.ptr, int64_t{n}, 0.5, true, 128);
  CUDA_ASSERT(cudaDeviceSynchronize());
  auto h = out2.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], hx[i] * 0.5f) << i;
  ann.launch({te::cdiv(n, 128)}, nullptr, x.ptr, out2.ptr, int64_t{n}, 0.5, false, 128);
  CUDA_ASSERT(cudaDeviceSynchronize());
  h = out2.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], hx[i]) << i;

  te::JitFunction mixed("te_compile_kernels", "mixed_kernel");
  mixed.launch({te::cdiv(n, 128)}, nullptr, x.ptr, out2.ptr, n, -3.0f, true, 128);
  CUDA_ASSERT(cudaDeviceSynchronize());
  h = out2.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], hx[i] * -3.0f) << i;
}

TEST_F(Gpu, TuplesConstexprFunctionsAndDtypes) {
  const int n = 64;
  DeviceBuffer<float> a(n), b(n), out(n);
  std::vector<float> ha(n), hb(n);
  for (int i = 0; i < n; ++i) {
    ha[i] = static_cast<float>(i) - 20.f;
    hb[i] = 100.f;
  }
  a.upload(ha);
  b.upload(hb);
  te::JitFunction tup("te_compile_kernels", "tuple_kernel");
  tup.launch({1}, nullptr, std::make_tuple(a.ptr, b.ptr), std::make_tuple(n, 10), out.ptr, n);
  CUDA_ASSERT(cudaDeviceSynchronize());
  auto h = out.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], ha[i] + (i < 10 ? hb[i] : 0.f)) << i;

  te::JitFunction apply("te_compile_kernels", "apply_kernel");
  te::JitFunction relu("te_compile_kernels", "relu");
  apply.launch({1}, nullptr, a.ptr, out.ptr, n, relu, 64);
  CUDA_ASSERT(cudaDeviceSynchronize());
  h = out.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], std::fmax(ha[i], 0.f)) << i;

  DeviceBuffer<uint16_t> half_out(n);
  te::JitFunction dt("te_compile_kernels", "dtype_kernel");
  dt.launch({1}, nullptr, a.ptr, te::Pointer(half_out.ptr, te::DType::fp16), n, te::DType::fp16,
            "double", 64);
  CUDA_ASSERT(cudaDeviceSynchronize());
  const auto hh = half_out.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(hh[i], to_half(2 * ha[i])) << i;
}

TEST_F(Gpu, EmptyGridLaunchesNothingAndBadGridsThrow) {
  DeviceBuffer<float> out(16);
  te::JitFunction fill("te_gpu_kernels", "fill_kernel");
  fill.launch({0}, nullptr, out.ptr, 7.0, 16, 16);
  CUDA_ASSERT(cudaDeviceSynchronize());
  for (float v : out.download()) EXPECT_EQ(v, 0.f);
  try {
    fill.launch({-1}, nullptr, out.ptr, 7.0, 16, 16);
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "launching te_gpu_kernels.fill_kernel: grid (-1, 1, 1) is out of range: each axis "
                 "must be >= 0, x * num_ctas (1) below 2^31 and y, z below 65536");
  }
  EXPECT_THROW(fill.launch(te::Grid(1, 70000), nullptr, out.ptr, 7.0, 16, 16), te::ValueError);
}

TEST_F(Gpu, LargeSharedMemoryIsEnabled) {
  const int M = 256, N = 256, K = 256;
  std::vector<uint16_t> ha(M * K), hb(K * N);
  std::vector<float> fa(M * K), fb(K * N);
  for (int i = 0; i < M * K; ++i) {
    fa[i] = static_cast<float>((i % 7) - 3);
    ha[i] = to_half(fa[i]);
  }
  for (int i = 0; i < K * N; ++i) {
    fb[i] = static_cast<float>((i % 5) - 2);
    hb[i] = to_half(fb[i]);
  }
  DeviceBuffer<uint16_t> a(M * K), b(K * N);
  DeviceBuffer<float> c(M * N);
  a.upload(ha);
  b.upload(hb);
  te::JitFunction mm = te::JitFunction("te_gpu_kernels", "matmul_kernel")
                           .with_options(te::Options().num_stages(3).num_warps(8));
  const te::Pointer pa(a.ptr, te::DType::fp16), pb(b.ptr, te::DType::fp16);
  const auto& k = mm.compile(pa, pb, c.ptr, M, N, K, K, 1, N, 1, N, 1, 128, 128, 64);
  EXPECT_GT(k.shared(), 49152) << "the test needs a kernel above the 48 KB default";
  mm.launch({M / 128, N / 128}, nullptr, pa, pb, c.ptr, M, N, K, K, 1, N, 1, N, 1, 128, 128, 64);
  CUDA_ASSERT(cudaDeviceSynchronize());
  const auto hc = c.download();
  for (int i = 0; i < M; i += 17) {
    for (int j = 0; j < N; j += 13) {
      float ref = 0;
      for (int kk = 0; kk < K; ++kk) ref += fa[i * K + kk] * fb[kk * N + j];
      ASSERT_EQ(hc[i * N + j], ref) << i << "," << j;
    }
  }
  // Far more shared memory than the device has: the load refuses with a clear error.
  te::JitFunction huge = te::JitFunction("te_gpu_kernels", "matmul_kernel")
                             .with_options(te::Options().num_stages(8).num_warps(8));
  try {
    huge.launch({1, 1}, nullptr, pa, pb, c.ptr, M, N, K, K, 1, N, 1, N, 1, 128, 128, 128);
    FAIL() << "expected OutOfResourcesError";
  } catch (const te::OutOfResourcesError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("te_gpu_kernels.matmul_kernel as matmul_kernel(a_ptr: *fp16 D", 0), 0u)
        << msg;
    EXPECT_NE(msg.find(" bytes of shared memory; the device allows "), std::string::npos) << msg;
    EXPECT_NE(msg.find(". Lower num_stages or the block sizes."), std::string::npos) << msg;
  }
}

class CountingAllocator : public te::ScratchAllocator {
 public:
  uint64_t allocate(size_t bytes, size_t alignment, te::Stream stream) override {
    void* p = nullptr;
    EXPECT_EQ(cudaMallocAsync(&p, bytes, reinterpret_cast<cudaStream_t>(stream)), cudaSuccess);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
    allocations.fetch_add(1);
    last_bytes = bytes;
    return reinterpret_cast<uint64_t>(p);
  }
  void release(uint64_t ptr, size_t, te::Stream stream) noexcept override {
    cudaFreeAsync(reinterpret_cast<void*>(ptr), reinterpret_cast<cudaStream_t>(stream));
    releases.fetch_add(1);
  }
  std::atomic<int> allocations{0}, releases{0};
  size_t last_bytes = 0;
};

TEST_F(Gpu, GlobalScratchThroughTheAllocator) {
  if (arch_ < 90) GTEST_SKIP() << "device-side tensor descriptors need sm90+";
  const int M = 128, N = 128;
  std::vector<float> h(M * N);
  for (int i = 0; i < M * N; ++i) h[i] = static_cast<float>(i % 1000);
  DeviceBuffer<float> src(M * N), dst(M * N);
  src.upload(h);
  te::JitFunction copy("te_gpu_kernels", "tma_copy_kernel");
  const auto& k = copy.compile(src.ptr, dst.ptr, M, N, 32, 32);
  ASSERT_GT(k.global_scratch_size(), 0u) << "the kernel should need global scratch";
  // Default: stream-ordered cuMemAllocAsync.
  copy.launch({M / 32, N / 32}, nullptr, src.ptr, dst.ptr, M, N, 32, 32);
  CUDA_ASSERT(cudaDeviceSynchronize());
  auto out = dst.download();
  for (int i = 0; i < M * N; ++i) ASSERT_EQ(out[i], 2 * h[i]) << i;
  // A replaced allocator is called once per launch for grid * num_ctas * size bytes.
  auto counting = std::make_shared<CountingAllocator>();
  te::set_scratch_allocator(counting);
  CUDA_ASSERT(cudaMemset(dst.ptr, 0, M * N * sizeof(float)));
  copy.launch({M / 32, N / 32}, nullptr, src.ptr, dst.ptr, M, N, 32, 32);
  CUDA_ASSERT(cudaDeviceSynchronize());
  te::set_scratch_allocator(nullptr);
  EXPECT_EQ(counting->allocations.load(), 1);
  EXPECT_EQ(counting->releases.load(), 1);
  EXPECT_EQ(counting->last_bytes, (M / 32) * (N / 32) * k.global_scratch_size());
  out = dst.download();
  for (int i = 0; i < M * N; ++i) ASSERT_EQ(out[i], 2 * h[i]) << i;
  // A grid whose scratch size overflows 64 bits is refused before anything is allocated.
  EXPECT_THROW(
      copy.launch(te::Grid(0x7FFFFFFF, 65535, 65535), nullptr, src.ptr, dst.ptr, M, N, 32, 32),
      te::ValueError);
}

TEST_F(Gpu, ClustersPdlAndCooperativeLaunches) {
  const int n = 1 << 16;
  DeviceBuffer<float> x(n), y(n), out(n);
  x.upload(std::vector<float>(n, 1.0f));
  y.upload(std::vector<float>(n, 2.0f));
  te::JitFunction add("pykernels.vector", "add_kernel");
  if (arch_ >= 90) {
    auto clustered = add.with_options(te::Options().num_ctas(2));
    EXPECT_EQ(clustered.compile(x.ptr, y.ptr, out.ptr, n, 1024).num_ctas(), 2);
    clustered.launch({te::cdiv(n, 1024)}, nullptr, x.ptr, y.ptr, out.ptr, n, 1024);
    CUDA_ASSERT(cudaDeviceSynchronize());
    for (float v : out.download()) ASSERT_EQ(v, 3.0f);
    CUDA_ASSERT(cudaMemset(out.ptr, 0, n * sizeof(float)));
    auto pdl = add.with_options(te::Options().launch_pdl(true));
    EXPECT_TRUE(pdl.compile(x.ptr, y.ptr, out.ptr, n, 1024).launch_pdl());
    pdl.launch({te::cdiv(n, 1024)}, nullptr, x.ptr, y.ptr, out.ptr, n, 1024);
    CUDA_ASSERT(cudaDeviceSynchronize());
    for (float v : out.download()) ASSERT_EQ(v, 3.0f);
  }
  auto coop = add.with_options(te::Options().launch_cooperative_grid(true));
  CUDA_ASSERT(cudaMemset(out.ptr, 0, n * sizeof(float)));
  coop.launch({te::cdiv(n, 1024)}, nullptr, x.ptr, y.ptr, out.ptr, n, 1024);
  CUDA_ASSERT(cudaDeviceSynchronize());
  for (float v : out.download()) ASSERT_EQ(v, 3.0f);
  // More blocks than can be co-resident: the driver refuses, and the error says so.
  try {
    coop.launch({1 << 20}, nullptr, x.ptr, y.ptr, out.ptr, n, 1024);
    FAIL() << "expected CudaError";
  } catch (const te::CudaError& e) {
    EXPECT_EQ(e.call(), "cuLaunchKernelEx");
    EXPECT_EQ(e.code(), 720);
    EXPECT_EQ(e.name(), "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE");
    EXPECT_FALSE(e.text().empty());
    const std::string msg = e.what();
    EXPECT_EQ(
        msg.rfind("launching pykernels.vector.add_kernel as add_kernel(x_ptr: *fp32 D, y_ptr: "
                  "*fp32 D, out_ptr: *fp32 D, n_elements: i32 D, BLOCK: constexpr = 1024) on "
                  "grid (1048576, 1, 1): cuLaunchKernelEx failed with "
                  "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (720): ",
                  0),
        0u)
        << msg;
  }
}

TEST_F(Gpu, ThreadsLaunchOnTheirOwnStreams) {
  constexpr int kThreads = 8, kLaunches = 200, n = 4096;
  te::JitFunction add = te::JitFunction("pykernels.vector", "add_kernel")
                            .with_options(te::Options().num_warps(2).num_stages(2));
  const long compiles = te::detail::testing::compile_count();
  std::vector<std::unique_ptr<DeviceBuffer<float>>> xs, outs;
  for (int t = 0; t < kThreads; ++t) {
    xs.push_back(std::make_unique<DeviceBuffer<float>>(n));
    outs.push_back(std::make_unique<DeviceBuffer<float>>(n));
    xs[t]->upload(std::vector<float>(n, static_cast<float>(t)));
  }
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cudaSetDevice(0);
      cudaStream_t s;
      cudaStreamCreate(&s);
      try {
        for (int i = 0; i < kLaunches; ++i) {
          add.launch({te::cdiv(n, 256)}, s, xs[t]->ptr, xs[t]->ptr, outs[t]->ptr, n, 256);
        }
      } catch (const std::exception&) {
        errors.fetch_add(1);
      }
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(te::detail::testing::compile_count(), compiles + 1);  // one compile for all threads
  for (int t = 0; t < kThreads; ++t) {
    for (float v : outs[t]->download()) ASSERT_EQ(v, 2.0f * t);
  }
}

// A C++ grid callable that throws while Triton's Autotuner benchmarks the configs (it calls the
// grid for each benchmark launch): the caller gets that very exception, its type and message,
// as from any launch, not a PythonError around it. Then a good grid tunes and launches.
struct GridRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

TEST_F(Gpu, AGridCallableThatThrowsWhileTuningRaisesItsOwnError) {
  const int n = 3001;  // a tuning key no other test tunes
  DeviceBuffer<float> x(n), out(n);
  x.upload(std::vector<float>(n, 2.0f));
  const te::JitFunction k("te_tune_kernels", "tuned_kernel");
  try {
    // A name the kernel does not have: Meta raises LookupError.
    k.launch([](const te::Meta& m) { return te::Grid(te::cdiv(m["n"], m["BLOCK_SIZE"])); }, nullptr,
             x.ptr, out.ptr, n);
    FAIL() << "no exception";
  } catch (const te::LookupError& e) {
    EXPECT_NE(std::string(e.what()).find("BLOCK_SIZE"), std::string::npos) << e.what();
  }
  try {
    k.launch([](const te::Meta&) -> te::Grid { throw GridRefused("no grid today"); }, nullptr,
             x.ptr, out.ptr, n);
    FAIL() << "no exception";
  } catch (const GridRefused& e) {
    EXPECT_STREQ(e.what(), "no grid today");
  }
  k.launch([](const te::Meta& m) { return te::Grid(te::cdiv(m["n"], m["BLOCK"])); }, nullptr, x.ptr,
           out.ptr, n);
  CUDA_ASSERT(cudaDeviceSynchronize());
  EXPECT_NE(k.tuning_result(x.ptr, out.ptr, n), nullptr);
}

TEST_F(Gpu, CachedLaunchesDoNotAllocate) {
  const int n = 4096;
  DeviceBuffer<float> x(n), out(n);
  te::JitFunction add("pykernels.vector", "add_kernel");
  cudaStream_t s;
  CUDA_ASSERT(cudaStreamCreate(&s));
  add.launch({te::cdiv(n, 1024)}, s, x.ptr, x.ptr, out.ptr, n, 1024);  // compile and load
  CUDA_ASSERT(cudaStreamSynchronize(s));
  {
    te_test::CountAllocations count;
    for (int i = 0; i < 1000; ++i)
      add.launch({te::cdiv(n, 1024)}, s, x.ptr, x.ptr, out.ptr, n, 1024);
    EXPECT_EQ(count.count(), 0u);
  }
  CUDA_ASSERT(cudaStreamSynchronize(s));
  CUDA_ASSERT(cudaStreamDestroy(s));
}

}  // namespace
