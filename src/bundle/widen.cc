#include "bundle/widen.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "base/errors.h"
#include "bundle/decisions.h"
#include "bundle/file_writer.h"
#include "bundle/kernel_table.h"
#include "bundle/merge.h"
#include "bundle/record.h"
#include "bundle/tuning_rule.h"
#include "core/arg_format.h"
#include "core/cache_key.h"
#include "core/jit_internal.h"
#include "core/kernel_source.h"
#include "core/key_values.h"
#include "core/reclaim.h"
#include "core/specialize.h"
#include "core/target.h"
#include "triton_embed/bundle.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail::bundle {

namespace {

using EntryId = std::tuple<std::string, uint32_t, std::string, std::vector<uint64_t>>;

std::string full(std::string_view module, std::string_view name) {
  return std::string(module) + "." + std::string(name);
}

// Sets the explicit target for a scope, and puts back the one before.
class TargetScope {
 public:
  explicit TargetScope(uint32_t code) : before_(explicit_target()) {
    set_target(Target::parse(target_str(code)));
  }
  ~TargetScope() { set_target(before_); }
  TargetScope(const TargetScope&) = delete;
  TargetScope& operator=(const TargetScope&) = delete;

 private:
  std::optional<Target> before_;
};

// One kernel of the bundle, as the JIT layer loads it now.
struct Loaded {
  KernelState* k = nullptr;
  KernelState* inner = nullptr;  // whose entries the bundle holds
  // Values to compile each entry at: parameter -> values (a kernel's Values options).
  std::vector<std::pair<uint32_t, std::vector<int64_t>>> values;
};

class Widen {
 public:
  Widen(const Bundle& in, const WidenOptions& o, WidenReport& r) : in_(in), o_(o), r_(r) {}

  Contents run() {
    TE_CHECK(jit_linked(), NotSupportedError)
        << "widening bundle " << in_.name() << " compiles with Triton, through the JIT layer: "
        << "link triton_embed::triton_embed (triton-embed-bundle widen loads it itself)";
    const ContentsView& c = in_.view();
    check_options_name_kernels(c);
    for (const EntryView& e : c.entries) {
      have_.insert(EntryId(full(c.kernels[e.kernel].module, c.kernels[e.kernel].name), e.target,
                           std::string(e.options), e.key_words));
    }
    for (uint32_t i = 0; i < c.kernels.size(); ++i) widen_kernel(c, i);
    Contents out = merged();
    add_rules(c, out);
    return out;
  }

 private:
  void not_added(std::string kernel, std::string what, std::string why) {
    r_.not_added.push_back({std::move(kernel), std::move(what), std::move(why)});
  }

  void check_options_name_kernels(const ContentsView& c) {
    auto holds = [&](const std::string& name) {
      for (const KernelView& kv : c.kernels) {
        if (full(kv.module, kv.name) == name) return true;
      }
      return false;
    };
    for (const auto& [kernel, rule] : o_.rules) {
      TE_CHECK(kernel == "*" || holds(kernel), ValueError)
          << "widen: a rule for " << kernel << ", which bundle " << in_.name()
          << " does not hold (name it as MODULE:KERNEL, e.g. pykernels.matmul:matmul_kernel)";
      TuningRule parsed;
      std::string why;
      TE_CHECK(TuningRule::parse(rule, &parsed, &why), ValueError)
          << "widen: the rule '" << rule << "' for " << kernel << ": " << why;
    }
    for (const WidenOptions::Values& v : o_.values) {
      TE_CHECK(holds(v.kernel), ValueError)
          << "widen: values of " << v.kernel << "." << v.param << ", a kernel bundle " << in_.name()
          << " does not hold";
    }
  }

  // Loads kernel i through the JIT layer; false (reported) when it cannot be widened.
  bool load(const ContentsView& c, uint32_t i, Loaded& l) {
    const KernelView& kv = c.kernels[i];
    const std::string name = full(kv.module, kv.name);
    try {
      l.k = load_kernel(kv.module, kv.name);
    } catch (const Error& e) {
      not_added(name, "its entries", std::string("the JIT layer cannot load it: ") + e.what());
      return false;
    }
    if (!kv.source_hash.empty() && !l.k->source_hash.empty() &&
        kv.source_hash != l.k->source_hash) {
      not_added(name, "its entries",
                "its source has changed since the bundle was made (source hash " +
                    std::string(kv.source_hash) + " there, " + l.k->source_hash +
                    " now): widen the bundle with the kernels it was made from, or record it "
                    "again");
      return false;
    }
    if (kv.layers != encode_layers(*l.k)) {
      not_added(name, "its entries",
                "its @triton.heuristics / @triton.autotune layers differ from the bundle's "
                "(another configuration list, key or heuristic): record the bundle again");
      return false;
    }
    l.inner = l.k->inner != nullptr ? l.k->inner : l.k;
    for (const WidenOptions::Values& v : o_.values) {
      if (v.kernel != name) continue;
      uint32_t p = 0;
      while (p < l.inner->params.size() && l.inner->params[p].name != v.param) ++p;
      TE_CHECK(p < l.inner->params.size() && l.inner->specs[p].is_constexpr, ValueError)
          << "widen: values of " << name << "." << v.param << ": "
          << (p < l.inner->params.size() ? "not a tl.constexpr parameter (runtime integers are "
                                           "unspecialised without values)"
                                         : "the kernel has no such parameter")
          << "; its parameters: " << call_signature(*l.inner);
      TE_CHECK(!l.k->layer_params.config.has(p) && !l.k->layer_params.heuristic.has(p), ValueError)
          << "widen: values of " << name << "." << v.param << ": the kernel's "
          << (l.k->layer_params.config.has(p) ? "autotune configs set it" : "heuristics set it")
          << "; give values of a parameter its callers pass";
      l.values.emplace_back(p, v.values);
    }
    return true;
  }

  void widen_kernel(const ContentsView& c, uint32_t i) {
    Loaded l;
    const bool expanding = [&] {
      for (const WidenOptions::Values& v : o_.values) {
        if (v.kernel == full(c.kernels[i].module, c.kernels[i].name)) return true;
      }
      return false;
    }();
    bool has_entries = false;
    for (const EntryView& e : c.entries) has_entries = has_entries || e.kernel == i;
    if (!has_entries || (!o_.generic && !expanding)) return;
    if (!load(c, i, l)) return;
    const std::set<size_t> twins_of_others = less_specialised_entries(c, i, l);
    for (size_t ei = 0; ei < c.entries.size(); ++ei) {
      const EntryView& e = c.entries[ei];
      if (e.kernel != i) continue;
      widen_entry(l, e, ei, twins_of_others.count(ei) == 0);
    }
  }

  // The entries of kernel i that serve another entry's calls with fewer assumptions (a twin
  // widening made, or a size recorded beside a more specialised one): their own twins would
  // only combine unspecialised integers, which the other entry's twins do not, so they get
  // none, and widening a widened bundle again adds nothing.
  std::set<size_t> less_specialised_entries(const ContentsView& c, uint32_t i, const Loaded& l) {
    std::map<std::tuple<uint32_t, std::string_view, uint64_t>, std::vector<size_t>> classes;
    for (size_t ei = 0; ei < c.entries.size(); ++ei) {
      const EntryView& e = c.entries[ei];
      if (e.kernel != i) continue;
      classes[{e.target, e.options, serving_class(e.key_words.data(), e.key_words.size())}]
          .push_back(ei);
    }
    std::set<size_t> out;
    auto leaves = std::make_unique<LeafList>();
    for (const auto& [cls, members] : classes) {
      for (size_t f : members) {
        const EntryView& ef = c.entries[f];
        KeyCall call;
        std::string why;
        if (!call_from_key(*l.inner, ef.key_words.data(), ef.key_words.size(),
                           KeyCallKind::kAsKeyed, &call, &why)) {
          continue;
        }
        specialize(*l.inner, call.args.data(), *leaves);
        Key key;
        key.n = static_cast<uint32_t>(call.key.size());
        std::copy(call.key.begin(), call.key.end(), key.w);
        for (size_t e : members) {
          const EntryView& ee = c.entries[e];
          if (e != f &&
              match_key(*l.inner, *leaves, key, ee.key_words.data(), ee.key_words.size(), false)
                      .verdict == KeyMatch::Verdict::kServes) {
            out.insert(e);
          }
        }
      }
    }
    return out;
  }

  void widen_entry(const Loaded& l, const EntryView& e, size_t index, bool with_twins) {
    const std::string name = full(l.k->module, l.k->name);
    const std::string what = "entry #" + std::to_string(index) + " for " + target_str(e.target) +
                             " (" + std::string(e.meta.signature) + ")";
    if (e.triton_version != l.k->triton_version) {
      not_added(name, what,
                "compiled by Triton " + version_text(e.triton_version) +
                    ", and this process has Triton " + version_text(l.k->triton_version) +
                    ": widen with the Triton that compiled it (its twin would be another "
                    "compiler's code)");
      return;
    }
    Options opts;
    try {
      opts = decode_options(e.options, "bundle " + in_.name());
    } catch (const Error& err) {
      not_added(name, what, err.what());
      return;
    }
    if (o_.generic && with_twins) twins(l, e, opts, what, {});
    // Every combination of the kernel's values, the last parameter varying fastest.
    std::vector<size_t> at(l.values.size(), 0);
    while (!l.values.empty()) {
      std::vector<std::pair<uint32_t, int64_t>> set;
      for (size_t v = 0; v < l.values.size(); ++v) {
        set.emplace_back(l.values[v].first, l.values[v].second[at[v]]);
      }
      compile(l, e, opts, what, KeyCallKind::kAsKeyed, set);
      if (o_.generic && with_twins) twins(l, e, opts, what, set);
      size_t v = l.values.size();
      while (v > 0 && ++at[v - 1] == l.values[v - 1].second.size()) at[--v] = 0;
      if (v == 0) break;
    }
  }

  static std::string version_text(int v) {
    return std::to_string(v / 100) + "." + std::to_string(v % 100);
  }

  // Entry e's twins (with the constexprs `set` given other values): with every runtime
  // integer unspecialised, which serves every value of them, and, where it has several, with
  // each alone unspecialised, which keeps the others' assumptions for the calls where one size
  // varies (a batch's rows, while the model's strides stay multiples of 16, or 1).
  void twins(const Loaded& l, const EntryView& e, const Options& opts, const std::string& what,
             const std::vector<std::pair<uint32_t, int64_t>>& set) {
    const uint32_t n = compile(l, e, opts, what, KeyCallKind::kGeneric, set, -1);
    for (uint32_t i = 0; n >= 2 && i < n; ++i) {
      compile(l, e, opts, what, KeyCallKind::kGeneric, set, static_cast<int>(i));
    }
  }

  // Compiles entry e's call of `kind` (`only`: call_from_key's), with the constexprs `set`
  // given other values. Returns how many integers it unspecialised.
  uint32_t compile(const Loaded& l, const EntryView& e, const Options& opts,
                   const std::string& what, KeyCallKind kind,
                   const std::vector<std::pair<uint32_t, int64_t>>& set, int only = -1) {
    const std::string name = full(l.k->module, l.k->name);
    KeyCall call;
    std::string why;
    if (!call_from_key(*l.inner, e.key_words.data(), e.key_words.size(), kind, &call, &why, only)) {
      not_added(name, what, "no call can be rebuilt from its key: " + why);
      return 0;
    }
    const uint32_t widened = call.widened;
    std::string because;
    bool changed = kind == KeyCallKind::kGeneric && call.widened > 0;
    if (kind == KeyCallKind::kGeneric) {
      because = only < 0 || call.widened_params.empty()
                    ? std::string("integers unspecialised")
                    : l.inner->params[call.widened_params[0]].name + " unspecialised";
    }
    for (const auto& [p, v] : set) {
      ArgValue& a = call.args[p];
      const bool same = a.kind == ArgKind::kInt && !a.big && a.i == v;
      changed = changed || !same;
      a = ArgValue{};
      a.kind = ArgKind::kInt;
      a.i = v;
      because = l.inner->params[p].name + "=" + std::to_string(v) +
                (because.empty() ? "" : ", " + because);
    }
    if (!changed) return widened;  // nothing this entry lacks
    if (!set.empty()) {
      try {
        auto leaves = std::make_unique<LeafList>();
        auto key = std::make_unique<Key>();
        specialize(*l.inner, call.args.data(), *leaves);
        build_key(*l.inner, *leaves, *key);
        call.key.assign(key->w, key->w + key->n);
      } catch (const Error& err) {
        not_added(name, what + " at " + because, err.what());
        return widened;
      }
    }
    // A key the bundle holds, or this run compiled, already (the heuristics' keys are known
    // only once they ran).
    const EntryId id(name, e.target, std::string(e.options), call.key);
    const bool through_heuristics = !set.empty() && l.k->wrapper_kind == WrapperKind::kHeuristics;
    if (!through_heuristics && (have_.count(id) != 0 || !done_.insert(id).second)) {
      return widened;
    }
    try {
      TargetScope target(e.target);
      const CompiledKernel* ck = nullptr;
      if (through_heuristics) {
        ck = compile_through_heuristics(l, call, opts, what);
      } else {
        if (!set.empty() && !heuristics_keep(l, set, what)) return widened;
        if (!set.empty() && l.k->wrapper_kind == WrapperKind::kAutotune && has_descriptor(call)) {
          // Its descriptors' block shapes are what a config's pre-hook set for the recorded
          // values, which widen does not run again.
          not_added(name, what + " at " + because,
                    "its tensor descriptors' block shapes come from the autotune config's "
                    "pre-hook, which widen does not run again for new constexpr values; record "
                    "a call at those values instead");
          return widened;
        }
        ck = &detail::compile(l.inner, intern_options(opts), call.args.data(), call.args.size());
      }
      compiled_.emplace(std::make_pair(ck->hash(), ck->target()), because);  // the first says
    } catch (const Error& err) {
      not_added(name, what + " at " + because, err.what());
    }
    return widened;
  }

  static bool has_descriptor(const KeyCall& call) {
    for (const ArgValue& a : call.args) {
      if (a.kind == ArgKind::kTensorDesc) return true;
    }
    return false;
  }

  // Whether a kernel whose heuristics run inside its autotuner keeps their values when the
  // constexprs `set` change: none of them reads one (their expressions say; a heuristic only
  // Python runs cannot be asked).
  bool heuristics_keep(const Loaded& l, const std::vector<std::pair<uint32_t, int64_t>>& set,
                       const std::string& what) {
    for (const auto& layer : l.k->layers) {
      for (const auto& h : layer->heuristics) {
        if (h->expr.empty()) {
          not_added(full(l.k->module, l.k->name), what,
                    "heuristic '" + h->name + "' runs in Python only (" + h->expr_why +
                        ") with an autotuner around it, so widen cannot compute it again for "
                        "new constexpr values");
          return false;
        }
        for (const expr::Program::Read& read : h->expr.reads()) {
          for (const auto& [p, v] : set) {
            if (read.param != p) continue;
            not_added(full(l.k->module, l.k->name), what,
                      "heuristic '" + h->name + "' reads " + l.inner->params[p].name +
                          " with an autotuner around it, which widen cannot run again for "
                          "new values of it");
            return false;
          }
        }
      }
    }
    return true;
  }

  // A @triton.heuristics kernel at new constexpr values: its heuristics run again (in Python,
  // as for any JIT call) on the call without the parameters and options they set.
  const CompiledKernel* compile_through_heuristics(const Loaded& l, const KeyCall& call,
                                                   const Options& opts, const std::string& what) {
    const KernelState& k = *l.k;
    Options base;
    for (const auto& [key, value] : opts.entries()) {
      bool set_by_heuristic = false;
      for (const auto& layer : k.layers) {
        for (const auto& h : layer->heuristics) set_by_heuristic |= h->option && h->name == key;
      }
      if (!set_by_heuristic) base.set(key, value);
    }
    std::vector<ArgValue> vals;
    std::vector<ArgName> names;
    size_t npos = 0;
    bool named = false;
    for (uint32_t p = 0; p < k.params.size(); ++p) {
      if (k.layer_params.heuristic.has(p)) {
        named = true;
        continue;
      }
      vals.push_back(call.args[p]);
      if (named) {
        names.emplace_back(k.params[p].name.data(), k.params[p].name.size());
      } else {
        ++npos;
      }
    }
    CallArgs a;
    a.vals = vals.data();
    a.npos = static_cast<uint32_t>(npos);
    a.nnamed = static_cast<uint32_t>(names.size());
    a.names = names.data();
    const CompiledKernel& ck = compile_call(l.k, intern_options(base), a, nullptr);
    note_stand_ins(l, what);
    return &ck;
  }

  // Says, once per heuristic and argument, that a heuristic read a value the entry's key does
  // not hold (a runtime integer's, an address): widen gave it a stand-in (core/key_values.h),
  // and the entry added serves the calls whose heuristics give what they gave for it.
  void note_stand_ins(const Loaded& l, const std::string& what) {
    const KernelState& k = *l.k;
    for (const auto& layer : k.layers) {
      for (const auto& h : layer->heuristics) {
        const HeuristicPlan* plan = h->plan.load(std::memory_order_acquire);
        std::vector<std::string> read;
        if (h->never_memo) read.push_back("arguments no key can hold");
        for (const Dep& d : plan != nullptr ? plan->deps : std::vector<Dep>{}) {
          if (k.specs[d.param].is_constexpr || d.aspect == Aspect::kDType) continue;
          read.push_back("'" + k.params[d.param].name + "'" +
                         (d.aspect == Aspect::kAddress ? " (its address)" : ""));
        }
        for (const std::string& arg : read) {
          const std::string note = full(k.module, k.name) + ": heuristic '" + h->name + "' reads " +
                                   arg +
                                   ", which the entry's key does not hold: widen gave it a "
                                   "stand-in value, and the entries it added at new constexpr "
                                   "values (" +
                                   what + ") serve the calls whose heuristics give the same";
          if (said_.insert(note.substr(0, note.find(" (entry"))).second) r_.notes.push_back(note);
        }
      }
    }
  }

  // `in` and what this process compiled for it (recorded as any program records), merged.
  Contents merged() {
    Contents rec = record();
    // Only the bundle's kernels: the JIT may have loaded others on the way (none today).
    std::set<std::string> ours;
    for (const KernelView& kv : in_.view().kernels) ours.insert(full(kv.module, kv.name));
    Contents keep;
    std::vector<int64_t> remap(rec.kernels.size(), -1);
    for (size_t i = 0; i < rec.kernels.size(); ++i) {
      if (ours.count(full(rec.kernels[i].module, rec.kernels[i].name)) == 0) continue;
      remap[i] = static_cast<int64_t>(keep.kernels.size());
      keep.kernels.push_back(rec.kernels[i]);
    }
    for (BundleEntry& e : rec.entries) {
      if (remap[e.kernel] < 0) continue;
      // What the bundle holds stays its own (a key compiled again may differ in its bytes).
      const std::string kernel = full(rec.kernels[e.kernel].module, rec.kernels[e.kernel].name);
      if (have_.count(EntryId(kernel, e.target, e.options, e.key_words)) != 0) continue;
      e.kernel = static_cast<uint32_t>(remap[e.kernel]);
      keep.entries.push_back(std::move(e));
    }
    for (Record& r : rec.records) {
      if (remap[r.kernel] < 0 || r.kind == kRecordTuningRule) continue;
      r.kernel = static_cast<uint32_t>(remap[r.kernel]);
      keep.records.push_back(std::move(r));
    }
    keep.producer = rec.producer;
    const std::string bytes = serialize(keep);
    const Bundle added = Bundle::from_memory(bytes.data(), bytes.size(), "(widened entries)");
    Contents out = merge({&in_, &added});
    out.producer.note = std::string(in_.producer().note);
    const ContentsView& c = in_.view();
    for (const BundleEntry& e : out.entries) {
      const std::string kernel = full(out.kernels[e.kernel].module, out.kernels[e.kernel].name);
      if (have_.count(EntryId(kernel, e.target, e.options, e.key_words)) != 0) continue;
      WidenReport::Added a;
      a.kernel = kernel;
      a.target = target_str(e.target);
      a.options = decode_options(e.options, "bundle " + in_.name()).str();
      a.signature = e.meta.signature;
      const auto it = compiled_.find({e.meta.hash, a.target});
      a.because = it != compiled_.end() ? it->second : std::string("compiled on the way");
      a.bytes = e.meta.cubin.size() + e.meta.ptx.size();
      r_.added.push_back(std::move(a));
    }
    r_.records_added = out.records.size() - c.records.size();
    return out;
  }

  void add_rules(const ContentsView& c, Contents& out) {
    if (o_.rules.empty()) return;
    for (uint32_t i = 0; i < c.kernels.size(); ++i) {
      const KernelView& kv = c.kernels[i];
      if (kv.wrapper != "autotune") continue;
      const std::string name = full(kv.module, kv.name);
      std::string text;
      bool own = false;
      for (const auto& [kernel, rule] : o_.rules) {
        if (kernel == name) {
          text = rule;
          own = true;
        } else if (kernel == "*" && !own) {
          text = rule;
        }
      }
      if (text.empty()) continue;
      Loaded l;
      if (!load(c, i, l)) continue;
      uint32_t oi = 0;
      while (full(out.kernels[oi].module, out.kernels[oi].name) != name) ++oi;
      TuningRule rule;
      std::string why;
      TuningRule::parse(text, &rule, &why);  // checked by check_options_name_kernels
      for (size_t li = 0; li < l.k->layers.size(); ++li) {
        if (!l.k->layers[li]->tune) continue;
        bool choices = false;
        auto existing = out.records.end();
        for (auto it = out.records.begin(); it != out.records.end(); ++it) {
          if (it->kernel != oi || it->key_words.empty() || it->key_words[0] != li) continue;
          choices = choices || it->kind == kRecordChoice;
          if (it->kind == kRecordTuningRule) existing = it;
        }
        const std::string where = name + " autotuner " + std::to_string(li);
        if (!choices) continue;                               // nothing a rule could serve from
        if (existing != out.records.end() && !own) continue;  // "*" keeps the bundle's own
        std::string bad, keys;
        if (!rule_fits(rule, *l.k, *l.k->layers[li]->tune, &bad, &keys)) {
          not_added(name, "the rule '" + text + "'",
                    "it names '" + bad +
                        "', which is no key argument of the autotuner (its "
                        "key: " +
                        keys + ")");
          continue;
        }
        const bool replaced = existing != out.records.end();
        if (replaced) out.records.erase(existing);
        out.records.push_back(rule_record(oi, li, rule.str()));
        r_.rules_added += replaced ? 0 : 1;
        r_.rules.push_back(where + ": " + rule.str() +
                           (replaced ? " (replaced the bundle's)" : ""));
      }
    }
  }

  const Bundle& in_;
  const WidenOptions& o_;
  WidenReport& r_;
  std::set<EntryId> have_;                                               // the bundle's entries
  std::set<EntryId> done_;                                               // compiled by this run
  std::map<std::pair<std::string, std::string>, std::string> compiled_;  // (hash, target)
  std::set<std::string> said_;
};

}  // namespace

Contents widen(const Bundle& in, const WidenOptions& options, WidenReport* report) {
  const ReadSection reading;  // the plans and compiled kernels it reads stay while it runs
  return Widen(in, options, *report).run();
}

Contents widen_recording(const Contents& recorded) {
  const std::string bytes = serialize(recorded);
  const Bundle b = Bundle::from_memory(bytes.data(), bytes.size(), "(this process's recording)");
  WidenReport report;
  Contents out = widen(b, WidenOptions{}, &report);
  for (const WidenReport::NotAdded& n : report.not_added) {
    std::fprintf(stderr, "triton_embed: widening the recording: %s %s: not added: %s\n",
                 n.kernel.c_str(), n.what.c_str(), n.why.c_str());
  }
  for (const std::string& n : report.notes) {
    std::fprintf(stderr, "triton_embed: widening the recording: %s\n", n.c_str());
  }
  out.producer.note = std::string(recorded.producer.note) + ", widened";
  return out;
}

}  // namespace triton_embed::detail::bundle
