// The Python objects the _fast module compares against, found at import (init_types), and the
// library's errors as Python exceptions (raise_from, refused_call, triton_launches).

#include "pyext/types.h"

#include <Python.h>
#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include <exception>

#include "triton_embed/error.h"

namespace triton_embed::detail {

Types g_types;
PyObject* g_knobs_dict = nullptr;
bool g_knobs_followed = false;

namespace {

PyObject* import_attr(const char* module, const char* attr) {
  PyObject* m = PyImport_ImportModule(module);
  if (m == nullptr) return nullptr;
  PyObject* a = PyObject_GetAttrString(m, attr);
  Py_DECREF(m);
  return a;
}

}  // namespace

bool init_types() {
  Types& t = g_types;
  if ((t.constexpr_type = import_attr("triton.language", "constexpr")) == nullptr) return false;
  if ((t.dtype_type = import_attr("triton.language", "dtype")) == nullptr) return false;
  if ((t.jit_function = import_attr("triton.runtime.jit", "JITFunction")) == nullptr) return false;
  if ((t.drivers = import_attr("triton.runtime", "driver")) == nullptr) return false;
  if ((t.descriptor = import_attr("triton.tools.tensor_descriptor", "TensorDescriptor")) ==
      nullptr) {
    return false;
  }
  t.tensor_type = reinterpret_cast<PyTypeObject*>(import_attr("torch", "Tensor"));
  if (t.tensor_type == nullptr) return false;
  PyObject* knobs = PyImport_ImportModule("triton.knobs");
  if (knobs == nullptr) return false;
  t.runtime_knobs = PyObject_GetAttrString(knobs, "runtime");
  Py_DECREF(knobs);
  if (t.runtime_knobs == nullptr) return false;
  g_knobs_dict = PyObject_GenericGetDict(t.runtime_knobs, nullptr);
  if (g_knobs_dict == nullptr) return false;
  g_knobs_followed = follow_dict(g_knobs_dict);
  struct Name {
    PyObject** slot;
    const char* text;
  };
  const Name names[] = {{&t.s_value, "value"},
                        {&t.s_name, "name"},
                        {&t.s_base, "base"},
                        {&t.s_shape, "shape"},
                        {&t.s_strides, "strides"},
                        {&t.s_block_shape, "block_shape"},
                        {&t.s_padding, "padding"},
                        {&t.s_tf32, "round_f32_to_tf32"},
                        {&t.s_enter, "launch_enter_hook"},
                        {&t.s_exit, "launch_exit_hook"},
                        {&t.s_calls, "calls"},
                        {&t.s_pre_run_hooks, "pre_run_hooks"},
                        {&t.s_active, "active"},
                        {&t.s_best_config, "best_config"},
                        {&t.s_nan, "nan"},
                        {&t.s_zero, "zero"}};
  for (const Name& n : names) {
    if ((*n.slot = PyUnicode_InternFromString(n.text)) == nullptr) return false;
  }
  return true;
}

namespace {

// Sets the Python exception `e` holds as the current one (the same objects: type, value and
// traceback; callable more than once, unlike error_already_set::restore).
void set_python_error(const pyb::error_already_set& e) {
  PyErr_Restore(e.type().inc_ref().ptr(), e.value().inc_ref().ptr(), e.trace().inc_ref().ptr());
}

// When the library's error `e` reports a Python exception (raised by Python code the kernel
// sources ran: a heuristic, a tuning run, a pre-hook, Triton's compiler or interpreter), sets
// that exception, as Triton's launcher raises it.
bool set_python_cause(const Error& e) {
  if (e.cause() == nullptr) return false;
  try {
    std::rethrow_exception(e.cause());
  } catch (const pyb::error_already_set& p) {
    set_python_error(p);
    return true;
  } catch (...) {
  }
  return false;
}

}  // namespace

// The library's exception as the Python exception of the same kind, or the Python exception it
// carries (set as the current exception); returns nullptr for the caller to return.
PyObject* raise_from(const std::exception_ptr& ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const pyb::error_already_set& e) {
    set_python_error(e);
    return nullptr;
  } catch (const Error& e) {
    if (set_python_cause(e)) return nullptr;
  } catch (...) {
  }
  try {
    std::rethrow_exception(ep);
  } catch (const OverflowError& e) {
    PyErr_SetString(PyExc_OverflowError, e.what());
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const LookupError& e) {
    PyErr_SetString(PyExc_LookupError, e.what());
  } catch (const NotSupportedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const c10::Error& e) {  // as torch raises it from Python (its message, no C++ trace)
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "triton_embed: an unknown C++ exception");
  }
  return nullptr;
}

// Whether the library refused the call's arguments itself (a bad call, or one it does not
// serve), not a Python exception it carries: Triton's launcher then raises its own exception
// for the call (its type and message), or serves it.
bool refused_call(const std::exception_ptr& ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const Error& e) {
    if (e.cause() != nullptr) return false;
    return dynamic_cast<const TypeError*>(&e) != nullptr ||
           dynamic_cast<const ValueError*>(&e) != nullptr ||
           dynamic_cast<const LookupError*>(&e) != nullptr ||
           dynamic_cast<const NotSupportedError*>(&e) != nullptr;
  } catch (...) {
  }
  return false;
}

// Whether Triton's launcher can take a call here: its driver is active (not on a machine
// without a GPU, where Triton launches nothing and the library's own errors stand).
bool triton_launches() {
  // Asked with the call's own exception set: that stays the current one.
  const pyb::error_scope pending;
  PyObject* active = PyObject_GetAttr(g_types.drivers, g_types.s_active);
  if (active == nullptr) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(active);
  return true;
}

}  // namespace triton_embed::detail
