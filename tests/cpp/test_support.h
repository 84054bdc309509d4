#pragma once

// Helpers shared by the gtest files: GIL scopes and running Python in the embedded
// interpreter the library started.

#include <Python.h>
#include <pybind11/pybind11.h>
#include <gtest/gtest.h>

#include <string>

#include <triton_embed/jit.h>

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

// Python helpers: P(address, dtype) is a tensor-like object Triton treats as a pointer,
// FakeDriver lets JITFunction.warmup compile for cuda:90 without a GPU.
inline void install_python_helpers() {
  exec(R"PY(
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

class _Dtype:
    def __init__(self, name):
        self.name = name
    def __str__(self):
        return "torch." + self.name
    def __hash__(self):
        return hash(self.name)
    def __eq__(self, other):
        return isinstance(other, _Dtype) and other.name == self.name

class P:
    """A tensor-like object: Triton specialises it as a pointer to `dtype`."""
    def __init__(self, address, dtype):
        self.address = address
        self.dtype = _Dtype(dtype)
    def data_ptr(self):
        return self.address

class FakeDriver:
    """Enough of a driver for JITFunction.warmup to compile for cuda:90 on a CPU machine."""
    def get_current_device(self):
        return 0
    def get_current_stream(self, device):
        return 0
    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)
)PY");
}

// Takes ownership of a new reference returned as void* by the testing hooks.
inline py::object steal(void* p) { return py::reinterpret_steal<py::object>(static_cast<PyObject*>(p)); }

inline std::string repr(py::handle h) { return py::repr(h).cast<std::string>(); }

}  // namespace te_test
