// Must not compile: a void* has no element type.
#include <triton_embed/jit.h>
void f(const triton_embed::JitFunction& k, void* p) { k.launch({1}, nullptr, p); }
