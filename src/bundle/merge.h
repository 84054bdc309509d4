#pragma once

// Merging kernel bundles into one, and listing one for people (triton-embed-bundle's merge
// and list).

#include <string>
#include <vector>

#include "bundle/file_reader.h"
#include "bundle/format.h"
#include "triton_embed/detail/export.h"

namespace triton_embed::detail::bundle {

/*! \brief The union of \p bundles: kernels deduplicated by (module, name, source_hash),
 *  entries by (kernel, target, options, key_words), records by (kernel, kind, key_words).
 *  Identical duplicates are kept once; two that share an identity but differ otherwise
 *  throw BundleError kConflict naming the kernel, the entry and both bundles. The producer
 *  is this library; its note names the inputs. Each input's blobs are checked first
 *  (Bundle::check_blobs): a damaged input is refused. */
TRITON_EMBED_API Contents merge(const std::vector<const Bundle*>& bundles);

/*! \brief What \p b holds, for people: the producer, then per kernel its identity and per
 *  entry its target ("cuda:90"), options, hash, key length, signature and cubin / ptx
 *  sizes, and its records' count. Ends with a newline. Checks the blobs first
 *  (Bundle::check_blobs): a damaged bundle throws, as opening a version 1 file does. */
TRITON_EMBED_API std::string describe(const Bundle& b);

}  // namespace triton_embed::detail::bundle
