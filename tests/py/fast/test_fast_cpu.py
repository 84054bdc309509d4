"""triton_embed.jit on the CPU: the view is the kernel, and CPU tensors run through Triton's
interpreter as the C++ launch runs them, for every kind of call the fast path converts."""

import re

import pytest
import torch
import triton
import triton.language as tl
from fast_kernels import (
    add_kernel,
    axpy_kernel,
    cast_kernel,
    decorated_add_kernel,
    failing_heuristic_kernel,
    heur_add_kernel,
    heuristic_failure,
    raised,
    store_int_kernel,
    tma_copy_2d,
    tuned_add_kernel,
    tuple_kernel,
)
from paths import INTERPRET, computed_grids, counts, expect, fast_path_only

import triton_embed


def data(n, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-8, 8, (n,), generator=g).to(dtype)


def test_the_view_is_the_kernel():
    fast = triton_embed.jit(add_kernel)
    assert isinstance(fast, type(add_kernel))
    assert fast.fn is add_kernel.fn
    assert fast.__name__ == add_kernel.__name__
    if not INTERPRET:
        assert fast.params is add_kernel.params
    assert triton_embed.jit(fast) is fast
    tuned = triton_embed.jit(tuned_add_kernel)
    assert isinstance(tuned, triton.runtime.autotuner.Autotuner)
    assert tuned.configs is tuned_add_kernel.configs
    assert tuned.cache is tuned_add_kernel.cache  # one tuning cache for both paths
    tuned.extra_attribute = 1  # written to the kernel's own attributes
    assert tuned_add_kernel.extra_attribute == 1
    del tuned.extra_attribute


def test_refuses_what_is_no_kernel():
    with pytest.raises(TypeError, match="triton_embed.jit takes a @triton.jit function"):
        triton_embed.jit(lambda x: x)


def test_positional_fixed_grid():
    n = 1000
    x, y, out = data(n, seed=1), data(n, seed=2), torch.empty(n)
    triton_embed.jit(add_kernel)[(triton.cdiv(n, 256),)](x, y, out, n, 256)
    assert torch.equal(out, x + y)
    assert counts() == expect(1, 0, 0)


@computed_grids
def test_named_defaults_and_grid_callable():
    n = 777
    x, y, out = data(n, seed=3), data(n, seed=4), torch.empty(n)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (triton.cdiv(meta["n"], meta["BLOCK"]),)

    fast = triton_embed.jit(axpy_kernel)
    fast[grid](x, y, out, alpha=3.0, n=n)
    assert torch.equal(out, 3.0 * x + y)
    # Triton's bound arguments: every parameter, defaults included, the call's own objects
    # (Triton's interpreter gives its own wrappers of them).
    assert seen["BLOCK"] == 256 and seen["SCALE_Y"] is False
    assert seen["x_ptr"] is x or INTERPRET
    assert list(seen) == list(axpy_kernel.arg_names)
    fast[grid](x, y, out, 0.5, n, SCALE_Y=True, BLOCK=128)
    assert torch.equal(out, 0.5 * x + 2 * y)
    assert seen["BLOCK"] == 128


_BLOCKS = 3  # read by the grid callables below at every launch


def _covered(out, x, y, programs, block):
    """out is x + y over the first programs * block elements, and zero after them."""
    k = min(programs * block, out.numel())
    return torch.equal(out[:k], (x + y)[:k]) and not out[k:].any()


@computed_grids
def test_grid_programs_read_what_the_callable_reads_at_each_launch():
    """A grid callable the glue translates gives its grid without being called, from the values
    it would read now: the meta-parameters, globals and closure cells."""
    global _BLOCKS
    n, block = 1000, 64
    x, y = data(n, seed=21), data(n, seed=22)
    fast = triton_embed.jit(add_kernel)
    for blocks in (3, 5, 16):
        _BLOCKS = blocks  # a global the callable reads: its value at this launch
        out = torch.zeros(n)
        grid = lambda meta: (min(_BLOCKS, triton.cdiv(meta["n"], meta["BLOCK"])), 1)  # noqa: B023,E731
        fast[grid](x, y, out, n, BLOCK=block)
        assert _covered(out, x, y, blocks, block), blocks
    for blocks in (2, 7):

        def grid_of(count):
            def grid(meta):
                """A closure: its cell is read at each launch."""
                return (count * 1,)

            return grid

        out = torch.zeros(n)
        fast[grid_of(blocks)](x, y, out, n, BLOCK=block)
        assert _covered(out, x, y, blocks, block), blocks
    assert counts() == expect(5, 0, 5)


@computed_grids
def test_grid_programs_give_each_launch_its_own_grid():
    """One callable launched again and again: each launch's grid follows the values it reads at
    that launch (a meta-parameter, a global, a float's bits), also after a run of launches that
    read the same values."""
    global _BLOCKS
    n = 1000
    x, y = data(n, seed=23), data(n, seed=24)
    fast = triton_embed.jit(add_kernel)
    grid = lambda meta: (min(_BLOCKS, triton.cdiv(meta["n"], meta["BLOCK"])),)  # noqa: E731
    launches = [(3, 64), (3, 64), (3, 64), (5, 64), (5, 64), (3, 64), (3, 32), (3, 64), (40, 64),
                (40, 128), (40, 64)]
    for blocks, block in launches:
        _BLOCKS = blocks
        out = torch.zeros(n)
        fast[grid](x, y, out, n, BLOCK=block)
        assert _covered(out, x, y, min(blocks, triton.cdiv(n, block)), block), (blocks, block)
    for scale, programs in ((0.5, 2), (0.5, 2), (-0.0, 0), (0.0, 0), (1.5, 6), (0.5, 2)):
        out = torch.zeros(n)
        fast[lambda meta: (int(scale * 4),)](x, y, out, n, BLOCK=64)  # noqa: B023
        assert _covered(out, x, y, programs, 64), scale
    assert counts() == expect(17, 0, 17)


_cdiv = triton.cdiv  # a global name for a function the grid callable below calls


@computed_grids
def test_grid_programs_follow_rebound_functions():
    """A function the program computes in the callable's place is checked at each launch: once
    its name denotes another function, the callable is called."""
    global _cdiv
    n, block = 1000, 64
    x, y = data(n, seed=25), data(n, seed=26)
    fast = triton_embed.jit(add_kernel)
    try:
        for blocks in (None, 2):
            if blocks is not None:
                _cdiv = lambda a, b: blocks  # noqa: E731,B023
            out = torch.zeros(n)
            grid = lambda meta: (_cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731,B023
            fast[grid](x, y, out, n, BLOCK=block)
            assert _covered(out, x, y, blocks or triton.cdiv(n, block), block), blocks
    finally:
        _cdiv = triton.cdiv
    assert counts() == expect(2, 0, 1)


@computed_grids
def test_grid_programs_follow_rebound_module_attributes_and_builtins(monkeypatch):
    """The same callable launched again after triton.cdiv (an attribute of a module the callable
    reaches through a global) or the builtin min was rebound, and after either was restored:
    called while rebound, computed otherwise."""
    import builtins

    n, block = 1000, 64
    x, y = data(n, seed=27), data(n, seed=28)
    fast = triton_embed.jit(add_kernel)
    grid = lambda meta: (min(40, triton.cdiv(meta["n"], meta["BLOCK"])),)  # noqa: E731
    cdiv, min_ = triton.cdiv, builtins.min

    def rebound_min(*args, **kwargs):  # 2 for the grid's call; as min for everything else
        return 2 if args and args[0] == 40 else min_(*args, **kwargs)

    steps = [(None, None, 16), ("cdiv", None, 3), (None, None, 16), (None, "min", 2),
             (None, None, 16), (None, None, 16)]
    for rebind_cdiv, rebind_min, programs in steps:
        monkeypatch.setattr(triton, "cdiv", (lambda a, b: 3) if rebind_cdiv else cdiv)
        monkeypatch.setattr(builtins, "min", rebound_min if rebind_min else min_)
        out = torch.zeros(n)
        fast[grid](x, y, out, n, BLOCK=block)
        monkeypatch.setattr(builtins, "min", min_)
        assert _covered(out, x, y, programs, block), (rebind_cdiv, rebind_min)
    assert counts() == expect(6, 0, 4)


class _Wide(int):
    """An int whose product is its own."""

    def __mul__(self, other):
        return 5


def _two_on_a_line(blocks):
    first, second = (lambda meta: (blocks,)), (lambda meta: (blocks + 1, 1))  # noqa: E731
    return first, second


@fast_path_only
def test_grid_programs_are_what_python_runs(tmp_path, monkeypatch):
    """What the program computes is what the function would: the lambda of its own line that
    compiles to its code, the source it was loaded from, a default get() evaluates, and names
    that denote other objects since it was translated (the function is then called)."""
    import importlib
    import sys

    n, block = 1000, 64
    x, y = data(n, seed=27), data(n, seed=28)
    fast = triton_embed.jit(add_kernel)

    def launch(grid):
        out = torch.zeros(n)
        fast[grid](x, y, out, n, BLOCK=block)
        return out

    assert _covered(launch(_two_on_a_line(3)[1]), x, y, 4, block)
    assert _covered(launch(_two_on_a_line(3)[0]), x, y, 3, block)
    with pytest.raises(ZeroDivisionError):
        launch(lambda meta: (meta.get("n", 1 // 0) // 64,))
    assert _covered(launch(lambda meta: (1 if "\ud800" else 2,)), x, y, 1, block)  # not UTF-8
    # 2**127 - 1 against a float just below it (1.7e38 < 2**127 = 1.7014e38).
    assert _covered(launch(lambda meta: (1 if 2**126 + (2**126 - 1) > 1.7e38 else 2,)), x, y, 1, block)
    assert triton_embed.fast_path_stats()["grid_programs"] == 3
    # Names that denote other objects now: a global of a type with its own arithmetic, a
    # module's function replaced, a builtin shadowed by a global.
    triton_embed.reset_fast_path_stats()
    monkeypatch.setitem(globals(), "_BLOCKS", _Wide(2))
    assert _covered(launch(lambda meta: (_BLOCKS * 1,)), x, y, 5, block)
    monkeypatch.setattr(triton, "cdiv", lambda a, b: 6)
    assert _covered(launch(lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)), x, y, 6, block)
    monkeypatch.setitem(globals(), "abs", lambda a: 7)
    assert _covered(launch(lambda meta: (abs(meta["n"] // 500),)), x, y, 7, block)
    assert triton_embed.fast_path_stats()["grid_programs"] == 0
    # A module edited after it was loaded: its function is called; once reloaded, the new one
    # is translated from the new source.
    module = tmp_path / "te_edited_grid.py"
    module.write_text("grid = lambda meta: (3,)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    edited = importlib.import_module("te_edited_grid")
    module.write_text("grid = lambda meta: (8,)\n")
    assert _covered(launch(edited.grid), x, y, 3, block)
    assert triton_embed.fast_path_stats()["grid_programs"] == 0
    importlib.reload(edited)
    assert _covered(launch(edited.grid), x, y, 8, block)
    assert triton_embed.fast_path_stats()["grid_programs"] == 1
    sys.modules.pop("te_edited_grid", None)


@fast_path_only
def test_grid_callables_called_where_no_program_says():
    """The callable is called (and what it raises is raised) where its program cannot give the
    grid Python would: calls of other functions, values it does not model, errors."""
    n, block = 300, 64
    x, y = data(n, seed=23), data(n, seed=24)
    fast = triton_embed.jit(add_kernel)
    calls = []

    def blocks_for(count, size):
        calls.append(count)
        return triton.cdiv(count, size)

    out = torch.zeros(n)
    fast[lambda meta: (blocks_for(meta["n"], meta["BLOCK"]),)](x, y, out, n, BLOCK=block)
    assert torch.equal(out, x + y) and calls == [n]

    class Count(int):  # an int subclass: its arithmetic is its own
        def __floordiv__(self, other):
            return 1

    class Holder:
        blocks = 2

    for grid, blocks in [(lambda meta: (Holder.blocks,), 2),  # an attribute: read by calling
                         (lambda meta: (len(meta) - 3,), 2),  # the whole dict
                         (lambda meta: (2,) if meta["n"] else (1,), 2)]:  # tuples in an if
        out = torch.zeros(n)
        fast[grid](x, y, out, n, BLOCK=block)
        assert _covered(out, x, y, blocks, block)
    out = torch.zeros(n)
    fast[lambda meta: (meta["n"] // meta["BLOCK"],)](x, y, out, Count(n), BLOCK=block)
    assert _covered(out, x, y, 1, block)
    with pytest.raises(TypeError):  # a float: as from calling it
        fast[lambda meta: (meta["n"] / meta["BLOCK"],)](x, y, out, n, BLOCK=block)
    with pytest.raises(ZeroDivisionError):
        fast[lambda meta: (meta["n"] // (meta["BLOCK"] - 64),)](x, y, out, n, BLOCK=block)
    with pytest.raises(NameError):
        fast[lambda meta: (_not_defined_anywhere,)](x, y, out, n, BLOCK=block)  # noqa: F821
    assert counts() == expect(5)


def test_ints_reach_the_kernel_exactly():
    # Around CPython's one-digit ints (read in place: below 2**30 in size) and the 64-bit bounds.
    fast = triton_embed.jit(store_int_kernel)
    values = [0, 1, -1, 2, 16, 2**30 - 1, 2**30, -(2**30) + 1, -(2**30), 2**31, 2**62 + 5,
              2**63 - 1, -(2**63)]
    for v in values:
        out = torch.zeros(1, dtype=torch.int64)
        fast[(1,)](out, v)
        assert out.item() == v
    assert counts() == expect(len(values))


@computed_grids
def test_heuristics_and_autotune():
    for n in (1000, 4096, 5000):
        x, y = data(n, seed=n), data(n, seed=n + 1)
        out = torch.empty(n)
        triton_embed.jit(heur_add_kernel)[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](x, y, out, n)
        assert torch.equal(out, x + y), n
        if INTERPRET:  # Triton's Autotuner times two configs with a GPU's do_bench
            continue
        out = torch.empty(n)
        triton_embed.jit(tuned_add_kernel)[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](x, y, out, n)
        assert torch.equal(out, x + y), n
    assert counts() == (expect(3) if INTERPRET else expect(6, 0, 6))


@computed_grids
def test_parameters_a_heuristic_sets_given_by_name_take_the_heuristics_values():
    # As Triton's Heuristics.run: the heuristics' values win (BLOCK = 999 would not compile).
    n = 1000
    x, y, out = data(n, seed=3), data(n, seed=4), torch.empty(n)
    triton_embed.jit(heur_add_kernel)[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](
        x, y, out, n, BLOCK=999, EVEN=True)
    assert torch.equal(out, x + y)
    assert counts() == expect(1, 0, 1)


def test_tuples_dtypes_constexpr_and_launch_options():
    n = 300
    a, b, out = data(n, seed=5), data(n, seed=6), torch.empty(n)
    triton_embed.jit(tuple_kernel)[(2,)](( a, b), out, n, (2.0, -1.0), BLOCK=256)
    assert torch.equal(out, 2 * a - b)
    x = data(n, torch.float32, seed=7) / 4
    out16 = torch.empty(n, dtype=torch.float16)
    triton_embed.jit(cast_kernel)[(1,)](x, out16, n, tl.float16, tl.constexpr(512), num_warps=2)
    assert torch.equal(out16, x.to(torch.float16))


def test_a_kernel_its_module_does_not_hold():
    @triton.jit
    def local_scale(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)

    n = 100
    x, out = data(n, seed=8), torch.empty(n)
    fast = triton_embed.jit(local_scale)
    fast[(1,)](x, out, n, 3.0, BLOCK=128)
    assert torch.equal(out, 3 * x)


def test_decorator():
    n = 64
    x, y, out = data(n, seed=9), data(n, seed=10), torch.empty(n)
    assert isinstance(decorated_add_kernel, type(add_kernel))  # JITFunction (or interpreted)
    decorated_add_kernel[(1,)](x, y, out, n, BLOCK=64)
    assert torch.equal(out, x + y)
    assert counts() == expect(1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU, Triton's launcher answers bad calls")
def test_bad_calls_raise_before_any_launch():
    """Without a GPU (Triton launches nothing here), the library's own errors."""
    n = 10
    x, y, out = data(n), data(n), torch.empty(n)
    fast = triton_embed.jit(add_kernel)
    with pytest.raises(TypeError, match="BLOCK"):
        fast[(1,)](x, y, out, n)  # a constexpr without a default, missing
    with pytest.raises(TypeError):
        fast[(1,)](x, y, out, n, 64, BLOCK=64)  # given twice
    with pytest.raises(TypeError):
        fast["one"](x, y, out, n, BLOCK=64)  # no grid
    assert counts()["fast"] == 0


@fast_path_only
def test_launch_hooks_send_calls_to_triton():
    """With Triton's launch hooks set, calls go to Triton's launcher (counted), which runs them."""
    n = 10
    x, y, out = data(n), data(n), torch.empty(n)
    fast = triton_embed.jit(add_kernel)
    calls = []

    def hook(*args, **kwargs):
        calls.append(1)

    runtime = triton.knobs.runtime
    chain = runtime.launch_enter_hook
    if hasattr(chain, "add"):
        chain.add(hook)
    else:
        runtime.launch_enter_hook = hook
    try:
        try:
            expected = None
            add_kernel[(1,)](x, y, out, n, BLOCK=64)
        except Exception as e:  # no GPU: Triton's launcher refuses CPU tensors or has no driver
            expected = type(e)
        before = triton_embed.fast_path_stats()
        if expected is None:
            fast[(1,)](x, y, out, n, BLOCK=64)
        else:
            with pytest.raises(expected):
                fast[(1,)](x, y, out, n, BLOCK=64)
        after = triton_embed.fast_path_stats()
        assert after["triton"] == before["triton"] + 1
        assert after["fast"] == before["fast"]
    finally:
        if hasattr(chain, "remove"):
            chain.remove(hook)
        else:
            runtime.launch_enter_hook = None
    fast[(1,)](x, y, out, n, BLOCK=64)
    assert torch.equal(out, x + y)
    assert triton_embed.fast_path_stats()["fast"] >= 1


@fast_path_only
def test_a_launch_hook_assigned_on_the_knobs_sends_calls_to_triton():
    """A hook assigned as an attribute of knobs.runtime (in its instance dict, over the class's
    chain) is seen at the next launch, after launches the fast path served; deleting it lets
    the fast path serve them again."""
    n = 10
    x, y, out = data(n), data(n), torch.empty(n)
    fast = triton_embed.jit(add_kernel)
    fast[(1,)](x, y, out, n, BLOCK=64)
    fast[(1,)](x, y, out, n, BLOCK=64)
    runtime = triton.knobs.runtime
    runtime.launch_enter_hook = lambda *args, **kwargs: None
    try:
        before = triton_embed.fast_path_stats()
        try:
            fast[(1,)](x, y, out, n, BLOCK=64)
        except Exception:  # noqa: BLE001 (no GPU: Triton's launcher refuses the call)
            pass
        assert triton_embed.fast_path_stats()["triton"] == before["triton"] + 1
    finally:
        del runtime.launch_enter_hook
    fast[(1,)](x, y, out, n, BLOCK=64)
    assert triton_embed.fast_path_stats()["fast"] == 3


def test_tensor_descriptors_on_cpu():
    """Host descriptors of CPU tensors: the interpreter gets the call's own descriptors."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    src = data(64 * 32, seed=11).reshape(64, 32)
    dst = torch.zeros(64, 32)
    fast = triton_embed.jit(tma_copy_2d)
    a, b = TensorDescriptor.from_tensor(src, [32, 32]), TensorDescriptor.from_tensor(dst, [32, 32])
    fast[(2, 1)](a, b, BLOCK_M=32, BLOCK_N=32)
    assert torch.equal(src, dst)
    assert counts() == expect(1, 0, 0)


@fast_path_only
def test_tensor_descriptors_are_read_again_where_they_change():
    """A descriptor launched again is read again where it changed: a block_shape list changed in
    place, its base tensor's data (here its dtype), an attribute assigned, and a new descriptor
    in place of a freed one. Each change makes the call one the fast path refuses (it raises
    its own error where Triton's launcher is off, and leaves the call to Triton's launcher,
    which raises, where it is on); a change it missed would launch without an error."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    src = data(64 * 32, seed=12).reshape(64, 32)
    dst = torch.zeros(64, 32)
    fast = triton_embed.jit(tma_copy_2d)
    a, b = TensorDescriptor.from_tensor(src, [32, 32]), TensorDescriptor.from_tensor(dst, [32, 32])
    triton_on = torch.cuda.is_available()  # Triton's launcher takes the calls refused
    refused = 0

    def launch():
        dst.zero_()
        fast[(2, 1)](a, b, BLOCK_M=32, BLOCK_N=32)
        assert torch.equal(src, dst)

    def refuse(own_error, match):
        nonlocal refused
        with pytest.raises(Exception) as e:
            fast[(2, 1)](a, b, BLOCK_M=32, BLOCK_N=32)
        refused += 1
        if not triton_on:
            assert e.type is own_error and re.search(match, str(e.value)), e.value
        assert triton_embed.fast_path_stats()["triton"] == (refused if triton_on else 0)

    for _ in range(3):
        launch()
    a.block_shape.append(1)  # the list the descriptor holds, changed in place: rank 3
    refuse(ValueError, "rank")
    a.block_shape.pop()
    launch()
    kept = src.data
    src.data = src.data.to(torch.complex64)  # the same tensor object, now of a dtype Triton lacks
    refuse(TypeError, "ComplexFloat")
    src.data = kept
    launch()
    a.block_shape = [32, 32, 1]  # assigned
    refuse(ValueError, "rank")
    a.block_shape = [32, 32]
    launch()
    for i in range(6):  # new descriptors, each freed before the next (often at its address)
        a = TensorDescriptor.from_tensor(src, [32, 32])
        if i % 2:
            a.block_shape.append(1)
            refuse(ValueError, "rank")
        else:
            launch()
        a = None  # freed before the next
    assert triton_embed.fast_path_stats()["fast"] == 3 + 1 + 1 + 1 + 3


def test_python_exceptions_raise_as_they_are():
    """An exception Python code raises on the way (a heuristic, the grid callable) reaches the
    caller as that exception object, as from Triton's launcher."""
    x, out = data(8), torch.empty(8)
    fast = triton_embed.jit(failing_heuristic_kernel)
    with pytest.raises(type(heuristic_failure)) as info:
        fast[(1,)](x, out, -1)
    assert info.value is heuristic_failure

    class GridFailure(Exception):
        pass

    failure = GridFailure("no grid for this call")

    def grid(meta):
        raise failure

    with pytest.raises(GridFailure) as info:
        triton_embed.jit(add_kernel)[grid](x, x, out, 8, BLOCK=8)
    assert info.value is failure
    assert counts() == expect(0, 2 if INTERPRET else 0)  # Triton's interpreter: its calls


class _StandInDriver:
    """Just enough of a Triton driver for Triton's launcher to bind a call on a machine without a
    GPU (its binder raises for bad calls as on a GPU; nothing is launched)."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)

    def get_active_torch_device(self):
        return torch.device("cpu")



@pytest.mark.skipif(torch.cuda.is_available(), reason="test_fast_gpu compares with a real driver")
def test_bad_calls_raise_what_triton_raises():
    """Where Triton's launcher can take a call, a bad call raises Triton's own exception (type
    and message): the library hands the calls it refuses to Triton's launcher (counted)."""
    from triton.runtime import driver

    n = 10
    x, y, out = data(n), data(n), torch.empty(n)
    fast = triton_embed.jit(add_kernel)
    calls = [
        lambda k: k[(1,)](x, y, out, n),  # a constexpr without a default, missing
        lambda k: k[(1,)](x, y, out, n, 64, BLOCK=64),  # given twice
        lambda k: k[(1,)](x, y, out, n, 64, 5),  # one positional argument too many
        lambda k: k[(1,)](x, [y], out, n, BLOCK=64),  # an argument kind Triton refuses
        lambda k: k[(1,)](x, y.to(torch.complex64), out, n, BLOCK=64),  # no Triton dtype
    ]
    driver.set_active(_StandInDriver())
    try:
        for i, call in enumerate(calls):
            expected = raised(call, add_kernel)
            assert expected is not None, i
            assert raised(call, fast) == expected, i
    finally:
        driver.set_active(None)  # as before: no driver on this machine (the test skips with one)
    assert counts() == expect(0, len(calls), 0)
