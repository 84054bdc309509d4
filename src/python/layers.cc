// The slow paths of wrapped kernels: reading the wrappers, running a heuristic in Python and
// memoising what it read, tuning a new key with the kernel's own Triton Autotuner, pruning
// for warmup, config pre-hooks. Everything here holds the GIL while it touches Python and
// never waits on one of our mutexes holding it.

#include "python/layers.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/bind.h"
#include "core/call_hooks.h"
#include "core/kernel_source.h"
#include "core/kernel_state.h"
#include "core/layers.h"
#include "core/walk.h"
#include "core/workers.h"
#include "cuda/driver.h"
#include "cuda/scratch.h"
#include "python/convert.h"
#include "python/cpython.h"
#include "python/expr_tree.h"
#include "python/worker_processes.h"

namespace triton_embed {

namespace detail {
namespace {

namespace pyb = pybind11;

std::atomic<long> g_python_calls{0};

std::mutex& callback_mu() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::function<void(const TuningProgress&)>& callback() {
  static auto* f = new std::function<void(const TuningProgress&)>();
  return *f;
}

// prepare_tuning's background import: a tuning waits for it to end rather than import the same
// beside it (both would start Triton's driver).
struct Preparing {
  std::mutex start_mu;  // held while one thread starts it
  std::mutex mu;        // guards the flags
  std::condition_variable cv;
  bool started = false, done = false;
};
std::atomic<Preparing*> g_preparing{nullptr};
Preparing& preparing() {
  static const bool registered = [] {
    g_preparing.store(new Preparing(), std::memory_order_release);  // never destroyed
    // A forked child has no such thread (and maybe a locked mutex): it starts from a new one,
    // none started.
    pthread_atfork(nullptr, nullptr,
                   [] { g_preparing.store(new Preparing(), std::memory_order_release); });
    return true;
  }();
  (void)registered;
  return *g_preparing.load(std::memory_order_acquire);
}
void wait_prepared() {
  Preparing& p = preparing();
  py::ReleaseGilIfHeld no_gil;
  std::unique_lock<std::mutex> lock(p.mu);
  p.cv.wait(lock, [&] { return !p.started || p.done; });
}

// prepare_tuning's thread started (the caller holds p.start_mu); none when no thread can be
// made (the first tuning then imports what it needs itself).
void start_preparing(Preparing& p) {
  std::thread thread;
  try {
    thread = std::thread([&p] {
      {
        py::InFlight in_flight;  // an exit meanwhile waits for it
        if (!py::closed()) {
          py::Gil gil;
          try {
            py::glue().attr("prepare_benchmarks")();
          } catch (pyb::error_already_set&) {
            // Left to the tuning, which imports the same and raises what fails as its own error.
          }
        }
      }
      std::lock_guard<std::mutex> lock(p.mu);
      p.done = true;
      p.cv.notify_all();
    });
  } catch (const std::system_error&) {
    return;  // no thread: the first tuning imports what it needs itself
  }
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.started = true;  // only once there is a thread to wait for
  }
  thread.detach();
}

// Tuning runs one at a time per device, so configurations are timed on an idle GPU.
std::mutex& device_tuning_mutex(int device) {
  static std::mutex* mus = new std::mutex[64];
  return mus[static_cast<unsigned>(device) % 64];
}

// And one at a time per autotuner: Triton's Autotuner keeps the running call's arguments
// (nargs) and timings on itself, so two devices tuning one autotuner at once would mix them.
// A device's lock is always taken first.
std::mutex& tuner_mutex(const TuneLayer& t) {
  static std::mutex* mus = new std::mutex[64];
  return mus[(reinterpret_cast<uintptr_t>(&t) / alignof(TuneLayer)) % 64];
}

int find_param_by_name(const KernelState& k, const std::string& name) {
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// One argument of the frame as Python sees it: the object a layer (the torch layer) hands
// over, else raw pointers as DevicePointers and plain values converted.
pyb::object arg_object(const KernelState& k, const Frame& f, uint32_t p) {
  const ArgValue& v = f.vals[p];
  const int ci = f.call_index[p];
  const CallHooks* hooks = f.call != nullptr ? f.call->hooks : nullptr;
  if (ci >= 0 && hooks != nullptr && hooks->py_arg != nullptr) {
    if (void* o = hooks->py_arg(hooks->ctx, static_cast<uint32_t>(ci))) {
      return pyb::reinterpret_steal<pyb::object>(static_cast<PyObject*>(o));
    }
    if (PyErr_Occurred()) throw pyb::error_already_set();
  }
  if (v.kind == ArgKind::kPointer) {
    pyb::handle glue = py::glue();
    return glue.attr("DevicePointer")(pyb::int_(v.u),
                                      glue.attr("torch_dtype")(std::string(dtype_name(v.dtype))),
                                      k.params[p].name);
  }
  return py::to_python(v);
}

// Python's (args, kwargs) for the frame: positional values, then named ones in order.
std::pair<pyb::tuple, pyb::dict> frame_args(const KernelState& k, const Frame& f) {
  pyb::tuple args(f.npos);
  for (uint32_t p = 0; p < f.npos; ++p) args[p] = arg_object(k, f, p);
  pyb::dict kwargs;
  for (uint32_t i = 0; i < f.nkw; ++i) {
    kwargs[pyb::str(k.params[f.kw[i]].name)] = arg_object(k, f, f.kw[i]);
  }
  return {args, kwargs};
}

// A C++ error that one of our callbacks threw while Triton's Python code ran it (the grid of a
// benchmark launch, the scratch allocator, the progress report), and the Python exception it
// left as there. When that very exception comes back out of Python, throw_python rethrows the
// error itself: the caller gets its type and message, not a PythonError around a RuntimeError.
// Python runs our callbacks on the thread that called it: one per thread.
struct CallbackError {
  std::exception_ptr error;
  pyb::object raised;
};
thread_local CallbackError t_callback_error;

// f() for a callback Python calls (GIL held): a C++ exception it throws leaves as a Python
// RuntimeError with its message, which t_callback_error remembers with the exception.
template <class F>
auto python_callback(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (pyb::error_already_set&) {
    throw;  // Python's own exception, raised by Python code f called
  } catch (...) {
    const std::exception_ptr ep = std::current_exception();
    std::string what = "an unknown C++ exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    pyb::object raised = pyb::reinterpret_steal<pyb::object>(
        PyObject_CallFunction(PyExc_RuntimeError, "s", what.c_str()));
    if (!raised) throw pyb::error_already_set();
    t_callback_error.error = ep;
    t_callback_error.raised = raised;
    PyErr_SetObject(PyExc_RuntimeError, raised.ptr());
    throw pyb::error_already_set();
  }
}

// Forgets the callback error of this thread (GIL held).
void forget_callback_error() {
  t_callback_error.error = nullptr;
  t_callback_error.raised = pyb::object();
}

[[noreturn]] void throw_python(const KernelState& k, const char* what, pyb::error_already_set& e) {
  if (t_callback_error.error != nullptr && e.value().is(t_callback_error.raised)) {
    const std::exception_ptr error = t_callback_error.error;
    forget_callback_error();
    std::rethrow_exception(error);  // our callback's own error, typed
  }
  const std::string type = py::exception_type(e);
  if (type == "RawPointerAttribute") {
    TE_THROW(NotSupportedError) << full_name(k) << ": " << what << ": "
                                << pyb::str(e.value()).cast<std::string>();
  }
  TE_THROW_CAUSED(PythonError) << full_name(k) << ": " << what << " raised\n"
                               << py::format_exception(e);
}

TunedConfig tuned_config(pyb::handle info) {
  pyb::tuple t = pyb::reinterpret_borrow<pyb::tuple>(info);
  TunedConfig c;
  c.str = t[0].cast<std::string>();
  for (pyb::handle kv : pyb::reinterpret_borrow<pyb::list>(t[1])) {
    pyb::tuple e = pyb::reinterpret_borrow<pyb::tuple>(kv);
    c.kwargs.emplace_back(e[0].cast<std::string>(), e[2].cast<std::string>());
  }
  c.num_warps = t[2].cast<int>();
  c.num_stages = t[3].cast<int>();
  c.num_ctas = t[4].cast<int>();
  c.maxnreg = t[5].cast<int>();
  c.has_pre_hook = t[7].cast<bool>();
  return c;
}

// A Choice for `config` (GIL held): its meta-parameters, and the handle's options plus its own.
std::unique_ptr<Choice> make_choice(KernelState& k, pyb::handle config,
                                    const InternedOptions* base) {
  pyb::tuple info = py::glue().attr("config_info")(config);
  auto c = std::make_unique<Choice>();
  for (pyb::handle kv : pyb::reinterpret_borrow<pyb::list>(info[1])) {
    pyb::tuple e = pyb::reinterpret_borrow<pyb::tuple>(kv);
    const std::string name = e[0].cast<std::string>();
    const int p = find_param_by_name(k, name);
    TE_CHECK(p >= 0, TypeError) << full_name(k) << ": the autotune config {"
                                << info[0].cast<std::string>() << "} sets '" << name
                                << "', which is not a parameter of " << call_signature(k);
    ArgValue v;
    if (!py::from_python(k, e[1], v)) v = py::keep_object(k, e[1]);
    c->kwargs.emplace_back(static_cast<uint32_t>(p), v);
  }
  Options opts = base != nullptr ? base->options : Options();
  auto add = [&](const char* name, int value, bool present) {
    if (!present) return;
    for (const auto& [n, v] : opts.entries()) {
      TE_CHECK(n != name, TypeError)
          << full_name(k) << ": got multiple values for keyword argument '" << name
          << "': the handle's options set it and the autotune config sets it; drop it from "
             "with_options()";
    }
    opts.set(name, value);
  };
  add("num_warps", info[2].cast<int>(), true);
  add("num_ctas", info[4].cast<int>(), true);
  add("num_stages", info[3].cast<int>(), true);
  add("maxnreg", info[5].cast<int>(), info[5].cast<int>() != 0);
  if (!info[6].is_none()) opts.set("ir_override", OptionValue(info[6].cast<std::string>()));
  c->options = intern_options(opts);
  py::keep(k, config.ptr(), true);
  c->python_config = true;  // kept through unloads: its address keys the config
  py::set_config(*c, config.ptr());
  c->pre_hook = info[7].cast<bool>();
  if (c->pre_hook) {
    // As the runtime applies it (on the launch path, and in bundles); Python runs it when it
    // is outside those forms.
    c->hook = py::hook_program(config.attr("pre_hook"), param_names(k), &c->hook_why);
  }
  c->result.best = tuned_config(info);
  return c;
}

// The grid `spec` gives for the launch whose bound arguments are `meta` (a benchmark launch
// of Triton's Autotuner).
pyb::tuple grid_of(const GridSpec& spec, KernelState& kk, const pyb::dict& meta) {
  ArgValue vals[kMaxArgs];
  for (size_t p = 0; p < kk.params.size(); ++p) {
    ArgValue v{};
    v.kind = ArgKind::kNone;
    pyb::str name(kk.params[p].name);
    if (meta.contains(name)) {
      pyb::object o = meta[name];
      if (!py::from_python(kk, o, v)) {
        if (pyb::hasattr(o, "data_ptr")) {
          v.kind = ArgKind::kPointer;
          v.u = o.attr("data_ptr")().cast<uint64_t>();
        } else {
          v = ArgValue{};
          v.kind = ArgKind::kNone;
        }
      }
    }
    vals[p] = v;
  }
  const Grid g = spec.fn(spec.ctx, MetaAccess::make(&kk, vals, kk.params.size()));
  return pyb::make_tuple(g.x, g.y, g.z);
}

// Python grid for the benchmark launches: the C++ grid (fixed or callable) on Triton's
// bound arguments.
pyb::object python_grid(KernelState& k, const Frame& f) {
  if (f.grid == nullptr) {
    return pyb::cpp_function([name = full_name(k)](pyb::handle) -> pyb::tuple {
      return python_callback([&]() -> pyb::tuple {
        throw NotSupportedError(name +
                                ": tuning launches the kernel, which needs a grid: call "
                                "prepare(grid, args...) or launch on the GPU to tune");
      });
    });
  }
  if (f.grid->fn == nullptr) {
    return pyb::make_tuple(f.grid->fixed.x, f.grid->fixed.y, f.grid->fixed.z);
  }
  const GridSpec spec = *f.grid;
  KernelState* kp = &k;
  return pyb::cpp_function([spec, kp](pyb::dict meta) -> pyb::tuple {
    return python_callback([&] { return grid_of(spec, *kp, meta); });
  });
}

void report_progress(const std::string& kernel, const std::string& key, size_t done, size_t total,
                     const std::string& best, double best_ms, double elapsed, double compile_s,
                     double benchmark_s, size_t workers, bool processes) {
  TuningProgress p;
  p.kernel = kernel;
  p.key = key;
  p.done = done;
  p.total = total;
  p.best = best;
  p.best_ms = best_ms;
  p.elapsed_s = elapsed;
  p.compile_s = compile_s;
  p.benchmark_s = benchmark_s;
  p.workers = workers;
  p.processes = processes;
  const char* env = std::getenv("TRITON_EMBED_PRINT_AUTOTUNING");
  if (env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0) {
    std::fprintf(stderr,
                 "[triton_embed] tuning %s key %s: %zu/%zu configs, best %.4f ms {%s}; compiled "
                 "in %.2f s on %zu %s, benchmarked in %.2f s\n",
                 kernel.c_str(), key.c_str(), done, total, best_ms, best.c_str(), compile_s,
                 workers,
                 processes ? (workers == 1 ? "worker process" : "worker processes")
                           : (workers == 1 ? "thread" : "threads"),
                 benchmark_s);
  }
  std::function<void(const TuningProgress&)> cb;
  {
    std::lock_guard<std::mutex> lock(callback_mu());
    cb = callback();
  }
  if (cb) cb(p);
}

// The ids of Python configs (pruned_configs'): a config's id is its address, kept alive from
// here on, so that it never names another.
std::vector<uint64_t> config_ids(KernelState& k, pyb::handle configs) {
  std::vector<uint64_t> ids;
  for (pyb::handle c : configs) {
    py::keep(k, c.ptr(), true);
    ids.push_back(reinterpret_cast<uintptr_t>(c.ptr()));
  }
  return ids;
}

// The configs of one tuning compiled for its benchmarks: handed to compile worker processes
// (a config's compiles are waited for before its benchmark, while the later ones go on
// compiling), or compiled on this process's compile workers first.
struct ConfigCompiles {
  KernelState* k = nullptr;  // the tuning's (alive while it runs, as is this)
  const TuneLayer* t = nullptr;
  const Frame* f = nullptr;
  std::vector<uint64_t> ids;
  std::vector<PendingCompiles> pending;  // per config, those handed to worker processes
  std::chrono::steady_clock::time_point start;
  double here_seconds = 0;  // compiling here: from the start to the end of the last one
  size_t workers = 1;
  bool processes = false;

  double since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // Returns once config i's compiles finished (the GIL released while waiting). One that did
  // not compile there (a worker that ended, a kernel it could not import, Triton's error) is
  // compiled here first, as on threads; its error, if any, is met by its benchmark.
  void wait(size_t i) {
    if (i >= pending.size()) return;
    bool here = false;
    for (const auto& p : pending[i]) here = !p->wait() || here;
    if (!here) return;
    precompile_configs(*k, *t, *f, {ids[i]});
    here_seconds = std::max(here_seconds, since_start());
  }
  // How long the compiles took so far: from the start to the last that finished.
  double seconds() const {
    double s = here_seconds;
    for (const auto& each : pending) {
      for (const auto& p : each) {
        if (p->finished()) {
          s = std::max(s, std::chrono::duration<double>(p->finished_at() - start).count());
        }
      }
    }
    return s;
  }
};

std::shared_ptr<ConfigCompiles> start_config_compiles(KernelState& k, const TuneLayer& t,
                                                      const Frame& f, std::vector<uint64_t> ids) {
  auto c = std::make_shared<ConfigCompiles>();
  c->k = &k;
  c->t = &t;
  c->f = &f;
  c->ids = std::move(ids);
  c->start = std::chrono::steady_clock::now();
  c->workers = std::min(compile_workers(), c->ids.size());
  c->processes = py::worker_processes_enabled();
  precompile_configs(k, t, f, c->ids, c->processes ? &c->pending : nullptr);
  // What was compiled here (all on threads; on processes, what no worker could take).
  c->here_seconds = c->since_start();
  return c;
}

// glue.tune's view of them: (wait(i), seconds()).
pyb::tuple config_compiles_for_python(const std::shared_ptr<ConfigCompiles>& c) {
  pyb::cpp_function wait([c](size_t i) { python_callback([&] { c->wait(i); }); });
  pyb::cpp_function seconds([c]() { return c->seconds(); });
  return pyb::make_tuple(wait, seconds);
}

}  // namespace

// ---- loading ------------------------------------------------------------------------------

void load_layers(KernelState& k, void* wrappers_list, py::KernelObjects& objects) {
  pyb::list wrappers = pyb::reinterpret_borrow<pyb::list>(static_cast<PyObject*>(wrappers_list));
  const std::vector<std::string> names = param_names(k);
  for (pyb::handle item : wrappers) {
    pyb::tuple w = pyb::reinterpret_borrow<pyb::tuple>(item);
    auto layer = std::make_unique<Layer>();
    objects.layers.push_back(pyb::handle(w[1]).inc_ref().ptr());
    std::vector<PyObject*>& functions = objects.heuristics.emplace_back();
    if (w[0].cast<std::string>() == "heuristics") {
      layer->kind = Layer::Kind::kHeuristics;
      for (pyb::handle kv : pyb::reinterpret_borrow<pyb::list>(w[2])) {
        pyb::tuple e = pyb::reinterpret_borrow<pyb::tuple>(kv);
        auto h = std::make_unique<Heuristic>();
        h->name = e[0].cast<std::string>();
        const int p = find_param_by_name(k, h->name);
        if (p >= 0) {
          h->param = static_cast<uint32_t>(p);
        } else {
          // Not a parameter: Python passes it to the JITFunction as a keyword, which reads it
          // as an option (num_warps, ...); an unknown name fails at the first compile.
          h->option = true;
          h->option_bit = h->name == "num_warps"    ? kOptNumWarps
                          : h->name == "num_stages" ? kOptNumStages
                          : h->name == "num_ctas"   ? kOptNumCtas
                          : h->name == "maxnreg"    ? kOptMaxnreg
                                                    : kOptOther;
        }
        // Its expression, for bundles: a program without Python evaluates it for arguments no
        // record holds (Python keeps computing it here).
        h->expr = py::heuristic_program(e[1], names, &h->expr_why);
        functions.push_back(pyb::handle(e[1]).inc_ref().ptr());
        layer->heuristics.push_back(std::move(h));
      }
    } else {
      layer->kind = Layer::Kind::kAutotune;
      auto t = std::make_unique<TuneLayer>();
      for (pyb::handle name : pyb::reinterpret_borrow<pyb::list>(w[2])) {
        t->key_params.push_back(find_param_by_name(k, pyb::str(name).cast<std::string>()));
      }
      t->num_configs = w[3].cast<size_t>();
      std::vector<bool> sets(k.params.size(), false);
      for (pyb::handle config : pyb::list(w[1].attr("configs"))) {
        t->configs += py::glue().attr("config_info")(config)[pyb::int_(0)].cast<std::string>();
        t->configs += '\n';
        // Its meta-parameters that are parameters (others reach the kernel as options).
        const pyb::dict kwargs = config.attr("kwargs");
        for (auto kv : kwargs) {
          const int p = find_param_by_name(k, pyb::str(kv.first).cast<std::string>());
          if (p >= 0) sets[static_cast<size_t>(p)] = true;
        }
      }
      for (uint32_t p = 0; p < sets.size(); ++p) {
        if (sets[p]) t->config_params.push_back(p);
      }
      layer->tune = std::move(t);
    }
    k.layers.push_back(std::move(layer));
  }
  if (!k.layers.empty()) k.call_memo = std::make_unique<CallMemo>();
  index_layer_params(k);
}

// ---- heuristics ----------------------------------------------------------------------------

HeuristicValue python_eval_heuristic(KernelState& k, const Heuristic& h, const Frame& f) {
  g_python_calls.fetch_add(1, std::memory_order_relaxed);
  py::ensure_runtime();
  py::InFlight in_flight;
  TE_CHECK(!py::closed(), PythonError) << full_name(k) << ": cannot run heuristic '" << h.name
                                       << "': the Python interpreter has shut down";
  HeuristicValue out;
  ArgValue& result = out.value;
  std::vector<Dep>& deps = out.deps;
  bool& memo = out.memo;
  memo = !h.never_memo;
  {
    py::Gil gil;
    try {
      pyb::dict values;
      pyb::set pointers;
      auto add = [&](uint32_t p) {
        pyb::str name(k.params[p].name);
        values[name] = arg_object(k, f, p);
        if (f.vals[p].kind == ArgKind::kPointer || f.vals[p].kind == ArgKind::kPyObject)
          pointers.add(name);
      };
      for (uint32_t p = 0; p < f.npos; ++p) add(p);
      for (uint32_t i = 0; i < f.nkw; ++i) add(f.kw[i]);
      pyb::tuple r = py::glue().attr("eval_heuristic")(pyb::handle(py::heuristic_function(k, h)),
                                                       values, pointers);
      if (h.option && !r[0].is_none() && !pyb::isinstance<pyb::bool_>(r[0]) &&
          !pyb::isinstance<pyb::int_>(r[0]) && !pyb::isinstance<pyb::float_>(r[0]) &&
          !pyb::isinstance<pyb::str>(r[0])) {
        TE_THROW(TypeError)
            << full_name(k) << ": heuristic '" << h.name << "' returned "
            << pyb::str(pyb::repr(r[0])).cast<std::string>() << " ("
            << pyb::str(
                   pyb::handle(reinterpret_cast<PyObject*>(Py_TYPE(r[0].ptr()))).attr("__name__"))
                   .cast<std::string>()
            << "), but '" << h.name
            << "' is a Triton option: return a bool, int, float, str or None";
      }
      if (!py::from_python(k, r[0], result)) {
        result = py::keep_object(k, r[0]);
        memo = false;
      }
      if (r[2].cast<bool>()) memo = false;
      for (pyb::handle read : pyb::reinterpret_borrow<pyb::list>(r[1])) {
        pyb::tuple rd = pyb::reinterpret_borrow<pyb::tuple>(read);
        const int p = find_param_by_name(k, pyb::str(rd[0]).cast<std::string>());
        const int aspect = rd[1].cast<int>();
        if (p < 0) continue;  // not a parameter: never in the dict, the read is constant
        if (aspect == 3 || f.vals[p].kind == ArgKind::kPyObject) {
          memo = false;  // the whole tensor: nothing a key can hold
          continue;
        }
        const Dep d{static_cast<uint32_t>(p), static_cast<Aspect>(aspect)};
        if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
      }
    } catch (pyb::error_already_set& e) {
      const std::string what = "heuristic '" + h.name + "'";
      throw_python(k, what.c_str(), e);
    }
  }
  return out;
}

// ---- autotune ------------------------------------------------------------------------------

// The Autotuner benchmarks through Triton's own launcher, which takes a kernel's global
// scratch (tensor descriptors made on the device) from triton.set_allocator's allocator. A C++
// program set none, so tuning lends Triton ours (glue.triton_allocator): the scratch allocator
// in effect (allocator.h), on the stream Triton launches on (and so its device), each buffer
// given back on that stream once the launcher has queued the launch, as our launches do.
// What the allocator throws reaches python_tune's caller with its own type (python_callback).

pyb::object triton_scratch_allocator(const KernelState& k) {
  ScratchAllocator* a = cuda::scratch_allocator(false);  // kept alive for the whole process
  const std::string kernel = full_name(k);
  pyb::cpp_function allocate([a, kernel](uint64_t size, uint64_t alignment, uintptr_t stream) {
    return python_callback([&] {
      pyb::gil_scoped_release no_gil;  // the allocator may wait on its own locks
      const uint64_t p = a->allocate(size, alignment, reinterpret_cast<Stream>(stream));
      TE_CHECK(p != 0, OutOfResourcesError)
          << "tuning " << kernel << ": the global scratch allocator returned a null address for "
          << size << " bytes; an allocator that cannot allocate must throw";
      return p;
    });
  });
  pyb::cpp_function release([a](uint64_t ptr, uint64_t size, uintptr_t stream) {
    pyb::gil_scoped_release no_gil;
    a->release(ptr, size, reinterpret_cast<Stream>(stream));
  });
  return py::glue().attr("ScratchAllocator")(allocate, release);
}

std::unique_ptr<Choice> python_tune(KernelState& k, const TuneLayer& t, const Frame& f) {
  std::unique_ptr<Choice> made;
  {
    int device = 0;
    if (cuda::api().ok && (f.device_launch() || f.mode == FrameMode::kPrepare)) {
      const cuda::ContextInfo& ctx = cuda::current_context();
      device = static_cast<int>(ctx.device);
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      if (t.num_configs > 1 &&
          cuda::api().cuStreamIsCapturing(reinterpret_cast<CUstream>(f.stream), &status) ==
              CUDA_SUCCESS &&
          status != CU_STREAM_CAPTURE_STATUS_NONE) {
        TE_THROW(NotSupportedError)
            << full_name(k) << ": this call's tuning key has not been tuned, and tuning cannot run "
            << "while the stream is being captured into a CUDA graph; call prepare(grid, args...) "
            << "with the same arguments before the capture";
      }
    }
    std::unique_lock<std::mutex> device_lock(device_tuning_mutex(device), std::defer_lock);
    std::unique_lock<std::mutex> tuner_lock(tuner_mutex(t), std::defer_lock);
    if (t.num_configs > 1) {
      device_lock.lock();
      tuner_lock.lock();
    }
    py::ensure_runtime();
    py::InFlight in_flight;
    TE_CHECK(!py::closed(), PythonError)
        << full_name(k) << ": cannot tune: the Python interpreter has shut down";
    py::Gil gil;
    // Whatever a callback left (a benchmark that caught its error, a tune that failed for
    // another reason) is dropped before the GIL is: no Python object outlives the tune.
    struct ForgetCallbackError {
      ~ForgetCallbackError() { forget_callback_error(); }
    } forget;
    g_python_calls.fetch_add(1, std::memory_order_relaxed);
    try {
      pyb::handle tuner(py::tuner(k, t));
      if (t.num_configs > 1 && tuner.attr("_do_bench").is_none()) {
        TE_CHECK(cuda::api().ok, NoDeviceError)
            << full_name(k) << ": this call's tuning key has not been tuned, and tuning needs a "
            << "GPU (" << cuda::api().error
            << "); warmup(args...) compiles every config "
               "without one";
        TE_CHECK(f.grid != nullptr, NotSupportedError)
            << full_name(k) << ": this call's tuning key has not been tuned, and compile() has no "
            << "grid to benchmark with: call prepare(grid, args...) (or launch) to tune it";
      }
      if (t.num_configs == 1) {
        made = make_choice(k, pyb::list(tuner.attr("configs"))[0], f.options);
      } else {
        // Where compile worker processes compile, and the configs to benchmark are known
        // before the key is (the tuner prunes nothing), they start compiling now: while this
        // thread imports what Triton's benchmark needs (the arguments below import torch).
        std::shared_ptr<ConfigCompiles> early;
        if (py::worker_processes_enabled() &&
            py::glue().attr("prunes_nothing")(tuner).cast<bool>()) {
          early = start_config_compiles(k, t, f, config_ids(k, tuner.attr("configs")));
        }
        wait_prepared();
        auto [args, kwargs] = frame_args(k, f);
        for (const auto& [name, value] : f.options->options.entries()) {
          kwargs[pyb::str(name)] = py::option_to_python(value);
        }
        kwargs["grid"] = python_grid(k, f);
        kwargs["warmup"] = pyb::bool_(false);
        const std::string kernel = full_name(k);
        // The tuning's compiles, for the progress (set by the precompile below).
        auto compiles = std::make_shared<std::shared_ptr<ConfigCompiles>>();
        pyb::object progress = pyb::cpp_function(
            [kernel, compiles](const std::string& key_str, size_t done, size_t total,
                               const std::string& best, double best_ms, double elapsed,
                               double compile_s, double benchmark_s) {
              python_callback([&] {
                pyb::gil_scoped_release release;
                const ConfigCompiles* c = compiles->get();
                report_progress(kernel, key_str, done, total, best, best_ms, elapsed, compile_s,
                                benchmark_s, c != nullptr ? c->workers : 1,
                                c != nullptr && c->processes);
              });
            });
        // The pruned configs compiled before Triton's loop benchmarks each (the early ones
        // when they are those).
        pyb::object precompile =
            pyb::cpp_function([&k, &t, &f, early, compiles](pyb::list configs) {
              return python_callback([&]() -> pyb::tuple {
                std::vector<uint64_t> ids = config_ids(k, configs);
                *compiles = early != nullptr && early->ids == ids
                                ? early
                                : start_config_compiles(k, t, f, std::move(ids));
                return config_compiles_for_python(*compiles);
              });
            });
        pyb::tuple r = py::glue().attr("tune")(tuner, args, kwargs, progress,
                                               triton_scratch_allocator(k), precompile);
        made = make_choice(k, r[0], f.options);
        made->result.key = r[1].cast<std::string>();
        for (pyb::handle item : pyb::reinterpret_borrow<pyb::list>(r[2])) {
          pyb::tuple e = pyb::reinterpret_borrow<pyb::tuple>(item);
          ConfigTiming ct;
          ct.config = tuned_config(e[0]);
          for (pyb::handle ms : pyb::reinterpret_borrow<pyb::list>(e[1]))
            ct.ms.push_back(ms.cast<double>());
          made->result.timings.push_back(std::move(ct));
        }
        made->result.from_cache = r[3].cast<bool>();
        made->result.seconds = r[4].cast<double>();
        made->result.compile_seconds = r[5].cast<double>();
        made->result.benchmark_seconds = r[6].cast<double>();
      }
    } catch (pyb::error_already_set& e) {
      throw_python(k, "tuning with Triton's Autotuner", e);
    }
  }
  return made;
}

std::vector<uint64_t> python_pruned_configs(KernelState& k, const TuneLayer& t, const Frame& f,
                                            const InternedOptions& base) {
  g_python_calls.fetch_add(1, std::memory_order_relaxed);
  py::ensure_runtime();
  py::InFlight in_flight;
  TE_CHECK(!py::closed(), PythonError) << full_name(k) << ": the Python interpreter has shut down";
  std::vector<uint64_t> ids;
  // Pruning sets the tuner's nargs, as a tuning does: one at a time per autotuner (compile
  // workers prune for several calls at once).
  std::unique_lock<std::mutex> tuner_lock(tuner_mutex(t), std::defer_lock);
  {
    py::ReleaseGilIfHeld no_gil;
    tuner_lock.lock();
  }
  py::Gil gil;
  try {
    auto [args, kwargs] = frame_args(k, f);
    for (const auto& [name, value] : base.options.entries()) {
      kwargs[pyb::str(name)] = py::option_to_python(value);
    }
    ids = config_ids(k, py::glue().attr("prune")(pyb::handle(py::tuner(k, t)), args, kwargs));
  } catch (pyb::error_already_set& e) {
    throw_python(k, "pruning the autotune configs", e);
  }
  return ids;
}

std::unique_ptr<Choice> python_config_choice(KernelState& k, uint64_t config,
                                             const InternedOptions& base) {
  py::ensure_runtime();
  py::InFlight in_flight;
  TE_CHECK(!py::closed(), PythonError) << full_name(k) << ": the Python interpreter has shut down";
  py::Gil gil;
  try {
    return make_choice(k, pyb::handle(reinterpret_cast<PyObject*>(static_cast<uintptr_t>(config))),
                       &base);
  } catch (pyb::error_already_set& e) {
    throw_python(k, "pruning the autotune configs", e);
  }
}

std::vector<HookedBlock> python_run_config_pre_hook(KernelState& k, const TuneLayer& t,
                                                    const Choice& c, const Frame& f) {
  g_python_calls.fetch_add(1, std::memory_order_relaxed);
  py::ensure_runtime();
  py::InFlight in_flight;
  TE_CHECK(!py::closed(), PythonError) << full_name(k) << ": the Python interpreter has shut down";
  py::Gil gil;
  std::vector<HookedBlock> hooked;
  try {
    auto [args, kwargs] = frame_args(k, f);
    pyb::handle tuner(py::tuner(k, t));
    pyb::dict nargs = py::glue().attr("run_config_pre_hook")(pyb::handle(py::config(c)), args,
                                                             tuner.attr("arg_names"), kwargs);
    // The hook sees descriptors as Python objects made for it: what it did to their block
    // shapes comes back to the launch here.
    for (uint32_t p = 0; p < f.np; ++p) {
      if (f.given[p] == kAbsent || f.vals[p].kind != ArgKind::kTensorDesc) continue;
      const auto& d = *static_cast<const TensorDescriptor*>(f.vals[p].ptr);
      pyb::object obj = nargs[pyb::str(k.params[p].name)];
      HookedBlock h;
      h.param = p;
      for (pyb::handle b : obj.attr("block_shape")) h.block.push_back(b.cast<int64_t>());
      if (h.block.size() != static_cast<size_t>(d.rank()) ||
          !std::equal(h.block.begin(), h.block.end(), d.block_shape())) {
        hooked.push_back(std::move(h));
      }
    }
  } catch (pyb::error_already_set& e) {
    throw_python(k, "the autotune config's pre_hook", e);
  } catch (const pyb::cast_error& e) {
    TE_THROW(TypeError) << full_name(k) << ": the autotune config's pre_hook set a descriptor's "
                        << "block_shape to something other than a list of ints (" << e.what()
                        << ")";
  }
  return hooked;
}

}  // namespace detail

namespace detail::py {
long layer_python_calls() { return g_python_calls.load(std::memory_order_relaxed); }
}  // namespace detail::py

void set_tuning_callback(std::function<void(const TuningProgress&)> cb) {
  std::lock_guard<std::mutex> lock(detail::callback_mu());
  detail::callback() = std::move(cb);
}

void prepare_tuning(bool wait) {
  detail::py::ensure_runtime();
  detail::Preparing& p = detail::preparing();
  {
    std::lock_guard<std::mutex> start_lock(p.start_mu);  // one starts it
    std::unique_lock<std::mutex> lock(p.mu);
    if (!p.started) {
      lock.unlock();
      detail::start_preparing(p);
    }
  }
  if (wait) detail::wait_prepared();
}

}  // namespace triton_embed
