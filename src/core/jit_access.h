#pragma once

// What layers of this project built on the public handles reach behind them: a JitFunction's
// kernel state and interned options, a Meta's values. Internal (not installed).

#include "triton_embed/grid.h"
#include "triton_embed/jit.h"

namespace triton_embed::detail {

struct JitAccess {
  static JitFunction make(KernelState* state, const InternedOptions* options) {
    return JitFunction(state, options);
  }
};

struct MetaAccess {
  // The values of all of the kernel's parameters, in order.
  static const ArgValue* args(const Meta& m) noexcept { return m.args_; }
  static size_t size(const Meta& m) noexcept { return m.nargs_; }
};

}  // namespace triton_embed::detail
