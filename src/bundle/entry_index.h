#pragma once

// Where a bundle's entries are, built once when it is loaded: by kernel, options and key
// words (the entry a call's key names), and by kernel, options and serving class (the entries
// that may serve a call with fewer assumptions: core/key_values.h). Each bucket lists entry
// indices in the bundle's order, so a lookup reads the few entries of one bucket whatever the
// bundle's size, and finds them in the order a search of every entry would.

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bundle/format.h"

namespace triton_embed::detail::bundle {

struct EntryIndex {
  std::unordered_map<uint64_t, std::vector<uint32_t>> exact, serving;
};

// The bucket of kernel `module.name`'s entries compiled with `options` whose key words (or
// serving class) hash to `words`.
uint64_t bucket(std::string_view module, std::string_view name, std::string_view options,
                uint64_t words);

// The index of bundle contents `c`, built when the bundle is loaded.
EntryIndex index_entries(const ContentsView& c);

// The entries of bucket `b` of `map` (none when it has none).
const std::vector<uint32_t>& bucket_entries(
    const std::unordered_map<uint64_t, std::vector<uint32_t>>& map, uint64_t b);

}  // namespace triton_embed::detail::bundle
