// A program that embeds a file that is not a kernel bundle (tests/CMakeLists.txt,
// bundle_embedded_refused): the embedded bundle's loader stops it before main runs.

#include <cstdio>

int main() {
  std::printf("main ran\n");
  return 0;
}
