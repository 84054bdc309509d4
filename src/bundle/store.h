#pragma once

// The bundles a process has loaded (from TRITON_EMBED_BUNDLE, load_bundle() or embedded in
// the executable), each with its index of entries, and the helpers every use of them shares
// (same_kernel, where). What the launch path asks of them is answered by the bundle source
// (bundle_source.cc, with lookup.cc and tune_by_rule.cc); recording the process's own kernels
// is record.h's. Slow paths only: a kernel's first load and a cache or memo miss look here, a
// hit never does.

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "bundle/entry_index.h"
#include "bundle/file_reader.h"
#include "bundle/format.h"
#include "core/kernel_state.h"

namespace triton_embed::detail::bundle {

// Loads the files named by TRITON_EMBED_BUNDLE (':'-separated), once per process; a file that
// cannot be read is a BundleError (nothing of it is loaded).
void load_from_environment();

// Adds an opened bundle to the process's.
void add(Bundle b);

// Unloads every bundle (TRITON_EMBED_BUNDLE's, embedded ones and those load_bundle() added),
// then has the runtime forget what every kernel resolved (core/registry.h).
void unload_all();

// The loaded bundles, and what each kernel's memos have taken of them; `mu` guards it all.
struct Store {
  std::mutex mu;
  // In load order. What the runtime takes from a bundle is a copy (entries, parameter tables,
  // decisions): nothing points into one once the store's lock is released.
  std::deque<Bundle> bundles;
  std::deque<EntryIndex> indexes;  // indexes[i] is bundles[i]'s
  bool env_loaded = false;
  // How many of the bundles (in load order) have put their decisions into a kernel's
  // heuristic memos, and into an autotune layer's memo for a target: a bundle loaded later
  // is applied on the next miss.
  std::map<const KernelState*, size_t> heuristics_applied;
  std::map<std::pair<const TuneLayer*, uint32_t>, size_t> choices_applied;
};

// The process's store (never destroyed).
Store& store();

// Whether bundle kernel `kv` is kernel `k`.
inline bool same_kernel(const KernelView& kv, const KernelState& k) {
  if (kv.module != k.module || kv.name != k.name) return false;
  // A kernel whose source the JIT layer read is matched on its source hash too, so that a
  // bundle made from another version of the kernel is never launched in its place.
  return k.source_hash.empty() || kv.source_hash.empty() || kv.source_hash == k.source_hash;
}

// "bundle NAME: kernel MODULE.NAME", for messages.
std::string where(const Bundle& b, const KernelView& kv);

}  // namespace triton_embed::detail::bundle
