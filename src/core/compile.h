#pragma once

// The slow path: building a missing cache entry (through the kernel sources, core/kernel_source.h).
// Loading it into a context: core/module.h.

#include "core/cache.h"
#include "core/kernel_source.h"
#include "core/kernel_state.h"
#include "core/specialize.h"

namespace triton_embed::detail {

// The entry for `key`, compiled with Triton if needed. Threads that miss the same key wait
// for one build; a failed build is not cached. Releases the GIL while waiting. When no source
// holds it (a runtime-only program, no bundle entry): NotInBundleError.
Entry* resolve_entry(KernelState& kernel, const InternedOptions& options, const Key& key,
                     uint64_t hash, const ArgValue* args, const LeafList& leaves);

}  // namespace triton_embed::detail

namespace triton_embed::detail {

// Compiles `key` into Triton's own cache when no entry holds it, keeping no entry (nothing is
// published, so nothing is recorded): a tuning's configs compiled in parallel before Triton's
// benchmark compiles each again, from that cache. Once per key and process; a failure is
// thrown and the next warm_entry of the key tries again. With `pending`, the JIT layer may
// hand the compile to a compile worker process (core/kernel_source.h, compiles_elsewhere):
// it is appended there (also when an earlier warm_entry of the key handed it over) and this
// returns at once; a build of the key (resolve_entry) waits for it first.
void warm_entry(KernelState& kernel, const InternedOptions& options, const Key& key, uint64_t hash,
                const ArgValue* args, const LeafList& leaves, PendingCompiles* pending);

}  // namespace triton_embed::detail
