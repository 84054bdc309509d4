#pragma once

// Making a CompiledKernel from its metadata (triton_embed/detail/kernel_metadata.h): from
// Triton's compile result (the JIT layer) or from a bundle entry (bundle::metadata).

#include <memory>
#include <string>
#include <utility>

#include "triton_embed/jit.h"

namespace triton_embed::detail {

struct CompiledKernelAccess {
  static std::unique_ptr<CompiledKernel> make(KernelMetadata meta, std::string target) {
    std::unique_ptr<CompiledKernel> k(new CompiledKernel());
    k->meta_ = std::move(meta);
    k->target_ = std::move(target);
    return k;
  }
  static const KernelMetadata& metadata(const CompiledKernel& k) { return k.meta_; }
};

}  // namespace triton_embed::detail
