#pragma once

// Helpers shared by the gtest files: GIL scopes and running Python in the embedded
// interpreter the library started.

#include <Python.h>
#include <gtest/gtest.h>
#include <pybind11/pybind11.h>
#include <triton_embed/jit.h>

#include <string>

namespace te_test {

namespace py = pybind11;

class Gil {
 public:
  Gil() : s_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(s_); }

 private:
  PyGILState_STATE s_;
};

// Runs Python statements in the __main__ namespace (GIL held by the caller).
inline void exec(const std::string& code) {
  py::dict g = py::module_::import("__main__").attr("__dict__");
  PyObject* r = PyRun_String(code.c_str(), Py_file_input, g.ptr(), g.ptr());
  if (r == nullptr) throw py::error_already_set();
  Py_DECREF(r);
}

// Evaluates a Python expression in __main__ (GIL held by the caller).
inline py::object eval(const std::string& expr) {
  py::dict g = py::module_::import("__main__").attr("__dict__");
  PyObject* r = PyRun_String(expr.c_str(), Py_eval_input, g.ptr(), g.ptr());
  if (r == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

// Imports tests/kernels/te_helpers.py into __main__: P(address, dtype), a tensor-like object
// Triton treats as a pointer, and FakeDriver, which lets JITFunction.warmup compile for
// cuda:90 without a GPU.
inline void install_python_helpers() {
  exec(
      "import triton\n"
      "import triton.language as tl\n"
      "from triton.backends.compiler import GPUTarget\n"
      "from te_helpers import P, FakeDriver\n");
}

// Takes ownership of a new reference returned as void* by the testing hooks.
inline py::object steal(void* p) {
  return py::reinterpret_steal<py::object>(static_cast<PyObject*>(p));
}

inline std::string repr(py::handle h) { return py::repr(h).cast<std::string>(); }
// repr() of a Python expression's value (takes the GIL).
inline std::string repr_of(const std::string& expr) {
  Gil gil;
  return te_test::repr(eval(expr));
}
// Runs Python statements in __main__ (takes the GIL).
inline void run(const std::string& code) {
  Gil gil;
  exec(code);
}
// str() of a Python expression's value, e.g. of a triton.Config: what Triton prints for it in
// the installed version (tests compare with it rather than with a version's text).
inline std::string str_of(const std::string& expr) {
  Gil gil;
  return py::str(eval(expr)).cast<std::string>();
}

}  // namespace te_test
