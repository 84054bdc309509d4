#pragma once

// One owner of the interpreter.
//
// In a plain C++ program the library starts CPython (the environment it was configured
// with, or TRITON_EMBED_PYTHON), then releases the GIL: Python runs only on a cache miss.
// Loaded into a running Python process it joins that interpreter and never starts another.
// No Python object is held in a static: the runtime keeps its references in one place and
// drops them before the interpreter shuts down.

#include <Python.h>
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/internal_api.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail::py {

namespace pyb = pybind11;

// Starts or joins the interpreter (idempotent, thread-safe). Throws PythonError.
TE_INTERNAL_API void ensure_runtime(const RuntimeOptions* options = nullptr);

// True once the interpreter is shutting down: nothing may call into Python any more.
bool closed() noexcept;

// Holds the GIL for a scope (any thread).
class Gil {
 public:
  Gil() : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

// Releases the GIL for a scope if this thread holds it, so the thread can wait for our own
// locks without deadlocking a thread that needs the GIL to finish.
class ReleaseGilIfHeld {
 public:
  ReleaseGilIfHeld();
  ~ReleaseGilIfHeld();
  ReleaseGilIfHeld(const ReleaseGilIfHeld&) = delete;
  ReleaseGilIfHeld& operator=(const ReleaseGilIfHeld&) = delete;

 private:
  PyThreadState* saved_ = nullptr;
};

// Counts a compile in flight (process exit does not touch Python while one runs).
class InFlight {
 public:
  InFlight();
  ~InFlight();
};

// The glue module (GIL held).
TE_INTERNAL_API pyb::handle glue();

// This interpreter's executable (sys.executable), once started.
std::string python_executable();

// Triton's version as (major, minor).
int triton_major();
int triton_minor();

// "ExceptionType: message" plus the formatted traceback (GIL held).
std::string format_exception(const pyb::error_already_set& e);
// The exception's type name (GIL held).
std::string exception_type(const pyb::error_already_set& e);

// The Python side of initialize(), add_python_path() and runtime_info() (runtime.h), which
// this file's PythonHost (core/python_host.h) calls.
void initialize(const RuntimeOptions& options);
void add_python_path(std::string_view dir);
RuntimeInfo runtime_info();

}  // namespace triton_embed::detail::py
