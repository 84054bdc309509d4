#pragma once

// Error helpers. User errors: TE_CHECK(cond, ValueError) << "message"; internal invariants:
// TE_ICHECK(cond) << "message"; unconditional: TE_THROW(TypeError) << "message". Inside a
// handler of a Python exception, TE_THROW_CAUSED(PythonError) << "message" throws the
// library's error with that exception as its cause (Error::cause()): a C++ caller catches the
// library's type, a Python caller (the fast path) raises the original.
// The message is streamed only on the failure path; the final `&` is a [[noreturn]] call, so
// the compiler knows the statement does not return.

#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "base/internal_api.h"
#include "triton_embed/error.h"

#define TE_LIKELY(x) __builtin_expect(!!(x), 1)
#define TE_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace triton_embed::detail {

// Throws a new exception of the same type and message as the one `p` holds (an exception
// thrown to several threads, e.g. a failed compile's to the threads that waited for it:
// each gets its own object rather than one shared across threads), with `prefix` before its
// message (the bundle tool's "file:line: ") and the same cause. Others are rethrown.
[[noreturn]] TE_INTERNAL_API void rethrow_copy(const std::exception_ptr& p,
                                               std::string_view prefix = {});

class ErrorStream {
 public:
  ErrorStream() = default;
  explicit ErrorStream(const std::string& prefix) { os_ << prefix; }
  template <class T>
  ErrorStream& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

struct ErrorAccess {
  static void set_cause(Error& e, std::exception_ptr cause) noexcept {
    e.cause_ = std::move(cause);
  }
};

template <class E, bool kCaused = false>
struct Thrower {
  [[noreturn]] friend void operator&(Thrower, const ErrorStream& s) {
    if constexpr (std::is_base_of_v<CudaError, E>) {
      throw E(s.str(), "", 0, "", "");
    } else if constexpr (kCaused) {
      E e(s.str());
      ErrorAccess::set_cause(e, std::current_exception());
      throw e;
    } else {
      throw E(s.str());
    }
  }
};

}  // namespace triton_embed::detail

#define TE_THROW(Exc) \
  ::triton_embed::detail::Thrower<::triton_embed::Exc>() & ::triton_embed::detail::ErrorStream()
#define TE_THROW_CAUSED(Exc)                                     \
  ::triton_embed::detail::Thrower<::triton_embed::Exc, true>() & \
      ::triton_embed::detail::ErrorStream()
#define TE_CHECK(cond, Exc) \
  if (TE_LIKELY(cond)) {    \
  } else                    \
    TE_THROW(Exc)
#define TE_ICHECK(cond)                                                                      \
  if (TE_LIKELY(cond)) {                                                                     \
  } else                                                                                     \
    ::triton_embed::detail::Thrower<::triton_embed::Error>() &                               \
        ::triton_embed::detail::ErrorStream(std::string("triton_embed internal error at ") + \
                                            __FILE__ + ":" + std::to_string(__LINE__) +      \
                                            " (" #cond "): ")
