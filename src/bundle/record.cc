// Recording the process's compiled kernels and decisions into a bundle (record.h), at exit
// (TRITON_EMBED_RECORD) or when asked (write_bundle()).

#include "bundle/record.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bundle/decisions.h"
#include "bundle/file_writer.h"
#include "bundle/kernel_table.h"
#include "bundle/store.h"
#include "bundle/tuning_rule.h"
#include "bundle/widen.h"
#include "core/arg_format.h"
#include "core/compiled_kernel.h"
#include "core/reclaim.h"
#include "core/registry.h"
#include "core/settings.h"
#include "triton_embed/bundle.h"

namespace triton_embed::detail::bundle {

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
    bundle::BundleEntry out;
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
  const ReadSection reading;  // as write_bundle()
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

void write_bundle(const std::string& path) {
  namespace b = detail::bundle;
  // What it reads of the kernels (choices, entries) stays while it runs, even when another
  // thread unloads bundles meanwhile.
  const detail::ReadSection reading;
  b::write_file(detail::record_widening() ? b::widen_recording(b::record()) : b::record(), path);
}

}  // namespace triton_embed
