#pragma once

// What a bundle keeps of a wrapped kernel (@triton.heuristics, @triton.autotune) besides its
// inner kernel's cubins: the layers' shape (which heuristic sets which parameter or option,
// the autotuner's key parameters) and the decisions the recording process made (each
// heuristic's result per memo key; each tuned choice per target and tuning key). Loading them
// fills the layers' memos, so a program with no Python launches the kernel for every key the
// recording saw, and raises NotInBundleError for one it did not. The runtime publishes them
// (src/core/kernel_source.cc); nothing here writes a memo.
//
// The layers go into bundle::Kernel::layers; the decisions into bundle::Record:
//   kind 1, a heuristic's result: key = {layer << 32 | heuristic, number of deps, each dep
//     (param << 8 | aspect), the memo key words}; payload = the value.
//   kind 2, a tuned choice: key = {layer, target, bytes of the base options text, the text
//     packed 8 bytes a word, the tuning key words after the options id}; payload = the
//     choice (meta-parameters, options text, pre_hook flag, why the hook is not an expression
//     or the hook as one (expr/program.h), Python's best config and key).
//   kind 3, a tuning rule (bundle/tuning_rule.h): key = {layer}; payload = the rule's text.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/format.h"
#include "bundle/tuning_rule.h"
#include "core/kernel_source.h"
#include "core/kernel_state.h"

namespace triton_embed::detail::bundle {

constexpr uint32_t kRecordHeuristic = 1;
constexpr uint32_t kRecordChoice = 2;
constexpr uint32_t kRecordTuningRule = 3;

// The layers of wrapped kernel `k` (empty for a plain kernel).
std::string encode_layers(const KernelState& k);

// Makes k's layers (and its call memo) from `bytes`, with no Python objects: a heuristic or
// tuning miss raises NotInBundleError. k's parameters must be decoded first. Throws
// BundleError (kCorrupt) naming `where` for bytes encode_layers did not write.
void decode_layers(std::string_view bytes, KernelState& k, const std::string& where);

// Appends the decisions noted in k's layers (Heuristic::recorded, TuneLayer::recorded) as
// records of bundle kernel `kernel`, and the tuning rule declared for k (set_tuning_rule)
// for each autotune layer with tuned choices. ValueError for a rule that names an argument
// that is not a key of the autotuner.
void record_decisions(const KernelState& k, uint32_t kernel, Contents& out);

// The record of kind 3 that keeps tuning rule `text` for autotune layer `layer` of bundle
// kernel `kernel`.
Record rule_record(uint32_t kernel, size_t layer, const std::string& text);

// Whether every name rule r gives a dimension of is a key parameter of t; else *bad is the
// first that is not, and *keys the key parameters' names.
bool rule_fits(const TuningRule& r, const KernelState& k, const TuneLayer& t, std::string* bad,
               std::string* keys);

// The tuning rule `c` holds for k's autotune layer `layer`: false when it holds none. Throws
// BundleError (kCorrupt) naming `where` for a rule record that does not decode, or names an
// argument that is not a key of the layer.
bool decode_rule(const ContentsView& c, uint32_t kernel, KernelState& k, size_t layer,
                 const std::string& where, TuningRule* out);

// The heuristic results the records of bundle kernel `kernel` in `c` hold, appended to `out`
// (the runtime makes the first one's deps a heuristic's plan when it has none, and leaves out
// those recorded under another plan).
void decode_heuristics(const ContentsView& c, uint32_t kernel, KernelState& k,
                       const std::string& where, std::vector<HeuristicDecision>& out);

// The choices `c` holds for k's autotune layer `layer`, tuned for the target that serves
// `target` (the same, else the newest older one with the same warp size; 0: the newest),
// appended to `out`. With `skip_pre_hook`, choices whose config has a pre_hook only Python
// runs are left out (the JIT layer tunes those itself: it must run the hook).
void decode_choices(const ContentsView& c, uint32_t kernel, KernelState& k, size_t layer,
                    uint32_t target, bool skip_pre_hook, const std::string& where,
                    std::vector<ChoiceDecision>& out);

}  // namespace triton_embed::detail::bundle
