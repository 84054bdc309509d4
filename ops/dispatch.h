#pragma once

// A typed handle to one of our operators, looked up in the dispatcher once per call site.

#include <ATen/core/dispatch/Dispatcher.h>

// static const auto var = the handle of triton_embed::<name>.<overload>, typed as Sig.
#define TE_OP_HANDLE(var, name, overload, ...)                                    \
  static const auto var = c10::Dispatcher::singleton()                            \
                              .findSchemaOrThrow("triton_embed::" name, overload) \
                              .typed<__VA_ARGS__>()
