#include "cuda/scratch.h"

#include <mutex>

#include "core/errors.h"
#include "cuda/driver.h"

namespace triton_embed {

ScratchAllocator::~ScratchAllocator() = default;

namespace detail::cuda {
namespace {

// Stream-ordered: the memory is freed on the launch stream after the launch, so the next
// launch on that stream can reuse it without any synchronisation.
class StreamOrderedAllocator final : public ScratchAllocator {
 public:
  uint64_t allocate(size_t bytes, size_t alignment, Stream stream) override {
    TE_CHECK(alignment <= 256 && (alignment & (alignment - 1)) == 0, ValueError)
        << "scratch alignment " << alignment
        << " is not supported by the default allocator (at most 256, a power of two); install "
           "one with triton_embed::set_scratch_allocator";
    const Api& a = require_api();
    CUdeviceptr p = 0;
    check(a.cuMemAllocAsync(&p, bytes, reinterpret_cast<CUstream>(stream)), "cuMemAllocAsync",
          "allocating kernel scratch memory");
    return static_cast<uint64_t>(p);
  }
  void release(uint64_t ptr, size_t, Stream stream) noexcept override {
    api().cuMemFreeAsync(static_cast<CUdeviceptr>(ptr), reinterpret_cast<CUstream>(stream));
  }
};

std::mutex g_mu;
std::shared_ptr<ScratchAllocator>& slot(bool profile) {
  static auto* global = new std::shared_ptr<ScratchAllocator>(std::make_shared<StreamOrderedAllocator>());
  static auto* prof = new std::shared_ptr<ScratchAllocator>(std::make_shared<StreamOrderedAllocator>());
  return profile ? *prof : *global;
}

}  // namespace

std::shared_ptr<ScratchAllocator> scratch_allocator(bool profile) {
  std::lock_guard<std::mutex> lock(g_mu);
  return slot(profile);
}

}  // namespace detail::cuda

void set_scratch_allocator(std::shared_ptr<ScratchAllocator> allocator) {
  std::lock_guard<std::mutex> lock(detail::cuda::g_mu);
  detail::cuda::slot(false) =
      allocator ? std::move(allocator) : std::make_shared<detail::cuda::StreamOrderedAllocator>();
}

void set_profile_scratch_allocator(std::shared_ptr<ScratchAllocator> allocator) {
  std::lock_guard<std::mutex> lock(detail::cuda::g_mu);
  detail::cuda::slot(true) =
      allocator ? std::move(allocator) : std::make_shared<detail::cuda::StreamOrderedAllocator>();
}

}  // namespace triton_embed
