"""Heuristics of every form the runtime evaluates without Python (src/expr/), with the
kinds of random arguments to try them on, and forms it does not take (test_expr.cc)."""

import math
import random

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

LIMIT = 96  # a global constant a heuristic reads (frozen when translated)
SCALE = 2.5

# name -> (parameter kinds, heuristic). Kinds: "int", "small" (small ints), "pos" (positive
# ints), "float", "bool", "str", "ptr" (a typed pointer), "ptr_or_none".
CASES = {
    "add_sub_mul": ({"a": "int", "b": "int"}, lambda args: args["a"] + args["b"] * 3 - args["a"] * args["b"]),
    "truediv": ({"a": "int", "b": "small"}, lambda args: args["a"] / args["b"]),
    "floordiv_mod": ({"a": "int", "b": "small"}, lambda args: args["a"] // args["b"] + args["a"] % args["b"]),
    "float_arith": (
        {"x": "float", "y": "float"},
        lambda args: args["x"] * args["y"] - args["x"] / (args["y"] + 0.5),
    ),
    "float_floordiv_mod": (
        {"x": "float", "y": "float"},
        lambda args: args["x"] // args["y"] + args["x"] % args["y"],
    ),
    "mixed": ({"a": "int", "x": "float"}, lambda args: args["a"] * SCALE + args["x"] // 3),
    "pow": ({"a": "small", "b": "small"}, lambda args: args["a"] ** abs(args["b"] % 5) + 2 ** args["b"]),
    "unary": ({"a": "int", "x": "float"}, lambda args: -args["a"] + +args["x"] - ~args["a"]),
    "bitwise": (
        {"a": "int", "b": "small"},
        lambda args: (args["a"] & 0xFF0) | (args["b"] ^ 5) | (args["a"] >> 3) | (args["b"] << 2),
    ),
    "compare_chain": (
        {"a": "int", "b": "int", "x": "float"},
        lambda args: args["a"] < args["b"] <= args["x"],
    ),
    "compare_all": (
        {"a": "small", "x": "float"},
        lambda args: (
            (args["a"] == args["x"]) + (args["a"] != 3) + (args["a"] >= args["x"]) * 2 + (args["x"] > 0) * 4
        ),
    ),
    "and_or": ({"a": "small", "x": "float", "s": "str"}, lambda args: args["a"] and args["x"] or args["s"]),
    "not": ({"a": "small", "s": "str"}, lambda args: not args["a"] or not args["s"]),
    "ifexp": ({"n": "pos"}, lambda args: 64 if args["n"] <= 1024 else (128 if args["n"] <= 8192 else 256)),
    "min_max_abs": (
        {"a": "int", "b": "int", "x": "float"},
        lambda args: max(min(args["a"], args["b"], LIMIT), abs(args["x"]), -7),
    ),
    "max_ties": ({"a": "small", "x": "float"}, lambda args: max(args["a"], args["x"])),
    "next_power_of_2": ({"n": "int"}, lambda args: triton.next_power_of_2(args["n"])),
    "cdiv": ({"a": "int", "b": "small"}, lambda args: triton.cdiv(args["a"], args["b"])),
    "block_rule": ({"n": "pos"}, lambda args: min(max(triton.next_power_of_2(args["n"]), 16), 4096)),
    "warps": ({"n": "pos"}, lambda args: 4 if args["n"] < 2048 else 8 if args["n"] < 8192 else 16),
    "even": ({"n": "pos", "b": "pos"}, lambda args: args["n"] % args["b"] == 0),
    "constants": (
        {"a": "small"},
        lambda args: None if args["a"] > 3 else True if args["a"] > 0 else 1.5 if args["a"] else "x",
    ),
    "strings": ({"s": "str"}, lambda args: args["s"] == "relu" or args["s"] < "m"),
    "conversions": (
        {"x": "float", "a": "small"},
        lambda args: int(args["x"]) + float(args["a"]) + bool(args["x"]),
    ),
    "dtype": (
        {"p": "ptr"},
        lambda args: args["p"].dtype == torch.float16 or args["p"].dtype == torch.bfloat16,
    ),
    "triton_dtype": ({"p": "ptr"}, lambda args: args["p"].dtype == tl.float16),
    "element_size": ({"p": "ptr", "n": "pos"}, lambda args: args["n"] * args["p"].element_size()),
    "is_none": ({"q": "ptr_or_none"}, lambda args: args["q"] is not None),
    "is_bool": ({"b": "bool"}, lambda args: args["b"] is True),
    "bools": (
        {"b": "bool", "a": "small"},
        lambda args: args["b"] + args["a"] if args["b"] & True else -args["b"],
    ),
}


CASES["get_default"] = ({"n": "pos", "m": "pos?"}, lambda args: args.get("m", 7) * 2 + args["n"])
CASES["get_none"] = ({"m": "small?"}, lambda args: args.get("m") is None)
CASES["missing"] = ({"n": "pos", "m": "pos?"}, lambda args: args["m"] + args["n"])


def defined_heuristic(args):
    """A named function with a docstring is taken too."""
    return triton.cdiv(args["n"], 128) * 128


CASES["def"] = ({"n": "pos"}, defined_heuristic)


def row_warps(args):
    """pykernels.heuristics.row_warps: a local name, then a return."""
    block = args["BLOCK"]
    return 16 if block >= 4096 else 8 if block >= 2048 else 4


def statements_heuristic(args):
    """Local names, and if / elif / else whose branches return or go on to what follows."""
    n = args["n"]
    block = triton.next_power_of_2(n)
    if block > 4096:
        return 16
    elif block > 1024:
        warps = 8
        extra = 1
    else:
        warps = 4
        extra = 0
        if n % 3 == 0:
            return -warps
    if args["a"] < 0:
        warps = warps * 2
    else:
        pass
    return warps + extra + (n > 100)


def falls_through(args):
    """No return on one path: Python returns None there."""
    if args["a"] > 0:
        return args["a"]


CASES["row_warps"] = ({"BLOCK": "pos"}, row_warps)
CASES["statements"] = ({"n": "pos", "a": "int"}, statements_heuristic)
CASES["falls_through"] = ({"a": "int"}, falls_through)


def _one_branch_name(args):
    if args["a"] > 0:
        x = 1
    return x  # noqa: F821 (unbound when a <= 0)


def _loop(args):
    total = 0
    for _ in range(3):
        total += args["a"]
    return total

# Forms outside the evaluator, each with the construct it names.
UNSUPPORTED = {
    "comprehension": (lambda args: [v for v in args.values()], "the construct ListComp"),
    "whole_dict": (lambda args: len(args), "a call of len"),
    "method": (lambda args: args["s"].upper(), "an expression that is not a name"),
    "shape": (lambda args: args["p"].shape[0], "the construct Subscript"),
    "unknown_arg": (lambda args: args["nope"], "an argument that is not a parameter of the kernel"),
    "keywords": (lambda args: max(1, 2, key=abs), "a call with keyword arguments"),
    "in": (lambda args: args["s"] in ("a", "b"), "the comparison In"),
    "is_int": (lambda args: args["a"] is LIMIT, "`is` other than against None, True or False"),
    "math": (lambda args: math.log2(args["a"]), "a call of log2"),
    "one_branch_name": (_one_branch_name, "a name set on one branch of an if only: x (line"),
    "loop": (_loop, "the statement For: for _ in range(3): ... (line"),
}
UNSUPPORTED_PARAMS = ["a", "s", "p"]


# Config pre-hooks (the persistent-matmul and fused-attention tutorials', and zeroing ones):
# name -> (parameter kinds, hook). "desc" parameters are host descriptors (instances of
# triton's TensorDescriptor) whose block_shape the hook sets; "hostdesc" ones are host
# descriptors on some calls and raw tensors or other objects on others (all of a call's
# "hostdesc" arguments alike, or mixed); "desc_or_object" ones host descriptors or objects that
# record a zero_(); a kind ending in "?" may be absent from nargs (not given).


def tma_block_hook(nargs):
    EPILOGUE_SUBTILE = nargs.get("EPILOGUE_SUBTILE", False)
    BLOCK_M = nargs["BLOCK_SIZE_M"]
    BLOCK_N = nargs["BLOCK_SIZE_N"]
    BLOCK_K = nargs["BLOCK_SIZE_K"]
    nargs["a_desc"].block_shape = [BLOCK_M, BLOCK_K]
    nargs["b_desc"].block_shape = [BLOCK_N, BLOCK_K]
    if EPILOGUE_SUBTILE:
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N // 2]
    else:
        nargs["c_desc"].block_shape = [BLOCK_M, BLOCK_N]


def attention_hook(nargs):
    """Fused attention's: the head dimension from an argument, blocks from the config (two of
    them assigned as tuples, which the descriptors then hold)."""
    BM = nargs["BLOCK_M"]
    BN = nargs["BLOCK_N"]
    HEAD_DIM = nargs["HEAD_DIM"]
    nargs["q"].block_shape = [BM, HEAD_DIM]
    nargs["v"].block_shape = (BN, HEAD_DIM)
    nargs["k"].block_shape = (BN, HEAD_DIM)
    nargs["o"].block_shape = [BM, HEAD_DIM]


def zero_hook(nargs):
    nargs["c"].zero_()
    if nargs["SPLIT_K"] > 1:
        nargs["c"].block_shape = [nargs["BLOCK_M"], max(16, nargs["BLOCK_N"] // nargs["SPLIT_K"])]
    else:
        nargs["c"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]


def _host_descriptor_pre_hook(nargs):
    """The fused-attention tutorial's (Triton 3.6): block shapes only where the call passes
    host descriptors (raw pointers get none)."""
    BLOCK_M = nargs["BLOCK_M"]
    BLOCK_N = nargs["BLOCK_N"]
    HEAD_DIM = nargs["HEAD_DIM"]
    if TensorDescriptor is None or not isinstance(nargs["desc_q"], TensorDescriptor):
        return
    nargs["desc_q"].block_shape = [BLOCK_M, HEAD_DIM]
    if nargs["FP8_OUTPUT"]:
        nargs["desc_v"].block_shape = [HEAD_DIM, BLOCK_N]
    else:
        nargs["desc_v"].block_shape = [BLOCK_N, HEAD_DIM]
    nargs["desc_k"].block_shape = [BLOCK_N, HEAD_DIM]
    nargs["desc_o"].block_shape = [BLOCK_M, HEAD_DIM]


def plain_descriptor_hook(nargs):
    """The same in the form of other Triton versions: `if not isinstance(...): return`."""
    BLOCK_M = nargs["BLOCK_M"]
    BLOCK_N = nargs["BLOCK_N"]
    HEAD_DIM = nargs["HEAD_DIM"]
    if not isinstance(nargs["desc_q"], TensorDescriptor):
        return
    nargs["desc_q"].block_shape = [BLOCK_M, HEAD_DIM]
    if nargs["FP8_OUTPUT"]:
        nargs["desc_v"].block_shape = [HEAD_DIM, BLOCK_N]
    else:
        nargs["desc_v"].block_shape = [BLOCK_N, HEAD_DIM]
    nargs["desc_k"].block_shape = [BLOCK_N, HEAD_DIM]
    nargs["desc_o"].block_shape = [BLOCK_M, HEAD_DIM]


def guarded_zero_hook(nargs):
    """A tensor zeroed on one branch only (split-K accumulates into it)."""
    if nargs["SPLIT_K"] > 1:
        nargs["c"].zero_()
    nargs["c"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]


def zero_unless_descriptor_hook(nargs):
    """Zeroes what is not a host descriptor and returns early; sets a descriptor's block."""
    acc = nargs["acc"]
    if not isinstance(acc, TensorDescriptor):
        nargs["acc"].zero_()
        return
    nargs["acc"].block_shape = (nargs["BLOCK"], 8)


def nested_return_hook(nargs):
    """An early return inside a nested if, a local name set on one path, an effect on the
    else branch only, and one after the if that runs on the paths that did not return."""
    block = nargs["BLOCK"]
    if nargs["A"] > 0:
        if nargs["B"] > 0:
            return
        elif nargs["B"] < -5:
            block = block * 2
        nargs["d"].block_shape = [block, 16]
    else:
        nargs["e"].zero_()
    nargs["e"].block_shape = (block, nargs["A"])


def one_branch_hook(nargs):
    """A block shape set on one branch of an if only."""
    if nargs["BLOCK_M"] > 64:
        nargs["a"].block_shape = [1, 2]


HOOK_CASES = {
    "tma_block": (
        {
            "a_desc": "desc",
            "b_desc": "desc",
            "c_desc": "desc",
            "BLOCK_SIZE_M": "pow2",
            "BLOCK_SIZE_N": "pow2",
            "BLOCK_SIZE_K": "pow2",
            "EPILOGUE_SUBTILE": "bool?",
        },
        tma_block_hook,
    ),
    "attention": (
        {
            "q": "desc",
            "k": "desc",
            "v": "desc",
            "o": "desc",
            "BLOCK_M": "pow2",
            "BLOCK_N": "pow2",
            "HEAD_DIM": "pow2",
        },
        attention_hook,
    ),
    "zero": ({"c": "desc", "BLOCK_M": "pow2", "BLOCK_N": "pow2", "SPLIT_K": "small"}, zero_hook),
}

_ATTENTION_ARGS = {
    "desc_q": "hostdesc",
    "desc_k": "hostdesc",
    "desc_v": "hostdesc",
    "desc_o": "hostdesc",
    "BLOCK_M": "pow2",
    "BLOCK_N": "pow2",
    "HEAD_DIM": "pow2",
}
HOOK_CASES["tutorial_attention"] = (dict(_ATTENTION_ARGS, FP8_OUTPUT="bool?"), _host_descriptor_pre_hook)
HOOK_CASES["plain_attention"] = (dict(_ATTENTION_ARGS, FP8_OUTPUT="bool"), plain_descriptor_hook)
HOOK_CASES["guarded_zero"] = (
    {"c": "desc", "BLOCK_M": "pow2", "BLOCK_N": "pow2", "SPLIT_K": "small"},
    guarded_zero_hook,
)
HOOK_CASES["zero_unless_descriptor"] = (
    {"acc": "desc_or_object", "BLOCK": "pow2"},
    zero_unless_descriptor_hook,
)
HOOK_CASES["nested_return"] = (
    {"d": "hostdesc", "e": "desc_or_object", "A": "small?", "B": "small", "BLOCK": "pow2"},
    nested_return_hook,
)
HOOK_CASES["one_branch"] = ({"a": "desc", "BLOCK_M": "pow2"}, one_branch_hook)

# The cases whose hook does different things on different calls (guarded actions): the test
# checks that the random calls show more than one of them.
GUARDED_HOOK_CASES = [
    "tutorial_attention",
    "plain_attention",
    "guarded_zero",
    "zero_unless_descriptor",
    "nested_return",
    "one_branch",
]

HOOK_UNSUPPORTED = {
    "loop": ("for d in ('a', 'b'):", "the statement For"),
    "ranks": (
        "if nargs['BLOCK_M'] > 64:\n        nargs['a'].block_shape = [1, 2]\n"
        "    else:\n        nargs['a'].block_shape = [1]",
        "block shapes of different ranks on the two branches",
    ),
    "isinstance_int": (
        "if isinstance(nargs['a'], int):\n        nargs['a'].block_shape = [1, 2]",
        "isinstance with a class other than triton.tools.tensor_descriptor.TensorDescriptor (int): "
        "isinstance(nargs['a'], int) (line 5)",
    ),
    "isinstance_subclass": (
        "if isinstance(nargs['a'], _Desc):\n        return",
        "isinstance with a class other than triton.tools.tensor_descriptor.TensorDescriptor "
        "(te_expr_cases._Desc)",
    ),
    "isinstance_tuple": (
        "if isinstance(nargs['a'], (TensorDescriptor, int)):\n        return",
        "isinstance with a class other than triton.tools.tensor_descriptor.TensorDescriptor: "
        "isinstance(nargs['a'], (TensorDescriptor, int))",
    ),
    "isinstance_dict": (
        "if isinstance(nargs, TensorDescriptor):\n        return",
        "isinstance of something other than an argument, nargs[name]: isinstance(nargs, TensorDescriptor)",
    ),
    "return_value": ("return nargs['BLOCK_M']", "a return with a value: return nargs['BLOCK_M']"),
    "shape_read": ("nargs['a'].block_shape = [nargs['a'].shape[0], 2]", "the construct Subscript"),
    "call": ("print(nargs)", "the statement Expr"),
    "empty": ("nargs['a'].block_shape = ()", "a block_shape that is not a list of expressions"),
    "list_and_tuple": (
        "nargs['a'].block_shape = [1, 2]\n    nargs['a'].block_shape = (1, 2)",
        "a block_shape set to a list and to a tuple",
    ),
}


class _Desc(TensorDescriptor):
    """A host descriptor as a hook sees one (isinstance of triton's TensorDescriptor): no
    block shape until the hook sets one; records a zero_()."""

    def __init__(self):  # no dataclass fields: only what the hook sets is there
        self.zeroed = False

    def zero_(self):
        self.zeroed = True

    def __repr__(self):
        return "_Desc(%r)" % vars(self)


class _Object:
    """An argument that is neither a descriptor nor a tensor (a Python object); records a
    zero_()."""

    def __init__(self):
        self.zeroed = False

    def zero_(self):
        self.zeroed = True

    def __repr__(self):
        return "_Object(%r)" % vars(self)


def _raw_tensor(rng):
    return torch.empty(0, dtype=rng.choice([torch.float16, torch.bfloat16, torch.float32]))


def random_hook_args(name, seed):
    """Random nargs for hook case `name`: host descriptors are _Desc objects; what is not one
    is a raw CPU tensor or an _Object."""
    rng = random.Random(seed)
    kinds, _ = HOOK_CASES[name]
    # What this call passes for "hostdesc" parameters: host descriptors, raw tensors or other
    # objects (each of them alike), or a mix.
    mode = rng.choice(["desc", "desc", "tensor", "object", "mixed"])
    out = {}
    for p, k in kinds.items():
        if k.endswith("?"):
            if rng.random() < 0.4:
                continue
            k = k[:-1]
        if k == "hostdesc":
            m = rng.choice(["desc", "tensor", "object"]) if mode == "mixed" else mode
            out[p] = _Desc() if m == "desc" else _raw_tensor(rng) if m == "tensor" else _Object()
        elif k == "desc_or_object":
            out[p] = _Desc() if rng.random() < 0.5 else _Object()
        elif k == "desc":
            out[p] = _Desc()
        elif k == "pow2":
            out[p] = rng.choice([16, 32, 64, 128, 256])
        else:
            out[p] = _random_value(k, rng)
    return out


def run_hook(name, nargs):
    """What Python's hook does: ("done", [(param, block_shape as the hook assigned it (a list
    or a tuple))] for the arguments whose block_shape it set, [zeroed]), each sorted by name, or
    ("raise", type)."""
    _, fn = HOOK_CASES[name]
    try:
        fn(nargs)
    except Exception as e:  # noqa: BLE001
        return ("raise", type(e).__name__)
    blocks = sorted((p, vars(v)["block_shape"]) for p, v in nargs.items()
                    if hasattr(v, "__dict__") and "block_shape" in vars(v))
    zeroed = sorted(p for p, v in nargs.items() if getattr(v, "zeroed", False) is True)
    return ("done", blocks, zeroed)


def unsupported_hook(name):
    """A hook made from HOOK_UNSUPPORTED's statement, with its source in a file of its own."""
    import importlib.util
    import os
    import tempfile

    body, _ = HOOK_UNSUPPORTED[name]
    src = (
        "def hook(nargs):\n    %s\n        pass\n" % body
        if body.endswith(":")
        else "def hook(nargs):\n    %s\n" % body
    )
    # The names a hook may test against (TensorDescriptor, a subclass of it), then the hook
    # (from line 4).
    src = "from te_expr_cases import _Desc  # noqa: F401\n" \
          "from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: F401\n\n" + src
    d = tempfile.mkdtemp()
    path = os.path.join(d, "te_hook_%s.py" % name)
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("te_hook_%s" % name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.hook


def _random_value(kind, rng):
    if kind == "int":
        r = rng.random()
        if r < 0.15:
            return rng.choice([0, 1, -1, 2, 16, 17, 1023, 1024, 1025, -1024])
        if r < 0.25:
            return rng.randint(-(2**62), 2**62)
        return rng.randint(-(2**20), 2**20)
    if kind == "small":
        return rng.randint(-9, 9)
    if kind == "pos":
        return (
            rng.choice([1, 2, 15, 16, 17, 1000, 1024, 2047, 2048, 8191, 8192, 10**6])
            if rng.random() < 0.3
            else rng.randint(1, 2**17)
        )
    if kind == "float":
        r = rng.random()
        if r < 0.1:
            return rng.choice(
                [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, float("inf"), -float("inf"), float("nan"), 1e300]
            )
        return rng.uniform(-1000, 1000) if r < 0.8 else float(rng.randint(-50, 50))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "str":
        return rng.choice(["", "relu", "gelu", "a", "z", "relu2", "m"])
    if kind in ("ptr", "ptr_or_none"):
        if kind == "ptr_or_none" and rng.random() < 0.4:
            return None
        return torch.empty(
            0,
            dtype=rng.choice(
                [torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.int64, torch.float64]
            ),
        )
    raise ValueError(kind)


def random_args(name, seed):
    """Random arguments for case `name`: a dict as the heuristic gets it."""
    rng = random.Random(seed)
    kinds, _ = CASES[name]
    out = {}
    for p, k in kinds.items():
        if k.endswith("?"):
            if rng.random() < 0.4:
                continue  # not given: absent from the dict
            k = k[:-1]
        out[p] = _random_value(k, rng)
    return out


def run(name, args):
    """What Python's heuristic gives: ("value", v) or ("raise", exception type name)."""
    _, fn = CASES[name]
    try:
        return ("value", fn(dict(args)))
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return ("raise", type(e).__name__)


def ops_heuristics():
    """(where, function, parameter names) of every @triton.heuristics of pykernels' ops."""
    import importlib

    from triton.runtime.autotuner import Autotuner, Heuristics

    out = []
    for module in ("pykernels.softmax", "pykernels.norm", "pykernels.matmul"):
        for name, obj in vars(importlib.import_module(module)).items():
            layer = obj
            while isinstance(layer, (Autotuner, Heuristics)):
                if isinstance(layer, Heuristics):
                    for key, fn in layer.values.items():
                        out.append(("%s.%s %s" % (module, name, key), fn, list(layer.arg_names)))
                layer = layer.fn
    return out
