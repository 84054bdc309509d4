#pragma once

// Whether Triton's launch hooks (knobs.runtime.launch_enter_hook / launch_exit_hook) or the
// kernel's pre_run_hooks are set, read at each call: inline, for the launch path's
// translation unit; the watches are defined in hooks.cc.

#include <Python.h>

#include <cstdint>

#include "pyext/fast_kernel.h"
#include "pyext/types.h"

namespace triton_embed::detail {

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
extern HookWatch g_enter_hook, g_exit_hook;

// Whether knobs.runtime has no instance attribute `name`: unchanged since w last saw it lack
// one (the dict's stamp), or read from the dict.
inline bool no_instance_attr(PyObject* name, HookWatch& w) {
  uint64_t stamp = 0;
  const bool stamped = knobs_stamp(&stamp);
  if (stamped && w.stamped && stamp == w.stamp) return true;
  if (dict_get(g_knobs_dict, name) != nullptr) return false;
  w.stamped = stamped;
  w.stamp = stamp;
  return true;
}

inline bool hook_set(PyObject* name, HookWatch& w) {
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
inline Fallback hooks_set(FastKernel* k) {
  if (hook_set(g_types.s_enter, g_enter_hook) || hook_set(g_types.s_exit, g_exit_hook)) {
    return Fallback::kLaunchHooks;
  }
  if (k->pre_run_hooks != nullptr && PyList_GET_SIZE(k->pre_run_hooks) != 0) {
    return Fallback::kPreRunHooks;
  }
  return Fallback::kNone;
}

}  // namespace triton_embed::detail
