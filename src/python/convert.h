#pragma once

// C++ arguments as the Python values and specialisation Triton would have seen (GIL held).

#include <pybind11/pybind11.h>

#include "core/kernel_state.h"
#include "core/specialize.h"

namespace triton_embed::detail::py {

// The Python value Triton would receive for v.
pybind11::object to_python(const ArgValue& v);

// The specialisation list JITFunction's binder would return: one (type, key) per parameter,
// nested tuples for tuple arguments.
pybind11::list specialization_to_python(const KernelState& kernel, const LeafList& leaves);

// The bound arguments, one Python value per parameter.
pybind11::list args_to_python(const KernelState& kernel, const ArgValue* args);

}  // namespace triton_embed::detail::py
