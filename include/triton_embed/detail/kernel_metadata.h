#pragma once

// A compiled kernel's metadata, defined once: what Triton's compile result records and a
// launch reads. CompiledKernel holds it (jit.h), the cache entry's launch constants are set
// from it (src/core/cache.h), the JIT layer fills it from Triton's result
// (src/python/compile.cc), and a bundle entry stores it field by field (src/bundle/format.h:
// bundle::metadata and bundle::set_metadata convert).

#include <cstdint>
#include <string>

namespace triton_embed::detail {

struct KernelMetadata {
  std::string hash;       // Triton's kernel hash
  std::string name;       // the cubin's entry point
  std::string signature;  // the specialised signature, as text
  std::string cubin;
  std::string ptx;  // empty unless kept
  int num_warps = 4, num_ctas = 1, num_stages = 3;
  int shared = 0;             // bytes of dynamic shared memory
  int num_kernel_params = 0;  // runtime arguments plus Triton's two scratch pointers
  uint64_t global_scratch_size = 0, global_scratch_align = 1;
  uint64_t profile_scratch_size = 0, profile_scratch_align = 1;
  bool launch_cooperative_grid = false, launch_pdl = false;
};

}  // namespace triton_embed::detail
