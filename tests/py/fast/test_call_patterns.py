"""The call patterns Triton accepts (README: "Python call patterns"), each through a view and
through Triton: the same outcome (the same results bitwise, or the same exception), on the path
the README's table gives for it, with the reason fast_path_stats() gives for a call that went to
Triton's launcher.

Triton's side is the kernel's own launch on a GPU. Without one, Triton's launcher runs nothing:
there a call the table sends to the fast path is compared with Triton's interpreter (the same
kernels made under TRITON_INTERPRET), and one it sends to Triton's launcher with the kernel's own
launch (which raises what it raises for both). Under TRITON_INTERPRET=1 every call is Triton's
interpreter's."""

import numpy as np
import pattern_kernels
import pytest
import torch
import triton
import triton.language as tl
from paths import INTERPRET, INTERPRETER_COMPUTES_GRIDS, fast_path_only, interpreter

import triton_embed

GPU = torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"
N = 300


@pytest.fixture(scope="module")
def kernels():
    return pattern_kernels.make()


@pytest.fixture(scope="module")
def interpreted():
    """The same kernels as Triton's InterpretedFunctions."""
    with interpreter():
        return pattern_kernels.make()


class HasDataPtr:
    """Not a tensor: an object with data_ptr() and dtype, which Triton takes as a pointer."""

    def __init__(self, t):
        self.t, self.dtype = t, t.dtype

    def data_ptr(self):
        return self.t.data_ptr()


def _x():
    g = torch.Generator().manual_seed(7)
    return torch.randint(-8, 8, (N,), generator=g).to(torch.float32).to(DEVICE)


G = triton.cdiv(N, 128)
# (name, kernel, call, path): call(k, ns, x, out) launches kernel `k` (made by
# pattern_kernels.make(), whose namespace is ns); path: "fast", "triton: <reason's words>", or
# "refused" (Triton raises; so does the library: without a GPU its own error of the same type,
# with one it hands the call to Triton's launcher).
PATTERNS = [
    ("positional arguments, a grid tuple", "scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, 2.0, 128), "fast"),
    ("named arguments in any order", "scale_kernel",
     lambda k, ns, x, out: k[(G,)](out_ptr=out, BLOCK=128, s=2.0, x_ptr=x, n=N), "fast"),
    ("a grid list", "scale_kernel",
     lambda k, ns, x, out: k[[G]](x, out, N, 2.0, 128), "fast"),
    ("a 2-D grid", "scale_kernel",
     lambda k, ns, x, out: k[(G, 1)](x, out, N, 2.0, 128), "fast"),
    ("a grid callable giving 1 dimension", "scale_kernel",
     lambda k, ns, x, out: k[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](x, out, N, 2.0, 128),
     "fast"),
    ("a grid callable giving 3 dimensions", "scale_kernel",
     lambda k, ns, x, out: k[lambda m: (triton.cdiv(m["n"], m["BLOCK"]), 1, 1)](x, out, N, 2.0, 128),
     "fast"),
    ("a grid of one int (Triton takes its len())", "scale_kernel",
     lambda k, ns, x, out: k[G](x, out, N, 2.0, 128), "refused"),
    ("a grid callable giving one int", "scale_kernel",
     lambda k, ns, x, out: k[lambda m: triton.cdiv(m["n"], m["BLOCK"])](x, out, N, 2.0, 128),
     "refused"),
    ("a numpy float64 (a float)", "scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, np.float64(2.0), 128), "fast"),
    ("a numpy float32", "scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, np.float32(2.0), 128),
     "triton: argument 's' (numpy.float32): an object of a kind"),
    ("a numpy int64", "scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, np.int64(N), 2.0, 128),
     "triton: argument 'n' (numpy.int64): an object of a kind"),
    ("one positional argument too many, a numpy int", "scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, 2.0, 128, np.int64(1)),
     "triton: the call (numpy.int64): an object of a kind"),
    ("an int beyond 64 bits", "scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, 2**64, 2.0, 128),
     "triton: argument 'n': an integer beyond 64 bits"),
    ("a 0-d tensor (a pointer, as in Triton)", "scale_by_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, torch.tensor(2.0, device=DEVICE), 128), "fast"),
    ("an object with data_ptr()", "scale_by_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, HasDataPtr(torch.full((1,), 2.0, device=DEVICE)), 128),
     "triton: argument 's_ptr' (test_call_patterns.HasDataPtr): an object of a kind"),
    ("a @triton.jit function as an argument", "apply_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, ns.twice, 128),
     "triton: argument 'FN' (triton.runtime.jit.JITFunction): an object of a kind"),
    ("launch options", "scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, 2.0, 128, num_warps=2, num_stages=2), "fast"),
    ("launch options on a heuristics kernel", "heur_scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, 2.0, num_warps=2), "fast"),
    ("a heuristic-set parameter given by name (the heuristic's value wins)", "heur_scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, 2.0, BLOCK=999), "fast"),
    ("an autotuned kernel", "tuned_scale_kernel",
     lambda k, ns, x, out: k[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](x, out, N, 2.0), "fast"),
    ("launch options its configs set, on an autotuned kernel", "tuned_scale_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, 2.0, num_warps=2), "refused"),
    ("a kernel with pre-run hooks", "hooked_kernel",
     lambda k, ns, x, out: k[(G,)](x, out, N, 2.0, 128),
     "triton: the call: the kernel has pre-run hooks"),
]


# Where Triton's interpreter refuses what its launcher takes (a grid list: it adds a tuple to
# it; a grid computed from the arguments, in some Triton versions: paths.py): without a GPU,
# Triton's side is the first pattern's launch, of the same values.
INTERPRETER_REFUSES = {"a grid list"}
if not INTERPRETER_COMPUTES_GRIDS:
    INTERPRETER_REFUSES |= {"a grid callable giving 1 dimension", "a grid callable giving 3 dimensions",
                            "an autotuned kernel"}


def _outcome(call, k, ns):
    """("ok", out) or ("raises", type, message)."""
    x, out = _x(), torch.zeros(N, device=DEVICE)
    try:
        call(k, ns, x, out)
    except Exception as e:  # noqa: BLE001 (whatever Triton raises)
        return ("raises", type(e), str(e))
    return ("ok", out.cpu())


def _same(a, b, messages):
    if a[0] != b[0]:
        return False
    if a[0] == "ok":
        return torch.equal(a[1], b[1])
    return a[1] is b[1] and (not messages or a[2] == b[2])


@pytest.mark.parametrize("name,kernel,call,path", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_call_pattern(name, kernel, call, path, kernels, interpreted):
    own = getattr(kernels, kernel)
    fast = triton_embed.jit(own)
    if INTERPRET:
        path = "triton: the call: TRITON_INTERPRET=1"
    # Triton's side: the kernel's own launch where it runs (a GPU, the interpreter), or where
    # the call goes to Triton's launcher anyway; else Triton's interpreter.
    reference, ns, reference_call = own, kernels, call
    if not GPU and not INTERPRET and not path.startswith("triton"):
        reference, ns = getattr(interpreted, kernel), interpreted
        if name in INTERPRETER_REFUSES:
            reference, reference_call = getattr(interpreted, PATTERNS[0][1]), PATTERNS[0][2]
    expected = _outcome(reference_call, reference, ns)
    triton_embed.reset_fast_path_stats()
    got = _outcome(call, fast, kernels)
    # The same exception type everywhere; its message too where both are Triton's.
    messages = GPU or INTERPRET or path.startswith("triton")
    assert _same(got, expected, messages), (got, expected)
    stats = triton_embed.fast_path_stats()
    if path == "fast":
        assert got[0] == "ok"
        assert (stats["fast"], stats["triton"]) == (1, 0), stats
    elif path == "refused":
        assert got[0] == "raises"
        assert stats["fast"] == 0
        assert stats["triton"] == (1 if GPU else 0), stats
        if GPU:
            assert any(": the call: the library refused the call" in r for r in stats["reasons"])
    else:
        assert (stats["fast"], stats["triton"]) == (0, 1), stats
        words = path[len("triton: "):]
        assert [r for r in stats["reasons"] if words in r] and len(stats["reasons"]) == 1, stats


class CountingDtype(tl.dtype):
    """A tl.dtype that counts the reads of its name: the fast path reads it to convert it."""

    reads = 0

    @property
    def name(self):
        CountingDtype.reads += 1
        return self._name

    @name.setter
    def name(self, value):
        self._name = value


def _launch_all(calls, k):
    for call in calls:
        try:
            call(k)
        except Exception:  # noqa: BLE001, S110 (no GPU: Triton's launcher runs nothing)
            pass


@fast_path_only
def test_a_call_shape_sent_to_triton_is_decided_once(kernels):
    """Calls of a shape whose argument kind the fast path does not convert (here FN, a
    @triton.jit function) go to Triton's launcher unread after the first of that shape: the
    argument before it (a dtype that counts its reads) is read once per shape, whether the
    calls are positional, complete a positional call by name, are named, or pass **kwargs (a
    new tuple of the same names at each call). Each call is counted with its reason; a call of
    another shape on the same view is read again, and takes the fast path."""
    x, out = _x(), torch.zeros(N, device=DEVICE)
    d = CountingDtype("fp32")
    named = {"x_ptr": x, "out_ptr": out, "n": N, "D": d, "FN": kernels.twice, "BLOCK": 128}
    calls = [lambda k: k[(G,)](x, out, N, d, kernels.twice, 128),
             lambda k: k[(G,)](x, out, N, d, FN=kernels.twice, BLOCK=128),
             lambda k: k[(G,)](x_ptr=x, out_ptr=out, n=N, D=d, FN=kernels.twice, BLOCK=128),
             lambda k: k[(G,)](**named)] * 3
    _launch_all(calls, kernels.apply_cast_kernel)  # Triton compiles (and reads the name) once
    CountingDtype.reads = 0
    _launch_all(calls, kernels.apply_cast_kernel)  # Triton's own reads of it at each call
    by_triton = CountingDtype.reads
    CountingDtype.reads = 0
    triton_embed.reset_fast_path_stats()
    _launch_all(calls, triton_embed.jit(kernels.apply_cast_kernel))
    assert CountingDtype.reads - by_triton == 3  # the first call of three shapes (**kwargs: named)
    stats = triton_embed.fast_path_stats()
    assert (stats["fast"], stats["triton"]) == (0, len(calls))
    (reason, count), = stats["reasons"].items()
    assert count == len(calls) and "argument 'FN' (triton.runtime.jit.JITFunction)" in reason
    # One view: a shape sent to Triton, then another shape that the fast path takes.
    fast = triton_embed.jit(kernels.scale_kernel)
    _launch_all([lambda k: k[(G,)](x, out, N, np.float32(2.0), 128)], fast)
    fast[(G,)](x, out, N, 2.0, 128)
    assert torch.equal(out.cpu(), 2 * _x().cpu())
    assert triton_embed.fast_path_stats()["fast"] == 1


def test_warmup_and_run_are_tritons(kernels):
    """The view's warmup() and run() are the kernel's own methods: Triton's, not counted."""
    fast = triton_embed.jit(kernels.scale_kernel)
    assert type(fast).warmup is type(kernels.scale_kernel).warmup
    assert type(fast).run is type(kernels.scale_kernel).run
