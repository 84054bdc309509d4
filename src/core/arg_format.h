#pragma once

// Text for error messages and signatures. Error paths only.

#include <cstddef>
#include <string>
#include <vector>

#include "base/internal_api.h"
#include "core/kernel_state.h"
#include "core/specialize.h"
#include "triton_embed/arg_value.h"

namespace triton_embed::detail {

// "an integer (5)", "a string 'abc'", "a pointer to fp32", "None", ...
std::string describe_value(const ArgValue& v);
// "add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK)"
TE_INTERNAL_API std::string call_signature(const KernelState& kernel);
// "add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK): argument #3 'n'"
std::string arg_where(const KernelState& kernel, size_t index);
// "pykernels.vector.add_kernel"
TE_INTERNAL_API std::string full_name(const KernelState& kernel);
// The parameters' names, in order (for expression programs' text).
TE_INTERNAL_API std::vector<std::string> param_names(const KernelState& kernel);
// The specialisation of a call in the form Triton's compile errors use (glue.describe):
// "add_kernel(x_ptr: *fp32 D, n: i32, BLOCK: constexpr = 1024)".
std::string specialized_signature(const KernelState& kernel, const LeafList& leaves);

}  // namespace triton_embed::detail
