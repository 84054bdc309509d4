#pragma once

// A cache entry's kernel in the CUDA contexts: loading it, keeping it for the CUDA graphs
// that captured a launch of it, and unloading it once freed (src/core/module.cc).

#include "core/cache.h"
#include "core/kernel_state.h"
#include "cuda/driver.h"

namespace triton_embed::detail {

// Loads the entry's cubin into the context (once per context) and returns the CUfunction.
void* load_function(const KernelState& kernel, Entry& entry, const cuda::ContextInfo& ctx);

// Whether `stream` is capturing a CUDA graph (a launch on it is recorded, not run).
inline bool capturing(Stream stream) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return cuda::api().cuStreamIsCapturing(reinterpret_cast<CUstream>(stream), &status) ==
             CUDA_SUCCESS &&
         status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

// A launch of `entry` is being captured on `stream`: the graph (and every executable graph
// made from it) holds the entry, so that freeing it after an unload waits until CUDA has
// destroyed them all (Entry::graph_holds; a CUDA user object whose destructor lets go).
void hold_for_graph(const KernelState& kernel, Entry& entry, Stream stream);

// Unloads the entry's modules from every context it was loaded into (the entry is being
// freed: no launch, prepared kernel or graph uses it any more). Errors are ignored: a module
// whose context was destroyed went with it.
void unload_modules(Entry& entry) noexcept;

}  // namespace triton_embed::detail
