#pragma once

// The CUDA driver, resolved at run time from libcuda.so.1: the library builds, loads and
// compiles kernels on machines without a driver; only launching needs one.

#include <cuda.h>

#include <string>

#include "base/internal_api.h"

namespace triton_embed::detail::cuda {

struct Api {
  bool ok = false;
  std::string error;  // why the driver is unusable, when !ok

  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*cuFuncSetCacheConfig)(CUfunction, CUfunc_cache) = nullptr;
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*) = nullptr;  // optional
  CUresult (*cuFuncGetParamCount)(CUfunction, size_t*) = nullptr;                  // optional
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*cuMemAllocAsync)(CUdeviceptr*, size_t, CUstream) = nullptr;
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext*) = nullptr;
  // Optional (CUDA 11.3+ drivers): the graph a capture records into, and user objects that
  // keep a captured launch's entry for as long as the graph lives (core/module.h).
  CUresult (*cuStreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                     const CUgraphNode**, size_t*) = nullptr;
  CUresult (*cuUserObjectCreate)(CUuserObject*, void*, CUhostFn, unsigned int,
                                 unsigned int) = nullptr;
  CUresult (*cuUserObjectRelease)(CUuserObject, unsigned int) = nullptr;
  CUresult (*cuGraphRetainUserObject)(CUgraph, CUuserObject, unsigned int, unsigned int) = nullptr;
  // Optional (CUDA 10.1+): a thread's capture mode, relaxed while it unloads modules, so that
  // another thread's capture is not disturbed.
  CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode*) = nullptr;
  // Optional (CUDA 12+ drivers): host tensor descriptors (src/core/tensor_map.cc).
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                     const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                     const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                     CUtensorMapL2promotion, CUtensorMapFloatOOBfill) = nullptr;
};

// Loads libcuda.so.1 and calls cuInit once. Never throws; check ok.
TE_INTERNAL_API const Api& api() noexcept;

// The driver, or NoDeviceError saying why it is unusable.
const Api& require_api();

// Throws CudaError for `result` from `call`; `what` says what was being done.
[[noreturn]] void throw_error(CUresult result, const char* call, const std::string& what);

inline void check(CUresult result, const char* call, const char* what) {
  if (result != CUDA_SUCCESS) throw_error(result, call, what);
}

// Owns a CUmodule until released (unloads it if loading the kernel fails half-way).
class ModuleGuard {
 public:
  ModuleGuard() = default;
  ~ModuleGuard();
  ModuleGuard(const ModuleGuard&) = delete;
  ModuleGuard& operator=(const ModuleGuard&) = delete;
  ModuleGuard(ModuleGuard&& o) noexcept : mod_(o.mod_) { o.mod_ = nullptr; }
  CUmodule* out() { return &mod_; }
  CUmodule get() const { return mod_; }
  CUmodule release() {
    CUmodule m = mod_;
    mod_ = nullptr;
    return m;
  }

 private:
  CUmodule mod_ = nullptr;
};

// A CUDA context the library has seen, with its device's properties.
struct ContextInfo {
  CUcontext ctx = nullptr;
  CUdevice device = 0;
  int ordinal = 0;           // the device's index (as the CUDA runtime and torch number it)
  int arch = 0;              // compute capability major * 10 + minor
  int max_shared_optin = 0;  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  // Devices with oversized shared memory (sm_107) report a larger limit, which Triton 3.8
  // uses (CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK); else max_shared_optin.
  int max_shared_oversized = 0;
};

// The calling thread's current context. When none is current, retains device 0's primary
// context and makes it current (as Triton's launcher does). Throws NoDeviceError without a
// usable driver.
TE_INTERNAL_API const ContextInfo& current_context();

}  // namespace triton_embed::detail::cuda
