#pragma once

// What a process holds, for the soak and fault tests' leak checks: resident host memory, and
// whether a sanitizer runs (its allocator keeps freed memory in quarantine, so resident size
// says nothing there; LeakSanitizer checks at exit instead).

#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace te_test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

constexpr int64_t kMiB = int64_t{1} << 20;

// Whether a CUDA tool (compute-sanitizer; a profiler) is injected into this process: it keeps
// host memory of its own that grows with the launches it watches, so the resident size says
// nothing about ours there. Seen by its libraries in our address space (compute-sanitizer
// does not leave CUDA_INJECTION64_PATH set in the process).
inline bool under_cuda_tool() {
  static const bool injected = [] {
    const char* v = std::getenv("CUDA_INJECTION64_PATH");
    if (v != nullptr && *v != '\0') return true;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
      if (line.find("sanitizer-collection") != std::string::npos ||
          line.find("/compute-sanitizer/") != std::string::npos ||
          line.find("ToolsInjection") != std::string::npos) {
        return true;
      }
    }
    return false;
  }();
  return injected;
}

// Resident set size in bytes (/proc/self/statm), after malloc has given its free pages back
// to the system; -1 when it cannot be read. Not under a sanitizer (see above).
inline int64_t rss_bytes() {
  malloc_trim(0);
  long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

}  // namespace te_test
