#pragma once

// A launch's grid: a tuple or list (grid_from), or a grid callable, whose program (a Python
// function the glue translates (glue/grid_translation.py)) gives the grid without calling it
// (call_grid, grid.cc). What a call runs to find the program is inline here (grid_program_of), for
// the launch path's translation unit.

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "pyext/fast_kernel.h"
#include "pyext/types.h"
#include "python/expr_tree.h"
#include "triton_embed/error.h"
#include "triton_embed/grid.h"

namespace triton_embed::detail {

// The grid callable's argument: Triton's bound arguments (every parameter by name: the
// call's own objects where it gave them, else the values the layers and defaults set).
struct GridCall {
  FastKernel* kernel;
  PyObject* fn;
  PyObject* const* by_param;  // the call's object for each parameter it gave, else null
  const py::GridProgram* program = nullptr;  // what gives fn's result without calling it
};

// A grid: a tuple or list of 1-3 integers (not an int alone: Triton takes its len()).
inline Grid grid_from(PyObject* g) {
  int64_t d[3] = {1, 1, 1};
  if (PyTuple_Check(g) || PyList_Check(g)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(g);
    if (n < 1 || n > 3) {
      throw ValueError("the grid has " + std::to_string(n) + " dimensions; give 1 to 3");
    }
    for (Py_ssize_t i = 0; i < n; ++i) d[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(g, i));
  } else {
    throw TypeError(std::string("a grid is a tuple or list of 1 to 3 integers, or a callable on "
                                "the meta-parameters giving one; got ") +
                    Py_TYPE(g)->tp_name);
  }
  if (PyErr_Occurred()) throw pyb::error_already_set();
  return Grid(d[0], d[1], d[2]);
}

// The GridSpec function of a launch with a grid callable (ctx: its GridCall): the program's
// grid, or the callable's.
Grid call_grid(const void* ctx, const Meta& meta);

// Grid programs by (code object, the kernel's parameter names): a capsule of the GridProgram,
// or None where the code has none. Shared by every view; entries are never removed, so a
// program stays valid while the process runs. Guarded by the GIL.
extern PyObject* g_grid_cache;
constexpr Py_ssize_t kMaxGridCodes = 4096;

// What g_grid_cache keeps for grid function g of kernel k: a capsule, or None where the glue
// cannot translate it. An interrupt or a failed allocation while translating is raised.
pyb::object translate_grid(const FastKernel* k, PyObject* g);

// The program of grid callable g (a Python function whose source the glue translates), or null
// (the function is then called at each launch): translated once per code object and kernel
// parameters, for up to kMaxGridCodes of them.
inline const py::GridProgram* grid_program_of(FastKernel* k, PyObject* g) {
  if (!PyFunction_Check(g)) return nullptr;
  PyObject* code = PyFunction_GET_CODE(g);
  if (code == k->grid_code) return k->grid_program;
  if (g_grid_cache == nullptr && (g_grid_cache = PyDict_New()) == nullptr) {
    throw pyb::error_already_set();
  }
  auto key = pyb::reinterpret_steal<pyb::object>(PyTuple_Pack(2, code, k->names));
  if (!key) throw pyb::error_already_set();
  PyObject* found = PyDict_GetItemWithError(g_grid_cache, key.ptr());
  if (found == nullptr) {
    if (PyErr_Occurred()) throw pyb::error_already_set();
    if (PyDict_GET_SIZE(g_grid_cache) >= kMaxGridCodes) return nullptr;
    const pyb::object value = translate_grid(k, g);
    // Another thread may have translated it meanwhile (Python ran): the first one stays.
    found = PyDict_SetDefault(g_grid_cache, key.ptr(), value.ptr());
    if (found == nullptr) throw pyb::error_already_set();
  }
  const auto* program =
      found == Py_None ? nullptr
                       : static_cast<const py::GridProgram*>(PyCapsule_GetPointer(found, nullptr));
  // The last one looked up, its code object held so that its address is not reused; the old
  // one is released last (that may run Python code), after the pair is consistent.
  PyObject* old = k->grid_code;
  Py_INCREF(code);
  k->grid_code = code;
  k->grid_program = program;
  Py_XDECREF(old);
  return program;
}

}  // namespace triton_embed::detail
