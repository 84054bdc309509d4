#pragma once

// Loading a cache entry's kernel into a CUDA context (src/core/module.cc).

#include "core/cache.h"
#include "core/kernel_state.h"
#include "cuda/driver.h"

namespace triton_embed::detail {

// Loads the entry's cubin into the context (once per context) and returns the CUfunction.
void* load_function(const KernelState& kernel, Entry& entry, const cuda::ContextInfo& ctx);

}  // namespace triton_embed::detail
