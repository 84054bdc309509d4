// The tests' stand-in CUDA driver (libte_cuda_shim.so, built with the tests, never installed).
// A test process loads it through TRITON_EMBED_LIBCUDA in place of libcuda.so.1. It exports
// every entry point src/cuda/driver.cc resolves, each forwarding to the real driver when the
// machine has one; without one cuInit fails with CUDA_ERROR_NO_DEVICE, as a driver that sees
// no GPU does, so the runtime behaves as on a machine with no usable GPU. On top of that,
// cuTensorMapEncodeTiled counts its calls and, once a test has set an encoder (cuda_shim.h),
// encodes with it instead of the driver: tests check the encoding's inputs and the maps'
// cache without a GPU, and count the real encodings on one.
//
// cuda.h is not included: it renames some entry points by macro, and its declarations would
// clash with these. The types below are what the driver's ABI passes (enums and CUdevice as
// int, handles as pointers, CUdeviceptr as unsigned long long).

#include "cuda_shim.h"

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace {

// The driver's entry points (and the controls cuda_shim.h looks up) by their C names.
#define TE_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kNoDevice = 100;

// The real driver, or null on a machine without one.
void* real_driver() {
  static void* const lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib;
}

template <class F>
F* real(const char* name) {
  void* lib = real_driver();
  return lib != nullptr ? reinterpret_cast<F*>(dlsym(lib, name)) : nullptr;
}

// Without a real driver (or a real entry point: the optional ones of older drivers), an entry
// point fails as the driver's do after a failed cuInit.
#define TE_SHIM_FORWARD(name, params, args)               \
  TE_SHIM_EXPORT CUresult name params {                   \
    static auto* const fn = real<CUresult params>(#name); \
    return fn != nullptr ? fn args : kNotInitialized;     \
  }

// What the error functions say without a real driver: the codes a run without one sees.
struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
};

CUresult error_text(CUresult error, const char** out, bool name) {
  for (const ErrorText& e : kErrors) {
    if (e.code == error) {
      *out = name ? e.name : e.text;
      return kSuccess;
    }
  }
  *out = nullptr;  // as the driver answers an unknown code
  return kInvalidValue;
}

std::atomic<te_cuda_shim::Encoder> g_encoder{nullptr};
std::atomic<uint64_t> g_encodes{0};

}  // namespace

TE_SHIM_EXPORT CUresult cuInit(unsigned int flags) {
  static auto* const fn = real<CUresult(unsigned int)>("cuInit");
  return fn != nullptr ? fn(flags) : kNoDevice;
}

TE_SHIM_EXPORT CUresult cuGetErrorName(CUresult error, const char** out) {
  static auto* const fn = real<CUresult(CUresult, const char**)>("cuGetErrorName");
  return fn != nullptr ? fn(error, out) : error_text(error, out, true);
}

TE_SHIM_EXPORT CUresult cuGetErrorString(CUresult error, const char** out) {
  static auto* const fn = real<CUresult(CUresult, const char**)>("cuGetErrorString");
  return fn != nullptr ? fn(error, out) : error_text(error, out, false);
}

TE_SHIM_FORWARD(cuDriverGetVersion, (int* version), (version))
TE_SHIM_FORWARD(cuDeviceGetCount, (int* count), (count))
TE_SHIM_FORWARD(cuDeviceGet, (int* device, int ordinal), (device, ordinal))
TE_SHIM_FORWARD(cuDeviceGetAttribute, (int* value, int attribute, int device),
                (value, attribute, device))
TE_SHIM_FORWARD(cuDevicePrimaryCtxRetain, (void** ctx, int device), (ctx, device))
TE_SHIM_FORWARD(cuCtxGetCurrent, (void** ctx), (ctx))
TE_SHIM_FORWARD(cuCtxSetCurrent, (void* ctx), (ctx))
TE_SHIM_FORWARD(cuCtxGetDevice, (int* device), (device))
TE_SHIM_FORWARD(cuModuleLoadData, (void** module, const void* image), (module, image))
TE_SHIM_FORWARD(cuModuleGetFunction, (void** function, void* module, const char* name),
                (function, module, name))
TE_SHIM_FORWARD(cuModuleUnload, (void* module), (module))
TE_SHIM_FORWARD(cuFuncGetAttribute, (int* value, int attribute, void* function),
                (value, attribute, function))
TE_SHIM_FORWARD(cuFuncSetAttribute, (void* function, int attribute, int value),
                (function, attribute, value))
TE_SHIM_FORWARD(cuFuncSetCacheConfig, (void* function, int config), (function, config))
TE_SHIM_FORWARD(cuFuncGetParamInfo, (void* function, size_t index, size_t* offset, size_t* size),
                (function, index, offset, size))
TE_SHIM_FORWARD(cuFuncGetParamCount, (void* function, size_t* count), (function, count))
TE_SHIM_FORWARD(cuLaunchKernelEx, (const void* config, void* function, void** params, void** extra),
                (config, function, params, extra))
TE_SHIM_FORWARD(cuMemAllocAsync, (unsigned long long* ptr, size_t size, void* stream),
                (ptr, size, stream))
TE_SHIM_FORWARD(cuMemFreeAsync, (unsigned long long ptr, void* stream), (ptr, stream))
TE_SHIM_FORWARD(cuMemsetD8Async,
                (unsigned long long ptr, unsigned char value, size_t count, void* stream),
                (ptr, value, count, stream))
TE_SHIM_FORWARD(cuStreamIsCapturing, (void* stream, int* status), (stream, status))
TE_SHIM_FORWARD(cuCtxPushCurrent_v2, (void* ctx), (ctx))
TE_SHIM_FORWARD(cuCtxPopCurrent_v2, (void** ctx), (ctx))
TE_SHIM_FORWARD(cuStreamGetCaptureInfo_v2,
                (void* stream, int* status, unsigned long long* id, void** graph, const void** deps,
                 size_t* ndeps),
                (stream, status, id, graph, deps, ndeps))
TE_SHIM_FORWARD(cuUserObjectCreate,
                (void** object, void* ptr, void (*destroy)(void*), unsigned count, unsigned flags),
                (object, ptr, destroy, count, flags))
TE_SHIM_FORWARD(cuThreadExchangeStreamCaptureMode, (int* mode), (mode))
TE_SHIM_FORWARD(cuUserObjectRelease, (void* object, unsigned count), (object, count))
TE_SHIM_FORWARD(cuGraphRetainUserObject,
                (void* graph, void* object, unsigned count, unsigned flags),
                (graph, object, count, flags))

TE_SHIM_EXPORT CUresult cuTensorMapEncodeTiled(void* map, int data_type, uint32_t rank,
                                               void* address, const uint64_t* dims,
                                               const uint64_t* strides, const uint32_t* box,
                                               const uint32_t* element_strides, int interleave,
                                               int swizzle, int l2_promotion, int oob_fill) {
  g_encodes.fetch_add(1, std::memory_order_relaxed);
  if (te_cuda_shim::Encoder encoder = g_encoder.load(std::memory_order_acquire)) {
    if (rank < 1 || rank > 5) return kInvalidValue;  // the driver's limit
    te_cuda_shim::EncodeCall c;
    c.data_type = data_type;
    c.rank = rank;
    c.address = reinterpret_cast<uintptr_t>(address);
    for (uint32_t i = 0; i < rank; ++i) {
      c.dims[i] = dims[i];
      c.box[i] = box[i];
      c.element_strides[i] = element_strides[i];
      if (i + 1 < rank) c.strides[i] = strides[i];
    }
    c.interleave = interleave;
    c.swizzle = swizzle;
    c.l2_promotion = l2_promotion;
    c.oob_fill = oob_fill;
    encoder(c, static_cast<unsigned char*>(map));
    return kSuccess;
  }
  using Fn = CUresult(void*, int, uint32_t, void*, const uint64_t*, const uint64_t*,
                      const uint32_t*, const uint32_t*, int, int, int, int);
  static auto* const fn = real<Fn>("cuTensorMapEncodeTiled");
  return fn != nullptr ? fn(map, data_type, rank, address, dims, strides, box, element_strides,
                            interleave, swizzle, l2_promotion, oob_fill)
                       : kNotInitialized;
}

// The controls cuda_shim.h reaches with dlsym.
TE_SHIM_EXPORT void te_cuda_shim_set_encoder(te_cuda_shim::Encoder encoder) {
  g_encoder.store(encoder, std::memory_order_release);
}

TE_SHIM_EXPORT uint64_t te_cuda_shim_encodes() { return g_encodes.load(std::memory_order_relaxed); }
