// The registered Python host (core/python_host.h), and the public calls that go to it:
// initialize(), add_python_path(), runtime_info() (runtime.h).

#include "core/python_host.h"

#include <atomic>

#include "base/errors.h"
#include "core/target.h"

namespace triton_embed::detail {

namespace {

// Constant-initialised: set before any use.
std::atomic<PythonHost*> g_python_host{nullptr};

}  // namespace

void register_python_host(PythonHost* host) {
  PythonHost* expected = nullptr;
  if (!g_python_host.compare_exchange_strong(expected, host, std::memory_order_acq_rel)) {
    TE_ICHECK(expected == host) << "a second Python host registered itself (two copies of "
                                << "libtriton_embed.so loaded into one process?)";
  }
}

PythonHost* python_host() noexcept { return g_python_host.load(std::memory_order_acquire); }

ReleaseGil::ReleaseGil() : host_(python_host()) {
  if (host_ != nullptr) token_ = host_->release_gil();
}
ReleaseGil::~ReleaseGil() {
  if (token_ != nullptr) host_->restore_gil(token_);
}

}  // namespace triton_embed::detail

namespace triton_embed {

void initialize(const RuntimeOptions& options) {
  if (detail::PythonHost* host = detail::python_host()) {
    host->initialize(options);
  } else {
    TE_CHECK(options.python.empty() && options.python_paths.empty(), NotSupportedError)
        << "initialize: RuntimeOptions::" << (options.python.empty() ? "python_paths" : "python")
        << " is set, but this program links triton_embed::runtime only, which starts no Python: "
        << "link triton_embed::triton_embed to run kernels from Python modules, or leave "
        << "RuntimeOptions::python and python_paths empty";
  }
  if (options.target.has_value()) set_target(options.target);
}

void add_python_path(std::string_view dir) {
  if (detail::PythonHost* host = detail::python_host()) return host->add_python_path(dir);
  TE_THROW(NotSupportedError) << "add_python_path(\"" << dir << "\"): this program links "
                              << "triton_embed::runtime only, which starts no Python: link "
                              << "triton_embed::triton_embed to load kernels from Python modules";
}

RuntimeInfo runtime_info() {
  if (detail::PythonHost* host = detail::python_host()) return host->runtime_info();
  return RuntimeInfo{};  // jit == false: no interpreter, no Triton
}

}  // namespace triton_embed
