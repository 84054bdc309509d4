#pragma once

// Host tensor descriptors on the launch path: Triton's rules for them (specialisation), the
// parameters Triton's launcher passes for one (packing) and the CUtensorMap it encodes,
// cached in the descriptor.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>

#include "core/cache.h"
#include "core/kernel_state.h"
#include "triton_embed/tensor_descriptor.h"

namespace triton_embed::detail {

inline constexpr uint32_t kMaxTensorDescs = 16;
// Parameters one descriptor takes at most: base, shape and strides as i64, two flags, shape
// as i32, strides as i64 (rank 5, Triton 3.8, no TMA).
inline constexpr uint32_t kMaxDescParams = 1 + 4 * TensorDescriptor::kMaxRank + 2;
// Kernel parameters a launch passes at most (the two scratch pointers included).
inline constexpr size_t kMaxPackedParams = kMaxLeaves + 2 + kMaxTensorDescs * (kMaxDescParams - 1);

struct alignas(64) TensorMapStorage {
  unsigned char bytes[128];
};

// The encoded CUtensorMap a descriptor keeps between launches, with what it was encoded
// from; guarded by a spin flag (launches on several threads may share a descriptor). It lives
// in the descriptor's private storage (TensorDescriptor::cache_), constructed by its
// constructors; no allocation.
struct alignas(64) TensorMapCache {
  static constexpr int kInputWords = 24;
  unsigned char map[128];        // the CUtensorMap (128 bytes, 64-byte aligned)
  uint64_t input[kInputWords];   // the encoding's inputs (tensor_map.cc: encode_inputs)
  const void* layout = nullptr;  // the kernel's descriptor layout it was last packed for
  uint64_t version = 0;          // the descriptor's version then
  bool valid = false;
  std::atomic<bool> busy{false};
  // The descriptor's version whose fields passed Triton's checks, and the specialisation word
  // they gave (check_descriptor).
  std::atomic<uint64_t> checked_version{~uint64_t{0}};
  std::atomic<uint32_t> checked_word{0};
};

// What the library reads and writes of a TensorDescriptor beyond its public fields.
struct TensorDescriptorAccess {
  static_assert(sizeof(TensorMapCache) <= TensorDescriptor::kCacheBytes &&
                    alignof(TensorMapCache) <= 64,
                "TensorDescriptor::cache_ must hold a TensorMapCache");
  static_assert(std::is_trivially_destructible_v<TensorMapCache>,
                "TensorDescriptor never destroys its TensorMapCache");
  static TensorMapCache& cache(const TensorDescriptor& d) noexcept {
    return *std::launder(reinterpret_cast<TensorMapCache*>(d.cache_));
  }
  // Constructs the cache in d's storage (the constructors call it).
  static void init_cache(TensorDescriptor& d) noexcept { new (d.cache_) TensorMapCache; }
  static uint64_t version(const TensorDescriptor& d) noexcept { return d.version(); }
  static uint8_t arg_flags(const TensorDescriptor& d) noexcept { return d.arg_flags(); }
  static void set_arg_flags(TensorDescriptor& d, uint8_t flags) noexcept { d.set_arg_flags(flags); }
};

// Checks Triton's rules for descriptor argument `param` (ValueError / TypeError /
// NotSupportedError naming the kernel and the argument) and returns the leaf's count word:
// the rank in bits 0-2, log2 of block dimension i in bits 3 + 5i.
uint32_t check_descriptor(const KernelState& kernel, uint32_t param, const TensorDescriptor& d);

// "tensordesc<fp16[64, 32]>" for a descriptor leaf.
std::string descriptor_type_name(DType dtype, uint32_t count);

// Kernel parameters the launcher passes for a descriptor of `rank`.
uint32_t descriptor_param_count(const TmaMeta& meta, int rank, int triton_version);

// Writes the parameters Triton's launcher passes for descriptor `d` (argument `param`):
// scalars into slots[0..n), their addresses into params[0..n), the CUtensorMap (encoded or
// from the descriptor's cache) into *map with params[0] pointing at it. Returns n.
uint32_t pack_descriptor(const KernelState& kernel, uint32_t param, const TensorDescriptor& d,
                         const TmaMeta& meta, int triton_version, uint64_t* slots, void** params,
                         TensorMapStorage* map);

// A call's descriptors as the one-pass path meets them (key_and_pack): each one's
// parameter, the descriptor, and the slot its packed values start at among the call's other
// runtime values. Packing them needs the cache entry's TMA metadata, so it follows the lookup
// (expand_descriptors).
struct DescSlots {
  uint32_t n = 0;
  uint16_t param[kMaxTensorDescs];
  uint16_t at[kMaxTensorDescs];
  const TensorDescriptor* desc[kMaxTensorDescs];
};

// The launch's parameters for entry e: the one-pass values in[0..n_in) with each descriptor of
// d packed at its place (pack_descriptor), into slots and params (kMaxPackedParams each) and
// maps. Returns the count.
uint32_t expand_descriptors(const KernelState& kernel, const Entry& e, const DescSlots& d,
                            const uint64_t* in, uint32_t n_in, uint64_t* slots, void** params,
                            TensorMapStorage* maps);

}  // namespace triton_embed::detail
