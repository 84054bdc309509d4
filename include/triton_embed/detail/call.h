#pragma once

/*! \file
 *  \brief A call's arguments in plain data: positional values, then named ones with their
 *  names. What the launch templates hand to compiled code.
 */

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "triton_embed/arg_value.h"
#include "triton_embed/args.h"
#include "triton_embed/named.h"

namespace triton_embed {

/*! A named argument is filled as its value. */
template <class T>
struct ArgTraits<NamedArg<T>> {
  static constexpr size_t kNested = detail::nested_slots<T>();
  static void fill(const NamedArg<T>& a, ArgValue& out, ArgValue*& nested) {
    ArgTraits<std::decay_t<T>>::fill(a.value(), out, nested);
  }
};

namespace detail {

/*! What a layer above the core attaches to a call (the torch layer: the tensors themselves for
 *  Python, zeroing a tensor, an observer of the autotune layers). Opaque here: declared in the
 *  library's private headers; a launch from C++ leaves it null. */
struct CallHooks;

/*! The call as compiled code sees it: \c vals holds \c npos positional values followed by
 *  \c nnamed named ones, whose names are \c names[0..nnamed). */
struct CallArgs {
  const ArgValue* vals = nullptr;
  uint32_t npos = 0;
  uint32_t nnamed = 0;
  const ArgName* names = nullptr;
  const CallHooks* hooks = nullptr;
};

template <class A>
inline void fill_name(ArgName*& out, const A& a) {
  if constexpr (is_named_arg_v<A>) *out++ = a.name;
}

/*! Writes the names of the named arguments, in order. */
template <class... Args>
inline void fill_names(ArgName* out, const Args&... args) {
  (fill_name(out, args), ...);
}

/*! Static checks every argument list goes through. */
template <class... Args>
constexpr void check_call() {
  static_assert(sizeof...(Args) <= 96, "triton_embed: too many kernel arguments");
  static_assert(named_args_last<Args...>(),
                "triton_embed: a positional argument follows a named one (\"NAME\"_a = value); "
                "as in Python, pass positional arguments first, then named ones");
}

/*! A call's arguments on the stack: the values (nested ones after them) and the names. */
template <class... Args>
struct CallStorage {
  static constexpr size_t kNamed = kNumNamed<Args...>;
  static constexpr size_t kPositional = sizeof...(Args) - kNamed;
  ArgValue vals[kArgSlots<Args...> + 1];
  ArgName names[kNamed + 1];

  explicit CallStorage(const Args&... args) {
    check_call<Args...>();
    fill_args(vals, args...);
    if constexpr (kNamed != 0) fill_names(names, args...);
  }
  CallArgs call() const {
    CallArgs c;
    c.vals = vals;
    c.npos = static_cast<uint32_t>(kPositional);
    c.nnamed = static_cast<uint32_t>(kNamed);
    c.names = names;
    return c;
  }
};

}  // namespace detail
}  // namespace triton_embed
