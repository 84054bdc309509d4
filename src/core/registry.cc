#include "core/registry.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"

namespace triton_embed::detail {

namespace {
struct Registry {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<KernelState>> kernels;
};
Registry& registry() {
  static Registry* r = new Registry();  // never destroyed
  return *r;
}
}  // namespace

KernelState* find_kernel(const std::string& module, const std::string& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kernels.find(std::make_pair(module, key));
  return it == r.kernels.end() ? nullptr : it->second.get();
}

KernelState* insert_kernel(const std::string& module, const std::string& key,
                           std::unique_ptr<KernelState> kernel,
                           std::unique_ptr<KernelState>* loser) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto k = std::make_pair(module, key);
  auto it = r.kernels.find(k);
  if (it != r.kernels.end()) {
    *loser = std::move(kernel);
    return it->second.get();
  }
  KernelState* raw = kernel.get();
  r.kernels.emplace(std::move(k), std::move(kernel));
  return raw;
}

void for_each_kernel(const std::function<void(KernelState&)>& f) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [key, k] : r.kernels) f(*k);
}

namespace {

std::atomic<uint64_t> g_resolved_epoch{0};

// Unpublishes what k resolved, handing it to `retired` (freed once no launch reads it).
void forget_resolved(KernelState& k, Retired& retired) {
  {
    std::lock_guard<std::mutex> lock(k.cache.mu);
    k.cache.table.clear(retired);
    retired.add_entries(k.cache.entries);
    retired.add_entries(k.cache.retired);
  }
  for (const auto& layer : k.layers) {
    for (const auto& h : layer->heuristics) {
      std::lock_guard<std::mutex> lock(h->mu);
      if (HeuristicPlan* plan = h->plan.load(std::memory_order_relaxed)) plan->memo.clear();
      h->plan.store(nullptr, std::memory_order_release);  // the next source's records make it
      h->recorded.clear();
      h->recorded_plan = nullptr;
      retired.add_all(h->plans);
    }
    if (TuneLayer* t = layer->tune.get()) {
      std::lock_guard<std::mutex> lock(t->mu);
      t->memo.clear();
      t->recorded.clear();
      // A choice Python holds a triton.Config for (python/handles.h) stays: its address keys
      // that config.
      std::vector<std::unique_ptr<Choice>> kept;
      for (auto& c : t->choices) {
        if (c->python_config) kept.push_back(std::move(c));
      }
      retired.add_all(t->choices);
      t->choices = std::move(kept);
    }
  }
  if (CallMemo* m = k.call_memo.get()) {
    std::lock_guard<std::mutex> lock(m->mu);
    m->table.clear();
    invalidate_call_memo(m);
    m->plan.store(nullptr, std::memory_order_release);
    retired.add_all(m->plans);
    retired.add_all(m->tails);
  }
}

}  // namespace

uint64_t resolved_epoch() noexcept { return g_resolved_epoch.load(std::memory_order_acquire); }

Retired forget_resolved_kernels() {
  g_resolved_epoch.fetch_add(1, std::memory_order_acq_rel);  // odd: nothing resolved now is kept
  std::vector<KernelState*> all;  // states are never freed: forgotten outside the registry's lock
  for_each_kernel([&](KernelState& k) { all.push_back(&k); });
  Retired retired;
  for (KernelState* k : all) forget_resolved(*k, retired);
  g_resolved_epoch.fetch_add(1, std::memory_order_acq_rel);
  return retired;
}

std::string kernel_arg_where(const KernelState* kernel, size_t index) {
  return arg_where(*kernel, index);
}

}  // namespace triton_embed::detail
