// Loading cubins from memory, once per context, configured as Triton's loader does.

#include "core/module.h"

#include <string>

#include "base/errors.h"
#include "core/arg_format.h"

namespace triton_embed::detail {

namespace {
// Values Triton 3.8 defines itself where cuda.h lacks them.
constexpr int kFuncAttrSharedMemoryMode = 17;
constexpr int kSharedMemoryModeAllowOversized = 3;
}  // namespace

void* load_function(const KernelState& k, Entry& e, const cuda::ContextInfo& ctx) {
  std::lock_guard<std::mutex> lock(e.load_mu);
  if (void* f = e.function_for(ctx.ctx)) return f;
  const CompiledKernel& ck = *e.kernel;
  const std::string what = "loading " + full_name(k) + " (hash " + ck.hash() + ")";
  const cuda::Api& a = cuda::require_api();

  // Triton 3.8 allows oversized shared memory where the device has it; 3.6 the opt-in limit.
  const int max_shared = e.oversized_shared_mode ? ctx.max_shared_oversized : ctx.max_shared_optin;
  TE_CHECK(static_cast<int>(e.shared) <= max_shared, OutOfResourcesError)
      << full_name(k) << " as " << ck.signature() << " needs " << e.shared
      << " bytes of shared memory; the device allows " << max_shared
      << ". Lower num_stages or the block sizes.";
  const uint32_t n = e.nloaded.load(std::memory_order_relaxed);
  TE_CHECK(n < kMaxContexts, Error)
      << full_name(k) << ": loaded in more than " << kMaxContexts << " CUDA contexts";

  cuda::ModuleGuard mod;
  // A bundle entry served from an older target's PTX has no cubin: the driver compiles the
  // PTX (a NUL-terminated string) for this GPU.
  const void* image = ck.cubin().empty() ? static_cast<const void*>(ck.ptx().data())
                                         : static_cast<const void*>(ck.cubin().data());
  cuda::check(a.cuModuleLoadData(mod.out(), image), "cuModuleLoadData", what.c_str());
  CUfunction fn = nullptr;
  cuda::check(a.cuModuleGetFunction(&fn, mod.get(), ck.name().c_str()), "cuModuleGetFunction",
              what.c_str());

  int max_threads = 0;
  cuda::check(a.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
              "cuFuncGetAttribute", what.c_str());
  TE_CHECK(static_cast<int>(e.block_x) <= max_threads, OutOfResourcesError)
      << full_name(k) << " as " << ck.signature() << " runs " << e.block_x
      << " threads per block; with its register use the device allows " << max_threads
      << ". Lower num_warps or set maxnreg.";

  if (e.shared > 49152 && ctx.max_shared_optin > 49152) {
    bool done = false;
    if (e.oversized_shared_mode) {
      done = a.cuFuncSetAttribute(fn, static_cast<CUfunction_attribute>(kFuncAttrSharedMemoryMode),
                                  kSharedMemoryModeAllowOversized) == CUDA_SUCCESS;
    }
    if (!done) {
      cuda::check(a.cuFuncSetCacheConfig(fn, CU_FUNC_CACHE_PREFER_SHARED), "cuFuncSetCacheConfig",
                  what.c_str());
      int shared_static = 0;
      cuda::check(a.cuFuncGetAttribute(&shared_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
                  "cuFuncGetAttribute", what.c_str());
      cuda::check(a.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       ctx.max_shared_optin - shared_static),
                  "cuFuncSetAttribute", what.c_str());
    }
  }
  if (e.num_ctas == 16) {
    cuda::check(a.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "cuFuncSetAttribute", what.c_str());
  }
  // The launch passes the runtime arguments and Triton's two scratch pointers; check the
  // kernel agrees before the first launch. No call here fails on a kernel that agrees (a
  // failed driver call is an API error to compute-sanitizer): with cuFuncGetParamCount the
  // count is compared; older drivers are asked about the last parameter the launch passes
  // only, which must exist and be a pointer (the profile scratch pointer).
  const size_t expected = e.num_runtime_params + 2;
  size_t count = 0;
  if (a.cuFuncGetParamCount != nullptr && a.cuFuncGetParamCount(fn, &count) == CUDA_SUCCESS) {
    TE_CHECK(count == expected, Error)
        << what << ": the kernel takes " << count << " parameters but the launch passes "
        << expected << " (" << e.num_runtime_params << " arguments and 2 scratch pointers); "
        << "this Triton version's calling convention is not supported";
  } else if (a.cuFuncGetParamInfo != nullptr) {
    size_t offset = 0, size = 0;
    TE_CHECK(a.cuFuncGetParamInfo(fn, expected - 1, &offset, &size) == CUDA_SUCCESS, Error)
        << what << ": the kernel takes fewer than the " << expected << " parameters the launch "
        << "passes (" << e.num_runtime_params << " arguments and 2 scratch pointers); this "
        << "Triton version's calling convention is not supported";
    TE_CHECK(size == sizeof(void*), Error)
        << what << ": parameter #" << expected - 1 << " is " << size << " bytes, not the "
        << "scratch pointer the launch passes there; this Triton version's calling convention "
        << "is not supported";
  }
  e.loaded[n].ctx = ctx.ctx;
  e.loaded[n].function = fn;
  e.loaded[n].module = mod.release();  // kept until the entry is freed (unload_modules)
  e.nloaded.store(n + 1, std::memory_order_release);
  return fn;
}

namespace {

// A graph that held an entry is gone (with every executable graph made from it): CUDA calls
// this on a thread of its own, where no CUDA call may be made.
void graph_gone(void* entry) {
  static_cast<Entry*>(entry)->graph_holds.fetch_sub(1, std::memory_order_release);
}

}  // namespace

void hold_for_graph(const KernelState& k, Entry& e, Stream stream) {
  const cuda::Api& a = cuda::api();
  if (a.cuStreamGetCaptureInfo == nullptr || a.cuUserObjectCreate == nullptr ||
      a.cuGraphRetainUserObject == nullptr) {
    // A driver without user objects cannot say when the graph is gone: kept for the process.
    e.graph_holds.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::string what = "capturing " + full_name(k) + " into a CUDA graph";
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  cuda::check(a.cuStreamGetCaptureInfo(reinterpret_cast<CUstream>(stream), &status, nullptr, &graph,
                                       nullptr, nullptr),
              "cuStreamGetCaptureInfo", what.c_str());
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || graph == nullptr) return;
  CUuserObject obj = nullptr;
  cuda::check(a.cuUserObjectCreate(&obj, &e, graph_gone, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC),
              "cuUserObjectCreate", what.c_str());
  e.graph_holds.fetch_add(1, std::memory_order_relaxed);  // graph_gone takes it back
  const CUresult r = a.cuGraphRetainUserObject(graph, obj, 1, CU_GRAPH_USER_OBJECT_MOVE);
  if (r != CUDA_SUCCESS) {
    a.cuUserObjectRelease(obj, 1);  // runs graph_gone
    cuda::throw_error(r, "cuGraphRetainUserObject", what);
  }
}

void unload_modules(Entry& e) noexcept {
  const uint32_t n = e.nloaded.load(std::memory_order_acquire);
  if (n == 0) return;
  const cuda::Api& a = cuda::api();
  // Relaxed: a thread capturing a graph meanwhile (in the global mode) neither makes these
  // calls fail nor is invalidated by them.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  const bool relaxed = a.cuThreadExchangeStreamCaptureMode != nullptr &&
                       a.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
  for (uint32_t i = 0; i < n; ++i) {
    LoadedFunction& l = e.loaded[i];
    if (l.module == nullptr) continue;
    if (a.cuCtxPushCurrent(static_cast<CUcontext>(l.ctx)) == CUDA_SUCCESS) {
      a.cuModuleUnload(static_cast<CUmodule>(l.module));
      CUcontext popped = nullptr;
      a.cuCtxPopCurrent(&popped);
    }
    l.module = nullptr;
  }
  if (relaxed) a.cuThreadExchangeStreamCaptureMode(&mode);  // the thread's own mode again
  e.nloaded.store(0, std::memory_order_release);
}

}  // namespace triton_embed::detail
