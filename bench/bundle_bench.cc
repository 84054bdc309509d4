// The deployment side of the benchmark: a program linked to triton_embed::runtime only (no
// Python, no torch) that launches pykernels.vector.add_kernel from a kernel bundle.
//
//   bundle_bench BUNDLE    prints one JSON line:
//     context_s            process start to a current CUDA context (the driver's cost, not ours)
//     first_launch_s       then: load the bundle, the kernel, launch once and synchronise
//     rss_before_mib       resident memory once the context exists
//     rss_added_mib        what loading the bundle and the kernel and launching added
//     raw_us / ours_us / ratio, p25, p75
//                          host time per launch against raw cuLaunchKernelEx on the same cubin,
//                          measured as launch_bench's paired rows (alternating batches)
//     correct              the launch's output equals x + y, bit for bit
// bench/run.py runs it in fresh processes on the bundle launch_bench wrote.

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>

namespace te = triton_embed;
using Clock = std::chrono::steady_clock;

namespace {

const Clock::time_point g_start = Clock::now();  // as early as static initialisation gets

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6) / 1024.0;
  }
  return -1;
}

struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t);
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t);
  CUresult (*stream_create)(CUstream*, unsigned);
  CUresult (*stream_synchronize)(CUstream);
  CUresult (*module_load_data)(CUmodule*, const void*);
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*);
  CUresult (*launch_kernel_ex)(const CUlaunchConfig*, CUfunction, void**, void**);
  Driver() {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error("cannot load libcuda.so.1");
    get(h, "cuInit", init);
    get(h, "cuDeviceGet", device_get);
    get(h, "cuDevicePrimaryCtxRetain", primary_ctx_retain);
    get(h, "cuCtxSetCurrent", ctx_set_current);
    get(h, "cuMemAlloc_v2", mem_alloc);
    get(h, "cuMemcpyHtoD_v2", memcpy_htod);
    get(h, "cuMemcpyDtoH_v2", memcpy_dtoh);
    get(h, "cuStreamCreate", stream_create);
    get(h, "cuStreamSynchronize", stream_synchronize);
    get(h, "cuModuleLoadData", module_load_data);
    get(h, "cuModuleGetFunction", module_get_function);
    get(h, "cuLaunchKernelEx", launch_kernel_ex);
  }
  template <class F>
  static void get(void* h, const char* name, F& f) {
    f = reinterpret_cast<F>(dlsym(h, name));
    if (f == nullptr) throw std::runtime_error(std::string("libcuda lacks ") + name);
  }
};

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + std::to_string(r));
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

int run(const char* bundle) {
  const Driver d;
  check(d.init(0), "cuInit");
  CUdevice dev;
  check(d.device_get(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(d.primary_ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(d.ctx_set_current(ctx), "cuCtxSetCurrent");
  CUstream s;
  check(d.stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  constexpr int64_t kN = 4096;
  std::vector<float> hx(kN), hy(kN), ho(kN, -1.0f);
  for (int64_t i = 0; i < kN; ++i) {
    hx[i] = static_cast<float>(i) * 0.25f;
    hy[i] = 1.0f / static_cast<float>(i + 1);
  }
  CUdeviceptr x, y, o;
  check(d.mem_alloc(&x, kN * 4), "cuMemAlloc");
  check(d.mem_alloc(&y, kN * 4), "cuMemAlloc");
  check(d.mem_alloc(&o, kN * 4), "cuMemAlloc");
  check(d.memcpy_htod(x, hx.data(), kN * 4), "cuMemcpyHtoD");
  check(d.memcpy_htod(y, hy.data(), kN * 4), "cuMemcpyHtoD");
  const double context_s = seconds_since(g_start);
  const double rss_before = rss_mib();

  // What a deployed program does: load the bundle, name the kernel, launch.
  const auto t0 = Clock::now();
  te::load_bundle(bundle);
  const te::JitFunction add("pykernels.vector", "add_kernel");
  float* xp = reinterpret_cast<float*>(x);
  float* yp = reinterpret_cast<float*>(y);
  float* op = reinterpret_cast<float*>(o);
  const te::Stream ts = reinterpret_cast<te::Stream>(s);
  add.launch({kN / 1024}, ts, xp, yp, op, kN, 1024);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  const double first_launch_s = seconds_since(t0);
  const double rss_added = rss_mib() - rss_before;

  check(d.memcpy_dtoh(ho.data(), o, kN * 4), "cuMemcpyDtoH");
  bool correct = true;
  for (int64_t i = 0; i < kN; ++i) {
    const float want = hx[i] + hy[i];
    correct = correct && std::memcmp(&ho[i], &want, 4) == 0;
  }

  // Launch overhead against raw cuLaunchKernelEx on the same cubin.
  const te::CompiledKernel& k = add.compile(xp, yp, op, kN, 1024);
  CUmodule m;
  check(d.module_load_data(&m, k.cubin().data()), "cuModuleLoadData");
  CUfunction fn;
  check(d.module_get_function(&fn, m, k.name().c_str()), "cuModuleGetFunction");
  int n = static_cast<int>(kN);
  uint64_t slots[6] = {x, y, o, 0, 0, 0};
  void* params[6];
  for (int i = 0; i < 6; ++i) params[i] = &slots[i];
  params[3] = &n;
  CUlaunchConfig cfg{};
  cfg.gridDimX = kN / 1024;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(32 * k.num_warps());
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(k.shared());
  cfg.hStream = s;
  const std::function<void()> raw = [&] { check(d.launch_kernel_ex(&cfg, fn, params, nullptr), "cuLaunchKernelEx"); };
  const std::function<void()> ours = [&] { add.launch({kN / 1024}, ts, xp, yp, op, kN, 1024); };
  constexpr int kPerBatch = 200, kRounds = 300;
  for (int i = 0; i < 2000; ++i) raw(), ours();
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  auto batch = [&](const std::function<void()>& f) {
    const auto b0 = Clock::now();
    for (int i = 0; i < kPerBatch; ++i) f();
    const double us = seconds_since(b0) * 1e6 / kPerBatch;
    check(d.stream_synchronize(s), "cuStreamSynchronize");
    return us;
  };
  std::vector<double> ratios, raws, ourss;
  for (int r = 0; r < kRounds; ++r) {
    double a = 0, b = 0;
    if (r % 2 == 0) {
      a = batch(raw);
      b = batch(ours);
    } else {
      b = batch(ours);
      a = batch(raw);
    }
    ratios.push_back(b / a);
    raws.push_back(a);
    ourss.push_back(b);
  }
  std::printf(
      "{\"context_s\": %.6f, \"first_launch_s\": %.6f, \"rss_before_mib\": %.2f, "
      "\"rss_added_mib\": %.2f, \"raw_us\": %.4f, \"ours_us\": %.4f, \"ratio\": %.4f, "
      "\"p25\": %.4f, \"p75\": %.4f, \"correct\": %s}\n",
      context_s, first_launch_s, rss_before, rss_added, quantile(raws, 0.5), quantile(ourss, 0.5),
      quantile(ratios, 0.5), quantile(ratios, 0.25), quantile(ratios, 0.75),
      correct ? "true" : "false");
  return correct ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s BUNDLE\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
