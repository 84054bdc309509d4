#pragma once

// A tuning key no loaded bundle records, in a program without the JIT layer: the choice the
// kernel's tuning rule (tuning_rule.h) gives it from the choices recorded for other keys.

#include <memory>

#include "core/kernel_state.h"

namespace triton_embed::detail::bundle {

// The choice the kernel's tuning rule gives the call's key from the choices recorded for
// other keys (a runtime-only tuning miss), said once per key; nullptr when the loaded bundles
// hold no choice of this autotuner for the target (the runtime then says so). Throws
// NotInBundleError saying why when they hold some, and the rule does not cover the key.
std::unique_ptr<Choice> tune_by_rule(KernelState& k, const TuneLayer& t, const Frame& f,
                                     const MemoKey& key);

}  // namespace triton_embed::detail::bundle
