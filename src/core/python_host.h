#pragma once

// The process's Python, as the runtime sees it. A program linked to the JIT layer has one (the
// interpreter's owner, src/python/cpython.cc, registers it when libtriton_embed.so is
// loaded); a program linked to triton_embed::runtime only has none, and then initialize()
// refuses Python settings, add_python_path() is a NotSupportedError, runtime_info() says there
// is no JIT, and releasing the GIL does nothing. Kernel sources (core/kernel_source.h) answer for
// kernels; the host answers for the interpreter.

#include <string_view>

#include "triton_embed/detail/export.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail {

class PythonHost {
 public:
  virtual ~PythonHost() = default;
  // The Python side of initialize(), add_python_path() and runtime_info() (runtime.h).
  virtual void initialize(const RuntimeOptions& options) = 0;
  virtual void add_python_path(std::string_view dir) = 0;
  virtual RuntimeInfo runtime_info() = 0;
  // Releases the GIL if this thread holds it: returns what restore_gil needs, or nullptr when
  // nothing was released.
  virtual void* release_gil() = 0;
  virtual void restore_gil(void* token) = 0;
};

// Registers the host (once, from the JIT layer's static initialiser; it must live as long as
// the process). A second, different host is an internal error.
TRITON_EMBED_API void register_python_host(PythonHost* host);

// The host, or nullptr (a program linked to triton_embed::runtime only).
PythonHost* python_host() noexcept;

// Releases the GIL for a scope if this thread holds it (a no-op without the JIT layer), so
// the thread can wait on the runtime's locks without blocking a thread that needs the GIL.
class ReleaseGil {
 public:
  ReleaseGil();
  ~ReleaseGil();
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  PythonHost* host_ = nullptr;
  void* token_ = nullptr;
};

}  // namespace triton_embed::detail
