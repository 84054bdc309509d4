// The Python fast path (triton_embed._fast, python/triton_embed/__init__.py's jit()): a Python
// program's own Triton kernels launched through the library, `fast[grid](*args, **kwargs)`
// called exactly as the kernel is. The call's Python objects become the library's plain call
// data here, in C++; the torch layer launches it (device, torch's current stream, CPU tensors
// through Triton's interpreter). Python runs only where the kernel sources need it (a
// compile, a heuristic or tuning run Python evaluates), and there it sees the call's own
// objects. A call this path does not take (Triton's launch hooks set, an argument kind it does
// not convert, a kernel TRITON_INTERPRET made an InterpretedFunction) goes to Triton's own
// launcher, counted with its reason (fast_path_stats()["reasons"]).
//
// The view triton_embed.jit returns is an instance of a subclass of both this module's
// FastKernel and the kernel's own class (JITFunction, Autotuner, Heuristics), sharing the
// kernel's __dict__: it is the kernel to everything that reads it (best_config, fn, warmup,
// run, isinstance checks such as torch.compile's), and its `[grid]` is FastKernel's.
//
// The module (this file): its functions (bind, stats, reset_stats) and PyInit__fast, which
// makes the FastKernel and Launcher types (fast_kernel.h). The parts: types.h (the Python
// objects compared against, errors), hooks.h (Triton's launch hooks), convert.h and
// descriptors.h (argument conversion), fallback.h (calls sent to Triton's launcher, and why),
// grid.h and observers.h (grid callables' programs, what autotune layers leave on the
// caller's objects), fast_kernel.h (the view and its call).

#include "pyext/module.h"

#include <Python.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "pyext/fallback.h"
#include "pyext/fast_kernel.h"
#include "pyext/types.h"

namespace triton_embed::detail {

// How many launches took each path (triton_embed.fast_path_stats()).
std::atomic<uint64_t> g_fast_calls{0};
std::atomic<uint64_t> g_triton_calls{0};
// Launches whose grid callable's program gave the grid in place of calling it.
std::atomic<uint64_t> g_grid_programs{0};

namespace {

// _fast.bind(view, kernel, label, interpreted): makes `view` (a fresh instance of a FastKernel
// subclass) the view of `kernel`, named `label` in fast_path_stats()'s reasons; `interpreted`:
// its innermost kernel is Triton's InterpretedFunction, whose calls Triton runs.
PyObject* bind(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4 || !PyObject_TypeCheck(args[0], g_kernel_type) || !PyUnicode_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "bind(view, kernel, label, interpreted)");
    return nullptr;
  }
  const int interpreted = PyObject_IsTrue(args[3]);
  if (interpreted < 0) return nullptr;
  auto* k = reinterpret_cast<FastKernel*>(args[0]);
  Py_INCREF(args[1]);
  Py_XSETREF(k->kernel, args[1]);
  Py_INCREF(args[2]);
  PyObject* label = args[2];
  PyUnicode_InternInPlace(&label);  // one object per name: count_left compares them by address
  Py_XSETREF(k->label, label);
  k->interpreted = interpreted != 0;
  Py_RETURN_NONE;
}

// {"fast": n, "triton": m, "grid_programs": g, "left": [(kernel, parameter or None, type or
// None, reason, count), ...], "unlisted": u}: triton_embed.fast_path_stats() writes the texts.
PyObject* stats(PyObject*, PyObject*) {
  PyObject* left = PyList_New(static_cast<Py_ssize_t>(g_nleft));
  if (left == nullptr) return nullptr;
  for (size_t i = 0; i < g_nleft; ++i) {
    const LeftCount& e = g_left[i];
    PyObject* row = Py_BuildValue("(OOOsK)", e.label, e.param != nullptr ? e.param : Py_None,
                                  e.type != nullptr ? reinterpret_cast<PyObject*>(e.type) : Py_None,
                                  reason_text(e.why), static_cast<unsigned long long>(e.n));
    if (row == nullptr) {
      Py_DECREF(left);
      return nullptr;
    }
    PyList_SET_ITEM(left, static_cast<Py_ssize_t>(i), row);
  }
  return Py_BuildValue("{s:K,s:K,s:K,s:N,s:K}", "fast",
                       g_fast_calls.load(std::memory_order_relaxed), "triton",
                       g_triton_calls.load(std::memory_order_relaxed), "grid_programs",
                       g_grid_programs.load(std::memory_order_relaxed), "left", left, "unlisted",
                       static_cast<unsigned long long>(g_left_unlisted));
}

PyObject* reset_stats(PyObject*, PyObject*) {
  g_fast_calls.store(0, std::memory_order_relaxed);
  g_triton_calls.store(0, std::memory_order_relaxed);
  g_grid_programs.store(0, std::memory_order_relaxed);
  clear_left_counts();
  Py_RETURN_NONE;
}

PyMethodDef g_methods[] = {
    {"bind", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&bind)), METH_FASTCALL,
     "bind(view, kernel, label, interpreted): makes view the fast view of kernel"},
    {"stats", &stats, METH_NOARGS,
     "launches by path, and why calls went to Triton's launcher (fast_path_stats())"},
    {"reset_stats", &reset_stats, METH_NOARGS, "zeroes the launch counts"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef g_module = {PyModuleDef_HEAD_INIT, "_fast",
                        "triton_embed's Python fast path (see triton_embed.jit)", -1, g_methods};

}  // namespace
}  // namespace triton_embed::detail

extern "C" __attribute__((visibility("default"))) PyObject* PyInit__fast() {
  using namespace triton_embed::detail;
  if (!init_types()) return nullptr;
  static PyTypeObject kernel_type = {PyVarObject_HEAD_INIT(nullptr, 0)};
  kernel_type.tp_name = "triton_embed._fast.FastKernel";
  kernel_type.tp_basicsize = sizeof(FastKernel);
  kernel_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  kernel_type.tp_doc = "The C base of triton_embed.jit's kernel views: their [grid].";
  kernel_type.tp_new = PyType_GenericNew;
  kernel_type.tp_dealloc = &kernel_dealloc;
  kernel_type.tp_as_mapping = &g_kernel_mapping;
  if (PyType_Ready(&kernel_type) < 0) return nullptr;
  g_kernel_type = &kernel_type;

  static PyTypeObject launcher_type = {PyVarObject_HEAD_INIT(nullptr, 0)};
  launcher_type.tp_name = "triton_embed._fast.Launcher";
  launcher_type.tp_basicsize = sizeof(Launcher);
  launcher_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  launcher_type.tp_doc = "fast[grid]: launches the kernel on the grid when called.";
  launcher_type.tp_dealloc = &launcher_dealloc;
  launcher_type.tp_vectorcall_offset = offsetof(Launcher, vectorcall);
  launcher_type.tp_call = &PyVectorcall_Call;
  if (PyType_Ready(&launcher_type) < 0) return nullptr;
  g_launcher_type = &launcher_type;

  PyObject* m = PyModule_Create(&g_module);
  if (m == nullptr) return nullptr;
  Py_INCREF(&kernel_type);
  if (PyModule_AddObject(m, "FastKernel", reinterpret_cast<PyObject*>(&kernel_type)) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
