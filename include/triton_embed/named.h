#pragma once

/*! \file
 *  \brief Named kernel arguments, as Python's keyword arguments.
 *
 *  \code
 *  using namespace triton_embed::literals;
 *  matmul.launch(grid, stream, a, b, c, M, N, K, "ACTIVATION"_a = "leaky_relu");
 *  kernel.launch(grid, stream, x, out, n, triton_embed::arg(name_from_config) = 256);
 *  \endcode
 *
 *  Positional arguments come first, then named ones, as in Python; any parameter may be
 *  named, constexprs and parameters with defaults included. A name that is not a parameter,
 *  a parameter given twice and a required parameter left out raise TypeError naming the
 *  kernel and the parameter. A named argument before a positional one does not compile.
 *
 *  Names are resolved by a hash computed at compile time for \c "NAME"_a (and once per
 *  call for triton_embed::arg()), compared with the kernel's parameter names' hashes: a named
 *  launch does no string formatting and no allocation.
 */

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace triton_embed {

namespace detail {
/*! FNV-1a, 64 bits: the hash of a parameter name (constexpr, so literals hash at compile time). */
constexpr uint64_t name_hash(const char* s, size_t n) noexcept {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint8_t>(s[i]);
    h *= 0x100000001B3ull;
  }
  return h;
}
}  // namespace detail

template <class T>
struct NamedArg;

/*! \brief A parameter name; assigning a value to it makes a named argument.
 *  \code
 *  kernel.launch(grid, stream, x, out, n, triton_embed::arg("BLOCK") = 256);
 *  \endcode
 *  The characters are not copied: the name must outlive the call (a literal, or a string
 *  that lives until the launch returns). */
struct ArgName {
  const char* data;
  uint32_t size;
  uint64_t hash;

  constexpr ArgName() noexcept : data(""), size(0), hash(detail::name_hash("", 0)) {}
  constexpr ArgName(const char* s, size_t n) noexcept
      : data(s), size(static_cast<uint32_t>(n)), hash(detail::name_hash(s, n)) {}
  constexpr std::string_view view() const noexcept { return {data, size}; }

  /*! \brief \c name = value: a named argument (the value is referenced, not copied, unless it
   *  is a small trivially copyable one such as an integer or a string pointer). */
  template <class T>
  constexpr NamedArg<std::decay_t<const T>> operator=(const T& value) const noexcept;  // NOLINT
};

/*! \brief A named argument: what \c "NAME"_a = value and \c arg("NAME") = value build. */
template <class T>
struct NamedArg {
  static constexpr bool kByValue = std::is_trivially_copyable_v<T> && sizeof(T) <= 16;
  using Stored = std::conditional_t<kByValue, T, const T*>;
  ArgName name;
  Stored stored;
  constexpr const T& value() const noexcept {
    if constexpr (kByValue) {
      return stored;
    } else {
      return *stored;
    }
  }
};

template <class T>
constexpr NamedArg<std::decay_t<const T>> ArgName::operator=(const T& value) const noexcept {
  using D = std::decay_t<const T>;
  if constexpr (NamedArg<D>::kByValue) {
    return NamedArg<D>{*this, static_cast<D>(value)};  // arrays (string literals) decay here
  } else {
    return NamedArg<D>{*this, &value};
  }
}

/*! \brief A parameter name known only at run time (e.g. from a config file).
 *  \code
 *  kernel.launch(grid, stream, x, out, n, triton_embed::arg(meta_name) = 128);
 *  \endcode */
constexpr ArgName arg(std::string_view name) noexcept { return ArgName(name.data(), name.size()); }

namespace literals {
/*! \brief \c "NAME"_a = value (the pybind11 convention).
 *  \code
 *  using namespace triton_embed::literals;
 *  kernel.launch(grid, stream, x, out, n, "BLOCK"_a = 256);
 *  \endcode */
constexpr ArgName operator""_a(const char* s, size_t n) noexcept { return ArgName(s, n); }
}  // namespace literals

namespace detail {
template <class T>
struct is_named_arg : std::false_type {};
template <class T>
struct is_named_arg<NamedArg<T>> : std::true_type {};
template <class T>
inline constexpr bool is_named_arg_v = is_named_arg<std::decay_t<T>>::value;

/*! True when no positional argument follows a named one. */
template <class... Args>
constexpr bool named_args_last() {
  bool seen_named = false;
  bool ok = true;
  ((seen_named = seen_named || is_named_arg_v<Args>,
    ok = ok && (is_named_arg_v<Args> || !seen_named)),
   ...);
  return ok;
}
template <class... Args>
inline constexpr size_t kNumNamed = (size_t{0} + ... + (is_named_arg_v<Args> ? 1 : 0));
}  // namespace detail

}  // namespace triton_embed
