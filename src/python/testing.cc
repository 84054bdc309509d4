#include "triton_embed/detail/testing.h"

#include <mutex>

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

size_t cache_size(const JitFunction& fn) {
  Cache& c = fn.state()->cache;
  std::lock_guard<std::mutex> lock(c.mu);
  return c.table.size();
}

int compile_waiters(const JitFunction& fn) {
  Cache& c = fn.state()->cache;
  std::lock_guard<std::mutex> lock(c.mu);
  int n = 0;
  for (const auto& p : c.pending) n += p->waiters;
  return n;
}

bool half_bits(double value, uint16_t* bits) { return double_to_half_bits(value, bits); }

}  // namespace triton_embed::detail::testing
