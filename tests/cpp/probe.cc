// A plain C++ program using the library, for the start-up, override and exit tests: it
// keeps a JitFunction in a static, compiles for cuda:90, prints what it ran on and returns.

#include <triton_embed/jit.h>

#include <cstdio>

namespace te = triton_embed;

static te::JitFunction* g_add = nullptr;  // lives until exit, as a user's static would

int main() {
  try {
    static te::JitFunction add("pykernels.vector", "add_kernel");
    g_add = &add;
    te::set_target(te::Target::parse("cuda:90"));
    auto* p = reinterpret_cast<float*>(0x1000);
    const te::CompiledKernel& k = g_add->compile(p, p, p, 4096, 1024);
    const te::RuntimeInfo info = te::runtime_info();
    std::printf("embedded=%d python=%s executable=%s triton=%s hash=%s\n", info.embedded ? 1 : 0,
                info.python_version.c_str(), info.python_executable.c_str(),
                info.triton_version.c_str(), k.hash().c_str());
    std::printf("done\n");
    return 0;
  } catch (const te::Error& e) {
    std::printf("error: %s\n", e.what());
    return 3;
  }
}
