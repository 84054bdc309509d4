#pragma once

// A @triton.heuristics function, or a config's pre_hook, as what the runtime evaluates
// (expr/program.h): the glue (glue/translation.py, glue/hook_translation.py) translates the
// function's source into a tree of tuples (heuristic_expression, pre_hook_actions), turned here
// into checked programs.

#include <string>
#include <vector>

#include "expr/program.h"
#include "python/cpython.h"

namespace triton_embed::detail::py {

// The program of heuristic `fn` (GIL held) over a kernel with parameters `params`; when the
// function is outside the forms the runtime evaluates, an empty program, with `why` naming the
// construct that stopped it. Python errors other than that propagate.
TE_INTERNAL_API expr::Program heuristic_program(pyb::handle fn,
                                                const std::vector<std::string>& params,
                                                std::string* why);

// The actions of a config's pre_hook `fn` (GIL held), as heuristic_program: glue's
// (kind, parameter, dimension trees, guard tree or None) each.
TE_INTERNAL_API expr::Hook hook_program(pyb::handle fn, const std::vector<std::string>& params,
                                        std::string* why);

// A launch's grid callable as what the runtime evaluates in its place: a program per grid
// dimension over the kernel's parameters and then `free`, the names the callable reads at
// every call (a closure cell of the function, or a global, then a builtin).
struct GridProgram {
  struct Free {
    int cell = -1;             // the function's closure cell, or -1: the global `name`
    PyObject* name = nullptr;  // interned; a reference the program holds
  };
  // A function the callable calls (triton.cdiv, min, ...), which its program computes in its
  // place while `root`, then `attrs` (attributes of modules), still denote `object`.
  struct Callee {
    Free root;
    std::vector<PyObject*> attrs;  // interned; references the program holds
    PyObject* object = nullptr;    // a reference the program holds
  };
  std::vector<expr::Program> dims;  // 1 to 3 (a callable that returns one int: 1)
  std::vector<Free> free;
  std::vector<Callee> callees;

  GridProgram() = default;
  GridProgram(const GridProgram&) = delete;
  GridProgram& operator=(const GridProgram&) = delete;
  TE_INTERNAL_API ~GridProgram();  // with the GIL held
};

// The program of grid callable `fn` (GIL held) over a kernel with parameters `params`; false,
// with `why`, when fn is outside the forms the runtime evaluates. Python errors other than
// that propagate.
TE_INTERNAL_API bool grid_program(pyb::handle fn, const std::vector<std::string>& params,
                                  GridProgram* out, std::string* why);

}  // namespace triton_embed::detail::py
