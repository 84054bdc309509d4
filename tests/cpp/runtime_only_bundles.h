#pragma once

// The bundles the runtime-only suites load (test_runtime_only.cc,
// test_runtime_only_fallback.cc): one process runs them all, each suite with its own.

#include <triton_embed/bundle.h>

#include <initializer_list>
#include <string>

namespace te_runtime_only {

namespace te = triton_embed;

// The bundle the suite running loaded (its notices and messages name it).
inline std::string g_loaded;

// Makes `paths` the process's loaded bundles: every runtime-only suite runs in one process
// (CTest's test_runtime_only; the strict ones in runtime_only_strict), each with the bundles it
// loads, and what an earlier suite's bundles resolved is forgotten. A kernel's parameters stay
// from its first load; the first suite loads none, so that no kernel is known yet.
inline void use_bundles(std::initializer_list<std::string> paths) {
  te::unload_bundles();
  g_loaded.clear();
  for (const std::string& p : paths) {
    te::load_bundle(p);
    g_loaded = p;
  }
}

}  // namespace te_runtime_only
