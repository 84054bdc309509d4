#pragma once

// The JIT layer's implementations of the runtime's slow paths (core/jit_hooks.h), registered
// as the hooks table by src/python/hooks.cc when libtriton_embed.so is loaded.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/cache.h"
#include "core/kernel_state.h"
#include "core/layers.h"
#include "core/specialize.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail {

// src/python/introspect.cc: imports the module, reads the kernel, registers its state.
KernelState* python_load_kernel(std::string_view module, std::string_view name);
// src/python/compile.cc: compiles with Triton and builds the (unpublished) entry.
std::unique_ptr<Entry> python_build_entry(KernelState& k, const InternedOptions& opts,
                                          const Key& key, uint64_t hash, const ArgValue* args,
                                          const LeafList& leaves);
// src/python/layers.cc: the heuristics and autotune misses.
ArgValue python_eval_heuristic(KernelState& k, Heuristic& h, const Frame& f);
const Choice* python_tune(KernelState& k, TuneLayer& t, const Frame& f, const MemoKey& key,
                          uint64_t hash);
std::vector<const Choice*> python_pruned_choices(KernelState& k, TuneLayer& t, const Frame& f);
std::vector<HookedBlock> python_run_config_pre_hook(KernelState& k, const TuneLayer& t,
                                                    const Choice& c, const Frame& f);
// src/python/interpret.cc: a launch through Triton's interpreter.
void python_interpret(KernelState* kernel, const GridSpec& grid, const ArgValue* args,
                      size_t nargs);
// Drops every Python reference held by kernel states (GIL held; at interpreter shutdown).
void release_python_objects();

}  // namespace triton_embed::detail

namespace triton_embed::detail::py {

// src/python/interpreter.cc: the Python side of initialize(), add_python_path() and
// runtime_info() (runtime.h).
void initialize(const RuntimeOptions& options);
void add_python_path(std::string_view dir);
RuntimeInfo runtime_info();

}  // namespace triton_embed::detail::py
