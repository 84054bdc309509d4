#pragma once

// Calls with named arguments and calls of wrapped kernels (@triton.heuristics,
// @triton.autotune), at a launch site or for the compile-side forms (src/core/launch_call.cc),
// with the memo of whole positional calls that resolves a wrapped kernel's repeated call
// without walking its layers.

#include <cstddef>

#include "base/internal_api.h"
#include "core/launch.h"
#include "core/layers.h"
#include "triton_embed/detail/call.h"

namespace triton_embed::detail {

// A call with named arguments or through a wrapped kernel's layers, launched at `site`
// (positional calls of plain kernels: launch_at, core/launch.h). The product's launch_call()
// is this at a launch site; a capturing site gets what a launch would have launched.
TE_INTERNAL_API void launch_call_at(KernelState* kernel, const InternedOptions* options,
                                    const LaunchSite& site, const CallArgs& call);

}  // namespace triton_embed::detail
