// Binding calls (core/bind.h): Python's binder error for a positional call's argument count,
// and a call with named arguments or of a wrapped kernel bound into a Frame, checked as Python
// checks it before a heuristic runs or a config is benchmarked.

#include "core/bind.h"

#include <cstring>
#include <string>

#include "base/errors.h"
#include "core/arg_format.h"

namespace triton_embed::detail {

void throw_arg_count(const KernelState& k, size_t nargs) {
  const size_t np = k.params.size();
  if (k.min_args == np) {
    TE_THROW(TypeError) << call_signature(k) << ": expected " << np << " argument"
                        << (np == 1 ? "" : "s") << ", got " << nargs;
  }
  TE_THROW(TypeError) << call_signature(k) << ": expected " << k.min_args << " to " << np
                      << " arguments (the last " << np - k.min_args << " have defaults), got "
                      << nargs;
}

namespace {

int find_param(const KernelState& k, const ArgName& name) noexcept {
  const size_t np = k.params.size();
  const uint64_t* hashes = k.name_hashes.data();
  for (size_t i = 0; i < np; ++i) {
    if (hashes[i] != name.hash) continue;
    // The hash matched: confirm the bytes.
    const std::string& pn = k.params[i].name;
    if (pn.size() == name.size && same_bytes(pn.data(), name.data, name.size)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

[[noreturn]] void throw_unknown_name(const KernelState& k, const ArgName& name) {
  const std::string n(name.view());
  static const char* const kOptions[] = {"num_warps",
                                         "num_stages",
                                         "num_ctas",
                                         "maxnreg",
                                         "debug",
                                         "launch_pdl",
                                         "launch_cooperative_grid"};
  for (const char* o : kOptions) {
    if (n == o) {
      TE_THROW(NotSupportedError) << call_signature(k) << ": got an unexpected named argument '"
                                  << n
                                  << "': it is a Triton option, not a parameter; set it with "
                                     "with_options(triton_embed::Options()."
                                  << n << "(...))";
    }
  }
  // Python's JITFunction.run raises KeyError (a LookupError) for a keyword that names neither
  // a parameter nor an option.
  TE_THROW(LookupError) << call_signature(k) << ": got an unexpected named argument '" << n
                        << "'; the parameters are the names in the signature";
}

[[noreturn]] void throw_twice(const KernelState& k, int p, bool positional) {
  TE_THROW(TypeError) << call_signature(k) << ": got multiple values for argument '"
                      << k.params[p].name << "' (#" << p
                      << "): " << (positional ? "by position and by name" : "named twice");
}

}  // namespace

// The required parameters the frame lacks, leaving out those in `later` (a layer may still
// set them).
[[noreturn]] void throw_missing(const KernelState& k, const Frame& f, const ParamMask& later) {
  auto lacks = [&](uint32_t p) {
    return f.given[p] == kAbsent && !k.params[p].has_default && !later.has(p);
  };
  size_t n = 0;
  for (uint32_t p = 0; p < f.np; ++p) n += lacks(p);
  std::string names;
  size_t i = 0;
  for (uint32_t p = 0; p < f.np; ++p) {
    if (!lacks(p)) continue;
    if (i != 0) names += (i + 1 == n) ? " and " : ", ";
    names += "'" + k.params[p].name + "'";
    ++i;
  }
  TE_THROW(TypeError) << call_signature(k) << ": missing " << n << " required argument"
                      << (n == 1 ? "" : "s") << ": " << names;
}

namespace {

// A parameter the call gives that a layer sets too, as Python refuses it: Autotuner._bench
// refuses a config's meta-parameter given by name (ValueError) before it benchmarks; the
// binder then refuses one given by position that a heuristic or config passes by name
// (TypeError). One given by name that a heuristic sets is overwritten, as in Python.
[[noreturn]] void throw_layer_conflict(const KernelState& k, uint32_t p, bool positional) {
  if (!positional) {
    TE_THROW(ValueError) << call_signature(k)
                         << ": Conflicting meta-parameters: " << k.params[p].name
                         << ". Make sure that you don't re-define auto-tuned symbols.";
  }
  TE_THROW(TypeError) << call_signature(k) << ": got multiple values for argument '"
                      << k.params[p].name << "' (#" << p << "): by position and by name from "
                      << (k.layer_params.heuristic.has(p) ? "@triton.heuristics"
                                                          : "the autotune configs")
                      << ", which set it: leave it out";
}

// The checks of a wrapped kernel's call that Python makes before a heuristic runs or a config
// is benchmarked (Autotuner._bench's conflict, then the binder's multiple and missing
// values): `given` is every parameter the call passed, `positional` those by position.
void check_against_layers(const KernelState& k, const Frame& f, const ParamMask& given,
                          const ParamMask& positional) {
  const LayerParams& lp = k.layer_params;
  uint64_t conflict[2], twice[2], missing[2];
  for (int w = 0; w < 2; ++w) {
    const uint64_t layers = lp.heuristic.w[w] | lp.config.w[w];
    conflict[w] = given.w[w] & ~positional.w[w] & lp.config.w[w];
    twice[w] = positional.w[w] & layers;
    missing[w] = lp.required.w[w] & ~given.w[w] & ~layers;
  }
  auto first = [](const uint64_t* m) {
    return m[0] != 0 ? static_cast<uint32_t>(__builtin_ctzll(m[0]))
                     : 64 + static_cast<uint32_t>(__builtin_ctzll(m[1]));
  };
  if (TE_UNLIKELY((conflict[0] | conflict[1]) != 0))
    throw_layer_conflict(k, first(conflict), false);
  if (TE_UNLIKELY((twice[0] | twice[1]) != 0)) throw_layer_conflict(k, first(twice), true);
  if (TE_UNLIKELY((missing[0] | missing[1]) != 0)) {
    ParamMask later;
    for (int w = 0; w < 2; ++w) later.w[w] = lp.heuristic.w[w] | lp.config.w[w];
    throw_missing(k, f, later);
  }
}

}  // namespace

void bind_frame(const KernelState& k, const CallArgs& call, Frame& f) {
  const uint32_t np = static_cast<uint32_t>(k.params.size());
  f.np = np;
  f.npos = call.npos;
  f.nkw = 0;
  f.call = &call;
  if (TE_UNLIKELY(call.npos > np)) throw_arg_count(k, call.npos);
  std::memset(f.given, kAbsent, np);
  for (uint32_t i = 0; i < call.npos; ++i) {
    f.vals[i] = call.vals[i];
    f.given[i] = kPositional;
    f.call_index[i] = static_cast<int16_t>(i);
  }
  ParamMask positional;
  for (uint32_t w = 0; w < 2; ++w) {
    const uint32_t n = call.npos > 64 * w ? call.npos - 64 * w : 0;
    positional.w[w] = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  }
  ParamMask given = positional;
  for (uint32_t j = 0; j < call.nnamed; ++j) {
    const int p = find_param(k, call.names[j]);
    if (TE_UNLIKELY(p < 0)) throw_unknown_name(k, call.names[j]);
    if (TE_UNLIKELY(f.given[p] != kAbsent)) throw_twice(k, p, f.given[p] == kPositional);
    f.set_keyword(static_cast<uint32_t>(p), call.vals[call.npos + j],
                  static_cast<int16_t>(call.npos + j));
    given.set(static_cast<uint32_t>(p));
  }
  if (!k.layers.empty()) check_against_layers(k, f, given, positional);
}

void index_layer_params(KernelState& k) {
  LayerParams lp;
  for (uint32_t p = 0; p < k.params.size(); ++p) {
    if (!k.params[p].has_default) lp.required.set(p);
  }
  for (const auto& layer : k.layers) {
    if (layer->kind == Layer::Kind::kHeuristics) {
      for (const auto& h : layer->heuristics) {
        if (!h->option) lp.heuristic.set(h->param);
      }
    } else {
      for (uint32_t p : layer->tune->config_params) lp.config.set(p);
    }
  }
  k.layer_params = lp;
}

int call_param_index(const KernelState* kernel, const CallArgs& call, uint32_t index) noexcept {
  if (index < call.npos) return static_cast<int>(index);
  if (index - call.npos >= call.nnamed) return -1;
  return find_param(*kernel, call.names[index - call.npos]);
}

}  // namespace triton_embed::detail
