#pragma once

/*! \file
 *  \brief Launch grids: a fixed 1-3 dimensional grid, or a callable that computes it from
 *  the kernel's parameters (as Python's \c grid=lambda meta: ... does).
 *  \code
 *  add.launch({triton_embed::cdiv(n, 1024)}, stream, x, y, out, n, 1024);
 *  add.launch([&](const triton_embed::Meta& meta) {
 *               return triton_embed::Grid(triton_embed::cdiv(n, meta["BLOCK"]));
 *             },
 *             stream, x, y, out, n, 1024);
 *  \endcode
 */

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "triton_embed/arg_value.h"
#include "triton_embed/detail/export.h"

namespace triton_embed {

namespace detail {
struct KernelState;
struct MetaAccess;  // src/core/jit_internal.h
}  // namespace detail

/*! \brief Ceiling division, as \c triton.cdiv. */
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/*! \brief Number of programs along each axis. A grid with a zero axis launches nothing, as in
 *  Triton. Each axis must be in [0, 2^31 - 1] (y and z are further limited by the device).
 */
struct Grid {
  int64_t x = 1, y = 1, z = 1;
  constexpr Grid() = default;
  template <class X, class Y = int, class Z = int,
            class = std::enable_if_t<std::is_integral_v<X> && std::is_integral_v<Y> &&
                                     std::is_integral_v<Z>>>
  constexpr Grid(X gx, Y gy = 1, Z gz = 1)  // NOLINT(google-explicit-constructor)
      : x(static_cast<int64_t>(gx)), y(static_cast<int64_t>(gy)), z(static_cast<int64_t>(gz)) {}
};

/*! \brief The kernel's arguments by parameter name, as a grid callable sees them (the
 *  arguments of this call, with defaults filled in). Lookups compare names; they do not
 *  allocate.
 */
class TRITON_EMBED_API Meta {
 public:
  /*! \brief The integer value of parameter \p name (ints, bools, forced integer scalars and
   *  tl.constexpr of those). Throws LookupError for an unknown name, TypeError for a
   *  non-integer value. */
  int64_t operator[](std::string_view name) const;
  /*! \brief The value of parameter \p name as a double (floats and integers). */
  double get_float(std::string_view name) const;
  /*! \brief True when the kernel has a parameter called \p name. */
  bool contains(std::string_view name) const noexcept;

 private:
  friend struct detail::MetaAccess;  // the library makes them (src/core/jit_internal.h)
  Meta(const detail::KernelState* kernel, const ArgValue* args, size_t nargs) noexcept
      : kernel_(kernel), args_(args), nargs_(nargs) {}
  const ArgValue* find(std::string_view name) const;
  const detail::KernelState* kernel_;
  const ArgValue* args_;
  size_t nargs_;
};

namespace detail {
/*! A grid as the launch path sees it: a fixed grid or a thunk to the user's callable. */
struct GridSpec {
  Grid fixed;
  Grid (*fn)(const void* ctx, const Meta& meta) = nullptr;
  const void* ctx = nullptr;
};
template <class F>
Grid grid_thunk(const void* ctx, const Meta& meta) {
  return (*static_cast<const std::remove_reference_t<F>*>(ctx))(meta);
}
}  // namespace detail

}  // namespace triton_embed
