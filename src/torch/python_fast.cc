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

#include <Python.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/jit_internal.h"
#include "core/kernel_state.h"
#include "core/tensor_map.h"
#include "python/convert.h"
#include "python/expr_tree.h"
#include "python/handles.h"
#include "python/jit_layer.h"
#include "torch/python_hooks.h"
#include "triton_embed/error.h"
#include "triton_embed/tensor_descriptor.h"
#include "triton_embed/torch.h"

namespace triton_embed::detail {
namespace {

namespace pyb = pybind11;

// How many launches took each path (triton_embed.fast_path_stats()).
std::atomic<uint64_t> g_fast_calls{0};
std::atomic<uint64_t> g_triton_calls{0};
// Launches whose grid callable's program gave the grid in place of calling it.
std::atomic<uint64_t> g_grid_programs{0};

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
Types g_types;
PyObject* g_knobs_dict = nullptr;  // knobs.runtime's instance __dict__

// Stamps of the dicts whose contents the fast path remembers (knobs.runtime's instance dict,
// the instance dicts of TensorDescriptor arguments): a dict's stamp changes whenever the dict
// does, and a new dict's differs from every earlier one's. It is the dict's version tag, which
// CPython keeps up to 3.13 (deprecated in 3.12 for extensions, and kept: unique to each change
// of each dict). From 3.14 on there is none: follow_dict is false, and the dicts are read at
// each launch.
#if PY_VERSION_HEX < 0x030E0000
bool follow_dict(PyObject*) { return true; }
uint64_t dict_stamp(PyObject* d) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return reinterpret_cast<PyDictObject*>(d)->ma_version_tag;
#pragma GCC diagnostic pop
}
#else
bool follow_dict(PyObject*) { return false; }
uint64_t dict_stamp(PyObject*) { return 0; }
#endif
bool g_knobs_followed = false;

bool knobs_stamp(uint64_t* out) {
  *out = dict_stamp(g_knobs_dict);
  return g_knobs_followed;
}

PyObject* import_attr(const char* module, const char* attr) {
  PyObject* m = PyImport_ImportModule(module);
  if (m == nullptr) return nullptr;
  PyObject* a = PyObject_GetAttrString(m, attr);
  Py_DECREF(m);
  return a;
}

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

// d[key] (a borrowed reference), or nullptr without an exception when d has no such key. The
// keys here are strings, whose lookups raise nothing; PyDict_GetItem would save and restore the
// exception state around each.
PyObject* dict_get(PyObject* d, PyObject* key) {
  PyObject* v = PyDict_GetItemWithError(d, key);
  if (v == nullptr && PyErr_Occurred()) PyErr_Clear();
  return v;
}

// obj.name, or nullptr without an exception when obj has no such attribute (a new reference).
PyObject* optional_attr(PyObject* obj, PyObject* name) {
  PyObject* out = nullptr;
#if PY_VERSION_HEX >= 0x030D0000
  if (PyObject_GetOptionalAttr(obj, name, &out) < 0) PyErr_Clear();
#else
  if (_PyObject_LookupAttr(obj, name, &out) < 0) PyErr_Clear();
#endif
  return out;
}

// ---- errors -----------------------------------------------------------------------------

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

// ---- FastKernel: the C base of the views -------------------------------------------------

constexpr size_t kMaxValues = 512;  // arguments and the elements of their tuples
constexpr size_t kMaxTensors = 256;
constexpr size_t kMaxCallArgs = 128;
constexpr size_t kMaxDescs = 8;

// The last grid a grid program gave, with the values it read as keys (memo_key): a program is
// a function of those values alone, so a stream of launches at one shape evaluates nothing.
// Plain data (a FastKernel's memory starts zeroed: program null, nothing kept).
constexpr size_t kMaxGridMemo = 16;
struct GridMemo {
  const py::GridProgram* program;  // whose grid is kept; null: none
  size_t n;
  ArgValue keys[kMaxGridMemo];
  int64_t dims[3];
};

constexpr size_t kMaxNameDicts = 8;
constexpr size_t kMaxGridFree = 8;
// The dicts a lookup of names read, each with its stamp (a NameMemo's, or a lookup's now).
struct DictsRead {
  size_t n = 0;
  bool overflow = false;  // more than kMaxNameDicts
  PyObject* dicts[kMaxNameDicts];
  uint64_t stamps[kMaxNameDicts];

  void add(PyObject* d) {
    for (size_t i = 0; i < n; ++i) {
      if (dicts[i] == d) return;
    }
    if (n == kMaxNameDicts) {
      overflow = true;
      return;
    }
    dicts[n] = d;
    stamps[n++] = dict_stamp(d);
  }
};

// What the names of a grid program denoted at their last lookup from a grid function: the
// dicts read (the function's globals and builtins first, then the dicts of modules a callee is
// found in), each with its stamp then, and the values of the free names found in them. While
// every stamp holds, and the function reads the same globals and builtins, each callee found
// through them is still the function the program computes and each such free name still holds
// the same object, of the same value; names in closure cells are read at each launch.
struct NameMemo {
  const py::GridProgram* program;  // null: nothing known
  DictsRead read;
  ArgValue frees[kMaxGridFree];  // the free names' values (used: those found in the dicts)
};

// A call shape whose calls go to Triton's launcher without being read again: the number of
// positional arguments, the tuple of names (a call site passes the same constant tuple at each
// call) and each argument's type (references), where an argument of that type is of a kind
// this path does not convert (Fallback::kKind). Plain data, zeroed: nothing kept.
constexpr size_t kMaxShapeArgs = 32;
constexpr size_t kMaxLeftShapes = 4;
struct LeftShape {
  PyObject* kw_names;  // null: none (a slot without a shape has nargs == 0 and types[0] null)
  uint16_t npos, nargs;
  int16_t param;  // the parameter whose argument is of that kind
  uint16_t arg;   // that argument's place among the call's arguments
  PyTypeObject* types[kMaxShapeArgs];
};

struct FastKernel {
  PyObject_HEAD PyObject* kernel;  // the wrapped Triton object (its __dict__ is the view's)
  PyObject* label;                 // the kernel's name for fast_path_stats()'s reasons (a str)
  bool interpreted;  // the innermost kernel is Triton's InterpretedFunction (TRITON_INTERPRET=1)
  uint8_t nleft;     // shapes in `left`, the oldest replaced first when full
  uint8_t next_left;
  KernelState* state;       // loaded at the first call (a decorator runs before its module is set)
  PyObject* params;         // dict: parameter name -> index
  PyObject* names;          // tuple: the parameters' names, in order
  PyObject* options;        // dict: tuple of launch options (name, value, ...) -> InternedOptions*
  PyObject* pre_run_hooks;  // the JITFunction's list of pre-run hooks (Triton runs them)
  const InternedOptions* no_options;
  // The last grid function's code object looked up (a reference) and its program (null: none).
  PyObject* grid_code;
  const py::GridProgram* grid_program;
  GridMemo grid_memo;
  NameMemo name_memo;
  // Per layer of the state, its Autotuner (None for another layer); null without any.
  PyObject* tuners;
  // The launch options some config of those Autotuners sets (a set of names; null: none): a
  // call that also gives one is Triton's conflict (Autotuner.run passes both).
  PyObject* config_options;
  // The last choice whose triton.Config was looked up, and that config (a reference).
  const Choice* last_choice;
  PyObject* last_config;
  // The last tuple of a call's argument names (a reference; a call site passes the same
  // constant tuple at each call) and, per name, its parameter's index, or -1: a launch option.
  PyObject* kw_names;
  int16_t kw_params[kMaxCallArgs];
  // The call shapes sent to Triton's launcher unread (nleft of them; last: read only then).
  LeftShape left[kMaxLeftShapes];
};

PyTypeObject* g_kernel_type = nullptr;
PyTypeObject* g_launcher_type = nullptr;

void clear_shape(LeftShape& shape) {
  Py_CLEAR(shape.kw_names);
  for (size_t i = 0; i < shape.nargs; ++i) Py_CLEAR(shape.types[i]);
  shape.nargs = 0;
}

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

struct Launcher {
  PyObject_HEAD vectorcallfunc vectorcall;
  FastKernel* kernel;
  PyObject* grid;
};

// One freed Launcher kept for the next fast[grid] (a launch statement makes one and frees it
// right after: no allocation then). Guarded by the GIL.
Launcher* g_free_launcher = nullptr;

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

// One of Triton's launch hooks (knobs.runtime.launch_enter_hook / _exit_hook): a HookChain
// of calls, a callable a user assigned, or None. A call reads the chain's list size only, while
// the chain it saw is the class's and nothing replaced it: no instance attribute of that name
// (an assignment) and the class unchanged (its version tag).
struct HookWatch {
  PyObject* chain = nullptr;      // the HookChain last seen
  PyObject* calls = nullptr;      // its list of calls
  unsigned int type_version = 0;  // 0: the chain is not the class's (read it every call)
  bool stamped = false;           // the instance dict lacked the name at knobs stamp `stamp`
  uint64_t stamp = 0;
};
HookWatch g_enter_hook, g_exit_hook;

// Whether knobs.runtime has no instance attribute `name`: unchanged since w last saw it lack
// one (the dict's stamp), or read from the dict.
bool no_instance_attr(PyObject* name, HookWatch& w) {
  uint64_t stamp = 0;
  const bool stamped = knobs_stamp(&stamp);
  if (stamped && w.stamped && stamp == w.stamp) return true;
  if (dict_get(g_knobs_dict, name) != nullptr) return false;
  w.stamped = stamped;
  w.stamp = stamp;
  return true;
}

bool hook_set(PyObject* name, HookWatch& w) {
  PyTypeObject* type = Py_TYPE(g_types.runtime_knobs);
  if (w.type_version != 0 && type->tp_version_tag == w.type_version && no_instance_attr(name, w)) {
    return PyList_GET_SIZE(w.calls) != 0;
  }
  w.type_version = 0;
  PyObject* h = PyObject_GetAttr(g_types.runtime_knobs, name);
  if (h == nullptr) {
    PyErr_Clear();
    return false;
  }
  if (h == Py_None) {
    Py_DECREF(h);
    return false;
  }
  PyObject* calls = optional_attr(h, g_types.s_calls);
  if (calls == nullptr || !PyList_Check(calls)) {  // a plain callable: set
    Py_XDECREF(calls);
    Py_DECREF(h);
    return true;
  }
  const bool from_class =
      no_instance_attr(name, w) && (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) != 0;
  Py_XSETREF(w.chain, h);
  Py_XSETREF(w.calls, calls);
  if (from_class) w.type_version = type->tp_version_tag;
  return PyList_GET_SIZE(calls) != 0;
}

// Which hooks Triton's launcher would run for this call (its launch hooks, or the kernel's
// pre_run_hooks), if any: the call then goes there.
Fallback hooks_set(FastKernel* k) {
  if (hook_set(g_types.s_enter, g_enter_hook) || hook_set(g_types.s_exit, g_exit_hook)) {
    return Fallback::kLaunchHooks;
  }
  if (k->pre_run_hooks != nullptr && PyList_GET_SIZE(k->pre_run_hooks) != 0) {
    return Fallback::kPreRunHooks;
  }
  return Fallback::kNone;
}

// ---- Calls that go to Triton's launcher, and why -------------------------------------------

// How many calls went to Triton's launcher, by kernel, reason, parameter and argument type
// (references: their text is made only when fast_path_stats() asks). Guarded by the GIL.
struct LeftCount {
  PyObject* label;     // the kernel's (interned)
  PyObject* param;     // the parameter's name; null: the call as a whole
  PyTypeObject* type;  // the argument's type, for Fallback::kKind; else null
  Fallback why;
  uint64_t n;
};
constexpr size_t kMaxLeftCounts = 64;
LeftCount g_left[kMaxLeftCounts];
size_t g_nleft = 0;
uint64_t g_left_unlisted = 0;  // calls of reasons beyond the first kMaxLeftCounts

void count_left(const FastKernel* k, Fallback why, int param, PyTypeObject* type) {
  PyObject* name = param >= 0 && k->names != nullptr && param < PyTuple_GET_SIZE(k->names)
                       ? PyTuple_GET_ITEM(k->names, param)
                       : nullptr;
  for (size_t i = 0; i < g_nleft; ++i) {
    LeftCount& e = g_left[i];
    if (e.label == k->label && e.why == why && e.param == name && e.type == type) {
      ++e.n;
      return;
    }
  }
  if (g_nleft == kMaxLeftCounts) {
    ++g_left_unlisted;
    return;
  }
  Py_XINCREF(k->label);
  Py_XINCREF(name);
  Py_XINCREF(type);
  g_left[g_nleft++] = LeftCount{k->label, name, type, why, 1};
}

void clear_left_counts() {
  // Emptied before the references go: a release that runs Python (a launch) sees none.
  LeftCount gone[kMaxLeftCounts];
  const size_t n = g_nleft;
  std::copy(g_left, g_left + n, gone);
  g_nleft = 0;
  g_left_unlisted = 0;
  for (size_t i = 0; i < n; ++i) {
    Py_XDECREF(gone[i].label);
    Py_XDECREF(gone[i].param);
    Py_XDECREF(gone[i].type);
  }
}

const char* reason_text(Fallback why) {
  switch (why) {
    case Fallback::kNone:
      break;
    case Fallback::kInterpreter:
      return "TRITON_INTERPRET=1 made the kernel an InterpretedFunction: Triton's interpreter "
             "runs it";
    case Fallback::kLaunchHooks:
      return "Triton's launch hooks are set (triton.knobs.runtime.launch_enter_hook or "
             "launch_exit_hook): its launcher runs them";
    case Fallback::kPreRunHooks:
      return "the kernel has pre-run hooks (add_pre_run_hook): Triton's launcher runs them";
    case Fallback::kTooManyArguments:
      return "more than 128 arguments or parameters";
    case Fallback::kKind:
      return "an object of a kind the fast path does not convert";
    case Fallback::kBigInt:
      return "an integer beyond 64 bits";
    case Fallback::kTooManyValues:
      return "more than 512 values in tuples, 256 tensors or 8 tensor descriptors in one call";
    case Fallback::kDType:
      return "a triton.language.dtype the library does not know";
    case Fallback::kDescriptorBase:
      return "a TensorDescriptor whose base the fast path does not read (no tensor, or one "
             "only the descriptor holds)";
    case Fallback::kReadFailed:
      return "reading it raised (a tensor without storage, ...): Triton's launcher raises or "
             "serves it";
    case Fallback::kRefused:
      return "the library refused the call (a missing or repeated argument, an unknown option, "
             "a value it does not take): Triton's launcher raises its own error for it, or "
             "serves it";
  }
  return "?";
}

// Triton's own launch of the call, kernel[grid](*args, **kwargs), counted with its reason
// (`param`: the parameter whose argument it is, or -1; `type`: the argument's type, for kKind).
PyObject* triton_launch(Launcher* l, Fallback why, int param, PyTypeObject* type,
                        PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  g_triton_calls.fetch_add(1, std::memory_order_relaxed);
  count_left(l->kernel, why, param, type);
  PyObject* bound = PyObject_GetItem(l->kernel->kernel, l->grid);
  if (bound == nullptr) return nullptr;
  PyObject* r = PyObject_Vectorcall(bound, args, nargsf, kwnames);
  Py_DECREF(bound);
  return r;
}

// Whether two tuples of argument names (or nulls) hold the same names: the same tuple at a
// call site; at a call with **kwargs, a new tuple of the same (usually interned) strings.
bool same_names(PyObject* a, PyObject* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); ++i) {
    PyObject* x = PyTuple_GET_ITEM(a, i);
    PyObject* y = PyTuple_GET_ITEM(b, i);
    if (x != y && PyUnicode_Compare(x, y) != 0) return false;  // names: str, never raises
  }
  return true;
}

// The shape of k's calls that go to Triton's launcher (LeftShape) that this call has, if any.
const LeftShape* left_shape(const FastKernel* k, PyObject* const* args, size_t npos, size_t nargs,
                            PyObject* kwnames) {
  for (size_t i = 0; i < k->nleft; ++i) {
    const LeftShape& s = k->left[i];
    if (s.npos != npos || s.nargs != nargs || !same_names(s.kw_names, kwnames)) continue;
    size_t j = 0;
    while (j < nargs && Py_TYPE(args[j]) == s.types[j]) ++j;
    if (j == nargs) return &s;
  }
  return nullptr;
}

// Remembers the call's shape: its argument of parameter `param` is of a kind this path does not
// convert, so every call of that shape goes to Triton's launcher unread.
void remember_left_shape(FastKernel* k, PyObject* const* args, size_t npos, size_t nargs,
                         PyObject* kwnames, int param, size_t arg) {
  if (nargs == 0 || nargs > kMaxShapeArgs) return;
  size_t at = k->nleft;
  if (at == kMaxLeftShapes) {
    at = k->next_left;
    k->next_left = static_cast<uint8_t>((at + 1) % kMaxLeftShapes);
    clear_shape(k->left[at]);
  } else {
    ++k->nleft;
  }
  LeftShape& s = k->left[at];
  Py_XINCREF(kwnames);
  s.kw_names = kwnames;
  s.npos = static_cast<uint16_t>(npos);
  s.nargs = static_cast<uint16_t>(nargs);
  s.param = static_cast<int16_t>(param);
  s.arg = static_cast<uint16_t>(arg);
  for (size_t j = 0; j < nargs; ++j) {
    s.types[j] = Py_TYPE(args[j]);
    Py_INCREF(s.types[j]);
  }
}

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
thread_local DescCache* t_descs = nullptr;  // on the heap: TLS in a shared library stays small

bool same_fields(const TensorDescriptor& a, uint64_t base, DType dtype, int rank,
                 const int64_t* shape, const int64_t* strides, const int64_t* block,
                 Padding padding, bool tf32, uint8_t flags) {
  if (a.base() != base || a.dtype() != dtype || a.rank() != rank || a.padding() != padding ||
      a.round_f32_to_tf32() != tf32 || TensorDescriptorAccess::arg_flags(a) != flags) {
    return false;
  }
  for (int i = 0; i < rank; ++i) {
    if (a.shape()[i] != shape[i] || a.strides()[i] != strides[i] ||
        a.block_shape()[i] != block[i]) {
      return false;
    }
  }
  return true;
}

// Whether o is a torch tensor: of torch.Tensor or a subclass. By type, not isinstance: torch's
// metaclass answers isinstance through a Python-level __instancecheck__ call (a bound method
// made and freed per check), and what passes here is unpacked as a tensor.
bool is_tensor(PyObject* o) {
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

bool read_dims(PyObject* seq, int64_t* out, int& rank) {
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

// Takes `slot` for the call: its descriptor is argument `out`.
void hold_descriptor(DescCache::Slot* slot, ArgValue& out, Conversion& c) {
  slot->in_use = true;
  c.held[c.nheld++] = slot;
  const TensorDescriptor& d = *slot->desc;
  out = ArgValue{};
  out.kind = ArgKind::kTensorDesc;
  out.dtype = d.dtype();
  out.flags = TensorDescriptorAccess::arg_flags(d);
  out.ptr = &d;
}

// The slot that remembers descriptor o, when o's instance dict `dict` and type are unchanged
// since and what can change under its fields still equals the slot's descriptor: the base
// tensor's data (address, dtype, memory) and the items of a block_shape list; its base is then
// one of the call's tensors. Null otherwise.
DescCache::Slot* remembered(DescCache& cache, PyObject* o, PyObject* dict, uint32_t arg,
                            Conversion& c) {
  const uint64_t stamp = dict_stamp(dict);
  PyTypeObject* type = Py_TYPE(o);
  for (DescCache::Slot& s : cache.slots) {
    if (s.obj != o || s.in_use || s.dict != dict || s.stamp != stamp || s.type != type ||
        s.type_version != type->tp_version_tag || !s.desc || !is_tensor(s.base)) {
      continue;
    }
    const TensorDescriptor& d = *s.desc;
    const at::Tensor& t = THPVariable_Unpack(s.base);
    ArgValue v;
    const c10::Device device = fill_tensor(t, v);
    bool same = v.kind == ArgKind::kPointer && v.u == d.base() && v.dtype == d.dtype() &&
                v.flags == TensorDescriptorAccess::arg_flags(d);
    if (same && s.block_list != nullptr) {
      int64_t block[TensorDescriptor::kMaxRank];
      int rank = d.rank();
      same =
          read_dims(s.block_list, block, rank) && std::equal(block, block + rank, d.block_shape());
      if (!same && PyErr_Occurred()) PyErr_Clear();  // read again below, raising then
    }
    if (same) {
      add_tensor(t, v, device, arg, c);
      return &s;
    }
  }
  return nullptr;
}

// Whether tuple t holds ints only (of exactly int: their values cannot change).
bool exact_ints(PyObject* t) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); ++i) {
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(t, i))) return false;
  }
  return true;
}

// A triton.tools.tensor_descriptor.TensorDescriptor as the library's descriptor.
bool convert_descriptor(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c) {
  if (c.nheld == kMaxDescs) {
    leave(c, Fallback::kTooManyValues);
    return true;
  }
  if (t_descs == nullptr) t_descs = new DescCache();
  DescCache& cache = *t_descs;
  // The dataclass's fields from its instance dict: one pass over it, its keys compared by
  // identity with the interned names (attribute names are interned); else as attributes.
  PyObject** dict_ptr = _PyObject_GetDictPtr(o);
  if (dict_ptr == nullptr) PyErr_Clear();
  PyObject* dict = dict_ptr != nullptr && *dict_ptr != nullptr && PyDict_CheckExact(*dict_ptr)
                       ? *dict_ptr
                       : nullptr;
  const bool followed = dict != nullptr && follow_dict(dict);
  if (followed) {
    if (DescCache::Slot* s = remembered(cache, o, dict, arg, c)) {
      hold_descriptor(s, out, c);
      return true;
    }
  }
  Py_XINCREF(dict);  // held while attributes run Python code
  const pyb::object hold_dict = pyb::reinterpret_steal<pyb::object>(dict);
  // The dict's stamp and the type's version before the fields are read: a change while they
  // are read (Python code an attribute runs) leaves o unremembered.
  const uint64_t stamp = followed ? dict_stamp(dict) : 0;
  const unsigned int type_version = Py_TYPE(o)->tp_version_tag;
  enum Field : size_t { kBase, kShape, kStrides, kBlockShape, kPadding, kTf32 };
  PyObject* const names[] = {g_types.s_base,        g_types.s_shape,   g_types.s_strides,
                             g_types.s_block_shape, g_types.s_padding, g_types.s_tf32};
  PyObject* found[std::size(names)] = {};
  pyb::object hold_found[std::size(names)];  // held while Python code may change the dict
  if (dict != nullptr) {
    Py_ssize_t pos = 0;
    PyObject *key = nullptr, *value = nullptr;
    while (PyDict_Next(dict, &pos, &key, &value)) {
      for (size_t i = 0; i < std::size(names); ++i) {
        if (key == names[i]) found[i] = value;
      }
    }
    for (size_t i = 0; i < std::size(names); ++i) {
      hold_found[i] = pyb::reinterpret_borrow<pyb::object>(found[i]);
    }
  }
  // Whether every field read came from the dict (or is on neither the dict nor the class): the
  // slot may then remember o.
  bool from_dict = dict != nullptr;
  PyTypeObject* const type = Py_TYPE(o);
  auto field = [&](Field i) -> PyObject* {  // names[i]'s value: a new reference, or null
    PyObject* v = found[i];
    if (v != nullptr) {
      Py_INCREF(v);
      return v;
    }
    // Not under its interned name. Where the class has no such attribute and no hook for
    // missing ones, only the dict can hold it (under a key made another way), without calling
    // anything; else as an attribute.
    if (dict != nullptr && type->tp_getattro == PyObject_GenericGetAttr &&
        _PyType_Lookup(type, names[i]) == nullptr) {
      v = dict_get(dict, names[i]);
      Py_XINCREF(v);
      return v;
    }
    v = optional_attr(o, names[i]);
    from_dict = from_dict && v == nullptr;
    return v;
  };
  PyObject* base = field(kBase);
  if (base == nullptr) {
    PyErr_SetString(PyExc_TypeError, "a TensorDescriptor argument has no base tensor");
    return false;
  }
  uint64_t address = 0;
  DType dtype = DType::invalid;
  uint8_t flags = 0;
  // A base only this call holds (a property's result) would not outlive it: Triton's launcher.
  if (is_tensor(base) && c.ntensors < kMaxTensors && Py_REFCNT(base) > 1) {
    // The base decides the device as a tensor argument does (the descriptor, alive for the
    // call, holds it).
    ArgValue v;
    take_tensor(THPVariable_Unpack(base), v, arg, c);
    address = v.u;
    dtype = v.dtype;
    flags = v.flags;
  } else {
    leave(c, Fallback::kDescriptorBase);  // Triton's launcher takes it
  }
  Py_DECREF(base);
  if (c.unsupported()) return true;
  int64_t shape[TensorDescriptor::kMaxRank], strides[TensorDescriptor::kMaxRank],
      block[TensorDescriptor::kMaxRank];
  int rank = -1;
  PyObject* block_list = nullptr;
  for (auto [which, dims] :
       {std::pair{kShape, shape}, std::pair{kStrides, strides}, std::pair{kBlockShape, block}}) {
    PyObject* seq = field(which);
    if (seq == nullptr) {
      PyErr_SetString(PyExc_TypeError,
                      "a TensorDescriptor argument lacks its shape, strides "
                      "or block_shape");
      return false;
    }
    // A tuple of ints holds its values for good; a block_shape list is read again at each
    // launch.
    if (which == kBlockShape && PyList_CheckExact(seq)) {
      block_list = seq;
    } else if (!PyTuple_Check(seq) || !exact_ints(seq)) {
      from_dict = false;
    }
    const bool ok = read_dims(seq, dims, rank);
    Py_DECREF(seq);
    if (!ok) return false;
  }
  Padding padding = Padding::kZero;
  if (PyObject* p = field(kPadding)) {
    from_dict = from_dict && PyUnicode_CheckExact(p);
    padding = p == g_types.s_nan || (PyUnicode_Check(p) && p != g_types.s_zero &&
                                     PyUnicode_CompareWithASCIIString(p, "nan") == 0)
                  ? Padding::kNan
                  : Padding::kZero;
    Py_DECREF(p);
  }
  bool tf32 = false;
  if (PyObject* r = field(kTf32)) {  // Triton 3.7 and later
    from_dict = from_dict && PyBool_Check(r);
    const int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (truth < 0) return false;
    tf32 = truth == 1;
  }
  DescCache::Slot* slot = nullptr;
  for (DescCache::Slot& s : cache.slots) {
    if (!s.in_use && s.desc &&
        same_fields(*s.desc, address, dtype, rank, shape, strides, block, padding, tf32, flags)) {
      slot = &s;
      break;
    }
  }
  if (slot == nullptr) {
    for (unsigned i = 0; i < 16 && slot == nullptr; ++i) {
      DescCache::Slot& s = cache.slots[(cache.next + i) % 16];
      if (!s.in_use) slot = &s;
    }
    if (slot == nullptr) {
      leave(c, Fallback::kTooManyValues);
      return true;
    }
    cache.next = static_cast<unsigned>((slot - cache.slots) + 1) % 16;
    slot->obj = nullptr;
    try {
      slot->desc.emplace(address, dtype, rank, shape, strides, block, padding, tf32);
    } catch (...) {
      slot->desc.reset();
      raise_from(std::current_exception());
      return false;
    }
    TensorDescriptorAccess::set_arg_flags(*slot->desc, flags);
  }
  // Remembers o when its fields came from its dict, whose changes are followed, and nothing
  // changed the dict or the type while they were read.
  const bool remember = from_dict && followed && dict_stamp(dict) == stamp &&
                        Py_TYPE(o)->tp_version_tag == type_version &&
                        (Py_TYPE(o)->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) != 0;
  for (DescCache::Slot& s : cache.slots) {
    if (s.obj == o) s.obj = nullptr;  // what another slot remembers of o is out of date
  }
  slot->obj = remember ? o : nullptr;
  slot->dict = dict;
  slot->stamp = stamp;
  slot->type = Py_TYPE(o);
  slot->type_version = type_version;
  slot->base = remember ? found[kBase] : nullptr;
  slot->block_list = block_list;
  hold_descriptor(slot, out, c);
  return true;
}

// ---- what the autotune layers leave on the caller's objects --------------------------------

// What a launch's autotune layers did that Triton's Autotuner.run leaves on the caller's
// objects, as the runtime tells it (CallObserver), set where Autotuner.run sets it: each
// choice a layer runs as its Autotuner's best_config, then the block shapes the config
// pre-hooks the runtime applies set on the caller's descriptors, before the grid callable and
// the launch (a hook Python runs sets the caller's objects itself). A Python exception raised
// on the way stops the launch, as it does in Triton.
struct Observed {
  FastKernel* kernel;
  PyObject* const* by_param;  // the call's object of each parameter it gave, else null
};

// The triton.Config the runtime's choice c was made from (null: a bundle's choice).
PyObject* config_of(FastKernel* k, const Choice* c) {
  if (c != k->last_choice) {
    PyObject* config = py::config(*c);
    Py_XINCREF(config);
    Py_XSETREF(k->last_config, config);
    k->last_choice = c;
  }
  return k->last_config;
}

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

// A tl.dtype as the library's DType, by its name.
DType dtype_of(PyObject* o) {
  PyObject* name = PyObject_GetAttr(o, g_types.s_name);
  if (name == nullptr) {
    PyErr_Clear();
    return DType::invalid;
  }
  Py_ssize_t n = 0;
  const char* s = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : nullptr;
  DType d = DType::invalid;
  if (s != nullptr) d = dtype_from_name(std::string_view(s, static_cast<size_t>(n)));
  Py_DECREF(name);
  return d;
}

bool convert(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c);

// convert() of an object that is no tensor.
bool convert_other(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c) {
  out = ArgValue{};
  if (py::scalar_from_python(o, out)) return true;
  if (PyLong_Check(o)) {  // beyond 64 bits: Triton's launcher says what it says
    leave(c, Fallback::kBigInt);
    return true;
  }
  if (PyTuple_Check(o)) {
    const Py_ssize_t n = PyTuple_GET_SIZE(o);
    if (c.nvals + static_cast<size_t>(n) > kMaxValues) {
      leave(c, Fallback::kTooManyValues);
      return true;
    }
    ArgValue* elems = c.vals + c.nvals;
    c.nvals += static_cast<size_t>(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!convert(PyTuple_GET_ITEM(o, i), elems[i], arg, c)) return false;
      if (c.unsupported()) return true;
    }
    out.kind = ArgKind::kTuple;
    out.count = static_cast<uint32_t>(n);
    out.elems = elems;
    return true;
  }
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    out.s = PyUnicode_AsUTF8AndSize(o, &n);  // lives as long as o
    if (out.s == nullptr) return false;
    out.kind = ArgKind::kStr;
    out.count = static_cast<uint32_t>(n);
    return true;
  }
  if (PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_types.descriptor))) {
    return convert_descriptor(o, out, arg, c);
  }
  if (PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_types.dtype_type))) {
    out.kind = ArgKind::kDType;
    out.dtype = dtype_of(o);
    if (out.dtype == DType::invalid) leave(c, Fallback::kDType);
    return true;
  }
  if (PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_types.constexpr_type))) {
    if (c.nvals == kMaxValues) {
      leave(c, Fallback::kTooManyValues);
      return true;
    }
    PyObject* v = PyObject_GetAttr(o, g_types.s_value);
    if (v == nullptr) return false;
    ArgValue* inner = c.vals + c.nvals++;
    const bool ok = convert(v, *inner, arg, c);
    Py_DECREF(v);  // a str's text and a tensor stay alive with the constexpr object
    if (!ok) return false;
    out.kind = ArgKind::kConstexpr;
    out.elems = inner;
    return true;
  }
  // Other objects (data_ptr() objects, JIT functions, ...): Triton's launcher.
  leave(c, Fallback::kKind, o);
  return true;
}

// Writes o as the value `out`; `arg` is its top-level argument's index. False with a Python
// exception set; c.unsupported() for an object this path leaves to Triton's launcher.
bool convert(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c) {
  // Tensors first (torch.Tensor and its subclasses, by type).
  if (is_tensor(o)) {
    take_tensor(THPVariable_Unpack(o), out, arg, c);
    return true;
  }
  return convert_other(o, out, arg, c);
}

// The grid callable's argument: Triton's bound arguments (every parameter by name: the
// call's own objects where it gave them, else the values the layers and defaults set).
struct GridCall {
  FastKernel* kernel;
  PyObject* fn;
  PyObject* const* by_param;  // the call's object for each parameter it gave, else null
  const py::GridProgram* program = nullptr;  // what gives fn's result without calling it
};

Grid grid_from(PyObject* g);

void free_grid_program(PyObject* capsule) {
  delete static_cast<py::GridProgram*>(PyCapsule_GetPointer(capsule, nullptr));
}

// Grid programs by (code object, the kernel's parameter names): a capsule of the GridProgram,
// or None where the code has none. Shared by every view; entries are never removed, so a
// program stays valid while the process runs. Guarded by the GIL.
PyObject* g_grid_cache = nullptr;
constexpr Py_ssize_t kMaxGridCodes = 4096;

// What g_grid_cache keeps for grid function g of kernel k: a capsule, or None where glue.py
// cannot translate it. An interrupt or a failed allocation while translating is raised.
pyb::object translate_grid(const FastKernel* k, PyObject* g) {
  auto program = std::make_unique<py::GridProgram>();
  bool ok = false;
  try {
    std::vector<std::string> params;
    for (const auto& p : k->state->params) params.push_back(p.name);
    std::string why;
    ok = py::grid_program(g, params, program.get(), &why);
  } catch (pyb::error_already_set& e) {
    if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_MemoryError) ||
        e.matches(PyExc_SystemExit)) {
      throw;
    }
    // Any other error (a source that cannot be read or parsed, ...): the function is called.
  } catch (...) {
  }
  if (!ok) return pyb::none();
  auto capsule = pyb::reinterpret_steal<pyb::object>(
      PyCapsule_New(program.get(), nullptr, &free_grid_program));
  if (!capsule) throw pyb::error_already_set();
  program.release();  // the capsule's
  return capsule;
}

// The program of grid callable g (a Python function whose source glue.py translates), or null
// (the function is then called at each launch): translated once per code object and kernel
// parameters, for up to kMaxGridCodes of them.
const py::GridProgram* grid_program_of(FastKernel* k, PyObject* g) {
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

// What Python's arithmetic sees as the value scalar_from_python reads: None, a bool, an int or
// a float of exactly those types (a subclass may define its own arithmetic).
bool plain_scalar(PyObject* o) {
  return o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o);
}

// The object `f` names for grid callable fn now (borrowed), or null (an empty cell, a name
// defined nowhere, a namespace that is not a plain dict). The dicts it reads go to `read`
// (unless null).
PyObject* free_value(PyObject* fn, const py::GridProgram::Free& f, DictsRead* read) {
  if (f.cell >= 0) {
    PyObject* closure = PyFunction_GET_CLOSURE(fn);
    if (closure == nullptr || f.cell >= PyTuple_GET_SIZE(closure)) return nullptr;
    return PyCell_GET(PyTuple_GET_ITEM(closure, f.cell));
  }
  auto* func = reinterpret_cast<PyFunctionObject*>(fn);
  for (PyObject* ns : {func->func_globals, func->func_builtins}) {
    if (ns == nullptr || !PyDict_CheckExact(ns)) return nullptr;
    if (read != nullptr) read->add(ns);
    if (PyObject* v = dict_get(ns, f.name)) return v;
  }
  return nullptr;
}

// Whether the names of callee c still denote the function the program computes in its place;
// the dicts it reads for a callee found through the function's namespaces go to `read`.
bool same_callee(PyObject* fn, const py::GridProgram::Callee& c, DictsRead* read) {
  if (c.root.cell >= 0) read = nullptr;  // found through a cell: looked up at each launch
  PyObject* v = free_value(fn, c.root, read);
  for (PyObject* attr : c.attrs) {
    if (v == nullptr || !PyModule_CheckExact(v)) return false;
    PyObject* d = PyModule_GetDict(v);
    if (read != nullptr) read->add(d);
    v = dict_get(d, attr);
  }
  return v == c.object;
}

// Whether m still says what the names of program gp denote for grid function fn.
bool names_hold(const NameMemo& m, const py::GridProgram* gp, PyObject* fn) {
  const auto* func = reinterpret_cast<PyFunctionObject*>(fn);
  const DictsRead& r = m.read;
  if (m.program != gp || r.n < 2 || r.dicts[0] != func->func_globals ||
      r.dicts[1] != func->func_builtins) {
    return false;
  }
  for (size_t i = 0; i < r.n; ++i) {
    if (dict_stamp(r.dicts[i]) != r.stamps[i]) return false;
  }
  return true;
}

// What a grid program can read of value v, as a memo key (the fields a read looks at, the rest
// zero): the kind, dtype and bits of a scalar; the kind and dtype of a typed pointer for a
// `.dtype` read. False for what the memo does not keep (an object, a string, a tuple).
bool memo_key(const ArgValue& v, bool dtype_read, ArgValue* key) {
  *key = ArgValue{};
  key->kind = v.kind;
  key->dtype = v.dtype;
  if (dtype_read) return v.kind == ArgKind::kPointer;
  switch (v.kind) {
    case ArgKind::kNone:
      key->dtype = DType::invalid;
      return true;
    case ArgKind::kBool:
    case ArgKind::kInt:
    case ArgKind::kFloat:
    case ArgKind::kScalar:
      key->big = v.big;
      key->u = v.u;
      return true;
    default:
      return false;
  }
}

// The grid gc's program gives for the call's values `vals` (every parameter), as calling the
// callable would; false where it cannot say (a value it does not model, an error Python would
// raise: the callable is then called).
bool program_grid(const GridCall& gc, const ArgValue* vals, size_t np, Grid* out) {
  const py::GridProgram& gp = *gc.program;
  const size_t nfree = gp.free.size();
  if (np > kMaxCallArgs || nfree > kMaxGridFree) return false;
  for (const expr::Program& d : gp.dims) {
    for (const expr::Program::Read& r : d.reads()) {
      if (r.param < np && gc.by_param[r.param] != nullptr && !r.dtype &&
          !plain_scalar(gc.by_param[r.param])) {
        return false;
      }
    }
  }
  // The callees and the free names' values: what the names memo knows (names found in the
  // function's namespaces), the rest looked up now.
  NameMemo& names = gc.kernel->name_memo;
  const bool known = names_hold(names, &gp, gc.fn);
  const auto* func = reinterpret_cast<PyFunctionObject*>(gc.fn);
  DictsRead read;
  DictsRead* const record = known ? nullptr : &read;
  if (!known) {
    for (PyObject* ns : {func->func_globals, func->func_builtins}) {
      if (ns != nullptr && PyDict_CheckExact(ns) && follow_dict(ns)) {
        read.add(ns);
      } else {
        read.overflow = true;  // nothing to remember
      }
    }
  }
  // What the memo knows is copied before anything that could run Python code (a lookup whose
  // key compares with a non-str one) and let another thread change the memo.
  ArgValue frees[kMaxGridFree];
  if (known) std::copy(names.frees, names.frees + nfree, frees);
  for (const py::GridProgram::Callee& c : gp.callees) {
    if (known && c.root.cell < 0) continue;
    if (!same_callee(gc.fn, c, record)) return false;
  }
  for (size_t j = 0; j < nfree; ++j) {
    if (known && gp.free[j].cell < 0) continue;
    PyObject* v = free_value(gc.fn, gp.free[j], record);
    if (v == nullptr || !plain_scalar(v) || !py::scalar_from_python(v, frees[j])) {
      PyErr_Clear();
      return false;
    }
  }
  if (!known) {
    names.program = read.overflow ? nullptr : &gp;
    names.read = read;
    std::copy(frees, frees + nfree, names.frees);
  }
  // The values the program reads (parameters and free names), as the grid memo's keys.
  ArgValue keys[kMaxGridMemo];
  size_t nkeys = 0;
  bool keep = true;
  for (const expr::Program& d : gp.dims) {
    for (const expr::Program::Read& r : d.reads()) {
      if (!keep || nkeys == kMaxGridMemo || r.param >= np + nfree) {
        keep = false;
        break;
      }
      keep = memo_key(r.param < np ? vals[r.param] : frees[r.param - np], r.dtype, &keys[nkeys++]);
    }
  }
  GridMemo& memo = gc.kernel->grid_memo;
  if (keep && memo.program == &gp && memo.n == nkeys &&
      std::memcmp(static_cast<const void*>(memo.keys), static_cast<const void*>(keys),
                  nkeys * sizeof(ArgValue)) == 0) {
    *out = Grid(memo.dims[0], memo.dims[1], memo.dims[2]);
    return true;
  }
  ArgValue args[kMaxCallArgs + kMaxGridFree];
  std::memcpy(static_cast<void*>(args), vals, np * sizeof(ArgValue));
  std::copy(frees, frees + nfree, args + np);
  int64_t dims[3] = {1, 1, 1};
  for (size_t i = 0; i < gp.dims.size(); ++i) {
    const expr::Result r = expr::evaluate(gp.dims[i], args, static_cast<uint32_t>(np + nfree));
    if (r.fault != expr::Fault::kNone) return false;
    const expr::Value& v = r.value;
    if ((v.kind != expr::Value::Kind::kInt && v.kind != expr::Value::Kind::kBool) ||
        v.i < INT64_MIN || v.i > INT64_MAX) {
      return false;
    }
    dims[i] = static_cast<int64_t>(v.i);
  }
  memo.program = keep ? &gp : nullptr;
  memo.n = nkeys;
  std::memcpy(static_cast<void*>(memo.keys), static_cast<const void*>(keys),
              nkeys * sizeof(ArgValue));
  std::copy(dims, dims + 3, memo.dims);
  *out = Grid(dims[0], dims[1], dims[2]);
  return true;
}

Grid call_grid(const void* ctx, const Meta& meta) {
  const auto* gc = static_cast<const GridCall*>(ctx);
  const FastKernel& k = *gc->kernel;
  const ArgValue* vals = MetaAccess::args(meta);
  const Py_ssize_t np = PyTuple_GET_SIZE(k.names);
  // Called from the launch this module made, with the GIL held; otherwise take it.
  const bool held = PyGILState_Check() != 0;
  const PyGILState_STATE gil = held ? PyGILState_LOCKED : PyGILState_Ensure();
  struct Release {
    bool held;
    PyGILState_STATE s;
    ~Release() {
      if (!held) PyGILState_Release(s);
    }
  } release{held, gil};
  if (gc->program != nullptr) {
    Grid g;
    if (program_grid(*gc, vals, static_cast<size_t>(np), &g)) {
      g_grid_programs.fetch_add(1, std::memory_order_relaxed);
      return g;
    }
  }
  pyb::object bound = pyb::reinterpret_steal<pyb::object>(_PyDict_NewPresized(np));
  if (!bound) throw pyb::error_already_set();
  for (Py_ssize_t p = 0; p < np; ++p) {
    PyObject* name = PyTuple_GET_ITEM(k.names, p);
    if (PyObject* given = gc->by_param[p]) {
      if (PyDict_SetItem(bound.ptr(), name, given) != 0) throw pyb::error_already_set();
      continue;
    }
    // A value the layers set, or a default.
    if (PyDict_SetItem(bound.ptr(), name, py::to_python(vals[p]).ptr()) != 0) {
      throw pyb::error_already_set();
    }
  }
  PyObject* g = PyObject_CallOneArg(gc->fn, bound.ptr());
  if (g == nullptr) throw pyb::error_already_set();
  pyb::object hold = pyb::reinterpret_steal<pyb::object>(g);
  return grid_from(g);
}

// A grid: a tuple or list of 1-3 integers (not an int alone: Triton takes its len()).
Grid grid_from(PyObject* g) {
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
    torch_launch_from_python(fn, spec, c.vals, positional ? ncall : npos, names,
                             positional ? 0 : nnamed, c.tensors, c.ntensors, objects,
                             k->tuners != nullptr ? &observer : nullptr, c.place);
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

PyMappingMethods g_kernel_mapping = {nullptr, &kernel_subscript, nullptr};

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
