#include "core/registry.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/arg_format.h"
#include "core/errors.h"

namespace triton_embed::detail {

namespace {
struct Registry {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<KernelState>> kernels;
};
Registry& registry() {
  static Registry* r = new Registry();  // never destroyed
  return *r;
}
}  // namespace

KernelState* find_kernel(const std::string& module, const std::string& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kernels.find(std::make_pair(module, key));
  return it == r.kernels.end() ? nullptr : it->second.get();
}

KernelState* insert_kernel(const std::string& module, const std::string& key,
                           std::unique_ptr<KernelState> kernel,
                           std::unique_ptr<KernelState>* loser) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto k = std::make_pair(module, key);
  auto it = r.kernels.find(k);
  if (it != r.kernels.end()) {
    *loser = std::move(kernel);
    return it->second.get();
  }
  KernelState* raw = kernel.get();
  r.kernels.emplace(std::move(k), std::move(kernel));
  return raw;
}

void for_each_kernel(const std::function<void(KernelState&)>& f) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [key, k] : r.kernels) f(*k);
}

const std::vector<ParamInfo>& kernel_params(const KernelState* kernel) noexcept {
  return kernel->params;
}
const std::string& kernel_module(const KernelState* kernel) noexcept { return kernel->module; }
const std::string& kernel_name(const KernelState* kernel) noexcept { return kernel->name; }
const std::string& kernel_wrapper(const KernelState* kernel) noexcept { return kernel->wrapper; }

std::string kernel_signature(const KernelState* kernel) {
  std::string s = kernel->name + "(";
  for (size_t i = 0; i < kernel->params.size(); ++i) {
    const ParamInfo& p = kernel->params[i];
    if (i) s += ", ";
    s += p.name;
    if (!p.annotation.empty()) s += ": " + p.annotation;
    if (p.has_default) s += " = " + p.default_repr;
  }
  return s + ")";
}

std::string kernel_arg_where(const KernelState* kernel, size_t index) {
  return arg_where(*kernel, index);
}

KernelState* inner_kernel(KernelState* kernel) {
  TE_CHECK(kernel->inner != nullptr, ValueError)
      << full_name(*kernel) << " is a plain @triton.jit function; inner() is for kernels "
      << "wrapped in @triton.autotune or @triton.heuristics";
  return kernel->inner;
}

}  // namespace triton_embed::detail
