// Must not compile: long double has no Triton type.
#include <triton_embed/jit.h>
void f(const triton_embed::JitFunction& k) { k.launch({1}, nullptr, 1.0L); }
