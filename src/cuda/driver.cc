#include "cuda/driver.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "base/errors.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail::cuda {

namespace {

template <class F>
bool resolve(void* lib, const char* name, F*& fn, std::string& error) {
  fn = reinterpret_cast<F*>(dlsym(lib, name));
  if (fn == nullptr) {
    error = std::string("libcuda does not export ") + name + " (driver too old?)";
    return false;
  }
  return true;
}

Api load() {
  Api a;
  const char* path = std::getenv("TRITON_EMBED_LIBCUDA");
  if (path == nullptr || *path == '\0') path = "libcuda.so.1";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    a.error =
        std::string("cannot load the CUDA driver (") + path + "): " + (why ? why : "unknown error");
    return a;
  }
  std::string& e = a.error;
  bool ok = resolve(lib, "cuInit", a.cuInit, e) &&
            resolve(lib, "cuDriverGetVersion", a.cuDriverGetVersion, e) &&
            resolve(lib, "cuGetErrorName", a.cuGetErrorName, e) &&
            resolve(lib, "cuGetErrorString", a.cuGetErrorString, e) &&
            resolve(lib, "cuDeviceGetCount", a.cuDeviceGetCount, e) &&
            resolve(lib, "cuDeviceGet", a.cuDeviceGet, e) &&
            resolve(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, e) &&
            resolve(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, e) &&
            resolve(lib, "cuCtxGetCurrent", a.cuCtxGetCurrent, e) &&
            resolve(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent, e) &&
            resolve(lib, "cuCtxGetDevice", a.cuCtxGetDevice, e) &&
            resolve(lib, "cuModuleLoadData", a.cuModuleLoadData, e) &&
            resolve(lib, "cuModuleGetFunction", a.cuModuleGetFunction, e) &&
            resolve(lib, "cuModuleUnload", a.cuModuleUnload, e) &&
            resolve(lib, "cuFuncGetAttribute", a.cuFuncGetAttribute, e) &&
            resolve(lib, "cuFuncSetAttribute", a.cuFuncSetAttribute, e) &&
            resolve(lib, "cuFuncSetCacheConfig", a.cuFuncSetCacheConfig, e) &&
            resolve(lib, "cuLaunchKernelEx", a.cuLaunchKernelEx, e) &&
            resolve(lib, "cuMemAllocAsync", a.cuMemAllocAsync, e) &&
            resolve(lib, "cuMemFreeAsync", a.cuMemFreeAsync, e) &&
            resolve(lib, "cuMemsetD8Async", a.cuMemsetD8Async, e) &&
            resolve(lib, "cuStreamIsCapturing", a.cuStreamIsCapturing, e) &&
            resolve(lib, "cuCtxPushCurrent_v2", a.cuCtxPushCurrent, e) &&
            resolve(lib, "cuCtxPopCurrent_v2", a.cuCtxPopCurrent, e);
  if (!ok) return a;
  // Optional, for a sanity check of the parameter count only (load_function).
  a.cuFuncGetParamInfo = reinterpret_cast<decltype(a.cuFuncGetParamInfo)>(
      dlsym(lib, "cuFuncGetParamInfo"));  // CUDA 12.4+
  a.cuFuncGetParamCount = reinterpret_cast<decltype(a.cuFuncGetParamCount)>(
      dlsym(lib, "cuFuncGetParamCount"));  // newer drivers (not in CUDA 13.0's cuda.h)
  a.cuStreamGetCaptureInfo = reinterpret_cast<decltype(a.cuStreamGetCaptureInfo)>(
      dlsym(lib, "cuStreamGetCaptureInfo_v2"));  // CUDA 11.3+: graphs hold their entries
  a.cuUserObjectCreate =
      reinterpret_cast<decltype(a.cuUserObjectCreate)>(dlsym(lib, "cuUserObjectCreate"));
  a.cuUserObjectRelease =
      reinterpret_cast<decltype(a.cuUserObjectRelease)>(dlsym(lib, "cuUserObjectRelease"));
  a.cuGraphRetainUserObject =
      reinterpret_cast<decltype(a.cuGraphRetainUserObject)>(dlsym(lib, "cuGraphRetainUserObject"));
  a.cuThreadExchangeStreamCaptureMode =
      reinterpret_cast<decltype(a.cuThreadExchangeStreamCaptureMode)>(
          dlsym(lib, "cuThreadExchangeStreamCaptureMode"));
  a.cuTensorMapEncodeTiled = reinterpret_cast<decltype(a.cuTensorMapEncodeTiled)>(
      dlsym(lib, "cuTensorMapEncodeTiled"));  // CUDA 12.0+: host tensor descriptors
  const CUresult r = a.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    a.cuGetErrorName(r, &name);
    a.error = std::string("cuInit failed with ") + (name ? name : "an unknown error") + " (" +
              std::to_string(static_cast<int>(r)) + ")";
    return a;
  }
  int count = 0;
  if (a.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    a.error = "the CUDA driver sees no device";
    return a;
  }
  a.ok = true;
  return a;
}

}  // namespace

const Api& api() noexcept {
  static const Api instance = load();
  return instance;
}

const Api& require_api() {
  const Api& a = api();
  if (TE_UNLIKELY(!a.ok)) {
    throw NoDeviceError("no usable GPU: " + a.error +
                            ". Launching needs a CUDA driver and a device; to compile without "
                            "one, set a target (TRITON_EMBED_TARGET=cuda:90 or "
                            "triton_embed::set_target) and call JitFunction::compile().",
                        "cuInit", 0, "CUDA_ERROR_NO_DEVICE", a.error);
  }
  return a;
}

void throw_error(CUresult result, const char* call, const std::string& what) {
  const Api& a = api();
  const char* name = nullptr;
  const char* text = nullptr;
  if (a.cuGetErrorName != nullptr) a.cuGetErrorName(result, &name);
  if (a.cuGetErrorString != nullptr) a.cuGetErrorString(result, &text);
  std::string n = name ? name : "CUDA_ERROR_UNKNOWN";
  std::string t = text ? text : "unknown error";
  std::string msg = what + ": " + call + " failed with " + n + " (" +
                    std::to_string(static_cast<int>(result)) + "): " + t;
  throw CudaError(msg, call, static_cast<int>(result), n, t);
}

ModuleGuard::~ModuleGuard() {
  if (mod_ != nullptr) api().cuModuleUnload(mod_);
}

namespace {

constexpr int kMaxKnownContexts = 64;
ContextInfo g_contexts[kMaxKnownContexts];
std::atomic<int> g_ncontexts{0};
std::mutex g_contexts_mu;

const ContextInfo& add_context(const Api& a, CUcontext ctx) {
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  const int n = g_ncontexts.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    if (g_contexts[i].ctx == ctx) return g_contexts[i];
  }
  TE_CHECK(n < kMaxKnownContexts, Error)
      << "triton_embed: more than " << kMaxKnownContexts << " CUDA contexts used in one process";
  ContextInfo info;
  info.ctx = ctx;
  check(a.cuCtxGetDevice(&info.device), "cuCtxGetDevice", "reading the current context's device");
  int count = 0;
  check(a.cuDeviceGetCount(&count), "cuDeviceGetCount", "counting the devices");
  info.ordinal = -1;
  for (int i = 0; i < count && info.ordinal < 0; ++i) {
    CUdevice d = 0;
    check(a.cuDeviceGet(&d, i), "cuDeviceGet", "numbering the devices");
    if (d == info.device) info.ordinal = i;
  }
  TE_CHECK(info.ordinal >= 0, Error) << "triton_embed: the current context's device is none of the "
                                     << count << " devices the driver lists";
  int major = 0, minor = 0;
  check(a.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, info.device),
        "cuDeviceGetAttribute", "reading the device's compute capability");
  check(a.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, info.device),
        "cuDeviceGetAttribute", "reading the device's compute capability");
  info.arch = major * 10 + minor;
  check(a.cuDeviceGetAttribute(&info.max_shared_optin,
                               CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, info.device),
        "cuDeviceGetAttribute", "reading the device's shared memory size");
  info.max_shared_oversized = info.max_shared_optin;
  if (info.arch == 107) {
    constexpr int kMaxOversizedSharedMemoryPerBlock = 150;  // as Triton 3.8 defines it
    int v = 0;
    if (a.cuDeviceGetAttribute(&v,
                               static_cast<CUdevice_attribute>(kMaxOversizedSharedMemoryPerBlock),
                               info.device) == CUDA_SUCCESS &&
        v > 0) {
      info.max_shared_oversized = v;
    }
  }
  g_contexts[n] = info;
  g_ncontexts.store(n + 1, std::memory_order_release);
  return g_contexts[n];
}

}  // namespace

const ContextInfo& current_context() {
  const Api& a = require_api();
  CUcontext ctx = nullptr;
  check(a.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent", "reading the current CUDA context");
  if (TE_UNLIKELY(ctx == nullptr)) {
    CUdevice dev = 0;
    check(a.cuDeviceGet(&dev, 0), "cuDeviceGet", "getting device 0");
    check(a.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain",
          "retaining device 0's primary context");
    check(a.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", "making device 0's primary context current");
  }
  const int n = g_ncontexts.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_contexts[i].ctx == ctx) return g_contexts[i];
  }
  return add_context(a, ctx);
}

}  // namespace triton_embed::detail::cuda

namespace triton_embed {
bool cuda_available() noexcept { return detail::cuda::api().ok; }
}  // namespace triton_embed
