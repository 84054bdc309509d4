// The loaded bundles' entries serving cache misses (lookup.h), and the notices said when one
// serves in place of the key's own.

#include "bundle/lookup.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "bundle/entry_index.h"
#include "bundle/kernel_table.h"
#include "bundle/store.h"
#include "core/arg_format.h"
#include "core/cache.h"
#include "core/cache_key.h"
#include "core/compiled_kernel.h"
#include "core/kernel_source.h"
#include "core/key_values.h"
#include "core/settings.h"
#include "core/target.h"

namespace triton_embed::detail::bundle {

namespace {

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
  const bool allowed = bundle_ptx_allowed();
  const std::string_view t = ptx_target(ptx);
  return allowed && t.size() > 3 && t.substr(0, 3) == "sm_" &&
         t.find_first_not_of("0123456789", 3) == std::string_view::npos;
}

}  // namespace

namespace {

struct NoticeSink {
  std::mutex mu;
  std::function<void(const BundleNotice&)> callback;
};
NoticeSink& notice_sink() {
  static NoticeSink* s = new NoticeSink();  // never destroyed: threads may launch during exit
  return *s;
}

}  // namespace

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

namespace {

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

}  // namespace

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
    } else if (!jit_linked() && !bundle_strict()) {
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

namespace {

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

}  // namespace

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

}  // namespace triton_embed::detail::bundle

namespace triton_embed {

void set_bundle_notice_callback(std::function<void(const BundleNotice&)> callback) {
  detail::bundle::NoticeSink& s = detail::bundle::notice_sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.callback = std::move(callback);
}

}  // namespace triton_embed
