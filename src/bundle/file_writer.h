#pragma once

// Writing a kernel bundle (format.h): its bytes (serialize), and a file (write_file).

#include <string>

#include "bundle/format.h"
#include "triton_embed/detail/export.h"

namespace triton_embed::detail::bundle {

/*! \brief The bundle file for \p c. Throws ValueError when an entry or record refers to a
 *  kernel that \p c does not hold. Identical strings and blobs are stored once. */
TRITON_EMBED_API std::string serialize(const Contents& c);

/*! \brief Writes serialize(c) to \p path atomically: into a temporary file next to it, then
 *  renamed over it. On failure (BundleError kIo) no temporary file is left and \p path is
 *  untouched. */
TRITON_EMBED_API void write_file(const Contents& c, const std::string& path);

}  // namespace triton_embed::detail::bundle
