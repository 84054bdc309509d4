// A program linked to triton_embed::runtime only, through an installed / fetched
// triton_embed: it builds and runs with no Python. The bundles embedded in it and in the
// library it links serve a recorded call; a specialisation they lack raises NotInBundleError,
// which lists what both hold.

#include <triton_embed/jit.h>

#include <cstdint>
#include <cstdio>
#include <string>

std::string consumer_add_kernel_hash();  // kernels.cc

int main() {
  namespace te = triton_embed;
  try {
    te::set_target(te::Target::parse("cuda:90"));
    if (te::runtime_info().jit) {
      std::fprintf(stderr, "consumer_runtime: the JIT layer is linked, it must not be\n");
      return 1;
    }
    std::printf("consumer_runtime: add_kernel %s\n", consumer_add_kernel_hash().c_str());
    const te::JitFunction add("pykernels.vector", "add_kernel");
    auto* p = reinterpret_cast<float*>(uintptr_t{0x10000});
    add.compile(p, p, p, 4096, 512);
    std::fprintf(stderr, "consumer_runtime: a specialisation no bundle holds did not raise\n");
    return 1;
  } catch (const te::NotInBundleError& e) {
    std::printf("consumer_runtime: NotInBundleError: %s\n", e.what());
    return 0;
  } catch (const te::Error& e) {
    std::fprintf(stderr, "consumer_runtime: unexpected error: %s\n", e.what());
    return 1;
  }
}
