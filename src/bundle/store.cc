#include "bundle/store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "bundle/decisions.h"
#include "bundle/kernel_table.h"
#include "core/cache.h"
#include "core/compiled_kernel.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/source.h"
#include "core/target.h"
#include "triton_embed/bundle.h"

namespace triton_embed::detail::bundle {

namespace {

struct Store {
  std::mutex mu;
  std::deque<Bundle> bundles;  // never removed: entries and states point into them
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

}  // namespace

void add(Bundle b) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.bundles.push_back(std::move(b));
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

std::unique_ptr<detail::Entry> entry_from(const EntryView& ev, const Key& key, uint64_t hash,
                                          bool from_ptx) {
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

std::unique_ptr<detail::Entry> bundled_entry(const KernelState& k, const InternedOptions& options,
                                             const Key& key, uint64_t hash) {
  load_from_environment();
  const std::string opts = encode_options(options.options);
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  // The entry for the GPU's own target; else the newest older target's PTX, when it may serve.
  const EntryView* older = nullptr;
  const Bundle* older_bundle = nullptr;
  for (const Bundle& b : s.bundles) {
    const ContentsView& c = b.view();
    for (const EntryView& ev : c.entries) {
      if (ev.key_words.size() != key.n || ev.options != opts ||
          !same_kernel(c.kernels[ev.kernel], k) ||
          !std::equal(ev.key_words.begin(), ev.key_words.end(), key.w)) {
        continue;
      }
      if (ev.target == key.target) return entry_from(ev, key, hash, false);
      if (older_or_same_target(ev.target, key.target) && ptx_serves(ev.ptx) &&
          (older == nullptr || target_arch(ev.target) > target_arch(older->target))) {
        older = &ev;
        older_bundle = &b;
      }
    }
  }
  if (older == nullptr) return nullptr;
  // Said once per entry: the kernel runs code built for an older GPU, compiled by the driver.
  std::fprintf(stderr,
               "triton_embed: %s.%s as %s: bundle %s has no cubin for %s; using the PTX of its "
               "%s entry, which the CUDA driver compiles for this GPU when the kernel is loaded "
               "(add a %s entry to the bundle to launch code built for this GPU; "
               "TRITON_EMBED_BUNDLE_PTX=0 refuses PTX instead)\n",
               k.module.c_str(), k.name.c_str(), std::string(older->signature).c_str(),
               older_bundle->name().c_str(), target_str(key.target).c_str(),
               target_str(older->target).c_str(), target_str(key.target).c_str());
  return entry_from(*older, key, hash, true);
}

std::string nearest(const KernelState& k, uint32_t target) {
  load_from_environment();
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<std::pair<int, std::string>> found;  // (0: same target, 1: other), line
  for (const Bundle& b : s.bundles) {
    const ContentsView& c = b.view();
    for (const EntryView& ev : c.entries) {
      if (!same_kernel(c.kernels[ev.kernel], k)) continue;
      const std::string opts = decode_options(ev.options, where(b, c.kernels[ev.kernel])).str();
      found.emplace_back(ev.target == target ? 0 : 1,
                         "  " + target_str(ev.target) + (opts.empty() ? "" : " " + opts) + ": " +
                             std::string(ev.signature) + " (" + b.name() + ")");
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
                                             const LeafList&) override {
    return bundled_entry(k, options, key, hash);
  }
  std::string nearest_entries(const KernelState& k, uint32_t target) override {
    return nearest(k, target);
  }
  // Heuristic results serve programs without the JIT layer only: the bundles loaded since the
  // last call hand theirs over.
  bool known_heuristics(KernelState& k, std::vector<HeuristicRecord>& out) override {
    if (jit_linked()) return false;
    load_from_environment();
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    each_new_kernel(s, s.heuristics_applied[&k], k,
                    [&](const Bundle& b, const ContentsView& c, uint32_t i) {
                      decode_heuristics(c, i, k, where(b, c.kernels[i]), out);
                    });
    return true;
  }
  // Choices for `target`, from the bundles loaded since the last call for it. The JIT layer
  // takes them only for the very kernel and configs they were tuned from, and tunes configs
  // with a pre_hook itself (it must run the hook).
  bool known_choices(KernelState& k, size_t layer, uint32_t target,
                     std::vector<ChoiceRecord>& out) override {
    load_from_environment();
    const bool jit = jit_linked();
    const std::string layers = jit ? encode_layers(k) : std::string();
    const TuneLayer* t = k.layers[layer]->tune.get();
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mu);
    each_new_kernel(s, s.choices_applied[{t, target}], k,
                    [&](const Bundle& b, const ContentsView& c, uint32_t i) {
                      const KernelView& kv = c.kernels[i];
                      if (jit && (kv.source_hash.empty() || kv.layers != layers)) return;
                      decode_choices(c, i, k, layer, target, jit, where(b, kv), out);
                    });
    return true;
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
    if (e.process_local) continue;
    const CompiledKernel& ck = *e.kernel;
    if (ck.cubin().empty()) continue;  // served by an older target's PTX: not this target's
    bundle::Entry out;
    out.kernel = index;
    out.target = e.target;
    out.options = encode_options(interned_options_by_id(e.options)->options);
    out.key_words = e.key_words;
    set_metadata(out, CompiledKernelAccess::metadata(ck));
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

bool has_entries(KernelState& k) {
  std::lock_guard<std::mutex> lock(k.cache.mu);
  return !k.cache.entries.empty();
}

}  // namespace

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
    std::atexit([] {
      const char* path = std::getenv("TRITON_EMBED_RECORD");
      if (path == nullptr || *path == '\0') return;
      try {
        write_file(record(), path);
      } catch (const std::exception& e) {
        // At exit there is no caller to throw to: say what was not written, once.
        std::fprintf(stderr, "triton_embed: TRITON_EMBED_RECORD=%s was not written: %s\n", path,
                     e.what());
      }
    });
  });
}

}  // namespace triton_embed::detail::bundle

namespace triton_embed {

void load_bundle(const std::string& path) {
  detail::bundle::add(detail::bundle::Bundle::open(path));
}

void load_bundle_from_memory(const void* data, size_t size, std::string_view name) {
  detail::bundle::add(detail::bundle::Bundle::from_memory(data, size, std::string(name)));
}

void write_bundle(const std::string& path) {
  detail::bundle::write_file(detail::bundle::record(), path);
}

}  // namespace triton_embed
