// The counts of the calls that went to Triton's launcher (g_left) and their reasons' texts, and
// the call shapes a view remembers as going there (remember_left_shape).

#include "pyext/fallback.h"

#include <Python.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace triton_embed::detail {

LeftCount g_left[kMaxLeftCounts];
size_t g_nleft = 0;
uint64_t g_left_unlisted = 0;  // calls of reasons beyond the first kMaxLeftCounts

void clear_shape(LeftShape& shape) {
  Py_CLEAR(shape.kw_names);
  for (size_t i = 0; i < shape.nargs; ++i) Py_CLEAR(shape.types[i]);
  shape.nargs = 0;
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

}  // namespace triton_embed::detail
