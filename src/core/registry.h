#pragma once

// All KernelStates of the process, keyed by (module, kernel). They live until the process
// ends (handles and cache entries point at them); their Python references are dropped when
// the interpreter shuts down.

#include <functional>
#include <string>

#include "core/kernel_state.h"

namespace triton_embed::detail {

// The registered state for (module, key), or nullptr.
KernelState* find_kernel(const std::string& module, const std::string& key);
// Registers `kernel` under (module, key) unless one is there already; returns the registered
// one (when another thread won the race, `kernel` is handed back through `loser`).
KernelState* insert_kernel(const std::string& module, const std::string& key,
                           std::unique_ptr<KernelState> kernel,
                           std::unique_ptr<KernelState>* loser);

// Calls f for every kernel state.
void for_each_kernel(const std::function<void(KernelState&)>& f);

// Drops every Python reference held by kernel states (GIL held; at interpreter shutdown).
void release_python_objects();

}  // namespace triton_embed::detail
