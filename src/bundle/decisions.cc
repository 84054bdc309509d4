#include "bundle/decisions.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "bundle/codec.h"
#include "bundle/kernel_table.h"
#include "core/bind.h"
#include "core/target.h"

namespace triton_embed::detail::bundle {

namespace {

// The layers' and records' own version (as the parameter table's, kernel_table.cc).
// Layers: 2 added the parameters the autotune configs set; 3 each heuristic's expression.
constexpr uint8_t kLayersVersion = 3;
constexpr uint8_t kHeuristicRecordVersion = 1;
constexpr uint8_t kChoiceRecordVersion = 2;  // 2: with the config's pre_hook as an expression
constexpr uint8_t kRuleRecordVersion = 1;

constexpr uint8_t kLayerHeuristics = 0, kLayerAutotune = 1;

[[noreturn]] void corrupt(const std::string& where, const std::string& what) {
  throw BundleError(where + ": " + what + "; rebuild the bundle", BundleError::Reason::kCorrupt);
}

void check_version(uint8_t version, uint8_t ours, const std::string& where, const char* field) {
  if (version == ours) return;
  throw BundleError(where + ": its " + field + " are of version " + std::to_string(version) +
                        ", this library reads version " + std::to_string(ours) +
                        ": rebuild the bundle with this version of triton_embed",
                    version > ours ? BundleError::Reason::kTooNew : BundleError::Reason::kCorrupt);
}

void push_text(std::string_view text, std::vector<uint64_t>& words) {
  words.push_back(text.size());
  for (size_t i = 0; i < text.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, text.data() + i, std::min<size_t>(8, text.size() - i));
    words.push_back(w);
  }
}

// The text push_text wrote at words[at], and the index after it; false when it does not fit.
bool pop_text(const std::vector<uint64_t>& words, size_t& at, std::string& text) {
  if (at >= words.size()) return false;
  const uint64_t n = words[at++];
  const uint64_t nwords = (n + 7) / 8;
  if (n > (1u << 20) || words.size() - at < nwords) return false;
  text.assign(n, '\0');
  for (uint64_t i = 0; i < nwords; ++i) {
    const uint64_t w = words[at + i];
    std::memcpy(text.data() + i * 8, &w, std::min<uint64_t>(8, n - i * 8));
  }
  at += nwords;
  return true;
}

void write_config(Writer& w, const TunedConfig& c) {
  w.bytes(c.str);
  w.u32(static_cast<uint32_t>(c.kwargs.size()));
  for (const auto& [name, repr] : c.kwargs) {
    w.bytes(name);
    w.bytes(repr);
  }
  w.i32(c.num_warps);
  w.i32(c.num_stages);
  w.i32(c.num_ctas);
  w.i32(c.maxnreg);
  w.u8(c.has_pre_hook);
}

TunedConfig read_config(Reader& r) {
  TunedConfig c;
  c.str = std::string(r.bytes());
  const uint32_t n = r.u32();
  if (n > kMaxArgs) r.fail("a config with more meta-parameters than a kernel has parameters");
  for (uint32_t i = 0; i < n; ++i) {
    std::string name(r.bytes());
    c.kwargs.emplace_back(std::move(name), std::string(r.bytes()));
  }
  c.num_warps = r.i32();
  c.num_stages = r.i32();
  c.num_ctas = r.i32();
  c.maxnreg = r.i32();
  c.has_pre_hook = r.u8() != 0;
  return c;
}

// Which of the targets that have choices serves `target`: the same, else the newest older
// architecture with the same warp size (as its PTX would); 0 when none does. With target 0
// (not known: no device, no explicit target), the newest.
uint32_t serving_target(const std::vector<uint32_t>& have, uint32_t target) {
  uint32_t best = 0;
  for (uint32_t t : have) {
    if (t == target) return t;
    if (target != 0 && !older_or_same_target(t, target)) continue;
    if (best == 0 || target_arch(t) > target_arch(best)) best = t;
  }
  return best;
}

}  // namespace

bool rule_fits(const TuningRule& r, const KernelState& k, const TuneLayer& t, std::string* bad,
               std::string* keys) {
  keys->clear();
  for (int p : t.key_params) {
    if (p >= 0) *keys += (keys->empty() ? "" : ", ") + k.params[static_cast<size_t>(p)].name;
  }
  for (const auto& [name, _] : r.named) {
    bool found = false;
    for (int p : t.key_params)
      found = found || (p >= 0 && k.params[static_cast<size_t>(p)].name == name);
    if (!found) {
      *bad = name;
      return false;
    }
  }
  return true;
}

std::string encode_layers(const KernelState& k) {
  if (k.layers.empty()) return std::string();
  Writer w;
  w.u8(kLayersVersion);
  w.u32(static_cast<uint32_t>(k.layers.size()));
  for (const auto& layer : k.layers) {
    if (layer->kind == Layer::Kind::kHeuristics) {
      w.u8(kLayerHeuristics);
      w.u32(static_cast<uint32_t>(layer->heuristics.size()));
      for (const auto& h : layer->heuristics) {
        w.bytes(h->name);
        w.u8(h->option);
        w.u32(h->param);
        w.u32(h->option_bit);
        w.bytes(h->expr.empty() ? std::string() : h->expr.encode());
        w.bytes(h->expr_why);
      }
    } else {
      const TuneLayer& t = *layer->tune;
      w.u8(kLayerAutotune);
      w.u32(static_cast<uint32_t>(t.key_params.size()));
      for (int p : t.key_params) w.i32(p);
      w.u64(t.num_configs);
      w.bytes(t.configs);
      w.u32(static_cast<uint32_t>(t.config_params.size()));
      for (uint32_t p : t.config_params) w.u32(p);
    }
  }
  return w.take();
}

void decode_layers(std::string_view bytes, KernelState& k, const std::string& where) {
  Reader r(bytes, k, where, "layers");
  check_version(r.u8(), kLayersVersion, where, "layers");
  const uint32_t n = r.u32();
  if (n == 0 || n > 64) r.fail("an implausible number of layers");
  const uint32_t np = static_cast<uint32_t>(k.params.size());
  k.layers.clear();
  for (uint32_t i = 0; i < n; ++i) {
    auto layer = std::make_unique<Layer>();
    const uint8_t kind = r.u8();
    if (kind == kLayerHeuristics) {
      layer->kind = Layer::Kind::kHeuristics;
      const uint32_t nh = r.u32();
      if (nh > kMaxArgs) r.fail("more heuristics than a kernel has parameters");
      for (uint32_t j = 0; j < nh; ++j) {
        auto h = std::make_unique<Heuristic>();
        h->name = std::string(r.bytes());
        h->option = r.u8() != 0;
        h->param = r.u32();
        h->option_bit = r.u32();
        if (!h->option && (h->param >= np || k.params[h->param].name != h->name)) {
          r.fail("a heuristic for a parameter the kernel does not have");
        }
        const std::string_view program = r.bytes();
        std::string why;
        if (!program.empty() && !expr::Program::decode(program, np, &h->expr, &why)) {
          corrupt(where, "heuristic '" + h->name + "': its expression: " + why);
        }
        h->expr_why = std::string(r.bytes());
        layer->heuristics.push_back(std::move(h));
      }
    } else if (kind == kLayerAutotune) {
      layer->kind = Layer::Kind::kAutotune;
      auto t = std::make_unique<TuneLayer>();
      const uint32_t nk = r.u32();
      if (nk > kMaxArgs) r.fail("more tuning keys than a kernel has parameters");
      for (uint32_t j = 0; j < nk; ++j) {
        const int32_t p = r.i32();
        if (p < -1 || p >= static_cast<int32_t>(np)) r.fail("a tuning key that is no parameter");
        t->key_params.push_back(p);
      }
      t->num_configs = r.u64();
      if (t->num_configs == 0) r.fail("an autotuner with no configs");
      t->configs = std::string(r.bytes());
      const uint32_t nc = r.u32();
      if (nc > np) r.fail("configs that set more parameters than the kernel has");
      for (uint32_t j = 0; j < nc; ++j) {
        const uint32_t p = r.u32();
        if (p >= np || (j > 0 && p <= t->config_params.back())) {
          r.fail("a config parameter that is no parameter, or out of order");
        }
        t->config_params.push_back(p);
      }
      layer->tune = std::move(t);
    } else {
      r.fail("an unknown layer kind");
    }
    k.layers.push_back(std::move(layer));
  }
  if (!r.done()) r.fail("bytes after the last layer");
  k.call_memo = std::make_unique<CallMemo>();
  index_layer_params(k);
}

void record_decisions(const KernelState& k, uint32_t kernel, Contents& out) {
  for (size_t li = 0; li < k.layers.size(); ++li) {
    Layer& layer = *k.layers[li];
    if (layer.kind == Layer::Kind::kHeuristics) {
      for (size_t hi = 0; hi < layer.heuristics.size(); ++hi) {
        Heuristic& h = *layer.heuristics[hi];
        std::lock_guard<std::mutex> lock(h.mu);
        if (h.recorded_plan == nullptr) continue;
        std::vector<uint64_t> prefix{static_cast<uint64_t>(li) << 32 | hi,
                                     h.recorded_plan->deps.size()};
        for (const Dep& d : h.recorded_plan->deps) {
          prefix.push_back(static_cast<uint64_t>(d.param) << 8 | to_disk(d.aspect));
        }
        for (const auto& [key, value] : h.recorded) {
          Record rec;
          rec.kind = kRecordHeuristic;
          rec.kernel = kernel;
          rec.key_words = prefix;
          rec.key_words.insert(rec.key_words.end(), key.begin(), key.end());
          Writer w;
          w.u8(kHeuristicRecordVersion);
          w.value(value);
          rec.payload = w.take();
          out.records.push_back(std::move(rec));
        }
      }
      continue;
    }
    TuneLayer& t = *layer.tune;
    std::lock_guard<std::mutex> lock(t.mu);
    for (const auto& [words, choice] : t.recorded) {
      // words: {target, options id, tuning key...}; another process knows the options by text.
      const InternedOptions* base = interned_options_by_id(static_cast<uint32_t>(words[1]));
      Record rec;
      rec.kind = kRecordChoice;
      rec.kernel = kernel;
      rec.key_words = {li, words[0]};
      push_text(encode_options(base->options), rec.key_words);
      rec.key_words.insert(rec.key_words.end(), words.begin() + 2, words.end());
      Writer w;
      w.u8(kChoiceRecordVersion);
      w.u32(static_cast<uint32_t>(choice->kwargs.size()));
      for (const auto& [p, v] : choice->kwargs) {
        w.u32(p);
        w.value(v);
      }
      w.bytes(encode_options(choice->options->options));
      w.u8(choice->pre_hook);
      w.bytes(choice->hook_why);
      w.bytes(choice->hook_in_cpp() ? choice->hook.encode() : std::string());
      write_config(w, choice->result.best);
      w.bytes(choice->result.key);
      rec.payload = w.take();
      out.records.push_back(std::move(rec));
    }
    std::string text;
    if (t.recorded.empty() || !declared_rule(k.module + "." + k.name, &text)) continue;
    TuningRule rule;
    std::string why, bad, keys;
    TE_ICHECK(TuningRule::parse(text, &rule, &why)) << why;  // set_tuning_rule checked it
    TE_CHECK(rule_fits(rule, k, t, &bad, &keys), ValueError)
        << k.module << "." << k.name << ": its tuning rule '" << text << "' names '" << bad
        << "', which is not a key argument of its autotuner (keys: " << keys
        << "); name one of those in set_tuning_rule (or the calls file's #rule, or --rule)";
    out.records.push_back(rule_record(kernel, li, text));
  }
}

Record rule_record(uint32_t kernel, size_t layer, const std::string& text) {
  Record rec;
  rec.kind = kRecordTuningRule;
  rec.kernel = kernel;
  rec.key_words = {layer};
  Writer w;
  w.u8(kRuleRecordVersion);
  w.bytes(text);
  rec.payload = w.take();
  return rec;
}

bool decode_rule(const ContentsView& c, uint32_t kernel, KernelState& k, size_t layer,
                 const std::string& where, TuningRule* out) {
  bool found = false;
  for (const RecordView& rec : c.records) {
    if (rec.kernel != kernel || rec.kind != kRecordTuningRule) continue;
    if (rec.key_words.size() != 1 || rec.key_words[0] >= k.layers.size() ||
        k.layers[rec.key_words[0]]->kind != Layer::Kind::kAutotune) {
      corrupt(where, "a tuning rule for an autotuner the kernel does not have");
    }
    if (rec.key_words[0] != layer) continue;
    if (found) corrupt(where, "two tuning rules for one autotuner");
    Reader r(rec.payload, k, where, "tuning rule");
    check_version(r.u8(), kRuleRecordVersion, where, "tuning rules");
    const std::string text(r.bytes());
    if (!r.done()) r.fail("bytes after the tuning rule");
    std::string why, bad, keys;
    if (!TuningRule::parse(text, out, &why)) corrupt(where, "its tuning rule: " + why);
    if (!rule_fits(*out, k, *k.layers[layer]->tune, &bad, &keys)) {
      corrupt(where, "its tuning rule '" + text + "' names '" + bad +
                         "', which is not a key argument of its autotuner (keys: " + keys + ")");
    }
    found = true;
  }
  return found;
}

void decode_heuristics(const ContentsView& c, uint32_t kernel, KernelState& k,
                       const std::string& where, std::vector<HeuristicDecision>& out) {
  for (const RecordView& rec : c.records) {
    if (rec.kernel != kernel || rec.kind != kRecordHeuristic) continue;
    const std::vector<uint64_t>& kw = rec.key_words;
    if (kw.size() < 2) corrupt(where, "a heuristic record without its key");
    const uint64_t li = kw[0] >> 32, hi = kw[0] & 0xFFFFFFFFu;
    if (li >= k.layers.size() || k.layers[li]->kind != Layer::Kind::kHeuristics ||
        hi >= k.layers[li]->heuristics.size() || kw[1] > kMaxArgs * 3 || kw.size() < 2 + kw[1]) {
      corrupt(where, "a heuristic record for a heuristic the kernel does not have");
    }
    HeuristicDecision hr;
    hr.layer = static_cast<uint32_t>(li);
    hr.heuristic = static_cast<uint32_t>(hi);
    std::vector<Dep>& deps = hr.deps;
    for (uint64_t i = 0; i < kw[1]; ++i) {
      const uint64_t d = kw[2 + i];
      Aspect aspect{};
      if ((d >> 8) >= k.params.size() || !from_disk(static_cast<uint8_t>(d & 0xFF), &aspect)) {
        corrupt(where, "a heuristic record that reads a parameter the kernel does not have");
      }
      deps.push_back(Dep{static_cast<uint32_t>(d >> 8), aspect});
    }
    const size_t nkey = kw.size() - 2 - kw[1];
    if (nkey > kMemoWords) corrupt(where, "a heuristic record with an oversized key");
    Reader r(rec.payload, k, where, "heuristic record");
    check_version(r.u8(), kHeuristicRecordVersion, where, "heuristic records");
    if (!r.value(hr.value)) r.fail("a heuristic result only Python can hold");
    if (!r.done()) r.fail("bytes after the heuristic result");
    for (size_t i = 0; i < nkey; ++i) hr.key.push(kw[2 + kw[1] + i]);
    out.push_back(std::move(hr));
  }
}

void decode_choices(const ContentsView& c, uint32_t kernel, KernelState& k, size_t layer,
                    uint32_t target, bool skip_pre_hook, const std::string& where,
                    std::vector<ChoiceDecision>& out) {
  auto ours = [&](const RecordView& rec) {
    return rec.kernel == kernel && rec.kind == kRecordChoice && rec.key_words.size() >= 3 &&
           rec.key_words[0] == layer;
  };
  std::vector<uint32_t> have;
  for (const RecordView& rec : c.records) {
    if (!ours(rec)) continue;
    const uint32_t rt = static_cast<uint32_t>(rec.key_words[1]);
    if (std::find(have.begin(), have.end(), rt) == have.end()) have.push_back(rt);
  }
  const uint32_t serving = serving_target(have, target);
  for (const RecordView& rec : c.records) {
    if (!ours(rec) || static_cast<uint32_t>(rec.key_words[1]) != serving) continue;
    const std::vector<uint64_t>& kw = rec.key_words;
    size_t at = 2;
    std::string base_text;
    if (!pop_text(kw, at, base_text)) corrupt(where, "a tuning record without its key");
    const InternedOptions* base = intern_options(decode_options(base_text, where));
    Reader r(rec.payload, k, where, "tuning record");
    check_version(r.u8(), kChoiceRecordVersion, where, "tuning records");
    auto choice = std::make_unique<Choice>();
    const uint32_t nkw = r.u32();
    if (nkw > k.params.size()) r.fail("a choice that sets more parameters than the kernel has");
    for (uint32_t i = 0; i < nkw; ++i) {
      const uint32_t p = r.u32();
      if (p >= k.params.size()) r.fail("a choice that sets a parameter the kernel does not have");
      ArgValue v;
      if (!r.value(v)) r.fail("a meta-parameter only Python can hold");
      choice->kwargs.emplace_back(p, v);
    }
    choice->options = intern_options(decode_options(r.bytes(), where));
    const uint8_t pre_hook = r.u8();
    if (pre_hook > 1) r.fail("a pre_hook flag other than 0 or 1");
    choice->pre_hook = pre_hook != 0;
    choice->hook_why = std::string(r.bytes());
    const std::string_view hook = r.bytes();
    if (choice->hook_in_cpp()) {
      std::string why;
      if (!expr::Hook::decode(hook, static_cast<uint32_t>(k.params.size()), &choice->hook, &why)) {
        r.fail(("a config pre_hook that does not decode (" + why + ")").c_str());
      }
    } else if (!hook.empty()) {
      r.fail("a pre_hook expression for a config without one the runtime applies");
    } else if (choice->pre_hook == choice->hook_why.empty()) {
      r.fail("a pre_hook flag that disagrees with the hook's description");
    }
    choice->result.best = read_config(r);
    choice->result.key = std::string(r.bytes());
    choice->result.from_cache = true;
    if (!r.done()) r.fail("bytes after the choice");
    if (choice->pre_hook && !choice->hook_in_cpp() && skip_pre_hook) continue;
    ChoiceDecision cr;
    cr.target = serving;
    cr.key.push(base->id);
    for (size_t i = at; i < kw.size(); ++i) cr.key.push(kw[i]);
    if (cr.key.overflow) corrupt(where, "a tuning record with an oversized key");
    cr.choice = std::move(choice);
    out.push_back(std::move(cr));
  }
}

}  // namespace triton_embed::detail::bundle
