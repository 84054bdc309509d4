#pragma once

// Widening a bundle: the entries a program without Python needs to serve sizes nobody ran.
// `triton-embed-bundle widen` (tools/triton_embed_bundle.cc) and a recording that asks for it
// (set_record_widening, TRITON_EMBED_RECORD_WIDEN) both come here. For every entry the
// bundle holds it compiles, through the JIT layer, the entry's twin with every runtime
// integer unspecialised (no "D", not the constant 1): the same kernel, target, options,
// constexprs and config, so that the runtime serves every value of those integers from it
// (a less specialised entry: docs/bundle_format.md). It also adds entries at other values of
// named constexpr parameters (a wrapped kernel's heuristics computed again for each), and
// tuning rules for autotuners recorded without one. What it cannot add it reports, with why.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/internal_api.h"
#include "bundle/file_reader.h"
#include "bundle/format.h"

namespace triton_embed::detail::bundle {

struct WidenOptions {
  // Compile each entry's twin with its runtime integers unspecialised.
  bool generic = true;
  // The tuning rule of autotuners the bundle holds choices but no rule for, by kernel
  // ("module.name"; "*": every autotuned kernel). A kernel's own rule here replaces the one
  // the bundle holds; "*" only gives one where it holds none.
  std::vector<std::pair<std::string, std::string>> rules;
  // Other values of a constexpr parameter ("module.name", parameter name, values): each entry
  // of the kernel is compiled again at each value (values of several parameters of one kernel
  // combine).
  struct Values {
    std::string kernel;
    std::string param;
    std::vector<int64_t> values;
  };
  std::vector<Values> values;
};

struct WidenReport {
  struct Added {
    std::string kernel;     // module.name
    std::string target;     // cuda:90
    std::string options;    // as the entry's, "num_warps=4"
    std::string signature;  // the specialised signature
    std::string because;    // "integers unspecialised", "HEAD=64", ...
    size_t bytes = 0;       // its cubin and PTX
  };
  std::vector<Added> added;
  size_t records_added = 0;        // heuristic results computed for new constexpr values
  std::vector<std::string> rules;  // "module.name autotuner 0: nearest" (or replaced)
  size_t rules_added = 0;          // of those, the rules the bundle had none for
  struct NotAdded {
    std::string kernel, what, why;  // what: "entry #3 for cuda:90 (signature)", "its entries"
  };
  std::vector<NotAdded> not_added;
  std::vector<std::string> notes;  // what an added entry depends on (a stand-in value read)
};

// `in`'s contents with what widening adds. Compiles through the kernel sources, so the JIT
// layer must be loaded (NotSupportedError otherwise); each entry is compiled by the Triton
// installed, for the entry's own target (no GPU needed), and an entry compiled by another
// Triton version is reported, not widened. ValueError for options that name a kernel the
// bundle does not hold, or a parameter that is no constexpr of it; everything else that stops
// an entry or a rule goes into `report` and the rest is still added.
TE_INTERNAL_API Contents widen(const Bundle& in, const WidenOptions& options, WidenReport* report);

// What a recording process writes when it asked for widening (set_record_widening,
// TRITON_EMBED_RECORD_WIDEN): `recorded` widened with the default options, the report's
// problems said on stderr. Runs where the bundle is written (write_bundle, or at exit), never
// on a launch.
Contents widen_recording(const Contents& recorded);

}  // namespace triton_embed::detail::bundle
