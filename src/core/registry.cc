#include "core/registry.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"

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

std::string kernel_arg_where(const KernelState* kernel, size_t index) {
  return arg_where(*kernel, index);
}

}  // namespace triton_embed::detail
