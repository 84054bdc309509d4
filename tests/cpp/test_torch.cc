// The torch layer (<triton_embed/torch.h>) and the ops called through the dispatcher
// (<triton_embed/ops.h>). CPU tests run the kernels through Triton's interpreter; CUDA tests
// skip without a GPU.

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/cuda.h>
#include <triton_embed/ops.h>
#include <triton_embed/torch.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "resources.h"
#include "testing/testing.h"

namespace te = triton_embed;

namespace {

const te::JitFunction& add_kernel() {
  static const te::JitFunction k("pykernels.vector", "add_kernel");
  return k;
}

template <class T>
te::detail::ArgValue fill(const T& v) {
  te::detail::ArgValue out{};
  te::detail::ArgValue* nested = nullptr;
  te::ArgTraits<T>::fill(v, out, nested);
  return out;
}

// The message without its leading "kernel(params): " (Triton versions spell params apart).
std::string after_signature(const std::string& m) {
  const size_t p = m.find("): ");
  return p == std::string::npos ? m : m.substr(p + 3);
}

template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception>";
}

bool have_gpu() { return torch::cuda::is_available(); }

}  // namespace

TEST(TorchArgs, DtypeMappingMatchesPythonTriton) {
  EXPECT_EQ(te::triton_dtype(at::kBool), te::DType::u1);
  EXPECT_EQ(te::triton_dtype(at::kByte), te::DType::u8);
  EXPECT_EQ(te::triton_dtype(at::kChar), te::DType::i8);
  EXPECT_EQ(te::triton_dtype(at::kShort), te::DType::i16);
  EXPECT_EQ(te::triton_dtype(at::kInt), te::DType::i32);
  EXPECT_EQ(te::triton_dtype(at::kLong), te::DType::i64);
  EXPECT_EQ(te::triton_dtype(at::kUInt16), te::DType::u16);
  EXPECT_EQ(te::triton_dtype(at::kUInt32), te::DType::u32);
  EXPECT_EQ(te::triton_dtype(at::kUInt64), te::DType::u64);
  EXPECT_EQ(te::triton_dtype(at::kHalf), te::DType::fp16);
  EXPECT_EQ(te::triton_dtype(at::kBFloat16), te::DType::bf16);
  EXPECT_EQ(te::triton_dtype(at::kFloat), te::DType::fp32);
  EXPECT_EQ(te::triton_dtype(at::kDouble), te::DType::fp64);
  EXPECT_EQ(te::triton_dtype(at::kFloat8_e4m3fn), te::DType::fp8e4nv);
  EXPECT_EQ(te::triton_dtype(at::kFloat8_e5m2), te::DType::fp8e5);
  EXPECT_EQ(te::triton_dtype(at::kFloat8_e4m3fnuz), te::DType::fp8e4b8);
  EXPECT_EQ(te::triton_dtype(at::kFloat8_e5m2fnuz), te::DType::fp8e5b16);
  EXPECT_EQ(te::triton_dtype(at::kComplexFloat), te::DType::invalid);
  EXPECT_EQ(te::triton_dtype(at::kQInt8), te::DType::invalid);
}

TEST(TorchArgs, TensorsBecomePointers) {
  at::Tensor t = at::zeros({7}, at::kBFloat16);
  te::detail::ArgValue v = fill(t);
  EXPECT_EQ(v.kind, te::detail::ArgKind::kPointer);
  EXPECT_EQ(v.dtype, te::DType::bf16);
  EXPECT_EQ(v.u, reinterpret_cast<uintptr_t>(t.data_ptr()));
  EXPECT_EQ(v.flags, te::detail::kArgFromTensor | te::detail::kArgHostMemory);
  EXPECT_EQ(fill(at::Tensor()).kind, te::detail::ArgKind::kNone);
  EXPECT_EQ(fill(std::optional<at::Tensor>()).kind, te::detail::ArgKind::kNone);
  EXPECT_EQ(fill(std::optional<at::Tensor>(t)).kind, te::detail::ArgKind::kPointer);
  // a view keeps its own data pointer (alignment is specialised from it)
  at::Tensor f = at::zeros({8}, at::kFloat);
  EXPECT_EQ(fill(f.slice(0, 1)).u, reinterpret_cast<uintptr_t>(f.data_ptr()) + 4);
}

TEST(TorchArgs, TensorDescriptorFromTensor) {
  at::Tensor x = at::zeros({64, 48}, at::kHalf);
  te::TensorDescriptor d = te::TensorDescriptor::from_tensor(x, {16, 16});
  EXPECT_EQ(d.base(), reinterpret_cast<uintptr_t>(x.data_ptr()));
  EXPECT_EQ(d.dtype(), te::DType::fp16);
  ASSERT_EQ(d.rank(), 2);
  EXPECT_EQ(d.shape()[0], 64);
  EXPECT_EQ(d.shape()[1], 48);
  EXPECT_EQ(d.strides()[0], 48);
  EXPECT_EQ(d.strides()[1], 1);
  EXPECT_EQ(d.block_shape()[1], 16);
  te::detail::ArgValue v[1];
  te::detail::fill_args(v, d);
  EXPECT_EQ(v[0].kind, te::detail::ArgKind::kTensorDesc);
  EXPECT_EQ(v[0].flags, te::detail::kArgFromTensor | te::detail::kArgHostMemory);
  try {
    te::TensorDescriptor::from_tensor(x, {16});
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "TensorDescriptor::from_tensor: the tensor has 2 dimensions, block_shape 1");
  }
  // A descriptor of a CPU tensor on a GPU launch: refused as a CPU tensor is.
  te::set_target(te::Target{"cuda", 90, 32});
  te::JitFunction copy2("te_tma_kernels", "tma_copy_2d");
  uint64_t slots[64];
  try {
    te::detail::testing::dry_run(copy2, slots, d, d, 16, 16);
    ADD_FAILURE() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("argument #0 'src': got a CPU tensor"), std::string::npos)
        << e.what();
  }
  te::set_target(std::nullopt);
}

TEST(TorchArgs, ScalarsBecomePythonValues) {
  EXPECT_EQ(fill(c10::Scalar(true)).kind, te::detail::ArgKind::kBool);
  te::detail::ArgValue i = fill(c10::Scalar(int64_t{-5}));
  EXPECT_EQ(i.kind, te::detail::ArgKind::kInt);
  EXPECT_EQ(i.i, -5);
  te::detail::ArgValue f = fill(c10::Scalar(2.5));
  EXPECT_EQ(f.kind, te::detail::ArgKind::kFloat);
  EXPECT_EQ(f.f, 2.5);
  te::detail::ArgValue u = fill(c10::Scalar(uint64_t{1} << 63));
  EXPECT_EQ(u.kind, te::detail::ArgKind::kInt);
  EXPECT_EQ(u.big, 1);
  EXPECT_EQ(u.u, uint64_t{1} << 63);
  EXPECT_EQ(message_of<te::TypeError>([] { fill(c10::Scalar(c10::complex<double>(1, 2))); }),
            "a c10::Scalar of type ComplexDouble has no Triton type; pass a bool, integer or "
            "floating-point scalar");
}

TEST(TorchArgs, TensorsSpecialiseLikePointers) {
  te::set_target(te::Target{"cuda", 90, 32});
  at::Tensor x = at::zeros({64}), y = at::zeros({64}), o = at::zeros({64});
  const te::CompiledKernel& a = add_kernel().compile(x, y, o, int64_t{64}, 16);
  const te::CompiledKernel& b = add_kernel().compile(
      te::Pointer(x.data_ptr(), te::DType::fp32), te::Pointer(y.data_ptr(), te::DType::fp32),
      te::Pointer(o.data_ptr(), te::DType::fp32), int64_t{64}, 16);
  EXPECT_EQ(&a, &b);
  const te::CompiledKernel& c = add_kernel().compile(x.slice(0, 1), y, o, int64_t{63}, 16);
  EXPECT_NE(c.hash(), a.hash());  // an unaligned view loses the 'D' specialisation
  EXPECT_NE(c.signature().find("x_ptr: *fp32,"), std::string::npos) << c.signature();
  te::set_target(std::nullopt);
}

TEST(TorchLaunch, CpuTensorsRunThroughTheInterpreter) {
  at::Tensor x = at::arange(1000, at::kFloat), y = at::full({1000}, 0.5f), out = at::zeros({1000});
  te::launch(add_kernel(), {te::cdiv(1000, 256)}, x, y, out, 1000, 256);
  EXPECT_TRUE(at::equal(out, x + y));
  at::Tensor out2 = at::zeros({1000});
  te::launch(
      add_kernel(),
      [](const te::Meta& m) { return te::Grid(te::cdiv(m["n_elements"], m["BLOCK"])); }, x, y, out2,
      1000, 128);
  EXPECT_TRUE(at::equal(out2, x + y));
}

TEST(TorchLaunch, Errors) {
  at::Tensor x = at::zeros({4}), c = at::zeros({4}, at::kComplexFloat);
  EXPECT_EQ(after_signature(
                message_of<te::TypeError>([&] { te::launch(add_kernel(), {1}, x, c, x, 4, 4); })),
            std::string() +
                "argument #1 'y_ptr': a tensor of dtype ComplexFloat has no Triton element "
                "type; pass bool, an integer, float8, float16, bfloat16, float32 or float64 "
                "tensor");
  at::Tensor m = at::zeros({4}, at::TensorOptions().device(at::kMeta));
  EXPECT_EQ(after_signature(
                message_of<te::ValueError>([&] { te::launch(add_kernel(), {1}, x, m, x, 4, 4); })),
            std::string() +
                "argument #1 'y_ptr': a tensor on meta cannot be launched on; pass CUDA "
                "tensors (GPU launch) or CPU tensors (Triton's interpreter)");
  if (have_gpu()) {
    // JitFunction::launch (no torch dispatch) refuses host memory.
    EXPECT_EQ(after_signature(message_of<te::ValueError>(
                  [&] { add_kernel().launch({1}, nullptr, x, x, x, 4, 4); })),
              std::string() +
                  "argument #0 'x_ptr': got a CPU tensor; a GPU launch needs device memory. "
                  "Move it to the GPU, or launch with triton_embed::launch "
                  "(<triton_embed/torch.h>), which runs CPU tensors through Triton's "
                  "interpreter");
    at::Tensor g = at::zeros({4}, at::kCUDA);
    EXPECT_EQ(after_signature(message_of<te::ValueError>(
                  [&] { te::launch(add_kernel(), {1}, g, x, g, 4, 4); })),
              std::string() +
                  "argument #1 'y_ptr': is on cpu, but argument #0 'x_ptr' is on cuda:0; all "
                  "tensors of a launch must be on one device");
  }
}

TEST(TorchLaunch, GpuUsesTorchsCurrentStream) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  const int64_t n = 1 << 20;
  at::Tensor x = at::rand({n}, at::kCUDA), y = at::rand({n}, at::kCUDA);
  at::Tensor out = at::empty({n}, at::kCUDA);
  c10::cuda::CUDAStream s = c10::cuda::getStreamFromPool();
  {
    c10::cuda::CUDAStreamGuard guard(s);
    te::launch(add_kernel(), {te::cdiv(n, 1024)}, x, y, out, n, 1024);
    // Queued behind the launch on the same stream, so it sees the result.
    s.synchronize();
  }
  EXPECT_TRUE(at::equal(out, x + y));
}

// Two GPUs (skipped with fewer): a launch runs on its tensors' device, whatever the current
// device, from threads that alternate devices; tensors on two GPUs in one launch are refused.
TEST(TorchLaunch, TwoGpusTensorsDeviceAndMixedDevices) {
  if (!have_gpu() || torch::cuda::device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  const int64_t n = 1 << 16;
  const at::Device d0(at::kCUDA, 0), d1(at::kCUDA, 1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  at::Tensor x1 = at::rand({n}, d1), y1 = at::rand({n}, d1), out1 = at::empty({n}, d1);
  te::launch(add_kernel(), {te::cdiv(n, 1024)}, x1, y1, out1, n, 1024);  // current: GPU 0
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
  c10::cuda::getCurrentCUDAStream(1).synchronize();
  EXPECT_TRUE(at::equal(out1, x1 + y1));
  at::Tensor x0 = at::rand({n}, d0), out0 = at::empty({n}, d0);
  try {
    te::launch(add_kernel(), {te::cdiv(n, 1024)}, x0, y1, out0, n, 1024);
    ADD_FAILURE() << "expected ValueError";
  } catch (const te::ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("is on cuda:1, but argument #0 'x_ptr' is on cuda:0; all tensors of a "
                     "launch must be on one device"),
              std::string::npos)
        << m;
  }
  // 4 threads, each alternating its launches between the GPUs; every result checked.
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const at::Device d = (i + t) % 2 == 0 ? d0 : d1;
        at::Tensor a = at::full({n}, static_cast<float>(i), d), b = at::full({n}, 1.0f, d);
        at::Tensor o = at::empty({n}, d);
        te::launch(add_kernel(), {te::cdiv(n, 1024)}, a, b, o, n, 1024);
        if (!at::equal(o.cpu(), at::full({n}, static_cast<float>(i) + 1.0f))) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(TorchLaunch, CachedTensorLaunchesDoNotAllocate) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  const int64_t n = 4096;
  at::Tensor x = at::rand({n}, at::kCUDA), y = at::rand({n}, at::kCUDA);
  at::Tensor out = at::empty({n}, at::kCUDA);
  te::launch(add_kernel(), {te::cdiv(n, 1024)}, x, y, out, n, 1024);  // compile and load
  {
    te_test::CountAllocations count;
    for (int i = 0; i < 1000; ++i)
      te::launch(add_kernel(), {te::cdiv(n, 1024)}, x, y, out, n, 1024);
    EXPECT_EQ(count.count(), 0u);
  }
  EXPECT_TRUE(at::equal(out, x + y));
}

// The torch layer under load (issue 11's soak, with the bad calls only tensors can make):
// eight threads, each on its own stream, launch an in-place accumulation over fp32 and fp64
// tensors with n a multiple of 16 or not (4096, 4001); one call in 1000 is bad (a CPU tensor beside
// CUDA ones, a complex tensor, a wrong argument count) and must throw exactly. Every 50,000
// launches each thread checks its accumulators; after a warm-up, resident and device memory
// end within 1 MiB (CTest runs this suite alone: device memory is the GPU's, not ours).
TEST(TorchSoak, EightThreadsWithMixedDeviceAndBadCalls) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  constexpr int kThreads = 8;
  constexpr int64_t kN = 4096, kPart = 4001, kCheckEvery = 50000;  // kPart: not a multiple of 16
  const char* env = std::getenv("TRITON_EMBED_TORCH_SOAK_LAUNCHES");
  const int64_t total = env != nullptr ? std::atoll(env) : (te_test::kSanitized ? 20000 : 2000000);
  const int64_t per_thread = total / kThreads;
  const te::JitFunction& add = add_kernel();

  struct Slot {
    at::Tensor acc32, one32, acc64, one64, host, cplx;
    int64_t full32 = 0, part32 = 0, full64 = 0, part64 = 0;  // launches of each variant
  };
  std::vector<Slot> slots(kThreads);
  for (Slot& sl : slots) {
    sl.acc32 = at::zeros({kN}, at::kCUDA);
    sl.one32 = at::ones({kN}, at::kCUDA);
    sl.acc64 = at::zeros({kN}, at::TensorOptions(at::kCUDA).dtype(at::kDouble));
    sl.one64 = at::ones({kN}, at::TensorOptions(at::kCUDA).dtype(at::kDouble));
    sl.host = at::zeros({kN});
    sl.cplx = at::zeros({kN}, at::TensorOptions(at::kCUDA).dtype(at::kComplexFloat));
  }
  // The exact outcome of each bad call, recorded once.
  const auto bad_call = [&](Slot& sl, int which) {
    switch (which) {
      case 0:
        te::launch(add, {1}, sl.acc32, sl.host, sl.acc32, kN, 1024);
        break;
      case 1:
        te::launch(add, {1}, sl.acc32, sl.cplx, sl.acc32, kN, 1024);
        break;
      default:
        te::launch(add, {1}, sl.acc32, sl.one32);
        break;
    }
  };
  std::vector<std::string> bad_what(3);
  std::vector<const std::type_info*> bad_type(3);
  for (int b = 0; b < 3; ++b) {
    try {
      bad_call(slots[0], b);
      FAIL() << "bad call " << b << " did not throw";
    } catch (const te::Error& e) {
      bad_what[b] = e.what();
      bad_type[b] = &typeid(e);
    }
  }
  EXPECT_EQ(*bad_type[0], typeid(te::ValueError));
  EXPECT_NE(bad_what[0].find("all tensors of a launch must be on one device"), std::string::npos);
  EXPECT_EQ(*bad_type[1], typeid(te::TypeError));
  EXPECT_EQ(*bad_type[2], typeid(te::TypeError));

  const auto one_launch = [&](Slot& sl, int64_t i) {
    switch (i % 4) {
      case 0:
        te::launch(add, {te::cdiv(kN, 1024)}, sl.acc32, sl.one32, sl.acc32, kN, 1024);
        ++sl.full32;
        break;
      case 1:
        te::launch(add, {te::cdiv(kPart, 512)}, sl.acc32, sl.one32, sl.acc32, kPart, 512);
        ++sl.part32;
        break;
      case 2:
        te::launch(add, {te::cdiv(kN, 1024)}, sl.acc64, sl.one64, sl.acc64, kN, 1024);
        ++sl.full64;
        break;
      default:
        te::launch(add, {te::cdiv(kPart, 256)}, sl.acc64, sl.one64, sl.acc64, kPart, 256);
        ++sl.part64;
        break;
    }
  };
  // Element j was added to by every launch of its dtype whose n covers it.
  const auto check = [&](const Slot& sl) {
    at::Tensor want32 = at::full({kN}, static_cast<double>(sl.full32), sl.acc32.options());
    want32.slice(0, 0, kPart).add_(static_cast<double>(sl.part32));
    at::Tensor want64 = at::full({kN}, static_cast<double>(sl.full64), sl.acc64.options());
    want64.slice(0, 0, kPart).add_(static_cast<double>(sl.part64));
    return at::equal(sl.acc32, want32) && at::equal(sl.acc64, want64);
  };

  std::atomic<bool> go{false};
  std::atomic<int> finished_warmup{0};
  std::vector<std::string> errors(kThreads);
  std::vector<int64_t> bad_calls(kThreads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      Slot& sl = slots[t];
      c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
      c10::cuda::CUDAStreamGuard guard(stream);
      // Warm-up: every variant compiled and loaded, one check (its temporaries cached).
      for (int64_t i = 0; i < 400; ++i) one_launch(sl, i);
      stream.synchronize();
      if (!check(sl)) errors[t] = "wrong result after the warm-up";
      finished_warmup.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (int64_t i = 0; i < per_thread && errors[t].empty(); ++i) {
        if (i % 1000 == 999) {
          const int which = static_cast<int>((i / 1000) % 3);
          try {
            bad_call(sl, which);
            errors[t] = "bad call " + std::to_string(which) + " did not throw";
          } catch (const te::Error& e) {
            if (typeid(e) != *bad_type[which] || bad_what[which] != e.what()) {
              errors[t] = std::string("bad call threw ") + e.what();
            }
          }
          ++bad_calls[t];
          continue;
        }
        one_launch(sl, i);
        if (i % kCheckEvery == kCheckEvery - 1) {
          stream.synchronize();
          if (!check(sl)) errors[t] = "wrong result after launch " + std::to_string(i);
        }
      }
      stream.synchronize();
      if (errors[t].empty() && !check(sl)) errors[t] = "wrong result at the end";
    });
  }
  while (finished_warmup.load() != kThreads) std::this_thread::yield();
  size_t free0 = 0, total_mem = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total_mem), cudaSuccess);
  const int64_t rss0 = te_test::rss_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true);
  for (auto& th : pool) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  int64_t launches = 0, bad = 0;
  for (int t = 0; t < kThreads; ++t) {
    const Slot& sl = slots[t];
    launches += sl.full32 + sl.part32 + sl.full64 + sl.part64 - 400;
    bad += bad_calls[t];
  }
  size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total_mem), cudaSuccess);
  const int64_t device_growth = static_cast<int64_t>(free0) - static_cast<int64_t>(free1);
  const int64_t rss_growth = te_test::rss_bytes() - rss0;
  std::printf(
      "soak (torch): %lld launches and %lld bad calls from %d threads in %.1f s; device "
      "memory %+lld bytes, resident memory %+lld bytes\n",
      static_cast<long long>(launches), static_cast<long long>(bad), kThreads, secs,
      static_cast<long long>(device_growth), static_cast<long long>(rss_growth));
  EXPECT_LE(device_growth, te_test::kMiB);
  if (te_test::under_cuda_tool()) {
    std::printf("a CUDA tool is injected: resident memory not checked\n");
  } else if (!te_test::kSanitized) {
    EXPECT_LE(rss_growth, te_test::kMiB);
  }
}

// ---- the ops, through the dispatcher ------------------------------------------------------

class Ops : public ::testing::TestWithParam<at::Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !have_gpu()) GTEST_SKIP() << "no GPU";
  }
  at::TensorOptions opts(at::ScalarType t = at::kFloat) const {
    return at::TensorOptions().dtype(t).device(GetParam());
  }
};

TEST_P(Ops, MatchAten) {
  at::manual_seed(0);
  at::Tensor a = at::randn({33, 65}, opts()), b = at::randn({65}, opts());
  EXPECT_TRUE(at::allclose(te::ops::add(a, b, 2), at::add(a, b, 2)));
  EXPECT_TRUE(at::allclose(te::ops::mul(a, b), at::mul(a, b)));
  at::Tensor out = at::empty({0}, opts());
  te::ops::add_out(out, a, b);
  EXPECT_TRUE(at::allclose(out, a + b));
  EXPECT_TRUE(at::allclose(te::ops::softmax(a), at::softmax(a, -1), 1e-5, 1e-6));
  at::Tensor w = at::randn({65}, opts()), bias = at::randn({65}, opts());
  EXPECT_TRUE(at::allclose(te::ops::layer_norm(a, {65}, w, bias), at::layer_norm(a, {65}, w, bias),
                           1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(te::ops::rms_norm(a, {65}, w), at::rms_norm(a, {65}, w), 1e-4, 1e-5));
  at::Tensor i = at::randint(-5, 5, {7, 9}, opts(at::kInt));
  at::Tensor s = te::ops::sum(i, 0);
  EXPECT_EQ(s.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(s, i.sum(0)));
}

TEST_P(Ops, AutogradFromCpp) {
  at::manual_seed(1);
  at::Tensor x = at::randn({5, 40}, opts()).requires_grad_();
  at::Tensor w = at::randn({40}, opts()).requires_grad_();
  te::ops::sum(te::ops::softmax(te::ops::layer_norm(x, {40}, w)), 0).pow(2).sum().backward();
  at::Tensor gx = x.grad().clone(), gw = w.grad().clone();
  x.mutable_grad().reset();
  w.mutable_grad().reset();
  at::softmax(at::layer_norm(x, {40}, w), -1).sum(0).pow(2).sum().backward();
  EXPECT_TRUE(at::allclose(gx, x.grad(), 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(gw, w.grad(), 1e-4, 1e-5));
}

TEST_P(Ops, ErrorsNameTheOpAndArgument) {
  at::Tensor a = at::zeros({4, 3}, opts());
  EXPECT_EQ(
      message_of<c10::ValueError>([&] { te::ops::layer_norm(a, {4}); })
          .find("triton_embed::layer_norm: argument 'input' of shape [4, 3] does not end with "
                "argument 'normalized_shape' [4]"),
      0u);
  EXPECT_EQ(
      message_of<c10::TypeError>([&] { te::ops::softmax(a.to(at::kInt)); })
          .find("triton_embed::softmax: argument 'self' must be a float16, bfloat16, float32 or "
                "float64 tensor, got Int"),
      0u);
}

INSTANTIATE_TEST_SUITE_P(Devices, Ops,
                         ::testing::Values(at::Device(at::kCPU), at::Device(at::kCUDA)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

// ---- wrapped kernels and named arguments through the torch layer ---------------------------

namespace {

using namespace triton_embed::literals;

te::Grid blocks(const te::Meta& m, int64_t n) { return te::Grid(te::cdiv(n, m["BLOCK"])); }

}  // namespace

TEST(TorchWrapped, HeuristicsAndNamedArgumentsOnCpuTensors) {
  static const te::JitFunction heur("te_tune_kernels", "heur_kernel");
  const at::Tensor x = at::arange(1000, at::kFloat);
  at::Tensor out = at::zeros_like(x);
  const int64_t n = x.numel();
  te::launch(
      heur, [&](const te::Meta& m) { return blocks(m, n); }, x, "out_ptr"_a = out, "n"_a = n);
  EXPECT_TRUE(at::equal(out, x * 2));
  // An autotuned kernel in the interpreter runs its first pruned config.
  static const te::JitFunction tuned("te_tune_kernels", "tuned_kernel");
  at::Tensor out2 = at::zeros_like(x);
  te::launch(
      tuned, [&](const te::Meta& m) { return blocks(m, n); }, x, out2, n, "ACT"_a = "neg");
  EXPECT_TRUE(at::equal(out2, x * -2));
}

TEST(TorchWrapped, AutotunedKernelsOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  static const te::JitFunction tuned("te_tune_kernels", "tuned_kernel");
  const at::Tensor x = at::randn({100000}, at::device(at::kCUDA).dtype(at::kFloat));
  at::Tensor out = at::zeros_like(x);
  const int64_t n = x.numel();
  auto grid = [&](const te::Meta& m) { return blocks(m, n); };
  te::launch(tuned, grid, x, out, n, "ACT"_a = "relu");
  EXPECT_TRUE(at::equal(out, at::relu(x * 2)));
  const te::TuningResult* r =
      tuned.tuning_result(x.data_ptr<float>(), out.data_ptr<float>(), n, "ACT"_a = "relu");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->key, "(100000, 'torch.float32', 'torch.float32')");
  EXPECT_EQ(r->timings.size(), 3u);
  // After tuning: C++ only.
  const long before = te::detail::testing::layer_python_calls();
  for (int i = 0; i < 100; ++i) te::launch(tuned, grid, x, out, n, "ACT"_a = "relu");
  EXPECT_EQ(te::detail::testing::layer_python_calls(), before);

  // reset_to_zero: the benchmark runs accumulate, the result does not.
  static const te::JitFunction accum("te_tune_kernels", "atomic_accum_kernel");
  const at::Tensor ones = at::ones({4096}, at::device(at::kCUDA).dtype(at::kInt));
  at::Tensor acc = at::zeros({1}, ones.options());
  te::launch(
      accum, [&](const te::Meta& m) { return blocks(m, 4096); }, ones, acc, int64_t{4096});
  EXPECT_EQ(acc.item<int>(), 4096);
  // A config pre-hook the runtime applies: nargs["acc_ptr"].zero_() before every launch, on
  // the launch's stream (torch's current), in C++; with a raw pointer it cannot be zeroed.
  static const te::JitFunction zeroing("te_tune_kernels", "zeroing_accum_kernel");
  at::Tensor acc2 = at::full({1}, 77, ones.options());
  const auto grid4096 = [&](const te::Meta& m) { return blocks(m, 4096); };
  te::launch(zeroing, grid4096, ones, acc2, int64_t{4096});  // tunes
  EXPECT_EQ(acc2.item<int>(), 4096);
  const long calls = te::detail::testing::layer_python_calls();
  for (int i = 0; i < 3; ++i) te::launch(zeroing, grid4096, ones, acc2, int64_t{4096});
  EXPECT_EQ(acc2.item<int>(), 4096);
  EXPECT_EQ(te::detail::testing::layer_python_calls(), calls);
  EXPECT_THROW(
      zeroing.launch(grid4096, nullptr, ones.data_ptr<int>(), acc2.data_ptr<int>(), int64_t{4096}),
      te::NotSupportedError);
  // restore_value: x += 1 applied once, whatever the benchmark ran.
  static const te::JitFunction inplace("te_tune_kernels", "inplace_kernel");
  at::Tensor y = at::zeros({5000}, at::device(at::kCUDA).dtype(at::kFloat));
  te::launch(
      inplace, [&](const te::Meta& m) { return blocks(m, 5000); }, y, int64_t{5000});
  EXPECT_TRUE(at::equal(y, at::ones_like(y)));

  // prepare, then capture and replay in a CUDA graph.
  at::Tensor out3 = at::zeros({70000}, x.options());
  const at::Tensor x3 = at::randn({70000}, x.options());
  auto grid3 = [&](const te::Meta& m) { return blocks(m, 70000); };
  tuned.prepare(grid3, x3.data_ptr<float>(), out3.data_ptr<float>(), int64_t{70000});
  const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream.stream(), cudaStreamCaptureModeGlobal), cudaSuccess);
  tuned.launch(grid3, stream.stream(), x3.data_ptr<float>(), out3.data_ptr<float>(),
               int64_t{70000});
  ASSERT_EQ(cudaStreamEndCapture(stream.stream(), &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream.stream()), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream.stream()), cudaSuccess);
  EXPECT_TRUE(at::equal(out3, x3 * 2));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  // A new key inside a capture: an error that says to prepare first.
  ASSERT_EQ(cudaStreamBeginCapture(stream.stream(), cudaStreamCaptureModeRelaxed), cudaSuccess);
  try {
    tuned.launch(grid3, stream.stream(), x3.data_ptr<float>(), out3.data_ptr<float>(),
                 int64_t{60000});
    ADD_FAILURE() << "expected NotSupportedError";
  } catch (const te::NotSupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("call prepare(grid, args...)"), std::string::npos)
        << e.what();
  }
  cudaGraph_t g2 = nullptr;
  cudaStreamEndCapture(stream.stream(), &g2);
  if (g2 != nullptr) cudaGraphDestroy(g2);
}
