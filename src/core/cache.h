#pragma once

// The per-kernel compile cache.
//
// Key: fixed-size plain data (target, interned options id, and one or two 64-bit words per
// argument leaf: type code, specialisation bits, constexpr values). Lookups read a
// lock-free open-addressing table (acquire loads only); inserts take the cache mutex and
// publish with release stores; grown tables are kept alive, so a reader never sees freed
// memory. Entries are never removed.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "core/word_hash.h"
#include "triton_embed/jit.h"

namespace triton_embed::detail {

constexpr size_t kMaxKeyWords = 320;
constexpr size_t kMaxLeaves = 160;
constexpr size_t kMaxContexts = 32;

struct Key {
  uint32_t target = 0;   // arch | warp_size << 16
  uint32_t options = 0;  // interned options id
  uint32_t n = 0;        // words used
  uint32_t pad = 0;
  uint64_t w[kMaxKeyWords];

  uint64_t hash() const noexcept {
    return hash_words(0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(target) << 32 | options), w, n);
  }
};

struct LoadedFunction {
  void* ctx = nullptr;       // CUcontext
  void* function = nullptr;  // CUfunction
  void* module = nullptr;    // CUmodule
};

// A compiled kernel with what a launch needs, plus its loaded functions per context.
// What a compiled kernel's metadata says of one tensordesc parameter (Triton's
// metadata.tensordesc_meta); absent when Triton did not lower it to TMA (targets before
// sm_90), and the launcher then passes base, shape, strides and flags instead of a map.
struct TmaMeta {
  bool present = false;
  int swizzle = 0;      // CUtensorMapSwizzle
  int elem_size = 0;    // bytes
  int elem_type = 0;    // Triton's device-side TMA type (mapped to the driver's on encoding)
  int rank = 0;
  uint32_t box[5] = {};  // block_size, outermost first
  bool fp4_padded = false;
};

struct Entry {
  uint32_t target = 0;
  uint32_t options = 0;
  uint64_t hash = 0;
  std::vector<uint64_t> key_words;

  std::unique_ptr<CompiledKernel> kernel;

  // Launch constants derived from the metadata.
  uint32_t block_x = 128;
  uint32_t num_ctas = 1;
  uint32_t shared = 0;
  bool cooperative = false;
  bool pdl = false;
  bool oversized_shared_mode = false;  // Triton >= 3.8 sets the oversized shared memory mode
  uint64_t global_scratch_size = 0, global_scratch_align = 1;
  uint64_t profile_scratch_size = 0, profile_scratch_align = 1;
  uint32_t num_runtime_params = 0;  // packed leaves; hidden scratch pointers follow them
  std::vector<TmaMeta> tma;         // one per tensordesc leaf, in order
  int triton_version = 0;           // major * 100 + minor: how descriptors are passed

  std::mutex load_mu;
  std::atomic<uint32_t> nloaded{0};
  LoadedFunction loaded[kMaxContexts];

  bool matches(const Key& k, uint64_t h) const noexcept {
    return hash == h && target == k.target && options == k.options &&
           key_words.size() == k.n &&
           (k.n == 0 || std::memcmp(key_words.data(), k.w, k.n * sizeof(uint64_t)) == 0);
  }
  // The loaded function for context ctx, or nullptr.
  void* function_for(void* ctx) const noexcept {
    const uint32_t n = nloaded.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < n; ++i) {
      if (loaded[i].ctx == ctx) return loaded[i].function;
    }
    return nullptr;
  }
};

class EntryTable {
 public:
  EntryTable();
  Entry* find(const Key& k, uint64_t h) const noexcept {
    const Slots* s = current_.load(std::memory_order_acquire);
    size_t i = h & s->mask;
    for (;;) {
      Entry* e = s->slots[i].load(std::memory_order_acquire);
      if (e == nullptr) return nullptr;
      if (e->matches(k, h)) return e;
      i = (i + 1) & s->mask;
    }
  }
  // Caller holds the cache mutex.
  void insert(Entry* e);
  size_t size() const noexcept { return count_; }

 private:
  struct Slots {
    size_t mask;
    std::unique_ptr<std::atomic<Entry*>[]> slots;
  };
  static std::unique_ptr<Slots> make_slots(size_t capacity);
  std::atomic<Slots*> current_{nullptr};
  std::vector<std::unique_ptr<Slots>> all_;
  size_t count_ = 0;
};

// A compile in flight: threads that miss the same key wait for it.
struct Pending {
  uint32_t target = 0, options = 0;
  uint64_t hash = 0;
  std::vector<uint64_t> key_words;
  bool done = false;
  int waiters = 0;  // threads waiting for this compile (testing::compile_waiters)
  Entry* entry = nullptr;
  std::exception_ptr error;
  std::condition_variable cv;

  bool matches(const Key& k, uint64_t h) const noexcept {
    return hash == h && target == k.target && options == k.options && key_words.size() == k.n &&
           (k.n == 0 || std::memcmp(key_words.data(), k.w, k.n * sizeof(uint64_t)) == 0);
  }
};

struct Cache {
  EntryTable table;
  std::mutex mu;  // guards inserts, entries and pending
  std::vector<std::unique_ptr<Entry>> entries;
  std::vector<std::shared_ptr<Pending>> pending;
};

}  // namespace triton_embed::detail
