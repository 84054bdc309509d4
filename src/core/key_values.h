#pragma once

// What a cache key says of the call it was made for, read back from its words
// (core/key_words.h):
// - the call itself: values that specialise exactly as the key says, chosen as a calls file's
//   are (docs/aot.md: a 16-byte aligned address for "D", 17 for an i32 with no assumption),
//   or with every runtime integer unspecialised. Widening a bundle compiles an entry's twin
//   from it (src/bundle/widen.cc).
// - its serving class: what the key keeps beyond the assumptions a less specialised entry may
//   lack. An entry serves a call (match_key) only when both are of one class, so the bundle
//   store finds the candidates for a call in an index instead of a search of every entry.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/internal_api.h"
#include "core/kernel_state.h"
#include "triton_embed/arg_value.h"
#include "triton_embed/tensor_descriptor.h"

namespace triton_embed::detail {

// A call rebuilt from a key: one value per parameter, and the storage its values point into.
struct KeyCall {
  std::vector<ArgValue> args;
  std::deque<std::vector<ArgValue>> nested;  // tuples and tl.constexpr wrappers
  std::deque<std::string> strings;
  std::deque<TensorDescriptor> descriptors;
  // Runtime integer leaves given a value with no assumption (KeyCallKind::kGeneric) that the
  // key had one for ("D", or the constexpr 1 Triton makes of an integer 1): the parameter of
  // each, in the key's order.
  uint32_t widened = 0;
  std::vector<uint32_t> widened_params;
  std::vector<uint64_t> key;  // the key words the rebuilt call specialises as
};

enum class KeyCallKind : uint8_t {
  kAsKeyed,  // every leaf as the key specialises it
  kGeneric,  // runtime integers (not do_not_specialize) neither divisible by 16 nor 1
};

// Rebuilds into *out a call of kernel k whose key is `w` (an entry's words, for k's target and
// options). kAsKeyed: specialize() and build_key() give exactly `w` again; kGeneric: what they
// give is the key of an entry that serves every call `w` is the key of (match_key), with every
// integer leaf that had an assumption unspecialised, or, with `only` >= 0, the only-th of
// them alone (the others as keyed). False, with *why, when no call can be rebuilt: a Python
// object or a @triton.jit function in the key, or words that do not read as a key of k's
// parameters.
TE_INTERNAL_API bool call_from_key(const KernelState& k, const uint64_t* w, size_t n,
                                   KeyCallKind kind, KeyCall* out, std::string* why, int only = -1);

// The serving class of key words `w` (an entry's, or a call's): their hash with each runtime
// leaf's specialisation ("D", the constant 1 of an annotated integer) dropped and each
// constexpr integer 1 read as the plain i32 that may serve it.
TE_INTERNAL_API uint64_t serving_class(const uint64_t* w, size_t n);

}  // namespace triton_embed::detail
