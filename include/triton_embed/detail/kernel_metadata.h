#pragma once

// A compiled kernel's metadata, defined once: what Triton's compile result records and a
// launch reads. CompiledKernel holds it (jit.h), the cache entry's launch constants are set
// from it (src/core/cache.h), the JIT layer fills it from Triton's result
// (src/python/compile.cc), and a bundle entry holds it as views into the bundle's bytes
// (src/bundle/format.h: BasicEntry::meta; file_layout.h lays its fields out on disk).
//
// A new field: declare it here and name it in metadata_fields() below (which copies and
// compares metadata for bundles), give it its bytes in the bundle entry's layout
// (src/bundle/file_layout.h: a format change) and fill it in src/python/compile.cc.

#include <cstdint>
#include <string>

namespace triton_embed::detail {

// `Bytes` holds the text and binary fields: std::string (owned), or std::string_view (a
// bundle's bytes).
template <class Bytes>
struct BasicKernelMetadata {
  Bytes hash;       // Triton's kernel hash
  Bytes name;       // the cubin's entry point
  Bytes signature;  // the specialised signature, as text
  Bytes cubin;
  Bytes ptx;  // empty unless kept
  int num_warps = 4, num_ctas = 1, num_stages = 3;
  int shared = 0;             // bytes of dynamic shared memory
  int num_kernel_params = 0;  // runtime arguments plus Triton's two scratch pointers
  uint64_t global_scratch_size = 0, global_scratch_align = 1;
  uint64_t profile_scratch_size = 0, profile_scratch_align = 1;
  bool launch_cooperative_grid = false, launch_pdl = false;
};

using KernelMetadata = BasicKernelMetadata<std::string>;

// Calls f(name, a.field, b.field) for every field of two metadata (of any byte storage), once
// each, in the order a bundle merge compares them; `name` is for people ("function name").
// What copies a bundle's views into owned metadata and finds where two entries differ.
template <class A, class B, class F>
void metadata_fields(A& a, B& b, F&& f) {
  f("hash", a.hash, b.hash);
  f("cubin", a.cubin, b.cubin);
  f("ptx", a.ptx, b.ptx);
  f("function name", a.name, b.name);
  f("signature", a.signature, b.signature);
  f("num_warps", a.num_warps, b.num_warps);
  f("num_ctas", a.num_ctas, b.num_ctas);
  f("num_stages", a.num_stages, b.num_stages);
  f("shared memory size", a.shared, b.shared);
  f("num_kernel_params", a.num_kernel_params, b.num_kernel_params);
  f("global scratch", a.global_scratch_size, b.global_scratch_size);
  f("global scratch", a.global_scratch_align, b.global_scratch_align);
  f("profile scratch", a.profile_scratch_size, b.profile_scratch_size);
  f("profile scratch", a.profile_scratch_align, b.profile_scratch_align);
  f("launch_cooperative_grid", a.launch_cooperative_grid, b.launch_cooperative_grid);
  f("launch_pdl", a.launch_pdl, b.launch_pdl);
}

}  // namespace triton_embed::detail
