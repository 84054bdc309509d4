#pragma once

/*! \file
 *  \brief The stream type: a CUDA stream handle (\c CUstream or \c cudaStream_t; both are
 *  \c CUstream_st*). \c nullptr is the legacy default stream.
 */

struct CUstream_st;

namespace triton_embed {
/*! \brief A CUDA stream (\c CUstream / \c cudaStream_t). */
using Stream = CUstream_st*;
}  // namespace triton_embed
