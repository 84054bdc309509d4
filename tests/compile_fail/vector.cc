// Must not compile: std::vector is not a kernel argument.
#include <triton_embed/jit.h>

#include <vector>
void f(const triton_embed::JitFunction& k, const std::vector<int>& v) { k.launch({1}, nullptr, v); }
