#pragma once

// Compiling with Triton (src/python/compile.cc): Triton's compile path in this process (same
// hash, same disk cache as Python), made into an unpublished cache entry.

#include <cstdint>
#include <memory>

#include "core/cache.h"
#include "core/kernel_source.h"
#include "core/kernel_state.h"
#include "core/specialize.h"

namespace triton_embed::detail {

// Compiles with Triton and builds the (unpublished) entry for `key`.
std::unique_ptr<Entry> python_build_entry(KernelState& k, const InternedOptions& opts,
                                          const Key& key, uint64_t hash, const ArgValue* args,
                                          const LeafList& leaves);

// Compiles with Triton for `key` (filling Triton's cache) and keeps nothing: warm_entry. With
// `elsewhere`, while compiles go to worker processes (python/worker_processes.h), the compile
// is handed to one and this returns at once with *elsewhere set.
void python_warm_entry(KernelState& k, const InternedOptions& opts, const Key& key,
                       const ArgValue* args, const LeafList& leaves,
                       std::shared_ptr<PendingCompile>* elsewhere);

}  // namespace triton_embed::detail
