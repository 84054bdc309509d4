#pragma once

// The seam between the runtime (src/core, src/cuda: no Python) and the JIT layer above it
// (src/python: the interpreter, introspection, compiling, tuning).
//
// The runtime calls the JIT layer only through this table, and only on slow paths: loading a
// kernel that is not registered, a cache miss, a heuristic or tuning miss, Triton's
// interpreter, and initialize() / add_python_path() / runtime_info(). The JIT layer's
// library (libtriton_embed.so) registers the table from a static initialiser when it is
// loaded; a program linked to triton_embed::runtime only has none, and there these paths
// raise NotInBundleError (a kernel or a specialisation no bundle holds) or NotSupportedError
// (what needs Python). A cache hit never reads the table.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/layers.h"
#include "triton_embed/detail/export.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail {

struct Entry;
struct Key;
struct LeafList;
struct KernelState;

// What the JIT layer provides. Every member is set.
struct JitHooks {
  // Imports module.name and registers its state (and its inner kernel's, when wrapped).
  // Called after the registry missed. Throws LookupError, TypeError or PythonError.
  KernelState* (*load_kernel)(std::string_view module, std::string_view name);
  // Compiles the cache entry for `key` (not yet published; compile_entry publishes it).
  // Called once per key across threads, with no lock held and the GIL not held.
  std::unique_ptr<Entry> (*build_entry)(KernelState& kernel, const InternedOptions& options,
                                        const Key& key, uint64_t hash, const ArgValue* args,
                                        const LeafList& leaves);
  // Releases the GIL if the calling thread holds it (before the runtime waits on its own
  // locks); returns what restore_gil needs, nullptr when nothing was released.
  void* (*release_gil)();
  void (*restore_gil)(void* token);
  // The layers' slow paths (core/layers.h has the contracts).
  ArgValue (*eval_heuristic)(KernelState& k, Heuristic& h, const Frame& f);
  const Choice* (*tune)(KernelState& k, TuneLayer& t, const Frame& f, const MemoKey& key,
                        uint64_t hash);
  std::vector<const Choice*> (*pruned_choices)(KernelState& k, TuneLayer& t, const Frame& f);
  std::vector<HookedBlock> (*run_config_pre_hook)(KernelState& k, const TuneLayer& t,
                                                  const Choice& c, const Frame& f);
  // Runs the kernel through Triton's interpreter (detail::interpret in jit.h).
  void (*interpret)(KernelState* kernel, const GridSpec& grid, const ArgValue* args,
                    size_t nargs);
  // The Python side of initialize() (the runtime sets the target itself), add_python_path()
  // and runtime_info() (runtime.h).
  void (*initialize)(const RuntimeOptions& options);
  void (*add_python_path)(std::string_view dir);
  RuntimeInfo (*runtime_info)();
};

// Registers the JIT layer (once, from its library's static initialiser; the table must live
// as long as the process). A second, different table is an internal error.
TRITON_EMBED_API void set_jit_hooks(const JitHooks* hooks);

// The registered table, or nullptr in a runtime-only program. Slow paths only.
const JitHooks* jit_hooks() noexcept;

// Releases the GIL for a scope if this thread holds it (a no-op without the JIT layer), so
// the thread can wait on the runtime's locks without blocking a thread that needs the GIL.
class ReleaseGil {
 public:
  ReleaseGil();
  ~ReleaseGil();
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  const JitHooks* hooks_ = nullptr;
  void* token_ = nullptr;
};

}  // namespace triton_embed::detail
