#pragma once

// The wrapper layers in Python (src/python/layers.cc): reading a kernel's @triton.heuristics and
// @triton.autotune wrappers into its layers, and the misses the runtime sends here: heuristics
// run in Python, Triton's Autotuner, pruning, configs and their pre_hooks.

#include <cstdint>
#include <memory>
#include <vector>

#include "base/internal_api.h"
#include "core/kernel_source.h"
#include "core/kernel_state.h"
#include "core/layers.h"
#include "python/handles.h"

namespace triton_embed::detail {

// Reads the wrappers (outermost first) into k's layers (GIL held).
void load_layers(KernelState& k, void* wrappers_list, py::KernelObjects& objects);
HeuristicValue python_eval_heuristic(KernelState& k, const Heuristic& h, const Frame& f);
std::unique_ptr<Choice> python_tune(KernelState& k, const TuneLayer& t, const Frame& f);
std::vector<uint64_t> python_pruned_configs(KernelState& k, const TuneLayer& t, const Frame& f,
                                            const InternedOptions& base);
std::unique_ptr<Choice> python_config_choice(KernelState& k, uint64_t config,
                                             const InternedOptions& base);
std::vector<HookedBlock> python_run_config_pre_hook(KernelState& k, const TuneLayer& t,
                                                    const Choice& c, const Frame& f);

}  // namespace triton_embed::detail

namespace triton_embed::detail::py {

// How many times a wrapped kernel's layers ran Python (heuristics, tuning, pruning, config
// pre-hooks) in this process (read by src/testing/).
TE_INTERNAL_API long layer_python_calls();

}  // namespace triton_embed::detail::py
