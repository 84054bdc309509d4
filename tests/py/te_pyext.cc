// A Python extension built on triton_embed, for the pytest suite: the library loaded into a
// running interpreter must join it.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <triton_embed/jit.h>

#include <optional>
#include <string>

#include "testing/testing.h"

#if defined(TE_HAVE_CUDART)
#include <cuda_runtime_api.h>
#endif

namespace py = pybind11;
namespace te = triton_embed;

namespace {

template <class T>
T* at(uint64_t addr) {
  return reinterpret_cast<T*>(addr);
}

py::dict kernel_dict(const te::CompiledKernel& k) {
  py::dict d;
  d["hash"] = k.hash();
  d["name"] = k.name();
  d["target"] = k.target();
  d["signature"] = k.signature();
  d["num_warps"] = k.num_warps();
  return d;
}

}  // namespace

PYBIND11_MODULE(te_pyext, m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const te::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const te::OverflowError& e) {
      PyErr_SetString(PyExc_OverflowError, e.what());
    } catch (const te::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const te::LookupError& e) {
      PyErr_SetString(PyExc_LookupError, e.what());
    }
  });

  m.def("runtime_info", [] {
    const te::RuntimeInfo info = te::runtime_info();
    py::dict d;
    d["embedded"] = info.embedded;
    d["python_version"] = info.python_version;
    d["triton_version"] = info.triton_version;
    d["python_paths"] = info.python_paths;
    return d;
  });
  m.def("set_target", [](std::optional<std::string> t) {
    te::set_target(t ? std::optional<te::Target>(te::Target::parse(*t)) : std::nullopt);
  });
  m.def("signature", [](const std::string& module, const std::string& name) {
    return te::JitFunction(module, name).signature();
  });
  m.def("compile_count", [] { return te::detail::testing::compile_count(); });
  m.def(
      "compile_add",
      [](uint64_t x, uint64_t y, uint64_t out, int64_t n, int block, int num_warps) {
        te::JitFunction add("pykernels.vector", "add_kernel");
        if (num_warps > 0) add = add.with_options(te::Options().num_warps(num_warps));
        return kernel_dict(add.compile(at<float>(x), at<float>(y), at<float>(out), n, block));
      },
      py::arg("x"), py::arg("y"), py::arg("out"), py::arg("n"), py::arg("block"),
      py::arg("num_warps") = 0);
  m.def("cuda_available", [] { return te::cuda_available(); });
  m.def("launch_add",
        [](uint64_t x, uint64_t y, uint64_t out, int64_t n, int block, uint64_t stream) {
          te::JitFunction add("pykernels.vector", "add_kernel");
          add.launch({te::cdiv(n, block)}, reinterpret_cast<te::Stream>(stream), at<float>(x),
                     at<float>(y), at<float>(out), n, block);
          return kernel_dict(add.compile(at<float>(x), at<float>(y), at<float>(out), n, block));
        });
}
