// A program linked to triton_embed::runtime only, through an installed / fetched
// triton_embed: it builds and runs with no Python, and a kernel no bundle holds raises
// NotInBundleError.

#include <triton_embed/jit.h>

#include <cstdio>

int main() {
  namespace te = triton_embed;
  try {
    te::set_target(te::Target::parse("cuda:90"));
    if (te::runtime_info().jit) {
      std::fprintf(stderr, "consumer_runtime: the JIT layer is linked, it must not be\n");
      return 1;
    }
    te::JitFunction add("pykernels.vector", "add_kernel");
    std::fprintf(stderr, "consumer_runtime: loading a kernel did not raise\n");
    return 1;
  } catch (const te::NotInBundleError& e) {
    std::printf("consumer_runtime: NotInBundleError: %s\n", e.what());
    return 0;
  } catch (const te::Error& e) {
    std::fprintf(stderr, "consumer_runtime: unexpected error: %s\n", e.what());
    return 1;
  }
}
