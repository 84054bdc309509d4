#pragma once

// The walk of a call through a wrapped kernel's layers (src/core/walk.cc), outermost first as
// Triton's run() methods nest: a heuristics layer sets its values from its memo (the kernel
// sources on a miss), an autotune layer applies its tuned config and the config's pre-hook,
// and the inner kernel then launches (or compiles, warms up, interprets) as any other.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/internal_api.h"
#include "core/call_hooks.h"
#include "core/layers.h"
#include "core/memo.h"
#include "expr/eval.h"
#include "triton_embed/tensor_descriptor.h"

namespace triton_embed::detail {

struct Walk {
  KernelState& outer;
  KernelState& inner;
  // Results.
  const CompiledKernel* compiled = nullptr;
  std::vector<const CompiledKernel*>* all = nullptr;
  const TuningResult* result = nullptr;
  bool found_tuner = false;
  bool memo_ok = true;  // no layer did what the memo of whole calls cannot repeat
  // A config pre-hook the walk applied that a memo hit need not repeat (block shapes from the
  // config alone: Choice::hook_fixed; a descriptor's map does not depend on its block shape).
  const expr::HookResult* hook = nullptr;
  // Descriptors with the block shapes config pre-hooks set, for this call's launch, where no
  // per-thread copy was free (set_hooked_block).
  std::vector<std::unique_ptr<TensorDescriptor>> hooked;
  // The tune layers' choices of a launch, (layer index, choice), for the memo of whole calls
  // (CallTail::chosen); more than kMaxChosen and no memo.
  static constexpr uint32_t kMaxChosen = 4;
  std::pair<uint32_t, const Choice*> chosen[kMaxChosen];
  uint32_t num_chosen = 0;
  // The resolutions' epoch when a walk the memo of whole calls may keep began (odd: none).
  uint64_t epoch = 1;
  // A precompile's compiles handed to compile worker processes (core/compile.h, warm_entry),
  // when the caller waits for them; nullptr: none is handed over (each compiles here, before
  // the walk returns, unless an earlier precompile handed it over already).
  PendingCompiles* pending = nullptr;
  // A precompile applies each config's pre_hook (a tuning benchmarks the call as hooked); a
  // warmup's does not (Autotuner.warmup compiles without it).
  bool precompile_hooks = true;
};

// The call's observer, when the frame is a launch whose call has one.
inline const CallObserver* observer_of(const Frame& f) noexcept {
  return f.mode == FrameMode::kLaunch && f.call != nullptr && f.call->hooks != nullptr
             ? f.call->hooks->observer
             : nullptr;
}

// Applies layers li.. of w.outer to frame f, then what f.mode asks of the inner kernel.
void walk(Walk& w, size_t li, Frame& f);

// Compiles the call of f at each config of autotune layer t of k named in `config_ids` (as the
// JIT layer's pruned_configs names them) into Triton's cache, in parallel on the compile
// workers, keeping no entry: before Triton's Autotuner benchmarks them one at a time
// (compiling each again, from that cache). A config that fails is left to the benchmark.
// With `pending` (one list per config), the compiles the JIT layer hands to compile worker
// processes are appended to their config's list, and this returns once they are handed over:
// the caller waits for a config's before benchmarking it. Returns the configs compiled or
// handed over.
TE_INTERNAL_API size_t precompile_configs(KernelState& k, const TuneLayer& t, const Frame& f,
                                          const std::vector<uint64_t>& config_ids,
                                          std::vector<PendingCompiles>* pending = nullptr);

// The options `base` with option heuristic `h`'s value `v` set (slow path of the option memo).
const InternedOptions* heuristic_options(KernelState& k, Heuristic& h, const InternedOptions* base,
                                         const ArgValue& v, const MemoKey& key, uint64_t hash);

}  // namespace triton_embed::detail
