#pragma once

// Finding the loaded bundles' entry that serves a cache miss (bundled_entry): the exact entry
// for the call's key, else an older target's PTX, else (with no JIT layer) a less specialised
// entry; what is said when one serves in place of the key's own (notify); and, when none
// does, the nearest ones and why (nearest).

#include <cstdint>
#include <memory>
#include <string>

#include "core/kernel_state.h"
#include "core/specialize.h"
#include "triton_embed/bundle.h"

namespace triton_embed::detail::bundle {

// The entry of the loaded bundles that serves `key` (the call's leaves `leaves`), built but
// not published, or nullptr; said once per key when it is not the key's own (notify).
std::unique_ptr<detail::Entry> bundled_entry(const KernelState& k, const InternedOptions& options,
                                             const Key& key, uint64_t hash, const LeafList& leaves);

// The loaded bundles' entries of kernel k nearest to the call, and why none serves it (for
// NotInBundleError).
std::string nearest(const KernelState& k, const InternedOptions& options, const Key& key,
                    const LeafList& leaves);

// Reports what served a key in place of its own entry: to the callback, else on stderr. Called
// once per key (the build of a missing key), with no lock held.
void notify(const BundleNotice& n);

}  // namespace triton_embed::detail::bundle
