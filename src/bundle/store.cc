#include "bundle/store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "bundle/decisions.h"
#include "bundle/kernel_table.h"
#include "bundle/tuning_rule.h"
#include "bundle/widen.h"
#include "core/arg_format.h"
#include "core/cache.h"
#include "core/cache_key.h"
#include "core/compiled_kernel.h"
#include "core/key_values.h"
#include "core/memo_keys.h"
#include "core/registry.h"
#include "core/source.h"
#include "core/specialize.h"
#include "core/target.h"
#include "core/triton_versions.h"
#include "core/word_hash.h"
#include "triton_embed/bundle.h"

namespace triton_embed::detail::bundle {

namespace {

// Where a bundle's entries are, built once when it is loaded: by kernel, options and key
// words (the entry a call's key names), and by kernel, options and serving class (the entries
// that may serve a call with fewer assumptions: core/key_values.h). Each bucket lists entry
// indices in the bundle's order, so a lookup reads the few entries of one bucket whatever the
// bundle's size, and finds them in the order a search of every entry would.
struct EntryIndex {
  std::unordered_map<uint64_t, std::vector<uint32_t>> exact, serving;
};

// The bucket of kernel `module.name`'s entries compiled with `options` whose key words (or
// serving class) hash to `words`.
uint64_t bucket(std::string_view module, std::string_view name, std::string_view options,
                uint64_t words) {
  const std::hash<std::string_view> h;
  uint64_t x = word_hash_round(0x452821E638D01377ull, h(module));
  x = word_hash_round(x, h(name));
  x = word_hash_round(x, h(options));
  return word_hash_round(x, words);
}

EntryIndex index_entries(const ContentsView& c) {
  EntryIndex idx;
  for (uint32_t i = 0; i < c.entries.size(); ++i) {
    const EntryView& ev = c.entries[i];
    const KernelView& kv = c.kernels[ev.kernel];
    const uint64_t* w = ev.key_words.data();
    const size_t n = ev.key_words.size();
    idx.exact[bucket(kv.module, kv.name, ev.options, hash_words(0, w, static_cast<uint32_t>(n)))]
        .push_back(i);
    idx.serving[bucket(kv.module, kv.name, ev.options, serving_class(w, n))].push_back(i);
  }
  return idx;
}

// The entries of bucket `b` of `map` (none when it has none).
const std::vector<uint32_t>& bucket_entries(
    const std::unordered_map<uint64_t, std::vector<uint32_t>>& map, uint64_t b) {
  static const std::vector<uint32_t> kNone;
  const auto it = map.find(b);
  return it == map.end() ? kNone : it->second;
}

struct Store {
  std::mutex mu;
  // In load order. What the runtime takes from a bundle is a copy (entries, parameter tables,
  // decisions): nothing points into one once the store's lock is released.
  std::deque<Bundle> bundles;
  std::deque<EntryIndex> indexes;  // indexes[i] is bundles[i]'s
  bool env_loaded = false;
  // How many of the bundles (in load order) have put their decisions into a kernel's
  // heuristic memos, and into an autotune layer's memo for a target: a bundle loaded later
  // is applied on the next miss.
  std::map<const KernelState*, size_t> heuristics_applied;
  std::map<std::pair<const TuneLayer*, uint32_t>, size_t> choices_applied;
};

Store& store() {
  static Store* s = new Store();  // never destroyed: threads may launch during exit
  return *s;
}

bool same_kernel(const KernelView& kv, const KernelState& k) {
  if (kv.module != k.module || kv.name != k.name) return false;
  // A kernel whose source the JIT layer read is matched on its source hash too, so that a
  // bundle made from another version of the kernel is never launched in its place.
  return k.source_hash.empty() || kv.source_hash.empty() || kv.source_hash == k.source_hash;
}

std::string where(const Bundle& b, const KernelView& kv) {
  return "bundle " + b.name() + ": kernel " + std::string(kv.module) + "." + std::string(kv.name);
}

std::unique_ptr<KernelState> decode_state(const Bundle& b, const KernelView& kv);

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

// The wrapped kernels of a bundle, decoded: their states (parameters and layers) and every
// decision recorded for them.
struct Decoded {
  std::vector<std::unique_ptr<KernelState>> states;  // one per kernel
  struct Choices {
    uint32_t kernel = 0;
    size_t layer = 0;
    uint32_t target = 0;
    std::vector<ChoiceRecord> records;
  };
  std::vector<std::vector<HeuristicRecord>> heuristics;  // one list per kernel
  std::vector<Choices> choices;
  struct Rule {
    uint32_t kernel = 0;
    size_t layer = 0;
    TuningRule rule;
  };
  std::vector<Rule> rules;
};

// Everything in `b`, decoded and checked as its use would: kernels' parameter tables and
// layers, entries, and every record of a wrapped kernel. A bundle that passes adds nothing a
// later use can refuse with BundleError.
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

}  // namespace

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
        for (const ChoiceRecord& cr : ch.records) {
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

void add(Bundle b) {
  check_whole(b);  // before anything of it is used: a refused bundle adds nothing
  EntryIndex index = index_entries(b.view());
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.indexes.push_back(std::move(index));
  try {
    s.bundles.push_back(std::move(b));
  } catch (...) {
    s.indexes.pop_back();  // the two stay in step
    throw;
  }
}

void unload_all() {
  // Under the store's lock throughout: no bundle is loaded, and no decision handed over, while
  // the runtime forgets (src/core/registry.cc takes only the locks of the tables it clears).
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.env_loaded = true;  // TRITON_EMBED_BUNDLE's files are unloaded too, not loaded again
  s.bundles.clear();
  s.indexes.clear();
  s.heuristics_applied.clear();
  s.choices_applied.clear();
  forget_resolved_kernels();
}

void load_from_environment() {
  Store& s = store();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.env_loaded) return;
    s.env_loaded = true;
  }
  const char* env = std::getenv("TRITON_EMBED_BUNDLE");
  if (env == nullptr || *env == '\0') return;
  std::string paths(env);
  size_t start = 0;
  while (start <= paths.size()) {
    const size_t end = std::min(paths.find(':', start), paths.size());
    if (end > start) add(Bundle::open(paths.substr(start, end - start)));
    start = end + 1;
  }
}

namespace {

// A kernel state decoded from bundle kernel `kv`, without layers.
std::unique_ptr<KernelState> decode_state(const Bundle& b, const KernelView& kv) {
  auto k = std::make_unique<KernelState>();
  k->module = std::string(kv.module);
  k->name = std::string(kv.name);
  k->source_hash = std::string(kv.source_hash);
  decode_params(kv.params, *k, where(b, kv));
  return k;
}

// Calls f(bundle, contents, index) for each kernel matching k in the bundles loaded since
// `applied` (a count of bundles, advanced past them). The store's mutex is held.
template <class F>
void each_new_kernel(Store& s, size_t& applied, const KernelState& k, F&& f) {
  for (; applied < s.bundles.size(); ++applied) {
    const Bundle& b = s.bundles[applied];
    const ContentsView& c = b.view();
    for (uint32_t i = 0; i < c.kernels.size(); ++i) {
      if (same_kernel(c.kernels[i], k)) f(b, c, i);
    }
  }
}

KernelState* load_bundled_kernel(std::string_view module, std::string_view name) {
  load_from_environment();
  std::unique_ptr<KernelState> outer, inner;
  {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    for (const Bundle& b : s.bundles) {
      const ContentsView& c = b.view();
      for (uint32_t i = 0; i < c.kernels.size() && !outer; ++i) {
        const KernelView& kv = c.kernels[i];
        if (kv.module != module || kv.name != name) continue;
        outer = decode_state(b, kv);
        if (kv.wrapper.empty()) break;
        if (kv.wrapper != "autotune" && kv.wrapper != "heuristics") {
          throw BundleError(where(b, kv) + " is wrapped in '" + std::string(kv.wrapper) +
                                "', which this library does not know; rebuild the bundle with "
                                "this version of triton_embed",
                            BundleError::Reason::kTooNew);
        }
        outer->wrapper = std::string(kv.wrapper);
        outer->wrapper_kind =
            kv.wrapper == "autotune" ? WrapperKind::kAutotune : WrapperKind::kHeuristics;
        decode_layers(kv.layers, *outer, where(b, kv));
        inner = decode_state(b, kv);
      }
      if (outer) break;
    }
    if (!outer) return nullptr;
  }
  std::unique_ptr<KernelState> loser;  // another thread's, when it registered first
  if (inner) {
    outer->inner =
        insert_kernel(std::string(module), std::string(name) + "[inner]", std::move(inner), &loser);
  }
  return insert_kernel(std::string(module), std::string(name), std::move(outer), &loser);
}

// The `.target` of a PTX module ("sm_80", "sm_90a"), or empty.
std::string_view ptx_target(std::string_view ptx) {
  const size_t at = ptx.find("\n.target ");
  if (at == std::string_view::npos) return {};
  std::string_view t = ptx.substr(at + 9);
  return t.substr(0, t.find_first_of(", \r\n"));
}

// Whether PTX kept for an older target may serve `target` through the driver (off with
// TRITON_EMBED_BUNDLE_PTX=0): PTX for a plain sm_XY runs on any newer GPU; PTX for sm_XYa or
// sm_XYf uses features of that architecture only.
bool ptx_serves(std::string_view ptx) {
  static const bool allowed = [] {
    const char* env = std::getenv("TRITON_EMBED_BUNDLE_PTX");
    return env == nullptr || (std::strcmp(env, "0") != 0 && std::strcmp(env, "off") != 0);
  }();
  const std::string_view t = ptx_target(ptx);
  return allowed && t.size() > 3 && t.substr(0, 3) == "sm_" &&
         t.find_first_not_of("0123456789", 3) == std::string_view::npos;
}

// Whether only an exact entry may serve a call (TRITON_EMBED_BUNDLE_STRICT=1): no less
// specialised one.
bool strict() {
  static const bool on = [] {
    const char* env = std::getenv("TRITON_EMBED_BUNDLE_STRICT");
    return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0 &&
           std::strcmp(env, "off") != 0;
  }();
  return on;
}

struct NoticeSink {
  std::mutex mu;
  std::function<void(const BundleNotice&)> callback;
};
NoticeSink& notice_sink() {
  static NoticeSink* s = new NoticeSink();  // never destroyed: threads may launch during exit
  return *s;
}

// Reports what served a key in place of its own entry: to the callback, else on stderr. Called
// once per key (the build of a missing key), with no lock held.
void notify(const BundleNotice& n) {
  std::function<void(const BundleNotice&)> cb;
  {
    NoticeSink& s = notice_sink();
    std::lock_guard<std::mutex> lock(s.mu);
    cb = s.callback;
  }
  if (cb) {
    cb(n);
  } else {
    std::fputs(n.message.c_str(), stderr);
  }
}

// The runtime's entry for bundle b's entry ev, with its cubin, or only its PTX when from_ptx:
// the code it hands over is checked against its CRC-32s first, once (Bundle::check_cubin).
std::unique_ptr<detail::Entry> entry_from(const Bundle& b, const EntryView& ev, const Key& key,
                                          uint64_t hash, bool from_ptx) {
  const auto index = static_cast<size_t>(&ev - b.entries().data());
  if (!from_ptx) b.check_cubin(index);
  b.check_ptx(index);  // handed over with the cubin too (metadata() copies it)
  auto e = std::make_unique<detail::Entry>();
  e->target = key.target;
  e->options = key.options;
  e->hash = hash;
  e->set_key(key);
  e->kernel = CompiledKernelAccess::make(metadata(ev, !from_ptx), target_str(ev.target));
  e->set_launch_constants(target_warp_size(ev.target));
  e->oversized_shared_mode = ev.oversized_shared_mode;
  e->triton_version = ev.triton_version;
  e->tma = ev.tma;
  return e;
}

// Whether entry ev's TMA records fit the call's descriptors (count and ranks): the load checked
// them against the entry's signature, this against the call its key matched.
bool fits_descriptors(const EntryView& ev, const LeafList& leaves) {
  if (ev.tma.size() != leaves.ndesc) return false;
  size_t d = 0;
  for (uint32_t i = 0; i < leaves.n; ++i) {
    const Leaf& l = leaves.leaves[i];
    if (l.kind != LeafKind::kTensorDesc) continue;
    const TmaMeta& m = ev.tma[d++];
    if (m.present && m.rank != static_cast<int>(l.count & 7u)) return false;
  }
  return true;
}

// Whether entry ev may serve `target`: its own, or an older plain target's PTX.
bool serves_target(const EntryView& ev, uint32_t target) {
  return ev.target == target ||
         (older_or_same_target(ev.target, target) && ptx_serves(ev.meta.ptx));
}

// The entry serving a key no bundle holds exactly, with no JIT layer: among the entries of the
// same kernel and options that serve the call with fewer assumptions (match_key), those for
// the GPU's own target first, then the newest older target's PTX; of these the most
// specialised (the most assumptions kept), and of equally specialised ones the first in load
// order (bundles as loaded, entries in the order each bundle holds them).
struct Fallback {
  const EntryView* ev = nullptr;
  const Bundle* b = nullptr;
  KeyMatch match;
};

bool better(const Fallback& have, const EntryView& ev, const KeyMatch& m, uint32_t target) {
  if (have.ev == nullptr) return true;
  const bool own = ev.target == target, have_own = have.ev->target == target;
  if (own != have_own) return own;
  if (ev.target != have.ev->target) return target_arch(ev.target) > target_arch(have.ev->target);
  return m.assumptions > have.match.assumptions;
}

std::unique_ptr<detail::Entry> bundled_entry(const KernelState& k, const InternedOptions& options,
                                             const Key& key, uint64_t hash,
                                             const LeafList& leaves) {
  load_from_environment();
  const std::string opts = encode_options(options.options);
  std::unique_ptr<detail::Entry> out;
  BundleNotice notice;
  {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    // The entry for the GPU's own target; else the newest older target's PTX, when it may
    // serve.
    const EntryView* older = nullptr;
    const Bundle* older_bundle = nullptr;
    const uint64_t exact = hash_words(0, key.w, key.n);
    for (size_t bi = 0; bi < s.bundles.size(); ++bi) {
      const Bundle& b = s.bundles[bi];
      const ContentsView& c = b.view();
      for (uint32_t e :
           bucket_entries(s.indexes[bi].exact, bucket(k.module, k.name, opts, exact))) {
        const EntryView& ev = c.entries[e];
        if (ev.key_words.size() != key.n || ev.options != opts ||
            !same_kernel(c.kernels[ev.kernel], k) ||
            !std::equal(ev.key_words.begin(), ev.key_words.end(), key.w) ||
            !fits_descriptors(ev, leaves)) {
          continue;
        }
        if (ev.target == key.target) return entry_from(b, ev, key, hash, false);
        if (older_or_same_target(ev.target, key.target) && ptx_serves(ev.meta.ptx) &&
            (older == nullptr || target_arch(ev.target) > target_arch(older->target))) {
          older = &ev;
          older_bundle = &b;
        }
      }
    }
    Fallback best;
    if (older != nullptr) {
      best.ev = older;
      best.b = older_bundle;
    } else if (!jit_linked() && !strict()) {
      // No exact entry: a less specialised one (with the JIT layer, Triton compiles the exact
      // specialisation instead, as Python does).
      const uint64_t serving = serving_class(key.w, key.n);
      for (size_t bi = 0; bi < s.bundles.size(); ++bi) {
        const Bundle& b = s.bundles[bi];
        const ContentsView& c = b.view();
        for (uint32_t e :
             bucket_entries(s.indexes[bi].serving, bucket(k.module, k.name, opts, serving))) {
          const EntryView& ev = c.entries[e];
          if (ev.options != opts || !serves_target(ev, key.target) ||
              !same_kernel(c.kernels[ev.kernel], k) || !fits_descriptors(ev, leaves)) {
            continue;
          }
          KeyMatch m = match_key(k, leaves, key, ev.key_words.data(), ev.key_words.size(), false);
          if (m.verdict == KeyMatch::Verdict::kRefused || !better(best, ev, m, key.target)) {
            continue;
          }
          best.ev = &ev;
          best.b = &b;
          best.match = std::move(m);
        }
      }
    }
    if (best.ev == nullptr) return nullptr;
    const EntryView& ev = *best.ev;
    notice.ptx = ev.target != key.target;
    notice.less_specialised = best.match.verdict == KeyMatch::Verdict::kServes;
    out = entry_from(*best.b, ev, key, hash, notice.ptx);
    if (notice.less_specialised) {
      out->less_specialised = true;
      out->packs_ones = !best.match.ones.empty();
      out->one_leaves = best.match.ones;
      out->one_slots = one_slots(leaves, best.match.ones);
    }
    notice.kernel = full_name(k);
    notice.served = std::string(ev.meta.signature);
    notice.target = target_str(key.target);
    notice.entry_target = target_str(ev.target);
    notice.bundle = best.b->name();
  }
  // Said once per key: the kernel runs code built for an older GPU (compiled by the driver), or
  // code that assumes less than the call's specialisation.
  const std::string& t = notice.target;
  if (!notice.less_specialised) {
    notice.asked = notice.served;
    notice.message = "triton_embed: " + notice.kernel + " as " + notice.served + ": bundle " +
                     notice.bundle + " has no cubin for " + t + "; using the PTX of its " +
                     notice.entry_target +
                     " entry, which the CUDA driver compiles for this GPU when the kernel is "
                     "loaded (add a " +
                     t +
                     " entry to the bundle to launch code built for this GPU; "
                     "TRITON_EMBED_BUNDLE_PTX=0 refuses PTX instead)\n";
  } else {
    notice.asked = specialized_signature(k, leaves);
    notice.message =
        "triton_embed: " + notice.kernel + " as " + notice.asked +
        ": no kernel bundle holds this specialisation for " + t + "; bundle " + notice.bundle +
        "'s " + notice.entry_target + " entry " + notice.served +
        ", compiled with fewer assumptions, serves it" +
        (notice.ptx ? " through its PTX, which the CUDA driver compiles for this GPU" : "") +
        " (add an entry for this specialisation to launch code specialised to it; "
        "TRITON_EMBED_BUNDLE_STRICT=1 refuses less specialised entries instead)\n";
  }
  notify(notice);
  return out;
}

// Why entry ev (of kernel k) does not serve the call, or "" when it would (strict mode).
// *nearness: how near the entry came (KeyMatch::nearness), 0 when its target or options
// differ.
std::string why_not(const EntryView& ev, const KernelState& k, const std::string& opts,
                    const Key& key, const LeafList& leaves, uint32_t* nearness) {
  *nearness = 0;
  if (!serves_target(ev, key.target)) {
    return "it is built for " + target_str(ev.target) +
           (older_or_same_target(ev.target, key.target)
                ? ", and keeps no PTX for a plain sm_XY that the driver could compile for " +
                      target_str(key.target)
                : ", which does not run on " + target_str(key.target));
  }
  if (ev.options != opts) return "it is compiled with other options";
  if (!fits_descriptors(ev, leaves)) return "its tensor descriptors are not the call's";
  const KeyMatch m =
      match_key(k, leaves, key, ev.key_words.data(), ev.key_words.size(), /*explain=*/true);
  if (m.verdict != KeyMatch::Verdict::kRefused) return "";
  *nearness = m.nearness;
  return m.why;
}

std::string nearest(const KernelState& k, const InternedOptions& options, const Key& key,
                    const LeafList& leaves) {
  load_from_environment();
  const std::string call_opts = encode_options(options.options);
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  // The entries of the call's target first, then those of its options; of these, the nearest
  // first (refused later in the signature; refused on an assumption only), then in load order.
  std::vector<std::pair<int64_t, std::string>> found;
  for (const Bundle& b : s.bundles) {
    const ContentsView& c = b.view();
    for (const EntryView& ev : c.entries) {
      if (!same_kernel(c.kernels[ev.kernel], k)) continue;
      const std::string opts = decode_options(ev.options, where(b, c.kernels[ev.kernel])).str();
      uint32_t nearness = 0;
      const std::string why = why_not(ev, k, call_opts, key, leaves, &nearness);
      const int64_t rank = why.empty() ? -(int64_t{1} << 20) : -static_cast<int64_t>(nearness);
      found.emplace_back((static_cast<int64_t>(ev.target == key.target ? 0 : 2) +
                          (ev.options == call_opts ? 0 : 1)) *
                                 (int64_t{1} << 40) +
                             rank,
                         "  " + target_str(ev.target) + (opts.empty() ? "" : " " + opts) + ": " +
                             std::string(ev.meta.signature) + " (" + b.name() + ")\n    " +
                             (why.empty() ? "serves this call with fewer assumptions, but "
                                            "TRITON_EMBED_BUNDLE_STRICT=1 allows exact entries only"
                                          : "does not serve this call: " + why));
    }
  }
  if (found.empty()) {
    return s.bundles.empty() ? "no kernel bundle is loaded (TRITON_EMBED_BUNDLE, load_bundle())"
                             : "the loaded bundles hold no entry of this kernel";
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::ostringstream os;
  os << "the loaded bundles hold " << found.size() << " entr" << (found.size() == 1 ? "y" : "ies")
     << " of it, e.g.:";
  for (size_t i = 0; i < found.size() && i < 3; ++i) os << "\n" << found[i].second;
  return os.str();
}

// ---- tuning keys nobody tuned (bundle/tuning_rule.h) --------------------------------------

// One key argument of a tuning key: its words in the key (after the options id), and its
// value when it is an integer (a rule may apply).
struct KeyDim {
  size_t at = 0, n = 1;
  int param = -1;
  bool integer = false;
  int64_t value = 0;
};

// The key arguments of the call's tuning key `key` (core/memo_keys.cc's tuning_key: the options
// id, each key argument's value, then the dtypes); false when the key cannot be split.
bool key_dims(const TuneLayer& t, const Frame& f, const MemoKey& key, std::vector<KeyDim>& dims,
              size_t* tail) {
  size_t at = 1;
  for (int p : t.key_params) {
    KeyDim d;
    d.at = at;
    d.param = p;
    if (p >= 0 && f.given[p] != kAbsent) {
      // The same words tuning_key pushed for it: a heuristic's key of the value alone.
      HeuristicPlan one;
      one.deps.push_back(Dep{static_cast<uint32_t>(p), Aspect::kValue});
      MemoKey words;
      heuristic_memo_key(one, f, words);
      if (words.overflow) return false;
      d.n = words.n;
      const ArgValue& v = f.vals[p];
      d.integer = v.kind == ArgKind::kInt && !v.big && d.n == 2;
      d.value = v.i;
    }
    at += d.n;
    dims.push_back(d);
  }
  *tail = at;
  return at <= key.n;
}

std::string dim_name(const KernelState& k, const KeyDim& d) {
  return d.param >= 0 ? k.params[static_cast<size_t>(d.param)].name : std::string("?");
}

// "n=100, MODE='neg'": the key arguments, with `values` for the integer ones.
std::string key_text(const KernelState& k, const Frame& f, const std::vector<KeyDim>& dims,
                     const std::vector<int64_t>& values) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    const KeyDim& d = dims[i];
    s += (i ? ", " : "") + dim_name(k, d) + "=";
    if (d.integer) {
      s += std::to_string(values[i]);
    } else if (d.param < 0 || f.given[d.param] == kAbsent) {
      s += "(not given)";
    } else {
      const ArgValue& v = f.vals[d.param];
      if (v.kind == ArgKind::kStr) {
        s += "'" + std::string(v.s, v.count) + "'";  // as Python's key prints it
      } else if (v.kind == ArgKind::kBool) {
        s += v.i != 0 ? "True" : "False";
      } else if (v.kind == ArgKind::kNone) {
        s += "None";
      } else {
        s += describe_value(v);
      }
    }
  }
  return s;
}

// A recorded choice and the values of its key's integer dimensions.
struct Candidate {
  ChoiceRecord* rec = nullptr;
  std::vector<int64_t> values;  // per dimension (integer ones)
};

// Where recorded key `w` first differs from the call's `key` in a part no rule covers, for a
// message; "" when it matches them all. *depth: how many dimensions matched before.
std::string mismatch(const KernelState& k, const MemoKey& key, const MemoKey& w,
                     const std::vector<KeyDim>& dims, size_t tail, size_t* depth) {
  *depth = 0;
  if (w.n == 0 || w.w[0] != key.w[0]) return "it was tuned with other options";
  for (const KeyDim& d : dims) {
    if (d.at + d.n > w.n) return "its key is shorter";
    const bool same = d.integer ? w.w[d.at] == key.w[d.at]
                                : std::equal(key.w + d.at, key.w + d.at + d.n, w.w + d.at);
    if (!same) {
      return "key argument '" + dim_name(k, d) + "' " +
             (d.integer ? "is not an integer there" : "differs (rules apply to integers only)");
    }
    ++*depth;
  }
  if (w.n != key.n || !std::equal(key.w + tail, key.w + key.n, w.w + tail)) {
    return "the dtypes of the tensor arguments (part of the tuning key) differ";
  }
  return "";
}

// The choice the kernel's tuning rule gives the call's key from the choices recorded for
// other keys (a runtime-only tuning miss), said once per key; nullptr when the loaded bundles
// hold no choice of this autotuner for the target (the runtime then says so). Throws
// NotInBundleError saying why when they hold some, and the rule does not cover the key.
std::unique_ptr<Choice> tune_by_rule(KernelState& k, const TuneLayer& t, const Frame& f,
                                     const MemoKey& key) {
  if (key.overflow || key.n == 0) return nullptr;
  size_t layer = 0;
  while (layer < k.layers.size() && k.layers[layer]->tune.get() != &t) ++layer;
  if (layer == k.layers.size()) return nullptr;
  load_from_environment();
  const uint32_t target = current_target_code();
  std::vector<ChoiceRecord> known;
  TuningRule rule;
  std::string rule_bundle;
  bool have_rule = false;
  {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    for (const Bundle& b : s.bundles) {
      const ContentsView& c = b.view();
      for (uint32_t i = 0; i < c.kernels.size(); ++i) {
        if (!same_kernel(c.kernels[i], k)) continue;
        decode_choices(c, i, k, layer, target, false, where(b, c.kernels[i]), known);
        if (!have_rule && decode_rule(c, i, k, layer, where(b, c.kernels[i]), &rule)) {
          have_rule = true;
          rule_bundle = b.name();
        }
      }
    }
  }
  if (known.empty()) return nullptr;
  std::vector<KeyDim> dims;
  size_t tail = 0;
  if (!key_dims(t, f, key, dims, &tail)) return nullptr;
  std::vector<int64_t> asked(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) asked[i] = dims[i].value;
  const std::string asked_text = key_text(k, f, dims, asked);
  const std::string rule_text = have_rule ? rule.str() : std::string("exact");
  const bool strict_now = strict();
  auto refuse_key = [&](const std::string& why) {
    TE_THROW(NotInBundleError)
        << full_name(k) << ": no kernel bundle holds the tuned configuration for tuning key "
        << asked_text << " (" << target_str(target) << "), and "
        << (have_rule ? "the kernel's tuning rule '" + rule_text + "' (bundle " + rule_bundle + ")"
                      : std::string("its tuning rule (exact: none was declared)"))
        << " does not cover it: " << why
        << (strict_now && have_rule ? " (TRITON_EMBED_BUNDLE_STRICT=1: recorded keys only)" : "")
        << "; tune this key too (list it in the calls file of `triton-embed-bundle tune`, or "
        << "record a run that launches it), or declare a rule that covers it "
        << "(triton_embed::set_tuning_rule, a calls file's #rule, triton-embed-bundle --rule)";
  };
  // The recorded keys that match the call's in every part a rule does not cover.
  std::vector<Candidate> cands;
  std::string closest_why;
  size_t closest = 0;
  std::set<std::vector<uint64_t>> seen;
  for (ChoiceRecord& cr : known) {
    size_t depth = 0;
    const std::string why = mismatch(k, key, cr.key, dims, tail, &depth);
    if (!why.empty()) {
      if (closest_why.empty() || depth > closest) {
        closest_why = why;
        closest = depth;
      }
      continue;
    }
    if (!seen.insert(std::vector<uint64_t>(cr.key.w, cr.key.w + cr.key.n)).second) continue;
    Candidate c;
    c.rec = &cr;
    for (const KeyDim& d : dims) {
      c.values.push_back(d.integer ? static_cast<int64_t>(cr.key.w[d.at + 1]) : 0);
    }
    cands.push_back(std::move(c));
  }
  if (cands.empty()) {
    refuse_key("no tuned key matches it in its other parts: of the nearest, " + closest_why);
  }
  // Dimension by dimension, in the key's order: the value the rule picks among the
  // candidates left.
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!dims[i].integer) continue;
    const DimRule exact;
    const DimRule& r = strict_now ? exact : rule.for_dim(dim_name(k, dims[i]));
    std::vector<int64_t> have;
    for (const Candidate& c : cands) have.push_back(c.values[i]);
    int64_t pick = 0;
    std::string why;
    if (!serve_dim(r, dims[i].value, have, &pick, &why)) {
      refuse_key("key argument '" + dim_name(k, dims[i]) + "': " + why);
    }
    cands.erase(std::remove_if(cands.begin(), cands.end(),
                               [&](const Candidate& c) { return c.values[i] != pick; }),
                cands.end());
  }
  Candidate& won = cands.front();
  std::unique_ptr<Choice> choice = std::move(won.rec->choice);
  choice->by_rule = true;
  BundleNotice notice;
  notice.kernel = full_name(k);
  notice.asked = asked_text;
  notice.served = key_text(k, f, dims, won.values);
  notice.target = target_str(target);
  notice.entry_target = target_str(won.rec->target);
  notice.bundle = rule_bundle;
  notice.tuning_rule = true;
  notice.rule = rule_text;
  notice.message = "triton_embed: " + notice.kernel +
                   ": no kernel bundle holds a tuned choice for " + "tuning key " + notice.asked +
                   " (" + notice.target + "); as its tuning rule '" + notice.rule + "' (bundle " +
                   notice.bundle + ") says, the choice tuned for " + notice.served + " on " +
                   notice.entry_target + " serves it: " + choice->result.best.str +
                   " (tune this key too to launch its own choice; TRITON_EMBED_BUNDLE_STRICT=1 " +
                   "refuses keys nobody tuned instead)\n";
  notify(notice);
  return choice;
}

// The loaded bundles as a kernel source (core/source.h).
class BundleSource final : public KernelSource {
 public:
  KernelState* load_kernel(std::string_view module, std::string_view name) override {
    record_at_exit_if_asked();
    // With the JIT layer the kernel comes from Python (its bundle entries still serve its
    // cache misses).
    return jit_linked() ? nullptr : load_bundled_kernel(module, name);
  }
  std::unique_ptr<detail::Entry> build_entry(KernelState& k, const InternedOptions& options,
                                             const Key& key, uint64_t hash, const ArgValue*,
                                             const LeafList& leaves) override {
    return bundled_entry(k, options, key, hash, leaves);
  }
  std::string nearest_entries(const KernelState& k, const InternedOptions& options, const Key& key,
                              const LeafList& leaves) override {
    return nearest(k, options, key, leaves);
  }
  // Heuristic results serve programs without the JIT layer only: the bundles loaded since the
  // last call hand theirs over (none to a caller whose epoch passed: unload_all and this run
  // under the store's lock, so a bundle's records are handed over once to a caller that keeps
  // them, or again after an unload).
  bool known_heuristics(KernelState& k, uint64_t epoch,
                        std::vector<HeuristicRecord>& out) override {
    if (jit_linked()) return false;
    load_from_environment();
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!still_current(epoch)) return true;
    each_new_kernel(s, s.heuristics_applied[&k], k,
                    [&](const Bundle& b, const ContentsView& c, uint32_t i) {
                      decode_heuristics(c, i, k, where(b, c.kernels[i]), out);
                    });
    return true;
  }
  // A heuristic no record holds the result of, computed from its expression (the bundle's
  // layers carry it) as Python computes it; false when it has none or the evaluator cannot
  // say (the runtime then raises NotInBundleError). With the JIT layer Python computes it,
  // unless the user asked for expressions (core/sources.cc evaluates them before any source).
  bool eval_heuristic(KernelState& k, const Heuristic& h, const Frame& f,
                      HeuristicValue& out) override {
    if (jit_linked()) return false;
    return heuristic_expression_value(k, h, f, out, /*raise_faults=*/true);
  }
  // Choices for `target`, from the bundles loaded since the last call for it. The JIT layer
  // takes them only for the very kernel and configs they were tuned from, and tunes configs
  // whose pre_hook only Python runs itself (it must run the hook).
  bool known_choices(KernelState& k, size_t layer, uint32_t target, uint64_t epoch,
                     std::vector<ChoiceRecord>& out) override {
    load_from_environment();
    const bool jit = jit_linked();
    const std::string layers = jit ? encode_layers(k) : std::string();
    const TuneLayer* t = k.layers[layer]->tune.get();
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!still_current(epoch)) return true;  // as known_heuristics
    each_new_kernel(s, s.choices_applied[{t, target}], k,
                    [&](const Bundle& b, const ContentsView& c, uint32_t i) {
                      const KernelView& kv = c.kernels[i];
                      if (jit && (kv.source_hash.empty() || kv.layers != layers)) return;
                      decode_choices(c, i, k, layer, target, jit, where(b, kv), out);
                    });
    return true;
  }
  // A tuning key no bundle records: with no JIT layer to tune it, the choice the kernel's
  // tuning rule gives it (with the JIT layer, Python tunes it, as for any key).
  std::unique_ptr<Choice> tune(KernelState& k, const TuneLayer& t, const Frame& f,
                               const MemoKey& key) override {
    if (jit_linked()) return nullptr;
    return tune_by_rule(k, t, f, key);
  }
};

BundleSource g_bundle_source;
// Registered when the runtime's library is loaded, before any kernel is.
[[maybe_unused]] const bool kRegistered =
    (register_source(SourceSlot::kBundles, &g_bundle_source), true);

}  // namespace

namespace {

// Appends kernel k's replayable cache entries (those of `cache_of`: k itself, or a wrapped
// kernel's inner state) as entries of bundle kernel `index`.
void record_entries(KernelState& cache_of, uint32_t index, Contents& c, int& triton_version) {
  std::lock_guard<std::mutex> lock(cache_of.cache.mu);
  for (const auto& ep : cache_of.cache.entries) {
    const detail::Entry& e = *ep;
    if (e.process_local || e.less_specialised) continue;
    const CompiledKernel& ck = *e.kernel;
    if (ck.cubin().empty()) continue;  // served by an older target's PTX: not this target's
    bundle::Entry out;
    out.kernel = index;
    out.target = e.target;
    out.options = encode_options(interned_options_by_id(e.options)->options);
    out.key_words = e.key_words;
    out.meta = CompiledKernelAccess::metadata(ck);
    out.num_runtime_params = static_cast<int32_t>(e.num_runtime_params);
    out.triton_version = e.triton_version;
    out.cluster_dims[0] = ck.num_ctas();
    out.cluster_dims[1] = out.cluster_dims[2] = 1;
    out.oversized_shared_mode = e.oversized_shared_mode;
    out.tma = e.tma;
    triton_version = std::max(triton_version, e.triton_version);
    c.entries.push_back(std::move(out));
  }
}

// The tuning rules of the loaded bundles for k's autotuners with recorded choices, where this
// process declared none (records from `first` on are k's): a process that records what it
// loaded keeps them.
void add_loaded_rules(KernelState& k, uint32_t kernel, size_t first, Contents& c) {
  for (size_t li = 0; li < k.layers.size(); ++li) {
    if (!k.layers[li]->tune) continue;
    {
      TuneLayer& t = *k.layers[li]->tune;
      std::lock_guard<std::mutex> lock(t.mu);
      if (t.recorded.empty()) continue;
    }
    bool have = false;
    for (size_t r = first; r < c.records.size(); ++r) {
      have = have || (c.records[r].kind == kRecordTuningRule && c.records[r].key_words[0] == li);
    }
    if (have) continue;
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    TuningRule rule;
    for (const Bundle& b : s.bundles) {
      const ContentsView& v = b.view();
      for (uint32_t i = 0; i < v.kernels.size() && !have; ++i) {
        if (same_kernel(v.kernels[i], k) &&
            decode_rule(v, i, k, li, where(b, v.kernels[i]), &rule)) {
          c.records.push_back(rule_record(kernel, li, rule.str()));
          have = true;
        }
      }
      if (have) break;
    }
  }
}

bool has_entries(KernelState& k) {
  std::lock_guard<std::mutex> lock(k.cache.mu);
  return !k.cache.entries.empty();
}

}  // namespace

// Says on stderr, once per heuristic or tuned choice in the process, what a bundle keeps that
// a program without Python serves only in part, and why: heuristics kept as tables of the
// values seen (such a program serves just the arguments recorded), and config pre-hooks
// outside the forms the runtime applies (it refuses those configs).
void note_python_only(KernelState& k) {
  static std::mutex mu;
  static std::set<const void*>* said = new std::set<const void*>();  // never destroyed
  for (const auto& layer : k.layers) {
    for (const auto& h : layer->heuristics) {
      if (!h->expr.empty()) continue;
      std::lock_guard<std::mutex> lock(mu);
      if (!said->insert(h.get()).second) continue;
      std::fprintf(stderr,
                   "triton_embed: recording %s: heuristic '%s' is kept as the values it gave, not "
                   "as an expression (%s); a program without Python serves only the arguments "
                   "recorded\n",
                   full_name(k).c_str(), h->name.c_str(), h->expr_why.c_str());
    }
    if (!layer->tune) continue;
    TuneLayer& t = *layer->tune;
    std::vector<const Choice*> python_hooks;
    {
      std::lock_guard<std::mutex> lock(t.mu);
      for (const auto& [key, choice] : t.recorded) {
        if (choice->pre_hook && !choice->hook_in_cpp()) python_hooks.push_back(choice);
      }
    }
    for (const Choice* c : python_hooks) {
      std::lock_guard<std::mutex> lock(mu);
      if (!said->insert(c).second) continue;
      std::fprintf(stderr,
                   "triton_embed: recording %s: the pre_hook of autotune config %s runs in Python "
                   "only (%s); a program without Python refuses this config\n",
                   full_name(k).c_str(), c->result.best.str.c_str(), c->hook_why.c_str());
    }
  }
}

Contents record() {
  Contents c;
  c.producer.library_version = library_version();
  // Plain kernels and wrapped ones; a wrapped kernel's inner state is recorded with it (its
  // entries), not on its own.
  std::set<const KernelState*> inner;
  std::vector<KernelState*> kernels;
  for_each_kernel([&](KernelState& k) {
    if (k.inner != nullptr) inner.insert(k.inner);
  });
  for_each_kernel([&](KernelState& k) {
    if (inner.count(&k) == 0) kernels.push_back(&k);
  });
  std::map<std::pair<std::string, std::string>, uint32_t> index;  // one kernel per identity
  int triton_version = 0;
  for (KernelState* kp : kernels) {
    KernelState& k = *kp;
    KernelState& cache_of = k.inner != nullptr ? *k.inner : k;
    const size_t nrecords = c.records.size();
    const uint32_t next = static_cast<uint32_t>(c.kernels.size());
    record_decisions(k, next, c);
    add_loaded_rules(k, next, nrecords, c);
    if (c.records.size() == nrecords && !has_entries(cache_of)) continue;
    auto [it, fresh] = index.try_emplace({k.module, k.name}, next);
    if (fresh) {
      Kernel kernel;
      kernel.module = k.module;
      kernel.name = k.name;
      kernel.source_hash = k.source_hash;
      kernel.wrapper = k.wrapper;
      kernel.params = encode_params(k);
      kernel.layers = encode_layers(k);
      c.kernels.push_back(std::move(kernel));
      note_python_only(k);
    } else {
      // Another state of the same identity came first: its records go to that kernel.
      for (size_t r = nrecords; r < c.records.size(); ++r) c.records[r].kernel = it->second;
    }
    record_entries(cache_of, it->second, c, triton_version);
  }
  if (triton_version != 0) {
    c.producer.triton_version =
        std::to_string(triton_version / 100) + "." + std::to_string(triton_version % 100);
  }
  c.producer.note = "recorded by triton_embed";
  return c;
}

void record_at_exit_if_asked() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("TRITON_EMBED_RECORD") == nullptr) return;
    std::atexit(write_recording);
  });
}

void write_recording() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* path = std::getenv("TRITON_EMBED_RECORD");
    if (path == nullptr || *path == '\0') return;
    // At exit there is no caller to throw to: what goes wrong is said, once, and a recording
    // that cannot be widened is written as it was recorded.
    try {
      Contents c = record();
      if (record_widening()) {
        try {
          c = widen_recording(c);
        } catch (const std::exception& e) {
          std::fprintf(stderr,
                       "triton_embed: TRITON_EMBED_RECORD=%s is written as recorded, not "
                       "widened: %s\n",
                       path, e.what());
        }
      }
      write_file(c, path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "triton_embed: TRITON_EMBED_RECORD=%s was not written: %s\n", path,
                   e.what());
    }
  });
}

void write_recording_before_python_closes() {
  // Widening compiles: it must run while the interpreter still does (a plain recording waits
  // for the process's last launch, at exit).
  if (std::getenv("TRITON_EMBED_RECORD") != nullptr && record_widening()) write_recording();
}

}  // namespace triton_embed::detail::bundle

namespace triton_embed {

void load_bundle(const std::string& path) {
  detail::bundle::add(detail::bundle::Bundle::open(path));
}

void load_bundle_from_memory(const void* data, size_t size, std::string_view name) {
  detail::bundle::add(detail::bundle::Bundle::from_memory(data, size, std::string(name)));
}

void unload_bundles() { detail::bundle::unload_all(); }

void write_bundle(const std::string& path) {
  namespace b = detail::bundle;
  b::write_file(b::record_widening() ? b::widen_recording(b::record()) : b::record(), path);
}

void set_bundle_notice_callback(std::function<void(const BundleNotice&)> callback) {
  detail::bundle::NoticeSink& s = detail::bundle::notice_sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.callback = std::move(callback);
}

}  // namespace triton_embed
