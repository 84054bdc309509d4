#pragma once

// The bundles a process has loaded (from TRITON_EMBED_BUNDLE, load_bundle() or embedded in
// the executable), what the launch path asks of them, and recording the process's own
// compiled kernels into a bundle (TRITON_EMBED_RECORD, write_bundle()). Slow paths only: a
// kernel's first load and a cache or memo miss look here, a hit never does.

#include <memory>
#include <string>
#include <string_view>

#include "base/internal_api.h"
#include "bundle/format.h"
#include "core/kernel_state.h"

namespace triton_embed::detail::bundle {

// Loads the files named by TRITON_EMBED_BUNDLE (':'-separated), once per process; a file that
// cannot be read is a BundleError (nothing of it is loaded).
void load_from_environment();

// Adds an opened bundle to the process's.
void add(Bundle b);

// Unloads every bundle (TRITON_EMBED_BUNDLE's, embedded ones and those load_bundle() added),
// then has the runtime forget what every kernel resolved (core/registry.h).
void unload_all();

// The loaded bundles are the runtime's first kernel source (core/source.h), registered when
// the runtime's library is loaded (src/bundle/store.cc): a kernel's parameter table and layers
// (for programs without the JIT layer), cache entries (the same module, name and, when the
// kernel knows it, source hash; the same target, options and key words), and the layers'
// recorded decisions (to the JIT layer, only a tuned choice of the very same kernel and
// configs, whose config has no pre_hook).

// The plain kernels this process compiled or loaded, with every entry that can be replayed
// in another process (not those keyed on a Python object), as bundle contents.
Contents record();

// What `b` holds for its wrapped kernels, decoded and checked as a load would, for people
// (`triton-embed-bundle list`): each layer (heuristics as the expressions the runtime
// evaluates, or why they are kept as recorded values), and each tuned choice with its target,
// key, config and pre_hook (the actions the runtime applies, or why it stays in Python); or,
// for a bundle a load refuses, the refusal.
TRITON_EMBED_API std::string describe_decisions(const Bundle& b);

// Writes TRITON_EMBED_RECORD at exit when it is set (registered on the first kernel load).
void record_at_exit_if_asked();

// Writes TRITON_EMBED_RECORD now, once per process (what the exit handler does).
void write_recording();

// The JIT layer calls it before the interpreter stops compiling at exit: a recording that
// widens (record_widening) is written then, while its compiles can run.
TE_INTERNAL_API void write_recording_before_python_closes();

}  // namespace triton_embed::detail::bundle
