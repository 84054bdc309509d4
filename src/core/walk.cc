// The walk of a call through a wrapped kernel's layers (core/walk.h). On a memo hit this is
// C++ only: each layer from its memo, then the defaults and the inner kernel as any other.

#include "core/walk.h"

#include <atomic>
#include <cstring>
#include <string>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/bind.h"
#include "core/kernel_source.h"
#include "core/kernel_state.h"
#include "core/memo_keys.h"
#include "core/pre_hooks.h"
#include "core/workers.h"

namespace triton_embed::detail {

namespace {

ArgValue heuristic_value(KernelState& k, Heuristic& h, const Frame& f) {
  if (const HeuristicPlan* plan = h.plan.load(std::memory_order_acquire)) {
    MemoKey key;
    heuristic_memo_key(*plan, f, key);
    if (TE_LIKELY(!key.overflow)) {
      uint64_t v[2];
      if (plan->memo.find(key, key.hash(), v)) {
        ArgValue out;
        std::memcpy(static_cast<void*>(&out), v, sizeof(out));
        return out;
      }
    }
  }
  return eval_heuristic(k, h, f);
}

// The frame's options with an option heuristic's value set: a memo hit, or the slow path.
const InternedOptions* options_with(KernelState& k, Heuristic& h, Frame& f, const ArgValue& v) {
  f.heuristic_options |= h.option_bit;
  MemoKey key;
  key.push(f.options != nullptr ? f.options->id : ~uint64_t{0});
  encode_value(v, key);
  const uint64_t hash = key.hash();
  if (TE_LIKELY(!key.overflow)) {
    uint64_t out[2];
    if (h.option_memo.find(key, hash, out)) {
      return reinterpret_cast<const InternedOptions*>(static_cast<uintptr_t>(out[0]));
    }
  }
  return heuristic_options(k, h, f.options, v, key, hash);
}

[[noreturn]] void throw_option_conflict(const KernelState& k, uint32_t bits) {
  const char* name = (bits & kOptNumWarps) != 0    ? "num_warps"
                     : (bits & kOptNumCtas) != 0   ? "num_ctas"
                     : (bits & kOptNumStages) != 0 ? "num_stages"
                                                   : "maxnreg";
  TE_THROW(TypeError) << call_signature(k) << ": got multiple values for keyword argument '" << name
                      << "': a @triton.heuristics outside the autotuner sets it, and so "
                      << "does every autotune config";
}

void apply_choice(const KernelState& k, const Choice& c, Frame& f) {
  if (TE_UNLIKELY((f.heuristic_options & kOptMaxnreg) != 0 && c.result.best.maxnreg != 0)) {
    throw_option_conflict(k, kOptMaxnreg);
  }
  for (const auto& [p, v] : c.kwargs) {
    if (TE_UNLIKELY(f.given[p] != kAbsent)) {
      TE_THROW(ValueError) << call_signature(k)
                           << ": Conflicting meta-parameters: " << k.params[p].name
                           << ". Make sure that you don't re-define auto-tuned symbols.";
    }
    f.set_keyword(p, v, -1);
  }
  f.options = c.options;
}

const Choice* find_choice(KernelState& k, TuneLayer& t, const Frame& f, bool tune_on_miss) {
  MemoKey key;
  tuning_key(t, f, key);
  const uint64_t h = key.hash();
  if (TE_LIKELY(!key.overflow)) {
    uint64_t v[2];
    if (t.memo.find(key, h, v))
      return reinterpret_cast<const Choice*>(static_cast<uintptr_t>(v[0]));
  }
  if (!tune_on_miss) return decided_choice(k, t, key, h);
  return tune(k, t, f, key, h);
}

void finish(Walk& w, Frame& f) {
  // The inner JITFunction: defaults for what was not given, then the plain paths.
  const KernelState& k = w.outer;
  for (uint32_t p = 0; p < f.np; ++p) {
    if (f.given[p] != kAbsent) continue;
    if (TE_UNLIKELY(!k.params[p].has_default)) throw_missing(k, f, ParamMask{});
    f.vals[p] = k.defaults[p];
  }
  switch (f.mode) {
    case FrameMode::kLaunch:
      launch_plain(&w.inner, f.options, *f.site, f.vals, f.np);
      return;
    case FrameMode::kCompile:
      w.compiled = &compile(&w.inner, f.options, f.vals, f.np);
      return;
    case FrameMode::kPrepare:
      w.compiled = &prepare_kernel(&w.inner, f.options, f.vals, f.np);
      return;
    case FrameMode::kWarmup:
      w.all->push_back(&compile(&w.inner, f.options, f.vals, f.np));
      return;
    case FrameMode::kPrecompile:
      warm(&w.inner, f.options, f.vals, f.np, w.pending);
      return;
    case FrameMode::kInterpret:
      interpret(&w.inner, *f.grid, f.vals, f.np);
      return;
    case FrameMode::kQuery:
      return;
  }
}

// Layers li + 1.. of frame f once per config of autotune layer li (`choices`), the configs in
// parallel on the compile workers. A warmup compiles each config's call as Python's
// Autotuner.warmup does (without its pre_hook) and keeps the entries, in the configs' order; an
// error is the first config's that failed. A precompile warms each config's call (after its
// pre_hook, when the runtime applies it: the block shapes it sets are part of the call's
// specialisation) and gives up on a config that fails or whose hook only Python runs: the
// benchmark compiles it as it would have, and meets its error there. The compiles a precompile
// hands to compile worker processes go to (*per_config)[i] for config i when given, else to
// w.pending. Returns the configs compiled (or handed over).
size_t walk_configs(Walk& w, size_t li, const Frame& f, const std::vector<const Choice*>& choices,
                    std::vector<PendingCompiles>* per_config = nullptr) {
  KernelState& k = w.outer;
  const TuneLayer& t = *k.layers[li]->tune;
  const bool precompile = f.mode == FrameMode::kPrecompile;
  std::vector<std::vector<const CompiledKernel*>> compiled(choices.size());
  std::vector<PendingCompiles> handed;
  if (precompile && (per_config != nullptr || w.pending != nullptr)) {
    if (per_config == nullptr) per_config = &handed;
    per_config->assign(choices.size(), PendingCompiles());
  } else {
    per_config = nullptr;
  }
  std::atomic<size_t> done{0};
  run_jobs(choices.size(), [&](size_t i) {
    const Choice& c = *choices[i];
    Walk wi{w.outer, w.inner};
    wi.all = &compiled[i];
    wi.pending = per_config != nullptr ? &(*per_config)[i] : nullptr;
    wi.precompile_hooks = w.precompile_hooks;
    try {
      Frame g = f;
      apply_choice(k, c, g);
      HookedHold hold;  // until the config's walk returns
      if (precompile && w.precompile_hooks && c.pre_hook && !apply_pre_hook(wi, hold, k, t, c, g))
        return;
      walk(wi, li + 1, g);
      done.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      if (!precompile) throw;
    }
  });
  if (w.all != nullptr) {
    for (const auto& each : compiled) w.all->insert(w.all->end(), each.begin(), each.end());
  }
  if (per_config == &handed) {
    for (PendingCompiles& each : handed) {
      w.pending->insert(w.pending->end(), each.begin(), each.end());
    }
  }
  return done.load(std::memory_order_relaxed);
}

}  // namespace

size_t precompile_configs(KernelState& k, const TuneLayer& t, const Frame& f,
                          const std::vector<uint64_t>& config_ids,
                          std::vector<PendingCompiles>* pending) {
  const size_t li = layer_index(k, t);
  Walk w{k, k.inner != nullptr ? *k.inner : k};
  Frame g = f;
  g.mode = FrameMode::kPrecompile;
  g.site = nullptr;
  return walk_configs(w, li, g, config_choices(k, *k.layers[li]->tune, g, config_ids), pending);
}

void walk(Walk& w, size_t li, Frame& f) {
  KernelState& k = w.outer;
  if (li == k.layers.size()) {
    finish(w, f);
    return;
  }
  Layer& layer = *k.layers[li];
  if (layer.kind == Layer::Kind::kHeuristics) {
    // Heuristics.run: kwargs[v] = heur({**dict(zip(arg_names, args)), **kwargs}), in order.
    for (auto& h : layer.heuristics) {
      const ArgValue v = heuristic_value(k, *h, f);
      if (h->option) {
        f.options = options_with(k, *h, f, v);
        continue;
      }
      f.set_keyword(h->param, v, -1);  // one given by position was refused by bind_frame
    }
    walk(w, li + 1, f);
    return;
  }
  TuneLayer& t = *layer.tune;
  w.found_tuner = true;
  // Every triton.Config passes num_warps, num_ctas and num_stages to the kernel it runs.
  constexpr uint32_t kConfigSets = kOptNumWarps | kOptNumCtas | kOptNumStages;
  if (TE_UNLIKELY((f.heuristic_options & kConfigSets) != 0)) {
    throw_option_conflict(k, f.heuristic_options & kConfigSets);
  }
  switch (f.mode) {
    case FrameMode::kPrecompile:
      // A key whose choice is known (tuned, or from a bundle) is not tuned again: only the
      // choice's call is compiled.
      if (const Choice* c = find_choice(k, t, f, false)) {
        walk_configs(w, li, f, {c});
        return;
      }
      walk_configs(w, li, f, pruned_choices(k, t, f));
      return;
    case FrameMode::kWarmup: {
      // Autotuner.warmup compiles every pruned config: on the compile workers. Where the JIT
      // layer compiles in worker processes, all are handed there first; each config's compile
      // here then waits for its own and finds it in Triton's cache.
      const std::vector<const Choice*> choices = pruned_choices(k, t, f);
      if (choices.size() > 1 && compiles_elsewhere(&w.inner)) {
        PendingCompiles handed;
        Walk pre{w.outer, w.inner};
        pre.pending = &handed;
        pre.precompile_hooks = false;
        Frame g = f;
        g.mode = FrameMode::kPrecompile;
        walk_configs(pre, li, g, choices);
      }
      walk_configs(w, li, f, choices);
      return;
    }
    case FrameMode::kInterpret: {
      // The interpreter (for correctness, not speed) runs the first config without
      // benchmarking.
      Frame g = f;
      apply_choice(k, *pruned_choices(k, t, f).front(), g);
      walk(w, li + 1, g);
      return;
    }
    case FrameMode::kQuery: {
      const Choice* c = find_choice(k, t, f, false);
      w.result = c == nullptr ? nullptr : &c->result;
      return;
    }
    default:
      break;
  }
  const Choice* c = find_choice(k, t, f, true);
  for (int p : t.key_params) {
    // A tensor in the tuning key: Python compares the objects, so no key of ours holds it.
    if (p >= 0 && f.given[p] != kAbsent && f.vals[p].kind == ArgKind::kPointer) w.memo_ok = false;
  }
  if (f.mode == FrameMode::kLaunch) {
    if (w.num_chosen == Walk::kMaxChosen) w.memo_ok = false;
    if (w.memo_ok) w.chosen[w.num_chosen++] = {static_cast<uint32_t>(li), c};
    if (const CallObserver* o = observer_of(f)) o->chose(o->ctx, static_cast<uint32_t>(li), c);
  }
  apply_choice(k, *c, f);
  HookedHold hold;  // until the launch below returns
  if (c->pre_hook) apply_pre_hook(w, hold, k, t, *c, f);
  walk(w, li + 1, f);
}

const InternedOptions* heuristic_options(KernelState& k, Heuristic& h, const InternedOptions* base,
                                         const ArgValue& value, const MemoKey& key, uint64_t hash) {
  const ArgValue* v = &value;
  while (v->kind == ArgKind::kConstexpr) v = v->elems;
  Options opts;
  if (base != nullptr) {
    for (const auto& [n, o] : base->options.entries()) {
      if (n != h.name) opts.set(n, o);
    }
  }
  if (v->kind == ArgKind::kBool) {
    opts.set(h.name, v->i != 0);
  } else if (v->kind == ArgKind::kInt && !v->big) {
    opts.set(h.name, v->i);
  } else if (v->kind == ArgKind::kFloat) {
    opts.set(h.name, v->f);
  } else if (v->kind == ArgKind::kStr) {
    opts.set(h.name, std::string_view(v->s, v->count));
  } else if (v->kind != ArgKind::kNone) {  // None: Triton drops the option, its default applies
    TE_THROW(TypeError) << full_name(k) << ": heuristic '" << h.name << "' returned "
                        << describe_value(*v) << ", but '" << h.name
                        << "' is a Triton option: return a bool, int, float, str or None";
  }
  const InternedOptions* out = intern_options(opts);
  if (!key.overflow) {
    const uint64_t stored[2] = {reinterpret_cast<uintptr_t>(out), 0};
    std::lock_guard<std::mutex> lock(h.mu);
    h.option_memo.insert(key, hash, stored);
  }
  return out;
}

}  // namespace triton_embed::detail
