#pragma once

// The slow paths: building a missing cache entry (through the kernel sources, core/source.h)
// and loading it into a context.

#include "core/cache.h"
#include "core/kernel_state.h"
#include "core/specialize.h"
#include "cuda/driver.h"

namespace triton_embed::detail {

// The entry for `key`, compiled with Triton if needed. Threads that miss the same key wait
// for one build; a failed build is not cached. Releases the GIL while waiting. When no source
// holds it (a runtime-only program, no bundle entry): NotInBundleError.
Entry* compile_entry(KernelState& kernel, const InternedOptions& options, const Key& key,
                     uint64_t hash, const ArgValue* args, const LeafList& leaves);

// compile(), then load the kernel into the current context (JitFunction::prepare).
const CompiledKernel& prepare_kernel(KernelState* kernel, const InternedOptions* options,
                                     const ArgValue* args, size_t nargs);

// Loads the entry's cubin into the context (once per context) and returns the CUfunction.
void* load_function(const KernelState& kernel, Entry& entry, const cuda::ContextInfo& ctx);

}  // namespace triton_embed::detail
