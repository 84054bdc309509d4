// A loaded bundle's index of entries (entry_index.h): built by the store when it loads the
// bundle, read by the lookups (lookup.cc).

#include "bundle/entry_index.h"

#include <functional>

#include "core/key_values.h"
#include "core/word_hash.h"

namespace triton_embed::detail::bundle {

uint64_t bucket(std::string_view module, std::string_view name, std::string_view options,
                uint64_t words) {
  const std::hash<std::string_view> h;
  uint64_t x = word_hash_round(0x452821E638D01377ull, h(module));
  x = word_hash_round(x, h(name));
  x = word_hash_round(x, h(options));
  return word_hash_round(x, words);
}

EntryIndex index_entries(const ContentsView& c) {
  EntryIndex idx;
  for (uint32_t i = 0; i < c.entries.size(); ++i) {
    const EntryView& ev = c.entries[i];
    const KernelView& kv = c.kernels[ev.kernel];
    const uint64_t* w = ev.key_words.data();
    const size_t n = ev.key_words.size();
    idx.exact[bucket(kv.module, kv.name, ev.options, hash_words(0, w, static_cast<uint32_t>(n)))]
        .push_back(i);
    idx.serving[bucket(kv.module, kv.name, ev.options, serving_class(w, n))].push_back(i);
  }
  return idx;
}

// The entries of bucket `b` of `map` (none when it has none).
const std::vector<uint32_t>& bucket_entries(
    const std::unordered_map<uint64_t, std::vector<uint32_t>>& map, uint64_t b) {
  static const std::vector<uint32_t> kNone;
  const auto it = map.find(b);
  return it == map.end() ? kNone : it->second;
}

}  // namespace triton_embed::detail::bundle
