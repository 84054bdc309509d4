// triton-embed-bundle: what a kernel bundle holds, merging bundles, and building one ahead of
// time without a GPU.
//
//   triton-embed-bundle list FILE...          print what each bundle holds
//   triton-embed-bundle merge -o OUT IN...    write the union of IN... to OUT
//   triton-embed-bundle build -o OUT [--target TARGET]... [--python-path DIR]... CALLS...
//                                             compile the calls listed in the files CALLS...
//                                             (format: docs/aot.md) for each target into OUT
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
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bundle/format.h"
#include "bundle/store.h"
#include "calls_file.h"
#include "core/errors.h"
#include "core/kernel_state.h"
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
  if (dlopen(jit.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    throw te::NotSupportedError(std::string("build: cannot load the JIT layer: ") + dlerror() +
                                "; `build` compiles with Triton through " TRITON_EMBED_JIT_SONAME
                                ", which belongs next to " TRITON_EMBED_RUNTIME_SONAME
                                " (list and merge do not need it)");
  }
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

// Loads the kernel of `call` once per kernel; an autotuned one is refused.
te::JitFunction kernel_of(const tools::Call& call,
                          std::map<std::string, te::JitFunction>& kernels) {
  const std::string full = call.module + "." + call.kernel;
  auto it = kernels.find(full);
  if (it != kernels.end()) return it->second;
  te::JitFunction k =
      located(call.where() + ": ", [&] { return te::JitFunction(call.module, call.kernel); });
  for (const auto& layer : k.state()->layers) {
    if (layer->kind != te::detail::Layer::Kind::kAutotune) continue;
    throw te::NotSupportedError(
        call.where() + ": " + full + " is wrapped in @triton.autotune, and tuning runs the " +
        "kernel on a GPU, which `triton-embed-bundle build` does not use; record its bundle " +
        "from a run on the GPU instead (TRITON_EMBED_RECORD=FILE, or " +
        "triton_embed::write_bundle(FILE) after its launches) and merge it with this one");
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

int build(const std::vector<std::string>& args) {
  std::string out;
  std::vector<te::Target> targets;
  std::vector<std::string> python_paths, files;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--target" || a == "--python-path") {
      if (i + 1 == args.size()) throw UsageError{"build: " + a + " needs a value"};
      const std::string& v = args[++i];
      if (a == "-o") {
        if (!out.empty()) throw UsageError{"build: -o given twice"};
        out = v;
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
      throw UsageError{"build: unknown option '" + a + "'"};
    } else {
      files.push_back(a);
    }
  }
  if (out.empty()) throw UsageError{"build: give the output file with -o OUT"};
  if (files.empty()) throw UsageError{"build: give at least one calls file"};

  // Every file is read and checked, and every call has a target, before Python starts.
  std::vector<tools::Call> calls;
  for (const std::string& f : files) {
    for (tools::Call& c : tools::read_calls_file(f)) calls.push_back(std::move(c));
  }
  size_t nentries = 0;
  for (const tools::Call& c : calls) {
    if (c.targets.empty() && targets.empty()) {
      throw te::ValueError(c.where() + ": no target for this call; give --target TARGET " +
                           "(e.g. --target cuda:90) or @TARGET on the line");
    }
    nentries += c.targets.empty() ? targets.size() : c.targets.size();
  }
  if (calls.empty()) throw te::ValueError("build: the calls files list no calls");

  load_jit_layer();
  te::RuntimeOptions options;
  options.python_paths = python_paths;
  te::initialize(options);

  std::map<std::string, te::JitFunction> kernels;
  std::vector<Built> built;
  built.reserve(nentries);
  std::set<const te::CompiledKernel*> seen;  // two calls may compile the same entry
  for (const tools::Call& c : calls) {
    const te::JitFunction k = kernel_of(c, kernels);
    const tools::BoundCall b = tools::bind(c, k);
    const te::JitFunction h = k.with_options(b.options);
    for (const te::Target& t : c.targets.empty() ? targets : c.targets) {
      const te::CompiledKernel& ck =
          located(c.where() + ": for " + t.str() + ": ", [&]() -> const te::CompiledKernel& {
            te::set_target(t);
            // As JitFunction::compile passes a call: positional ones as they are.
            if (b.names.empty()) {
              return te::detail::compile(h.state(), h.interned_options(), b.vals.data(), b.npos);
            }
            return te::detail::compile_call(h.state(), h.interned_options(), b.args(), nullptr);
          });
      if (seen.insert(&ck).second) {
        built.push_back({&c, k.module() + "." + k.name(), b.options.str(), &ck});
      }
    }
  }
  te::set_target(std::nullopt);

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
      found = found || (e.hash == x.compiled->hash() &&
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
  std::string note = "built ahead of time by triton-embed-bundle from";
  for (const std::string& f : files) note += " " + f;
  contents.producer.note = note;
  bundle::write_file(contents, out);

  for (const Built& x : built) {
    std::cout << x.call->where() << ": " << x.compiled->target() << " " << x.kernel << ": "
              << x.compiled->signature();
    if (!x.options.empty()) std::cout << " [" << x.options << "]";
    std::cout << "\n";
  }
  auto count = [](size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  std::cout << "wrote " << out << ": " << count(contents.kernels.size(), "kernel", "kernels")
            << ", " << count(contents.entries.size(), "entry", "entries") << ", "
            << count(contents.records.size(), "record", "records") << " from "
            << count(calls.size(), "call", "calls") << "\n";
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
     "                                            for each target into the bundle OUT",
     build},
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
