#pragma once

// A @triton.heuristics function as an expression the runtime evaluates (core/expr.h): glue.py
// translates the function's source into a tree of tuples (heuristic_expression), turned here
// into a checked program.

#include <string>
#include <vector>

#include "core/expr.h"
#include "python/interpreter.h"

namespace triton_embed::detail::py {

// The program of heuristic `fn` (GIL held) over a kernel with parameters `params`; when the
// function is outside the forms the runtime evaluates, an empty program, with `why` naming the
// construct that stopped it. Python errors other than that propagate.
TE_INTERNAL_API expr::Program heuristic_program(pyb::handle fn, const std::vector<std::string>& params,
                                                std::string* why);

}  // namespace triton_embed::detail::py
