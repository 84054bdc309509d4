#include "python/cpython.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/errors.h"
#include "bundle/record.h"
#include "core/python_host.h"
#include "core/registry.h"
#include "core/triton_versions.h"
#include "python/handles.h"

namespace triton_embed::detail {
// The glue package's modules (src/python/glue/, in the generated glue_sources.cc): {name,
// source} in the order they run, each after the modules it imports, "__init__" last; {nullptr,
// nullptr} ends them.
extern const char* const kGlueModules[][2];
}  // namespace triton_embed::detail

namespace triton_embed::detail::py {

namespace {

struct State {
  std::once_flag once;
  std::string init_error;  // set when start-up failed: every later use rethrows it
  bool embedded = false;
  PyObject* glue = nullptr;  // strong reference; dropped at shutdown
  std::string python_exe, python_version, triton_version;
  int triton_major = 0, triton_minor = 0;
  std::mutex paths_mu;
  std::vector<std::string> added_paths;
  std::atomic<bool> closed{false};
  std::atomic<int> in_flight{0};
  std::atomic<int> exit_registrations{0};  // of embedded_atexit after Python work (InFlight)
};

constexpr int kExitRegistrations = 64;

State& state() {
  static State* s = new State();  // never destroyed: outlives every static object
  return *s;
}

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The directory that holds pykernels/: the install tree's share/ folder next to this
// library, else the build tree's staging folder.
std::string pykernels_root() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&pykernels_root), &info) != 0 && info.dli_fname != nullptr) {
    std::string lib = info.dli_fname;
    const size_t slash = lib.rfind('/');
    std::string libdir = slash == std::string::npos ? "." : lib.substr(0, slash);
    const std::string rel = TRITON_EMBED_INSTALL_LIBDIR_REL;
    if (libdir.size() > rel.size() &&
        libdir.compare(libdir.size() - rel.size(), rel.size(), rel) == 0) {
      const std::string prefix = libdir.substr(0, libdir.size() - rel.size());
      const std::string installed = prefix + TRITON_EMBED_INSTALL_PYROOT_REL;
      if (is_dir(installed + "/pykernels")) return installed;
    }
  }
  const std::string build = TRITON_EMBED_BUILD_PYROOT;
  if (is_dir(build + "/pykernels")) return build;
  return "";
}

std::vector<std::string> split_paths(const char* s) {
  std::vector<std::string> out;
  if (s == nullptr) return out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ':' || *p == '\0') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

// Puts dirs at the front of sys.path, first one first. GIL held.
void prepend_sys_path(const std::vector<std::string>& dirs) {
  State& s = state();
  pyb::list path = pyb::module_::import("sys").attr("path");
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    pyb::str d(*it);
    if (path.contains(d)) continue;
    path.insert(0, d);
    std::lock_guard<std::mutex> lock(s.paths_mu);
    s.added_paths.push_back(*it);
  }
}

PyObject* atexit_callback(PyObject*, PyObject*) {
  // The host interpreter is shutting down: drop every reference we hold while it still
  // can take them.
  State& s = state();
  bundle::write_recording_before_python_closes();  // a widening recording compiles
  s.closed.store(true);
  release_python_objects();
  Py_CLEAR(s.glue);
  Py_RETURN_NONE;
}

PyMethodDef g_atexit_def = {"_triton_embed_atexit", atexit_callback, METH_NOARGS, nullptr};

void embedded_atexit() {
  // We own the interpreter. It is not finalised (other threads or extension modules may
  // still run; finalising at exit is where embedded CPython crashes). Flush Python's
  // output and stop calling into it.
  State& s = state();
  if (!s.closed.load()) bundle::write_recording_before_python_closes();  // it compiles
  if (s.closed.exchange(true)) return;  // from now on a compile that starts refuses to
  // Compiles still running on other threads use Triton's native code (MLIR, LLVM), partly
  // without the GIL, and the static destructors about to run tear it down (seen: an abort
  // in Triton's environment check, a segfault in LLVM). Let them finish, for at most
  // TRITON_EMBED_EXIT_WAIT seconds (default 30), without the GIL, which they need.
  if (s.in_flight.load() != 0) {
    const ReleaseGilIfHeld no_gil;
    double limit = 30;
    if (const char* e = std::getenv("TRITON_EMBED_EXIT_WAIT")) {
      char* end = nullptr;
      const double v = std::strtod(e, &end);
      if (end != e && v >= 0) limit = v;
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(limit));
    while (s.in_flight.load() != 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  if (s.in_flight.load() != 0) {
    // One is still running (stuck in the user's Python, or slower than the limit). Take the
    // GIL and keep it: its Python code stops where it next needs the GIL, and none starts
    // again. Python's streams are not flushed then: a stopped thread may hold their locks.
    PyGILState_Ensure();
    return;
  }
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject* sys = PyImport_ImportModule("sys");
  if (sys != nullptr) {
    for (const char* name : {"stdout", "stderr"}) {
      PyObject* stream = PyObject_GetAttrString(sys, name);
      if (stream != nullptr && stream != Py_None) {
        PyObject* r = PyObject_CallMethod(stream, "flush", nullptr);
        Py_XDECREF(r);
      }
      Py_XDECREF(stream);
    }
    Py_DECREF(sys);
  }
  PyErr_Clear();
  PyGILState_Release(g);
}

// What the glue (glue/triton_facts.py) needs of core/triton_versions.h for the installed Triton
// (its only source of version facts).
pyb::dict python_facts(int version) {
  namespace tv = triton_versions;
  pyb::list knobs;
  for (const tv::RunKnob& r : tv::kRunKnobs) {
    if (version >= r.since) knobs.append(pyb::make_tuple(r.option, r.knob));
  }
  pyb::dict facts;
  facts["run_knobs"] = knobs;
  facts["descriptor_flag_params"] = tv::descriptor_flag_params(version);
  facts["autotune_listener"] = tv::autotune_listener(version);
  facts["interpreter_index_via_int"] = tv::interpreter_index_via_int(version);
  facts["var_positional_collects"] = tv::var_positional_collects(version);
  facts["keyword_only_enforced"] = tv::keyword_only_enforced(version);
  facts["launcher_per_signature"] = tv::launcher_per_signature(version);
  return facts;
}

// The name the glue package has in sys.modules (no one imports it by that name).
constexpr const char* kGluePackage = "_triton_embed_glue";

// A module of the glue package, `name` its full name, registered in sys.modules with what
// relative imports (from .kernels import ...) read: __package__, __spec__, and the
// package's __path__. GIL held.
pyb::module_ new_glue_module(const std::string& name, bool package) {
  pyb::module_ m = pyb::reinterpret_steal<pyb::module_>(PyModule_New(name.c_str()));
  if (!m) throw pyb::error_already_set();
  m.attr("__builtins__") = pyb::module_::import("builtins");
  m.attr("__package__") = kGluePackage;
  m.attr("__spec__") = pyb::module_::import("importlib.machinery")
                           .attr("ModuleSpec")(name, pyb::none(), pyb::arg("is_package") = package);
  if (package) m.attr("__path__") = pyb::list();
  pyb::module_::import("sys").attr("modules")[pyb::str(name)] = m;
  return m;
}

// Runs the source of the glue's module `file` (as tracebacks name it) in m. GIL held.
void run_glue_module(const pyb::module_& m, const std::string& file, const char* source) {
  pyb::dict d = m.attr("__dict__");
  PyObject* code = Py_CompileString(source, file.c_str(), Py_file_input);
  if (code == nullptr) throw pyb::error_already_set();
  PyObject* r = PyEval_EvalCode(code, d.ptr(), d.ptr());
  Py_DECREF(code);
  if (r == nullptr) throw pyb::error_already_set();
  Py_DECREF(r);
}

// The glue package, from the library's copy of its modules: the package, each module in
// turn (set on the package, as an import does), then the package's __init__. Where one
// fails, none is left in sys.modules. GIL held.
pyb::module_ load_glue() {
  pyb::object modules = pyb::module_::import("sys").attr("modules");
  std::vector<std::string> names = {kGluePackage};
  try {
    pyb::module_ package = new_glue_module(kGluePackage, true);
    for (size_t i = 0; kGlueModules[i][0] != nullptr; ++i) {
      const std::string module = kGlueModules[i][0];
      const std::string file = "<triton_embed glue/" + module + ".py>";
      if (module == "__init__") {
        run_glue_module(package, file, kGlueModules[i][1]);
        continue;
      }
      names.push_back(std::string(kGluePackage) + "." + module);
      pyb::module_ m = new_glue_module(names.back(), false);
      run_glue_module(m, file, kGlueModules[i][1]);
      package.attr(module.c_str()) = m;
    }
    return package;
  } catch (...) {
    for (const std::string& name : names) modules.attr("pop")(name, pyb::none());
    throw;
  }
}

// Imports Triton and the glue; GIL held.
void setup(const std::vector<std::string>& paths) {
  State& s = state();
  prepend_sys_path(paths);

  pyb::module_ glue_mod = load_glue();

  pyb::tuple info = glue_mod.attr("setup")();
  s.triton_version = info[0].cast<std::string>();
  s.python_version = info[1].cast<std::string>();
  s.python_exe = info[2].cast<std::string>();
  s.triton_major = info[3].cast<int>();
  s.triton_minor = info[4].cast<int>();
  const int version = s.triton_major * 100 + s.triton_minor;
  if (version < triton_versions::kOldest) {
    throw PythonError("triton_embed needs Triton " +
                      std::to_string(triton_versions::kOldest / 100) + "." +
                      std::to_string(triton_versions::kOldest % 100) +
                      " or newer; the Python environment has Triton " + s.triton_version + " (" +
                      s.python_exe + ")");
  }
  glue_mod.attr("configure")(python_facts(version));
  s.glue = glue_mod.release().ptr();
}

std::vector<std::string> startup_paths(const RuntimeOptions* options) {
  std::vector<std::string> paths;
  if (options != nullptr) paths = options->python_paths;
  for (auto& p : split_paths(std::getenv("TRITON_EMBED_PYTHONPATH"))) paths.push_back(p);
  const std::string root = pykernels_root();
  if (!root.empty()) paths.push_back(root);
  return paths;
}

std::string python_to_start(const RuntimeOptions* options) {
  if (options != nullptr && !options->python.empty()) return options->python;
  const char* env = std::getenv("TRITON_EMBED_PYTHON");
  if (env != nullptr && *env != '\0') return env;
  return TRITON_EMBED_DEFAULT_PYTHON;
}

void start_embedded(const RuntimeOptions* options) {
  State& s = state();
  const std::string exe = python_to_start(options);
  if (access(exe.c_str(), X_OK) != 0) {
    throw PythonError("cannot start Python: '" + exe +
                      "' is not an executable (set TRITON_EMBED_PYTHON or "
                      "RuntimeOptions::python to the python of an environment with Triton, "
                      "of the Python version this library was built for, " PY_VERSION ")");
  }
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  config.install_signal_handlers = 0;  // leave SIGINT and friends to the host program
  PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, exe.c_str());
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st)) {
    throw PythonError(std::string("cannot start Python from '") + exe +
                      "': " + (st.err_msg ? st.err_msg : "unknown error") +
                      " (the environment must be Python " PY_VERSION
                      ", the version this library was built for)");
  }
  s.embedded = true;
  // This thread holds the GIL now.
  try {
    setup(startup_paths(options));
  } catch (pyb::error_already_set& e) {
    std::string msg = "Python start-up failed: " + format_exception(e);
    PyEval_SaveThread();
    throw PythonError(msg);
  } catch (...) {
    PyEval_SaveThread();
    throw;
  }
  std::atexit(embedded_atexit);
  PyEval_SaveThread();  // release the GIL: from now on only cache misses take it
}

void join_running(const RuntimeOptions* options) {
  State& s = state();
  s.embedded = false;
  Gil gil;
  try {
    setup(startup_paths(options));
    PyObject* cb = PyCFunction_New(&g_atexit_def, nullptr);
    if (cb == nullptr) throw pyb::error_already_set();
    pyb::module_::import("atexit").attr("register")(pyb::reinterpret_steal<pyb::object>(cb));
  } catch (pyb::error_already_set& e) {
    throw PythonError("joining the Python interpreter failed: " + format_exception(e));
  }
}

}  // namespace

void ensure_runtime(const RuntimeOptions* options) {
  State& s = state();
  {
    // Never wait for the once-flag holding the GIL: the thread that runs start-up needs it.
    ReleaseGilIfHeld release;
    std::call_once(s.once, [&] {
      try {
        if (Py_IsInitialized()) {
          join_running(options);
        } else {
          start_embedded(options);
        }
      } catch (const std::exception& e) {
        s.init_error = e.what();
      }
    });
  }
  if (!s.init_error.empty()) throw PythonError(s.init_error);
}

bool closed() noexcept { return state().closed.load(std::memory_order_acquire); }

ReleaseGilIfHeld::ReleaseGilIfHeld() {
  if (Py_IsInitialized() && PyGILState_Check()) saved_ = PyEval_SaveThread();
}
ReleaseGilIfHeld::~ReleaseGilIfHeld() {
  if (saved_ != nullptr) PyEval_RestoreThread(saved_);
}

InFlight::InFlight() { state().in_flight.fetch_add(1); }
InFlight::~InFlight() {
  State& s = state();
  s.in_flight.fetch_sub(1);
  // Exit handlers run in reverse order of registration, and the objects Triton's compiler
  // (MLIR, LLVM) creates on first use register their destructors then: after the handler
  // registered at start-up, so they would be destroyed before it waits for running compiles.
  // Registering it again after a compile puts it before them. The first compiles create
  // nearly all such objects; later ones register nothing new.
  if (s.embedded && !s.closed.load() && s.exit_registrations.fetch_add(1) < kExitRegistrations) {
    std::atexit(embedded_atexit);
  }
}

pyb::handle glue() {
  State& s = state();
  if (s.glue == nullptr) {
    throw PythonError("the Python interpreter has shut down; triton_embed cannot compile any more");
  }
  return pyb::handle(s.glue);
}

std::string python_executable() { return state().python_exe; }

int triton_major() { return state().triton_major; }
int triton_minor() { return state().triton_minor; }

std::string exception_type(const pyb::error_already_set& e) {
  pyb::handle t = e.type();
  if (!t) return "Exception";
  return pyb::str(t.attr("__name__")).cast<std::string>();
}

std::string format_exception(const pyb::error_already_set& e) {
  try {
    pyb::module_ tb = pyb::module_::import("traceback");
    pyb::list lines = tb.attr("format_exception")(e.type(), e.value(), e.trace());
    std::string out;
    for (auto line : lines) out += line.cast<std::string>();
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  } catch (...) {
    return e.what();
  }
}

}  // namespace triton_embed::detail::py

namespace triton_embed::detail::py {

void initialize(const RuntimeOptions& options) {
  detail::py::ensure_runtime(&options);  // the runtime's initialize() sets the target
  if (!options.python_paths.empty()) {
    detail::py::Gil gil;
    try {
      detail::py::prepend_sys_path(options.python_paths);
    } catch (detail::py::pyb::error_already_set& e) {
      throw PythonError("initialize: " + detail::py::format_exception(e));
    }
  }
}

void add_python_path(std::string_view dir) {
  detail::py::ensure_runtime();
  detail::py::Gil gil;
  try {
    detail::py::prepend_sys_path({std::string(dir)});
  } catch (detail::py::pyb::error_already_set& e) {
    throw PythonError("add_python_path: " + detail::py::format_exception(e));
  }
}

RuntimeInfo runtime_info() {
  detail::py::ensure_runtime();
  auto& s = detail::py::state();
  RuntimeInfo info;
  info.jit = true;
  info.embedded = s.embedded;
  info.python_version = s.python_version;
  info.python_executable = s.python_exe;
  info.triton_version = s.triton_version;
  std::lock_guard<std::mutex> lock(s.paths_mu);
  info.python_paths = s.added_paths;
  return info;
}

}  // namespace triton_embed::detail::py

namespace triton_embed::detail {

namespace {

// The runtime's view of this interpreter (core/python_host.h).
class CPythonHost final : public PythonHost {
 public:
  void initialize(const RuntimeOptions& options) override { py::initialize(options); }
  void add_python_path(std::string_view dir) override { py::add_python_path(dir); }
  RuntimeInfo runtime_info() override { return py::runtime_info(); }
  void* release_gil() override {
    if (Py_IsInitialized() && PyGILState_Check()) return PyEval_SaveThread();
    return nullptr;
  }
  void restore_gil(void* token) override {
    PyEval_RestoreThread(static_cast<PyThreadState*>(token));
  }
};

CPythonHost g_cpython_host;

// Runs once, when the library is loaded (after the runtime it depends on).
[[maybe_unused]] const bool kHostRegistered = (register_python_host(&g_cpython_host), true);

}  // namespace

}  // namespace triton_embed::detail
