// An argument that is no tensor as the library's value (convert_other): scalars, tuples,
// strings, tl.dtype and tl.constexpr objects; a TensorDescriptor through descriptors.cc.

#include "pyext/convert.h"

#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pyext/descriptors.h"
#include "pyext/types.h"
#include "python/convert.h"

namespace triton_embed::detail {

namespace {

// A tl.dtype as the library's DType, by its name.
DType dtype_of(PyObject* o) {
  PyObject* name = PyObject_GetAttr(o, g_types.s_name);
  if (name == nullptr) {
    PyErr_Clear();
    return DType::invalid;
  }
  Py_ssize_t n = 0;
  const char* s = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : nullptr;
  DType d = DType::invalid;
  if (s != nullptr) d = dtype_from_name(std::string_view(s, static_cast<size_t>(n)));
  Py_DECREF(name);
  return d;
}

bool convert(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c);

}  // namespace

// convert() of an object that is no tensor.
bool convert_other(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c) {
  out = ArgValue{};
  if (py::scalar_from_python(o, out)) return true;
  if (PyLong_Check(o)) {  // beyond 64 bits: Triton's launcher says what it says
    leave(c, Fallback::kBigInt);
    return true;
  }
  if (PyTuple_Check(o)) {
    const Py_ssize_t n = PyTuple_GET_SIZE(o);
    if (c.nvals + static_cast<size_t>(n) > kMaxValues) {
      leave(c, Fallback::kTooManyValues);
      return true;
    }
    ArgValue* elems = c.vals + c.nvals;
    c.nvals += static_cast<size_t>(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!convert(PyTuple_GET_ITEM(o, i), elems[i], arg, c)) return false;
      if (c.unsupported()) return true;
    }
    out.kind = ArgKind::kTuple;
    out.count = static_cast<uint32_t>(n);
    out.elems = elems;
    return true;
  }
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    out.s = PyUnicode_AsUTF8AndSize(o, &n);  // lives as long as o
    if (out.s == nullptr) return false;
    out.kind = ArgKind::kStr;
    out.count = static_cast<uint32_t>(n);
    return true;
  }
  if (PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_types.descriptor))) {
    return convert_descriptor(o, out, arg, c);
  }
  if (PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_types.dtype_type))) {
    out.kind = ArgKind::kDType;
    out.dtype = dtype_of(o);
    if (out.dtype == DType::invalid) leave(c, Fallback::kDType);
    return true;
  }
  if (PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_types.constexpr_type))) {
    if (c.nvals == kMaxValues) {
      leave(c, Fallback::kTooManyValues);
      return true;
    }
    PyObject* v = PyObject_GetAttr(o, g_types.s_value);
    if (v == nullptr) return false;
    ArgValue* inner = c.vals + c.nvals++;
    const bool ok = convert(v, *inner, arg, c);
    Py_DECREF(v);  // a str's text and a tensor stay alive with the constexpr object
    if (!ok) return false;
    out.kind = ArgKind::kConstexpr;
    out.elems = inner;
    return true;
  }
  // Other objects (data_ptr() objects, JIT functions, ...): Triton's launcher.
  leave(c, Fallback::kKind, o);
  return true;
}

namespace {

// Writes o as the value `out`; `arg` is its top-level argument's index. False with a Python
// exception set; c.unsupported() for an object this path leaves to Triton's launcher.
bool convert(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c) {
  // Tensors first (torch.Tensor and its subclasses, by type).
  if (is_tensor(o)) {
    take_tensor(THPVariable_Unpack(o), out, arg, c);
    return true;
  }
  return convert_other(o, out, arg, c);
}

}  // namespace

}  // namespace triton_embed::detail
