#pragma once

// A launch through Triton's interpreter (src/python/triton_interpreter.cc): CPU tensors and
// JitFunction::interpret.

#include <cstddef>

#include "core/kernel_state.h"
#include "triton_embed/grid.h"

namespace triton_embed::detail {

void python_interpret(KernelState* kernel, const GridSpec& grid, const ArgValue* args,
                      size_t nargs);

}  // namespace triton_embed::detail
