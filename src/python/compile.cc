// The JIT layer's side of a cache miss: compile with Triton and build the cache entry
// (core/compile.cc compiles each key once across threads and publishes the entry).

#include "python/compile.h"

#include <algorithm>
#include <memory>
#include <string>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/compile.h"
#include "core/compiled_kernel.h"
#include "core/target.h"
#include "core/triton_versions.h"
#include "cuda/driver.h"
#include "python/convert.h"
#include "python/cpython.h"
#include "python/handles.h"
#include "python/worker_processes.h"

namespace triton_embed::detail {

namespace pyb = pybind11;

namespace {

// Triton's compile result (glue.compile's dict) as a CompiledKernel.
std::unique_ptr<CompiledKernel> compiled_from_python(const pyb::dict& d, uint32_t target) {
  KernelMetadata m;
  m.hash = d["hash"].cast<std::string>();
  m.name = d["name"].cast<std::string>();
  m.signature = d["signature"].cast<std::string>();
  m.cubin = d["cubin"].cast<std::string>();
  m.ptx = d["ptx"].cast<std::string>();
  m.num_warps = d["num_warps"].cast<int>();
  m.num_ctas = d["num_ctas"].cast<int>();
  m.num_stages = d["num_stages"].cast<int>();
  m.shared = d["shared"].cast<int>();
  m.global_scratch_size = d["global_scratch_size"].cast<uint64_t>();
  m.global_scratch_align = d["global_scratch_align"].cast<uint64_t>();
  m.profile_scratch_size = d["profile_scratch_size"].cast<uint64_t>();
  m.profile_scratch_align = d["profile_scratch_align"].cast<uint64_t>();
  m.launch_cooperative_grid = d["launch_cooperative_grid"].cast<bool>();
  m.launch_pdl = d["launch_pdl"].cast<bool>();
  m.num_kernel_params = d["runtime_params"].cast<int>() + 2;
  return CompiledKernelAccess::make(std::move(m), target_str(target));
}

}  // namespace

namespace {

// A compile's arguments as glue.compile and glue.warm take them (the GIL held).
struct PythonCompile {
  pyb::handle fn;
  pyb::list spec, bound;
  pyb::dict options;
};

PythonCompile python_compile(KernelState& k, const InternedOptions& opts, const ArgValue* args,
                             const LeafList& leaves) {
  TE_CHECK(py::jit_function(k) != nullptr, PythonError)
      << call_signature(k) << ": cannot compile: the Python interpreter has shut down";
  PythonCompile c;
  c.fn = pyb::handle(py::jit_function(k));
  try {
    c.spec = py::specialization_to_python(k, leaves);
    c.bound = py::args_to_python(k, args);
    for (const auto& [name, value] : opts.options.entries()) {
      c.options[pyb::str(name)] = py::option_to_python(value);
    }
  } catch (pyb::error_already_set& e) {
    TE_THROW(PythonError) << call_signature(k) << ": converting the arguments to Python failed:\n"
                          << py::format_exception(e);
  }
  return c;
}

std::unique_ptr<Entry> build_entry(KernelState& k, const InternedOptions& opts, const Key& key,
                                   uint64_t h, const ArgValue* args, const LeafList& leaves) {
  py::InFlight in_flight;
  TE_CHECK(!py::closed(), PythonError)
      << call_signature(k) << ": cannot compile: the Python interpreter has shut down";
  const int arch = target_arch(key.target);
  const int warp = target_warp_size(key.target);

  py::Gil gil;
  const PythonCompile c = python_compile(k, opts, args, leaves);
  const pyb::handle fn = c.fn;
  const pyb::list& spec = c.spec;

  pyb::dict r;
  try {
    r = py::glue().attr("compile")(fn, c.bound, spec, c.options, arch, warp);
  } catch (pyb::error_already_set& e) {
    const std::string type = py::exception_type(e);
    std::string message = pyb::str(e.value()).cast<std::string>();
    std::string where;
    try {
      where = py::glue().attr("describe")(fn, spec).cast<std::string>();
    } catch (pyb::error_already_set&) {
      where = call_signature(k);
    }
    if (type == "ValueError" && message.rfind("unknown Triton option", 0) == 0) {
      // Python's JITFunction.run raises KeyError for a keyword that is no option.
      TE_THROW(LookupError) << full_name(k) << ": " << message;
    }
    if (!PyErr_GivenExceptionMatches(e.type().ptr(), PyExc_Exception)) {
      // KeyboardInterrupt, SystemExit: the compile was stopped, it did not fail. Nothing is
      // cached; the next call compiles again.
      TE_THROW_CAUSED(PythonError)
          << "compiling " << full_name(k) << " as " << where << " for " << target_str(key.target)
          << " was interrupted by " << type << (message.empty() ? "" : ": " + message)
          << "; nothing was cached, the next call compiles again";
    }
    TE_THROW_CAUSED(CompileError) << "Triton failed to compile " << full_name(k) << " as " << where
                                  << " for " << target_str(key.target)
                                  << (opts.options.empty() ? "" : " with " + opts.options.str())
                                  << ":\n"
                                  << type << ": " << message;
  }

  auto e = std::make_unique<Entry>();
  e->target = key.target;
  e->options = key.options;
  e->hash = h;
  e->set_key(key);
  try {
    e->kernel = compiled_from_python(r, key.target);
    const std::string instr = r["instrumentation_mode"].cast<std::string>();
    TE_CHECK(instr.find("gsan") == std::string::npos, NotSupportedError)
        << full_name(k) << ": Triton's gsan instrumentation adds a launch argument that "
        << "triton_embed does not pass; unset it to launch from C++";
    e->set_launch_constants(r["warp_size"].cast<int>());
  } catch (pyb::error_already_set& err) {
    TE_THROW(PythonError) << full_name(k) << ": reading Triton's compile result failed:\n"
                          << py::format_exception(err);
  }
  e->oversized_shared_mode = triton_versions::oversized_shared_memory(k.triton_version);
  e->triton_version = k.triton_version;
  try {
    for (pyb::handle m : r["tensordesc_meta"].cast<pyb::list>()) {
      TmaMeta t;
      if (!m.is_none()) {
        pyb::tuple f = pyb::reinterpret_borrow<pyb::tuple>(m);
        TE_CHECK(!f[5].cast<bool>(), NotSupportedError)
            << full_name(k) << ": an im2col tensor descriptor; triton_embed passes tiled ones only";
        t.present = true;
        t.swizzle = f[0].cast<int>();
        t.elem_size = f[1].cast<int>();
        t.elem_type = f[2].cast<int>();
        pyb::list box = f[3].cast<pyb::list>();
        t.rank = static_cast<int>(box.size());
        TE_ICHECK(t.rank >= 1 && t.rank <= 5) << "tensor descriptor metadata of rank " << t.rank;
        for (int i = 0; i < t.rank; ++i) t.box[i] = box[i].cast<uint32_t>();
        t.fp4_padded = f[4].cast<bool>();
      }
      e->tma.push_back(t);
    }
  } catch (pyb::error_already_set& err) {
    TE_THROW(PythonError) << full_name(k)
                          << ": reading Triton's tensor descriptor metadata failed:\n"
                          << py::format_exception(err);
  }
  TE_ICHECK(e->tma.size() == leaves.ndesc)
      << full_name(k) << ": " << e->tma.size() << " tensor descriptors compiled, " << leaves.ndesc
      << " passed";
  return e;
}

}  // namespace

namespace {

// The compile as a job for a compile worker process (glue.worker_job's payload), or empty when
// no worker can take it (the kernel is not importable by name there, or a constexpr value does
// not pickle). GIL held.
std::string worker_job(KernelState& k, const InternedOptions& opts, const Key& key,
                       const ArgValue* args, const LeafList& leaves) {
  pyb::handle fn(py::jit_function(k));
  pyb::object job;
  try {
    pyb::dict options;
    for (const auto& [name, value] : opts.options.entries()) {
      options[pyb::str(name)] = py::option_to_python(value);
    }
    job = py::glue().attr("worker_job")(
        fn, py::compile_args_to_python(k, args), py::specialization_to_python(k, leaves), options,
        target_arch(key.target), target_warp_size(key.target), cuda::api().ok);
  } catch (pyb::error_already_set& e) {
    TE_THROW(PythonError) << call_signature(k) << ": making a compile worker's job failed:\n"
                          << py::format_exception(e);
  }
  return job.is_none() ? std::string() : job.cast<std::string>();
}

}  // namespace

void python_warm_entry(KernelState& k, const InternedOptions& opts, const Key& key,
                       const ArgValue* args, const LeafList& leaves,
                       std::shared_ptr<PendingCompile>* elsewhere) {
  py::InFlight in_flight;
  TE_CHECK(!py::closed(), PythonError)
      << call_signature(k) << ": cannot compile: the Python interpreter has shut down";
  py::Gil gil;
  TE_CHECK(py::jit_function(k) != nullptr, PythonError)
      << call_signature(k) << ": cannot compile: the Python interpreter has shut down";
  if (elsewhere != nullptr && py::worker_processes_enabled()) {
    std::string job = worker_job(k, opts, key, args, leaves);
    if (!job.empty()) {
      std::shared_ptr<PendingCompile> handed = py::submit_to_workers(std::move(job));
      if (!handed->finished() || handed->compiled()) {
        *elsewhere = std::move(handed);
        return;
      }
      // Refused at once (no worker starts): compiled here.
    }
  }
  const PythonCompile c = python_compile(k, opts, args, leaves);
  try {
    py::glue().attr("warm")(c.fn, c.bound, c.spec, c.options, target_arch(key.target),
                            target_warp_size(key.target));
  } catch (pyb::error_already_set& e) {
    // An interruption (Ctrl-C while this thread compiled) is raised again at the next Python
    // this process runs (the tuning's benchmark), since the precompile gives up on failures.
    if (e.matches(PyExc_KeyboardInterrupt)) PyErr_SetInterrupt();
    TE_THROW(CompileError) << "Triton failed to compile " << full_name(k) << " for "
                           << target_str(key.target) << ":\n"
                           << py::exception_type(e) << ": "
                           << pyb::str(e.value()).cast<std::string>();
  }
}

std::unique_ptr<Entry> python_build_entry(KernelState& k, const InternedOptions& opts,
                                          const Key& key, uint64_t h, const ArgValue* args,
                                          const LeafList& leaves) {
  return build_entry(k, opts, key, h, args, leaves);
}

}  // namespace triton_embed::detail
