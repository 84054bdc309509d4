#pragma once

// The layers' memo keys (src/core/memo_keys.cc): what a heuristic's memo and a tune layer's
// memo are keyed on, and the slow paths' results noted under those keys for recording into
// bundles. Bundles store the keys' words (bundle/decisions.h), so their layout is the
// format's.

#include <cstdint>

#include "base/internal_api.h"
#include "core/layers.h"
#include "core/memo.h"
#include "triton_embed/arg_value.h"

namespace triton_embed::detail {

// Pushes value v's words (its tag, then the value) onto `key`; a Python object (or a host
// tensor descriptor, whose fields Python may read) sets key.overflow instead.
void encode_value(const ArgValue& v, MemoKey& key);

// The memo key of a heuristic: exactly what its plan says it read.
TE_INTERNAL_API void heuristic_memo_key(const HeuristicPlan& plan, const Frame& f, MemoKey& key);

// Autotuner.run's key: the values of the key arguments that were given, then the dtype of
// every given argument that has one, in Python's order (positional, then by name). A
// one-config autotuner has no key: only the handle's options.
void tuning_key(const TuneLayer& t, const Frame& f, MemoKey& key);

// Notes a slow path's result for recording into a bundle (Heuristic::recorded,
// TuneLayer::recorded): what eval_heuristic returned for the frame, and what tune chose for
// `key` when tuning for `target` (0: unknown, not noted), unless the resolutions were
// forgotten since `epoch` (core/registry.h).
void record_heuristic(Heuristic& h, const Frame& f, const ArgValue& value);
void record_choice(TuneLayer& t, const Frame& f, const MemoKey& key, uint32_t target,
                   const Choice* choice, uint64_t epoch);

}  // namespace triton_embed::detail
