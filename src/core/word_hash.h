#pragma once

// The hash of a key's words (compile-cache keys, memo keys). Four independent lanes, so the
// multiply chain of one word does not wait for the previous word's: a 32-pointer call's key
// hashes in about a quarter of the latency of a single chain.

#include <cstdint>

namespace triton_embed::detail {

constexpr uint64_t kWordHashMul = 0xBF58476D1CE4E5B9ull;

inline uint64_t word_hash_round(uint64_t h, uint64_t w) noexcept {
  h = (h ^ w) * kWordHashMul;
  return h ^ (h >> 31);
}

inline uint64_t rotl64(uint64_t x, int r) noexcept { return (x << r) | (x >> (64 - r)); }

inline uint64_t hash_words(uint64_t seed, const uint64_t* w, uint32_t n) noexcept {
  uint64_t a = seed, b = 0x6A09E667F3BCC909ull, c = 0xBB67AE8584CAA73Bull,
           d = 0x3C6EF372FE94F82Bull;
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a = word_hash_round(a, w[i]);
    b = word_hash_round(b, w[i + 1]);
    c = word_hash_round(c, w[i + 2]);
    d = word_hash_round(d, w[i + 3]);
  }
  for (; i < n; ++i) a = word_hash_round(a, w[i]);
  uint64_t h = a ^ rotl64(b, 17) ^ rotl64(c, 31) ^ rotl64(d, 47) ^ n;
  h *= 0x94D049BB133111EBull;
  return h ^ (h >> 29);
}

}  // namespace triton_embed::detail
