// Checking a bundle before it is loaded, and describing its decisions (validate.h).

#include "bundle/validate.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

#include "base/errors.h"
#include "bundle/kernel_table.h"
#include "bundle/store.h"
#include "core/arg_format.h"
#include "core/target.h"
#include "core/triton_versions.h"

namespace triton_embed::detail::bundle {

namespace {

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  throw BundleError(where + ": " + what + "; rebuild the bundle", BundleError::Reason::kCorrupt);
}

// The rank of each tensor descriptor a signature names ("tensordesc<fp16[64, 64]>": 2), in
// order.
std::vector<int> descriptor_ranks(std::string_view sig) {
  std::vector<int> ranks;
  for (size_t at = sig.find("tensordesc<"); at != std::string_view::npos;
       at = sig.find("tensordesc<", at + 1)) {
    const size_t open = sig.find('[', at), close = sig.find(']', at);
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      ranks.push_back(-1);
      continue;
    }
    ranks.push_back(static_cast<int>(std::count(sig.begin() + open, sig.begin() + close, ',')) + 1);
  }
  return ranks;
}

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// An entry's fields against what Triton and the driver allow, and against each other: what
// the launch path computes from them cannot overflow or divide by zero.
void check_entry(const Bundle& b, const ContentsView& c, size_t index, const EntryView& ev) {
  const std::string where = "bundle " + b.name() + ": entry #" + std::to_string(index) +
                            " (kernel " + std::string(c.kernels[ev.kernel].module) + "." +
                            std::string(c.kernels[ev.kernel].name) + ")";
  namespace tv = triton_versions;
  const uint32_t arch = target_arch(ev.target), warp = target_warp_size(ev.target);
  if (arch < 30 || arch > 1000 || (warp != 32 && warp != 64)) {
    refuse(where, "target " + std::to_string(arch) + " with warp size " + std::to_string(warp));
  }
  if (ev.triton_version < tv::kOldest || ev.triton_version / 100 != 3) {
    refuse(where, "Triton version " + std::to_string(ev.triton_version) + ", not 3.6 or newer");
  }
  if (ev.triton_version > tv::kNewest) {
    throw BundleError(where + ": compiled by Triton " + std::to_string(ev.triton_version / 100) +
                          "." + std::to_string(ev.triton_version % 100) +
                          ", newer than this library knows (up to " +
                          std::to_string(tv::kNewest / 100) + "." +
                          std::to_string(tv::kNewest % 100) + "): upgrade triton_embed",
                      BundleError::Reason::kTooNew);
  }
  auto in = [&](const char* field, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) {
      refuse(where, std::string(field) + " " + std::to_string(v) + " (" + std::to_string(lo) +
                        " to " + std::to_string(hi) + ")");
    }
  };
  in("num_warps", ev.meta.num_warps, 1, 1024 / static_cast<int64_t>(warp));
  in("num_ctas", ev.meta.num_ctas, 1, 16);
  in("num_stages", ev.meta.num_stages, 0, 64);
  in("shared memory", ev.meta.shared, 0, 1 << 20);
  in("num_kernel_params", ev.meta.num_kernel_params, 2, 2 + static_cast<int64_t>(kMaxLeaves) * 23);
  in("num_runtime_params", ev.num_runtime_params, ev.meta.num_kernel_params - 2,
     ev.meta.num_kernel_params - 2);
  if (ev.cluster_dims[0] != ev.meta.num_ctas || ev.cluster_dims[1] != 1 ||
      ev.cluster_dims[2] != 1) {
    refuse(where, "cluster dims (" + std::to_string(ev.cluster_dims[0]) + ", " +
                      std::to_string(ev.cluster_dims[1]) + ", " +
                      std::to_string(ev.cluster_dims[2]) + ") for " +
                      std::to_string(ev.meta.num_ctas) + " CTAs");
  }
  for (const auto& [what, size, align] :
       {std::tuple<const char*, uint64_t, uint64_t>{"global scratch", ev.meta.global_scratch_size,
                                                    ev.meta.global_scratch_align},
        std::tuple<const char*, uint64_t, uint64_t>{"profile scratch", ev.meta.profile_scratch_size,
                                                    ev.meta.profile_scratch_align}}) {
    if (size > (uint64_t{1} << 32) || !power_of_two(align) || align > 4096) {
      refuse(where, std::string(what) + " of " + std::to_string(size) + " bytes aligned to " +
                        std::to_string(align));
    }
  }
  if (ev.oversized_shared_mode != tv::oversized_shared_memory(ev.triton_version)) {
    refuse(where, "an oversized shared memory flag Triton " + std::to_string(ev.triton_version) +
                      " does not set so");
  }
  if (ev.meta.cubin.empty() && ev.meta.ptx.empty()) refuse(where, "neither a cubin nor PTX");
  if (ev.meta.name.empty() || ev.meta.hash.empty()) refuse(where, "no entry point or hash");
  decode_options(ev.options, where);
  const std::vector<int> ranks = descriptor_ranks(ev.meta.signature);
  if (ranks.size() != ev.tma.size()) {
    refuse(where, std::to_string(ev.tma.size()) + " TMA records for the " +
                      std::to_string(ranks.size()) + " tensor descriptors of its signature");
  }
  for (size_t i = 0; i < ev.tma.size(); ++i) {
    const TmaMeta& m = ev.tma[i];
    const std::string rec = "TMA record " + std::to_string(i) + ": ";
    if (!m.present) {
      if (m != TmaMeta{}) refuse(where, rec + "fields set on a descriptor not lowered to TMA");
      continue;
    }
    if (m.rank != ranks[i]) {
      refuse(where, rec + "rank " + std::to_string(m.rank) + " for a descriptor of rank " +
                        std::to_string(ranks[i]));
    }
    if (m.swizzle < 0 || m.swizzle > 3 || !power_of_two(static_cast<uint64_t>(m.elem_size)) ||
        m.elem_size > 8 || m.elem_type < 0 || m.elem_type > 10) {
      refuse(where, rec + "swizzle " + std::to_string(m.swizzle) + ", element size " +
                        std::to_string(m.elem_size) + ", element type " +
                        std::to_string(m.elem_type));
    }
    for (int d = 0; d < 5; ++d) {
      const bool used = d < m.rank;
      if (used ? (m.box[d] == 0 || m.box[d] > 256) : m.box[d] != 0) {
        refuse(where,
               rec + "box dimension " + std::to_string(d) + " of " + std::to_string(m.box[d]));
      }
    }
  }
}

}  // namespace

Decoded check_whole(const Bundle& b) {
  const ContentsView& c = b.view();
  Decoded d;
  for (const KernelView& kv : c.kernels) {
    std::unique_ptr<KernelState> k = decode_state(b, kv);
    if (kv.wrapper.empty() != kv.layers.empty()) {
      refuse(where(b, kv),
             kv.wrapper.empty() ? "layers on a plain kernel" : "a wrapped kernel without layers");
    }
    if (!kv.wrapper.empty()) {
      if (kv.wrapper != "autotune" && kv.wrapper != "heuristics") {
        throw BundleError(where(b, kv) + " is wrapped in '" + std::string(kv.wrapper) +
                              "', which this library does not know; rebuild the bundle with "
                              "this version of triton_embed",
                          BundleError::Reason::kTooNew);
      }
      decode_layers(kv.layers, *k, where(b, kv));
    }
    d.states.push_back(std::move(k));
  }
  for (size_t i = 0; i < c.entries.size(); ++i) check_entry(b, c, i, c.entries[i]);
  for (const RecordView& rec : c.records) {
    const KernelView& kv = c.kernels[rec.kernel];
    const KernelState& k = *d.states[rec.kernel];
    if (kv.wrapper.empty()) refuse(where(b, kv), "a decision recorded for a plain kernel");
    if (rec.kind == kRecordChoice) {
      const uint64_t layer = rec.key_words.empty() ? k.layers.size() : rec.key_words[0];
      if (rec.key_words.size() < 3 || layer >= k.layers.size() ||
          k.layers[layer]->kind != Layer::Kind::kAutotune) {
        refuse(where(b, kv), "a tuning record for an autotuner the kernel does not have");
      }
    } else if (rec.kind == kRecordTuningRule) {
      if (rec.key_words.size() != 1 || rec.key_words[0] >= k.layers.size() ||
          k.layers[rec.key_words[0]]->kind != Layer::Kind::kAutotune) {
        refuse(where(b, kv), "a tuning rule for an autotuner the kernel does not have");
      }
    } else if (rec.kind != kRecordHeuristic) {
      refuse(where(b, kv), "a record of unknown kind " + std::to_string(rec.kind));
    }
  }
  d.heuristics.resize(c.kernels.size());
  for (uint32_t i = 0; i < c.kernels.size(); ++i) {
    KernelState& k = *d.states[i];
    if (k.layers.empty()) continue;
    decode_heuristics(c, i, k, where(b, c.kernels[i]), d.heuristics[i]);
    for (size_t li = 0; li < k.layers.size(); ++li) {
      if (k.layers[li]->kind != Layer::Kind::kAutotune) continue;
      Decoded::Rule rule;
      if (decode_rule(c, i, k, li, where(b, c.kernels[i]), &rule.rule)) {
        rule.kernel = i;
        rule.layer = li;
        d.rules.push_back(std::move(rule));
      }
      std::set<uint32_t> targets;
      for (const RecordView& rec : c.records) {
        if (rec.kernel == i && rec.kind == kRecordChoice && rec.key_words[0] == li) {
          targets.insert(static_cast<uint32_t>(rec.key_words[1]));
        }
      }
      for (uint32_t t : targets) {
        Decoded::Choices ch;
        ch.kernel = i;
        ch.layer = li;
        ch.target = t;
        decode_choices(c, i, k, li, t, false, where(b, c.kernels[i]), ch.records);
        d.choices.push_back(std::move(ch));
      }
    }
  }
  return d;
}

std::string describe_decisions(const Bundle& b) {
  std::ostringstream os;
  Decoded d;
  try {
    d = check_whole(b);
  } catch (const BundleError& e) {
    os << "a program refuses to load it: " << e.what() << "\n";
    return os.str();
  }
  const ContentsView& c = b.view();
  for (uint32_t i = 0; i < c.kernels.size(); ++i) {
    const KernelState& k = *d.states[i];
    if (k.layers.empty()) continue;
    const std::vector<std::string> names = param_names(k);
    os << "kernel #" << i << " " << full_name(k) << ": layers, outermost first\n";
    for (size_t li = 0; li < k.layers.size(); ++li) {
      const Layer& layer = *k.layers[li];
      if (layer.kind == Layer::Kind::kHeuristics) {
        for (const auto& h : layer.heuristics) {
          os << "  layer " << li << " heuristic '" << h->name << "': ";
          if (h->expr.empty()) {
            os << "recorded values only (" << h->expr_why << ")\n";
          } else {
            os << h->expr.str(names) << "\n";
          }
        }
        continue;
      }
      os << "  layer " << li << " autotune, key [";
      const TuneLayer& t = *layer.tune;
      for (size_t n = 0; n < t.key_params.size(); ++n) {
        const int p = t.key_params[n];
        os << (n ? ", " : "") << (p >= 0 ? names[static_cast<size_t>(p)] : std::string("?"));
      }
      os << "]";
      for (const Decoded::Rule& r : d.rules) {
        if (r.kernel == i && r.layer == li) os << ", rule for keys nobody tuned: " << r.rule.str();
      }
      os << "\n";
      for (const Decoded::Choices& ch : d.choices) {
        if (ch.kernel != i || ch.layer != li) continue;
        for (const ChoiceDecision& cr : ch.records) {
          const Choice& choice = *cr.choice;
          os << "    " << target_text(cr.target) << " key " << choice.result.key << ": "
             << choice.result.best.str;
          if (choice.hook_in_cpp()) {
            os << "; pre_hook: "
               << (choice.hook.actions.empty() ? std::string("does nothing")
                                               : choice.hook.str(names));
          } else if (choice.pre_hook) {
            os << "; pre_hook in Python only (" << choice.hook_why << ")";
          }
          os << "\n";
        }
      }
    }
  }
  return os.str();
}

std::unique_ptr<KernelState> decode_state(const Bundle& b, const KernelView& kv) {
  auto k = std::make_unique<KernelState>();
  k->module = std::string(kv.module);
  k->name = std::string(kv.name);
  k->source_hash = std::string(kv.source_hash);
  decode_params(kv.params, *k, where(b, kv));
  return k;
}

}  // namespace triton_embed::detail::bundle
