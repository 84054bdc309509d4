#pragma once

// The calls that go to Triton's launcher, and why: the counts by kernel, reason, parameter and
// argument type (g_left), Triton's own launch of a call (triton_launch), and the call shapes a
// view sends there unread (LeftShape). What a call runs is inline, for the launch path's
// translation unit; the rest is in fallback.cc.

#include <Python.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "pyext/fast_kernel.h"
#include "pyext/module.h"
#include "pyext/types.h"

namespace triton_embed::detail {

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
extern LeftCount g_left[kMaxLeftCounts];
extern size_t g_nleft;
extern uint64_t g_left_unlisted;  // calls of reasons beyond the first kMaxLeftCounts

inline void count_left(const FastKernel* k, Fallback why, int param, PyTypeObject* type) {
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

// Forgets the counts (reset_stats()).
void clear_left_counts();

// The text of reason `why` (stats()'s rows).
const char* reason_text(Fallback why);

// Triton's own launch of the call, kernel[grid](*args, **kwargs), counted with its reason
// (`param`: the parameter whose argument it is, or -1; `type`: the argument's type, for kKind).
inline PyObject* triton_launch(Launcher* l, Fallback why, int param, PyTypeObject* type,
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
inline bool same_names(PyObject* a, PyObject* b) {
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
inline const LeftShape* left_shape(const FastKernel* k, PyObject* const* args, size_t npos,
                                   size_t nargs, PyObject* kwnames) {
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
                         PyObject* kwnames, int param, size_t arg);

// Releases what shape holds (its names and types) and empties it.
void clear_shape(LeftShape& shape);

}  // namespace triton_embed::detail
