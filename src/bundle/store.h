#pragma once

// The bundles a process has loaded (from TRITON_EMBED_BUNDLE, load_bundle() or embedded in
// the executable), what the launch path asks of them, and recording the process's own
// compiled kernels into a bundle (TRITON_EMBED_RECORD, write_bundle()). Slow paths only: a
// kernel's first load and a cache miss look here, a cache hit never does.

#include <memory>
#include <string>
#include <string_view>

#include "bundle/format.h"
#include "core/cache.h"
#include "core/kernel_state.h"

namespace triton_embed::detail::bundle {

// Loads the files named by TRITON_EMBED_BUNDLE (':'-separated), once per process; a file that
// cannot be read is a BundleError (nothing of it is loaded).
void load_from_environment();

// Adds an opened bundle to the process's (kept until the process ends: entries point into it).
void add(Bundle b);

// Registers and returns the state of kernel module.name made from the first loaded bundle
// that holds it (its parameter table; for a wrapped kernel also its layers and its inner
// state: the layers' decisions are read on their first misses), or nullptr when none holds
// it. For programs without the JIT layer.
KernelState* load_kernel(std::string_view module, std::string_view name);

// The result the loaded bundles hold for heuristic h of kernel k on frame f (for programs
// without the JIT layer); false when none does. Bundles loaded since the last call put their
// results in k's heuristic memos first.
bool bundled_heuristic(KernelState& k, Heuristic& h, const Frame& f, ArgValue& out);

// The choice the loaded bundles hold for tuning key `key` of autotune layer `t` of kernel k,
// for the current target (explicit, else the current device's), or nullptr. Bundles loaded
// since the last call for this target put their choices for it in t's memo first. With `jit`, only a bundle
// kernel with k's source hash and the very same layers and configs serves, and choices whose
// config has a pre_hook are left to the JIT layer.
const Choice* bundled_choice(KernelState& k, TuneLayer& t, const MemoKey& key, uint64_t hash,
                             bool jit);

// The cache entry the loaded bundles hold for `key` of kernel `k` (same module, name and, when
// k knows it, source hash; same target, options and key words), or nullptr. The cubin is
// copied once, into the entry's CompiledKernel.
std::unique_ptr<detail::Entry> make_entry(const KernelState& k, const InternedOptions& options,
                                  const Key& key, uint64_t hash);

// What the loaded bundles hold of kernel k, for NotInBundleError: up to three entries, those
// for `target` first, one per line ("  cuda:90 num_warps=4: add_kernel(x_ptr: *fp32 D, ...)"),
// or a line that says no bundle holds the kernel at all.
std::string nearest_entries(const KernelState& k, uint32_t target);

// The plain kernels this process compiled or loaded, with every entry that can be replayed
// in another process (not those keyed on a Python object), as bundle contents.
Contents record();

// Writes TRITON_EMBED_RECORD at exit when it is set (registered on the first kernel load).
void record_at_exit_if_asked();

}  // namespace triton_embed::detail::bundle
