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

/*! Makes a Python object (a new reference, as void*) for argument \p index of the call, or
 *  returns nullptr to let the library convert the ArgValue. Layers set it (the torch layer
 *  hands over the tensors themselves); it is called with the GIL held, on slow paths only
 *  (heuristics and tuning misses). */
using PyArgFn = void* (*)(const void* ctx, uint32_t index);

/*! Zeroes the tensor behind argument \p index of the call, in stream order before the launch
 *  (what a config pre-hook's \c nargs[name].zero_() does when the runtime applies the hook);
 *  returns false when that argument is no tensor it knows. Layers set it (the torch layer). */
using ZeroArgFn = bool (*)(const void* ctx, uint32_t index);

/*! Told, on the launching thread before the launch, what a launch's autotune layers did that
 *  Triton's \c Autotuner.run leaves on the caller's objects: \c chose, the choice layer
 *  \p layer (an index into the kernel's layers) ran (the runtime's record of it, opaque here);
 *  \c hooked, the block shape a config's pre_hook that the runtime applies set on descriptor
 *  parameter \p param, as a tuple where the hook assigns one (a hook Python runs sees the
 *  caller's objects itself). The torch layer's
 *  Python fast path sets it; a launch from C++ leaves it null. */
struct CallObserver {
  void (*chose)(void* ctx, uint32_t layer, const void* choice) = nullptr;
  void (*hooked)(void* ctx, uint32_t param, const int64_t* block, uint32_t rank,
                 bool tuple) = nullptr;
  void* ctx = nullptr;
};

/*! The call as compiled code sees it: \c vals holds \c npos positional values followed by
 *  \c nnamed named ones, whose names are \c names[0..nnamed). */
struct CallArgs {
  const ArgValue* vals = nullptr;
  uint32_t npos = 0;
  uint32_t nnamed = 0;
  const ArgName* names = nullptr;
  PyArgFn py_arg = nullptr;
  ZeroArgFn zero_arg = nullptr;
  const void* ctx = nullptr;  //!< what py_arg and zero_arg are given
  const CallObserver* observer = nullptr;
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
