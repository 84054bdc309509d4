// Calls with named arguments and calls of wrapped kernels (@triton.heuristics,
// @triton.autotune), core/launch_call.h. On a memo hit this is C++ only: bind the call into a
// frame, apply each layer from its memo, fill the defaults, launch the inner kernel as any
// other. A wrapped kernel's positional call that its layers resolved before is found in the
// memo of whole calls (core/layers.h CallMemo) and launched without a walk.

#include "core/launch_call.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/bind.h"
#include "core/call_hooks.h"
#include "core/kernel_state.h"
#include "core/pack.h"
#include "core/pre_hooks.h"
#include "core/reclaim.h"
#include "core/registry.h"
#include "core/target.h"
#include "core/tensor_map.h"
#include "core/walk.h"
#include "cuda/driver.h"

namespace triton_embed::detail {

namespace {

bool plain_positional(const KernelState& k, const CallArgs& call, ArgValue* out) noexcept {
  const size_t np = k.params.size();
  const size_t npos = call.npos;
  if (np > 64 || npos > np || (call.nnamed != 0 && npos == np)) return false;
  for (size_t i = 0; i < npos; ++i) out[i] = call.vals[i];
  uint64_t given = npos == 64 ? ~uint64_t{0} : (uint64_t{1} << npos) - 1;
  const uint64_t* hashes = k.name_hashes.data();
  // Names usually come in parameter order: each search starts after the last match and
  // wraps within the parameters not given by position (a name of one of those is an error,
  // which the general binder raises).
  size_t at = npos;
  for (uint32_t j = 0; j < call.nnamed; ++j) {
    const ArgName& name = call.names[j];
    size_t p = at;
    for (size_t left = np - npos; hashes[p] != name.hash; p = p + 1 == np ? npos : p + 1) {
      if (--left == 0) return false;
    }
    const std::string& pn = k.params[p].name;
    const uint64_t bit = uint64_t{1} << p;
    if (pn.size() != name.size || !same_bytes(pn.data(), name.data, name.size) ||
        (given & bit) != 0) {
      return false;
    }
    given |= bit;
    out[p] = call.vals[npos + j];
    at = p + 1 == np ? npos : p + 1;
  }
  for (size_t p = npos; p < np; ++p) {
    if ((given >> p & 1) != 0) continue;
    if (!k.params[p].has_default) return false;
    out[p] = k.defaults[p];
  }
  return true;
}

KernelState& inner_of(KernelState* k) { return k->inner != nullptr ? *k->inner : *k; }

// ---- whole positional calls, memoised ----------------------------------------------------

inline bool has_bit(const uint64_t* m, uint32_t p) noexcept {
  return ((m[p >> 6] >> (p & 63)) & 1) != 0;
}

// The memo key of a positional call under `plan`, and the call's packed runtime arguments;
// false for a call the memo cannot take (the walk handles it, and raises what it raises).
inline bool call_memo_key(const KernelState& inner, const CallPlan& plan, const CallArgs& call,
                          uint32_t target, const InternedOptions* options, MemoKey& key,
                          uint64_t* slots, uint32_t* np, DescSlots& descs) {
  if (TE_UNLIKELY(call.npos > inner.specs.size())) return false;
  Key spec;
  if (!key_and_pack_first(inner, call.vals, call.npos, spec, slots, np, &descs)) return false;
  key.push(plan.epoch);
  key.push(static_cast<uint64_t>(call.npos) | static_cast<uint64_t>(target) << 32);
  key.push(options != nullptr ? options->id : ~uint64_t{0});
  for (uint32_t i = 0; i < spec.n; ++i) key.push(spec.w[i]);
  for (uint32_t p = 0; p < call.npos; ++p) {
    if (!has_bit(plan.exact, p)) continue;
    const ArgValue& v = call.vals[p];
    // Pointers, None and constexprs: the specialisation words hold all of them.
    if (v.kind == ArgKind::kPointer || v.kind == ArgKind::kNone || inner.specs[p].is_constexpr) {
      continue;
    }
    if (v.kind == ArgKind::kTensorDesc) return false;  // a layer reads its fields: no key
    key.push(static_cast<uint64_t>(p) | static_cast<uint64_t>(v.kind) << 8 |
             static_cast<uint64_t>(v.dtype) << 16 | static_cast<uint64_t>(v.big) << 24);
    key.push(v.u);
  }
  return !key.overflow;
}

// The inner cache entry and packed arguments of a memoised call, or nullptr. Its descriptors
// (descs) are the call's own, to be packed with the entry's metadata.
inline Entry* find_memoised(KernelState& k, const InternedOptions* options, const CallArgs& call,
                            uint32_t target, uint64_t* slots, uint32_t* np, const CallTail** tail,
                            DescSlots& descs) {
  CallMemo& m = *k.call_memo;
  const CallPlan* plan = m.plan.load(std::memory_order_acquire);
  if (plan == nullptr || plan->epoch != m.epoch.load(std::memory_order_acquire)) return nullptr;
  MemoKey key;
  if (!call_memo_key(inner_of(&k), *plan, call, target, options, key, slots, np, descs)) {
    return nullptr;
  }
  uint64_t v[2];
  if (!m.table.find(key, key.hash(), v)) return nullptr;
  *tail = reinterpret_cast<const CallTail*>(static_cast<uintptr_t>(v[1]));
  Entry* e = reinterpret_cast<Entry*>(static_cast<uintptr_t>(v[0]));
  if (TE_UNLIKELY(e->packs_ones))
    *np = insert_ones(e->one_slots.data(), e->one_slots.size(), slots, *np);
  return e;
}

// After a walk that launched a positional call (at any site): memoises it when its layers
// read only what a key holds and the inner kernel's packed arguments are the call's own.
void remember_call(KernelState& k, const InternedOptions* options, const CallArgs& call,
                   const Frame& f, const Walk& w, uint32_t target) {
  if (!w.memo_ok || call.nnamed != 0 || target == 0 || f.options == nullptr || !k.call_memo) return;
  KernelState& inner = inner_of(&k);
  CallMemo& m = *k.call_memo;
  std::lock_guard<std::mutex> lock(m.mu);
  if (!still_current(w.epoch)) return;  // forgotten while it walked (bundles unloaded)
  CallPlan cp;
  cp.epoch = m.epoch.load(std::memory_order_acquire);
  for (const auto& layer : k.layers) {
    if (layer->kind == Layer::Kind::kHeuristics) {
      for (const auto& h : layer->heuristics) {
        const HeuristicPlan* hp = h->plan.load(std::memory_order_acquire);
        if (hp == nullptr) return;  // it runs Python every time
        for (const Dep& d : hp->deps) {
          if (d.aspect == Aspect::kAddress) return;  // an address: every call differs
          if (d.aspect == Aspect::kValue && d.param < call.npos) {
            cp.exact[d.param >> 6] |= uint64_t{1} << (d.param & 63);
          }
        }
      }
    } else {
      for (int p : layer->tune->key_params) {
        if (p >= 0 && static_cast<uint32_t>(p) < call.npos) {
          cp.exact[p >> 6] |= uint64_t{1} << (p & 63);
        }
      }
    }
  }
  MemoKey key;
  uint64_t slots[kMaxLeaves + 2];
  uint32_t np = 0;
  DescSlots descs;
  if (!call_memo_key(inner, cp, call, target, options, key, slots, &np, descs)) return;
  // The entry the walk used, and the inner kernel's packed arguments: the call's own, its
  // descriptors the call's or copies with the block shapes the pre-hook set (a hit packs the
  // call's own: a map takes its box from the entry, so the same)?
  Key ik;
  uint64_t islots[kMaxLeaves + 2];
  uint32_t inp = 0;
  DescSlots idescs;
  if (!key_and_pack(inner, f.vals, ik, islots, &inp, &idescs)) return;
  if (inp != np || std::memcmp(islots, slots, np * sizeof(uint64_t)) != 0) return;
  if (idescs.n != descs.n) return;
  for (uint32_t i = 0; i < descs.n; ++i) {
    if (idescs.param[i] != descs.param[i] || idescs.at[i] != descs.at[i]) return;
    if (idescs.desc[i] == descs.desc[i]) continue;
    bool hooked = false;
    for (uint32_t b = 0; w.hook != nullptr && b < w.hook->num_blocks; ++b) {
      hooked = hooked || w.hook->blocks[b].param == descs.param[i];
    }
    if (!hooked) return;
  }
  ik.target = target;
  ik.options = f.options->id;
  Entry* e = inner.cache.table.find(ik, ik.hash());
  if (e == nullptr || (e->packs_ones && descs.n != 0)) return;
  // The values after the given ones (for a grid callable's Meta), interned.
  const CallTail* tail = nullptr;
  const std::vector<std::pair<uint32_t, const Choice*>> chosen(w.chosen, w.chosen + w.num_chosen);
  for (const auto& t : m.tails) {
    if (t->vals.size() == f.np - call.npos &&
        std::memcmp(static_cast<const void*>(t->vals.data()), f.vals + call.npos,
                    t->vals.size() * sizeof(ArgValue)) == 0 &&
        t->chosen == chosen && t->hook == w.hook) {
      tail = t.get();
      break;
    }
  }
  if (tail == nullptr) {
    auto fresh = std::make_unique<CallTail>();
    fresh->vals.assign(f.vals + call.npos, f.vals + f.np);
    fresh->chosen = chosen;
    fresh->hook = w.hook;
    tail = fresh.get();
    m.tails.push_back(std::move(fresh));
  }
  const CallPlan* current = m.plan.load(std::memory_order_relaxed);
  if (current == nullptr || current->epoch != cp.epoch || current->exact[0] != cp.exact[0] ||
      current->exact[1] != cp.exact[1]) {
    m.plans.push_back(std::make_unique<CallPlan>(cp));
    m.plan.store(m.plans.back().get(), std::memory_order_release);
  }
  const uint64_t v[2] = {reinterpret_cast<uintptr_t>(e), reinterpret_cast<uintptr_t>(tail)};
  m.table.insert(key, key.hash(), v);
}

// What a hit of the memo of whole calls tells the call's observer: what the walk told it.
void tell_memoised(const CallObserver& o, const CallTail& tail) {
  for (const auto& [layer, choice] : tail.chosen) o.chose(o.ctx, layer, choice);
  if (tail.hook != nullptr) tell_hooked(o, *tail.hook);
}

void start(KernelState* kernel, const InternedOptions* options, const CallArgs& call,
           FrameMode mode, const GridSpec* grid, Walk& w, const LaunchSite* site = nullptr,
           uint32_t target = 0) {
  const ReadSection reading;  // compile_call and the others below
  Frame f;
  f.options = options;
  f.mode = mode;
  f.site = site;
  f.grid = site != nullptr ? site->grid : grid;
  f.stream = site != nullptr ? site->stream : nullptr;
  bind_frame(*kernel, call, f);
  const bool memo = target != 0 && call.nnamed == 0;
  if (memo) w.epoch = resolved_epoch();
  walk(w, 0, f);
  if (memo) remember_call(*kernel, options, call, f, w, target);
}

}  // namespace

void launch_call_at(KernelState* kernel, const InternedOptions* options, const LaunchSite& site,
                    const CallArgs& call) {
  const ReadSection reading;
  if (kernel->layers.empty()) {
    // A plain kernel's named call: its positional equivalent, launched the plain way.
    ArgValue vals[kMaxArgs];
    if (TE_LIKELY(plain_positional(*kernel, call, vals))) {
      launch_plain(kernel, options, site, vals, kernel->params.size());
      return;
    }
  }
  // The memo of whole calls: at a launch site (with a driver) for the current context's
  // target; at a capturing site for the explicit one (none: the walk raises).
  uint32_t target = 0;
  const cuda::ContextInfo* ctx = nullptr;
  if (call.nnamed == 0 && kernel->call_memo) {
    if (site.capture != nullptr) {
      target = explicit_target_code();
    } else if (cuda::api().ok) {
      ctx = &cuda::current_context();
      target = launch_target_code(ctx->arch);
    }
  }
  if (target != 0) {
    uint64_t slots[kMaxLeaves + 2];
    uint32_t np = 0;
    const CallTail* tail = nullptr;
    DescSlots descs;
    if (Entry* e = find_memoised(*kernel, options, call, target, slots, &np, &tail, descs)) {
      if (TE_UNLIKELY(call.hooks != nullptr) && call.hooks->observer != nullptr) {
        tell_memoised(*call.hooks->observer, *tail);
      }
      KernelState& inner = inner_of(kernel);
      ArgValue all[kMaxArgs];
      const ArgValue* meta_args = nullptr;
      if (ctx != nullptr && site.grid->fn != nullptr) {
        std::memcpy(static_cast<void*>(all), call.vals, call.npos * sizeof(ArgValue));
        std::memcpy(static_cast<void*>(all + call.npos), tail->vals.data(),
                    tail->vals.size() * sizeof(ArgValue));
        meta_args = all;
      }
      if (TE_UNLIKELY(descs.n != 0)) {
        launch_with_descriptors(&inner, e, site, ctx, meta_args, descs, slots, np,
                                Found::kCallMemo);
        return;
      }
      if (ctx == nullptr) {
        capture_at(site, inner, e, slots, np, Found::kCallMemo);
        return;
      }
      void* params[kMaxLeaves + 2];
      for (uint32_t i = 0; i < np; ++i) params[i] = &slots[i];
      launch_entry(&inner, e, *ctx, *site.grid, site.stream, meta_args, slots, params, np);
      return;
    }
  }
  Walk w{*kernel, inner_of(kernel)};
  start(kernel, options, call, FrameMode::kLaunch, nullptr, w, &site, target);
}

void launch_call(KernelState* kernel, const InternedOptions* options, const GridSpec& grid,
                 Stream stream, const CallArgs& call) {
  launch_call_at(kernel, options, LaunchSite{&grid, stream}, call);
}

const CompiledKernel& compile_call(KernelState* kernel, const InternedOptions* options,
                                   const CallArgs& call, const GridSpec* prepare_grid) {
  Walk w{*kernel, inner_of(kernel)};
  start(kernel, options, call, prepare_grid != nullptr ? FrameMode::kPrepare : FrameMode::kCompile,
        prepare_grid, w);
  return *w.compiled;
}

std::vector<const CompiledKernel*> warmup_call(KernelState* kernel, const InternedOptions* options,
                                               const CallArgs& call) {
  std::vector<const CompiledKernel*> all;
  Walk w{*kernel, inner_of(kernel)};
  w.all = &all;
  start(kernel, options, call, FrameMode::kWarmup, nullptr, w);
  return all;
}

void precompile_call(KernelState* kernel, const InternedOptions* options, const CallArgs& call,
                     PendingCompiles* pending) {
  Walk w{*kernel, inner_of(kernel)};
  w.pending = pending;
  start(kernel, options, call, FrameMode::kPrecompile, nullptr, w);
}

const TuningResult* tuning_result_call(KernelState* kernel, const InternedOptions* options,
                                       const CallArgs& call) {
  Walk w{*kernel, inner_of(kernel)};
  start(kernel, options, call, FrameMode::kQuery, nullptr, w);
  TE_CHECK(w.found_tuner, ValueError)
      << full_name(*kernel) << " is not wrapped in @triton.autotune; it has no tuning result";
  return w.result;
}

void interpret_call(KernelState* kernel, const GridSpec& grid, const CallArgs& call) {
  Walk w{*kernel, inner_of(kernel)};
  start(kernel, nullptr, call, FrameMode::kInterpret, &grid, w);
}

}  // namespace triton_embed::detail
