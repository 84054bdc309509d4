// The test hooks of detail/testing.h that call Python (the rest: src/core/testing.cc).

#include "triton_embed/detail/testing.h"

#include "core/bind.h"
#include "core/errors.h"
#include "core/specialize.h"
#include "python/convert.h"
#include "python/interpreter.h"

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

}  // namespace triton_embed::detail::testing
