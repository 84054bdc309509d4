// FastKernel's and Launcher's functions: a view's first call loads its kernel (ensure_loaded),
// `fast[grid]` makes a Launcher (kernel_subscript), and the Launcher's vectorcall
// (launcher_call) converts the call and hands it to the torch layer, or to Triton's launcher.

#include "pyext/fast_kernel.h"

#include <Python.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "core/call_hooks.h"
#include "core/jit_internal.h"
#include "core/kernel_state.h"
#include "pyext/convert.h"
#include "pyext/fallback.h"
#include "pyext/grid.h"
#include "pyext/hooks.h"
#include "pyext/module.h"
#include "pyext/observers.h"
#include "pyext/types.h"
#include "python/handles.h"
#include "python/introspect.h"
#include "torch/python_hooks.h"
#include "triton_embed/error.h"

namespace triton_embed::detail {

PyTypeObject* g_kernel_type = nullptr;
PyTypeObject* g_launcher_type = nullptr;

void kernel_dealloc(PyObject* self) {
  auto* k = reinterpret_cast<FastKernel*>(self);
  Py_CLEAR(k->kernel);
  Py_CLEAR(k->label);
  for (size_t i = 0; i < k->nleft; ++i) clear_shape(k->left[i]);
  Py_CLEAR(k->params);
  Py_CLEAR(k->names);
  Py_CLEAR(k->options);
  Py_CLEAR(k->pre_run_hooks);
  Py_CLEAR(k->grid_code);
  Py_CLEAR(k->tuners);
  Py_CLEAR(k->config_options);
  Py_CLEAR(k->last_config);
  Py_CLEAR(k->kw_names);
  Py_TYPE(self)->tp_free(self);
}

namespace {

// Loads the kernel's state on the first call.
bool ensure_loaded(FastKernel* k) {
  if (k->state != nullptr) return true;
  try {
    KernelState* s = python_load_object(k->kernel);
    pyb::dict params;
    pyb::tuple names(s->params.size());
    for (size_t i = 0; i < s->params.size(); ++i) {
      auto name =
          pyb::reinterpret_steal<pyb::str>(PyUnicode_InternFromString(s->params[i].name.c_str()));
      if (!name) throw pyb::error_already_set();
      params[name] = pyb::int_(i);
      names[i] = name;
    }
    // The innermost JITFunction's pre_run_hooks (Triton appends to this list).
    pyb::object fn = pyb::reinterpret_borrow<pyb::object>(k->kernel);
    while (!PyObject_TypeCheck(fn.ptr(), reinterpret_cast<PyTypeObject*>(g_types.jit_function))) {
      fn = fn.attr("fn");
    }
    pyb::object hooks = pyb::getattr(fn, g_types.s_pre_run_hooks, pyb::none());
    pyb::tuple tuners(s->layers.size());
    pyb::set config_options;
    bool tuned = false;
    for (size_t li = 0; li < s->layers.size(); ++li) {
      PyObject* tuner = nullptr;
      if (const TuneLayer* t = s->layers[li]->tune.get()) tuner = py::tuner(*s, *t);
      tuners[li] = tuner != nullptr ? pyb::handle(tuner) : pyb::none();
      tuned = tuned || tuner != nullptr;
      if (tuner == nullptr) continue;
      for (pyb::handle config : pyb::handle(tuner).attr("configs")) {
        pyb::dict meta = config.attr("kwargs");
        for (pyb::handle name : config.attr("all_kwargs")()) {
          if (!meta.contains(name)) config_options.add(name);
        }
      }
    }
    pyb::dict options;
    const InternedOptions* no_options = intern_options(Options());
    // Nothing below fails: a load that raised above leaves the fields as they were.
    Py_XSETREF(k->tuners, tuned ? tuners.release().ptr() : nullptr);
    Py_XSETREF(k->config_options,
               pyb::len(config_options) != 0 ? config_options.release().ptr() : nullptr);
    Py_XSETREF(k->pre_run_hooks, PyList_Check(hooks.ptr()) ? hooks.release().ptr() : nullptr);
    Py_XSETREF(k->params, params.release().ptr());
    Py_XSETREF(k->names, names.release().ptr());
    Py_XSETREF(k->options, options.release().ptr());
    k->no_options = no_options;
    k->state = s;
    return true;
  } catch (...) {
    raise_from(std::current_exception());
    return false;
  }
}

// ---- Launcher: fast[grid] -------------------------------------------------------------

// One freed Launcher kept for the next fast[grid] (a launch statement makes one and frees it
// right after: no allocation then). Guarded by the GIL.
Launcher* g_free_launcher = nullptr;

}  // namespace

void launcher_dealloc(PyObject* self) {
  auto* l = reinterpret_cast<Launcher*>(self);
  Py_CLEAR(l->kernel);
  Py_CLEAR(l->grid);
  if (g_free_launcher == nullptr) {
    g_free_launcher = l;
    return;
  }
  Py_TYPE(self)->tp_free(self);
}

namespace {

// The interned options of a call's launch options (num_warps=, num_stages=, ...): per kernel,
// per distinct set.
const InternedOptions* options_of(FastKernel* k, PyObject* const* values, PyObject* names,
                                  const Py_ssize_t* which, size_t n) {
  PyObject* key = PyTuple_New(static_cast<Py_ssize_t>(2 * n));
  if (key == nullptr) throw pyb::error_already_set();
  for (size_t i = 0; i < n; ++i) {
    PyObject* name = PyTuple_GET_ITEM(names, which[i]);
    PyObject* value = values[which[i]];
    Py_INCREF(name);
    Py_INCREF(value);
    PyTuple_SET_ITEM(key, static_cast<Py_ssize_t>(2 * i), name);
    PyTuple_SET_ITEM(key, static_cast<Py_ssize_t>(2 * i + 1), value);
  }
  pyb::object hold = pyb::reinterpret_steal<pyb::object>(key);
  PyObject* found = PyDict_GetItemWithError(k->options, key);
  if (found != nullptr) return static_cast<const InternedOptions*>(PyLong_AsVoidPtr(found));
  if (PyErr_Occurred()) throw pyb::error_already_set();
  Options options;
  for (size_t i = 0; i < n; ++i) {
    const std::string name = pyb::str(PyTuple_GET_ITEM(names, which[i])).cast<std::string>();
    if (k->config_options != nullptr) {
      const int set = PySet_Contains(k->config_options, PyTuple_GET_ITEM(names, which[i]));
      if (set < 0) throw pyb::error_already_set();
      if (set != 0) {  // not remembered: each such call is refused
        throw TypeError(k->state->name + ": launch option '" + name +
                        "' given to an autotuned kernel whose configs set it (Triton's "
                        "Autotuner gets multiple values for it); set it in the configs");
      }
    }
    PyObject* v = values[which[i]];
    if (PyBool_Check(v)) {
      options.set(name, v == Py_True);
    } else if (PyLong_Check(v)) {
      options.set(name, static_cast<int64_t>(PyLong_AsLongLong(v)));
    } else if (PyFloat_Check(v)) {
      options.set(name, PyFloat_AS_DOUBLE(v));
    } else if (PyUnicode_Check(v)) {
      options.set(name, pyb::str(v).cast<std::string>());
    } else {
      throw TypeError("launch option '" + name + "' = " + pyb::repr(v).cast<std::string>() +
                      ": triton_embed takes bool, int, float and str options");
    }
  }
  const InternedOptions* interned = intern_options(options);
  PyObject* ptr = PyLong_FromVoidPtr(const_cast<InternedOptions*>(interned));
  if (ptr == nullptr || PyDict_SetItem(k->options, key, ptr) != 0) {
    Py_XDECREF(ptr);
    throw pyb::error_already_set();
  }
  Py_DECREF(ptr);
  return interned;
}

PyObject* launcher_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* l = reinterpret_cast<Launcher*>(self);
  FastKernel* k = l->kernel;
  if (k->interpreted)
    return triton_launch(l, Fallback::kInterpreter, -1, nullptr, args, nargsf, kwnames);
  if (!ensure_loaded(k)) return nullptr;
  if (const Fallback hooks = hooks_set(k); hooks != Fallback::kNone) {
    return triton_launch(l, hooks, -1, nullptr, args, nargsf, kwnames);
  }
  const size_t npos = static_cast<size_t>(PyVectorcall_NARGS(nargsf));
  const size_t nkw = kwnames != nullptr ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
  if (k->nleft != 0) {  // a call shape already found to go to Triton's launcher
    if (const LeftShape* s = left_shape(k, args, npos, npos + nkw, kwnames)) {
      return triton_launch(l, Fallback::kKind, s->param, s->types[s->arg], args, nargsf, kwnames);
    }
  }
  const KernelState& state = *k->state;
  const size_t np = state.params.size();
  if (npos + nkw > kMaxCallArgs || np > kMaxCallArgs) {
    return triton_launch(l, Fallback::kTooManyArguments, -1, nullptr, args, nargsf, kwnames);
  }
  Conversion c;
  // The call's objects by parameter (the grid callable's bound arguments, the objects Python
  // code of the layers sees), and the launch options among the named arguments.
  PyObject* by_param[kMaxCallArgs];
  std::memset(static_cast<void*>(by_param), 0, np * sizeof(PyObject*));
  Py_ssize_t option_at[kMaxCallArgs];
  size_t noptions = 0;
  size_t nnamed = 0, end = npos;  // end: one past the last parameter given
  bool positional = true;         // the named arguments complete a positional call
  for (size_t i = 0; i < npos && i < np; ++i) by_param[i] = args[i];
  // The names' parameters: looked up once per tuple of names, copied (a conversion may run
  // Python that calls this kernel with other names).
  if (nkw != 0 && kwnames != k->kw_names) {
    for (size_t i = 0; i < nkw; ++i) {
      PyObject* index = dict_get(k->params, PyTuple_GET_ITEM(kwnames, i));
      k->kw_params[i] = static_cast<int16_t>(index != nullptr ? PyLong_AsSsize_t(index) : -1);
    }
    Py_INCREF(kwnames);
    Py_XSETREF(k->kw_names, kwnames);
  }
  int16_t kw_param[kMaxCallArgs];
  std::memcpy(kw_param, k->kw_params, nkw * sizeof(int16_t));
  for (size_t i = 0; i < nkw; ++i) {
    if (kw_param[i] < 0) {
      option_at[noptions++] = static_cast<Py_ssize_t>(i);
      continue;
    }
    const Py_ssize_t p = kw_param[i];
    ++nnamed;
    if (static_cast<size_t>(p) < npos || by_param[p] != nullptr) {
      positional = false;  // given twice: the library raises Python's TypeError
    } else if (state.layer_params.heuristic.has(static_cast<uint32_t>(p)) ||
               state.layer_params.config.has(static_cast<uint32_t>(p))) {
      // A parameter a layer sets stays named: a heuristic overwrites it, as Heuristics.run
      // does (its function sees the value given), and an autotune config's is Triton's
      // conflict; by position both would be the binder's "multiple values".
      positional = false;
      by_param[p] = args[npos + i];
    } else {
      by_param[p] = args[npos + i];
      end = std::max(end, static_cast<size_t>(p) + 1);
    }
  }
  // A gap before the last named parameter: its default, for a plain kernel (the layers of a
  // wrapped one must see it as not given); else the call stays named.
  for (size_t p = npos; positional && p < end; ++p) {
    if (by_param[p] == nullptr && (!state.layers.empty() || !state.params[p].has_default)) {
      positional = false;
    }
  }
  // The call's values first (positional, then named in call order or by parameter), nested
  // values after them.
  void* objects[kMaxCallArgs];
  alignas(ArgName) unsigned char name_storage[kMaxCallArgs * sizeof(ArgName)];
  auto* names = reinterpret_cast<ArgName*>(name_storage);
  const size_t ncall = positional ? end : npos + nnamed;
  c.nvals = ncall;
  // Reading a tensor can raise a c10::Error (data_ptr() of a tensor without storage): Triton's
  // launcher takes the call where it can, else the error is raised as torch raises it.
  int read_param = -1;  // the parameter whose argument is being read
  try {
    for (size_t i = 0; i < ncall; ++i) {
      PyObject* o = nullptr;
      // Where o is among the call's arguments, and its parameter (-1: beyond the parameters).
      size_t at = i;
      read_param = i < np ? static_cast<int>(i) : -1;
      if (i < npos) {
        o = args[i];
      } else if (positional) {
        o = by_param[i];
        if (o == nullptr) {  // a plain kernel's default
          c.vals[i] = state.defaults[i];
          objects[i] = nullptr;
          continue;
        }
      } else {
        size_t kw = 0, seen = 0;  // the (i - npos)-th named parameter in call order
        for (; kw < nkw; ++kw) {
          if (kw_param[kw] >= 0 && seen++ == i - npos) {
            break;
          }
        }
        PyObject* name = PyTuple_GET_ITEM(kwnames, kw);
        Py_ssize_t len = 0;
        const char* text = PyUnicode_AsUTF8AndSize(name, &len);
        if (text == nullptr) return nullptr;
        new (&names[i - npos]) ArgName(text, static_cast<size_t>(len));
        o = args[npos + kw];
        at = npos + kw;
        read_param = kw_param[kw];
      }
      objects[i] = o;
      if (is_tensor(o)) {  // the common case, without convert's frame
        take_tensor(THPVariable_Unpack(o), c.vals[i], static_cast<uint32_t>(i), c);
      } else if (!convert_other(o, c.vals[i], static_cast<uint32_t>(i), c)) {
        // An object this path cannot read: Triton's launcher says what it says of it.
        if (!triton_launches()) return nullptr;
        PyErr_Clear();
        return triton_launch(l, Fallback::kReadFailed, read_param, nullptr, args, nargsf, kwnames);
      }
      if (c.unsupported()) {
        PyTypeObject* type = nullptr;
        if (c.why == Fallback::kKind && c.why_object == o) {  // by its type: remembered
          type = Py_TYPE(o);
          if (positional && i >= npos) {  // the named argument of parameter i
            for (at = npos; at + 1 < npos + nkw && kw_param[at - npos] != read_param; ++at) {
            }
          }
          remember_left_shape(k, args, npos, npos + nkw, kwnames, read_param, at);
        }
        return triton_launch(l, c.why, read_param, type, args, nargsf, kwnames);
      }
    }
  } catch (...) {
    if (triton_launches()) {
      return triton_launch(l, Fallback::kReadFailed, read_param, nullptr, args, nargsf, kwnames);
    }
    return raise_from(std::current_exception());
  }
  GridCall gc{k, l->grid, by_param};
  Observed observed{k, by_param};
  try {
    GridSpec spec;
    if (PyCallable_Check(l->grid)) {
      spec.fn = &call_grid;
      spec.ctx = &gc;
      gc.program = grid_program_of(k, l->grid);
    } else {
      spec.fixed = grid_from(l->grid);
    }
    const InternedOptions* options =
        noptions == 0 ? nullptr : options_of(k, args + npos, kwnames, option_at, noptions);
    const JitFunction fn = JitAccess::make(k->state, options != nullptr ? options : k->no_options);
    CallObserver observer;
    if (k->tuners != nullptr) {
      observer.chose = &observe_choice;
      observer.hooked = &observe_block;
      observer.ctx = &observed;
    }
    torch_launch_call(fn, spec, c.vals, positional ? ncall : npos, names, positional ? 0 : nnamed,
                      c.tensors, c.ntensors, objects, k->tuners != nullptr ? &observer : nullptr,
                      c.place);
  } catch (...) {
    // A call the library refuses (missing or repeated arguments, an unknown option, a value it
    // does not take) goes to Triton's launcher, which raises its own exception for it, or
    // serves it; a Python exception raised on the way is raised as it is.
    const std::exception_ptr ep = std::current_exception();
    if (refused_call(ep) && triton_launches()) {
      return triton_launch(l, Fallback::kRefused, -1, nullptr, args, nargsf, kwnames);
    }
    return raise_from(ep);
  }
  g_fast_calls.fetch_add(1, std::memory_order_relaxed);
  Py_RETURN_NONE;
}

// ---- FastKernel's methods -----------------------------------------------------------------

PyObject* kernel_subscript(PyObject* self, PyObject* grid) {
  Launcher* l = g_free_launcher;
  if (l != nullptr) {
    g_free_launcher = nullptr;
    PyObject_Init(reinterpret_cast<PyObject*>(l), g_launcher_type);
  } else {
    l = PyObject_New(Launcher, g_launcher_type);
    if (l == nullptr) return nullptr;
  }
  l->vectorcall = &launcher_call;
  Py_INCREF(self);
  l->kernel = reinterpret_cast<FastKernel*>(self);
  Py_INCREF(grid);
  l->grid = grid;
  return reinterpret_cast<PyObject*>(l);
}

}  // namespace

PyMappingMethods g_kernel_mapping = {nullptr, &kernel_subscript, nullptr};

}  // namespace triton_embed::detail
