#pragma once

// Checking a bundle before it is loaded (check_whole): every kernel's parameter table and
// layers, every entry's fields, every decision recorded, decoded as their use would; and the
// same decoded for people (describe_decisions).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bundle/decisions.h"
#include "bundle/file_reader.h"
#include "bundle/format.h"
#include "bundle/tuning_rule.h"
#include "core/kernel_source.h"
#include "core/kernel_state.h"
#include "triton_embed/detail/export.h"

namespace triton_embed::detail::bundle {

// The wrapped kernels of a bundle, decoded: their states (parameters and layers) and every
// decision recorded for them.
struct Decoded {
  std::vector<std::unique_ptr<KernelState>> states;  // one per kernel
  struct Choices {
    uint32_t kernel = 0;
    size_t layer = 0;
    uint32_t target = 0;
    std::vector<ChoiceDecision> records;
  };
  std::vector<std::vector<HeuristicDecision>> heuristics;  // one list per kernel
  std::vector<Choices> choices;
  struct Rule {
    uint32_t kernel = 0;
    size_t layer = 0;
    TuningRule rule;
  };
  std::vector<Rule> rules;
};

// Everything in `b`, decoded and checked as its use would: kernels' parameter tables and
// layers, entries, and every record of a wrapped kernel. A bundle that passes adds nothing a
// later use can refuse with BundleError.
Decoded check_whole(const Bundle& b);

// A kernel state decoded from bundle kernel `kv`, without layers.
std::unique_ptr<KernelState> decode_state(const Bundle& b, const KernelView& kv);

// What `b` holds for its wrapped kernels, decoded and checked as a load would, for people
// (`triton-embed-bundle list`): each layer (heuristics as the expressions the runtime
// evaluates, or why they are kept as recorded values), and each tuned choice with its target,
// key, config and pre_hook (the actions the runtime applies, or why it stays in Python); or,
// for a bundle a load refuses, the refusal.
TRITON_EMBED_API std::string describe_decisions(const Bundle& b);

}  // namespace triton_embed::detail::bundle
