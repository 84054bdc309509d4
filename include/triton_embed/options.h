#pragma once

/*! \file
 *  \brief Triton compile and launch options (\c num_warps, \c num_stages, ...), as the
 *  keyword arguments of Python's \c kernel[grid](..., num_warps=8).
 *  \code
 *  auto add8 = add.with_options(triton_embed::Options().num_warps(8).num_stages(2));
 *  add8.launch(grid, stream, x, y, out, n, 1024);
 *  \endcode
 *  Options are fixed per JitFunction handle: a launch never parses or hashes them.
 */

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "triton_embed/detail/export.h"

namespace triton_embed {

/*! \brief The value of one option: bool, integer, float or string (None is written by
 *  leaving the option out). */
class OptionValue {
 public:
  enum class Kind : uint8_t { kBool, kInt, kFloat, kString };
  OptionValue(bool v) : kind_(Kind::kBool), i_(v ? 1 : 0) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  OptionValue(T v) : kind_(Kind::kInt), i_(static_cast<int64_t>(v)) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  OptionValue(T v) : kind_(Kind::kFloat), f_(static_cast<double>(v)) {}  // NOLINT
  OptionValue(std::string_view v) : kind_(Kind::kString), s_(v) {}       // NOLINT
  OptionValue(const char* v) : kind_(Kind::kString), s_(v) {}            // NOLINT
  OptionValue(const std::string& v) : kind_(Kind::kString), s_(v) {}     // NOLINT

  Kind kind() const noexcept { return kind_; }
  bool as_bool() const noexcept { return i_ != 0; }
  int64_t as_int() const noexcept { return i_; }
  double as_float() const noexcept { return f_; }
  const std::string& as_string() const noexcept { return s_; }
  bool operator==(const OptionValue& o) const noexcept {
    if (kind_ != o.kind_) return false;
    switch (kind_) {
      case Kind::kBool:
      case Kind::kInt:
        return i_ == o.i_;
      case Kind::kFloat:
        return f_ == o.f_;
      case Kind::kString:
        return s_ == o.s_;
    }
    return false;
  }
  bool operator!=(const OptionValue& o) const noexcept { return !(*this == o); }

 private:
  Kind kind_;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
};

/*! \brief A set of Triton options. Any field of Triton's backend options can be set with
 *  set(); the common ones have their own setters. Unknown names are rejected by the first
 *  compile with a ValueError that lists the known ones.
 */
class TRITON_EMBED_API Options {
 public:
  Options() = default;
  Options& num_warps(int v) { return set("num_warps", v); }
  Options& num_stages(int v) { return set("num_stages", v); }
  Options& num_ctas(int v) { return set("num_ctas", v); }
  Options& maxnreg(int v) { return set("maxnreg", v); }
  Options& enable_fp_fusion(bool v) { return set("enable_fp_fusion", v); }
  Options& launch_cooperative_grid(bool v) { return set("launch_cooperative_grid", v); }
  Options& launch_pdl(bool v) { return set("launch_pdl", v); }
  Options& debug(bool v) { return set("debug", v); }
  /*! \brief Sets (or replaces) option \p name. */
  Options& set(std::string_view name, OptionValue value);

  /*! \brief The options, sorted by name. */
  const std::vector<std::pair<std::string, OptionValue>>& entries() const noexcept {
    return entries_;
  }
  bool empty() const noexcept { return entries_.empty(); }
  /*! \brief Python keyword syntax, e.g. \c "num_stages=2, num_warps=8". */
  std::string str() const;
  bool operator==(const Options& o) const noexcept { return entries_ == o.entries_; }

 private:
  std::vector<std::pair<std::string, OptionValue>> entries_;
};

}  // namespace triton_embed
