#pragma once

// A bounded memo table for the wrapped kernels' hot path: a fixed-size key (up to kMemoWords
// 64-bit words) maps to two words. Reads are lock-free: each slot is a seqlock (a reader
// that sees the slot change under it treats it as a miss and takes the slow path, which
// looks again under the owner's mutex). Writes hold the owner's mutex. The table never
// grows: when a key's probe window is full, a slot of it is reused in turn, so memory is
// fixed and a forgotten key costs one slow path (which asks Python again). clear() forgets
// every key at once (bundles unloaded: core/registry.h).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/word_hash.h"

namespace triton_embed::detail {

constexpr uint32_t kMemoWords = 32;

struct MemoKey {
  uint32_t n = 0;
  bool overflow = false;  // the key did not fit: do not memoise this call
  uint64_t w[kMemoWords];

  void push(uint64_t v) noexcept {
    if (n < kMemoWords) {
      w[n++] = v;
    } else {
      overflow = true;
    }
  }
  uint64_t hash() const noexcept { return hash_words(0x84222325CBF29CE4ull, w, n); }
};

class MemoTable {
 public:
  static constexpr uint32_t kProbe = 8;

  explicit MemoTable(uint32_t slots = 256) : mask_(slots - 1), slots_(new Slot[slots]) {}

  // The value for `key`, if present. Lock-free.
  bool find(const MemoKey& key, uint64_t h, uint64_t out[2]) const noexcept {
    for (uint32_t p = 0; p < kProbe; ++p) {
      const Slot& s = slots_[(h + p) & mask_];
      const uint32_t seq = s.seq.load(std::memory_order_acquire);
      if (seq == 0) return false;     // never written: the key's window ends here
      if ((seq & 1u) != 0) continue;  // being written
      if (s.hash.load(std::memory_order_relaxed) != h ||
          s.n.load(std::memory_order_relaxed) != key.n) {
        continue;
      }
      bool same = true;
      for (uint32_t i = 0; i < key.n && same; ++i) {
        same = s.w[i].load(std::memory_order_relaxed) == key.w[i];
      }
      if (!same) continue;
      const uint64_t v0 = s.v[0].load(std::memory_order_relaxed);
      const uint64_t v1 = s.v[1].load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.seq.load(std::memory_order_relaxed) != seq) continue;  // changed while read
      out[0] = v0;
      out[1] = v1;
      return true;
    }
    return false;
  }

  // Inserts or replaces `key`. The caller holds the owner's mutex (one writer at a time).
  void insert(const MemoKey& key, uint64_t h, const uint64_t value[2]) noexcept {
    Slot* target = nullptr;
    for (uint32_t p = 0; p < kProbe && target == nullptr; ++p) {
      Slot& s = slots_[(h + p) & mask_];
      const uint32_t seq = s.seq.load(std::memory_order_relaxed);
      if (seq == 0 || s.n.load(std::memory_order_relaxed) == kCleared) {
        target = &s;
      } else if (s.hash.load(std::memory_order_relaxed) == h &&
                 s.n.load(std::memory_order_relaxed) == key.n) {
        bool same = true;
        for (uint32_t i = 0; i < key.n && same; ++i) {
          same = s.w[i].load(std::memory_order_relaxed) == key.w[i];
        }
        if (same) target = &s;
      }
    }
    if (target == nullptr) target = &slots_[(h + (victim_++ % kProbe)) & mask_];
    Slot& s = *target;
    const uint32_t seq = s.seq.load(std::memory_order_relaxed);
    s.seq.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.hash.store(h, std::memory_order_relaxed);
    s.n.store(key.n, std::memory_order_relaxed);
    for (uint32_t i = 0; i < key.n; ++i) s.w[i].store(key.w[i], std::memory_order_relaxed);
    s.v[0].store(value[0], std::memory_order_relaxed);
    s.v[1].store(value[1], std::memory_order_relaxed);
    s.seq.store(seq + 2, std::memory_order_release);
  }

  // Forgets every key. The caller holds the owner's mutex. A slot keeps its sequence number
  // (a reader that read it before sees it change) and holds a length no key has.
  void clear() noexcept {
    for (uint32_t i = 0; i <= mask_; ++i) {
      Slot& s = slots_[i];
      const uint32_t seq = s.seq.load(std::memory_order_relaxed);
      if (seq == 0) continue;
      s.seq.store(seq + 1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      s.n.store(kCleared, std::memory_order_relaxed);
      s.seq.store(seq + 2, std::memory_order_release);
    }
  }

 private:
  static constexpr uint32_t kCleared = ~0u;  // a forgotten slot's length (no key is this long)
  struct Slot {
    std::atomic<uint32_t> seq{0};  // even: stable; odd: being written; 0: never written
    std::atomic<uint32_t> n{0};
    std::atomic<uint64_t> hash{0};
    std::atomic<uint64_t> w[kMemoWords] = {};
    std::atomic<uint64_t> v[2] = {};
  };
  uint32_t mask_;
  std::unique_ptr<Slot[]> slots_;
  uint32_t victim_ = 0;
};

}  // namespace triton_embed::detail
