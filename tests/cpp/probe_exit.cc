// The process exits while other threads compile: it must exit cleanly (status 0, no crash,
// no hang; no sanitizer report in the sanitizer build). CTest runs each mode
// (probe_exit_while_compiling_*):
//   parked  a thread's compile waits inside Python (te_fault_kernels' gate, never opened)
//   busy    after one whole compile, four threads compile; main returns as soon as one has
//           reached Triton's code generator, so the others are somewhere in Triton's compile
//           (Python or MLIR/LLVM, which runs without the GIL): exit waits for them

#include <Python.h>
#include <triton_embed/jit.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>

namespace te = triton_embed;

namespace {

// Runs Python statements in __main__ (takes the GIL); false if they raised.
bool run(const std::string& code) {
  PyGILState_STATE g = PyGILState_Ensure();
  const int rc = PyRun_SimpleString(code.c_str());
  PyGILState_Release(g);
  return rc == 0;
}

long entered() {
  PyGILState_STATE g = PyGILState_Ensure();
  long n = -1;
  PyObject* m = PyImport_ImportModule("te_fault_kernels");
  if (m != nullptr) {
    PyObject* v = PyObject_GetAttrString(m, "entered");
    if (v != nullptr) n = PyLong_AsLong(v);
    Py_XDECREF(v);
    Py_DECREF(m);
  }
  PyErr_Clear();
  PyGILState_Release(g);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "parked" && mode != "busy") {
    std::fprintf(stderr, "usage: %s parked|busy\n", argv[0]);
    return 2;
  }
  try {
    te::set_target(te::Target::parse("cuda:90"));
    static te::JitFunction gated("te_fault_kernels", "gated_kernel");
    if (!run(std::string("import te_fault_kernels as _tf\n_tf.mode = ''\n") +
             (mode == "parked" ? "_tf.gate.clear()\n" : "_tf.gate.set()\n"))) {
      return 3;
    }
    // TAGs no earlier run used: the compiles miss Triton's disk cache and run the code
    // generator (fault_point).
    std::random_device rd;
    const int64_t base =
        static_cast<int64_t>(
            ((static_cast<uint64_t>(rd()) << 21) ^
             static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) &
            ((uint64_t{1} << 50) - 1))
        << 2;
    const int threads = mode == "parked" ? 1 : 4;
    long reached = 0;
    if (mode == "busy") {
      // One whole compile first: the compiler's objects created on first use then exist, and
      // the library's exit handler runs before their destructors (the limit the README
      // states: an exit during the process's very first compile is not covered).
      gated.compile(reinterpret_cast<int32_t*>(0x10000), 1000, base + 1000, 128);
      reached = entered();
    }
    for (int t = 0; t < threads; ++t) {
      std::thread([t, base] {
        try {
          gated.compile(reinterpret_cast<int32_t*>(0x10000), 1000, base + t, 128);
        } catch (const te::Error&) {
          // A compile that ends after exit began is refused (the interpreter is closed).
        }
      }).detach();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (entered() < reached + 1) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::printf("no compile reached the code generator\n");
        return 4;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::printf("exiting while compiling (%s)\n", mode.c_str());
    std::fflush(stdout);
    return 0;
  } catch (const te::Error& e) {
    std::printf("error: %s\n", e.what());
    return 3;
  }
}
