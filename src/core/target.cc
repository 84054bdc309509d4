#include "core/target.h"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>

#include "base/errors.h"
#include "cuda/driver.h"

namespace triton_embed {

namespace {

bool parse_int(std::string_view s, int* out) {
  if (s.empty() || s.size() > 6) return false;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::once_flag g_env_once;

}  // namespace

namespace detail {

std::atomic<uint32_t> g_target{0};
std::atomic<bool> g_target_env_read{false};

void read_env_target() {
  if (g_target_env_read.load(std::memory_order_acquire)) return;
  std::call_once(g_env_once, [] {
    const char* env = std::getenv("TRITON_EMBED_TARGET");
    if (env != nullptr && *env != '\0') {
      Target t;
      try {
        t = Target::parse(env);
      } catch (const ValueError& e) {
        throw ValueError(std::string("TRITON_EMBED_TARGET: ") + e.what());
      }
      uint32_t expected = 0;
      g_target.compare_exchange_strong(expected, target_code(t.arch, t.warp_size));
    }
    g_target_env_read.store(true, std::memory_order_release);
  });
}

}  // namespace detail

Target Target::parse(std::string_view text) {
  std::string_view s = text;
  Target t;
  const auto fail = [&]() -> Target {
    TE_THROW(ValueError) << "invalid target '" << text
                         << "': expected 'cuda:<arch>' (e.g. cuda:90), 'cuda:<arch>:<warp size>', "
                            "'sm_90' or '90'";
  };
  if (s.substr(0, 5) == "cuda:") {
    s.remove_prefix(5);
    const size_t colon = s.find(':');
    if (colon != std::string_view::npos) {
      if (!parse_int(s.substr(colon + 1), &t.warp_size)) return fail();
      s = s.substr(0, colon);
    }
  } else if (s.substr(0, 3) == "sm_") {
    s.remove_prefix(3);
  } else if (s.substr(0, 2) == "sm") {
    s.remove_prefix(2);
  }
  if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) s.remove_suffix(1);  // sm_90a
  if (!parse_int(s, &t.arch) || t.arch < 50 || t.arch > 0xFFFF) return fail();
  if (t.warp_size <= 0 || t.warp_size > 1024) return fail();
  return t;
}

std::string Target::str() const {
  std::string s = backend + ":" + std::to_string(arch);
  if (warp_size != 32) s += ":" + std::to_string(warp_size);
  return s;
}

void set_target(std::optional<Target> target) {
  detail::read_env_target();
  if (target.has_value()) {
    TE_CHECK(target->backend == "cuda", ValueError)
        << "set_target: only the 'cuda' backend is supported, got '" << target->backend << "'";
    detail::g_target.store(detail::target_code(target->arch, target->warp_size));
  } else {
    detail::g_target.store(0);
  }
}

std::optional<Target> explicit_target() {
  const uint32_t code = detail::explicit_target_code();
  if (code == 0) return std::nullopt;
  Target t;
  t.arch = detail::target_arch(code);
  t.warp_size = detail::target_warp_size(code);
  return t;
}

namespace detail {

std::string target_str(uint32_t code) {
  Target t;
  t.arch = target_arch(code);
  t.warp_size = target_warp_size(code);
  return t.str();
}

namespace {
thread_local uint32_t t_job_target = 0;  // JobTarget's, 0: none
}  // namespace

JobTarget::JobTarget(uint32_t code) noexcept : saved_(t_job_target) { t_job_target = code; }
JobTarget::~JobTarget() { t_job_target = saved_; }

uint32_t known_target_code() {
  if (t_job_target != 0) return t_job_target;
  const uint32_t forced = explicit_target_code();
  if (forced != 0 || !cuda::api().ok) return forced;
  CUcontext ctx = nullptr;
  if (cuda::api().cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) return 0;
  return target_code(cuda::current_context().arch, 32);  // current already: nothing is made
}

uint32_t current_target_code() {
  if (t_job_target != 0) return t_job_target;
  const uint32_t forced = explicit_target_code();
  if (forced != 0 || !cuda::api().ok) return forced;  // no context is made for it
  return target_code(cuda::current_context().arch, 32);
}

}  // namespace detail
}  // namespace triton_embed
