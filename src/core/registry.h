#pragma once

// All KernelStates of the process, keyed by (module, kernel). They live until the process
// ends (handles and cache entries point at them); the JIT layer drops their Python references
// when the interpreter shuts down (python/jit_layer.h).

#include <functional>
#include <string>

#include "base/internal_api.h"
#include "core/kernel_state.h"

namespace triton_embed::detail {

// The registered state for (module, key), or nullptr.
TE_INTERNAL_API KernelState* find_kernel(const std::string& module, const std::string& key);
// Registers `kernel` under (module, key) unless one is there already; returns the registered
// one (when another thread won the race, `kernel` is handed back through `loser`).
TE_INTERNAL_API KernelState* insert_kernel(const std::string& module, const std::string& key,
                                           std::unique_ptr<KernelState> kernel,
                                           std::unique_ptr<KernelState>* loser);

// Calls f for every kernel state.
TE_INTERNAL_API void for_each_kernel(const std::function<void(KernelState&)>& f);

}  // namespace triton_embed::detail
