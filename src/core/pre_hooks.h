#pragma once

// Config pre-hooks (src/core/pre_hooks.cc). Autotuner.run calls the chosen config's pre_hook
// before each launch. The runtime applies a hook it has as an expression (Choice::hook): block
// shapes set on descriptor arguments, tensor arguments zeroed. Other hooks run in Python (the
// JIT layer's source). Either way the launch takes a copy of the caller's descriptor with the
// new block shape: the caller's is taken by const reference and stays as it is.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/layers.h"
#include "core/walk.h"
#include "expr/eval.h"
#include "triton_embed/tensor_descriptor.h"

namespace triton_embed::detail {

// The copies are kept per thread in a few slots (by kernel and parameter) and reused while the
// caller's fields stay the same, so that a stream of launches re-checks and re-encodes
// nothing; a slot a launch still holds (a grid callable that launches) is not shared.
struct HookedCopy {
  bool in_use = false;
  std::optional<TensorDescriptor> desc;
};

// Releases the slots a walk took when it returns (after its launch).
struct HookedHold {
  HookedCopy* held[expr::kMaxHookActions];
  uint32_t n = 0;
  HookedHold() = default;
  HookedHold(const HookedHold&) = delete;
  HookedHold& operator=(const HookedHold&) = delete;
  ~HookedHold() {
    for (uint32_t i = 0; i < n; ++i) held[i]->in_use = false;
  }
};

// Tells `o` of hook result r's block shapes.
inline void tell_hooked(const CallObserver& o, const expr::HookResult& r) {
  for (uint32_t i = 0; i < r.num_blocks; ++i) {
    o.hooked(o.ctx, r.blocks[i].param, r.blocks[i].dims, r.blocks[i].rank, r.blocks[i].tuple);
  }
}

// Completes a choice a source made, before the runtime publishes it (Choice::hook_fixed).
void finish_choice(const KernelState& k, Choice& c);

// Autotuner.run's call of choice c's pre_hook before the launch (at any site; for a hook the
// runtime applies, before a compile too: the block shapes decide the kernel). False when
// Python runs the hook (at a launch; elsewhere nothing runs it, and the call's block shapes are
// not the ones the hook would set).
bool apply_pre_hook(Walk& w, HookedHold& hold, KernelState& k, const TuneLayer& t, const Choice& c,
                    Frame& f);

}  // namespace triton_embed::detail
