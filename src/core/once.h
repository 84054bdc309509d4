#pragma once

// One build per key across threads: the protocol the runtime follows for every slow path that
// makes something once and publishes it (a cache entry compiled or read from a bundle, a
// tuned choice). The first thread to miss a key builds it with no lock held; threads that miss
// the same key meanwhile wait for it (releasing the GIL first); a failed build is handed to
// them and nothing is published, so the next miss builds again. A build belongs to the
// resolutions' epoch it started in (core/registry.h): a thread of a later epoch (bundles were
// unloaded since) builds its own, and a build whose epoch passed gives its result to its own
// callers only.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/internal_api.h"

namespace triton_embed::detail {

class OncePerKey {
 public:
  // The steps of one key's build.
  class Build {
   public:
    // Under the owner's mutex: the published result, or nullptr.
    virtual void* find() = 0;
    // No lock held: builds the result (may throw: nothing is published).
    virtual void make() = 0;
    // Under the owner's mutex: publishes what make() built and returns it (may throw); with
    // `keep` false (its epoch passed), returns it, owned but not published.
    virtual void* publish(bool keep) = 0;

   protected:
    ~Build() = default;
  };

  // The result for key (head, words[0, n)) with hash `hash`: published, waited for (a build of
  // the same epoch), or built here. `mu` is the owner's mutex (guards what find and publish touch).
  // With `shared` false (a key too long to memoise) the build is this thread's own and nothing
  // waits on it.
  void* get(std::mutex& mu, uint64_t head, const uint64_t* words, uint32_t n, uint64_t hash,
            Build& build, bool shared = true);

  // Threads waiting for a build in flight. Caller holds the owner's mutex.
  TE_INTERNAL_API int waiters() const noexcept;

 private:
  struct Pending;
  std::vector<std::shared_ptr<Pending>> pending_;
};

}  // namespace triton_embed::detail
