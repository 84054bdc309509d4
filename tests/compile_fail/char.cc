// Must not compile: a plain char is ambiguous (integer or text).
#include <triton_embed/jit.h>
void f(const triton_embed::JitFunction& k) { k.launch({1}, nullptr, 'x'); }
