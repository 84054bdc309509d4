// Grid callables' programs: translated once per code object and kernel parameters
// (translate_grid, into g_grid_cache), and evaluated at a launch in place of the callable
// (call_grid, program_grid), with the last grid and what the program's names denoted kept per
// view (GridMemo, NameMemo).

#include "pyext/grid.h"

#include <Python.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/jit_internal.h"
#include "expr/eval.h"
#include "expr/program.h"
#include "pyext/fast_kernel.h"
#include "pyext/module.h"
#include "pyext/types.h"
#include "python/convert.h"
#include "python/expr_tree.h"

namespace triton_embed::detail {

namespace {

void free_grid_program(PyObject* capsule) {
  delete static_cast<py::GridProgram*>(PyCapsule_GetPointer(capsule, nullptr));
}

}  // namespace

// Grid programs by (code object, the kernel's parameter names): a capsule of the GridProgram,
// or None where the code has none. Shared by every view; entries are never removed, so a
// program stays valid while the process runs. Guarded by the GIL.
PyObject* g_grid_cache = nullptr;

// What g_grid_cache keeps for grid function g of kernel k: a capsule, or None where the glue
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

namespace {

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

}  // namespace

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

}  // namespace triton_embed::detail
