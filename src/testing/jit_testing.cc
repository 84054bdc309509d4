// The test hooks of testing.h that call Python (the rest: testing.cc). They reach the JIT
// layer through its internal seams (TE_INTERNAL_API in src/python/ headers).

#include "core/bind.h"
#include "core/specialize.h"
#include "python/convert.h"
#include "python/cpython.h"
#include "python/layers.h"
#include "python/worker_processes.h"
#include "testing/testing.h"

namespace triton_embed::detail::testing {

namespace pyb = pybind11;

void* specialization(KernelState* kernel, const ArgValue* args, size_t nargs) {
  KernelState& k = *kernel;
  ArgValue buf[kMaxArgs];
  args = with_defaults(k, args, nargs, buf);  // TypeError for a wrong count, as a launch
  LeafList leaves;
  specialize(k, args, leaves);
  pyb::list spec = py::specialization_to_python(k, leaves);
  pyb::list bound = py::args_to_python(k, args);
  return pyb::make_tuple(spec, bound).release().ptr();
}

long compile_count() {
  py::ensure_runtime();
  py::Gil gil;
  return py::glue().attr("compile_count").cast<long>();
}

long warm_count() {
  py::ensure_runtime();
  py::Gil gil;
  return py::glue().attr("warm_count").cast<long>();
}

long layer_python_calls() { return py::layer_python_calls(); }

WorkerCounts worker_counts() {
  const py::WorkerStats s = py::worker_stats();
  WorkerCounts c;
  c.started = s.started;
  c.running = s.running;
  c.compiled = s.compiled;
  c.failed = s.failed;
  c.unavailable = s.unavailable;
  return c;
}

void set_worker_idle_seconds(double seconds) { py::set_idle_seconds(seconds); }

}  // namespace triton_embed::detail::testing
