#pragma once

// The cache key's words (core/cache.h Key::w): how build_key and key_and_pack write a
// call's leaves (core/cache_key.cc, core/pack.cc, with KeyWriter and Run below), and how the
// key is read back leaf by leaf: which bundle entries serve a call (match_key), the call an
// entry was compiled for (core/key_values.h), and the bundle store's index of entries by what a
// key keeps beyond its assumptions.
//
// A runtime leaf (a scalar or pointer) is a 12-bit code in a run word; every other leaf is a
// word of its own (leaf_word), followed for a constexpr leaf by its value's words (a tag, then
// the value: KeyWriter::value).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/cache.h"
#include "core/specialize.h"

namespace triton_embed::detail {

constexpr uint64_t leaf_word(LeafKind kind, DType t, SpecKey key, uint8_t is_const,
                             uint32_t count) noexcept {
  return static_cast<uint64_t>(kind) | static_cast<uint64_t>(t) << 8 |
         static_cast<uint64_t>(key) << 16 | static_cast<uint64_t>(is_const) << 24 |
         static_cast<uint64_t>(count) << 32;
}

// Runtime leaves (scalars and pointers) go into the key five to a word, 12 bits each, so that
// a launch writes, hashes and compares few words (a 32-pointer key is 7 words, not 32). A run
// word has bit 63 set, which no other leaf word has (their count stays below 2^31), and each
// leaf's 12 bits have bit 11 set, so runs of different lengths differ. A run ends when it is
// full and before any other leaf; other leaves and constexpr values take words of their own.
constexpr uint64_t kRunMarker = uint64_t{1} << 63;
constexpr unsigned kRunBits = 12, kRunLeaves = 5;

constexpr uint64_t run_code(LeafKind kind, DType t, SpecKey key, uint8_t is_const) noexcept {
  return uint64_t{1} << 11 | static_cast<uint64_t>(kind == LeafKind::kPointer) << 10 |
         static_cast<uint64_t>(is_const) << 9 | static_cast<uint64_t>(key) << 7 |
         static_cast<uint64_t>(t);
}
static_assert(static_cast<int>(DType::fp64) < 32 && static_cast<int>(SpecKey::kOne) < 4,
              "run_code packs a dtype in 5 bits and a specialisation key in 2");

// ---- writing: what build_key (core/cache_key.cc) and key_and_pack (core/pack.cc) both
// write, inline for the launch path

// Puts words into a key, refusing more than it holds; value() writes a constexpr leaf's value
// (a tag, then the value).
class KeyWriter {
 public:
  KeyWriter(const KernelState& k, Key& key) : k_(k), key_(key) {}
  void put(uint64_t w) {
    TE_CHECK(key_.n < kMaxKeyWords, ValueError)
        << call_signature(k_) << ": the arguments are too large for the cache key (too many "
        << "values, or long constexpr strings or tuples)";
    key_.w[key_.n++] = w;
  }
  void value(const ArgValue& v) {
    const uint64_t tag = static_cast<uint64_t>(v.kind) | static_cast<uint64_t>(v.dtype) << 8 |
                         static_cast<uint64_t>(v.big) << 16;
    switch (v.kind) {
      case ArgKind::kNone:
      case ArgKind::kDType:
        put(tag);
        return;
      case ArgKind::kBool:
      case ArgKind::kInt:
      case ArgKind::kFloat:
      case ArgKind::kScalar:
      case ArgKind::kPointer:
        put(tag);
        put(v.u);
        return;
      case ArgKind::kStr: {
        // The bytes themselves, 8 to a word: two strings share a key only when equal.
        put(tag | static_cast<uint64_t>(v.count) << 32);
        for (uint32_t i = 0; i < v.count; i += 8) {
          uint64_t w = 0;
          std::memcpy(&w, v.s + i, v.count - i < 8 ? v.count - i : 8);
          put(w);
        }
        return;
      }
      case ArgKind::kConstexpr:
        put(tag);
        value(*v.elems);
        return;
      case ArgKind::kTuple:
        put(tag | static_cast<uint64_t>(v.count) << 32);
        for (uint32_t i = 0; i < v.count; ++i) value(v.elems[i]);
        return;
      case ArgKind::kJitFunction:
      case ArgKind::kPyObject:
      case ArgKind::kTensorDesc:  // never constexpr (refused), listed for completeness
        put(tag);
        put(reinterpret_cast<uintptr_t>(v.ptr));
        key_.process_local = 1;
        return;
    }
  }

 private:
  const KernelState& k_;
  Key& key_;
};

// The run being filled, written out by flush().
struct Run {
  uint64_t word = kRunMarker;
  unsigned n = 0;
  // Adds a leaf's code; returns the full word to write when the run is full, else 0.
  uint64_t add(uint64_t code) noexcept {
    word |= code << (kRunBits * n);
    if (++n < kRunLeaves) return 0;
    const uint64_t full = word;
    word = kRunMarker;
    n = 0;
    return full;
  }
  // The pending word (then empty), or 0 when nothing is pending.
  uint64_t flush() noexcept {
    if (n == 0) return 0;
    const uint64_t w = word;
    word = kRunMarker;
    n = 0;
    return w;
  }
};

constexpr uint32_t kCodeKeyShift = 7;
constexpr uint32_t kCodeKeyMask = 3u << kCodeKeyShift;

// A key's items in order, one per leaf: a runtime leaf's 12-bit code from a run word, or a
// word of its own followed, for a constexpr leaf, by its value's words (KeyWriter::value).
// Malformed words (a bundle's) read as no item.
class KeyReader {
 public:
  KeyReader(const uint64_t* w, size_t n) : w_(w), n_(n) {}
  bool at_end() const { return !pending() && at_ == n_; }
  bool next_is_code() const { return pending() || (at_ < n_ && (w_[at_] & kRunMarker) != 0); }
  // The next runtime leaf's code (next_is_code() must hold).
  uint32_t code() {
    if (!pending()) {
      run_ = w_[at_++];
      used_ = 0;
    }
    return static_cast<uint32_t>(run_ >> (kRunBits * used_++)) & 0xFFFu;
  }
  // The next other item's words (*first, the count), or 0 when the next item is a code, the
  // key has ended or its words are malformed.
  size_t item(const uint64_t** first) {
    if (pending() || at_ >= n_ || (w_[at_] & kRunMarker) != 0) return 0;
    const size_t start = at_++;
    if ((w_[start] & 0xFFu) == static_cast<uint64_t>(LeafKind::kConstexpr) && !skip_value(0)) {
      return 0;
    }
    *first = w_ + start;
    return at_ - start;
  }

 private:
  bool pending() const {
    return used_ < kRunLeaves && ((run_ >> (kRunBits * used_)) & 0x800u) != 0;
  }
  bool skip_value(int depth) {
    if (at_ >= n_ || depth > 64) return false;
    const uint64_t tag = w_[at_++];
    const uint64_t count = tag >> 32;
    switch (static_cast<ArgKind>(tag & 0xFFu)) {
      case ArgKind::kNone:
      case ArgKind::kDType:
        return true;
      case ArgKind::kStr: {
        const uint64_t words = (count + 7) / 8;
        if (words > n_ - at_) return false;
        at_ += words;
        return true;
      }
      case ArgKind::kConstexpr:
        return skip_value(depth + 1);
      case ArgKind::kTuple:
        for (uint64_t i = 0; i < count; ++i) {
          if (!skip_value(depth + 1)) return false;
        }
        return true;
      default:  // numbers, pointers, functions, objects: one word
        if (at_ >= n_) return false;
        ++at_;
        return true;
    }
  }
  const uint64_t* w_;
  size_t n_;
  size_t at_ = 0;
  uint64_t run_ = 0;
  unsigned used_ = kRunLeaves;
};

// What a runtime leaf's 12-bit code holds.
constexpr uint32_t kCodeMarker = 1u << 11;
constexpr uint32_t kCodePointer = 1u << 10;
constexpr uint32_t kCodeConst = 1u << 9;
constexpr uint32_t kCodeDTypeMask = 0x7Fu;
inline SpecKey code_key(uint32_t code) noexcept {
  return static_cast<SpecKey>((code & kCodeKeyMask) >> kCodeKeyShift);
}

}  // namespace triton_embed::detail
