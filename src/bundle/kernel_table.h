#pragma once

// What a bundle keeps of a kernel besides its cubins: the parameter table (names, flags,
// annotations, Python defaults) that the launch path specialises and binds against, and the
// Triton options of each entry. Encoded into the opaque fields of bundle::Kernel::params and
// bundle::BundleEntry::options; decoded into a KernelState (no Python) when a program without the
// JIT layer loads the kernel from a bundle.

#include <string>
#include <string_view>

#include "core/kernel_state.h"
#include "triton_embed/detail/export.h"
#include "triton_embed/options.h"

namespace triton_embed::detail::bundle {

// The parameter table of `k` (its ParamInfo, ParamSpec and defaults, min_args and the Triton
// version it was read under). A default that only Python can hold (an arbitrary object, a
// @triton.jit function) is kept as "needs Python": a program without the JIT layer must pass
// that argument.
TRITON_EMBED_API std::string encode_params(const KernelState& k);

// Fills k's params, specs, name_hashes, defaults, min_args and triton_version from `bytes`
// (module and name are the caller's). Throws BundleError (kCorrupt) naming `where` when the
// bytes are not a parameter table this library wrote.
TRITON_EMBED_API void decode_params(std::string_view bytes, KernelState& k,
                                    const std::string& where);

// Options as a bundle entry stores them: one "name=<type><value>" line per option, sorted by
// name (b: bool 0/1, i: integer, f: a double in hex-float form, s: a string), so that decoding
// gives back the very Options (floats exact).
TRITON_EMBED_API std::string encode_options(const Options& options);
// Throws BundleError (kCorrupt) naming `where` for text encode_options did not write.
TRITON_EMBED_API Options decode_options(std::string_view text, const std::string& where);

}  // namespace triton_embed::detail::bundle
