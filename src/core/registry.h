#pragma once

// All KernelStates of the process, keyed by (module, kernel). They live until the process
// ends (handles and cache entries point at them); the JIT layer drops their Python references
// when the interpreter shuts down (python/handles.h).

#include <functional>
#include <string>

#include "base/internal_api.h"
#include "core/kernel_state.h"
#include "core/reclaim.h"

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

// Forgets what every kernel has resolved, so that each is asked of the kernel sources again
// (the bundles were unloaded): the cache's tables and entries, the heuristics' plans and
// memoised results, the tuned choices and their memo, the memo of whole calls, and what each
// would record into a bundle. A kernel's parameters and layers stay. Returns what was
// unpublished, for retire() (core/reclaim.h) once the caller's locks are released. Callers
// serialise (the bundle store's lock).
Retired forget_resolved_kernels();

// The resolutions' epoch: odd while forget_resolved_kernels() runs, and two more after each.
// A slow path reads it before asking the sources, and keeps (publishes, memoises, records)
// what they answered only while it is still_current(), checked under the lock the forgetting
// takes for that table. So nothing resolved from a bundle before or while it is unloaded is
// kept: a cache entry or a tuned choice still serves the one call that resolved it.
TE_INTERNAL_API uint64_t resolved_epoch() noexcept;
inline bool still_current(uint64_t epoch) noexcept {
  return (epoch & 1) == 0 && resolved_epoch() == epoch;
}

}  // namespace triton_embed::detail
