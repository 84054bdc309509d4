// Compiles pykernels.vector.add_kernel through an installed / fetched triton_embed.

#include <triton_embed/jit.h>

#include <cstdio>

int main() {
  namespace te = triton_embed;
  try {
    if (!te::cuda_available()) te::set_target(te::Target::parse("cuda:90"));
    te::JitFunction add("pykernels.vector", "add_kernel");
    auto* p = reinterpret_cast<float*>(0x10000);
    const te::CompiledKernel& k = add.compile(p, p, p, 4096, 1024);
    std::printf("consumer: %s -> %s (%s)\n", k.signature().c_str(), k.hash().c_str(),
                k.target().c_str());
    for (const auto& path : te::runtime_info().python_paths)
      std::printf("  sys.path += %s\n", path.c_str());
    return k.hash().size() == 64 ? 0 : 1;
  } catch (const te::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
