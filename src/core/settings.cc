// The runtime's process-wide settings (core/settings.h): their state, the public calls that set
// them, and the environment variables read once in their place.

#include "core/settings.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "base/errors.h"

namespace triton_embed::detail {

namespace {

// A variable set to something other than "", "0" or "off".
bool env_on(const char* name) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0 &&
         std::strcmp(env, "off") != 0;
}

// set_heuristic_evaluation()'s, else TRITON_EMBED_HEURISTICS's (read on the first heuristic
// miss): kUnset until either says.
constexpr int kUnset = -1;
std::atomic<int> g_heuristic_evaluation{kUnset};
std::once_flag g_heuristic_env_once;

std::mutex& widening_mu() {
  static std::mutex* mu = new std::mutex();  // never destroyed: used at exit
  return *mu;
}
std::optional<bool> g_widening;  // set_record_widening's, else the environment's

}  // namespace

HeuristicEvaluation heuristic_evaluation() {
  int how = g_heuristic_evaluation.load(std::memory_order_acquire);
  if (how != kUnset) return static_cast<HeuristicEvaluation>(how);
  std::call_once(g_heuristic_env_once, [] {
    const char* env = std::getenv("TRITON_EMBED_HEURISTICS");
    int from_env = static_cast<int>(HeuristicEvaluation::kPython);
    if (env != nullptr && *env != '\0') {
      const std::string v(env);
      TE_CHECK(v == "python" || v == "expressions", ValueError)
          << "TRITON_EMBED_HEURISTICS='" << v
          << "': expected 'python' (run each @triton.heuristics function in Python, the "
          << "default) or 'expressions' (evaluate the heuristics translated into expressions "
          << "in C++, and run only the others in Python)";
      if (v == "expressions") from_env = static_cast<int>(HeuristicEvaluation::kExpressions);
    }
    int expected = kUnset;  // set_heuristic_evaluation() wins over the environment
    g_heuristic_evaluation.compare_exchange_strong(expected, from_env, std::memory_order_acq_rel);
  });
  return static_cast<HeuristicEvaluation>(g_heuristic_evaluation.load(std::memory_order_acquire));
}

bool record_widening() {
  std::lock_guard<std::mutex> lock(widening_mu());
  if (!g_widening) g_widening = env_on("TRITON_EMBED_RECORD_WIDEN");
  return *g_widening;
}

bool bundle_ptx_allowed() {
  static const bool allowed = [] {
    const char* env = std::getenv("TRITON_EMBED_BUNDLE_PTX");
    return env == nullptr || (std::strcmp(env, "0") != 0 && std::strcmp(env, "off") != 0);
  }();
  return allowed;
}

bool bundle_strict() {
  static const bool on = env_on("TRITON_EMBED_BUNDLE_STRICT");
  return on;
}

}  // namespace triton_embed::detail

namespace triton_embed {

void set_heuristic_evaluation(HeuristicEvaluation how) {
  TE_CHECK(how == HeuristicEvaluation::kPython || how == HeuristicEvaluation::kExpressions,
           ValueError)
      << "set_heuristic_evaluation: " << static_cast<int>(how)
      << " is not a HeuristicEvaluation (kPython or kExpressions)";
  detail::g_heuristic_evaluation.store(static_cast<int>(how), std::memory_order_release);
}

void set_record_widening(bool on) {
  std::lock_guard<std::mutex> lock(detail::widening_mu());
  detail::g_widening = on;
}

}  // namespace triton_embed
