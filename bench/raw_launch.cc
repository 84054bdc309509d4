// The raw floor of the Python rows (bench/python_bench.py): cuLaunchKernelEx in a C++ loop, in
// the Python process itself, on the CUfunction Triton loaded for the row's kernel
// (CompiledKernel.function). python_bench.py times it beside the row, batch by batch, so a
// Python row and its floor see the same process, context and machine conditions.
//
//   RawLaunch(function, num_warps, shared, grid, values)
//     values: one per kernel parameter, in order: an int (stored at the parameter's size, 4 or
//     8 bytes, as the driver reports it) or bytes of exactly the parameter's size (a
//     CUtensorMap). Parameters past the values (Triton's scratch pointers) are null.
//   .run(stream, count)  launches count times on stream.
//
// Bench-only: built with the benchmark, never installed.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.h"

namespace py = pybind11;

namespace {

const bench::Driver& driver() {
  static const bench::Driver d;
  return d;
}

class RawLaunch {
 public:
  RawLaunch(uintptr_t function, unsigned num_warps, unsigned shared, const py::tuple& grid,
            const py::list& values)
      : fn_(reinterpret_cast<CUfunction>(function)) {
    if (grid.size() != 3) throw std::invalid_argument("grid: three dimensions");
    cfg_.gridDimX = grid[0].cast<unsigned>();
    cfg_.gridDimY = grid[1].cast<unsigned>();
    cfg_.gridDimZ = grid[2].cast<unsigned>();
    cfg_.blockDimX = 32 * num_warps;
    cfg_.blockDimY = cfg_.blockDimZ = 1;
    cfg_.sharedMemBytes = shared;
    // The kernel's parameters as the driver sees them: stop at the first index it refuses.
    std::vector<size_t> sizes;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      if (driver().func_get_param_info(fn_, i, &offset, &size) != CUDA_SUCCESS) break;
      sizes.push_back(size);
    }
    if (values.size() > sizes.size()) {
      throw std::invalid_argument(std::to_string(values.size()) + " values for a kernel of " +
                                  std::to_string(sizes.size()) + " parameters");
    }
    slots_ = std::make_unique<Slot[]>(sizes.size());
    params_.resize(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      Slot& s = slots_[i];
      params_[i] = s.bytes;
      if (sizes[i] > sizeof(s.bytes)) throw std::invalid_argument("a parameter over 128 bytes");
      if (i >= values.size()) continue;  // a scratch pointer: null
      const py::handle v = values[i];
      if (py::isinstance<py::bytes>(v)) {
        const std::string b = v.cast<std::string>();
        if (b.size() != sizes[i]) {
          throw std::invalid_argument("parameter " + std::to_string(i) + ": " +
                                      std::to_string(b.size()) + " bytes for " +
                                      std::to_string(sizes[i]));
        }
        std::memcpy(s.bytes, b.data(), b.size());
      } else if (sizes[i] == 4) {
        const int32_t x = static_cast<int32_t>(v.cast<int64_t>());
        std::memcpy(s.bytes, &x, 4);
      } else if (sizes[i] == 8) {
        const uint64_t x = static_cast<uint64_t>(v.cast<int64_t>());
        std::memcpy(s.bytes, &x, 8);
      } else {
        throw std::invalid_argument("parameter " + std::to_string(i) + ": an int for " +
                                    std::to_string(sizes[i]) + " bytes");
      }
    }
  }

  size_t parameters() const { return params_.size(); }

  void run(uintptr_t stream, int count) {
    cfg_.hStream = reinterpret_cast<CUstream>(stream);
    const bench::Driver& d = driver();
    for (int i = 0; i < count; ++i) {
      bench::check(d.launch_kernel_ex(&cfg_, fn_, params_.data(), nullptr), "cuLaunchKernelEx");
    }
  }

 private:
  struct alignas(128) Slot {
    unsigned char bytes[128] = {};
  };
  CUfunction fn_;
  CUlaunchConfig cfg_{};
  std::unique_ptr<Slot[]> slots_;
  std::vector<void*> params_;
};

}  // namespace

PYBIND11_MODULE(_bench_raw, m) {
  py::class_<RawLaunch>(m, "RawLaunch")
      .def(py::init<uintptr_t, unsigned, unsigned, const py::tuple&, const py::list&>(),
           py::arg("function"), py::arg("num_warps"), py::arg("shared"), py::arg("grid"),
           py::arg("values"))
      .def_property_readonly("parameters", &RawLaunch::parameters)
      .def("run", &RawLaunch::run, py::arg("stream"), py::arg("count"),
           py::call_guard<py::gil_scoped_release>());
}
