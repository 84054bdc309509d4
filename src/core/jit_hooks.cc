// The runtime's side of the seam to the JIT layer (core/jit_hooks.h): the hooks table, and
// the public entry points and slow paths that call through it, with what a program linked to
// triton_embed::runtime only gets instead.

#include "core/jit_hooks.h"

#include <atomic>
#include <string>

#include "bundle/store.h"
#include "core/arg_format.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/target.h"

namespace triton_embed::detail {

namespace {

std::atomic<const JitHooks*> g_hooks{nullptr};  // constant-initialised: set before any use

// What a runtime-only program is told to do, after saying what it could not find.
constexpr const char* kLinkTheJit =
    "this program links triton_embed::runtime only, which runs no Python and compiles "
    "nothing: link triton_embed::triton_embed to compile kernels with Triton on first use, or "
    "build a kernel bundle that holds it";

[[noreturn]] void throw_needs_jit(const KernelState& k, const char* what) {
  TE_THROW(NotInBundleError) << full_name(k) << ": " << what << " is in no kernel bundle; "
                             << kLinkTheJit;
}

}  // namespace

void set_jit_hooks(const JitHooks* hooks) {
  const JitHooks* expected = nullptr;
  if (!g_hooks.compare_exchange_strong(expected, hooks, std::memory_order_acq_rel)) {
    TE_ICHECK(expected == hooks) << "a second JIT layer registered itself (two copies of "
                                 << "libtriton_embed.so loaded into one process?)";
  }
}

const JitHooks* jit_hooks() noexcept { return g_hooks.load(std::memory_order_acquire); }

ReleaseGil::ReleaseGil() : hooks_(jit_hooks()) {
  if (hooks_ != nullptr) token_ = hooks_->release_gil();
}
ReleaseGil::~ReleaseGil() {
  if (token_ != nullptr) hooks_->restore_gil(token_);
}

KernelState* load_kernel(std::string_view module, std::string_view name) {
  if (KernelState* k = find_kernel(std::string(module), std::string(name))) return k;
  bundle::record_at_exit_if_asked();
  // With the JIT layer the kernel comes from Python (its bundle entries still serve its cache
  // misses); without it, from the loaded bundles' parameter tables.
  if (const JitHooks* h = jit_hooks()) return h->load_kernel(module, name);
  if (KernelState* k = bundle::load_kernel(module, name)) return k;
  TE_THROW(NotInBundleError) << "cannot load kernel " << module << "." << name
                             << ": no kernel bundle holds it; " << kLinkTheJit;
}

ArgValue eval_heuristic(KernelState& k, Heuristic& h, const Frame& f) {
  if (const JitHooks* hooks = jit_hooks()) {
    const ArgValue v = hooks->eval_heuristic(k, h, f);
    note_heuristic(h, f, v);
    return v;
  }
  ArgValue v;
  if (bundle::bundled_heuristic(k, h, f, v)) return v;
  throw_needs_jit(k, ("the value of heuristic '" + h.name + "' for these arguments").c_str());
}

const Choice* tune(KernelState& k, TuneLayer& t, const Frame& f, const MemoKey& key,
                   uint64_t hash) {
  const JitHooks* h = jit_hooks();
  // A bundle's choice first (for the JIT layer: one tuned from the same kernel and configs).
  if (const Choice* c = bundle::bundled_choice(k, t, key, hash, h != nullptr)) return c;
  if (h != nullptr) {
    const Choice* c = h->tune(k, t, f, key, hash);
    note_choice(t, f, key, current_target_code(), c);  // the target it was tuned for
    return c;
  }
  throw_needs_jit(k, "the tuned configuration for this tuning key");
}

std::vector<const Choice*> pruned_choices(KernelState& k, TuneLayer& t, const Frame& f) {
  if (const JitHooks* h = jit_hooks()) return h->pruned_choices(k, t, f);
  throw_needs_jit(k, "the list of pruned configurations for these arguments");
}

std::vector<HookedBlock> run_config_pre_hook(KernelState& k, const TuneLayer& t, const Choice& c,
                                             const Frame& f) {
  if (const JitHooks* h = jit_hooks()) return h->run_config_pre_hook(k, t, c, f);
  TE_THROW(NotSupportedError) << full_name(k) << ": the chosen configuration has a pre_hook, "
                              << "which runs in Python; this program links "
                              << "triton_embed::runtime only: link triton_embed::triton_embed";
}

void interpret(KernelState* kernel, const GridSpec& grid, const ArgValue* args, size_t nargs) {
  if (const JitHooks* h = jit_hooks()) return h->interpret(kernel, grid, args, nargs);
  TE_THROW(NotSupportedError) << full_name(*kernel) << ": running a kernel through Triton's "
                              << "interpreter (CPU tensors, JitFunction::interpret) needs Python; "
                              << "this program links triton_embed::runtime only: link "
                              << "triton_embed::triton_embed";
}

}  // namespace triton_embed::detail

namespace triton_embed {

void initialize(const RuntimeOptions& options) {
  if (const detail::JitHooks* h = detail::jit_hooks()) {
    h->initialize(options);
  } else {
    TE_CHECK(options.python.empty() && options.python_paths.empty(), NotSupportedError)
        << "initialize: RuntimeOptions::" << (options.python.empty() ? "python_paths" : "python")
        << " is set, but this program links triton_embed::runtime only, which starts no Python: "
        << "link triton_embed::triton_embed to run kernels from Python modules, or leave "
        << "RuntimeOptions::python and python_paths empty";
  }
  if (options.target.has_value()) set_target(options.target);
}

void add_python_path(std::string_view dir) {
  if (const detail::JitHooks* h = detail::jit_hooks()) return h->add_python_path(dir);
  TE_THROW(NotSupportedError) << "add_python_path(\"" << dir << "\"): this program links "
                              << "triton_embed::runtime only, which starts no Python: link "
                              << "triton_embed::triton_embed to load kernels from Python modules";
}

RuntimeInfo runtime_info() {
  if (const detail::JitHooks* h = detail::jit_hooks()) return h->runtime_info();
  return RuntimeInfo{};  // jit == false: no interpreter, no Triton
}

}  // namespace triton_embed
