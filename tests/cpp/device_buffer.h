#pragma once

// Device memory for the GPU tests (the CUDA runtime): zeroed on allocation, with 16 spare
// bytes so that a kernel reading a little past the end stays in bounds; ptr is null when the
// allocation failed. And fp16 test data that products keep exact.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace te_test {

// fp16 bits of a small integer (|v| < 2048): exact.
inline uint16_t half_of(int v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  uint32_t m = static_cast<uint32_t>(v < 0 ? -v : v);
  int e = 0;
  while ((m >> e) > 1) ++e;
  const uint32_t mant = (m << (10 - e)) & 0x3FF;
  return static_cast<uint16_t>(sign | (e + 15) << 10 | mant);
}

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(T) + 16) != cudaSuccess)
      ptr = nullptr;
    cudaMemset(ptr, 0, count * sizeof(T) + 16);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const std::vector<T>& h) {
    cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

}  // namespace te_test
