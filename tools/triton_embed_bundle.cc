// triton-embed-bundle: what a kernel bundle holds, merging bundles, and building one ahead of
// time without a GPU.
//
//   triton-embed-bundle list FILE...          print what each bundle holds
//   triton-embed-bundle merge -o OUT IN...    write the union of IN... to OUT
//   triton-embed-bundle build -o OUT [--target TARGET]... [--python-path DIR]...
//                             [--rule MODULE:KERNEL=RULE]... CALLS...
//                                             compile the calls listed in the files CALLS...
//                                             (format: docs/aot.md) for each target into OUT
//   triton-embed-bundle tune -o OUT [--target TARGET]... [--python-path DIR]...
//                            [--rule MODULE:KERNEL=RULE]... [--buffer-mib N] CALLS...
//                                             the same, tuning autotuned kernels for each
//                                             call's key (on the GPU, on each kernel's
//                                             #grid; with --target, compile-only, for
//                                             kernels whose benchmark launches nothing)
//   triton-embed-bundle widen -o OUT [--python-path DIR]... [--rule MODULE:KERNEL=RULE]...
//                             [--values MODULE:KERNEL:PARAM=VALUES]... [--no-generic] IN
//                                             IN with each entry's twin compiled with its
//                                             integer arguments unspecialised, entries at
//                                             other constexpr values, and tuning rules
//                                             (src/bundle/widen.h; docs/aot.md)
//
// Exit status: 0 done, 1 a bundle could not be read, merged, built or written (the message on
// stderr says which and why), 2 bad usage. A subcommand is one row of kCommands.
//
// The tool links the runtime only, so that `list` and `merge` run where there is no Python
// (a deployment machine, a CI step). `build` compiles with Triton, so it needs the JIT layer:
// it loads libpython and libtriton_embed.so at run time (load_jit_layer below). The JIT
// library registers itself with the runtime when loaded, as it does in any program, and from
// then on the calls go through the runtime's API like those of a C++ program that links the
// JIT. libpython is loaded first with RTLD_GLOBAL because the JIT library (like a Python
// extension) leaves Python's symbols to the process, and so do the extension modules Triton
// imports. A second executable linked to the JIT would also work, but then the tool a user
// finds on PATH could not build, or one of the two would have to run the other.

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "bundle/file_reader.h"
#include "bundle/file_writer.h"
#include "bundle/format.h"
#include "bundle/merge.h"
#include "bundle/validate.h"
#include "bundle/widen.h"
#include "calls_file.h"
#include "core/jit_internal.h"
#include "core/kernel_state.h"
#include "core/target.h"
#include "core/workers.h"
#include "cuda/driver.h"
#include "triton_embed/autotune.h"
#include "triton_embed/bundle.h"
#include "triton_embed/error.h"
#include "triton_embed/jit.h"

namespace bundle = triton_embed::detail::bundle;

namespace {

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

// Thrown for a bad command line; main prints it with the usage.
struct UsageError {
  std::string what;
};

int list(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError{"list: give at least one bundle file"};
  for (size_t i = 0; i < args.size(); ++i) {
    const bundle::Bundle b = bundle::Bundle::open(args[i]);
    if (i > 0) std::cout << "\n";
    std::cout << bundle::describe(b);
    std::cout << bundle::describe_decisions(b);  // checked as a load would
  }
  return kOk;
}

int merge(const std::vector<std::string>& args) {
  std::string out;
  std::vector<std::string> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o") {
      if (i + 1 == args.size()) throw UsageError{"merge: -o needs a file name"};
      if (!out.empty()) throw UsageError{"merge: -o given twice"};
      out = args[++i];
    } else {
      inputs.push_back(args[i]);
    }
  }
  if (out.empty()) throw UsageError{"merge: give the output file with -o OUT"};
  if (inputs.empty()) throw UsageError{"merge: give at least one input bundle"};
  std::vector<bundle::Bundle> bundles;
  bundles.reserve(inputs.size());
  std::vector<const bundle::Bundle*> ptrs;
  for (const std::string& in : inputs) {
    bundles.push_back(bundle::Bundle::open(in));
    ptrs.push_back(&bundles.back());
  }
  const bundle::Contents merged = bundle::merge(ptrs);
  bundle::write_file(merged, out);
  std::cout << "wrote " << out << ": " << merged.kernels.size() << " kernels, "
            << merged.entries.size() << " entries, " << merged.records.size() << " records from "
            << inputs.size() << " bundles\n";
  return kOk;
}

// ---- build ------------------------------------------------------------------------------

namespace te = triton_embed;
using te::detail::JitAccess;  // a handle's kernel state and options (core/jit_internal.h)
namespace tools = triton_embed::tools;

// The directory of the loaded library whose soname is `soname` ("" when it is not loaded).
std::string loaded_library_dir(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return "";
  link_map* lm = nullptr;
  std::string dir;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name != nullptr) {
    const std::string path = lm->l_name;
    const size_t slash = path.rfind('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  dlclose(h);  // drops only the reference RTLD_NOLOAD took
  return dir;
}

using SetTuningCallback = void (*)(std::function<void(const triton_embed::TuningProgress&)>);
SetTuningCallback g_set_tuning_callback = nullptr;  // set by load_jit_layer
void (*g_prepare_tuning)(bool) = nullptr;           // likewise

// Loads libpython, then the JIT layer (libtriton_embed.so, from the directory of the runtime
// library this tool runs with: both trees keep the two side by side). Never unloaded.
void load_jit_layer() {
  // Global: the JIT library and Python's extension modules take Python's symbols from the
  // process. The configured path first, then the library's name on the loader's search path.
  const std::string libpython = TRITON_EMBED_LIBPYTHON;
  if (dlopen(libpython.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const std::string first = dlerror();
    const std::string name = libpython.substr(libpython.rfind('/') + 1);
    if (dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      throw te::PythonError("build: cannot load libpython: " + first +
                            "; and by name: " + dlerror() + "; the JIT layer was built for " +
                            libpython + ": install that Python, or put the directory of its " +
                            name + " on LD_LIBRARY_PATH");
    }
  }
  const std::string dir = loaded_library_dir(TRITON_EMBED_RUNTIME_SONAME);
  const std::string jit = (dir.empty() ? std::string() : dir + "/") + TRITON_EMBED_JIT_SONAME;
  void* lib = dlopen(jit.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    throw te::NotSupportedError(std::string("build: cannot load the JIT layer: ") + dlerror() +
                                "; `build` compiles with Triton through " TRITON_EMBED_JIT_SONAME
                                ", which belongs next to " TRITON_EMBED_RUNTIME_SONAME
                                " (list and merge do not need it)");
  }
  // triton_embed::set_tuning_callback, which the JIT layer defines (this tool links the
  // runtime only): by its C++ name.
  g_set_tuning_callback = reinterpret_cast<SetTuningCallback>(
      dlsym(lib, "_ZN12triton_embed19set_tuning_callbackESt8functionIFvRKNS_14TuningProgressEEE"));
  g_prepare_tuning =
      reinterpret_cast<void (*)(bool)>(dlsym(lib, "_ZN12triton_embed14prepare_tuningEb"));
}

// Runs f(); an error it throws is thrown again, of the same type, with `where` before its
// message.
template <class F>
auto located(const std::string& where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const te::Error&) {
    te::detail::rethrow_copy(std::current_exception(), where);
  }
}

// A compiled entry and the first call that asked for it.
struct Built {
  const tools::Call* call;
  std::string kernel;  // module.name
  std::string options;
  const te::CompiledKernel* compiled;
};

bool autotuned(const te::JitFunction& k) {
  for (const auto& layer : JitAccess::state(k)->layers) {
    if (layer->kind == te::detail::Layer::Kind::kAutotune) return true;
  }
  return false;
}

// Loads the kernel of `call` once per kernel; an autotuned one is refused unless `tune`.
te::JitFunction kernel_of(const tools::Call& call, std::map<std::string, te::JitFunction>& kernels,
                          bool tune) {
  const std::string full = call.module + "." + call.kernel;
  auto it = kernels.find(full);
  if (it != kernels.end()) return it->second;
  te::JitFunction k =
      located(call.where() + ": ", [&] { return te::JitFunction(call.module, call.kernel); });
  if (!tune && autotuned(k)) {
    throw te::NotSupportedError(
        call.where() + ": " + full + " is wrapped in @triton.autotune, and tuning runs the " +
        "kernel on a GPU, which `triton-embed-bundle build` does not use; tune it with " +
        "`triton-embed-bundle tune` on the GPU (or record its bundle from a run there: " +
        "TRITON_EMBED_RECORD=FILE) and merge that bundle with this one");
  }
  return kernels.emplace(full, k).first->second;
}

// Removes a file when it goes out of scope.
struct RemoveFile {
  std::string path;
  ~RemoveFile() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

// Zeroed device buffers standing for a call's pointer arguments when `tune` runs on the GPU
// (compile-only, the calls' fake addresses are never dereferenced): one per argument slot, of
// --buffer-mib MiB each, kept for the whole run.
class DeviceBuffers {
 public:
  explicit DeviceBuffers(size_t bytes) : bytes_(bytes) {}
  // Replaces the fake address of every pointer in `vals` with a buffer's (plus the fake's
  // offset from its 16-byte boundary: an unaligned pointer stays unaligned).
  void place(std::vector<te::detail::ArgValue>& vals) {
    for (size_t i = 0; i < vals.size(); ++i) {
      te::detail::ArgValue& v = vals[i];
      if (v.kind != te::detail::ArgKind::kPointer || v.u == 0) continue;
      if (i >= bufs_.size()) bufs_.resize(i + 1, 0);
      if (bufs_[i] == 0) bufs_[i] = allocate();
      v.u = bufs_[i] + (v.u & 0xF);
    }
  }

 private:
  uint64_t allocate() {
    namespace cu = te::detail::cuda;
    const cu::Api& api = cu::api();
    if (!api.ok) {
      throw te::NotSupportedError("tune: no usable CUDA driver (" + api.error +
                                  "); give --target TARGET to tune compile-only");
    }
    cu::current_context();
    CUdeviceptr p = 0;
    auto check = [&](CUresult r, const char* call) {
      if (r == CUDA_SUCCESS) return;
      const char* name = "?";
      const char* text = "?";
      api.cuGetErrorName(r, &name);
      api.cuGetErrorString(r, &text);
      throw te::CudaError("tune: " + std::string(call) + " of a " + std::to_string(bytes_ >> 20) +
                              " MiB device buffer for a pointer argument failed: " + name + " (" +
                              text + "); give a smaller --buffer-mib",
                          call, static_cast<int>(r), name, text);
    };
    check(api.cuMemAllocAsync(&p, bytes_ + 16, nullptr), "cuMemAllocAsync");
    check(api.cuMemsetD8Async(p, 0, bytes_ + 16, nullptr), "cuMemsetD8Async");
    return static_cast<uint64_t>(p);
  }
  size_t bytes_;
  std::vector<uint64_t> bufs_;
};

// A `#grid` line's dimensions: integer expressions over the kernel's parameters (+ - * //,
// parentheses, cdiv(a, b)), evaluated on each launch's Meta (tune benchmarks on it).
class GridExpr {
 public:
  static GridExpr parse(const std::string& text, const std::string& where) {
    GridExpr g;
    g.where_ = where;
    size_t start = 0;
    for (int dim = 0; dim <= 3; ++dim) {
      // Split at top-level commas.
      int depth = 0;
      size_t end = start;
      while (end < text.size() && !(depth == 0 && text[end] == ',')) {
        depth += text[end] == '(' ? 1 : text[end] == ')' ? -1 : 0;
        ++end;
      }
      if (dim == 3) throw te::ValueError(where + ": #grid: more than three dimensions");
      g.dims_.push_back(text.substr(start, end - start));
      if (end >= text.size()) break;
      start = end + 1;
    }
    for (const std::string& d : g.dims_) {
      size_t at = 0;
      g.expr(d, at, nullptr);  // checks the syntax (names are checked per launch)
      g.skip(d, at);
      if (at != d.size()) g.fail(d, at, "an operator or the end");
    }
    return g;
  }
  static te::Grid thunk(const void* ctx, const te::Meta& m) {
    const auto& g = *static_cast<const GridExpr*>(ctx);
    int64_t v[3] = {1, 1, 1};
    for (size_t i = 0; i < g.dims_.size(); ++i) {
      size_t at = 0;
      v[i] = g.expr(g.dims_[i], at, &m);
    }
    return te::Grid(v[0], v[1], v[2]);
  }

 private:
  [[noreturn]] void fail(const std::string& d, size_t at, const char* expected) const {
    throw te::ValueError(where_ + ": #grid '" + d + "': expected " + expected + " at column " +
                         std::to_string(at + 1));
  }
  static void skip(const std::string& d, size_t& at) {
    while (at < d.size() && std::isspace(static_cast<unsigned char>(d[at]))) ++at;
  }
  // expr := term (('+' | '-') term)*; term := atom (('*' | '//') atom)*
  int64_t expr(const std::string& d, size_t& at, const te::Meta* m) const {
    int64_t v = term(d, at, m);
    for (;;) {
      skip(d, at);
      if (at < d.size() && (d[at] == '+' || d[at] == '-')) {
        const char op = d[at++];
        const int64_t r = term(d, at, m);
        v = op == '+' ? v + r : v - r;
      } else {
        return v;
      }
    }
  }
  int64_t term(const std::string& d, size_t& at, const te::Meta* m) const {
    int64_t v = atom(d, at, m);
    for (;;) {
      skip(d, at);
      if (at < d.size() && d[at] == '*') {
        ++at;
        v *= atom(d, at, m);
      } else if (d.compare(at, 2, "//") == 0) {
        at += 2;
        const int64_t r = atom(d, at, m);
        if (m != nullptr && r == 0) fail(d, at, "a divisor other than 0");
        if (m != nullptr) v = v / r - ((v % r != 0) && ((v < 0) != (r < 0)) ? 1 : 0);
      } else {
        return v;
      }
    }
  }
  int64_t atom(const std::string& d, size_t& at, const te::Meta* m) const {
    skip(d, at);
    if (at < d.size() && d[at] == '(') {
      ++at;
      const int64_t v = expr(d, at, m);
      skip(d, at);
      if (at >= d.size() || d[at] != ')') fail(d, at, "')'");
      ++at;
      return v;
    }
    if (at < d.size() && std::isdigit(static_cast<unsigned char>(d[at]))) {
      int64_t v = 0;
      while (at < d.size() && std::isdigit(static_cast<unsigned char>(d[at]))) {
        v = v * 10 + (d[at++] - '0');
      }
      return v;
    }
    const size_t s0 = at;
    while (at < d.size() && (std::isalnum(static_cast<unsigned char>(d[at])) || d[at] == '_')) {
      ++at;
    }
    if (at == s0) fail(d, at, "a number, a parameter, cdiv(a, b) or '('");
    const std::string name = d.substr(s0, at - s0);
    skip(d, at);
    if (name == "cdiv" && at < d.size() && d[at] == '(') {
      ++at;
      const int64_t a = expr(d, at, m);
      skip(d, at);
      if (at >= d.size() || d[at] != ',') fail(d, at, "','");
      ++at;
      const int64_t b = expr(d, at, m);
      skip(d, at);
      if (at >= d.size() || d[at] != ')') fail(d, at, "')'");
      ++at;
      if (m != nullptr && b == 0) fail(d, at, "a divisor other than 0");
      return m != nullptr ? te::cdiv(a, b) : 0;
    }
    return m != nullptr ? static_cast<int64_t>((*m)[name]) : 0;
  }

  std::vector<std::string> dims_;
  std::string where_;
};

// The autotune layer of k (its outermost), or nullptr.
const te::detail::TuneLayer* tune_layer(const te::JitFunction& k) {
  for (const auto& layer : JitAccess::state(k)->layers) {
    if (layer->kind == te::detail::Layer::Kind::kAutotune) return layer->tune.get();
  }
  return nullptr;
}

// For a key the tuner chose config `r` at: the inner kernel's entry for that config with the
// call's integer key arguments not specialised (no "divisible by 16", no constant 1), so that
// a program without the JIT launches keys a tuning rule serves from this choice (with a less
// specialised entry: docs/bundle_format.md). Returns nullptr when the key has no integer
// argument, or the config sets a meta-parameter that is not an int or a bool. With
// `hand_over`, the call is only handed to the compile worker processes (precompile_call) and
// nullptr returned: its compile later finds it in Triton's cache.
const te::CompiledKernel* compile_generic(const te::JitFunction& k, const tools::BoundCall& b,
                                          const te::TuningResult& r, std::string* why,
                                          te::detail::PendingCompiles* hand_over = nullptr) {
  const te::detail::TuneLayer* t = tune_layer(k);
  const te::detail::KernelState& ks = *JitAccess::state(k);
  if (ks.layers.size() != 1) {
    *why = "a @triton.heuristics runs with the autotuner";
    return nullptr;
  }
  std::vector<te::detail::ArgValue> vals = b.vals;
  std::vector<te::ArgName> names = b.names;
  bool changed = false;
  for (int p : t->key_params) {
    if (p < 0) continue;
    te::detail::ArgValue* v = nullptr;
    if (static_cast<size_t>(p) < b.npos) {
      v = &vals[static_cast<size_t>(p)];
    } else {
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i].view() == ks.params[static_cast<size_t>(p)].name) v = &vals[b.npos + i];
      }
    }
    if (v == nullptr || v->kind != te::detail::ArgKind::kInt || v->big) continue;
    // 17: an i32 that is neither 1 nor a multiple of 16; a value beyond 32 bits stays i64.
    const bool wide = v->i > INT32_MAX || v->i < INT32_MIN;
    v->i = wide ? (v->i % 16 == 0 ? v->i + 1 : v->i) : 17;
    changed = true;
  }
  if (!changed) return nullptr;
  std::vector<std::string> keep;  // the config's names, alive for the compile
  keep.reserve(r.best.kwargs.size());
  for (const auto& [name, repr] : r.best.kwargs) {
    te::detail::ArgValue v{};
    char* end = nullptr;
    const long long i = std::strtoll(repr.c_str(), &end, 10);
    if (!repr.empty() && *end == '\0') {
      v.kind = te::detail::ArgKind::kInt;
      v.i = i;
    } else if (repr == "True" || repr == "False") {
      v.kind = te::detail::ArgKind::kBool;
      v.i = repr == "True";
    } else {
      *why = "its config sets " + name + " = " + repr +
             ", which this tool passes only as an int or a bool";
      return nullptr;
    }
    keep.push_back(name);
    vals.push_back(v);
  }
  for (const std::string& n : keep) names.emplace_back(n.data(), n.size());
  te::Options opts = b.options;
  opts.num_warps(r.best.num_warps).num_stages(r.best.num_stages).num_ctas(r.best.num_ctas);
  if (r.best.maxnreg != 0) opts.maxnreg(r.best.maxnreg);
  const te::JitFunction inner = k.inner().with_options(opts);
  te::detail::CallArgs a;
  a.vals = vals.data();
  a.npos = static_cast<uint32_t>(b.npos);
  a.nnamed = static_cast<uint32_t>(names.size());
  a.names = names.data();
  if (hand_over != nullptr) {
    te::detail::precompile_call(JitAccess::state(inner), JitAccess::options(inner), a, hand_over);
    return nullptr;
  }
  return &te::detail::compile_call(JitAccess::state(inner), JitAccess::options(inner), a, nullptr);
}

// build, and tune (`tune`): the same command line, the same output, and tuning.
int build_or_tune(const std::vector<std::string>& args, bool tune) {
  const std::string cmd = tune ? "tune" : "build";
  std::string out;
  std::vector<te::Target> targets;
  std::vector<std::string> python_paths, files;
  std::vector<tools::RuleDecl> rules;
  size_t buffer_mib = 256;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--target" || a == "--python-path" || a == "--rule" ||
        (tune && a == "--buffer-mib")) {
      if (i + 1 == args.size()) throw UsageError{cmd + ": " + a + " needs a value"};
      const std::string& v = args[++i];
      if (a == "-o") {
        if (!out.empty()) throw UsageError{cmd + ": -o given twice"};
        out = v;
      } else if (a == "--rule") {
        // MODULE:KERNEL=RULE (the rule itself may hold '=': M=nearest).
        const size_t eq = v.find('=');
        const size_t colon = v.find(':');
        if (eq == std::string::npos || colon == std::string::npos || colon > eq) {
          throw UsageError{cmd + ": --rule '" + v +
                           "': expected MODULE:KERNEL=RULE, e.g. "
                           "--rule pykernels.matmul:matmul_kernel=nearest"};
        }
        tools::RuleDecl r;
        r.file = "--rule";
        r.kernel = v.substr(0, colon) + "." + v.substr(colon + 1, eq - colon - 1);
        r.rule = v.substr(eq + 1);
        rules.push_back(std::move(r));
      } else if (a == "--buffer-mib") {
        char* end = nullptr;
        buffer_mib = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || buffer_mib == 0 || buffer_mib > (1u << 20)) {
          throw UsageError{"tune: --buffer-mib '" + v + "': expected a number of MiB, 1 or more"};
        }
      } else if (a == "--target") {
        try {
          const te::Target t = te::Target::parse(v);
          bool seen = false;
          for (const te::Target& have : targets) seen = seen || have == t;
          if (!seen) targets.push_back(t);
        } catch (const te::ValueError& e) {
          throw UsageError{"build: --target: " + std::string(e.what())};
        }
      } else {
        python_paths.push_back(v);
      }
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError{cmd + ": unknown option '" + a + "'"};
    } else {
      files.push_back(a);
    }
  }
  if (out.empty()) throw UsageError{cmd + ": give the output file with -o OUT"};
  if (files.empty()) throw UsageError{cmd + ": give at least one calls file"};

  // Every file is read and checked, and every call has a target, before Python starts.
  std::vector<tools::Call> calls;
  for (const std::string& f : files) {
    for (tools::Call& c : tools::read_calls_file(f, &rules)) calls.push_back(std::move(c));
  }
  // The files' #rule lines, then --rule (a later rule for a kernel replaces an earlier one).
  std::rotate(rules.begin(),
              rules.begin() + static_cast<std::ptrdiff_t>(std::count_if(
                                  rules.begin(), rules.end(),
                                  [](const tools::RuleDecl& r) { return r.line == 0; })),
              rules.end());
  std::map<std::string, GridExpr> grids;  // module.name -> the grid tune benchmarks on
  for (const tools::RuleDecl& r : rules) {
    if (r.grid) {
      grids[r.kernel] = GridExpr::parse(r.rule, r.where());
      continue;
    }
    located(r.line == 0 ? "--rule: " : r.where() + ": ",
            [&] { te::set_tuning_rule(r.kernel, r.rule); });
  }
  size_t nentries = 0;
  for (const tools::Call& c : calls) {
    if (c.targets.empty() && targets.empty() && !tune) {
      throw te::ValueError(c.where() + ": no target for this call; give --target TARGET " +
                           "(e.g. --target cuda:90) or @TARGET on the line");
    }
    nentries += c.targets.empty() ? targets.size() : c.targets.size();
  }
  if (calls.empty()) throw te::ValueError(cmd + ": the calls files list no calls");

  load_jit_layer();
  te::RuntimeOptions options;
  options.python_paths = python_paths;
  te::initialize(options);
  // Tuning on the GPU imports torch for Triton's benchmark: begun now, while the calls are
  // planned and compiled, not when the first tuning starts.
  if (tune && g_prepare_tuning != nullptr && te::cuda_available()) g_prepare_tuning(false);
  if (tune) {
    // Progress on stderr: kernel, key, configs done of total, the best so far.
    if (g_set_tuning_callback == nullptr) {
      throw te::NotSupportedError("tune: the JIT layer " TRITON_EMBED_JIT_SONAME
                                  " has no triton_embed::set_tuning_callback: is it of another "
                                  "version than this tool?");
    }
    g_set_tuning_callback([](const te::TuningProgress& p) {
      std::cerr << "tune: " << p.kernel << " key " << p.key << ": " << p.done << "/" << p.total
                << " configs, best so far " << p.best << " (" << p.best_ms << " ms); compiled in "
                << p.compile_s << " s on " << p.workers
                << (p.processes ? " worker processes" : " threads") << ", benchmarked in "
                << p.benchmark_s << " s\n";
    });
  }

  std::map<std::string, te::JitFunction> kernels;
  std::vector<Built> built;
  built.reserve(nentries);
  std::set<const te::CompiledKernel*> seen;  // two calls may compile the same entry
  std::vector<std::string> tuned;            // what tune printed per call
  // No target given (tune only): the GPU, with device buffers for the pointers.
  const std::vector<std::optional<te::Target>> gpu{std::nullopt};
  DeviceBuffers buffers(buffer_mib << 20);

  // Each call's kernel, arguments and targets, in the files' order (Python loads the kernels).
  struct Planned {
    const tools::Call* call;
    te::JitFunction k, h;  // the kernel, and with the call's options
    tools::BoundCall b;
    std::vector<std::optional<te::Target>> targets;
  };
  std::vector<Planned> plan;
  plan.reserve(calls.size());
  // A call that cannot be planned stops the planning; its error comes after those of the calls
  // before it, as a loop over the calls would have thrown them.
  std::exception_ptr plan_error;
  for (const tools::Call& c : calls) try {
      const te::JitFunction k = kernel_of(c, kernels, tune);
      tools::BoundCall b = tools::bind(c, k);
      const te::JitFunction h = k.with_options(b.options);
      std::vector<std::optional<te::Target>> call_targets;
      for (const te::Target& t : c.targets.empty() ? targets : c.targets) call_targets.push_back(t);
      if (call_targets.empty()) {
        if (!te::cuda_available()) {
          throw te::ValueError(c.where() + ": no target for this call and no GPU to tune on; run " +
                               "tune on the GPU, or give --target TARGET for kernels whose " +
                               "benchmark launches nothing (compile-only)");
        }
        call_targets = gpu;
        buffers.place(b.vals);
      }
      plan.push_back({&c, k, h, std::move(b), std::move(call_targets)});
    } catch (...) {
      plan_error = std::current_exception();
      break;
    }

  // Every call for every target compiled at once on the compile workers: the entries `build`
  // keeps, and (tune) the configs of every autotuned call compiled into Triton's cache for
  // the tunings below. Each job compiles for its own target (JobTarget), not set_target's.
  struct Job {
    size_t call, target;
    const te::CompiledKernel* compiled = nullptr;
    std::exception_ptr error;
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < plan.size(); ++i) {
    for (size_t t = 0; t < plan[i].targets.size(); ++t) jobs.push_back({i, t});
  }
  te::set_target(std::nullopt);  // a call for the GPU compiles for the GPU's target
  // Where compile worker processes compile, every job is handed to them first (its compile
  // below then waits for its own and finds it in Triton's cache).
  te::detail::PendingCompiles handed;
  std::mutex handed_mu;
  const auto hand_over = [&](const Planned& p, const std::optional<te::Target>& t,
                             const te::detail::CallArgs& args) {
    if (!te::detail::compiles_elsewhere(JitAccess::state(p.h))) return;
    te::detail::JobTarget target(t ? te::detail::target_code(t->arch, t->warp_size) : 0);
    te::detail::PendingCompiles mine;
    try {
      te::detail::precompile_call(JitAccess::state(p.h), JitAccess::options(p.h), args, &mine);
    } catch (...) {
      return;  // met again, and said, by the compile below
    }
    std::lock_guard<std::mutex> lock(handed_mu);
    handed.insert(handed.end(), mine.begin(), mine.end());
  };
  te::detail::run_jobs(jobs.size(), [&](size_t j) {
    const Planned& p = plan[jobs[j].call];
    const std::optional<te::Target>& t = p.targets[jobs[j].target];
    if (!(tune && autotuned(p.k)) || t || grids.count(p.k.module() + "." + p.k.name()) != 0) {
      hand_over(p, t, p.b.args());
    }
  });
  te::detail::run_jobs(jobs.size(), [&](size_t j) {
    Job& job = jobs[j];
    const Planned& p = plan[job.call];
    const std::optional<te::Target>& t = p.targets[job.target];
    te::detail::JobTarget target(t ? te::detail::target_code(t->arch, t->warp_size) : 0);
    try {
      if (tune && autotuned(p.k)) {
        // (On the GPU without a #grid the tuning below refuses the call.)
        if (t || grids.count(p.k.module() + "." + p.k.name()) != 0) {
          te::detail::precompile_call(JitAccess::state(p.h), JitAccess::options(p.h), p.b.args());
        }
        return;
      }
      // As JitFunction::compile passes a call: positional ones as they are.
      job.compiled = p.b.names.empty()
                         ? &te::detail::compile(JitAccess::state(p.h), JitAccess::options(p.h),
                                                p.b.vals.data(), p.b.npos)
                         : &te::detail::compile_call(JitAccess::state(p.h), JitAccess::options(p.h),
                                                     p.b.args(), nullptr);
    } catch (...) {
      // A precompile's failure is met again, and said, by the tuning below.
      if (!(tune && autotuned(p.k))) job.error = std::current_exception();
    }
  });

  // In the files' order: the compiled entries, and the tunings, one at a time, up to the first
  // error (thrown below, after the errors of the jobs before it).
  std::vector<const te::CompiledKernel*> compiled(jobs.size());
  std::vector<const te::TuningResult*> results(jobs.size());
  std::vector<te::detail::PendingCompiles> generic_handed(jobs.size());  // the twins below
  size_t failed = jobs.size();
  std::exception_ptr failure;
  for (size_t j = 0; j < jobs.size(); ++j) try {
      const Job& job = jobs[j];
      const Planned& p = plan[job.call];
      const tools::Call& c = *p.call;
      const te::JitFunction& k = p.k;
      const te::JitFunction& h = p.h;
      const tools::BoundCall& b = p.b;
      const std::optional<te::Target>& t = p.targets[job.target];
      const std::string on = t ? t->str() : std::string("the GPU");
      const te::CompiledKernel& ck =
          located(c.where() + ": for " + on + ": ", [&]() -> const te::CompiledKernel& {
            if (job.error) std::rethrow_exception(job.error);
            if (job.compiled != nullptr) return *job.compiled;
            te::set_target(t);
            // On the GPU an autotuned kernel is benchmarked on its #grid (prepare()).
            const auto g = grids.find(k.module() + "." + k.name());
            if (!t && g == grids.end()) {
              throw te::ValueError(k.module() + "." + k.name() +
                                   " is autotuned, and its configs are benchmarked on the GPU on "
                                   "a grid: give it with a line `#grid " +
                                   k.module() + ":" + k.name() +
                                   " DIMS` (e.g. cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N); "
                                   "docs/aot.md)");
            }
            if (!t) {
              te::detail::GridSpec spec;
              spec.fn = &GridExpr::thunk;
              spec.ctx = &g->second;
              return te::detail::compile_call(JitAccess::state(h), JitAccess::options(h), b.args(),
                                              &spec);
            }
            if (b.names.empty()) {
              return te::detail::compile(JitAccess::state(h), JitAccess::options(h), b.vals.data(),
                                         b.npos);
            }
            return te::detail::compile_call(JitAccess::state(h), JitAccess::options(h), b.args(),
                                            nullptr);
          });
      compiled[j] = &ck;
      if (tune && autotuned(k)) {
        results[j] =
            te::detail::tuning_result_call(JitAccess::state(h), JitAccess::options(h), b.args());
        // Its generic twin (below) handed to the compile worker processes now, compiling
        // while the next keys are tuned.
        if (results[j] != nullptr && te::detail::compiles_elsewhere(JitAccess::state(k))) {
          try {
            std::string why;
            compile_generic(k, b, *results[j], &why, &generic_handed[j]);
          } catch (...) {
            // met again, and said, by its compile below
          }
        }
      }
    } catch (...) {
      failed = j;
      failure = std::current_exception();
      break;
    }
  te::set_target(std::nullopt);

  // Each tuned key's choice compiled again with its integer key arguments unspecialised, on the
  // compile workers.
  struct Generic {
    const te::CompiledKernel* compiled = nullptr;
    std::string why;
    std::exception_ptr error;
  };
  std::vector<Generic> generic(jobs.size());
  te::detail::run_jobs(jobs.size(), [&](size_t j) {
    if (results[j] == nullptr) return;
    const Planned& p = plan[jobs[j].call];
    const std::optional<te::Target>& t = p.targets[jobs[j].target];
    te::detail::JobTarget target(t ? te::detail::target_code(t->arch, t->warp_size) : 0);
    try {
      generic[j].compiled = compile_generic(p.k, p.b, *results[j], &generic[j].why);
    } catch (...) {
      generic[j].error = std::current_exception();
    }
  });

  for (size_t j = 0; j < jobs.size(); ++j) {
    if (j == failed) std::rethrow_exception(failure);
    const Planned& p = plan[jobs[j].call];
    const tools::Call& c = *p.call;
    const std::string kernel = p.k.module() + "." + p.k.name();
    const te::CompiledKernel& ck = *compiled[j];
    if (seen.insert(&ck).second) built.push_back({&c, kernel, p.b.options.str(), &ck});
    const te::TuningResult* r = results[j];
    if (r == nullptr) continue;
    tuned.push_back(c.where() + ": " + ck.target() + " " + kernel + " key " + r->key + ": " +
                    r->best.str);
    const std::optional<te::Target>& t = p.targets[jobs[j].target];
    const Generic& g = generic[j];
    located(c.where() + ": for " + (t ? t->str() : std::string("the GPU")) + ": ", [&] {
      if (g.error) std::rethrow_exception(g.error);
      return 0;
    });
    if (!g.why.empty()) {
      std::cerr << "tune: " << c.where() << ": note: no entry with the "
                << "integer key arguments unspecialised: " << g.why << "\n";
    }
    if (g.compiled != nullptr && seen.insert(g.compiled).second) {
      built.push_back({&c, kernel, p.b.options.str(), g.compiled});
    }
  }
  if (plan_error) std::rethrow_exception(plan_error);
  if (tune) g_set_tuning_callback(nullptr);

  // What the process compiled, recorded as any program records it, into a file next to OUT;
  // checked to hold every entry built; then written to OUT with a note of where it came from.
  RemoveFile recorded{out + ".build.XXXXXX"};
  const int fd = ::mkstemp(&recorded.path[0]);
  if (fd < 0) {
    const std::string why = std::strerror(errno);
    recorded.path.clear();
    throw te::BundleError("bundle " + out + ": cannot write: cannot create a temporary file " +
                              "next to it: " + why + "; check that its directory exists and " +
                              "is writable",
                          te::BundleError::Reason::kIo);
  }
  ::close(fd);
  te::write_bundle(recorded.path);
  const bundle::Bundle rb = bundle::Bundle::open(recorded.path);
  for (const Built& x : built) {
    bool found = false;
    for (const bundle::EntryView& e : rb.entries()) {
      found = found || (e.meta.hash == x.compiled->hash() &&
                        bundle::target_text(e.target) == x.compiled->target());
    }
    if (found) continue;
    throw te::NotSupportedError(
        x.call->where() + ": " + x.kernel + " compiled for " + x.compiled->target() + " (" +
        x.compiled->signature() + "), but the bundle this library records does not hold it " +
        "(an entry keyed on a Python object is not recorded); nothing was written: leave the "
        "call out");
  }
  bundle::Contents contents = rb.contents();
  // The entries in the order of the calls that built them (the compile workers publish them in
  // the order they finish), then the rest, kernel by kernel: the bundle a serial build writes.
  std::vector<bundle::BundleEntry> ordered;
  std::vector<bool> taken(contents.entries.size(), false);
  for (const Built& x : built) {
    for (size_t i = 0; i < contents.entries.size(); ++i) {
      const bundle::BundleEntry& e = contents.entries[i];
      if (!taken[i] && e.meta.hash == x.compiled->hash() &&
          bundle::target_text(e.target) == x.compiled->target()) {
        ordered.push_back(std::move(contents.entries[i]));
        taken[i] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < contents.entries.size(); ++i) {
    if (!taken[i]) ordered.push_back(std::move(contents.entries[i]));
  }
  // Kernel by kernel, as recorded.
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const bundle::BundleEntry& a, const bundle::BundleEntry& b) {
                     return a.kernel < b.kernel;
                   });
  contents.entries = std::move(ordered);
  std::string note = tune ? "tuned by triton-embed-bundle from"
                          : "built ahead of time by triton-embed-bundle from";
  for (const std::string& f : files) note += " " + f;
  contents.producer.note = note;
  bundle::write_file(contents, out);

  for (const Built& x : built) {
    std::cout << x.call->where() << ": " << x.compiled->target() << " " << x.kernel << ": "
              << x.compiled->signature();
    if (!x.options.empty()) std::cout << " [" << x.options << "]";
    std::cout << "\n";
  }
  for (const std::string& t : tuned) std::cout << t << "\n";
  auto count = [](size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  std::cout << "wrote " << out << ": " << count(contents.kernels.size(), "kernel", "kernels")
            << ", " << count(contents.entries.size(), "entry", "entries") << ", "
            << count(contents.records.size(), "record", "records") << " from "
            << count(calls.size(), "call", "calls") << "\n";
  return kOk;
}

// ---- widen --------------------------------------------------------------------------------

// widen -o OUT [--python-path DIR]... [--rule MODULE:KERNEL=RULE | --rule '*=RULE']...
//       [--values MODULE:KERNEL:PARAM=VALUES]... [--no-generic] IN
int widen(const std::vector<std::string>& args) {
  std::string out, input;
  std::vector<std::string> python_paths;
  bundle::WidenOptions opts;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--no-generic") {
      opts.generic = false;
    } else if (a == "-o" || a == "--python-path" || a == "--rule" || a == "--values") {
      if (i + 1 == args.size()) throw UsageError{"widen: " + a + " needs a value"};
      const std::string& v = args[++i];
      if (a == "-o") {
        if (!out.empty()) throw UsageError{"widen: -o given twice"};
        out = v;
      } else if (a == "--python-path") {
        python_paths.push_back(v);
      } else if (a == "--rule") {
        // MODULE:KERNEL=RULE, or *=RULE (the rule itself may hold '=': M=nearest).
        const size_t eq = v.find('=');
        const size_t colon = v.find(':');
        const bool all = v.compare(0, 2, "*=") == 0;
        if (!all && (eq == std::string::npos || colon == std::string::npos || colon > eq)) {
          throw UsageError{"widen: --rule '" + v +
                           "': expected MODULE:KERNEL=RULE (e.g. "
                           "pykernels.matmul:matmul_kernel=M=nearest) or *=RULE (every "
                           "autotuned kernel the bundle has no rule for)"};
        }
        opts.rules.emplace_back(
            all ? "*" : v.substr(0, colon) + "." + v.substr(colon + 1, eq - colon - 1),
            v.substr(eq + 1));
      } else {
        // MODULE:KERNEL:PARAM=VALUES
        const size_t eq = v.find('=');
        const size_t c1 = v.find(':');
        const size_t c2 = c1 == std::string::npos ? c1 : v.find(':', c1 + 1);
        if (eq == std::string::npos || c2 == std::string::npos || c2 > eq) {
          throw UsageError{"widen: --values '" + v +
                           "': expected MODULE:KERNEL:PARAM=VALUES, e.g. "
                           "pykernels.rope:rope_kernel:BATCH=1,2,3,...,64"};
        }
        bundle::WidenOptions::Values x;
        x.kernel = v.substr(0, c1) + "." + v.substr(c1 + 1, c2 - c1 - 1);
        x.param = v.substr(c2 + 1, eq - c2 - 1);
        try {
          x.values = tools::parse_values(v.substr(eq + 1), "--values " + x.kernel + ":" + x.param);
        } catch (const te::ValueError& e) {
          throw UsageError{std::string("widen: ") + e.what()};
        }
        opts.values.push_back(std::move(x));
      }
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError{"widen: unknown option '" + a + "'"};
    } else {
      if (!input.empty()) throw UsageError{"widen: give one input bundle (merge bundles first)"};
      input = a;
    }
  }
  if (out.empty()) throw UsageError{"widen: give the output file with -o OUT"};
  if (input.empty()) throw UsageError{"widen: give the bundle to widen"};

  const bundle::Bundle in = bundle::Bundle::open(input);  // refused before Python starts,
  in.check_blobs();  // its code included (format 2 leaves that to each entry's first use)
  load_jit_layer();
  te::RuntimeOptions options;
  options.python_paths = python_paths;
  te::initialize(options);
  bundle::WidenReport report;
  bundle::Contents widened = bundle::widen(in, opts, &report);
  widened.producer.note =
      "widened by triton-embed-bundle from " + input + " (" + std::string(in.producer().note) + ")";
  bundle::write_file(widened, out);
  struct stat written {};
  const long long out_size = ::stat(out.c_str(), &written) == 0 ? written.st_size : 0;

  size_t code = 0;
  for (const bundle::WidenReport::Added& x : report.added) {
    std::cout << "added: " << x.target << " " << x.kernel << ": " << x.signature;
    if (!x.options.empty()) std::cout << " [" << x.options << "]";
    std::cout << " (" << x.because << "; " << x.bytes << " bytes of code)\n";
    code += x.bytes;
  }
  for (const std::string& r : report.rules) std::cout << "rule: " << r << "\n";
  for (const std::string& n : report.notes) std::cout << "note: " << n << "\n";
  for (const bundle::WidenReport::NotAdded& n : report.not_added) {
    std::cout << "not added: " << n.kernel << " " << n.what << ": " << n.why << "\n";
  }
  const size_t n = report.added.size();
  const long long growth = out_size - static_cast<long long>(in.size());
  auto count = [](size_t k, const char* one, const char* many) {
    return std::to_string(k) + " " + (k == 1 ? one : many);
  };
  std::cout << "wrote " << out << ": " << count(widened.kernels.size(), "kernel", "kernels") << ", "
            << count(widened.entries.size(), "entry", "entries") << " (" << n << " added, " << code
            << " bytes of code), " << count(widened.records.size(), "record", "records") << " ("
            << report.records_added + report.rules_added << " added); " << in.size() << " -> "
            << out_size << " bytes (" << (growth >= 0 ? "+" : "") << growth;
  if (n > 0) std::cout << ", " << growth / static_cast<long long>(n) << " per entry added";
  std::cout << ")";
  if (!report.not_added.empty()) std::cout << "; " << report.not_added.size() << " not added";
  std::cout << "\n";
  return kOk;
}

struct Command {
  const char* name;
  const char* usage;
  int (*run)(const std::vector<std::string>& args);
};

constexpr Command kCommands[] = {
    {"list", "list FILE...          print what each bundle holds", list},
    {"merge", "merge -o OUT IN...    write the union of the bundles IN... to OUT", merge},
    {"build",
     "build -o OUT [--target TARGET]... [--python-path DIR]... CALLS...\n"
     "                                            compile the calls listed in CALLS... (see "
     "docs/aot.md)\n"
     "                                            for each target into the bundle OUT\n"
     "                                            (--rule MODULE:KERNEL=RULE: a tuning rule)",
     [](const std::vector<std::string>& a) { return build_or_tune(a, false); }},
    {"tune",
     "tune -o OUT [--target TARGET]... [--python-path DIR]... CALLS...\n"
     "                                            the same, tuning autotuned kernels at each "
     "call's key\n"
     "                                            on the GPU (--target: compile-only; --rule, "
     "--buffer-mib N)",
     [](const std::vector<std::string>& a) { return build_or_tune(a, true); }},
    {"widen",
     "widen -o OUT [--python-path DIR]... [--rule MODULE:KERNEL=RULE]... IN\n"
     "                                            add to IN each entry's twin with its "
     "integers\n"
     "                                            unspecialised (--values "
     "MODULE:KERNEL:PARAM=VALUES:\n"
     "                                            entries at other constexpr values; "
     "--no-generic)",
     widen},
};

void usage(std::ostream& os) {
  os << "usage: triton-embed-bundle COMMAND ARGS...\n";
  for (const Command& c : kCommands) os << "  triton-embed-bundle " << c.usage << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return kUsage;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    usage(std::cout);
    return kOk;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(args);
    } catch (const UsageError& e) {
      std::cerr << "triton-embed-bundle: " << e.what << "\n";
      usage(std::cerr);
      return kUsage;
    } catch (const triton_embed::Error& e) {
      std::cerr << "triton-embed-bundle: " << e.what() << "\n";
      return kFailed;
    }
  }
  std::cerr << "triton-embed-bundle: unknown command '" << name << "'\n";
  usage(std::cerr);
  return kUsage;
}
