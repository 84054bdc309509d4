// Registers the JIT layer with the runtime (core/jit_hooks.h) when libtriton_embed.so is
// loaded: by the dynamic loader in a program linked to triton_embed::triton_embed (its link
// interface keeps the library needed even when the program calls only runtime symbols), or
// by the Python process that loads an extension linked to it.

#include <Python.h>

#include "core/jit_hooks.h"
#include "python/jit_layer.h"

namespace triton_embed::detail {

namespace {

void* release_gil() {
  if (Py_IsInitialized() && PyGILState_Check()) return PyEval_SaveThread();
  return nullptr;
}

void restore_gil(void* token) { PyEval_RestoreThread(static_cast<PyThreadState*>(token)); }

constexpr JitHooks kPythonJit = {
    &python_load_kernel,
    &python_build_entry,
    &release_gil,
    &restore_gil,
    &python_eval_heuristic,
    &python_tune,
    &python_pruned_choices,
    &python_run_config_pre_hook,
    &python_interpret,
    &py::initialize,
    &py::add_python_path,
    &py::runtime_info,
};

// Runs once, when the library is loaded (after the runtime it depends on).
[[maybe_unused]] const bool kRegistered = (set_jit_hooks(&kPythonJit), true);

}  // namespace

}  // namespace triton_embed::detail
