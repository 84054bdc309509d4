#pragma once

// For the test programs that link no pybind11 (runtime-only ones included): the message of
// the exception a call must throw.

#include <gtest/gtest.h>

#include <string>

namespace te_test {

// Runs `f`, expects it to throw E, and returns the message.
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type was thrown";
  return "";
}

}  // namespace te_test
