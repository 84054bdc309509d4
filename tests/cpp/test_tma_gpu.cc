// tensor_descriptor.h on a GPU (part of test_tma; skipped without one): a persistent TMA
// matmul, a kernel that makes its descriptors on the device (plain, and autotuned from C++
// with no Python allocator set) and an autotuned kernel whose config pre-hooks set the block
// shapes, each launched from C++ bitwise equal to Python's launch.

#include <triton_embed/allocator.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_shim.h"
#include "test_support.h"
#include "testing/testing.h"

#ifdef TE_HAVE_CUDART
#include <cuda_runtime_api.h>
#endif

namespace te = triton_embed;
namespace tt = triton_embed::detail::testing;

namespace {

#ifdef TE_HAVE_CUDART

class TmaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!te::cuda_available()) GTEST_SKIP() << "no usable GPU";
    te::set_target(std::nullopt);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    cudaDeviceProp prop;
    ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    if (prop.major < 9) GTEST_SKIP() << "TMA needs sm_90 or newer";
    sms_ = prop.multiProcessorCount;
    te_test::Gil gil;
    te_test::install_python_helpers();
    te_test::exec("from te_helpers import desc\nimport te_tma_kernels\n");
  }
  void TearDown() override { te::set_target(te::Target::parse("cuda:90")); }
  int sms_ = 0;
};

template <class T>
struct Buffer {
  T* ptr = nullptr;
  size_t n;
  explicit Buffer(size_t count) : n(count) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(T)) != cudaSuccess) ptr = nullptr;
    cudaMemset(ptr, 0, n * sizeof(T));
  }
  ~Buffer() { cudaFree(ptr); }
  uint64_t addr() const { return reinterpret_cast<uintptr_t>(ptr); }
};

TEST_F(TmaGpu, PersistentMatmulIsBitwisePythons) {
  const int64_t M = 384, N = 256, K = 296;  // K not a multiple of BLOCK_K: TMA zero-fills
  std::vector<uint16_t> ha(M * K), hb(K * N);
  for (int64_t i = 0; i < M * K; ++i) {
    uint16_t h = 0;
    tt::half_bits(static_cast<float>((i * 37) % 17) / 8.0f - 1.0f, &h);
    ha[i] = h;
  }
  for (int64_t i = 0; i < K * N; ++i) {
    uint16_t h = 0;
    tt::half_bits(static_cast<float>((i * 11) % 13) / 16.0f - 0.375f, &h);
    hb[i] = h;
  }
  Buffer<uint16_t> a(M * K), b(K * N), c(M * N), c_py(M * N);
  ASSERT_EQ(cudaMemcpy(a.ptr, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b.ptr, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  const int64_t BM = 128, BN = 128, BK = 64;
  te::TensorDescriptor da(a.addr(), te::DType::fp16, {M, K}, {K, 1}, {BM, BK});
  te::TensorDescriptor db(b.addr(), te::DType::fp16, {K, N}, {N, 1}, {BK, BN});
  te::TensorDescriptor dc(c.addr(), te::DType::fp16, {M, N}, {N, 1}, {BM, BN});
  te::JitFunction mm("te_tma_kernels", "tma_persistent_matmul");
  const int programs = std::min<int>(sms_, static_cast<int>(te::cdiv(M, BM) * te::cdiv(N, BN)));
  mm.launch({programs}, nullptr, da, db, dc, M, N, K, BM, BN, BK, programs);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::string py_hash;
  {
    te_test::Gil gil;
    char code[1024];
    std::snprintf(code, sizeof(code),
                  "_ck = te_tma_kernels.tma_persistent_matmul[(%d,)](\n"
                  "    desc(%llu, 'float16', [%lld, %lld], [%lld, 1], [%lld, %lld]),\n"
                  "    desc(%llu, 'float16', [%lld, %lld], [%lld, 1], [%lld, %lld]),\n"
                  "    desc(%llu, 'float16', [%lld, %lld], [%lld, 1], [%lld, %lld]),\n"
                  "    %lld, %lld, %lld, %lld, %lld, %lld, %d)\n",
                  programs, (unsigned long long)a.addr(), (long long)M, (long long)K, (long long)K,
                  (long long)BM, (long long)BK, (unsigned long long)b.addr(), (long long)K,
                  (long long)N, (long long)N, (long long)BK, (long long)BN,
                  (unsigned long long)c_py.addr(), (long long)M, (long long)N, (long long)N,
                  (long long)BM, (long long)BN, (long long)M, (long long)N, (long long)K,
                  (long long)BM, (long long)BN, (long long)BK, programs);
    te_test::exec(code);
    py_hash = te_test::eval("_ck.hash").cast<std::string>();
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(mm.compile(da, db, dc, M, N, K, BM, BN, BK, programs).hash(), py_hash);
  std::vector<uint16_t> got(M * N), want(M * N);
  ASSERT_EQ(cudaMemcpy(got.data(), c.ptr, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(want.data(), c_py.ptr, want.size() * 2, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 2), 0);
  // Not both empty: most outputs of these inputs are non-zero.
  size_t nonzero = 0;
  for (uint16_t v : got) nonzero += v != 0;
  EXPECT_GT(nonzero, got.size() / 2);
}

TEST_F(TmaGpu, RepeatedLaunchesReuseTheEncodedMaps) {
  const int64_t M = 256, N = 128;
  Buffer<float> src(M * N), dst(M * N);
  std::vector<float> h(M * N);
  for (int64_t i = 0; i < M * N; ++i) h[i] = static_cast<float>(i);
  ASSERT_EQ(cudaMemcpy(src.ptr, h.data(), h.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  te::TensorDescriptor ds(src.addr(), te::DType::fp32, {M, N}, {N, 1}, {32, 32});
  te::TensorDescriptor dd(dst.addr(), te::DType::fp32, {M, N}, {N, 1}, {32, 32});
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  copy2.launch({M / 32, N / 32}, nullptr, ds, dd, 32, 32);
  const uint64_t after_first = te_cuda_shim::encodes();
  for (int i = 0; i < 100; ++i) copy2.launch({M / 32, N / 32}, nullptr, ds, dd, 32, 32);
  EXPECT_EQ(te_cuda_shim::encodes(), after_first);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> got(M * N);
  ASSERT_EQ(cudaMemcpy(got.data(), dst.ptr, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got, h);
  // A new block shape: a new kernel and new maps, still a copy.
  ds.set_block_shape({64, 16});
  dd.set_block_shape({64, 16});
  ASSERT_EQ(cudaMemset(dst.ptr, 0, M * N * 4), cudaSuccess);
  copy2.launch({M / 64, N / 16}, nullptr, ds, dd, 64, 16);
  EXPECT_EQ(te_cuda_shim::encodes(), after_first + 2);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), dst.ptr, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got, h);
}

// Python's launches need memory for on-device descriptors (triton.set_allocator) and the
// autotuner's benchmark needs torch: both are set up once.
void python_launch_setup() {
  te_test::Gil gil;
  te_test::exec(
      "import torch, triton\n"
      "triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, "
      "device='cuda'))\n"
      "from te_helpers import P\n");
}

TEST_F(TmaGpu, DeviceMadeDescriptorsAreBitwisePythons) {
  python_launch_setup();
  const int64_t M = 256, N = 192, BM = 64, BN = 64;
  std::vector<uint16_t> h(M * N);
  for (int64_t i = 0; i < M * N; ++i) {
    uint16_t v = 0;
    tt::half_bits(static_cast<float>((i * 29) % 23) / 7.0f - 1.5f, &v);
    h[i] = v;
  }
  Buffer<uint16_t> src(M * N), dst(M * N), dst_py(M * N);
  ASSERT_EQ(cudaMemcpy(src.ptr, h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  te::JitFunction scale("te_tma_kernels", "device_desc_scale");
  const te::Pointer s(src.addr(), te::DType::fp16), d(dst.addr(), te::DType::fp16);
  // The CUtensorMaps are made by the kernel in global scratch memory, from the allocator.
  const te::CompiledKernel& k = scale.compile(s, d, M, N, 0.75, BM, BN);
  EXPECT_GT(k.global_scratch_size(), 0u);
  scale.launch({M / BM, N / BN}, nullptr, s, d, M, N, 0.75, BM, BN);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::string py_hash;
  {
    te_test::Gil gil;
    char code[512];
    std::snprintf(code, sizeof(code),
                  "_ck = te_tma_kernels.device_desc_scale[(%lld, %lld)](P(%llu, 'float16'), "
                  "P(%llu, 'float16'), %lld, %lld, 0.75, %lld, %lld)\n"
                  "torch.cuda.synchronize()\n",
                  (long long)(M / BM), (long long)(N / BN), (unsigned long long)src.addr(),
                  (unsigned long long)dst_py.addr(), (long long)M, (long long)N, (long long)BM,
                  (long long)BN);
    te_test::exec(code);
    py_hash = te_test::eval("_ck.hash").cast<std::string>();
  }
  EXPECT_EQ(k.hash(), py_hash);
  std::vector<uint16_t> got(M * N), want(M * N);
  ASSERT_EQ(cudaMemcpy(got.data(), dst.ptr, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(want.data(), dst_py.ptr, want.size() * 2, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 2), 0);
  size_t nonzero = 0;
  for (uint16_t v : got) nonzero += v != 0;
  EXPECT_GT(nonzero, got.size() / 2);
}

TEST_F(TmaGpu, AutotunedKernelWhosePreHooksSetTheBlockShapes) {
  python_launch_setup();
  const int64_t M = 512, N = 256;
  std::vector<float> h(M * N);
  for (int64_t i = 0; i < M * N; ++i) h[i] = static_cast<float>((i * 13) % 101) - 50.0f;
  Buffer<float> src(M * N), dst(M * N), dst_py(M * N);
  ASSERT_EQ(cudaMemcpy(src.ptr, h.data(), h.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  // Placeholder block shapes, as in Triton's tutorial: each config's pre-hook sets its own.
  te::TensorDescriptor ds(src.addr(), te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  te::TensorDescriptor dd(dst.addr(), te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  te::JitFunction tuned("te_tma_kernels", "tuned_tma_scale");
  const auto grid = [&](const te::Meta& m) {
    return te::Grid(te::cdiv(M, m["BLOCK_M"]), te::cdiv(N, m["BLOCK_N"]));
  };
  tuned.launch(grid, nullptr, ds, dd, M, N, 2.0);  // tunes (three configs), then launches
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> got(M * N);
  ASSERT_EQ(cudaMemcpy(got.data(), dst.ptr, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int64_t i = 0; i < M * N; ++i) ASSERT_EQ(got[i], 2.0f * h[i]) << i;
  // The caller's descriptors are taken by const reference: the hook's block shape applied to
  // the launch only.
  EXPECT_EQ(ds.block_shape()[0], 1);
  EXPECT_EQ(dd.block_shape()[1], 1);
  const te::TuningResult* r = tuned.tuning_result(ds, dd, M, N, 2.0);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->best.has_pre_hook);
  EXPECT_EQ(r->timings.size(), 3u);
  // Again, from the memo: the hook runs (as in Python, on every launch) and the output holds.
  ASSERT_EQ(cudaMemset(dst.ptr, 0, M * N * 4), cudaSuccess);
  tuned.launch(grid, nullptr, ds, dd, M, N, 2.0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), dst.ptr, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int64_t i = 0; i < M * N; ++i) ASSERT_EQ(got[i], 2.0f * h[i]) << i;
  // Python's launch of the same key uses the same autotuner's choice; outputs are bitwise equal.
  {
    te_test::Gil gil;
    char code[768];
    std::snprintf(
        code, sizeof(code),
        "_k = te_tma_kernels.tuned_tma_scale\n"
        "_k[lambda m: (triton.cdiv(%lld, m['BLOCK_M']), triton.cdiv(%lld, m['BLOCK_N']))](\n"
        "    desc(%llu, 'float32', [%lld, %lld], [%lld, 1], [1, 1]),\n"
        "    desc(%llu, 'float32', [%lld, %lld], [%lld, 1], [1, 1]), %lld, %lld, 2.0)\n"
        "torch.cuda.synchronize()\n",
        (long long)M, (long long)N, (unsigned long long)src.addr(), (long long)M, (long long)N,
        (long long)N, (unsigned long long)dst_py.addr(), (long long)M, (long long)N, (long long)N,
        (long long)M, (long long)N);
    te_test::exec(code);
    EXPECT_EQ(te_test::eval("str(_k.best_config)").cast<std::string>(), r->best.str);
  }
  std::vector<float> want(M * N);
  ASSERT_EQ(cudaMemcpy(want.data(), dst_py.ptr, want.size() * 4, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
}

// Stream-ordered scratch through cudart, counting what it hands out and gets back.
struct CountingScratch : te::ScratchAllocator {
  std::atomic<int> allocated{0}, released{0};
  uint64_t allocate(size_t bytes, size_t, te::Stream s) override {
    void* p = nullptr;
    if (cudaMallocAsync(&p, bytes, reinterpret_cast<cudaStream_t>(s)) != cudaSuccess) {
      throw te::OutOfResourcesError("cudaMallocAsync failed");
    }
    ++allocated;
    return reinterpret_cast<uintptr_t>(p);
  }
  void release(uint64_t ptr, size_t, te::Stream s) noexcept override {
    cudaFreeAsync(reinterpret_cast<void*>(ptr), reinterpret_cast<cudaStream_t>(s));
    ++released;
  }
};

// A kernel that makes its descriptors on the device, tuned from C++ with no allocator set in
// Python: Triton's launcher, through which the Autotuner benchmarks, gets ours for the tuning
// (and none after); the tuned launch is bitwise Python's launch of the chosen config.
TEST_F(TmaGpu, AutotunedDeviceMadeDescriptorsTuneWithoutAPythonAllocator) {
  python_launch_setup();  // torch for Triton's do_bench, and an allocator for Python's launch
  {
    te_test::Gil gil;
    te_test::exec(
        "from triton.runtime import _allocation\n"
        "_python_allocator = _allocation._allocator.get()\n"
        "triton.set_allocator(_allocation._NULL_ALLOCATOR)  # as a C++ program has it\n");
  }
  auto scratch = std::make_shared<CountingScratch>();
  te::set_scratch_allocator(scratch);
  const int64_t M = 512, N = 256;
  std::vector<uint16_t> h(M * N);
  for (int64_t i = 0; i < M * N; ++i) {
    uint16_t v = 0;
    tt::half_bits(static_cast<float>((i * 31) % 29) / 8.0f - 1.75f, &v);
    h[i] = v;
  }
  Buffer<uint16_t> src(M * N), dst(M * N), dst_py(M * N);
  ASSERT_EQ(cudaMemcpy(src.ptr, h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  te::JitFunction tuned("te_tma_kernels", "tuned_device_desc_scale");
  const te::Pointer s(src.addr(), te::DType::fp16), d(dst.addr(), te::DType::fp16);
  const auto grid = [&](const te::Meta& m) {
    return te::Grid(te::cdiv(M, m["BLOCK_M"]), te::cdiv(N, m["BLOCK_N"]));
  };
  tuned.launch(grid, nullptr, s, d, M, N, 0.75);  // tunes (three configs), then launches
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const te::TuningResult* r = tuned.tuning_result(s, d, M, N, 0.75);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->timings.size(), 3u);
  for (const te::ConfigTiming& t : r->timings) EXPECT_LT(t.ms[0], 1e30) << t.config.str;
  // Every benchmark launch took its scratch from our allocator and gave it back; the last
  // allocation is the C++ launch's own.
  EXPECT_GT(scratch->allocated.load(), 3);
  EXPECT_EQ(scratch->allocated.load(), scratch->released.load());
  std::string best;
  {
    te_test::Gil gil;
    EXPECT_EQ(te_test::eval("type(_allocation._allocator.get()).__name__").cast<std::string>(),
              "NullAllocator");
    char code[1024];
    std::snprintf(
        code, sizeof(code),
        "triton.set_allocator(_python_allocator)\n"
        "_k = te_tma_kernels.tuned_device_desc_scale\n"
        "_c = _k.best_config\n"
        "_k.fn[(triton.cdiv(%lld, _c.kwargs['BLOCK_M']), triton.cdiv(%lld, "
        "_c.kwargs['BLOCK_N']))](\n"
        "    P(%llu, 'float16'), P(%llu, 'float16'), %lld, %lld, 0.75, **_c.all_kwargs())\n"
        "torch.cuda.synchronize()\n",
        (long long)M, (long long)N, (unsigned long long)src.addr(),
        (unsigned long long)dst_py.addr(), (long long)M, (long long)N);
    te_test::exec(code);
    best = te_test::eval("str(_c)").cast<std::string>();
  }
  EXPECT_EQ(best, r->best.str);
  std::vector<uint16_t> got(M * N), want(M * N);
  ASSERT_EQ(cudaMemcpy(got.data(), dst.ptr, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(want.data(), dst_py.ptr, want.size() * 2, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 2), 0);
  size_t nonzero = 0;
  for (uint16_t v : got) nonzero += v != 0;
  EXPECT_GT(nonzero, got.size() / 2);
  te::set_scratch_allocator(nullptr);
}

#endif  // TE_HAVE_CUDART

}  // namespace