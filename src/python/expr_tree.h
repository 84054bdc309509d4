#pragma once

// A @triton.heuristics function, or a config's pre_hook, as what the runtime evaluates
// (core/expr.h): glue.py translates the function's source into a tree of tuples
// (heuristic_expression, pre_hook_actions), turned here into checked programs.

#include <string>
#include <vector>

#include "core/expr.h"
#include "python/interpreter.h"

namespace triton_embed::detail::py {

// The program of heuristic `fn` (GIL held) over a kernel with parameters `params`; when the
// function is outside the forms the runtime evaluates, an empty program, with `why` naming the
// construct that stopped it. Python errors other than that propagate.
TE_INTERNAL_API expr::Program heuristic_program(pyb::handle fn,
                                                const std::vector<std::string>& params,
                                                std::string* why);

// The actions of a config's pre_hook `fn` (GIL held), as heuristic_program.
TE_INTERNAL_API expr::Hook hook_program(pyb::handle fn, const std::vector<std::string>& params,
                                        std::string* why);

}  // namespace triton_embed::detail::py
