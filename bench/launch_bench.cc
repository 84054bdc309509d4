// The C++ side of the launch-overhead benchmark (bench/run.py drives it and writes the report).
//
//   launch_bench gpu OUT.json [BUNDLE]
//                                  every GPU measurement in one process (and, given BUNDLE, a
//                                  kernel bundle of what it compiled, for bundle_bench): raw
//                                  cuLaunchKernelEx on the same cubin and arguments, triton_embed
//                                  with raw pointers and with at::Tensor, named arguments,
//                                  @triton.heuristics and
//                                  @triton.autotune kernels (after tuning), ops through the
//                                  dispatcher, argument count, two TMA descriptors, thread
//                                  scaling, memory of the interpreter
//   launch_bench first-launch      one process up to its first launch (run by run.py with an
//                                  empty and a warm Triton cache); prints a JSON line
//   launch_bench host-path N       CPU only: the host path up to the driver call for cuda:90,
//                                  N calls (run under callgrind in CI); prints a JSON line
//
// Times are host times per launch: the median over batches of back-to-back launches, with a
// stream synchronisation between batches (not timed) and warm-up launches first. Paths that
// are compared are measured interleaved, batch by batch. Each target row is also measured on
// its own as a pair (paired(): its path against its raw floor, alternating, the median of the
// per-round ratios): the targets are judged on these. The measuring thread stays on one CPU.

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <dlfcn.h>
#include <sched.h>
#include <torch/cuda.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>
#include <triton_embed/ops.h>
#include <triton_embed/torch.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_common.h"
#include "cuda_shim.h"
#include "testing/testing.h"

namespace te = triton_embed;
using bench::check;
using bench::Clock;
using bench::Driver;
using bench::seconds_since;

namespace {

constexpr int kBatches = 200;
using bench::kPerBatch;
using bench::kWarmup;
constexpr int64_t kN = 4096;  // 4 programs of the 1024-wide vector add
constexpr int kBlock = 1024;

// A kernel compiled by triton_embed, loaded a second time straight from its cubin.
struct RawKernel {
  CUfunction fn = nullptr;
  unsigned block = 0, shared = 0;
  RawKernel(const Driver& d, const te::CompiledKernel& k) {
    CUmodule m = nullptr;
    check(d.module_load_data(&m, k.cubin().data()), "cuModuleLoadData");
    check(d.module_get_function(&fn, m, k.name().c_str()), "cuModuleGetFunction");
    block = static_cast<unsigned>(32 * k.num_warps());
    shared = static_cast<unsigned>(k.shared());
  }
  // params: the runtime arguments followed by Triton's two (null) scratch pointers.
  void launch(const Driver& d, unsigned grid, CUstream s, void** params) const {
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = block;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = shared;
    cfg.hStream = s;
    check(d.launch_kernel_ex(&cfg, fn, params, nullptr), "cuLaunchKernelEx");
  }
};

// Median host time per call of each function, in microseconds. The functions are measured
// interleaved, batch by batch, so that they all see the same machine conditions.
std::vector<double> per_call_us(const std::vector<std::function<void()>>& fs, CUstream s,
                                const Driver& d) {
  for (const auto& f : fs) {
    for (int i = 0; i < kWarmup; ++i) f();
  }
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  std::vector<std::vector<double>> t(fs.size());
  for (int b = 0; b < kBatches; ++b) {
    for (size_t k = 0; k < fs.size(); ++k) {
      const auto t0 = Clock::now();
      for (int i = 0; i < kPerBatch; ++i) fs[k]();
      t[k].push_back(seconds_since(t0) * 1e6 / kPerBatch);
      check(d.stream_synchronize(s), "cuStreamSynchronize");
    }
  }
  std::vector<double> medians;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    medians.push_back(v[v.size() / 2]);
  }
  return medians;
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

template <size_t... I>
void launch_n(const te::JitFunction& fn, te::Stream s, const std::vector<float*>& p,
              std::index_sequence<I...>) {
  fn.launch({1}, s, p[I]...);
}

struct Json {
  std::ostringstream os;
  bool first = true;
  Json() { os << "{"; }
  Json& num(const std::string& k, double v) {
    os << (first ? "" : ", ") << "\"" << k << "\": " << v;
    first = false;
    return *this;
  }
  Json& str(const std::string& k, const std::string& v) {
    os << (first ? "" : ", ") << "\"" << k << "\": \"";
    for (char c : v) {
      if (c == '"' || c == '\\') os << '\\';
      os << c;
    }
    os << "\"";
    first = false;
    return *this;
  }
  std::string str() const { return os.str() + "}"; }
};

// One target row measured on its own (bench::paired): writes pair_<name>_ratio (the median
// of the rounds' ratios), _p25 and _p75 (its quartiles), and _raw_us / _ours_us.
void paired(Json& out, const std::string& name, const std::function<void()>& raw,
            const std::function<void()>& ours, CUstream s, const Driver& d) {
  const bench::Pair r = bench::paired(raw, ours, s, d);
  const std::string p = "pair_" + name;
  out.num(p + "_ratio", r.ratio)
      .num(p + "_p25", r.p25)
      .num(p + "_p75", r.p75)
      .num(p + "_raw_us", r.raw_us)
      .num(p + "_ours_us", r.ours_us);
}

// ---- gpu ----------------------------------------------------------------------------------

template <size_t N>
void args_case(Json& out, const Driver& d, CUstream s) {
  const te::JitFunction fn("bench_kernels", "args_" + std::to_string(N));
  std::vector<at::Tensor> bufs;
  std::vector<float*> p;
  for (size_t i = 0; i < N; ++i) {
    bufs.push_back(at::zeros({16}, at::kCUDA));
    p.push_back(bufs.back().data_ptr<float>());
  }
  auto ours = [&] {
    launch_n(fn, reinterpret_cast<te::Stream>(s), p, std::make_index_sequence<N>{});
  };
  ours();
  const te::CompiledKernel& k = [&]() -> const te::CompiledKernel& {
    std::array<te::Pointer, N> ptrs;
    for (size_t i = 0; i < N; ++i) ptrs[i] = te::Pointer(p[i], te::DType::fp32);
    return std::apply(
        [&](const auto&... a) -> const te::CompiledKernel& { return fn.compile(a...); }, ptrs);
  }();
  RawKernel raw(d, k);
  std::vector<uint64_t> slots(N + 2, 0);
  std::vector<void*> params(N + 2);
  for (size_t i = 0; i < N; ++i) slots[i] = reinterpret_cast<uint64_t>(p[i]);
  for (size_t i = 0; i < N + 2; ++i) params[i] = &slots[i];
  const std::vector<double> t =
      per_call_us({[&] { raw.launch(d, 1, s, params.data()); }, ours}, s, d);
  const double r = t[0], o = t[1];
  out.num("args" + std::to_string(N) + "_raw_us", r)
      .num("args" + std::to_string(N) + "_ours_us", o);
  if (N == 32)
    paired(
        out, "args32", [&] { raw.launch(d, 1, s, params.data()); }, ours, s, d);
}

// The value of meta-parameter `name` in a tuned configuration (Python's repr of an int).
int64_t config_int(const te::TunedConfig& c, const std::string& name) {
  for (const auto& kv : c.kwargs) {
    if (kv.first == name) return std::stoll(kv.second);
  }
  throw std::runtime_error("config '" + c.str + "' has no " + name);
}

// Named arguments, @triton.heuristics and @triton.autotune after tuning, each measured in one
// interleaved group beside raw cuLaunchKernelEx on the cubin that very launch runs (the
// kernel compile()/prepare() give for the same arguments): the raw floor of each row is its
// own kernel's. All three kernels are the 4096-element vector add (x, y, out, n; BLOCK and
// the heuristic's EVEN are constexprs), so each passes the same 6 kernel parameters.
// Ops whose kernels pick num_warps by @triton.heuristics, against ATen, in device-inclusive
// time: each round is 20 calls and a stream synchronisation, interleaved, median of 30 rounds.
void ops_device_case(Json& out, const Driver& d, CUstream s) {
  struct Shape {
    const char* name;
    int64_t rows, cols;
    at::ScalarType dtype;
  };
  for (const Shape& sh : {Shape{"softmax_4096x1000_fp32", 4096, 1000, at::kFloat},
                          Shape{"softmax_1024x8192_fp32", 1024, 8192, at::kFloat},
                          Shape{"layer_norm_4096x4096_fp16", 4096, 4096, at::kHalf}}) {
    const at::Tensor x = at::randn({sh.rows, sh.cols}, at::device(at::kCUDA).dtype(sh.dtype));
    const at::Tensor w = at::randn({sh.cols}, at::device(at::kCUDA).dtype(sh.dtype));
    const at::Tensor b = at::randn({sh.cols}, at::device(at::kCUDA).dtype(sh.dtype));
    const bool softmax = std::string(sh.name).rfind("softmax", 0) == 0;
    std::function<void()> ours = [&] {
      (void)(softmax ? te::ops::softmax(x) : te::ops::layer_norm(x, {sh.cols}, w, b));
    };
    std::function<void()> aten = [&] {
      (void)(softmax ? at::softmax(x, -1) : at::layer_norm(x, {sh.cols}, w, b));
    };
    std::vector<std::function<void()>> fs{ours, aten};
    for (auto& f : fs) {
      for (int i = 0; i < 5; ++i) f();
    }
    check(d.stream_synchronize(s), "cuStreamSynchronize");
    std::vector<std::vector<double>> t(fs.size());
    for (int round = 0; round < 30; ++round) {
      for (size_t k = 0; k < fs.size(); ++k) {
        const auto t0 = Clock::now();
        for (int i = 0; i < 20; ++i) fs[k]();
        check(d.stream_synchronize(s), "cuStreamSynchronize");
        t[k].push_back(seconds_since(t0) * 1e6 / 20);
      }
    }
    for (auto& v : t) std::sort(v.begin(), v.end());
    out.num(std::string("op_") + sh.name + "_te_us", t[0][t[0].size() / 2]);
    out.num(std::string("op_") + sh.name + "_at_us", t[1][t[1].size() / 2]);
  }
}

void layers_case(Json& out, const Driver& d, CUstream s, const float* xp, const float* yp,
                 float* op) {
  using namespace te::literals;
  const te::Stream ts = reinterpret_cast<te::Stream>(s);
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const te::JitFunction heur("bench_kernels", "add_heuristics_kernel");
  const te::JitFunction tuned("bench_kernels", "add_autotune_kernel");

  // Tune first (on the GPU, on this stream), outside the timing: prepare() returns the chosen
  // configuration's kernel, tuning_result() the choice.
  auto tuned_grid = [](const te::Meta& m) { return te::Grid(te::cdiv(kN, m["BLOCK"])); };
  const te::CompiledKernel& kt = tuned.prepare(tuned_grid, xp, yp, op, kN);
  const te::TuningResult* tr = tuned.tuning_result(xp, yp, op, kN);
  if (tr == nullptr)
    throw std::runtime_error("add_autotune_kernel: no tuning result after prepare()");
  const unsigned tuned_programs =
      static_cast<unsigned>(te::cdiv(kN, config_int(tr->best, "BLOCK")));
  if (kt.num_warps() != tr->best.num_warps) {
    throw std::runtime_error("prepare() gave a kernel of another config than " + tr->best.str);
  }
  const te::CompiledKernel& kh = heur.compile(xp, yp, op, kN, kBlock);
  const te::CompiledKernel& ka = add.compile(xp, yp, op, kN, kBlock);
  for (const te::CompiledKernel* k : {&ka, &kh, &kt}) {
    if (k->num_kernel_params() != 6) {
      throw std::runtime_error(k->name() + ": expected 6 kernel parameters, got " +
                               std::to_string(k->num_kernel_params()));
    }
  }
  const RawKernel raw_add(d, ka), raw_heur(d, kh), raw_tuned(d, kt);
  int n = static_cast<int>(kN);
  uint64_t slots[6] = {reinterpret_cast<uint64_t>(xp),
                       reinterpret_cast<uint64_t>(yp),
                       reinterpret_cast<uint64_t>(op),
                       0,
                       0,
                       0};
  void* params[6];
  for (int i = 0; i < 6; ++i) params[i] = &slots[i];
  params[3] = &n;

  const std::vector<double> t = per_call_us(
      {[&] { raw_add.launch(d, 4, s, params); },
       [&] { add.launch({4}, ts, xp, yp, op, kN, kBlock); },
       [&] { add.launch({4}, ts, xp, yp, op, "n_elements"_a = kN, "BLOCK"_a = kBlock); },
       [&] { raw_heur.launch(d, 4, s, params); },
       [&] { heur.launch({4}, ts, xp, yp, op, kN, kBlock); },
       [&] { raw_tuned.launch(d, tuned_programs, s, params); },
       [&] { tuned.launch(tuned_grid, ts, xp, yp, op, kN); },
       [&] { tuned.launch({tuned_programs}, ts, xp, yp, op, kN); }},
      s, d);
  out.num("layers_raw_us", t[0]).num("layers_positional_us", t[1]).num("layers_named_us", t[2]);
  out.num("layers_heuristics_raw_us", t[3]).num("layers_heuristics_us", t[4]);
  out.num("layers_autotune_raw_us", t[5]).num("layers_autotune_us", t[6]);
  out.num("layers_autotune_fixed_grid_us", t[7]);
  paired(
      out, "named", [&] { raw_add.launch(d, 4, s, params); },
      [&] { add.launch({4}, ts, xp, yp, op, "n_elements"_a = kN, "BLOCK"_a = kBlock); }, s, d);
  paired(
      out, "named_vs_positional", [&] { add.launch({4}, ts, xp, yp, op, kN, kBlock); },
      [&] { add.launch({4}, ts, xp, yp, op, "n_elements"_a = kN, "BLOCK"_a = kBlock); }, s, d);
  paired(
      out, "heuristics", [&] { raw_heur.launch(d, 4, s, params); },
      [&] { heur.launch({4}, ts, xp, yp, op, kN, kBlock); }, s, d);
  paired(
      out, "autotune", [&] { raw_tuned.launch(d, tuned_programs, s, params); },
      [&] { tuned.launch(tuned_grid, ts, xp, yp, op, kN); }, s, d);
  paired(
      out, "autotune_fixed_grid", [&] { raw_tuned.launch(d, tuned_programs, s, params); },
      [&] { tuned.launch({tuned_programs}, ts, xp, yp, op, kN); }, s, d);
  out.str("layers_autotune_best", tr->best.str);
}

// Two host tensor descriptors (TMA): ours, which checks each descriptor's cached CUtensorMap
// and packs map, shape and strides per launch, against raw cuLaunchKernelEx with the maps
// encoded once beforehand (the bytes our first launch encoded).
void tma_case(Json& out, const Driver& d, CUstream s) {
  constexpr int64_t M = 256, N = 64, BM = 64;
  const at::Tensor x = at::rand({M, N}, at::kCUDA);
  at::Tensor y = at::zeros({M, N}, at::kCUDA);
  const te::TensorDescriptor src(x.data_ptr(), te::DType::fp32, {M, N}, {N, 1}, {BM, N});
  const te::TensorDescriptor dst(y.data_ptr(), te::DType::fp32, {M, N}, {N, 1}, {BM, N});
  const te::JitFunction fn("bench_kernels", "tma_copy");
  const te::Stream ts = reinterpret_cast<te::Stream>(s);
  const unsigned programs = static_cast<unsigned>(M / BM);
  fn.launch({programs}, ts, src, dst, BM, N);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  if (!at::equal(x, y)) throw std::runtime_error("tma_copy: the copy differs from its source");
  const RawKernel raw(d, fn.compile(src, dst, BM, N));
  alignas(64) unsigned char map_src[128], map_dst[128];
  std::memcpy(map_src, te::detail::testing::tensor_map_bytes(src), sizeof(map_src));
  std::memcpy(map_dst, te::detail::testing::tensor_map_bytes(dst), sizeof(map_dst));
  int32_t shape[2] = {static_cast<int32_t>(M), static_cast<int32_t>(N)};
  int64_t strides[2] = {N, 1};
  uint64_t scratch[2] = {0, 0};
  // Per descriptor, as Triton's launcher: the map by value, the shape (i32), the strides (i64).
  void* params[] = {map_src,   &shape[0], &shape[1],   &strides[0], &strides[1], map_dst,
                    &shape[0], &shape[1], &strides[0], &strides[1], &scratch[0], &scratch[1]};
  y.zero_();
  raw.launch(d, programs, s, params);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  if (!at::equal(x, y)) throw std::runtime_error("tma_copy: the raw launch's copy differs");
  const std::vector<double> t = per_call_us({[&] { raw.launch(d, programs, s, params); },
                                             [&] { fn.launch({programs}, ts, src, dst, BM, N); }},
                                            s, d);
  out.num("tma_raw_us", t[0]).num("tma_ours_us", t[1]);
  paired(
      out, "tma", [&] { raw.launch(d, programs, s, params); },
      [&] { fn.launch({programs}, ts, src, dst, BM, N); }, s, d);

  // The same copy autotuned, each config's pre-hook setting the descriptors' block shapes
  // (the runtime applies it in C++): the caller's descriptors are placeholders; the raw floor
  // is the chosen cubin with the maps above.
  const te::TensorDescriptor hsrc(x.data_ptr(), te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const te::TensorDescriptor hdst(y.data_ptr(), te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const te::JitFunction tuned("bench_kernels", "tma_copy_tuned");
  const auto grid = [&](const te::Meta& m) { return te::Grid(te::cdiv(M, m["BLOCK_M"])); };
  y.zero_();
  tuned.launch(grid, ts, hsrc, hdst, M);  // tunes
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  if (!at::equal(x, y)) throw std::runtime_error("tma_copy_tuned: the copy differs");
  const RawKernel raw_tuned(d, tuned.compile(hsrc, hdst, M));
  int32_t n_rows = static_cast<int32_t>(M);
  void* tuned_params[] = {map_src, &shape[0],   &shape[1],  &strides[0], &strides[1],
                          map_dst, &shape[0],   &shape[1],  &strides[0], &strides[1],
                          &n_rows, &scratch[0], &scratch[1]};
  y.zero_();
  raw_tuned.launch(d, programs, s, tuned_params);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  if (!at::equal(x, y)) throw std::runtime_error("tma_copy_tuned: the raw launch's copy differs");
  paired(
      out, "tma_pre_hook", [&] { raw_tuned.launch(d, programs, s, tuned_params); },
      [&] { tuned.launch(grid, ts, hsrc, hdst, M); }, s, d);
  out.str("tma_pre_hook_best", tuned.tuning_result(hsrc, hdst, M)->best.str);
}

// Aggregate launches per second of `threads` threads, each on its own stream.
double threads_rate(int threads, bool raw_path, const Driver& d, const RawKernel& raw,
                    const te::JitFunction& add, CUcontext ctx, const at::Tensor& x,
                    const at::Tensor& y, const at::Tensor& o) {
  constexpr int kLaunches = 20000;
  std::vector<c10::cuda::CUDAStream> streams;
  for (int i = 0; i < threads; ++i) streams.push_back(c10::cuda::getStreamFromPool());
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      check(d.ctx_set_current(ctx), "cuCtxSetCurrent");
      CUstream s = streams[t].stream();
      const float* xp = x.data_ptr<float>();
      const float* yp = y.data_ptr<float>();
      float* op = o.data_ptr<float>();
      int n = static_cast<int>(kN);
      uint64_t slots[6] = {reinterpret_cast<uint64_t>(xp),
                           reinterpret_cast<uint64_t>(yp),
                           reinterpret_cast<uint64_t>(op),
                           static_cast<uint64_t>(n),
                           0,
                           0};
      void* params[6];
      for (int i = 0; i < 6; ++i) params[i] = &slots[i];
      params[3] = &n;
      auto one = [&] {
        if (raw_path) {
          raw.launch(d, 4, s, params);
        } else {
          add.launch({4}, reinterpret_cast<te::Stream>(s), xp, yp, op, kN, kBlock);
        }
      };
      for (int i = 0; i < 1000; ++i) one();
      check(d.stream_synchronize(s), "cuStreamSynchronize");
      ready.fetch_add(1);
      while (!go.load()) {
      }
      for (int i = 0; i < kLaunches; ++i) one();
    });
  }
  while (ready.load() != threads) {
  }
  const auto t0 = Clock::now();
  go.store(true);
  for (auto& th : pool) th.join();
  const double secs = seconds_since(t0);
  for (auto& s : streams) s.synchronize();
  return threads * static_cast<double>(kLaunches) / secs;
}

void init() {
  te::RuntimeOptions opts;
  opts.python_paths.push_back(TE_BENCH_DIR);
  te::initialize(opts);
}

int run_gpu(const char* out_path, const char* bundle_path) {
  Json out;
  // One core for the whole run: the paths compared never differ by where the scheduler put
  // them (the thread-scaling rows below start their own threads, unpinned).
  cpu_set_t all_cpus;
  const bool have_mask = sched_getaffinity(0, sizeof(all_cpus), &all_cpus) == 0;
  const int cpu = sched_getcpu();
  if (have_mask && cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) == 0) out.num("pinned_cpu", cpu);
  }
  out.num("pair_rounds", bench::kPairRounds);
  const long rss0 = rss_kib();
  init();
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const long rss1 = rss_kib();
  out.num("rss_interpreter_and_imports_mib", (rss1 - rss0) / 1024.0);

  if (!torch::cuda::is_available()) throw std::runtime_error("no GPU");
  const Driver d;
  at::Tensor x = at::rand({kN}, at::kCUDA), y = at::rand({kN}, at::kCUDA);
  at::Tensor o = at::empty({kN}, at::kCUDA);
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard guard(stream);
  CUstream s = stream.stream();
  CUcontext ctx = nullptr;
  check(d.ctx_get_current(&ctx), "cuCtxGetCurrent");

  const float* xp = x.data_ptr<float>();
  const float* yp = y.data_ptr<float>();
  float* op = o.data_ptr<float>();
  const te::CompiledKernel& k = add.compile(xp, yp, op, kN, kBlock);
  RawKernel raw(d, k);
  int n = static_cast<int>(kN);
  uint64_t slots[6] = {reinterpret_cast<uint64_t>(xp),
                       reinterpret_cast<uint64_t>(yp),
                       reinterpret_cast<uint64_t>(op),
                       0,
                       0,
                       0};
  void* params[6];
  for (int i = 0; i < 6; ++i) params[i] = &slots[i];
  params[3] = &n;
  const te::Stream ts = reinterpret_cast<te::Stream>(s);

  const std::vector<double> t = per_call_us(
      {[&] { raw.launch(d, 4, s, params); }, [&] { add.launch({4}, ts, xp, yp, op, kN, kBlock); },
       [&] { te::launch(add, {4}, x, y, o, kN, kBlock); }, [&] { (void)te::ops::add(x, y); },
       [&] { (void)at::add(x, y); }},
      s, d);
  out.num("raw_us", t[0]).num("ours_pointers_us", t[1]).num("ours_tensors_us", t[2]);
  out.num("op_triton_embed_add_us", t[3]).num("op_at_add_us", t[4]);
  // What the launch path's one driver call besides the launch (cuCtxGetCurrent: which
  // context, so which loaded function and which target) costs on its own.
  {
    CUcontext c = nullptr;
    const std::vector<double> tc =
        per_call_us({[&] { check(d.ctx_get_current(&c), "cuCtxGetCurrent"); }}, s, d);
    out.num("cu_ctx_get_current_us", tc[0]);
  }
  paired(
      out, "pointers", [&] { raw.launch(d, 4, s, params); },
      [&] { add.launch({4}, ts, xp, yp, op, kN, kBlock); }, s, d);
  paired(
      out, "tensors", [&] { raw.launch(d, 4, s, params); },
      [&] { te::launch(add, {4}, x, y, o, kN, kBlock); }, s, d);
  // A second handle to the same kernel: its first launch is an in-memory cache hit.
  {
    const te::JitFunction again("pykernels.vector", "add_kernel");
    const auto t0 = Clock::now();
    again.launch({4}, ts, xp, yp, op, kN, kBlock);
    out.num("first_launch_in_memory_hit_us", seconds_since(t0) * 1e6);
  }

  layers_case(out, d, s, xp, yp, op);
  ops_device_case(out, d, s);

  args_case<1>(out, d, s);
  args_case<4>(out, d, s);
  args_case<16>(out, d, s);
  args_case<32>(out, d, s);
  tma_case(out, d, s);

  // Threads inherit the caller's mask: give the scaling rows every CPU again.
  if (have_mask) sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
  for (int t : {1, 2, 4, 8}) {
    out.num("threads" + std::to_string(t) + "_raw_launches_per_s",
            threads_rate(t, true, d, raw, add, ctx, x, y, o));
    out.num("threads" + std::to_string(t) + "_ours_launches_per_s",
            threads_rate(t, false, d, raw, add, ctx, x, y, o));
  }

  // For bundle_bench's rows that launch what nobody recorded: add_kernel with BLOCK 256 only
  // at n = 1000 (an `n_elements: i32` entry, which serves its n = 4096 call, `i32 D`), and a
  // tuning rule for add_autotune_kernel (tuned at n = 4096 only), which serves its n = 2048.
  add.compile(xp, yp, op, int64_t{1000}, 256);
  te::set_tuning_rule("bench_kernels.add_autotune_kernel", "n_elements=nearest");
  // What this run compiled, for bundle_bench (a runtime-only program) to launch from.
  if (bundle_path != nullptr) te::write_bundle(bundle_path);

  std::ofstream f(out_path);
  f << out.str() << "\n";
  std::printf("%s\n", out.str().c_str());
  return 0;
}

// ---- first-launch -------------------------------------------------------------------------

int run_first_launch() {
  const auto t0 = Clock::now();
  init();
  const double init_s = seconds_since(t0);
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const double load_s = seconds_since(t0);
  at::Tensor x = at::rand({kN}, at::kCUDA), y = at::rand({kN}, at::kCUDA);
  at::Tensor o = at::empty({kN}, at::kCUDA);
  const auto t1 = Clock::now();
  te::launch(add, {4}, x, y, o, kN, kBlock);
  const double first_s = seconds_since(t1);
  c10::cuda::getCurrentCUDAStream().synchronize();
  Json out;
  out.num("interpreter_start_s", init_s)
      .num("kernel_import_s", load_s - init_s)
      .num("first_launch_s", first_s)
      .num("main_to_first_launch_s", seconds_since(t0));
  std::printf("%s\n", out.str().c_str());
  return 0;
}

// ---- tune-matmul (issue 39) ----------------------------------------------------------------

// The first launch of tuning_kernels.tma_matmul_48 at SIZE x SIZE x SIZE (fp16, on a grid of
// at most SMS programs) in a new
// process: its 48 configs compiled (on the compile workers) and benchmarked one at a time
// by Triton's Autotuner, then the chosen config's launch. bench/tuning_bench.py runs it with an
// empty Triton cache, against Triton's Autotuner in Python on the same kernel. `prepared`: the
// program prepares the tuning (prepare_tuning(true): torch imported, Triton's driver started)
// before its setup, as a Python program has imported torch before its first launch.
int run_tune_matmul(int64_t size, int64_t sms, bool prepared) {
  const auto t0 = Clock::now();
  init();
  const te::JitFunction k("tuning_kernels", "tma_matmul_48");
  if (prepared) te::prepare_tuning(true);
  const at::TensorOptions f16 = at::TensorOptions().dtype(at::kHalf).device(at::kCUDA);
  at::Tensor a = at::randn({size, size}, f16), b = at::randn({size, size}, f16);
  at::Tensor c = at::empty({size, size}, f16);
  // Placeholder block shapes: each config's pre-hook sets them (applied in C++).
  const te::TensorDescriptor ad(a.data_ptr(), te::DType::fp16, {size, size}, {size, 1}, {64, 64});
  const te::TensorDescriptor bd(b.data_ptr(), te::DType::fp16, {size, size}, {size, 1}, {64, 64});
  const te::TensorDescriptor cd(c.data_ptr(), te::DType::fp16, {size, size}, {size, 1}, {64, 64});
  const auto grid = [&](const te::Meta& m) {
    return te::Grid(std::min(sms, te::cdiv(size, m["BLOCK_M"]) * te::cdiv(size, m["BLOCK_N"])));
  };
  const double start_s = seconds_since(t0);
  const auto t1 = Clock::now();
  te::launch(k, grid, ad, bd, cd, size, size, size, sms);
  c10::cuda::getCurrentCUDAStream().synchronize();
  const double tune_s = seconds_since(t1);
  const te::TuningResult* r = k.tuning_result(ad, bd, cd, size, size, size, sms);
  at::Tensor ref = at::matmul(a.to(at::kFloat), b.to(at::kFloat).t());
  const double err = (c.to(at::kFloat) - ref).abs().max().item<double>();
  Json out;
  out.num("workers", static_cast<double>(te::compile_workers()))
      .num("start_s", start_s)
      .num("tune_s", tune_s)
      .num("compile_s", r != nullptr ? r->compile_seconds : -1.0)
      .num("tuning_s", r != nullptr ? r->seconds : -1.0)
      .num("configs_timed", r != nullptr ? static_cast<double>(r->timings.size()) : -1.0)
      .num("max_abs_err", err)
      .str("best", r != nullptr ? r->best.str : std::string());
  std::printf("%s\n", out.str().c_str());
  return 0;
}

// ---- host-path (CPU) ----------------------------------------------------------------------

// The measured loop; callgrind collects inside this function only.
__attribute__((noinline)) void host_path_loop(const te::JitFunction& add, long calls, float* x,
                                              float* y, float* o) {
  uint64_t slots[8];
  for (long i = 0; i < calls; ++i) {
    te::detail::testing::dry_run(add, slots, x, y, o, kN, kBlock);
  }
}

int run_host_path(long calls) {
  init();
  te::set_target(te::Target{"cuda", 90, 32});
  const te::JitFunction add("pykernels.vector", "add_kernel");
  // 16-byte aligned fake device addresses: the host path never dereferences them.
  float* x = reinterpret_cast<float*>(uintptr_t{0x10000});
  float* y = reinterpret_cast<float*>(uintptr_t{0x20000});
  float* o = reinterpret_cast<float*>(uintptr_t{0x30000});
  uint64_t slots[8];
  te::detail::testing::dry_run(add, slots, x, y, o, kN, kBlock);  // compile (or disk hit)
  host_path_loop(add, 1000, x, y, o);                             // warm
  const auto t0 = Clock::now();
  host_path_loop(add, calls, x, y, o);
  Json out;
  out.num("calls", static_cast<double>(calls))
      .num("host_path_ns_per_call", seconds_since(t0) * 1e9 / static_cast<double>(calls));
  std::printf("%s\n", out.str().c_str());
  return 0;
}

// The TMA rows' host path without a GPU: two host descriptors to tma_copy, and to
// tma_copy_one_config, whose config pre-hook sets their block shapes (applied in C++). The
// maps are encoded by a stand-in: this mode loads the tests' CUDA shim (TE_CUDA_SHIM, built
// with the tests) in place of the driver, whatever TRITON_EMBED_LIBCUDA says, and sets its
// encoder; both maps are cached as a launch's are. The other modes use the real driver.
__attribute__((noinline)) void host_path_tma_loop(const te::JitFunction& fn, long calls,
                                                  const te::TensorDescriptor& src,
                                                  const te::TensorDescriptor& dst, bool hooked) {
  uint64_t slots[16];
  for (long i = 0; i < calls; ++i) {
    if (hooked) {
      te::detail::testing::dry_run(fn, slots, src, dst, int64_t{256});
    } else {
      te::detail::testing::dry_run(fn, slots, src, dst, 64, 64);
    }
  }
}

int run_host_path_tma(long calls) {
  setenv("TRITON_EMBED_LIBCUDA", TE_CUDA_SHIM, 1);  // before the runtime loads a driver
  init();
  te::set_target(te::Target{"cuda", 90, 32});
  te_cuda_shim::set_encoder(
      [](const te_cuda_shim::EncodeCall&, unsigned char* map) { std::memset(map, 0, 128); });
  constexpr int64_t M = 256, N = 64;
  const uint64_t x = 0x10000, y = 0x20000;
  const te::TensorDescriptor src(x, te::DType::fp32, {M, N}, {N, 1}, {64, N});
  const te::TensorDescriptor dst(y, te::DType::fp32, {M, N}, {N, 1}, {64, N});
  const te::TensorDescriptor hsrc(x, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const te::TensorDescriptor hdst(y, te::DType::fp32, {M, N}, {N, 1}, {1, 1});
  const te::JitFunction plain("bench_kernels", "tma_copy");
  const te::JitFunction hooked("bench_kernels", "tma_copy_one_config");
  Json out;
  out.num("calls", static_cast<double>(calls));
  for (const bool h : {false, true}) {
    const te::JitFunction& fn = h ? hooked : plain;
    const te::TensorDescriptor& s = h ? hsrc : src;
    const te::TensorDescriptor& d = h ? hdst : dst;
    uint64_t slots[16];
    for (int i = 0; i < 1000; ++i) {  // compile (or disk hit), then warm
      if (h) {
        te::detail::testing::dry_run(fn, slots, s, d, int64_t{256});
      } else {
        te::detail::testing::dry_run(fn, slots, s, d, 64, 64);
      }
    }
    const auto t0 = Clock::now();
    host_path_tma_loop(fn, calls, s, d, h);
    out.num(h ? "pre_hook_ns_per_call" : "tma_ns_per_call",
            seconds_since(t0) * 1e9 / static_cast<double>(calls));
  }
  std::printf("%s\n", out.str().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "gpu" && argc > 2) return run_gpu(argv[2], argc > 3 ? argv[3] : nullptr);
    if (mode == "first-launch") return run_first_launch();
    if (mode == "tune-matmul" && argc > 3) {
      return run_tune_matmul(std::atoll(argv[2]), std::atoll(argv[3]),
                             argc > 4 && std::string(argv[4]) == "prepared");
    }
    if (mode == "host-path" && argc > 2) return run_host_path(std::atol(argv[2]));
    if (mode == "host-path-tma" && argc > 2) return run_host_path_tma(std::atol(argv[2]));
    std::fprintf(
        stderr,
        "usage: %s gpu OUT.json [BUNDLE] | first-launch | tune-matmul SIZE SMS [prepared] | "
        "host-path CALLS | host-path-tma CALLS\n",
        argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
