// The loaded bundles are the runtime's first kernel source (core/kernel_source.h), registered when
// the runtime's library is loaded (below): a kernel's parameter table and layers
// (for programs without the JIT layer), cache entries (the same module, name and, when the
// kernel knows it, source hash; the same target, options and key words), and the layers'
// recorded decisions (to the JIT layer, only a tuned choice of the very same kernel and
// configs, whose config has no pre_hook).

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/decisions.h"
#include "bundle/lookup.h"
#include "bundle/record.h"
#include "bundle/store.h"
#include "bundle/tune_by_rule.h"
#include "bundle/validate.h"
#include "core/kernel_source.h"
#include "core/registry.h"

namespace triton_embed::detail::bundle {

namespace {

// Calls f(bundle, contents, index) for each kernel matching k in the bundles loaded since
// `applied` (a count of bundles, advanced past them). The store's mutex is held.
template <class F>
void each_new_kernel(Store& s, size_t& applied, const KernelState& k, F&& f) {
  for (; applied < s.bundles.size(); ++applied) {
    const Bundle& b = s.bundles[applied];
    const ContentsView& c = b.view();
    for (uint32_t i = 0; i < c.kernels.size(); ++i) {
      if (same_kernel(c.kernels[i], k)) f(b, c, i);
    }
  }
}

KernelState* load_bundled_kernel(std::string_view module, std::string_view name) {
  load_from_environment();
  std::unique_ptr<KernelState> outer, inner;
  {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    for (const Bundle& b : s.bundles) {
      const ContentsView& c = b.view();
      for (uint32_t i = 0; i < c.kernels.size() && !outer; ++i) {
        const KernelView& kv = c.kernels[i];
        if (kv.module != module || kv.name != name) continue;
        outer = decode_state(b, kv);
        if (kv.wrapper.empty()) break;
        if (kv.wrapper != "autotune" && kv.wrapper != "heuristics") {
          throw BundleError(where(b, kv) + " is wrapped in '" + std::string(kv.wrapper) +
                                "', which this library does not know; rebuild the bundle with "
                                "this version of triton_embed",
                            BundleError::Reason::kTooNew);
        }
        outer->wrapper = std::string(kv.wrapper);
        outer->wrapper_kind =
            kv.wrapper == "autotune" ? WrapperKind::kAutotune : WrapperKind::kHeuristics;
        decode_layers(kv.layers, *outer, where(b, kv));
        inner = decode_state(b, kv);
      }
      if (outer) break;
    }
    if (!outer) return nullptr;
  }
  std::unique_ptr<KernelState> loser;  // another thread's, when it registered first
  if (inner) {
    outer->inner =
        insert_kernel(std::string(module), std::string(name) + "[inner]", std::move(inner), &loser);
  }
  return insert_kernel(std::string(module), std::string(name), std::move(outer), &loser);
}

// The loaded bundles as a kernel source (core/kernel_source.h).
class BundleSource final : public KernelSource {
 public:
  KernelState* load_kernel(std::string_view module, std::string_view name) override {
    record_at_exit_if_asked();
    // With the JIT layer the kernel comes from Python (its bundle entries still serve its
    // cache misses).
    return jit_linked() ? nullptr : load_bundled_kernel(module, name);
  }
  std::unique_ptr<detail::Entry> build_entry(KernelState& k, const InternedOptions& options,
                                             const Key& key, uint64_t hash, const ArgValue*,
                                             const LeafList& leaves) override {
    return bundled_entry(k, options, key, hash, leaves);
  }
  std::string nearest_entries(const KernelState& k, const InternedOptions& options, const Key& key,
                              const LeafList& leaves) override {
    return nearest(k, options, key, leaves);
  }
  // Heuristic results serve programs without the JIT layer only: the bundles loaded since the
  // last call hand theirs over (none to a caller whose epoch passed: unload_all and this run
  // under the store's lock, so a bundle's records are handed over once to a caller that keeps
  // them, or again after an unload).
  bool heuristic_decisions(KernelState& k, uint64_t epoch,
                           std::vector<HeuristicDecision>& out) override {
    if (jit_linked()) return false;
    load_from_environment();
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!still_current(epoch)) return true;
    each_new_kernel(s, s.heuristics_applied[&k], k,
                    [&](const Bundle& b, const ContentsView& c, uint32_t i) {
                      decode_heuristics(c, i, k, where(b, c.kernels[i]), out);
                    });
    return true;
  }
  // A heuristic no record holds the result of, computed from its expression (the bundle's
  // layers carry it) as Python computes it; false when it has none or the evaluator cannot
  // say (the runtime then raises NotInBundleError). With the JIT layer Python computes it,
  // unless the user asked for expressions (core/kernel_source.cc evaluates them before any source).
  bool eval_heuristic(KernelState& k, const Heuristic& h, const Frame& f,
                      HeuristicValue& out) override {
    if (jit_linked()) return false;
    return heuristic_expression_value(k, h, f, out, /*raise_faults=*/true);
  }
  // Choices for `target`, from the bundles loaded since the last call for it. The JIT layer
  // takes them only for the very kernel and configs they were tuned from, and tunes configs
  // whose pre_hook only Python runs itself (it must run the hook).
  bool choice_decisions(KernelState& k, size_t layer, uint32_t target, uint64_t epoch,
                        std::vector<ChoiceDecision>& out) override {
    load_from_environment();
    const bool jit = jit_linked();
    const std::string layers = jit ? encode_layers(k) : std::string();
    const TuneLayer* t = k.layers[layer]->tune.get();
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!still_current(epoch)) return true;  // as heuristic_decisions
    each_new_kernel(s, s.choices_applied[{t, target}], k,
                    [&](const Bundle& b, const ContentsView& c, uint32_t i) {
                      const KernelView& kv = c.kernels[i];
                      if (jit && (kv.source_hash.empty() || kv.layers != layers)) return;
                      decode_choices(c, i, k, layer, target, jit, where(b, kv), out);
                    });
    return true;
  }
  // A tuning key no bundle records: with no JIT layer to tune it, the choice the kernel's
  // tuning rule gives it (with the JIT layer, Python tunes it, as for any key).
  std::unique_ptr<Choice> tune(KernelState& k, const TuneLayer& t, const Frame& f,
                               const MemoKey& key) override {
    if (jit_linked()) return nullptr;
    return tune_by_rule(k, t, f, key);
  }
};

BundleSource g_bundle_source;
// Registered when the runtime's library is loaded, before any kernel is.
[[maybe_unused]] const bool kRegistered =
    (register_source(SourceSlot::kBundles, &g_bundle_source), true);

}  // namespace

}  // namespace triton_embed::detail::bundle
