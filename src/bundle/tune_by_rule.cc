// Tuning keys nobody tuned (tune_by_rule.h): a tuning rule applied to the loaded bundles'
// recorded choices.

#include "bundle/tune_by_rule.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/errors.h"
#include "bundle/decisions.h"
#include "bundle/lookup.h"
#include "bundle/store.h"
#include "bundle/tuning_rule.h"
#include "core/arg_format.h"
#include "core/memo_keys.h"
#include "core/settings.h"
#include "core/target.h"
#include "triton_embed/bundle.h"

namespace triton_embed::detail::bundle {

namespace {

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
std::string tuning_key_text(const KernelState& k, const Frame& f, const std::vector<KeyDim>& dims,
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
  ChoiceDecision* rec = nullptr;
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

}  // namespace

std::unique_ptr<Choice> tune_by_rule(KernelState& k, const TuneLayer& t, const Frame& f,
                                     const MemoKey& key) {
  if (key.overflow || key.n == 0) return nullptr;
  size_t layer = 0;
  while (layer < k.layers.size() && k.layers[layer]->tune.get() != &t) ++layer;
  if (layer == k.layers.size()) return nullptr;
  load_from_environment();
  const uint32_t target = current_target_code();
  std::vector<ChoiceDecision> known;
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
  const std::string asked_text = tuning_key_text(k, f, dims, asked);
  const std::string rule_text = have_rule ? rule.str() : std::string("exact");
  const bool strict_now = bundle_strict();
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
  for (ChoiceDecision& cr : known) {
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
  notice.served = tuning_key_text(k, f, dims, won.values);
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

}  // namespace triton_embed::detail::bundle
