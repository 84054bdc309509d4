#pragma once

// Device memory for the GPU tests (the CUDA runtime): zeroed on allocation, with 16 spare
// bytes so that a kernel reading a little past the end stays in bounds; ptr is null when the
// allocation failed.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace te_test {

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(T) + 16) != cudaSuccess) ptr = nullptr;
    cudaMemset(ptr, 0, count * sizeof(T) + 16);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const std::vector<T>& h) { cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice); }
  std::vector<T> download() const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

}  // namespace te_test
