#pragma once

// Making a CompiledKernel: from Triton's compile result (the JIT layer) or from a bundle
// entry (the runtime). Both fill the same plain fields.

#include <memory>
#include <string>

#include "triton_embed/jit.h"

namespace triton_embed::detail {

struct CompiledKernelFields {
  std::string hash, name, target, signature, cubin, ptx;
  int num_warps = 4, num_ctas = 1, num_stages = 3, shared = 0, num_kernel_params = 0;
  size_t global_scratch_size = 0, global_scratch_align = 1;
  size_t profile_scratch_size = 0, profile_scratch_align = 1;
  bool launch_cooperative_grid = false, launch_pdl = false;
};

struct CompiledKernelAccess {
  static std::unique_ptr<CompiledKernel> make(CompiledKernelFields f) {
    std::unique_ptr<CompiledKernel> k(new CompiledKernel());
    k->hash_ = std::move(f.hash);
    k->name_ = std::move(f.name);
    k->target_ = std::move(f.target);
    k->signature_ = std::move(f.signature);
    k->cubin_ = std::move(f.cubin);
    k->ptx_ = std::move(f.ptx);
    k->num_warps_ = f.num_warps;
    k->num_ctas_ = f.num_ctas;
    k->num_stages_ = f.num_stages;
    k->shared_ = f.shared;
    k->num_kernel_params_ = f.num_kernel_params;
    k->global_scratch_size_ = f.global_scratch_size;
    k->global_scratch_align_ = f.global_scratch_align;
    k->profile_scratch_size_ = f.profile_scratch_size;
    k->profile_scratch_align_ = f.profile_scratch_align;
    k->launch_cooperative_grid_ = f.launch_cooperative_grid;
    k->launch_pdl_ = f.launch_pdl;
    return k;
  }
};

}  // namespace triton_embed::detail
