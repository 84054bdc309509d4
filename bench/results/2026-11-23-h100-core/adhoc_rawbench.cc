// Ad-hoc: raw cuLaunchKernelEx vs triton_embed launch on the same cubin (not committed).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <triton_embed/jit.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
namespace te = triton_embed;
using clk = std::chrono::steady_clock;
template <class F> double median_us(F&& f, cudaStream_t s) {
  std::vector<double> v;
  for (int b = 0; b < 200; ++b) {
    auto t0 = clk::now();
    for (int i = 0; i < 200; ++i) f();
    v.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count() / 200);
    cudaStreamSynchronize(s);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
int main() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  auto launchEx = (CUresult(*)(const CUlaunchConfig*, CUfunction, void**, void**))dlsym(lib, "cuLaunchKernelEx");
  auto loadData = (CUresult(*)(CUmodule*, const void*))dlsym(lib, "cuModuleLoadData");
  auto getFn = (CUresult(*)(CUfunction*, CUmodule, const char*))dlsym(lib, "cuModuleGetFunction");
  const int n = 4096;
  float *x, *y, *o;
  cudaMalloc((void**)&x, n * 4); cudaMalloc((void**)&y, n * 4); cudaMalloc((void**)&o, n * 4);
  cudaStream_t s; cudaStreamCreate(&s);
  te::JitFunction add("pykernels.vector", "add_kernel");
  add.launch({te::cdiv(n, 1024)}, s, x, y, o, n, 1024);
  cudaStreamSynchronize(s);
  const auto& k = add.compile(x, y, o, n, 1024);
  CUmodule mod; CUfunction fn;
  loadData(&mod, k.cubin().data()); getFn(&fn, mod, k.name().c_str());
  CUdeviceptr px = (CUdeviceptr)x, py = (CUdeviceptr)y, po = (CUdeviceptr)o, z = 0; int nn = n;
  void* params[] = {&px, &py, &po, &nn, &z, &z};
  CUlaunchConfig cfg = {}; cfg.gridDimX = 4; cfg.gridDimY = 1; cfg.gridDimZ = 1; cfg.blockDimX = 128; cfg.blockDimY = 1; cfg.blockDimZ = 1; cfg.hStream = (CUstream)s; cfg.sharedMemBytes = k.shared();
  for (int rep = 0; rep < 3; ++rep) {
    double raw = median_us([&] { launchEx(&cfg, fn, params, nullptr); }, s);
    double ours = median_us([&] { add.launch({te::cdiv(n, 1024)}, s, x, y, o, n, 1024); }, s);
    std::printf("raw %.3f us, triton_embed %.3f us, ratio %.3f\n", raw, ours, ours / raw);
  }
  return 0;
}
