// The watches of Triton's launch hooks (hooks.h reads them at each call).

#include "pyext/hooks.h"

namespace triton_embed::detail {

HookWatch g_enter_hook, g_exit_hook;

}  // namespace triton_embed::detail
