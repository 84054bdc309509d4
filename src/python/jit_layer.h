#pragma once

// The JIT layer's answers to the runtime's questions (core/source.h), given to it by the
// kernel source src/python/source.cc registers when libtriton_embed.so is loaded.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/cache.h"
#include "core/kernel_state.h"
#include "core/layers.h"
#include "core/source.h"
#include "core/specialize.h"
#include "python/handles.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail {

// src/python/introspect.cc: imports the module, reads the kernel, registers its state.
KernelState* python_load_kernel(std::string_view module, std::string_view name);
// The same for a Python kernel object (a JITFunction, an Autotuner or Heuristics, or
// triton_embed.jit's view of one): by name (load_kernel) when its module holds it under its
// function's name, else registered for this object alone. TypeError for another object.
TE_INTERNAL_API KernelState* python_load_object(void* object);
// src/python/compile.cc: compiles with Triton and builds the (unpublished) entry.
std::unique_ptr<Entry> python_build_entry(KernelState& k, const InternedOptions& opts,
                                          const Key& key, uint64_t hash, const ArgValue* args,
                                          const LeafList& leaves);
// src/python/layers.cc: reading the wrappers (outermost first) into k's layers (GIL held),
// and the heuristics and autotune misses.
void load_layers(KernelState& k, void* wrappers_list, py::KernelObjects& objects);
HeuristicValue python_eval_heuristic(KernelState& k, const Heuristic& h, const Frame& f);
std::unique_ptr<Choice> python_tune(KernelState& k, const TuneLayer& t, const Frame& f);
std::vector<uint64_t> python_pruned_configs(KernelState& k, const TuneLayer& t, const Frame& f,
                                            const InternedOptions& base);
std::unique_ptr<Choice> python_config_choice(KernelState& k, uint64_t config,
                                             const InternedOptions& base);
std::vector<HookedBlock> python_run_config_pre_hook(KernelState& k, const TuneLayer& t,
                                                    const Choice& c, const Frame& f);
// src/python/interpret.cc: a launch through Triton's interpreter.
void python_interpret(KernelState* kernel, const GridSpec& grid, const ArgValue* args,
                      size_t nargs);
// Drops every Python reference the JIT layer holds (python/handles.h; GIL held; at interpreter
// shutdown).
void release_python_objects();

}  // namespace triton_embed::detail

namespace triton_embed::detail::py {

// src/python/interpreter.cc: the Python side of initialize(), add_python_path() and
// runtime_info() (runtime.h), which its PythonHost (core/python_host.h) calls.
void initialize(const RuntimeOptions& options);
// How many times a wrapped kernel's layers ran Python (heuristics, tuning, pruning, config
// pre-hooks) in this process (src/python/layers.cc; read by src/testing/).
TE_INTERNAL_API long layer_python_calls();
void add_python_path(std::string_view dir);
RuntimeInfo runtime_info();

}  // namespace triton_embed::detail::py
