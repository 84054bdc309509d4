#pragma once

// Loading kernels from Python (src/python/introspect.cc): imports the module, reads the kernel
// (its parameters and wrappers), registers its state.

#include <string_view>

#include "base/internal_api.h"
#include "core/kernel_state.h"

namespace triton_embed::detail {

// Module.name's state, registered (GIL taken).
KernelState* python_load_kernel(std::string_view module, std::string_view name);
// The same for a Python kernel object (a JITFunction, an Autotuner or Heuristics, or
// triton_embed.jit's view of one): by name (load_kernel) when its module holds it under its
// function's name, else registered for this object alone. TypeError for another object.
TE_INTERNAL_API KernelState* python_load_object(void* object);

}  // namespace triton_embed::detail
