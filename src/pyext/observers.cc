// The CallObserver's functions of an autotuned launch from Python: each layer's choice as its
// Autotuner's best_config (observe_choice), a config pre-hook's block shape on the caller's
// descriptor (observe_block).

#include "pyext/observers.h"

#include <Python.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>

#include "core/layers.h"
#include "pyext/descriptors.h"
#include "pyext/types.h"
#include "python/handles.h"
#include "triton_embed/tensor_descriptor.h"

namespace triton_embed::detail {

namespace {

// The triton.Config the runtime's choice c was made from (null: a bundle's choice). Only a
// config is remembered: a choice with one is never freed, one without may be, and another
// choice may then come at its address (core/reclaim.h).
PyObject* config_of(FastKernel* k, const Choice* c) {
  if (c != k->last_choice || k->last_config == nullptr) {
    PyObject* config = py::config(*c);
    Py_XINCREF(config);
    Py_XSETREF(k->last_config, config);
    k->last_choice = c;
  }
  return k->last_config;
}

}  // namespace

void observe_choice(void* ctx, uint32_t layer, const void* choice) {
  FastKernel* k = static_cast<const Observed*>(ctx)->kernel;
  PyObject* tuner = PyTuple_GET_ITEM(k->tuners, layer);
  PyObject* config = config_of(k, static_cast<const Choice*>(choice));
  if (tuner == Py_None || config == nullptr) return;
  // Autotuner.run sets best_config on every call; most calls find it set already.
  PyObject** dict = _PyObject_GetDictPtr(tuner);
  if (dict != nullptr && *dict != nullptr && PyDict_CheckExact(*dict) &&
      dict_get(*dict, g_types.s_best_config) == config) {
    return;
  }
  if (PyObject_SetAttr(tuner, g_types.s_best_config, config) < 0) throw pyb::error_already_set();
}

// A hook's block shape for parameter `param`, on the caller's descriptor: a list of ints, or a
// tuple, as the hook assigns it (unless it is an equal one of that type already).
void observe_block(void* ctx, uint32_t param, const int64_t* block, uint32_t rank, bool tuple) {
  PyObject* desc = static_cast<const Observed*>(ctx)->by_param[param];
  if (desc == nullptr || rank > TensorDescriptor::kMaxRank) return;  // a default: not the caller's
  PyObject* now = PyObject_GetAttr(desc, g_types.s_block_shape);
  if (now == nullptr) throw pyb::error_already_set();
  int64_t dims[TensorDescriptor::kMaxRank];
  int have = -1;
  const bool same = (tuple ? PyTuple_CheckExact(now) : PyList_CheckExact(now)) &&
                    read_dims(now, dims, have) && static_cast<uint32_t>(have) == rank &&
                    std::equal(block, block + rank, dims);
  Py_DECREF(now);
  PyErr_Clear();
  if (same) return;
  const pyb::object shape =
      pyb::reinterpret_steal<pyb::object>(tuple ? PyTuple_New(static_cast<Py_ssize_t>(rank))
                                                : PyList_New(static_cast<Py_ssize_t>(rank)));
  if (!shape) throw pyb::error_already_set();
  for (uint32_t d = 0; d < rank; ++d) {
    PyObject* v = PyLong_FromLongLong(block[d]);
    if (v == nullptr) throw pyb::error_already_set();
    if (tuple) {
      PyTuple_SET_ITEM(shape.ptr(), d, v);
    } else {
      PyList_SET_ITEM(shape.ptr(), d, v);
    }
  }
  if (PyObject_SetAttr(desc, g_types.s_block_shape, shape.ptr()) < 0) {
    throw pyb::error_already_set();
  }
}

}  // namespace triton_embed::detail
