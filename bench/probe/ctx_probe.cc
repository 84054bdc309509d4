// Does the launch path's context lookup matter, and does a context-independent launch (a
// CUkernel from cuLibraryLoadData, launched with cuLaunchKernelEx in the current context) cost
// what a CUfunction launch costs? Host time per call, median of 200 batches of 200, interleaved.
//   nvcc -o /tmp/k.cubin -cubin -arch=sm_90 bench/probe/ctx_probe_kernel.cu
//   g++ -O2 -I/usr/local/cuda/include bench/probe/ctx_probe.cc -lcuda -o /tmp/ctx_probe &&
//   /tmp/ctx_probe /tmp/k.cubin
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

// Runs f with the stack `depth` bytes deeper than the caller's, `touched` of them written.
__attribute__((noinline)) void deep(size_t depth, size_t touched, const std::function<void()>& f) {
  volatile char* frame = static_cast<volatile char*>(__builtin_alloca(depth));
  for (size_t i = 0; i < touched; i += 64) frame[i] = 1;
  frame[0] = 1;
  f();
}
__attribute__((noinline)) void touch(volatile char* p, size_t n) {
  for (size_t i = 0; i < n; i += 64) p[i]++;
}

#define CK(x)                                 \
  do {                                        \
    CUresult r_ = (x);                        \
    if (r_ != CUDA_SUCCESS) {                 \
      std::printf("%s failed: %d\n", #x, r_); \
      return 1;                               \
    }                                         \
  } while (0)

int main(int argc, char** argv) {
  std::ifstream f(argv[1], std::ios::binary);
  std::string cubin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUmodule m;
  CK(cuModuleLoadData(&m, cubin.data()));
  CUfunction fn;
  CK(cuModuleGetFunction(&fn, m, "k"));
  CUlibrary lib;
  CK(cuLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel kern;
  CK(cuLibraryGetKernel(&kern, lib, "k"));
  CUdeviceptr buf;
  CK(cuMemAlloc(&buf, 1 << 20));
  int n = 4096;
  uint64_t slots[6] = {buf, buf, buf, 0, 0, 0};
  void* params[6];
  for (int i = 0; i < 6; ++i) params[i] = &slots[i];
  params[3] = &n;
  auto launch = [&](CUfunction f) {
    CUlaunchConfig cfg{};
    cfg.gridDimX = 4;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 128;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    cuLaunchKernelEx(&cfg, f, params, nullptr);
  };
  std::vector<char> heap_buf(1 << 16);
  volatile char* heap = heap_buf.data();
  CUcontext cur;
  std::vector<std::pair<const char*, std::function<void()>>> fs = {
      {"cuCtxGetCurrent alone", [&] { cuCtxGetCurrent(&cur); }},
      {"CUfunction launch", [&] { launch(fn); }},
      {"cuCtxGetCurrent + CUfunction launch",
       [&] {
         cuCtxGetCurrent(&cur);
         launch(fn);
       }},
      {"CUkernel launch", [&] { launch(reinterpret_cast<CUfunction>(kern)); }},
      {"launch from 10 KiB deeper stack", [&] { deep(10240, 0, [&] { launch(fn); }); }},
      {"launch from 10 KiB deeper, 1 KiB touched", [&] { deep(10240, 1024, [&] { launch(fn); }); }},
      {"launch from 2 KiB deeper stack", [&] { deep(2048, 0, [&] { launch(fn); }); }},
      {"launch after touching 4 KiB of heap",
       [&] {
         touch(heap, 4096);
         launch(fn);
       }},
  };
  for (auto& p : fs)
    for (int i = 0; i < 2000; ++i) p.second();
  cuStreamSynchronize(s);
  std::vector<std::vector<double>> t(fs.size());
  for (int b = 0; b < 200; ++b) {
    for (size_t k = 0; k < fs.size(); ++k) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 200; ++i) fs[k].second();
      t[k].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() *
                     1e6 / 200);
      cuStreamSynchronize(s);
    }
  }
  for (size_t k = 0; k < fs.size(); ++k) {
    std::sort(t[k].begin(), t[k].end());
    std::printf("%-45s %.3f us (p25 %.3f, p75 %.3f)\n", fs[k].first, t[k][100], t[k][50],
                t[k][150]);
  }
  return 0;
}
