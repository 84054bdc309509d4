#pragma once

// Scratch buffers for launches whose kernel metadata asks for them.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/internal_api.h"
#include "triton_embed/allocator.h"

namespace triton_embed::detail::cuda {

// The allocator in effect (global or profile scratch); never null. Lock-free: installed
// allocators are kept alive for the life of the process. The JIT layer lends it to Triton's
// launcher while tuning (src/python/layers.cc).
TE_INTERNAL_API ScratchAllocator* scratch_allocator(bool profile) noexcept;

}  // namespace triton_embed::detail::cuda
