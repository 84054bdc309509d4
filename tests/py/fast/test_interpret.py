"""Views of kernels Triton made under TRITON_INTERPRET (InterpretedFunction), with Triton's
wrappers stacked in any order around them: each call runs Triton's interpreter, gives what the
kernel itself gives, and counts as Triton's. The kernels are made here with the interpreter
switched on (as TRITON_INTERPRET=1 does), so this runs in both of the suite's runs."""

import pytest
import torch
import triton
import triton.language as tl
from paths import interpreter

import triton_embed

N = 200


def _stacks():
    """name -> (view or kernel, reference kernel without triton_embed)."""

    def heuristics(k):
        return triton.heuristics({"BLOCK": lambda args: 64 if args["n"] < 1000 else 128})(k)

    def autotune(k):  # one config: Triton's Autotuner runs it without timing
        return triton.autotune(configs=[triton.Config({"SHIFT": 1})], key=["n"])(k)

    def kernel():
        @triton.jit
        def shift_kernel(x_ptr, out_ptr, n, SHIFT: tl.constexpr = 0, BLOCK: tl.constexpr = 64):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + SHIFT, mask=mask)

        return shift_kernel

    jit = triton_embed.jit
    return {
        "jit(kernel)": (jit(kernel()), kernel()),
        "jit(heuristics(kernel))": (jit(heuristics(kernel())), heuristics(kernel())),
        "jit(autotune(kernel))": (jit(autotune(kernel())), autotune(kernel())),
        "jit(autotune(heuristics(kernel)))": (jit(autotune(heuristics(kernel()))),
                                              autotune(heuristics(kernel()))),
        "heuristics(jit(kernel))": (heuristics(jit(kernel())), heuristics(kernel())),
        "autotune(jit(kernel))": (autotune(jit(kernel())), autotune(kernel())),
        "jit(heuristics(jit(kernel)))": (jit(heuristics(jit(kernel()))), heuristics(kernel())),
    }


@pytest.fixture(scope="module")
def stacks():
    with interpreter():
        return _stacks()


@pytest.mark.parametrize("stack", ["jit(kernel)", "jit(heuristics(kernel))", "jit(autotune(kernel))",
                                   "jit(autotune(heuristics(kernel)))", "heuristics(jit(kernel))",
                                   "autotune(jit(kernel))", "jit(heuristics(jit(kernel)))"])
def test_interpreted_kernels_in_any_stack(stack, stacks):
    from triton.runtime.interpreter import InterpretedFunction

    k, reference = stacks[stack]
    inner = k
    while not isinstance(inner, InterpretedFunction):
        inner = inner.fn
    x = torch.arange(N, dtype=torch.float32)
    grid = lambda m: (triton.cdiv(N, m["BLOCK"]),)  # noqa: E731
    expected, got = torch.zeros(N), torch.zeros(N)
    reference[grid](x, expected, N)
    triton_embed.reset_fast_path_stats()
    k[grid](x, got, N)
    assert torch.equal(got, expected)
    assert got.any()
    stats = triton_embed.fast_path_stats()
    assert stats["fast"] == 0
    # A view called directly: Triton's interpreter's call, counted with its reason. Under a
    # Triton wrapper, the wrapper calls the view's run(), which is Triton's.
    outer_view = stack.startswith("jit(")
    assert stats["triton"] == (1 if outer_view else 0)
    if outer_view:
        (reason,) = stats["reasons"]
        assert reason.endswith(": the call: TRITON_INTERPRET=1 made the kernel an "
                               "InterpretedFunction: Triton's interpreter runs it")
