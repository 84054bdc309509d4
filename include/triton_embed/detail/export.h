#pragma once

/*! \file
 *  \brief Symbol visibility for the triton_embed shared library.
 */

#if defined(_WIN32)
#error "triton_embed supports Linux only (CUDA driver and CPython are loaded the Linux way)"
#endif

#if defined(TRITON_EMBED_BUILDING_LIBRARY)
#define TRITON_EMBED_API __attribute__((visibility("default")))
#else
#define TRITON_EMBED_API
#endif
