#pragma once

// C++ arguments as the Python values and specialisation Triton would have seen, and Python
// values as arguments (GIL held).

#include <pybind11/pybind11.h>

#include "core/kernel_state.h"
#include "core/specialize.h"

namespace triton_embed::detail::py {

// The Python value Triton would receive for v.
TE_INTERNAL_API pybind11::object to_python(const ArgValue& v);

// The specialisation list JITFunction's binder would return: one (type, key) per parameter,
// nested tuples for tuple arguments.
TE_INTERNAL_API pybind11::list specialization_to_python(const KernelState& kernel,
                                                        const LeafList& leaves);

// The bound arguments, one Python value per parameter.
TE_INTERNAL_API pybind11::list args_to_python(const KernelState& kernel, const ArgValue* args);
// The same with None for every pointer and tensor descriptor: what compiling needs of them
// (the values of the constexpr parameters), with no device pointer or torch dtype made.
pybind11::list compile_args_to_python(const KernelState& kernel, const ArgValue* args);

// The other way: a Python value (None, bool, int, float, str, tl.dtype, tl.constexpr and
// tuples of them) as an ArgValue whose storage the kernel keeps (strings interned once).
// False when it has no plain form; the caller then keeps the object (keep_object).
bool from_python(KernelState& kernel, pybind11::handle obj, ArgValue& out);
// None, bool, int (up to 64 bits, signed or not) and float as an ArgValue; false (no Python
// error set) for anything else.
TE_INTERNAL_API bool scalar_from_python(PyObject* obj, ArgValue& out);

// A kPyObject ArgValue holding a strong reference that the kernel owns.
ArgValue keep_object(KernelState& kernel, pybind11::handle obj);

// A Triton option's value as Python's keyword argument.
pybind11::object option_to_python(const OptionValue& v);

}  // namespace triton_embed::detail::py
