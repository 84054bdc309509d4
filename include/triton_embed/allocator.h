#pragma once

/*! \file
 *  \brief Scratch memory for kernels whose metadata asks for it.
 *
 *  Triton appends two hidden pointer arguments to every kernel: a global scratch buffer and
 *  a profile scratch buffer. When a compiled kernel needs one (\c global_scratch_size > 0,
 *  e.g. device-side tensor descriptors; \c profile_scratch_size > 0, instrumentation), each
 *  launch allocates \c grid_size * num_ctas * size bytes on the launch stream and releases
 *  them on the same stream right after the launch. The default allocator does this with
 *  \c cuMemAllocAsync / \c cuMemFreeAsync (stream-ordered); replace it to use your own pool
 *  (the torch layer installs one backed by PyTorch's caching allocator).
 *  \code
 *  struct MyPool : triton_embed::ScratchAllocator {
 *    uint64_t allocate(size_t bytes, size_t align, triton_embed::Stream s) override;
 *    void release(uint64_t ptr, size_t bytes, triton_embed::Stream s) noexcept override;
 *  };
 *  triton_embed::set_scratch_allocator(std::make_shared<MyPool>());
 *  \endcode
 */

#include <cstddef>
#include <cstdint>
#include <memory>

#include "triton_embed/detail/export.h"
#include "triton_embed/stream.h"

namespace triton_embed {

/*! \brief Allocates scratch memory for one launch. Must be thread-safe. */
class TRITON_EMBED_API ScratchAllocator {
 public:
  virtual ~ScratchAllocator();
  /*! \brief Returns a device address of at least \p bytes, aligned to \p alignment, usable
   *  by work queued on \p stream. Throw to fail the launch (the exception reaches the
   *  caller of launch()); a null address fails it with OutOfResourcesError. */
  virtual uint64_t allocate(size_t bytes, size_t alignment, Stream stream) = 0;
  /*! \brief Gives back \p ptr once the launch queued on \p stream is done with it. */
  virtual void release(uint64_t ptr, size_t bytes, Stream stream) noexcept = 0;
};

/*! \brief Replaces the global scratch allocator (nullptr: the stream-ordered default). */
TRITON_EMBED_API void set_scratch_allocator(std::shared_ptr<ScratchAllocator> allocator);
/*! \brief Replaces the profile scratch allocator (nullptr: the stream-ordered default). */
TRITON_EMBED_API void set_profile_scratch_allocator(std::shared_ptr<ScratchAllocator> allocator);

}  // namespace triton_embed
