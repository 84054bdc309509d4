"""Kernels for the tests of HeuristicEvaluation (test_heuristic_evaluation.cc): heuristics
computed by Python or from the expressions the JIT translated them into.

``python_kernel`` and ``expression_kernel`` wrap the same ``@triton.jit`` function in the same
heuristics, so a call of each compiles the same Triton kernel (the same hash) exactly when the
heuristics gave the same values: the test runs one with Python's heuristics and the other with
the expressions. The heuristics take few values over many arguments (each distinct argument
is a new heuristic evaluation, while compiles stay few).
"""

import torch
import triton
import triton.language as tl

BIG = 5000.0  # a global constant (the expression freezes it when the kernel is loaded)


def _mode(args):
    """A string from a dtype, float arithmetic and a global constant."""
    if args["x_ptr"].dtype == torch.float16:
        return "half"
    big = args["n"] * args["scale"] > BIG
    return "big" if big else "small"


HEURISTICS = {
    # Integer arithmetic, min, triton.next_power_of_2, a conditional expression.
    "BLOCK": lambda args: triton.next_power_of_2(min(args["n"], 1024)) if args["n"] > 256 else 256,
    "MODE": _mode,
    # An option, reading the value an earlier heuristic set; None leaves it at its default.
    "num_warps": lambda args: 8 if args["BLOCK"] >= 1024 else (None if args["n"] % 7 == 0 else 4),
}


@triton.jit
def _scale_body(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, MODE: tl.constexpr):
    """out = x * scale (MODE changes nothing of the result)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0).to(tl.float32)
    if MODE == "big":
        y = x * scale
    else:
        y = scale * x
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


python_kernel = triton.heuristics(HEURISTICS)(_scale_body)
expression_kernel = triton.heuristics(HEURISTICS)(_scale_body)

PARTLY_CALLS = []  # n of each call of the heuristic that does not translate


def _untranslated(args):
    """Outside the expressions' forms (a list comprehension): always runs in Python."""
    PARTLY_CALLS.append(args["n"])
    return max([64 for _ in range(1)])


@triton.heuristics({
    "BLOCK": lambda args: 128 if args["n"] > 1000 else 64,
    "OTHER": _untranslated,
})
@triton.jit
def partly_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, OTHER: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * OTHER, mask=mask)


@triton.heuristics({"BLOCK": lambda args: 64 if 4096 // args["n"] > 8 else 128})
@triton.jit
def dividing_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Its heuristic raises ZeroDivisionError for n = 0, in Python and as an expression."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
