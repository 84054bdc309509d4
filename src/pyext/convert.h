#pragma once

// One call's conversion (Conversion): its Python objects as the library's values, the tensors
// among them and the descriptors it holds. The small steps a call takes per argument are
// inline here (is_tensor, take_tensor), for the launch path's translation unit; the other
// kinds of objects are converted in convert.cc (convert_other).

#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstddef>
#include <cstdint>

#include "pyext/descriptors.h"
#include "pyext/types.h"
#include "torch/python_hooks.h"
#include "triton_embed/torch.h"

namespace triton_embed::detail {

// Whether o is a torch tensor: of torch.Tensor or a subclass. By type, not isinstance: torch's
// metaclass answers isinstance through a Python-level __instancecheck__ call (a bound method
// made and freed per check), and what passes here is unpacked as a tensor.
inline bool is_tensor(PyObject* o) {
  PyTypeObject* type = Py_TYPE(o);
  return type == g_types.tensor_type ||
         (type != &PyLong_Type && type != &PyFloat_Type && o != Py_None &&
          PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(THPVariableClass)));
}

// One call's conversion: the values, the tensors among them and the descriptors it holds.
struct Conversion {
  ArgValue vals[kMaxValues];
  size_t nvals = 0;
  TensorRef tensors[kMaxTensors];
  size_t ntensors = 0;
  DescCache::Slot* held[kMaxDescs];
  size_t nheld = 0;
  TensorPlace place;  // where the tensors are, as they were read
  // Why an argument is one this path does not convert (the first reason found; kNone: none),
  // and for kKind the object (borrowed): Triton's launcher runs the call.
  Fallback why = Fallback::kNone;
  PyObject* why_object = nullptr;
  bool unsupported() const { return why != Fallback::kNone; }
  Conversion() = default;
  Conversion(const Conversion&) = delete;
  Conversion& operator=(const Conversion&) = delete;
  ~Conversion() {
    for (size_t i = 0; i < nheld; ++i) held[i]->in_use = false;
  }
};

// Marks the call as one this path leaves to Triton's launcher, for `why`.
inline void leave(Conversion& c, Fallback why, PyObject* object = nullptr) {
  if (!c.unsupported()) {
    c.why = why;
    c.why_object = object;
  }
}

// Adds the defined tensor t of top-level argument `arg`, read as `v` on `device`, to the call's
// tensors (c.unsupported() when there are too many).
inline void add_tensor(const at::Tensor& t, const ArgValue& v, c10::Device device, uint32_t arg,
                       Conversion& c) {
  if (C10_UNLIKELY(c.ntensors == kMaxTensors)) {
    leave(c, Fallback::kTooManyValues);
    return;
  }
  c.tensors[c.ntensors++] = TensorRef{&t, arg};
  c.place.add(v.dtype, device);
}

// Reads the tensor t of top-level argument `arg` as the value `out`, and adds it to the call's
// tensors.
inline void take_tensor(const at::Tensor& t, ArgValue& out, uint32_t arg, Conversion& c) {
  const c10::Device device = fill_tensor(t, out);
  if (t.defined()) add_tensor(t, out, device, arg, c);
}

// convert() of an object that is no tensor.
bool convert_other(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c);

}  // namespace triton_embed::detail
