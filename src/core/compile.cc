// The cache-miss path: each missing key is built once across threads (core/once.h) by the
// first kernel source that holds it (core/kernel_source.h: a loaded bundle, else the JIT layer) and
// published in the kernel's cache; a failed build is not cached.

#include "core/compile.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/kernel_source.h"
#include "core/once.h"
#include "core/target.h"

namespace triton_embed::detail {

namespace {

// The key as Cache::warmed holds it.
std::vector<uint64_t> warmed_id(const Key& key) {
  std::vector<uint64_t> id;
  id.reserve(key.n + 1);
  id.push_back(static_cast<uint64_t>(key.target) << 32 | key.options);
  id.insert(id.end(), key.w, key.w + key.n);
  return id;
}

// A miss that no loaded bundle holds, in a program with no JIT layer: nothing can build the
// entry. Says what was asked for and what the bundles hold of the kernel.
[[noreturn]] void throw_not_in_bundle(const KernelState& k, const InternedOptions& opts,
                                      const Key& key, const LeafList& leaves) {
  KernelSource* bundles = source(SourceSlot::kBundles);
  TE_THROW(NotInBundleError) << full_name(k) << " specialised as "
                             << specialized_signature(k, leaves) << " for "
                             << target_str(key.target)
                             << (opts.options.empty() ? "" : " with " + opts.options.str())
                             << " is in no kernel bundle ("
                             << (bundles != nullptr ? bundles->nearest_entries(k, opts, key, leaves)
                                                    : std::string())
                             << ")\nthis program links triton_embed::runtime only, which "
                             << "compiles nothing: link triton_embed::triton_embed to compile it "
                             << "with Triton on first use, or build a kernel bundle that holds "
                             << "this specialisation";
}

// Building one key: the first source that holds it; published in the kernel's cache.
class EntryBuild final : public OncePerKey::Build {
 public:
  EntryBuild(KernelState& k, const InternedOptions& opts, const Key& key, uint64_t hash,
             const ArgValue* args, const LeafList& leaves)
      : k_(k), opts_(opts), key_(key), hash_(hash), args_(args), leaves_(leaves) {}
  void* find() override { return k_.cache.table.find(key_, hash_); }
  void make() override {
    for (SourceSlot slot : {SourceSlot::kBundles, SourceSlot::kJit}) {
      KernelSource* s = source(slot);
      if (s == nullptr) continue;
      if (slot == SourceSlot::kJit) wait_for_warm();
      entry_ = s->build_entry(k_, opts_, key_, hash_, args_, leaves_);
      if (entry_) {
        entry_->process_local = key_.process_local != 0;
        return;
      }
    }
    throw_not_in_bundle(k_, opts_, key_, leaves_);
  }
  void* publish(bool keep) override {
    Entry* raw = entry_.get();
    if (!keep) {
      // The kernel's resolutions were forgotten meanwhile (bundles unloaded): its callers get
      // the entry, the cache does not keep it.
      k_.cache.retired.push_back(std::move(entry_));
      return raw;
    }
    k_.cache.entries.push_back(std::move(entry_));  // owned before it is published
    try {
      k_.cache.table.insert(raw);  // may grow the table; nothing is published if it throws
    } catch (...) {
      k_.cache.entries.pop_back();
      throw;
    }
    return raw;
  }

 private:
  // A compile of the key handed to another process (warm_entry): once it finished, the
  // source's compile below finds its result in Triton's cache.
  void wait_for_warm() {
    std::shared_ptr<PendingCompile> there;
    {
      std::lock_guard<std::mutex> lock(k_.cache.mu);
      if (k_.cache.warmed.empty()) return;
      const auto it = k_.cache.warmed.find(warmed_id(key_));
      if (it == k_.cache.warmed.end()) return;
      there = it->second;
    }
    if (there != nullptr) there->wait();
  }

  KernelState& k_;
  const InternedOptions& opts_;
  const Key& key_;
  uint64_t hash_;
  const ArgValue* args_;
  const LeafList& leaves_;
  std::unique_ptr<Entry> entry_;
};

}  // namespace

void warm_entry(KernelState& k, const InternedOptions& opts, const Key& key, uint64_t h,
                const ArgValue* args, const LeafList& leaves, PendingCompiles* pending) {
  if (k.cache.table.find(key, h) != nullptr) return;  // compiled and kept already
  KernelSource* jit = source(SourceSlot::kJit);
  if (jit == nullptr) return;  // nothing compiles here: a miss asks the bundles
  const std::vector<uint64_t> id = warmed_id(key);
  {
    std::lock_guard<std::mutex> lock(k.cache.mu);
    auto [it, inserted] = k.cache.warmed.try_emplace(id);
    if (!inserted) {
      const std::shared_ptr<PendingCompile>& there = it->second;
      // Warmed here, or handed to another process that is compiling it or compiled it.
      if (there == nullptr || !there->finished() || there->compiled()) {
        if (there != nullptr && pending != nullptr) pending->push_back(there);
        return;
      }
      it->second = nullptr;  // it failed there: warmed again
    }
  }
  std::shared_ptr<PendingCompile> elsewhere;
  try {
    jit->warm_entry(k, opts, key, args, leaves, pending != nullptr ? &elsewhere : nullptr);
  } catch (...) {
    std::lock_guard<std::mutex> lock(k.cache.mu);  // the next warm tries again
    k.cache.warmed.erase(id);
    throw;
  }
  if (elsewhere != nullptr) {
    {
      std::lock_guard<std::mutex> lock(k.cache.mu);
      k.cache.warmed[id] = elsewhere;
    }
    pending->push_back(std::move(elsewhere));
  }
}

Entry* resolve_entry(KernelState& k, const InternedOptions& opts, const Key& key, uint64_t h,
                     const ArgValue* args, const LeafList& leaves) {
  EntryBuild build(k, opts, key, h, args, leaves);
  const uint64_t head = static_cast<uint64_t>(key.target) << 32 | key.options;
  return static_cast<Entry*>(k.cache.building.get(k.cache.mu, head, key.w, key.n, h, build));
}

}  // namespace triton_embed::detail
