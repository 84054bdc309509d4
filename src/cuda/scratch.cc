#include "cuda/scratch.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "base/errors.h"
#include "cuda/driver.h"

namespace triton_embed {

ScratchAllocator::~ScratchAllocator() = default;

namespace detail::cuda {
namespace {

// Stream-ordered: the memory is freed on the launch stream after the launch, so the next
// launch on that stream can reuse it without any synchronisation. Profile scratch is
// zero-filled, as Triton 3.8's default profile allocator (torch.zeros) gives it.
class StreamOrderedAllocator final : public ScratchAllocator {
 public:
  explicit StreamOrderedAllocator(bool zero) : zero_(zero) {}
  uint64_t allocate(size_t bytes, size_t alignment, Stream stream) override {
    TE_CHECK(alignment <= 256 && (alignment & (alignment - 1)) == 0, ValueError)
        << "scratch alignment " << alignment
        << " is not supported by the default allocator (at most 256, a power of two); install "
           "one with triton_embed::set_scratch_allocator";
    const Api& a = require_api();
    CUdeviceptr p = 0;
    const auto s = reinterpret_cast<CUstream>(stream);
    check(a.cuMemAllocAsync(&p, bytes, s), "cuMemAllocAsync", "allocating kernel scratch memory");
    if (zero_) {
      const CUresult r = a.cuMemsetD8Async(p, 0, bytes, s);
      if (r != CUDA_SUCCESS) {
        a.cuMemFreeAsync(p, s);
        throw_error(r, "cuMemsetD8Async", "zero-filling kernel profile scratch memory");
      }
    }
    return static_cast<uint64_t>(p);
  }
  void release(uint64_t ptr, size_t, Stream stream) noexcept override {
    api().cuMemFreeAsync(static_cast<CUdeviceptr>(ptr), reinterpret_cast<CUstream>(stream));
  }

 private:
  bool zero_;
};

struct Slots {
  std::mutex mu;                                        // guards keep
  std::vector<std::shared_ptr<ScratchAllocator>> keep;  // every allocator ever installed
  std::atomic<ScratchAllocator*> current[2];
  std::shared_ptr<ScratchAllocator> defaults[2];
  Slots() {
    defaults[0] = std::make_shared<StreamOrderedAllocator>(false);
    defaults[1] = std::make_shared<StreamOrderedAllocator>(true);
    current[0].store(defaults[0].get());
    current[1].store(defaults[1].get());
  }
};

Slots& slots() {
  static Slots* s = new Slots();  // never destroyed: launches may run during exit
  return *s;
}

void install(bool profile, std::shared_ptr<ScratchAllocator> allocator) {
  Slots& s = slots();
  std::lock_guard<std::mutex> lock(s.mu);
  ScratchAllocator* raw = allocator ? allocator.get() : s.defaults[profile ? 1 : 0].get();
  if (allocator) s.keep.push_back(std::move(allocator));
  s.current[profile ? 1 : 0].store(raw, std::memory_order_release);
}

}  // namespace

ScratchAllocator* scratch_allocator(bool profile) noexcept {
  return slots().current[profile ? 1 : 0].load(std::memory_order_acquire);
}

}  // namespace detail::cuda

void set_scratch_allocator(std::shared_ptr<ScratchAllocator> allocator) {
  detail::cuda::install(false, std::move(allocator));
}

void set_profile_scratch_allocator(std::shared_ptr<ScratchAllocator> allocator) {
  detail::cuda::install(true, std::move(allocator));
}

}  // namespace triton_embed
