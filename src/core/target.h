#pragma once

// Compile targets as 32-bit codes (arch | warp_size << 16) for the cache key, and the
// process-wide explicit target (set_target / RuntimeOptions::target / TRITON_EMBED_TARGET).

#include <atomic>
#include <cstdint>

#include "base/internal_api.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail {

inline uint32_t target_code(int arch, int warp_size) {
  return static_cast<uint32_t>(arch) | static_cast<uint32_t>(warp_size) << 16;
}
inline int target_arch(uint32_t code) { return static_cast<int>(code & 0xFFFF); }
inline int target_warp_size(uint32_t code) { return static_cast<int>(code >> 16); }
TE_INTERNAL_API std::string target_str(uint32_t code);

// The explicit target's code (0: none), and whether TRITON_EMBED_TARGET was read
// (read_env_target, once): core/target.cc.
extern std::atomic<uint32_t> g_target;
extern std::atomic<bool> g_target_env_read;
void read_env_target();

// 0 when no explicit target is set. Reads TRITON_EMBED_TARGET on first use. Inline: every
// launch reads it.
inline uint32_t explicit_target_code() {
  if (__builtin_expect(!g_target_env_read.load(std::memory_order_acquire), 0)) read_env_target();
  return g_target.load(std::memory_order_relaxed);
}

// The target of a launch on a device of architecture `arch`: the explicit one when set, else
// the device's. Inline: every launch computes it.
inline uint32_t launch_target_code(int arch) {
  const uint32_t forced = explicit_target_code();
  return forced != 0 ? forced : target_code(arch, 32);
}

// The explicit target, else the current device's (making device 0's primary context current
// when none is); 0 when neither is known (no explicit target, no usable driver). Slow paths.
// A thread running a job for another (core/workers.h) answers that job's target.
uint32_t current_target_code();
// current_target_code() when it is known without making a context current: the job's, the
// explicit one, else the current context's; 0 otherwise (a job then finds its own).
uint32_t known_target_code();

// The target this thread's slow paths compile for (current_target_code), for a scope: a worker
// running another thread's compile job, or one of the tool's jobs for a target of its own.
// The launch path does not read it (a launch's target is its device's, or the explicit one).
class TE_INTERNAL_API JobTarget {
 public:
  explicit JobTarget(uint32_t code) noexcept;
  ~JobTarget();
  JobTarget(const JobTarget&) = delete;
  JobTarget& operator=(const JobTarget&) = delete;

 private:
  uint32_t saved_;
};

// Whether code for target `have` can run where `want` is asked for: the same target, or an
// older architecture of the same warp size (through PTX, or as the same-major cubin rules
// allow: callers decide which).
inline bool older_or_same_target(uint32_t have, uint32_t want) {
  return target_warp_size(have) == target_warp_size(want) && target_arch(have) <= target_arch(want);
}

}  // namespace triton_embed::detail
