// The JIT layer as the runtime's second kernel source (core/kernel_source.h), registered when
// libtriton_embed.so is loaded: by the dynamic loader in a program linked to
// triton_embed::triton_embed (its link interface keeps the library needed even when the
// program calls only runtime symbols), or by the Python process that loads an extension
// linked to it. Each member runs Python (src/python/*.cc) and answers with plain data; the
// runtime publishes it.

#include "core/kernel_source.h"
#include "python/compile.h"
#include "python/introspect.h"
#include "python/layers.h"
#include "python/triton_interpreter.h"
#include "python/worker_processes.h"

namespace triton_embed::detail {

namespace {

class PythonSource final : public KernelSource {
 public:
  KernelState* load_kernel(std::string_view module, std::string_view name) override {
    return python_load_kernel(module, name);
  }
  std::unique_ptr<Entry> build_entry(KernelState& k, const InternedOptions& options, const Key& key,
                                     uint64_t hash, const ArgValue* args,
                                     const LeafList& leaves) override {
    return python_build_entry(k, options, key, hash, args, leaves);
  }
  bool warm_entry(KernelState& k, const InternedOptions& options, const Key& key,
                  const ArgValue* args, const LeafList& leaves,
                  std::shared_ptr<PendingCompile>* elsewhere) override {
    python_warm_entry(k, options, key, args, leaves, elsewhere);
    return true;
  }
  bool compiles_elsewhere(const KernelState&) override { return py::worker_processes_enabled(); }
  bool eval_heuristic(KernelState& k, const Heuristic& h, const Frame& f,
                      HeuristicValue& out) override {
    out = python_eval_heuristic(k, h, f);
    return true;
  }
  std::unique_ptr<Choice> tune(KernelState& k, const TuneLayer& t, const Frame& f,
                               const MemoKey&) override {
    return python_tune(k, t, f);
  }
  bool pruned_configs(KernelState& k, const TuneLayer& t, const Frame& f,
                      const InternedOptions& base, std::vector<uint64_t>& ids) override {
    ids = python_pruned_configs(k, t, f, base);
    return true;
  }
  std::unique_ptr<Choice> config_choice(KernelState& k, const TuneLayer&, uint64_t id,
                                        const InternedOptions& base) override {
    return python_config_choice(k, id, base);
  }
  bool run_config_pre_hook(KernelState& k, const TuneLayer& t, const Choice& c, const Frame& f,
                           std::vector<HookedBlock>& out) override {
    out = python_run_config_pre_hook(k, t, c, f);
    return true;
  }
  bool interpret(KernelState* k, const GridSpec& grid, const ArgValue* args,
                 size_t nargs) override {
    python_interpret(k, grid, args, nargs);
    return true;
  }
};

PythonSource g_python_source;

// Runs once, when the library is loaded (after the runtime it depends on).
[[maybe_unused]] const bool kRegistered =
    (register_source(SourceSlot::kJit, &g_python_source), true);

}  // namespace

}  // namespace triton_embed::detail
