// The store of loaded bundles (store.h): loading (TRITON_EMBED_BUNDLE, load_bundle(),
// embedded bundles) and unloading them.

#include "bundle/store.h"

#include <algorithm>
#include <cstdlib>

#include "bundle/validate.h"
#include "core/registry.h"
#include "triton_embed/bundle.h"

namespace triton_embed::detail::bundle {

Store& store() {
  static Store* s = new Store();  // never destroyed: threads may launch during exit
  return *s;
}

std::string where(const Bundle& b, const KernelView& kv) {
  return "bundle " + b.name() + ": kernel " + std::string(kv.module) + "." + std::string(kv.name);
}

void add(Bundle b) {
  check_whole(b);  // before anything of it is used: a refused bundle adds nothing
  EntryIndex index = index_entries(b.view());
  {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    s.indexes.push_back(std::move(index));
    try {
      s.bundles.push_back(std::move(b));
    } catch (...) {
      s.indexes.pop_back();  // the two stay in step
      throw;
    }
  }
  reclaim();  // what an earlier unload left to readers then, freed if they have let go since
}

void unload_all() {
  Retired forgotten;
  {
    // Under the store's lock throughout: no bundle is loaded, and no decision handed over,
    // while the runtime forgets (src/core/registry.cc takes only the locks of the tables it
    // clears).
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    s.env_loaded = true;  // TRITON_EMBED_BUNDLE's files are unloaded too, not loaded again
    s.bundles.clear();
    s.indexes.clear();
    s.heuristics_applied.clear();
    s.choices_applied.clear();
    forgotten = forget_resolved_kernels();
  }
  // Freed now if no thread is launching, else by a later load or unload (core/reclaim.h).
  retire(std::move(forgotten));
}

void load_from_environment() {
  Store& s = store();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.env_loaded) return;
    s.env_loaded = true;
  }
  const char* env = std::getenv("TRITON_EMBED_BUNDLE");
  if (env == nullptr || *env == '\0') return;
  std::string paths(env);
  size_t start = 0;
  while (start <= paths.size()) {
    const size_t end = std::min(paths.find(':', start), paths.size());
    if (end > start) add(Bundle::open(paths.substr(start, end - start)));
    start = end + 1;
  }
}

}  // namespace triton_embed::detail::bundle

namespace triton_embed {

void load_bundle(const std::string& path) {
  detail::bundle::add(detail::bundle::Bundle::open(path));
}

void load_bundle_from_memory(const void* data, size_t size, std::string_view name) {
  detail::bundle::add(detail::bundle::Bundle::from_memory(data, size, std::string(name)));
}

void unload_bundles() { detail::bundle::unload_all(); }

}  // namespace triton_embed
