#pragma once

// Binding a call's arguments to the kernel's parameters (launch, compile, interpret).

#include <cstring>

#include "base/errors.h"
#include "base/internal_api.h"
#include "core/kernel_state.h"

namespace triton_embed::detail {

// TypeError: the call passed too few or too many arguments (as Python's binder raises).
[[noreturn]] TE_INTERNAL_API void throw_arg_count(const KernelState& k, size_t nargs);

// The arguments with the Python defaults of the parameters left out filled in: `args` itself
// when every parameter was passed, else `buf` (kMaxArgs values).
inline const ArgValue* with_defaults(const KernelState& k, const ArgValue* args, size_t nargs,
                                     ArgValue* buf) {
  const size_t np = k.params.size();
  if (TE_LIKELY(nargs == np)) return args;
  if (nargs > np || nargs < k.min_args) throw_arg_count(k, nargs);
  // np <= kMaxArgs: kernels with more parameters are refused when they are loaded.
  std::memcpy(static_cast<void*>(buf), args, nargs * sizeof(ArgValue));
  for (size_t i = nargs; i < np; ++i) buf[i] = k.defaults[i];
  return buf;
}

}  // namespace triton_embed::detail
