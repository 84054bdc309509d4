#pragma once

// Text for error messages and signatures. Error paths only.

#include <cstddef>
#include <string>

#include "core/kernel_state.h"
#include "triton_embed/detail/arg_value.h"

namespace triton_embed::detail {

// "an integer (5)", "a string 'abc'", "a pointer to fp32", "None", ...
std::string describe_value(const ArgValue& v);
// "add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK)"
std::string call_signature(const KernelState& kernel);
// "add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK): argument #3 'n'"
std::string arg_where(const KernelState& kernel, size_t index);
// "pykernels.vector.add_kernel"
std::string full_name(const KernelState& kernel);

}  // namespace triton_embed::detail
