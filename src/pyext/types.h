#pragma once

// The _fast module's footing: why a call goes to Triton's launcher (Fallback), the Python
// objects it compares against, found once at import (g_types), the stamps of the dicts it
// follows, the limits of one call, and the library's errors as Python exceptions.

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <exception>

namespace triton_embed::detail {

namespace pyb = pybind11;

// Why a call went to Triton's launcher (fast_path_stats()["reasons"]; reason_text says each).
enum class Fallback : uint8_t {
  kNone,
  kInterpreter,       // TRITON_INTERPRET=1 made the kernel an InterpretedFunction
  kLaunchHooks,       // knobs.runtime.launch_enter_hook / launch_exit_hook set
  kPreRunHooks,       // the kernel's pre_run_hooks (add_pre_run_hook)
  kTooManyArguments,  // more than kMaxCallArgs arguments or parameters
  kKind,              // an argument of a kind this path does not convert
  kBigInt,            // an integer beyond 64 bits
  kTooManyValues,     // more values, tensors or descriptors than a call's conversion holds
  kDType,             // a triton.language.dtype the library does not know
  kDescriptorBase,    // a TensorDescriptor whose base is no tensor
  kReadFailed,        // reading the argument raised (a tensor without storage, ...)
  kRefused,           // the library refused the call: Triton's launcher raises or serves it
};

// ---- Python objects this module compares against, found once at import ------------------

struct Types {
  PyObject* constexpr_type = nullptr;   // triton.language.constexpr
  PyObject* dtype_type = nullptr;       // triton.language.dtype
  PyObject* jit_function = nullptr;     // triton.runtime.jit.JITFunction
  PyObject* descriptor = nullptr;       // triton.tools.tensor_descriptor.TensorDescriptor
  PyObject* runtime_knobs = nullptr;    // triton.knobs.runtime
  PyObject* drivers = nullptr;          // triton.runtime.driver (a DriverConfig)
  PyTypeObject* tensor_type = nullptr;  // torch.Tensor
  PyObject* s_value = nullptr;          // interned attribute names
  PyObject* s_name = nullptr;
  PyObject* s_base = nullptr;
  PyObject* s_shape = nullptr;
  PyObject* s_strides = nullptr;
  PyObject* s_block_shape = nullptr;
  PyObject* s_padding = nullptr;
  PyObject* s_tf32 = nullptr;
  PyObject* s_enter = nullptr;
  PyObject* s_exit = nullptr;
  PyObject* s_calls = nullptr;
  PyObject* s_pre_run_hooks = nullptr;
  PyObject* s_active = nullptr;
  PyObject* s_best_config = nullptr;
  PyObject* s_nan = nullptr;  // padding values
  PyObject* s_zero = nullptr;
};
extern Types g_types;
extern PyObject* g_knobs_dict;  // knobs.runtime's instance __dict__

// Stamps of the dicts whose contents the fast path remembers (knobs.runtime's instance dict,
// the instance dicts of TensorDescriptor arguments): a dict's stamp changes whenever the dict
// does, and a new dict's differs from every earlier one's. It is the dict's version tag, which
// CPython keeps up to 3.13 (deprecated in 3.12 for extensions, and kept: unique to each change
// of each dict). From 3.14 on there is none: follow_dict is false, and the dicts are read at
// each launch.
#if PY_VERSION_HEX < 0x030E0000
inline bool follow_dict(PyObject*) { return true; }
inline uint64_t dict_stamp(PyObject* d) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return reinterpret_cast<PyDictObject*>(d)->ma_version_tag;
#pragma GCC diagnostic pop
}
#else
inline bool follow_dict(PyObject*) { return false; }
inline uint64_t dict_stamp(PyObject*) { return 0; }
#endif
extern bool g_knobs_followed;

inline bool knobs_stamp(uint64_t* out) {
  *out = dict_stamp(g_knobs_dict);
  return g_knobs_followed;
}

// Finds the Python objects of g_types and knobs.runtime's dict (at import); false with a
// Python exception set.
bool init_types();

// d[key] (a borrowed reference), or nullptr without an exception when d has no such key. The
// keys here are strings, whose lookups raise nothing; PyDict_GetItem would save and restore the
// exception state around each.
inline PyObject* dict_get(PyObject* d, PyObject* key) {
  PyObject* v = PyDict_GetItemWithError(d, key);
  if (v == nullptr && PyErr_Occurred()) PyErr_Clear();
  return v;
}

// obj.name, or nullptr without an exception when obj has no such attribute (a new reference).
inline PyObject* optional_attr(PyObject* obj, PyObject* name) {
  PyObject* out = nullptr;
#if PY_VERSION_HEX >= 0x030D0000
  if (PyObject_GetOptionalAttr(obj, name, &out) < 0) PyErr_Clear();
#else
  if (_PyObject_LookupAttr(obj, name, &out) < 0) PyErr_Clear();
#endif
  return out;
}

// ---- errors -----------------------------------------------------------------------------

// The library's exception as the Python exception of the same kind, or the Python exception it
// carries (set as the current exception); returns nullptr for the caller to return.
PyObject* raise_from(const std::exception_ptr& ep);

// Whether the library refused the call's arguments itself (a bad call, or one it does not
// serve), not a Python exception it carries: Triton's launcher then raises its own exception
// for the call (its type and message), or serves it.
bool refused_call(const std::exception_ptr& ep);

// Whether Triton's launcher can take a call here: its driver is active (not on a machine
// without a GPU, where Triton launches nothing and the library's own errors stand).
bool triton_launches();

// The limits of one call: values, tensors, arguments and parameters, descriptors.
constexpr size_t kMaxValues = 512;  // arguments and the elements of their tuples
constexpr size_t kMaxTensors = 256;
constexpr size_t kMaxCallArgs = 128;
constexpr size_t kMaxDescs = 8;

}  // namespace triton_embed::detail
