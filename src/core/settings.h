#pragma once

// The runtime's process-wide settings, each set by its public call or read once from its
// environment variable (the call wins), in one place (core/settings.cc):
//   heuristic_evaluation()  set_heuristic_evaluation(), TRITON_EMBED_HEURISTICS
//   record_widening()       set_record_widening(), TRITON_EMBED_RECORD_WIDEN
//   bundle_ptx_allowed()    TRITON_EMBED_BUNDLE_PTX
//   bundle_strict()         TRITON_EMBED_BUNDLE_STRICT
// The explicit target (set_target(), TRITON_EMBED_TARGET) is core/target.h's: every launch
// reads it inline.

#include "triton_embed/runtime.h"

namespace triton_embed::detail {

// How a program with the JIT layer computes heuristic values. ValueError for a variable's value
// it does not know, on the first heuristic miss that reads it.
HeuristicEvaluation heuristic_evaluation();
// Whether this process's recordings are widened when written.
bool record_widening();
// Whether PTX kept for an older target may serve a newer GPU through the driver.
bool bundle_ptx_allowed();
// Whether only an exact bundle entry may serve a call (no less specialised one).
bool bundle_strict();

}  // namespace triton_embed::detail
