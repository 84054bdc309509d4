#pragma once

// Bad calls of wrapped kernels that need no compile to refuse: missing, duplicated and unknown
// arguments, and arguments a layer sets. Python's binder (and Autotuner._bench) refuses each
// before a config is benchmarked; the JIT (test_autotune) and a runtime-only program reading
// the kernels from a bundle (test_runtime_only) must refuse them with the same exception and
// message, before any heuristic, tuning or bundle decision. n = 3000 is a tuning key and a
// heuristic input no recording saw: were a layer reached, the JIT would tune or run Python, and
// a runtime-only program would raise NotInBundleError.

#include <triton_embed/jit.h>
#include <triton_embed/named.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <string>

namespace te_arg_errors {

namespace te = triton_embed;

enum class Type { kTypeError, kValueError, kLookupError };

struct Case {
  const char* kernel;  // in te_tune_kernels
  const char* what;
  std::function<void(const te::JitFunction&)> call;
  Type type;
  const char* message;  // after "<signature>: "
  // The same call in Python (te_helpers.call_error), and the exception class Python raises.
  const char* py_args;
  const char* py_kwargs;
  const char* py_type;
};

inline float* const kX = reinterpret_cast<float*>(uintptr_t{0x10000});
inline float* const kOut = reinterpret_cast<float*>(uintptr_t{0x30000});

inline const char* const kTunedSig = "fake_tuned_mode_kernel(x_ptr, out_ptr, n, MODE, BLOCK)";
inline const char* const kHeurSig = "heur_mode_kernel(x_ptr, out_ptr, n, MODE, BLOCK)";

inline const Case* cases(size_t* n) {
  using namespace te::literals;
  static const Case all[] = {
      // @triton.autotune: the configs set BLOCK.
      {"fake_tuned_mode_kernel", "a required constexpr missing",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000); }, Type::kTypeError,
       "missing 1 required argument: 'MODE'", "[X, O, 3000]", "{}", "TypeError"},
      {"fake_tuned_mode_kernel", "a required runtime argument missing",
       [](const te::JitFunction& k) { k.compile(kX, kOut, "MODE"_a = "neg"); }, Type::kTypeError,
       "missing 1 required argument: 'n'", "[X, O]", "{'MODE': 'neg'}", "TypeError"},
      {"fake_tuned_mode_kernel", "by position and by name",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", "MODE"_a = "neg"); },
       Type::kTypeError, "got multiple values for argument 'MODE' (#3): by position and by name",
       "[X, O, 3000, 'neg']", "{'MODE': 'neg'}", "TypeError"},
      {"fake_tuned_mode_kernel", "named twice",
       [](const te::JitFunction& k) {
         k.compile(kX, kOut, 3000, "MODE"_a = "neg", "MODE"_a = "x");
       },
       Type::kTypeError, "got multiple values for argument 'MODE' (#3): named twice", nullptr,
       nullptr, nullptr},  // not a Python call
      {"fake_tuned_mode_kernel", "an unknown name",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", "MOOD"_a = 1); },
       Type::kLookupError,
       "got an unexpected named argument 'MOOD'; the parameters are the names in the signature",
       "[X, O, 3000, 'neg']", "{'MOOD': 1}", "KeyError"},
      {"fake_tuned_mode_kernel", "too many positional arguments",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", 64, 1); }, Type::kTypeError,
       "expected 5 arguments, got 6", "[X, O, 3000, 'neg', 64, 1]", "{}", "TypeError"},
      {"fake_tuned_mode_kernel", "a config's meta-parameter by name",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", "BLOCK"_a = 64); },
       Type::kValueError,
       "Conflicting meta-parameters: BLOCK. Make sure that you don't re-define auto-tuned symbols.",
       "[X, O, 3000, 'neg']", "{'BLOCK': 64}", "ValueError"},
      {"fake_tuned_mode_kernel", "a config's meta-parameter by position",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", 64); }, Type::kTypeError,
       "got multiple values for argument 'BLOCK' (#4): by position and by name from the autotune "
       "configs, which set it: leave it out",
       "[X, O, 3000, 'neg', 64]", "{}", "TypeError"},
      // @triton.heuristics: the heuristic sets BLOCK (from n).
      {"heur_mode_kernel", "a required constexpr missing",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000); }, Type::kTypeError,
       "missing 1 required argument: 'MODE'", "[X, O, 3000]", "{}", "TypeError"},
      // Python's heuristic reads args["n"] first and raises KeyError; the binder's verdict,
      // which needs no Python, is TypeError.
      {"heur_mode_kernel", "a required runtime argument missing",
       [](const te::JitFunction& k) { k.compile(kX, kOut, "MODE"_a = "neg"); }, Type::kTypeError,
       "missing 1 required argument: 'n'", "[X, O]", "{'MODE': 'neg'}", "KeyError"},
      {"heur_mode_kernel", "by position and by name",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", "n"_a = 5); },
       Type::kTypeError, "got multiple values for argument 'n' (#2): by position and by name",
       "[X, O, 3000, 'neg']", "{'n': 5}", "TypeError"},
      {"heur_mode_kernel", "an unknown name",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", "MOOD"_a = 1); },
       Type::kLookupError,
       "got an unexpected named argument 'MOOD'; the parameters are the names in the signature",
       "[X, O, 3000, 'neg']", "{'MOOD': 1}", "KeyError"},
      {"heur_mode_kernel", "too many positional arguments",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", 64, 1); }, Type::kTypeError,
       "expected 5 arguments, got 6", "[X, O, 3000, 'neg', 64, 1]", "{}", "TypeError"},
      {"heur_mode_kernel", "the heuristic's parameter by position",
       [](const te::JitFunction& k) { k.compile(kX, kOut, 3000, "neg", 64); }, Type::kTypeError,
       "got multiple values for argument 'BLOCK' (#4): by position and by name from "
       "@triton.heuristics, which set it: leave it out",
       "[X, O, 3000, 'neg', 64]", "{}", "TypeError"},
  };
  *n = sizeof(all) / sizeof(all[0]);
  return all;
}

inline const char* signature_of(const Case& c) { return c.kernel[0] == 'f' ? kTunedSig : kHeurSig; }

// Runs the case; returns "" when it raised the expected type with the expected message, else
// what happened instead.
inline std::string check(const Case& c, const te::JitFunction& k) {
  const std::string want = std::string(signature_of(c)) + ": " + c.message;
  auto compare = [&](const char* type_name, const std::exception& e, Type got) -> std::string {
    if (got != c.type) return std::string("raised ") + type_name + ": " + e.what();
    if (want != e.what()) return std::string("message: ") + e.what();
    return "";
  };
  try {
    c.call(k);
  } catch (const te::ValueError& e) {
    return compare("ValueError", e, Type::kValueError);
  } catch (const te::TypeError& e) {
    return compare("TypeError", e, Type::kTypeError);
  } catch (const te::LookupError& e) {  // NotInBundleError is one, and is not expected
    if (dynamic_cast<const te::NotInBundleError*>(&e) != nullptr) {
      return std::string("raised NotInBundleError: ") + e.what();
    }
    return compare("LookupError", e, Type::kLookupError);
  } catch (const std::exception& e) {
    return std::string("raised another error: ") + e.what();
  }
  return "raised nothing";
}

}  // namespace te_arg_errors
