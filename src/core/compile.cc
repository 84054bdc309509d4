// The cache-miss path: each missing key is built once across threads (by the JIT layer,
// core/jit_hooks.h) and published in the kernel's cache; a failed build is not cached.

#include "core/compile.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "bundle/store.h"
#include "core/arg_format.h"
#include "core/errors.h"
#include "core/jit_hooks.h"
#include "core/target.h"

namespace triton_embed::detail {

namespace {

// A miss that no loaded bundle holds, in a program with no JIT layer: nothing can build the
// entry. Says what was asked for and what the bundles hold of the kernel.
[[noreturn]] void throw_not_in_bundle(const KernelState& k, const InternedOptions& opts,
                                      const Key& key, const LeafList& leaves) {
  TE_THROW(NotInBundleError) << full_name(k) << " specialised as "
                             << specialized_signature(k, leaves) << " for "
                             << target_str(key.target)
                             << (opts.options.empty() ? "" : " with " + opts.options.str())
                             << " is in no kernel bundle ("
                             << bundle::nearest_entries(k, key.target)
                             << ")\nthis program links triton_embed::runtime only, which "
                             << "compiles nothing: link triton_embed::triton_embed to compile it "
                             << "with Triton on first use, or build a kernel bundle that holds "
                             << "this specialisation";
}

}  // namespace

Entry* compile_entry(KernelState& k, const InternedOptions& opts, const Key& key, uint64_t h,
                     const ArgValue* args, const LeafList& leaves) {
  const JitHooks* hooks = jit_hooks();
  ReleaseGil no_gil;  // never wait on our mutex holding the GIL
  std::shared_ptr<Pending> mine;
  {
    std::unique_lock<std::mutex> lock(k.cache.mu);
    if (Entry* e = k.cache.table.find(key, h)) return e;
    for (const auto& p : k.cache.pending) {
      if (p->matches(key, h)) {
        std::shared_ptr<Pending> other = p;
        ++other->waiters;
        other->cv.wait(lock, [&] { return other->done; });
        --other->waiters;
        if (other->error) rethrow_copy(other->error);
        return other->entry;
      }
    }
    mine = std::make_shared<Pending>();
    mine->target = key.target;
    mine->options = key.options;
    mine->hash = h;
    mine->key_words.assign(key.w, key.w + key.n);
    k.cache.pending.push_back(mine);
  }

  std::unique_ptr<Entry> entry;
  std::exception_ptr error;
  try {
    // A loaded bundle's entry first (no compile), else Triton through the JIT layer.
    entry = bundle::make_entry(k, opts, key, h);
    if (!entry) {
      if (hooks == nullptr) throw_not_in_bundle(k, opts, key, leaves);
      entry = hooks->build_entry(k, opts, key, h, args, leaves);
      entry->process_local = key.process_local != 0;
    }
  } catch (...) {
    error = std::current_exception();
  }

  std::lock_guard<std::mutex> lock(k.cache.mu);
  Entry* raw = nullptr;
  if (!error) {
    try {
      raw = entry.get();
      k.cache.entries.push_back(std::move(entry));  // owned before it is published
      try {
        k.cache.table.insert(raw);  // may grow the table; nothing is published if it throws
      } catch (...) {
        k.cache.entries.pop_back();
        throw;
      }
    } catch (...) {
      raw = nullptr;
      error = std::current_exception();
    }
  }
  // Every waiter wakes with the entry or the error; a failure is not cached, so the next
  // call compiles again.
  auto& pending = k.cache.pending;
  pending.erase(std::remove(pending.begin(), pending.end(), mine), pending.end());
  mine->entry = raw;
  mine->error = error;
  mine->done = true;
  mine->cv.notify_all();
  if (error) rethrow_copy(error);
  return raw;
}

}  // namespace triton_embed::detail
