#pragma once

// TE_INTERNAL_API marks the runtime's internal functions that the layers above it (the JIT
// layer, src/python) call across the library boundary. The version script (cmake/exports.map)
// exports them with the rest of triton_embed::*; inside the runtime they are protected, so
// the runtime's own calls to them stay direct calls, as to a hidden function (no PLT on the
// launch path). Not part of the public API: the headers that use it are private.

#if defined(TRITON_EMBED_BUILDING_RUNTIME)
#define TE_INTERNAL_API __attribute__((visibility("protected")))
#else
#define TE_INTERNAL_API __attribute__((visibility("default")))
#endif
