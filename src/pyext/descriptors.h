#pragma once

// TensorDescriptor arguments: the per-thread descriptors made from Python's (DescCache), and a
// descriptor argument's conversion (convert_descriptor, descriptors.cc).

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>

#include "pyext/types.h"
#include "triton_embed/tensor_descriptor.h"

namespace triton_embed::detail {

// A TensorDescriptor argument's C++ descriptor: per thread, the last few with their fields,
// so that a stream of launches with the same fields reuses one and its encoded map.
struct DescCache {
  struct Slot {
    bool in_use = false;
    std::optional<TensorDescriptor> desc;
    // The Python descriptor desc was last read from (null: none), with its instance dict, that
    // dict's stamp and its type's version then: while both hold, its fields are the same
    // objects, and a launch reads again only what can change under them (the base tensor's
    // data, a block_shape list's items). Compared, and dereferenced only while they hold.
    PyObject* obj = nullptr;
    PyObject* dict = nullptr;
    uint64_t stamp = 0;
    PyTypeObject* type = nullptr;
    unsigned int type_version = 0;
    PyObject* base = nullptr;        // the base tensor (the dict holds it)
    PyObject* block_list = nullptr;  // block_shape when it is a list (the dict holds it)
  };
  Slot slots[16];
  unsigned next = 0;
};

struct Conversion;  // convert.h

// Reads the dimensions of a TensorDescriptor's shape, strides or block_shape `seq` into `out`
// (`rank`: the rank they must have, or -1; set to theirs); false with a Python exception set.
inline bool read_dims(PyObject* seq, int64_t* out, int& rank) {
  // Tuples (torch.Size, a subclass, from TensorDescriptor.from_tensor) and lists in place;
  // other sequences through a list.
  PyObject* items = nullptr;
  if (PyTuple_Check(seq) || PyList_Check(seq)) {
    items = seq;
    Py_INCREF(items);
  } else {
    items = PySequence_List(seq);
    if (items == nullptr) {
      PyErr_SetString(PyExc_TypeError,
                      "a TensorDescriptor's shape, strides and block_shape are sequences of "
                      "integers");
      return false;
    }
  }
  const pyb::object hold = pyb::reinterpret_steal<pyb::object>(items);
  const bool tuple = PyTuple_Check(items);
  const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(items) : PyList_GET_SIZE(items);
  if (n < 1 || n > TensorDescriptor::kMaxRank || (rank >= 0 && n != rank)) {
    PyErr_SetString(PyExc_ValueError, "TensorDescriptor: rank mismatch");
    return false;
  }
  rank = static_cast<int>(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    out[i] = PyLong_AsLongLong(tuple ? PyTuple_GET_ITEM(items, i) : PyList_GET_ITEM(items, i));
    if (out[i] == -1 && PyErr_Occurred()) return false;
  }
  return true;
}

// A triton.tools.tensor_descriptor.TensorDescriptor as the library's descriptor.
bool convert_descriptor(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c);

}  // namespace triton_embed::detail
