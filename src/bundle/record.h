#pragma once

// Recording the process's own compiled kernels into a bundle (TRITON_EMBED_RECORD,
// write_bundle()).

#include "base/internal_api.h"
#include "bundle/format.h"

namespace triton_embed::detail::bundle {

// The plain kernels this process compiled or loaded, with every entry that can be replayed
// in another process (not those keyed on a Python object), as bundle contents.
Contents record();

// Writes TRITON_EMBED_RECORD at exit when it is set (registered on the first kernel load).
void record_at_exit_if_asked();

// Writes TRITON_EMBED_RECORD now, once per process (what the exit handler does).
void write_recording();

// The JIT layer calls it before the interpreter stops compiling at exit: a recording that
// widens (record_widening) is written then, while its compiles can run.
TE_INTERNAL_API void write_recording_before_python_closes();

}  // namespace triton_embed::detail::bundle
