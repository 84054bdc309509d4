#pragma once

// Rules for tuning keys nobody tuned (issue 21): what a program without the JIT layer does
// when a launch's tuning key is in no bundle's records. Declared where a bundle is made
// (triton_embed::set_tuning_rule, a calls file's `#rule` line, `triton-embed-bundle
// --rule`), kept in the bundle as a record of kind 3 per autotune layer, applied on the
// runtime-only tuning miss (src/bundle/tune_by_rule.cc), once per new key.
//
// Text: items separated by ';', each `[NAME=]RULE`; an item without a name applies to every
// integer key dimension no item names (default: exact). RULE is
//   exact              only a recorded value serves
//   nearest            the nearest recorded value on a log2 scale (ties to the larger)
//   bucket:pow2        a recorded value in the same power-of-two bucket (2^(k-1), 2^k]
//   bucket:B1,B2,...   a recorded value in the same bucket (-inf, B1], (B1, B2], ...; a value
//                      above the last bound is refused
// Rules apply to integer dimensions only; every other part of the key (strings, bools,
// floats, None, the arguments' dtypes) must match a recorded key exactly.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace triton_embed::detail::bundle {

struct DimRule {
  enum class Kind : uint8_t { kExact, kNearest, kPow2, kBounds };
  Kind kind = Kind::kExact;
  std::vector<int64_t> bounds;  // kBounds: ascending upper bounds
  std::string str() const;
};

struct TuningRule {
  DimRule fallback;                                    // dimensions no item names
  std::vector<std::pair<std::string, DimRule>> named;  // in the order written, names unique
  // Parses `text`; false with *why set when it is not a rule.
  static bool parse(std::string_view text, TuningRule* out, std::string* why);
  // The canonical text (parse(str()) gives the same rule).
  std::string str() const;
  const DimRule& for_dim(std::string_view name) const;
  bool all_exact() const;
};

// Which recorded value serves `x` in one dimension under `r`, among `have` (the values of the
// candidate keys in that dimension); false when none does, with *why saying so (e.g. "the
// rule is exact, and 100 was not tuned").
bool serve_dim(const DimRule& r, int64_t x, const std::vector<int64_t>& have, int64_t* out,
               std::string* why);

// The rules declared in this process (set_tuning_rule), by "module.name": what record()
// writes into the bundles this process makes.
void declared_rules(std::vector<std::pair<std::string, std::string>>& out);
bool declared_rule(const std::string& kernel, std::string* text);

}  // namespace triton_embed::detail::bundle
