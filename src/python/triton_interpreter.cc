// Running a kernel through Triton's interpreter: the host path for CPU tensors. It is for
// correctness and debugging, not speed: every call enters Python.

#include "python/triton_interpreter.h"

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/bind.h"
#include "core/compile.h"
#include "python/convert.h"
#include "python/cpython.h"
#include "python/handles.h"

namespace triton_embed::detail {

namespace pyb = pybind11;

void python_interpret(KernelState* kernel, const GridSpec& grid, const ArgValue* args,
                      size_t nargs) {
  KernelState& k = *kernel;
  if (!k.layers.empty()) {
    CallArgs call;
    call.vals = args;
    call.npos = static_cast<uint32_t>(nargs);
    interpret_call(kernel, grid, call);
    return;
  }  // The grid callable sees every parameter, defaults included, as in a launch; Python gets
  // the arguments as passed and fills in its defaults itself.
  ArgValue buf[kMaxArgs];
  const ArgValue* full = with_defaults(k, args, nargs, buf);
  const Grid g = grid.fn != nullptr
                     ? grid.fn(grid.ctx, MetaAccess::make(kernel, full, k.params.size()))
                     : grid.fixed;
  TE_CHECK(g.x >= 0 && g.y >= 0 && g.z >= 0, ValueError)
      << "interpreting " << full_name(k) << ": grid (" << g.x << ", " << g.y << ", " << g.z
      << ") has a negative axis";
  if (g.x == 0 || g.y == 0 || g.z == 0) return;

  py::ensure_runtime();
  py::InFlight in_flight;
  TE_CHECK(!py::closed(), PythonError)
      << call_signature(k) << ": cannot interpret: the Python interpreter has shut down";
  py::Gil gil;
  try {
    pyb::list bound;
    for (size_t i = 0; i < nargs; ++i) bound.append(py::to_python(args[i]));
    TE_CHECK(py::jit_function(k) != nullptr, PythonError)
        << call_signature(k) << ": cannot interpret: the Python interpreter has shut down";
    pyb::handle fn(py::jit_function(k));
    py::glue().attr("interpret")(fn, bound, pyb::make_tuple(g.x, g.y, g.z));
  } catch (pyb::error_already_set& e) {
    TE_THROW_CAUSED(PythonError) << "running " << full_name(k)
                                 << " in Triton's interpreter failed:\n"
                                 << py::format_exception(e);
  }
}

}  // namespace triton_embed::detail
