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

// A kernel state for module.name made from the loaded bundles (its parameter table), or
// nullptr when none holds it. NotSupportedError for a kernel a bundle holds only as a wrapper
// (@triton.autotune / @triton.heuristics), whose decisions bundles do not hold yet.
std::unique_ptr<KernelState> make_kernel_state(std::string_view module, std::string_view name);

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
