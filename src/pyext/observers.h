#pragma once

// What an autotuned launch's layers did, set on the caller's objects as Triton's
// Autotuner.run sets it (the CallObserver's functions, observers.cc).

#include <Python.h>

#include <cstdint>

#include "pyext/fast_kernel.h"

namespace triton_embed::detail {

// What a launch's autotune layers did that Triton's Autotuner.run leaves on the caller's
// objects, as the runtime tells it (CallObserver), set where Autotuner.run sets it: each
// choice a layer runs as its Autotuner's best_config, then the block shapes the config
// pre-hooks the runtime applies set on the caller's descriptors, before the grid callable and
// the launch (a hook Python runs sets the caller's objects itself). A Python exception raised
// on the way stops the launch, as it does in Triton.
struct Observed {
  FastKernel* kernel;
  PyObject* const* by_param;  // the call's object of each parameter it gave, else null
};

// The CallObserver's `chose`: choice `choice` of layer `layer` as its Autotuner's best_config.
void observe_choice(void* ctx, uint32_t layer, const void* choice);

// A hook's block shape for parameter `param`, on the caller's descriptor: a list of ints, or a
// tuple, as the hook assigns it (unless it is an equal one of that type already).
void observe_block(void* ctx, uint32_t param, const int64_t* block, uint32_t rank, bool tuple);

}  // namespace triton_embed::detail
