#pragma once

// FastKernel, the C base of triton_embed.jit's views, with what a view remembers between calls
// (the last grid, the names of its grid program, the call shapes it sends to Triton's
// launcher), and Launcher, `fast[grid]`: their Python types' functions are in fast_kernel.cc.

#include <Python.h>

#include <cstddef>
#include <cstdint>

#include "core/jit_internal.h"
#include "core/kernel_state.h"
#include "pyext/types.h"
#include "python/expr_tree.h"

namespace triton_embed::detail {

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

extern PyTypeObject* g_kernel_type;
extern PyTypeObject* g_launcher_type;

struct Launcher {
  PyObject_HEAD vectorcallfunc vectorcall;
  FastKernel* kernel;
  PyObject* grid;
};

// The Python types' functions (PyInit__fast sets them): a view's and a launcher's deallocation,
// and the view's mapping methods (its `[grid]`).
void kernel_dealloc(PyObject* self);
void launcher_dealloc(PyObject* self);
extern PyMappingMethods g_kernel_mapping;

}  // namespace triton_embed::detail
