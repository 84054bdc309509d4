#pragma once

// The launch path of a call (src/core/launch.cc): where a call goes (launch sites and
// capturing sites), the launch of a plain kernel's positional call and of a resolved cache
// entry, and JitFunction::prepare's load of a kernel into the current context.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/errors.h"
#include "base/internal_api.h"
#include "core/jit_internal.h"
#include "triton_embed/arg_value.h"
#include "triton_embed/grid.h"

namespace triton_embed::detail::cuda {
struct ContextInfo;
}

namespace triton_embed::detail {

struct KernelState;

// ---- where a call goes -------------------------------------------------------------------
//
// Every launch ends at a LaunchSite. Once the launch path has resolved a call's cache entry
// (the inner kernel's, for a wrapped kernel) and packed its arguments, a launch site launches
// them in the calling thread's current context on its grid and stream. A capturing site (one
// with a caller's Captured) leaves them there instead and runs nothing on a device: its keys
// are for the explicit target (set_target, TRITON_EMBED_TARGET), which must be set, and a
// config pre-hook's zeroing of tensors (a device effect) is left out. Everything before the
// last step (binding, compiles, the layers' heuristics and tunings, the memo of whole calls)
// is the same at both.

struct Entry;

// How the launch path found a call's entry.
enum class Found : uint8_t {
  kHit,       // in the kernel's cache
  kMiss,      // not in the cache: this call built it (resolve_entry)
  kCallMemo,  // the memo of whole positional calls of a wrapped kernel resolved the call
};

// What a call at a capturing site leaves for its caller instead of launching.
// The caller sets `slots`; the launch path sets the rest.
struct Captured {
  uint64_t* slots;  // where the packed kernel arguments go (null: nowhere)
  Entry* entry;     // the cache entry that would launch (a wrapped kernel's inner kernel's)
  uint32_t np;      // how many packed arguments (the scratch pointers aside)
  Found found;
};

struct LaunchSite {
  const GridSpec* grid = nullptr;  // a launch's grid and stream
  Stream stream = nullptr;
  Captured* capture = nullptr;  // a capturing site's (null: launch)
};

// A call launched at `site`: positional (launch_at), or with named arguments or through a
// wrapped kernel's layers (launch_call_at, core/launch_call.h). The product's launch() and
// launch_call() are these at a launch site; a capturing site gets what a launch would have
// launched.
TE_INTERNAL_API void launch_at(KernelState* kernel, const InternedOptions* options,
                               const LaunchSite& site, const ArgValue* args, size_t nargs);
// A plain (unwrapped) kernel's positional call at `site` (launch_at without the layers).
void launch_plain(KernelState* kernel, const InternedOptions* options, const LaunchSite& site,
                  const ArgValue* args, size_t nargs);

// The launch of cache entry `e` of plain kernel `kernel` (src/core/launch.cc): params[0, np)
// point at its packed runtime arguments; slots[np], slots[np + 1] and params[np],
// params[np + 1] take the two scratch pointers. `args` (all parameters) for a grid
// callable's Meta.
void launch_entry(KernelState* kernel, Entry* e, const cuda::ContextInfo& ctx, const GridSpec& grid,
                  Stream stream, const ArgValue* args, uint64_t* slots, void** params, uint32_t np);

struct DescSlots;  // core/tensor_map.h
// The last step at `site` of the one-pass values values[0, n) of a call with host descriptors
// (descs), packed with e's TMA metadata (expand_descriptors): the launch in `ctx`, or with no
// ctx the site's capture. `args` (all parameters) for a grid callable's Meta.
void launch_with_descriptors(KernelState* kernel, Entry* e, const LaunchSite& site,
                             const cuda::ContextInfo* ctx, const ArgValue* args,
                             const DescSlots& descs, const uint64_t* values, uint32_t n,
                             Found found);
// What a launch raises for the fixed grid of a capturing site with a grid (OverflowError,
// ValueError), or nothing (src/core/launch.cc). A grid callable runs at a launch only.
void check_site_grid(const LaunchSite& site, const KernelState& kernel, const Entry& e);
// The last step at a capturing site: entry e (of plain kernel `kernel`) and its packed values
// slots[0, np), after the check a launch makes of the site's grid.
inline void capture_at(const LaunchSite& site, const KernelState& kernel, Entry* e,
                       const uint64_t* slots, uint32_t np, Found found) {
  if (TE_UNLIKELY(site.grid != nullptr)) check_site_grid(site, kernel, *e);
  Captured& c = *site.capture;
  c.entry = e;
  c.np = np;
  c.found = found;
  if (c.slots != nullptr) std::memcpy(c.slots, slots, np * sizeof(uint64_t));
}

// compile()'s call compiled into Triton's own cache, keeping no entry (warm_entry): a plain
// kernel's, at the end of a walk whose frame precompiles a tuning's configs. `pending`: as
// warm_entry's.
void warm(KernelState* kernel, const InternedOptions* options, const ArgValue* args, size_t nargs,
          PendingCompiles* pending);

// compile(), then load the kernel into the current context (JitFunction::prepare).
const CompiledKernel& prepare_kernel(KernelState* kernel, const InternedOptions* options,
                                     const ArgValue* args, size_t nargs);

}  // namespace triton_embed::detail
