#pragma once

// What the benchmark's programs share: the CUDA driver resolved at run time (as the library
// resolves it), host timing, and the paired measurement every launch-overhead target is
// judged by. Header-only: launch_bench links torch and the JIT, bundle_bench the runtime
// alone.

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: " + std::to_string(r));
}

// The driver calls the benchmarks make themselves.
struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice);
  CUresult (*ctx_get_current)(CUcontext*);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t);
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t);
  CUresult (*stream_create)(CUstream*, unsigned);
  CUresult (*stream_synchronize)(CUstream);
  CUresult (*module_load_data)(CUmodule*, const void*);
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*);
  CUresult (*launch_kernel_ex)(const CUlaunchConfig*, CUfunction, void**, void**);
  CUresult (*func_get_param_info)(CUfunction, size_t, size_t*, size_t*);  // CUDA 12.4+

  Driver() {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error("cannot load libcuda.so.1");
    get(h, "cuInit", init);
    get(h, "cuDeviceGet", device_get);
    get(h, "cuDevicePrimaryCtxRetain", primary_ctx_retain);
    get(h, "cuCtxGetCurrent", ctx_get_current);
    get(h, "cuCtxSetCurrent", ctx_set_current);
    get(h, "cuMemAlloc_v2", mem_alloc);
    get(h, "cuMemcpyHtoD_v2", memcpy_htod);
    get(h, "cuMemcpyDtoH_v2", memcpy_dtoh);
    get(h, "cuStreamCreate", stream_create);
    get(h, "cuStreamSynchronize", stream_synchronize);
    get(h, "cuModuleLoadData", module_load_data);
    get(h, "cuModuleGetFunction", module_get_function);
    get(h, "cuLaunchKernelEx", launch_kernel_ex);
    get(h, "cuFuncGetParamInfo", func_get_param_info);
  }
  template <class F>
  static void get(void* h, const char* name, F& f) {
    f = reinterpret_cast<F>(dlsym(h, name));
    if (f == nullptr) throw std::runtime_error(std::string("libcuda lacks ") + name);
  }
};

// Device 0's primary context made current, and a non-blocking stream on it (the programs
// linked to the runtime only: they make what a torch program gets from torch).
inline CUstream primary_context_stream(const Driver& d) {
  check(d.init(0), "cuInit");
  CUdevice dev;
  check(d.device_get(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(d.primary_ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(d.ctx_set_current(ctx), "cuCtxSetCurrent");
  CUstream s;
  check(d.stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return s;
}

// The q-quantile (0..1) of v, nearest rank.
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

constexpr int kWarmup = 2000;
constexpr int kPerBatch = 200;
constexpr int kPairRounds = 300;

// One target row measured on its own: `raw` and `ours` alternate batch by batch (ABBA: the
// order flips every round, so neither always follows the other), and each round's ratio is
// ours / raw of its two adjacent batches, so slow drifts of the machine cancel within a round.
struct Pair {
  double ratio, p25, p75;  // the median of the rounds' ratios and its quartiles
  double raw_us, ours_us;  // the medians of the batches, host time per launch
};

inline Pair paired(const std::function<void()>& raw, const std::function<void()>& ours, CUstream s,
                   const Driver& d) {
  for (int i = 0; i < kWarmup; ++i) raw();
  for (int i = 0; i < kWarmup; ++i) ours();
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  auto batch = [&](const std::function<void()>& f) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kPerBatch; ++i) f();
    const double us = seconds_since(t0) * 1e6 / kPerBatch;
    check(d.stream_synchronize(s), "cuStreamSynchronize");
    return us;
  };
  std::vector<double> ratios, raws, ourss;
  for (int round = 0; round < kPairRounds; ++round) {
    double r = 0, o = 0;
    if (round % 2 == 0) {
      r = batch(raw);
      o = batch(ours);
    } else {
      o = batch(ours);
      r = batch(raw);
    }
    ratios.push_back(o / r);
    raws.push_back(r);
    ourss.push_back(o);
  }
  return Pair{quantile(ratios, 0.5), quantile(ratios, 0.25), quantile(ratios, 0.75),
              quantile(raws, 0.5), quantile(ourss, 0.5)};
}

}  // namespace bench
