#pragma once

// Record once, serve every shape (issue 37): te_widen_kernels' kernels are recorded at two
// shapes each, compile-only for cuda:90, by a JIT process (test_bundle_jit's BundleJitWiden,
// CTest bundle_widen_record), which writes the bundle as it is and, asking for it, widened;
// `triton-embed-bundle widen` widens the first with a tuning rule and other constexpr values
// (CTest bundle_widen); a program with no Python then serves sizes nobody ran from both
// (test_runtime_only's RuntimeOnlyWiden), or refuses them with TRITON_EMBED_BUNDLE_STRICT=1
// (runtime_only_strict).

#include <triton_embed/jit.h>
#include <triton_embed/tensor_descriptor.h>

#include <cstdint>
#include <string>

#include "bundle_calls.h"

namespace te_widen {

namespace te = triton_embed;

constexpr int kHidden = 1024;  // the model's width: rows_kernel's n_cols and stride, mm's N, K
constexpr int kHeads = 8, kHeadDim = 64;

// rows_kernel at n_rows rows of kHidden: the recording runs 4096 rows and 1 (a token, decode).
inline const te::CompiledKernel& compile_rows(const te::JitFunction& k, int64_t n_rows,
                                              int n_cols = kHidden, int stride = kHidden) {
  return k.compile(te_bundle::kX, te_bundle::kY, te_bundle::kOut, n_rows, n_cols, stride, 1e-6f,
                   1024);
}
inline const int64_t kRecordedRows[] = {4096, 1};

// rope_kernel / rope_heur_kernel at `batch` sequences of seq_len positions: the recording runs
// batch 2 and 4, 128 positions. rope_kernel is given BLOCK_H; rope_heur_kernel's heuristic
// sets it.
inline const te::Pointer kHalfX(uintptr_t{0x50000}, te::DType::fp16);
inline const te::Pointer kHalfOut(uintptr_t{0x60000}, te::DType::fp16);
inline const te::CompiledKernel& compile_rope(const te::JitFunction& k, int batch, int64_t seq_len,
                                              int heads = kHeads) {
  if (k.name() == "rope_heur_kernel") {
    return k.compile(kHalfX, te_bundle::kX, te_bundle::kY, kHalfOut, seq_len, batch, heads,
                     kHeadDim);
  }
  return k.compile(kHalfX, te_bundle::kX, te_bundle::kY, kHalfOut, seq_len, batch, heads, kHeadDim,
                   8);
}
inline const int kRecordedBatch[] = {2, 4};
constexpr int64_t kRecordedSeq = 128;

// mm_kernel (autotuned on M, fake timings: the BLOCK_M nearest M wins) at M rows: the
// recording tunes M = 16 and 128, declaring no rule.
inline const te::Pointer kA(uintptr_t{0x70000}, te::DType::fp16);
inline const te::Pointer kB(uintptr_t{0x80000}, te::DType::fp16);
inline const te::Pointer kC(uintptr_t{0x90000}, te::DType::fp16);
inline const te::CompiledKernel& compile_mm(const te::JitFunction& k, int64_t m) {
  return k.compile(kA, kB, kC, m, kHidden, kHidden, kHidden, kHidden, kHidden);
}
inline const te::TuningResult* tuning_result_mm(const te::JitFunction& k, int64_t m) {
  return k.tuning_result(kA, kB, kC, m, kHidden, kHidden, kHidden, kHidden, kHidden);
}
inline const int64_t kRecordedM[] = {16, 128};

// copy_kernel (autotuned on M, fake timings: BLOCK_M 32 or 128, nearest M) over [M, 64] fp32,
// with host descriptors (whose block shapes the tutorial-form pre-hook sets) or pointers: the
// recording tunes M = 16 and 256 in both forms, declaring M=nearest.
inline te::TensorDescriptor copy_descriptor(uintptr_t base, int64_t m) {
  return te::TensorDescriptor(base, te::DType::fp32, {m, 64}, {64, 1}, {16, 16});
}
inline const te::CompiledKernel& compile_copy(const te::JitFunction& k, int64_t m, bool desc) {
  if (desc) return k.compile(copy_descriptor(0x100000, m), copy_descriptor(0x200000, m), m, 64);
  return k.compile(te_bundle::kX, te_bundle::kOut, m, 64);
}
inline const int64_t kRecordedCopyM[] = {16, 256};

inline std::string dir() { return te_bundle::dir() + "/widen"; }
// What the recording wrote: as it is, and widened (set_record_widening).
inline std::string recorded_path() { return dir() + "/recorded.teb"; }
inline std::string recorded_widened_path() { return dir() + "/recorded_widened.teb"; }
// What `triton-embed-bundle widen` made of recorded.teb (CTest bundle_widen): a rule for
// mm_kernel (M=nearest), rope_kernel at BATCH 1, 3 and 8, rope_heur_kernel at HEADS 4 and 12.
inline std::string widened_path() { return dir() + "/widened.teb"; }

}  // namespace te_widen
