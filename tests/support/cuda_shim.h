#pragma once

// The tests' side of their stand-in CUDA driver (cuda_shim.cc, libte_cuda_shim.so): the
// runtime loads it in place of libcuda.so.1 when TRITON_EMBED_LIBCUDA names it (CTest sets it
// for the tests that use it), and a test replaces its cuTensorMapEncodeTiled or counts the
// calls through these functions. They open the library by the same path, so they reach the
// instance the runtime uses; the test program does not link it.

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace te_cuda_shim {

/* The arguments of one cuTensorMapEncodeTiled call as plain integers (the driver's enum
   values): \c strides in bytes, \c rank - 1 of them; entries past the rank are 0. */
struct EncodeCall {
  int data_type = 0;
  uint32_t rank = 0;
  uint64_t address = 0;
  uint64_t dims[5] = {};
  uint64_t strides[5] = {};
  uint32_t box[5] = {};
  uint32_t element_strides[5] = {};
  int interleave = 0, swizzle = 0, l2_promotion = 0, oob_fill = 0;
};

// Writes the 128 bytes of the map in place of the driver.
using Encoder = void (*)(const EncodeCall& call, unsigned char* map);

namespace detail {

// A control function of the loaded shim; throws when this process's TRITON_EMBED_LIBCUDA
// does not name the shim (the test was run without CTest's environment).
inline void* control(const char* name) {
  static void* const lib = [] {
    const char* path = std::getenv("TRITON_EMBED_LIBCUDA");
    return path != nullptr && *path != '\0' ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  }();
  void* fn = lib != nullptr ? dlsym(lib, name) : nullptr;
  if (fn == nullptr) {
    throw std::runtime_error(std::string("the tests' CUDA shim is not loaded (") + name +
                             "): set TRITON_EMBED_LIBCUDA to its libte_cuda_shim.so, as CTest "
                             "does");
  }
  return fn;
}

}  // namespace detail

// Encodes tensor maps with \p encoder instead of the driver (nullptr: the driver again).
inline void set_encoder(Encoder encoder) {
  reinterpret_cast<void (*)(Encoder)>(detail::control("te_cuda_shim_set_encoder"))(encoder);
}

// How many times cuTensorMapEncodeTiled has been called in this process (the maps the
// runtime encoded: its descriptors' cache misses).
inline uint64_t encodes() {
  return reinterpret_cast<uint64_t (*)()>(detail::control("te_cuda_shim_encodes"))();
}

}  // namespace te_cuda_shim
