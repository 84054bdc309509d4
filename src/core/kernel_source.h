#pragma once

// Kernel sources: where the runtime gets what it does not have yet.
//
// The runtime (src/core, src/cuda) owns every kernel's state: the caches, the layers' memo
// tables, the recordings for bundles, and the once-per-key protocol (core/once.h). What it
// lacks it asks its sources for, in order: the loaded bundles (bundle/bundle_source.cc), then the
// JIT layer (src/python/python_source.cc) where libtriton_embed.so is linked. A source answers with
// plain data (a parameter table, an unpublished cache entry, a heuristic's value and what it
// read, a tuned choice) and the runtime publishes it (src/core/kernel_source.cc,
// src/core/compile.cc); no source writes into the runtime's tables. A source keeps its own handles
// (Python objects) keyed by the runtime's objects. Slow paths only: a cache or memo hit never reads
// a source.
//
// Each member's default answers "not held here".

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/layers.h"
#include "triton_embed/detail/export.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail {

struct Entry;
struct Key;
struct LeafList;
struct KernelState;

// What a heuristic returned for a frame, and what it read of it.
struct HeuristicValue {
  ArgValue value{};
  std::vector<Dep> deps;  // the arguments it read (a memo key holds exactly these)
  bool memo = true;       // false: it read what no key can hold; it runs for every call
};

// A heuristic result a source holds for a memo key (a bundle's recorded decisions).
struct HeuristicDecision {
  uint32_t layer = 0, heuristic = 0;  // of the kernel's layers, outermost first
  std::vector<Dep> deps;              // the plan the key was made under
  MemoKey key;
  ArgValue value{};
};

// A tuned choice a source holds for a tuning key (a bundle's recorded decisions).
struct ChoiceDecision {
  uint32_t target = 0;  // the target it was tuned for
  MemoKey key;
  std::unique_ptr<Choice> choice;
};

// A compile a source runs in another process (a compile worker process, src/python/): it
// fills the compiler's own cache, from which a later build_entry (or Triton's launcher) of the
// key compiles quickly. A compile there that fails or never finishes only costs time: the key
// is then compiled here, as it would have been, and meets its error here.
class PendingCompile {
 public:
  virtual ~PendingCompile() = default;
  // Waits until it finished (releasing the GIL where this thread holds it); true when it
  // compiled there.
  virtual bool wait() = 0;
  // True once it finished (compiled or failed), without waiting.
  virtual bool finished() const noexcept = 0;
  // True once it finished and compiled there, without waiting.
  virtual bool compiled() const noexcept = 0;
  // When it finished (meaningful once finished()).
  virtual std::chrono::steady_clock::time_point finished_at() const noexcept = 0;
};

class KernelSource {
 public:
  virtual ~KernelSource() = default;

  // Makes and registers the state of module.name (and its inner kernel's, when wrapped), or
  // nullptr when this source does not hold it.
  virtual KernelState* load_kernel(std::string_view module, std::string_view name) = 0;
  // The cache entry for `key`, built but not published, or nullptr. Called once per key
  // across threads, with no lock held and the GIL not held.
  virtual std::unique_ptr<Entry> build_entry(KernelState& kernel, const InternedOptions& options,
                                             const Key& key, uint64_t hash, const ArgValue* args,
                                             const LeafList& leaves) = 0;
  // Compiles `key` into the compiler's own cache (Triton's disk cache) and keeps nothing: a
  // later build_entry, or Triton's launcher benchmarking a config in Python, finds it there.
  // With `elsewhere`, where compiles_elsewhere(k), it hands the compile to another process,
  // sets *elsewhere and returns at once. False when this source compiles nothing. Called with
  // no lock held and the GIL not held.
  virtual bool warm_entry(KernelState&, const InternedOptions&, const Key&, const ArgValue*,
                          const LeafList&, std::shared_ptr<PendingCompile>* /*elsewhere*/) {
    return false;
  }
  // True when warm_entry would hand k's compiles to other processes now (a caller about to
  // compile many keys of k here hands them there first, then builds each from the cache).
  virtual bool compiles_elsewhere(const KernelState&) { return false; }
  // What this source holds of kernel k when no source builds the entry for `key` (for
  // NotInBundleError): its nearest entries and why none serves the call, or empty.
  virtual std::string nearest_entries(const KernelState&, const InternedOptions&, const Key&,
                                      const LeafList&) {
    return {};
  }

  // Heuristic results this source holds for k and has not handed over yet (appended to
  // `out`); false when it holds none to look up (the runtime then asks eval_heuristic).
  // `epoch`: the resolutions' epoch the caller read (core/registry.h); when it has passed,
  // nothing is handed over (the caller would not keep it).
  virtual bool heuristic_decisions(KernelState&, uint64_t /*epoch*/,
                                   std::vector<HeuristicDecision>&) {
    return false;
  }
  // Runs heuristic h on f; false when this source cannot.
  virtual bool eval_heuristic(KernelState&, const Heuristic&, const Frame&, HeuristicValue&) {
    return false;
  }
  // Tuned choices this source holds for autotune layer `layer` of k for `target` and has not
  // handed over yet (appended to `out`); false when it holds none to look up. `epoch`: as for
  // heuristic_decisions.
  virtual bool choice_decisions(KernelState&, size_t, uint32_t, uint64_t /*epoch*/,
                                std::vector<ChoiceDecision>&) {
    return false;
  }
  // Tunes `key` (not yet published: once per key across threads); nullptr when it cannot.
  virtual std::unique_ptr<Choice> tune(KernelState&, const TuneLayer&, const Frame&,
                                       const MemoKey&) {
    return nullptr;
  }
  // The configurations left after pruning for f (Autotuner.warmup), each as an id this
  // source gave it (stable for the process), appended to `ids`; false when it cannot.
  virtual bool pruned_configs(KernelState&, const TuneLayer&, const Frame&, const InternedOptions&,
                              std::vector<uint64_t>&) {
    return false;
  }
  // The choice of config `id` (from pruned_configs) on options `base`.
  virtual std::unique_ptr<Choice> config_choice(KernelState&, const TuneLayer&, uint64_t,
                                                const InternedOptions&) {
    return nullptr;
  }
  // Runs the pre_hook of choice c's config on f (as Autotuner.run does): appends the
  // descriptor arguments whose block_shape it changed; false when it cannot.
  virtual bool run_config_pre_hook(KernelState&, const TuneLayer&, const Choice&, const Frame&,
                                   std::vector<HookedBlock>&) {
    return false;
  }
  // Runs the kernel through Triton's interpreter; false when it cannot.
  virtual bool interpret(KernelState*, const GridSpec&, const ArgValue*, size_t) { return false; }
};

// The sources in the order the runtime asks them.
enum class SourceSlot : uint8_t { kBundles = 0, kJit = 1 };
constexpr size_t kNumSources = 2;

// Registers a source (once, from its library's static initialiser; it must live as long as the
// process). A second, different source in one slot is an internal error.
TRITON_EMBED_API void register_source(SourceSlot slot, KernelSource* source);

// The source in `slot`, or nullptr (no JIT in a program linked to triton_embed::runtime only).
KernelSource* source(SourceSlot slot) noexcept;
inline bool jit_linked() noexcept { return source(SourceSlot::kJit) != nullptr; }

// ---- the slow paths that ask the sources (src/core/kernel_source.cc) ----------------------------
//
// Each publishes what a source answered; when none answers they raise NotInBundleError
// (run_config_pre_hook: NotSupportedError). load_kernel and interpret are declared in jit.h.

// Heuristic `h`'s value on the frame (a source's recorded result, or the heuristic run);
// memoised when it can be. With the JIT layer and HeuristicEvaluation::kExpressions, the
// heuristic's expression is evaluated first (Python runs only what it cannot compute).
ArgValue eval_heuristic(KernelState& k, Heuristic& h, const Frame& f);
// Heuristic `h` computed from its expression (expr/eval.h) as Python computes it, with what it
// reads; false when it has none or the evaluator cannot say (a value beyond what it models).
// A fault (Python would raise) raises the exception Python's type names when `raise_faults`,
// else returns false.
bool heuristic_expression_value(KernelState& k, const Heuristic& h, const Frame& f,
                                HeuristicValue& out, bool raise_faults);
// The choice a source holds for `key` (a bundle's record), published; nullptr when none does
// (nothing is tuned: what tuning_result() asks).
const Choice* decided_choice(KernelState& k, TuneLayer& t, const MemoKey& key, uint64_t hash);
// The choice for the frame's tuning key (a source's recorded choice, or tuned once across
// threads); memoised.
const Choice* tune(KernelState& k, TuneLayer& t, const Frame& f, const MemoKey& key, uint64_t hash);
// The index of autotune layer t among k's layers.
size_t layer_index(const KernelState& k, const TuneLayer& t);
// The configurations left after pruning (Autotuner.warmup), as choices.
std::vector<const Choice*> pruned_choices(KernelState& k, TuneLayer& t, const Frame& f);
// The choices of the JIT layer's configs `ids` (as pruned_configs names them) on f's options.
std::vector<const Choice*> config_choices(KernelState& k, TuneLayer& t, const Frame& f,
                                          const std::vector<uint64_t>& ids);
// Calls the chosen config's pre_hook as Autotuner.run does; returns the descriptor arguments
// whose block_shape it changed.
std::vector<HookedBlock> run_config_pre_hook(KernelState& k, const TuneLayer& t, const Choice& c,
                                             const Frame& f);

}  // namespace triton_embed::detail
