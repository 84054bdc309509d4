#pragma once

// The Python objects the JIT layer holds for the runtime's kernels and choices: strong
// references, dropped at interpreter shutdown (release_python_objects). No runtime struct
// holds one: a kernel's objects are found by its state, a heuristic's function and an
// autotuner by their place in the kernel's layers, a config by the choice made from it.

#include <Python.h>

#include <vector>

#include "core/kernel_state.h"
#include "core/layers.h"

namespace triton_embed::detail::py {

struct KernelObjects {
  PyObject* jit_function = nullptr;  // the JITFunction
  PyObject* object = nullptr;        // what the module attribute holds (maybe a wrapper)
  std::vector<PyObject*> layers;     // each wrapper (Heuristics, Autotuner), outermost first
  std::vector<std::vector<PyObject*>> heuristics;  // per layer: each heuristic's function
};

// Gives k's objects (strong references) to the table. GIL held.
void set_objects(const KernelState& k, KernelObjects objects);
// Keeps a strong reference to `obj` as long as k's objects (a default, a kept value, a config);
// with `once`, no second one when it is kept already.
void keep(const KernelState& k, PyObject* obj, bool once = false);
// Drops k's objects (a state that lost the race to register). GIL held.
void drop_objects(const KernelState& k);

// k's objects, or nullptr (the interpreter has shut down, or k came from no Python).
PyObject* jit_function(const KernelState& k);
PyObject* heuristic_function(const KernelState& k, const Heuristic& h);
TE_INTERNAL_API PyObject* tuner(const KernelState& k, const TuneLayer& t);

// The triton.Config choice c was made from (for its pre_hook), kept by keep().
void set_config(const Choice& c, PyObject* config);
TE_INTERNAL_API PyObject* config(const Choice& c);

}  // namespace triton_embed::detail::py

namespace triton_embed::detail {

// Drops every Python reference the JIT layer holds (GIL held; at interpreter shutdown).
void release_python_objects();

}  // namespace triton_embed::detail
