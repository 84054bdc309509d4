// The runtime's side of its kernel sources (core/kernel_source.h): the registered sources, and the
// slow paths that ask them in order and publish what they answer (the layers' memo tables,
// recordings and tuned choices are written here only; cache entries in core/compile.cc), with
// what a program linked to triton_embed::runtime only gets when no source answers.

#include "core/kernel_source.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/kernel_state.h"
#include "core/memo_keys.h"
#include "core/once.h"
#include "core/pre_hooks.h"
#include "core/registry.h"
#include "core/settings.h"
#include "core/target.h"

namespace triton_embed::detail {

namespace {

// Constant-initialised: set before any use.
std::atomic<KernelSource*> g_sources[kNumSources] = {};

// What a runtime-only program is told to do, after saying what it could not find.
constexpr const char* kLinkTheJit =
    "this program links triton_embed::runtime only, which runs no Python and compiles "
    "nothing: link triton_embed::triton_embed to compile kernels with Triton on first use, or "
    "build a kernel bundle that holds it";

[[noreturn]] void throw_needs_jit(const KernelState& k, const char* what) {
  TE_THROW(NotInBundleError) << full_name(k) << ": " << what << " is in no kernel bundle; "
                             << kLinkTheJit;
}

// Calls f(source) for each registered source in order until it returns true.
template <class F>
bool ask(F&& f) {
  for (auto& slot : g_sources) {
    KernelSource* s = slot.load(std::memory_order_acquire);
    if (s != nullptr && f(*s)) return true;
  }
  return false;
}

// ---- publishing ---------------------------------------------------------------------------

bool memo_value(const HeuristicPlan* plan, const Frame& f, ArgValue& out) {
  if (plan == nullptr) return false;
  MemoKey key;
  heuristic_memo_key(*plan, f, key);
  uint64_t v[2];
  if (key.overflow || !plan->memo.find(key, key.hash(), v)) return false;
  std::memcpy(static_cast<void*>(&out), v, sizeof(out));
  return true;
}

// A result a source holds for a key (a bundle's): made the heuristic's plan when it has none
// (a key made under another plan means something else, and is left out); kept for recording.
// Nothing is kept when the resolutions were forgotten since `epoch` (core/registry.h).
void publish_decision(KernelState& k, HeuristicDecision& r, uint64_t epoch) {
  Heuristic& h = *k.layers[r.layer]->heuristics[r.heuristic];
  std::lock_guard<std::mutex> lock(h.mu);
  if (!still_current(epoch)) return;
  HeuristicPlan* plan = h.plan.load(std::memory_order_relaxed);
  if (plan == nullptr) {
    h.plans.push_back(std::make_unique<HeuristicPlan>());
    plan = h.plans.back().get();
    plan->deps = r.deps;
    h.plan.store(plan, std::memory_order_release);
    invalidate_call_memo(k.call_memo.get());
  } else if (plan->deps != r.deps) {
    return;
  }
  if (h.recorded_plan != plan) {
    h.recorded.clear();
    h.recorded_plan = plan;
  }
  if (!h.recorded.emplace(std::vector<uint64_t>(r.key.w, r.key.w + r.key.n), r.value).second) {
    return;  // known: kept
  }
  uint64_t stored[2];
  static_assert(sizeof(ArgValue) == sizeof(stored), "a memo value holds one ArgValue");
  std::memcpy(stored, &r.value, sizeof(stored));
  plan->memo.insert(r.key, r.key.hash(), stored);
}

// What a source computed for f: the heuristic's plan grows by what it read (a new plan
// invalidates the whole-call memo), and the value is memoised under it (unless the
// resolutions were forgotten since `epoch`).
void publish_heuristic(KernelState& k, Heuristic& h, const Frame& f, const HeuristicValue& r,
                       uint64_t epoch) {
  std::lock_guard<std::mutex> lock(h.mu);
  if (!still_current(epoch)) return;
  if (!r.memo) {
    h.never_memo = true;
    h.plan.store(nullptr, std::memory_order_release);
    invalidate_call_memo(k.call_memo.get());
    return;
  }
  if (h.never_memo) return;
  HeuristicPlan* plan = h.plan.load(std::memory_order_relaxed);
  bool covered = plan != nullptr;
  for (const Dep& d : r.deps) {
    if (covered && std::find(plan->deps.begin(), plan->deps.end(), d) == plan->deps.end()) {
      covered = false;
    }
  }
  if (!covered) {
    auto fresh = std::make_unique<HeuristicPlan>();
    if (plan != nullptr) fresh->deps = plan->deps;
    for (const Dep& d : r.deps) {
      if (std::find(fresh->deps.begin(), fresh->deps.end(), d) == fresh->deps.end()) {
        fresh->deps.push_back(d);
      }
    }
    std::sort(fresh->deps.begin(), fresh->deps.end(), [](const Dep& a, const Dep& b) {
      return a.param != b.param ? a.param < b.param : a.aspect < b.aspect;
    });
    plan = fresh.get();
    h.plans.push_back(std::move(fresh));  // older plans stay alive for readers
  }
  MemoKey key;
  heuristic_memo_key(*plan, f, key);
  if (!key.overflow) {
    uint64_t v[2];
    std::memcpy(v, &r.value, sizeof(v));
    plan->memo.insert(key, key.hash(), v);
  }
  h.plan.store(plan, std::memory_order_release);
  if (!covered) invalidate_call_memo(k.call_memo.get());
}

// A choice a source holds for a key (a bundle's), kept for recording (unless the resolutions
// were forgotten since `epoch`). Caller holds t.mu.
void publish_decision(const KernelState& k, TuneLayer& t, ChoiceDecision& r, uint64_t epoch) {
  if (!still_current(epoch)) return;
  finish_choice(k, *r.choice);
  std::vector<uint64_t> words{r.target};
  words.insert(words.end(), r.key.w, r.key.w + r.key.n);
  if (!t.recorded.emplace(std::move(words), r.choice.get()).second) return;  // known: kept
  const uint64_t stored[2] = {reinterpret_cast<uintptr_t>(r.choice.get()), 0};
  t.memo.insert(r.key, r.key.hash(), stored);
  t.choices.push_back(std::move(r.choice));
}

const Choice* memo_choice(const TuneLayer& t, const MemoKey& key, uint64_t hash) {
  uint64_t v[2];
  if (key.overflow || !t.memo.find(key, hash, v)) return nullptr;
  return reinterpret_cast<const Choice*>(static_cast<uintptr_t>(v[0]));
}

// Tuning one key: the first source that tunes it; published in the layer's memo.
class TuneBuild final : public OncePerKey::Build {
 public:
  TuneBuild(KernelState& k, TuneLayer& t, const Frame& f, const MemoKey& key, uint64_t hash)
      : k_(k), t_(t), f_(f), key_(key), hash_(hash) {}
  void* find() override { return const_cast<Choice*>(memo_choice(t_, key_, hash_)); }
  void make() override {
    if (!ask([&](KernelSource& s) { return (made_ = s.tune(k_, t_, f_, key_)) != nullptr; })) {
      throw_needs_jit(k_, "the tuned configuration for this tuning key");
    }
  }
  void* publish(bool keep) override {
    finish_choice(k_, *made_);
    Choice* raw = made_.get();
    t_.choices.push_back(std::move(made_));
    // Not memoised when the resolutions were forgotten meanwhile: its callers get the choice.
    if (!key_.overflow && keep) {
      const uint64_t v[2] = {static_cast<uint64_t>(reinterpret_cast<uintptr_t>(raw)), 0};
      t_.memo.insert(key_, hash_, v);
    }
    return raw;
  }

 private:
  KernelState& k_;
  TuneLayer& t_;
  const Frame& f_;
  const MemoKey& key_;
  uint64_t hash_;
  std::unique_ptr<Choice> made_;
};

}  // namespace

void register_source(SourceSlot slot, KernelSource* s) {
  KernelSource* expected = nullptr;
  if (!g_sources[static_cast<size_t>(slot)].compare_exchange_strong(expected, s,
                                                                    std::memory_order_acq_rel)) {
    TE_ICHECK(expected == s) << "a second kernel source registered itself in one slot (two "
                             << "copies of libtriton_embed.so loaded into one process?)";
  }
}

KernelSource* source(SourceSlot slot) noexcept {
  return g_sources[static_cast<size_t>(slot)].load(std::memory_order_acquire);
}

KernelState* load_kernel(std::string_view module, std::string_view name) {
  if (KernelState* k = find_kernel(std::string(module), std::string(name))) return k;
  KernelState* found = nullptr;
  if (ask([&](KernelSource& s) { return (found = s.load_kernel(module, name)) != nullptr; })) {
    return found;
  }
  TE_THROW(NotInBundleError) << "cannot load kernel " << module << "." << name
                             << ": no kernel bundle holds it; " << kLinkTheJit;
}

bool heuristic_expression_value(KernelState& k, const Heuristic& h, const Frame& f,
                                HeuristicValue& out, bool raise_faults) {
  if (h.expr.empty()) return false;
  uint64_t given[2];
  f.given_mask(given);
  const expr::Result r = expr::evaluate(h.expr, f.vals, f.np, given);
  if (r.fault == expr::Fault::kUnmodelled) return false;
  if (r.fault != expr::Fault::kNone) {
    if (!raise_faults) return false;
    const std::string what =
        full_name(k) + ": heuristic '" + h.name + "' (" + h.expr.str(param_names(k)) + ")";
    expr::raise(r.fault, what, r.what);
  }
  if (!expr::to_arg(r.value, &out.value)) return false;
  if (out.value.kind == ArgKind::kStr) {
    // Kept with the kernel: the memo holds it beyond this call.
    std::lock_guard<std::mutex> lock(k.values_mu);
    k.value_strings.emplace_back(out.value.s, out.value.count);
    out.value.s = k.value_strings.back().c_str();
  }
  out.deps.clear();
  for (const expr::Program::Read& read : h.expr.reads()) {
    out.deps.push_back(Dep{read.param, read.dtype ? Aspect::kDType : Aspect::kValue});
  }
  out.memo = true;
  return true;
}

ArgValue eval_heuristic(KernelState& k, Heuristic& h, const Frame& f) {
  ArgValue out;
  const uint64_t epoch = resolved_epoch();
  // A precompile's value is used, not kept: Triton's benchmark runs the heuristic itself, and
  // a process that tunes in parallel memoises and records what one tuning serially would.
  const bool keep = f.mode != FrameMode::kPrecompile;
  // With the JIT layer, the heuristic's expression when the user asked for expressions: no
  // Python. What the expression cannot compute (a fault, a value beyond what it models) goes
  // to Python, which gives its own result or raises its own exception.
  if (!h.expr.empty() && jit_linked() &&
      heuristic_evaluation() == HeuristicEvaluation::kExpressions) {
    HeuristicValue v;
    if (heuristic_expression_value(k, h, f, v, /*raise_faults=*/false)) {
      if (keep) {
        publish_heuristic(k, h, f, v, epoch);
        record_heuristic(h, f, v.value);
      }
      return v.value;
    }
  }
  const bool found = ask([&](KernelSource& s) {
    std::vector<HeuristicDecision> known;
    if (s.heuristic_decisions(k, epoch, known)) {
      for (HeuristicDecision& r : known) publish_decision(k, r, epoch);
      if (memo_value(h.plan.load(std::memory_order_acquire), f, out)) return true;
    }
    HeuristicValue v;
    if (!s.eval_heuristic(k, h, f, v)) return false;
    if (keep) {
      publish_heuristic(k, h, f, v, epoch);
      record_heuristic(h, f, v.value);
    }
    out = v.value;
    return true;
  });
  if (!found) {
    throw_needs_jit(k, ("the value of heuristic '" + h.name + "' for these arguments").c_str());
  }
  return out;
}

const Choice* decided_choice(KernelState& k, TuneLayer& t, const MemoKey& key, uint64_t hash) {
  if (key.overflow) return nullptr;
  const uint32_t target = current_target_code();
  const size_t layer = layer_index(k, t);
  const uint64_t epoch = resolved_epoch();
  const Choice* c = nullptr;
  ask([&](KernelSource& s) {
    std::vector<ChoiceDecision> known;
    if (!s.choice_decisions(k, layer, target, epoch, known)) return false;
    std::lock_guard<std::mutex> lock(t.mu);
    for (ChoiceDecision& r : known) publish_decision(k, t, r, epoch);
    return (c = memo_choice(t, key, hash)) != nullptr;
  });
  return c;
}

const Choice* tune(KernelState& k, TuneLayer& t, const Frame& f, const MemoKey& key,
                   uint64_t hash) {
  const uint64_t epoch = resolved_epoch();
  // The choices the sources hold (bundles') first.
  if (const Choice* c = decided_choice(k, t, key, hash)) return c;
  TuneBuild build(k, t, f, key, hash);
  const auto* c =
      static_cast<const Choice*>(t.tuning.get(t.mu, 0, key.w, key.n, hash, build, !key.overflow));
  // The target it was tuned for; a choice a tuning rule gave this key is not noted.
  record_choice(t, f, key, c->by_rule ? 0 : current_target_code(), c, epoch);
  return c;
}

namespace {

// The choices of configs `ids` (source s's) on options `base`, each made once per layer.
std::vector<const Choice*> choices_of(KernelSource& s, KernelState& k, TuneLayer& t,
                                      const std::vector<uint64_t>& ids,
                                      const InternedOptions* base) {
  std::vector<const Choice*> out;
  for (uint64_t id : ids) {
    const Choice* c = nullptr;
    {
      std::lock_guard<std::mutex> lock(t.mu);
      for (const auto& [cfg, opt, choice] : t.config_choices) {
        if (cfg == id && opt == base->id) c = choice.get();
      }
    }
    if (c == nullptr) {
      std::unique_ptr<Choice> made = s.config_choice(k, t, id, *base);
      finish_choice(k, *made);
      c = made.get();
      std::lock_guard<std::mutex> lock(t.mu);
      t.config_choices.emplace_back(id, base->id, std::move(made));
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

bool compiles_elsewhere(const KernelState* k) {
  KernelSource* jit = source(SourceSlot::kJit);
  return jit != nullptr && jit->compiles_elsewhere(*k);
}

size_t layer_index(const KernelState& k, const TuneLayer& t) {
  for (size_t i = 0; i < k.layers.size(); ++i) {
    if (k.layers[i]->tune.get() == &t) return i;
  }
  TE_ICHECK(false) << "an autotune layer not of its kernel";
  return 0;
}

std::vector<const Choice*> pruned_choices(KernelState& k, TuneLayer& t, const Frame& f) {
  const InternedOptions* base = f.options != nullptr ? f.options : intern_options(Options());
  std::vector<const Choice*> out;
  const bool found = ask([&](KernelSource& s) {
    std::vector<uint64_t> ids;
    if (!s.pruned_configs(k, t, f, *base, ids)) return false;
    out = choices_of(s, k, t, ids, base);
    return true;
  });
  if (!found) throw_needs_jit(k, "the list of pruned configurations for these arguments");
  return out;
}

std::vector<const Choice*> config_choices(KernelState& k, TuneLayer& t, const Frame& f,
                                          const std::vector<uint64_t>& ids) {
  const InternedOptions* base = f.options != nullptr ? f.options : intern_options(Options());
  KernelSource* jit = source(SourceSlot::kJit);
  TE_ICHECK(jit != nullptr) << full_name(k) << ": configs named without the JIT layer";
  return choices_of(*jit, k, t, ids, base);
}

std::vector<HookedBlock> run_config_pre_hook(KernelState& k, const TuneLayer& t, const Choice& c,
                                             const Frame& f) {
  std::vector<HookedBlock> out;
  if (ask([&](KernelSource& s) { return s.run_config_pre_hook(k, t, c, f, out); })) return out;
  TE_THROW(NotSupportedError) << full_name(k) << ": the chosen autotune config "
                              << c.result.best.str << " has a pre_hook that runs in Python only ("
                              << c.hook_why << "); this program links triton_embed::runtime "
                              << "only: link triton_embed::triton_embed, or write the hook in "
                              << "the forms the runtime applies (docs/bundle_format.md)";
}

void interpret(KernelState* kernel, const GridSpec& grid, const ArgValue* args, size_t nargs) {
  if (ask([&](KernelSource& s) { return s.interpret(kernel, grid, args, nargs); })) return;
  TE_THROW(NotSupportedError) << full_name(*kernel) << ": running a kernel through Triton's "
                              << "interpreter (CPU tensors, JitFunction::interpret) needs Python; "
                              << "this program links triton_embed::runtime only: link "
                              << "triton_embed::triton_embed";
}

}  // namespace triton_embed::detail
